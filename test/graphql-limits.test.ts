import { afterAll, beforeAll, expect, test } from 'vitest';
import { createTestApp, signUpMember, type TestApp } from './harness';
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { specifiedRules, validate } from 'graphql';
import { graphqlLimits, limitRules, parseWithLimits } from '../src/graphql-limits';
import { schema } from '../src/schema';

/** Cost limits of client-supplied GraphQL documents (docs/graphql.md), over HTTP POST /graphql. */
let app: TestApp;
let member: Awaited<ReturnType<typeof signUpMember>>;

beforeAll(async () => {
  app = await createTestApp();
  member = await signUpMember(app);
});
afterAll(() => app.close());

const post = (query: string, headers: Record<string, string> = {}) =>
  app.rest('POST', '/graphql', { body: { query }, headers: { accept: 'application/json', ...headers } });

/** `open` + `inner` + `close` nested n times: nest(2, 'a {', 'id', '}') = 'a { a { id } }'. */
const nest = (n: number, open: string, inner: string, close = '}') => open.repeat(n) + ` ${inner} ` + close.repeat(n);

function expectRefused(r: Awaited<ReturnType<typeof post>>, pattern: RegExp) {
  expect(r.status).toBe(400);
  expect(r.body.data ?? null).toBeNull(); // refused before execution: no data at all
  expect(r.body.errors).toHaveLength(1);
  expect(r.body.errors[0].extensions.code).toBe('QUERY_TOO_COMPLEX');
  expect(r.body.errors[0].message).toMatch(pattern);
}

test('the cyclic network/assetNetworks query of the acceptance run is refused before execution', async () => {
  const cyclic = `{ networks { ${nest(7, 'assetNetworks { network { ', 'id', '} } ')} } }`;
  const started = performance.now();
  const r = await post(cyclic, member.headers);
  expectRefused(r, /depth limit of 12 exceeded/i);
  expect(performance.now() - started).toBeLessThan(1000);
  expect(r.text.length).toBeLessThan(1000);
});

test('a shallow query that multiplies lists is refused by its cost, naming the limit', async () => {
  // depth 9, five nested lists: 10^5 times the leaf
  const q = '{ networks { assetNetworks { asset { assetNetworks { network { assetNetworks { asset { assetNetworks { id } } } } } } } } }';
  expectRefused(await post(q, member.headers), new RegExp(`cost.*limit is ${graphqlLimits.cost}`, 'i'));
  // the same walk with two lists runs
  const ok = await post('{ networks { assetNetworks { asset { code } network { id } } } }', member.headers);
  expect(ok.status).toBe(200);
  expect(ok.body.errors).toBeUndefined();
  expect(Array.isArray(ok.body.data.networks)).toBe(true);
});

test('aliases: 30 pass, 31 are refused, 3,000 are refused', async () => {
  const aliased = (n: number) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: health`).join(' ')} }`;
  const ok = await post(aliased(graphqlLimits.aliases));
  expect(ok.status).toBe(200);
  expect(ok.body.data.a29).toBe('ok');
  expectRefused(await post(aliased(graphqlLimits.aliases + 1)), /aliases limit of 30 exceeded/i);
  expectRefused(await post(aliased(3000)), /tokens|aliases/i);
});

test('depth: 12 levels pass, 13 are refused', async () => {
  // __type(name) { ofType { ofType { … name } } }: one object per level, no list (the cost stays low)
  const deep = (levels: number) => `{ __type(name: "Query") { ${nest(levels - 2, 'ofType { ', 'name')} } }`;
  const ok = await post(deep(graphqlLimits.depth));
  expect(ok.status).toBe(200);
  expect(ok.body).toEqual({ data: { __type: { ofType: null } } });
  expectRefused(await post(deep(graphqlLimits.depth + 1)), /depth limit of 12 exceeded, found 13/i);
});

test('a 10,000-deep selection from an anonymous caller answers 400, not a stack overflow', async () => {
  const q = `{ ${nest(10_000, 'a { ', 'b')} }`;
  expect(q.length).toBeGreaterThan(30_000);
  expectRefused(await post(q), new RegExp(`more than ${graphqlLimits.tokens} tokens`));
  // and the same document again (cached refusal)
  expectRefused(await post(q), /tokens/);
});

test('a document over the token limit is refused, also over GET', async () => {
  const q = `{ ${Array.from({ length: graphqlLimits.tokens }, () => 'health').join(' ')} }`;
  expectRefused(await post(q), /tokens/);
  const r = await app.rest('GET', `/graphql?query=${encodeURIComponent(q)}`, { headers: { accept: 'application/json' } });
  expectRefused(r, /tokens/);
});

test('a body over 1 MiB answers 413 PAYLOAD_TOO_LARGE; 1 MiB of variables passes the body limit', async () => {
  const big = 'x'.repeat(graphqlLimits.bodyBytes);
  const r = await app.rest('POST', '/graphql', { body: { query: '{ health }', variables: { pad: big } }, headers: { accept: 'application/json' } });
  expect(r.status).toBe(413);
  expect(r.body.errors[0].extensions.code).toBe('PAYLOAD_TOO_LARGE');
  const ok = await app.rest('POST', '/graphql', {
    body: { query: '{ health }', variables: { pad: 'x'.repeat(graphqlLimits.bodyBytes - 100) } },
    headers: { accept: 'application/json' },
  });
  expect(ok.status).toBe(200);
  expect(ok.body.data).toEqual({ health: 'ok' });
});

test('over a real socket: a declared 8 MiB body is refused at once, a streamed one once it passes 1 MiB', async () => {
  const server = await app.listen();
  const declared = await fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ query: '{ health }', variables: { pad: 'x'.repeat(8 << 20) } }),
  });
  expect(declared.status).toBe(413);
  expect((await declared.json()).errors[0].extensions.code).toBe('PAYLOAD_TOO_LARGE');
  const chunk = new TextEncoder().encode('x'.repeat(64 * 1024));
  let sent = 0;
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(new TextEncoder().encode('{"query":"{ health }","variables":{"pad":"'));
    },
    pull(c) {
      if (sent++ < 1024)
        c.enqueue(chunk); // 64 MiB, no Content-Length
      else {
        c.enqueue(new TextEncoder().encode('"}}'));
        c.close();
      }
    },
  });
  const streamed = await fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: stream,
    duplex: 'half',
  } as RequestInit);
  expect(streamed.status).toBe(413);
  expect(sent).toBeLessThan(200); // stopped by the 1 MiB limit, far before the 64 MiB sent (socket buffers hold a few)
});

test('every REST operation document is within the limits (integrators may send them to /graphql as they are)', async () => {
  const dir = resolve(import.meta.dirname, '../rest/operations');
  const files = readdirSync(dir).filter((f) => f.endsWith('.graphql'));
  expect(files.length).toBeGreaterThan(100);
  for (const f of files) {
    const document = parseWithLimits(readFileSync(resolve(dir, f), 'utf8'));
    expect(validate(schema, document, [...specifiedRules, ...limitRules]).map((e) => `${f}: ${e.message}`)).toEqual([]);
  }
});
