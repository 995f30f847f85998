import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { parse, validate } from 'graphql';
import { schema } from '../src/schema';
import { graphiqlExamples, graphiqlHeadersTemplate, pageSecurityPolicy } from '../src/pages/pages';
import { createApiKey, createOperator, createTestApp, signUpMember, type TestApp } from './harness';
import type { RunningServer } from '../src/server';

/**
 * The browser pages (issue 16, item 5), through a real socket: GET / (links, HTML or JSON), GraphiQL
 * (development mode) and the API reference at /docs, with every asset they reference served by the
 * process itself (no CDN: they work offline).
 */
let dev: TestApp;
let devServer: RunningServer;
let prod: TestApp;
let prodServer: RunningServer;

beforeAll(async () => {
  [dev, prod] = await Promise.all([createTestApp({ env: { NODE_ENV: 'development' } }), createTestApp({ env: { NODE_ENV: 'production' } })]);
  [devServer, prodServer] = await Promise.all([dev.listen(), prod.listen()]);
});
afterAll(async () => {
  await Promise.all([dev?.close(), prod?.close()]);
});

const browser = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', 'accept-encoding': 'gzip, deflate, br' };

async function get(server: RunningServer, path: string, headers: Record<string, string> = browser) {
  const res = await fetch(server.url + path, { headers });
  return { res, text: await res.text() };
}

/** Every script, stylesheet and icon an HTML page references. */
const referencesOf = (html: string) => [...html.matchAll(/<(?:script|link)\b[^>]*\b(?:src|href)="([^"]*)"/g)].map((m) => m[1]!);
/** A JSON data block of a page (the options its start script reads). */
const dataBlockOf = (html: string, id: string) => JSON.parse(new RegExp(`<script type="application/json" id="${id}">(.*?)</script>`, 's').exec(html)![1]!);

/** No absolute or protocol-relative URL anywhere in the page: nothing is loaded from elsewhere. */
function expectNoExternalUrl(html: string) {
  expect(html).not.toMatch(/\b(?:https?|wss?):\/\//i);
  expect(html).not.toMatch(/(?:src|href)="\/\//);
}

/** Each reference is a path of this origin (or the empty data: icon) and answers 200 with its type. */
async function expectAssetsServed(server: RunningServer, html: string) {
  const references = referencesOf(html);
  expect(references.length).toBeGreaterThan(1);
  for (const ref of references) {
    if (ref === 'data:,') continue; // the empty icon: no request at all
    expect(ref).toMatch(/^\/assets\/[\w.-]+\?v=[0-9a-f]{16}$/);
    await expectAsset(server, ref);
  }
}

async function expectAsset(server: RunningServer, ref: string) {
  const { res, text } = await get(server, ref);
  expect(res.status, ref).toBe(200);
  expect(res.headers.get('content-type'), ref).toBe(ref.split('?')[0]!.endsWith('.css') ? 'text/css; charset=utf-8' : 'text/javascript; charset=utf-8');
  expect(res.headers.get('cache-control'), ref).toBe('public, max-age=31536000, immutable');
  expect(res.headers.get('content-encoding'), ref).toBe('gzip'); // fetch decompressed it: `text` is the asset
  expect(text.length, ref).toBeGreaterThan(100);
}

function expectPageHeaders(res: Response) {
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
  expect(res.headers.get('content-security-policy')).toBe(pageSecurityPolicy);
  expect(res.headers.get('cache-control')).toBe('no-store');
}

describe('GET /', () => {
  test('answers JSON links by default, and each link answers', async () => {
    const { res, text } = await get(devServer, '/', { accept: '*/*' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('vary')).toMatch(/accept/i);
    const body = JSON.parse(text);
    expect(body).toEqual({
      name: 'ftis',
      apiVersion: 'v1',
      mode: 'development',
      links: {
        graphql: '/graphql',
        graphiql: '/graphql',
        apiReference: '/docs',
        console: '/console',
        openapi: '/v1/openapi.json',
        health: '/healthz',
        ready: '/readyz',
      },
    });
    for (const path of new Set(Object.values(body.links as Record<string, string>))) {
      const r = await get(devServer, path, path === '/graphql' ? browser : { accept: 'application/json' });
      expect(r.res.status, path).toBe(200);
    }
  });

  test('answers an HTML page to a browser, linking GraphiQL, the API reference and the OpenAPI document', async () => {
    const { res, text } = await get(devServer, '/');
    expectPageHeaders(res);
    for (const href of ['/graphql', '/docs', '/v1/openapi.json', '/healthz', '/readyz']) expect(text).toContain(`href="${href}"`);
    expectNoExternalUrl(text);
    await expectAssetsServed(devServer, text);
    // A client that ranks JSON first gets JSON.
    const json = await get(devServer, '/', { accept: 'application/json, text/html;q=0.5' });
    expect(JSON.parse(json.text).links.apiReference).toBe('/docs');
  });

  test('in production: no GraphiQL link (GraphiQL is off), the API reference is there', async () => {
    const body = JSON.parse((await get(prodServer, '/', { accept: 'application/json' })).text);
    expect(body.mode).toBe('production');
    expect(body.links.graphiql).toBeUndefined();
    expect(body.links.apiReference).toBe('/docs');
    const page = (await get(prodServer, '/')).text;
    expect(page).not.toContain('>GraphiQL<');
    expect(page).toContain('href="/docs"');
  });
});

describe('GraphiQL (development mode)', () => {
  test('is served with every script, style and worker from the process, under a same-origin policy', async () => {
    const { res, text } = await get(devServer, '/graphql');
    expectPageHeaders(res);
    expectNoExternalUrl(text);
    expect(text).not.toMatch(/<script>|<script(?![^>]*\b(?:src|type="application\/json"))[^>]*>/); // no inline script
    await expectAssetsServed(devServer, text);
    const workers = dataBlockOf(text, 'graphiql-workers') as Record<string, string>;
    expect(Object.keys(workers).sort()).toEqual(['editorWorkerService', 'graphql', 'json']);
    for (const url of Object.values(workers)) await expectAsset(devServer, url);
  });

  test('opens with the example operations, each valid against the schema, and the headers template', async () => {
    const options = dataBlockOf((await get(devServer, '/graphql')).text, 'graphiql-options');
    const examples = graphiqlExamples();
    expect(examples.map((e) => e.name)).toEqual([
      'Me',
      'OrganizationOverview',
      'FrozenAccounts',
      'FailedSettlements',
      'TransactionsWithSettlements',
      'AssetCatalog',
      'WebhookDeliveryStatus',
    ]);
    expect(options.defaultTabs).toEqual(examples.map((e) => ({ query: e.query, variables: e.variables, headers: graphiqlHeadersTemplate })));
    for (const e of examples) expect(validate(schema, parse(e.query)), e.name).toEqual([]);
    expect(options.headers).toBe(graphiqlHeadersTemplate);
    expect(options.shouldPersistHeaders).toBe(false);
    for (const name of ['Authorization', 'X-Api-Key', 'X-Operator-Key']) expect(graphiqlHeadersTemplate).toContain(`// "${name}": `);
  });

  test('the examples run: a member with the Authorization line, an API key with the X-Api-Key line of the template', async () => {
    const member = await signUpMember(dev);
    const key = await createApiKey(dev, member);
    const account = await dev.rest('POST', `/v1/organizations/${member.organizationId}/accounts`, { body: { name: 'Escrow' }, headers: key.headers });
    expect(account.status).toBe(201);
    // The template as a user edits it: one line's // removed, the placeholder replaced (GraphiQL reads JSON with comments).
    const headersFrom = (line: string, value: string) =>
      JSON.parse(graphiqlHeadersTemplate.replace(new RegExp(`// ("${line}": )"[^"]*"`), `$1"${value}"`).replace(/^\s*\/\/.*$/gm, '')) as Record<string, string>;
    const asMember = headersFrom('Authorization', member.headers.authorization!);
    const asKey = headersFrom('X-Api-Key', key.key);
    expect(Object.keys(asMember)).toEqual(['Authorization']);
    expect(Object.keys(asKey)).toEqual(['X-Api-Key']);
    const run = async (name: string, variables: Record<string, unknown>, headers: Record<string, string>) => {
      const example = graphiqlExamples().find((e) => e.name === name)!;
      const r = await dev.gql<Record<string, any>>(example.query, variables, headers);
      expect(r.errors, name).toBeUndefined();
      return r.data!;
    };
    expect((await run('Me', {}, asMember)).viewer.organizationId).toBe(member.organizationId);
    const overview = (await run('OrganizationOverview', { organizationId: member.organizationId }, asMember)).organization;
    expect(overview.id).toBe(member.organizationId);
    expect(overview.accounts.edges.map((e: { node: { name: string } }) => e.node.name)).toEqual(['Escrow']);
    expect((await run('FrozenAccounts', { organizationId: member.organizationId }, asMember)).organization.accounts.edges).toEqual([]);
    const since = '2000-01-01T00:00:00Z';
    expect((await run('FailedSettlements', { organizationId: member.organizationId, since }, asMember)).organization.settlements.edges).toEqual([]);
    expect((await run('TransactionsWithSettlements', { organizationId: member.organizationId }, asMember)).organization.transactions.edges).toEqual([]);
    expect((await run('AssetCatalog', {}, asKey)).assetNetworks).toEqual(expect.any(Array));
  });

  test('is off outside development: production answers no GraphiQL page', async () => {
    const { text } = await get(prodServer, '/graphql');
    expect(text).not.toContain('graphiql-options');
  });
});

describe('API reference at /docs', () => {
  for (const mode of ['development', 'production'] as const) {
    test(`renders /v1/openapi.json with Swagger UI from the process (${mode})`, async () => {
      const server = mode === 'production' ? prodServer : devServer;
      const { res, text } = await get(server, '/docs');
      expectPageHeaders(res);
      expectNoExternalUrl(text);
      await expectAssetsServed(server, text);
      expect(referencesOf(text).some((r) => r.startsWith('/assets/swagger-ui-bundle.js?'))).toBe(true);
      const { url } = dataBlockOf(text, 'api-reference-options');
      const doc = await get(server, url, { accept: 'application/json' });
      expect(doc.res.status).toBe(200);
      expect(JSON.parse(doc.text).openapi).toMatch(/^3\.1/);
    });
  }

  test('assets: an unknown name is 404, a revalidation 304, HEAD no body', async () => {
    expect((await get(devServer, '/assets/nope.js')).res.status).toBe(404);
    expect((await get(devServer, '/assets/../package.json')).res.status).toBe(404);
    expect((await get(devServer, '/assets/%2e%2e%2fpackage.json')).res.status).toBe(404);
    const ref = referencesOf((await get(devServer, '/docs')).text).find((r) => r.startsWith('/assets/api-reference-start.js'))!;
    const first = await get(devServer, ref);
    const again = await fetch(devServer.url + ref, { headers: { 'if-none-match': first.res.headers.get('etag')! } });
    expect(again.status).toBe(304);
    const head = await fetch(devServer.url + ref, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
  });
});

describe('docs/webhooks.md: connectionParams of each credential on graphql-ws', () => {
  const query = 'subscription ($organizationId: ID) { webhookDeliveryStatus(organizationId: $organizationId) { kind deliveryId } }';

  /** Subscribes and reports what happened within `ms`: acknowledged, the first errors, the close code. */
  async function follow(connectionParams: Record<string, string>, variables: Record<string, unknown>, ms = 1000) {
    const { createClient } = await import('graphql-ws');
    const { default: WebSocket } = await import('ws');
    let acknowledged = false;
    let closeCode: number | undefined;
    let errors: { extensions?: { code?: string } }[] | undefined;
    const client = createClient({
      url: devServer.url.replace('http', 'ws') + '/graphql',
      webSocketImpl: WebSocket,
      connectionParams,
      retryAttempts: 0,
      on: { connected: () => (acknowledged = true), closed: (e) => (closeCode = (e as CloseEvent).code) },
    });
    client.subscribe(
      { query, variables },
      {
        next: (v) => (errors ??= v.errors as never),
        error: (e) => (errors ??= Array.isArray(e) ? e : [{ extensions: { code: String((e as CloseEvent).code ?? e) } }]),
        complete: () => {},
      },
    );
    await new Promise((r) => setTimeout(r, ms));
    client.dispose();
    return { acknowledged, errors, closeCode };
  }

  test(
    'a member (authorization, any letter case), an operator (x-operator-key); an API key authenticates but may not ' + 'follow; two credentials: 4401',
    async () => {
      const member = await signUpMember(dev);
      const key = await createApiKey(dev, member);
      const operator = await createOperator(dev);
      const organizationId = member.organizationId;

      for (const params of [{ authorization: member.headers.authorization! }, { Authorization: member.headers.authorization! }] as Record<string, string>[]) {
        expect(await follow(params, { organizationId })).toEqual({ acknowledged: true, errors: undefined, closeCode: undefined });
      }
      expect(await follow({ 'x-operator-key': operator.key }, {})).toEqual({ acknowledged: true, errors: undefined, closeCode: undefined });
      const asKey = await follow({ 'x-api-key': key.key }, { organizationId });
      expect(asKey.acknowledged).toBe(true);
      expect(asKey.errors?.[0]?.extensions?.code).toBe('PRINCIPAL_NOT_ALLOWED');
      const both = await follow({ authorization: member.headers.authorization!, 'x-api-key': key.key }, { organizationId });
      expect(both.acknowledged).toBe(false);
      expect(both.closeCode).toBe(4401);
    },
  );
});

test('CONSOLE=off: /console and its assets answer 404, GET / does not list it, the API answers as before', async () => {
  const off = await createTestApp({ env: { NODE_ENV: 'production', CONSOLE: 'off' } });
  const server = await off.listen();
  try {
    const onPage = await get(prodServer, '/console');
    expect(onPage.res.status).toBe(200);
    const assets = referencesOf(onPage.text).filter((r) => r.startsWith('/assets/console.'));
    expect(assets.length).toBe(2);
    expect((await get(server, '/console')).res.status).toBe(404);
    for (const asset of assets) expect((await get(server, asset)).res.status, asset).toBe(404);
    const root = JSON.parse((await get(server, '/', { accept: 'application/json' })).text);
    expect(root.links).not.toHaveProperty('console');
    expect((await get(server, '/assets/pages.css')).res.status).toBe(200);
    const read = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ __typename }' }),
    });
    expect(await read.json()).toEqual({ data: { __typename: 'Query' } });
  } finally {
    await off.close();
  }
});
