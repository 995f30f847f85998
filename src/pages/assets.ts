import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import { gzip as gzipCallback } from 'node:zlib';
import { ownAssets } from './static';

const gzip = promisify(gzipCallback);

/**
 * The static assets of the browser pages (GraphiQL, the API reference at /docs), served by this
 * process from node_modules and src/pages/static: no CDN, so the pages work offline. Each is
 * served at /assets/<name>?v=<content hash>, cached for a year (the hash changes with the content),
 * gzip-compressed when the browser accepts it. Loaded on first use only.
 */
const require = createRequire(import.meta.url);
const js = 'text/javascript; charset=utf-8';
const css = 'text/css; charset=utf-8';

type GraphiqlBundle = Record<'js' | 'css' | 'editorWorkerService' | 'jsonWorker' | 'graphqlWorker', string>;
// The bundle of @graphql-yoga/render-graphiql (GraphiQL, React and Monaco, with its workers as strings).
let graphiql: Promise<GraphiqlBundle> | undefined;
const graphiqlPart = (part: keyof GraphiqlBundle) => async () =>
  (await (graphiql ??= import('@graphql-yoga/render-graphiql/graphiql') as Promise<GraphiqlBundle>))[part];
const packageFile = (pkg: string, path: string) => () => readFile(require.resolve(`${pkg}/${path}`));
const ownFile = (name: string) => async () => ownAssets[name]!;
// The operator console's bundle (console/build.mjs writes it at `npm install` / `npm run build`), loaded on first use.
const consoleFile = (name: 'console.js' | 'console.css') => async () => (await import('../generated/console-assets')).consoleAssets[name];

const table: Record<string, { type: string; load: () => Promise<string | Buffer> }> = {
  'graphiql.js': { type: js, load: graphiqlPart('js') },
  'graphiql.css': { type: css, load: graphiqlPart('css') },
  'graphiql-editor.worker.js': { type: js, load: graphiqlPart('editorWorkerService') },
  'graphiql-json.worker.js': { type: js, load: graphiqlPart('jsonWorker') },
  'graphiql-graphql.worker.js': { type: js, load: graphiqlPart('graphqlWorker') },
  'graphiql-start.js': { type: js, load: ownFile('graphiql-start.js') },
  'swagger-ui-bundle.js': { type: js, load: packageFile('swagger-ui-dist', 'swagger-ui-bundle.js') },
  'swagger-ui.css': { type: css, load: packageFile('swagger-ui-dist', 'swagger-ui.css') },
  'api-reference-start.js': { type: js, load: ownFile('api-reference-start.js') },
  'pages.css': { type: css, load: ownFile('pages.css') },
  'console.js': { type: js, load: consoleFile('console.js') },
  'console.css': { type: css, load: consoleFile('console.css') },
};

export type AssetName = keyof typeof table;

interface Loaded {
  body: Buffer;
  gzip: Buffer;
  hash: string;
  type: string;
}
const loaded = new Map<string, Promise<Loaded>>();

function load(name: string): Promise<Loaded> {
  let l = loaded.get(name);
  if (!l) {
    const entry = table[name]!;
    l = entry.load().then(async (content) => {
      const body = Buffer.from(content);
      return { body, gzip: await gzip(body), hash: createHash('sha256').update(body).digest('hex').slice(0, 16), type: entry.type };
    });
    l.catch(() => loaded.delete(name)); // a failed load is tried again on the next request
    loaded.set(name, l);
  }
  return l;
}

/** The URL of an asset, with its content hash (so a year of caching never serves a stale one). */
export async function assetUrl(name: AssetName): Promise<string> {
  return `/assets/${name}?v=${(await load(name)).hash}`;
}

export const assetsPrefix = '/assets/';

/** GET/HEAD /assets/<name>: the asset, or null when there is none of that name. */
export async function assetResponse(request: Request, path: string): Promise<Response | null> {
  const name = path.slice(assetsPrefix.length);
  if (!Object.hasOwn(table, name)) return null;
  const asset = await load(name);
  const gzipped = /\bgzip\b/.test(request.headers.get('accept-encoding') ?? '');
  const headers: Record<string, string> = {
    'content-type': asset.type,
    'cache-control': 'public, max-age=31536000, immutable',
    etag: `"${asset.hash}"`,
    vary: 'accept-encoding',
    'x-content-type-options': 'nosniff',
  };
  if (request.headers.get('if-none-match') === headers.etag) return new Response(null, { status: 304, headers });
  if (gzipped) headers['content-encoding'] = 'gzip';
  const body = gzipped ? asset.gzip : asset.body;
  return new Response(request.method === 'HEAD' ? null : new Uint8Array(body), { headers });
}
