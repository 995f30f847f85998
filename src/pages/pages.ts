import { parse, type OperationDefinitionNode } from 'graphql';
import type { GraphiQLOptions, Plugin } from 'graphql-yoga';
import { postureOf, type Config } from '../config';
import { assetResponse, assetsPrefix, assetUrl } from './assets';
import { graphiqlExamplesDocument } from './graphiql-examples';

/**
 * The browser pages (docs/decisions.md, "Browser pages: GraphiQL offline, the API reference, `GET /` (issue 16)"): `GET /` (links, HTML or JSON by
 * the Accept header), the API reference at `/docs` (Swagger UI over /v1/openapi.json, every mode),
 * GraphiQL on `GET /graphql` (development mode) and the assets they load, all from this process.
 */

export const apiReferencePath = '/docs';
export const consolePath = '/console';
const consoleAssetsPrefix = '/assets/console.';
export const openApiPath = '/v1/openapi.json';

/**
 * Every HTML page: scripts, styles, images, fonts, workers and requests of this origin only, so a
 * page that tried to load anything from elsewhere would fail in the browser, not silently work
 * online only. Styles may be inline (React and Swagger UI set style attributes).
 */
export const pageSecurityPolicy = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "worker-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The headers editor of GraphiQL: one credential to uncomment (JSON with comments). */
export const graphiqlHeadersTemplate = `{
  // Remove the // of ONE line (two credentials: 401).
  // A member: accessToken of POST /v1/auth/login
  // "Authorization": "Bearer <accessToken>"
  // An API key (shown once when created):
  // "X-Api-Key": "sk_test_..."
  // A platform operator (npm run operator:create):
  // "X-Operator-Key": "op_..."
}
`;

/** Where a variable of the examples comes from, written above it in the Variables tab. */
const variableHints: Record<string, string> = {
  organizationId: 'viewer.organizationId of Me',
  since: 'the start of the day, e.g. "2026-11-26T00:00:00Z"',
  after: 'optional: pageInfo.endCursor of the last page',
};

/** Variables left commented out in the templates: the page cursor (the first page has none). */
const leftOut = new Set(['after']);

function variablesTemplate(operation: OperationDefinitionNode): string {
  const names = (operation.variableDefinitions ?? []).map((v) => v.variable.name.value);
  if (!names.length) return '';
  const hint = (name: string) => `  // ${variableHints[name] ?? name}`;
  // Commented-out ones come last; a comma before them (GraphiQL reads JSON with comments and trailing commas).
  const ordered = [...names.filter((n) => !leftOut.has(n)), ...names.filter((n) => leftOut.has(n))];
  const lines = ordered.map((n, i) => `${hint(n)}\n  ${leftOut.has(n) ? '// ' : ''}"${n}": ""${!leftOut.has(n) && i < ordered.length - 1 ? ',' : ''}`);
  return `{\n${lines.join('\n')}\n}\n`;
}

/** The example operations of src/pages/graphiql-examples.ts: one GraphiQL tab each, with its comment. */
export function graphiqlExamples(): { name: string; query: string; variables: string }[] {
  const text = graphiqlExamplesDocument;
  // Blocks separated by a blank line; the first (the file's own comment) holds no operation.
  return text
    .split(/\n\s*\n/)
    .filter((block) => /^(query|mutation|subscription)\b/m.test(block))
    .map((block) => {
      const operation = parse(block).definitions[0] as OperationDefinitionNode;
      return { name: operation.name!.value, query: `${block.trim()}\n`, variables: variablesTemplate(operation) };
    });
}

export function graphiqlOptions(): GraphiQLOptions {
  const headers = graphiqlHeadersTemplate;
  return {
    title: 'ftis GraphiQL',
    headers,
    defaultHeaders: headers,
    // Credentials are not kept in the browser's storage.
    shouldPersistHeaders: false,
    defaultEditorToolsVisibility: 'headers',
    defaultTabs: graphiqlExamples().map(({ query, variables }) => ({ query, variables, headers })),
  };
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
/** A JSON data block: not executed (so allowed by the policy), `<` escaped so no `</script>` ends it. */
const dataBlock = (id: string, value: unknown) => `<script type="application/json" id="${id}">${JSON.stringify(value).replace(/</g, '\\u003c')}</script>`;

function page(title: string, head: string, body: string, bodyAttributes = ''): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<link rel="icon" href="data:,">
${head}
</head>
<body${bodyAttributes}>
${body}
</body>
</html>
`;
}

/** GraphiQL's page: yoga's renderGraphiQL, with every script and style a same-origin asset. */
export async function renderGraphiqlPage(options: GraphiQLOptions): Promise<string> {
  const [css, start, js, editorWorkerService, json, graphql] = await Promise.all(
    (['graphiql.css', 'graphiql-start.js', 'graphiql.js', 'graphiql-editor.worker.js', 'graphiql-json.worker.js', 'graphiql-graphql.worker.js'] as const).map(
      assetUrl,
    ),
  );
  return page(
    options.title ?? 'GraphiQL',
    `<link rel="stylesheet" href="${css}">`,
    [
      '<noscript>GraphiQL needs JavaScript.</noscript>',
      '<div id="root"></div>',
      dataBlock('graphiql-options', options),
      dataBlock('graphiql-workers', { editorWorkerService, json, graphql }),
      `<script src="${start}"></script>`,
      `<script src="${js}"></script>`,
    ].join('\n'),
    ' id="body" class="no-focus-outline"',
  );
}

async function apiReferencePage(graphiqlOn: boolean): Promise<string> {
  const [css, pagesCss, js, start] = await Promise.all(
    (['swagger-ui.css', 'pages.css', 'swagger-ui-bundle.js', 'api-reference-start.js'] as const).map(assetUrl),
  );
  return page(
    'ftis API reference',
    `<link rel="stylesheet" href="${css}">\n<link rel="stylesheet" href="${pagesCss}">`,
    [
      navigation(graphiqlOn),
      '<div id="swagger-ui"></div>',
      dataBlock('api-reference-options', { url: openApiPath }),
      `<script src="${js}"></script>`,
      `<script src="${start}"></script>`,
    ].join('\n'),
  );
}

/** The operator console (console/, docs/console.md): one page, its routes in the fragment (#/stream…), never a credential in the URL. */
async function consolePage(): Promise<string> {
  const [css, js] = await Promise.all((['console.css', 'console.js'] as const).map(assetUrl));
  return page(
    'ftis console',
    `<link rel="stylesheet" href="${css}">`,
    ['<noscript>The console needs JavaScript.</noscript>', '<div id="app"></div>', `<script src="${js}"></script>`].join('\n'),
  );
}

const navigation = (graphiqlOn: boolean) =>
  `<nav class="bar"><strong><a href="/">ftis</a></strong>${graphiqlOn ? '<a href="/graphql">GraphiQL</a>' : ''}<a href="${apiReferencePath}">API reference</a><a href="${openApiPath}">OpenAPI document</a></nav>`;

/** What `GET /` lists: the links of what this process serves in its mode. */
export function serviceLinks(config: Config) {
  const posture = postureOf(config);
  return {
    graphql: '/graphql',
    ...(posture.graphiql ? { graphiql: '/graphql' } : {}),
    apiReference: apiReferencePath,
    ...(config.CONSOLE === 'on' ? { console: consolePath } : {}),
    openapi: openApiPath,
    health: '/healthz',
    ready: '/readyz',
  };
}

const linkText: Record<string, [string, string]> = {
  graphiql: ['GraphiQL', 'GraphQL in the browser, with example operations (development mode).'],
  apiReference: ['API reference', 'The REST API v1, rendered from its OpenAPI document.'],
  console: [
    'Operator console',
    'Live webhook deliveries, dead letters, endpoint health, stuck money and the platform dashboard (an operator key, or a member).',
  ],
  openapi: ['OpenAPI document', 'The REST API v1 as OpenAPI 3.1 JSON, for generated clients.'],
  graphql: ['GraphQL endpoint', 'POST queries and mutations; subscriptions over graphql-ws (websocket) on the same path.'],
  health: ['Health', 'Alive.'],
  ready: ['Readiness', 'Database and job runner reachable.'],
};

async function rootPage(config: Config): Promise<string> {
  const links = serviceLinks(config);
  const items = (Object.keys(linkText) as (keyof typeof links)[])
    .filter((k) => links[k])
    .map((k) => `<dt><a href="${links[k]}">${linkText[k]![0]}</a> <code>${links[k]}</code></dt><dd>${linkText[k]![1]}</dd>`);
  return page(
    'ftis',
    `<link rel="stylesheet" href="${await assetUrl('pages.css')}">`,
    `${navigation(postureOf(config).graphiql)}\n<main class="home">\n<h1>ftis: financial transaction infrastructure</h1>\n<p>Mode: <code>${escapeHtml(config.NODE_ENV)}</code>. The same links as JSON: <code>curl -H 'Accept: application/json' …/</code>.</p>\n<dl>\n${items.join('\n')}\n</dl>\n</main>`,
  );
}

/** HTML when the client ranks text/html above (or without) application/json: a browser; else JSON. */
function prefersHtml(request: Request): boolean {
  const ranked = (request.headers.get('accept') ?? '').split(',').map((part) => {
    const [type, ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)?.[1]).find(Boolean);
    return { type: type!.trim(), q: q === undefined ? 1 : Number(q) };
  });
  const qOf = (type: string) => ranked.find((r) => r.type === type)?.q ?? 0;
  return qOf('text/html') > 0 && qOf('text/html') >= qOf('application/json');
}

const html = (body: string) => new Response(body, { headers: { 'content-type': 'text/html; charset=utf-8' } });

export function pagesPlugin(config: Config): Plugin {
  const graphiqlOn = postureOf(config).graphiql;
  const consoleOn = config.CONSOLE === 'on';
  return {
    async onRequest({ request, url, endResponse }) {
      if (request.method !== 'GET' && request.method !== 'HEAD') return;
      const path = url.pathname;
      if (path === '/') {
        const response = prefersHtml(request)
          ? html(await rootPage(config))
          : Response.json({ name: 'ftis', apiVersion: 'v1', mode: config.NODE_ENV, links: serviceLinks(config) });
        response.headers.set('vary', 'accept');
        return endResponse(response);
      }
      if (path === apiReferencePath || path === `${apiReferencePath}/`) return endResponse(html(await apiReferencePage(graphiqlOn)));
      if (consoleOn && (path === consolePath || path === `${consolePath}/`)) return endResponse(html(await consolePage()));
      if (path.startsWith(assetsPrefix)) {
        if (!consoleOn && path.startsWith(consoleAssetsPrefix)) return;
        const asset = await assetResponse(request, path);
        if (asset) return endResponse(asset);
      }
    },
    onResponse({ response }) {
      if (!response.headers.get('content-type')?.startsWith('text/html')) return;
      // yoga's GraphiQL answer names no charset (and its headers add to a set() of the same name: delete first).
      response.headers.delete('content-type');
      response.headers.set('content-type', 'text/html; charset=utf-8');
      response.headers.set('content-security-policy', pageSecurityPolicy);
      response.headers.set('x-content-type-options', 'nosniff');
      response.headers.set('referrer-policy', 'no-referrer');
    },
  };
}
