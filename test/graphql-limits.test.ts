import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createTestApp, signUpMember, type TestApp } from './harness';
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { buildSchema, GraphQLError, Kind, parse, specifiedRules, validate, type OperationDefinitionNode } from 'graphql';
import { graphqlLimits, limitRules, measureOperation, parseWithLimits } from '../src/graphql-limits';
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
    // with every page size at its maximum (the most its variables may ask)
    const operation = document.definitions.find((d) => d.kind === Kind.OPERATION_DEFINITION) as OperationDefinitionNode;
    expect(measureOperation(schema, () => undefined, operation).cost, f).toBeLessThanOrEqual(graphqlLimits.cost);
  }
});

describe('hostile documents are refused before they reach the database', () => {
  /** POSTs a document as a member and answers the response with the SQL statements it caused. */
  const refusedWithoutSql = async (query: string, variables?: Record<string, unknown>, accept = 'application/json') => {
    const { result, statements } = await app.sqlStatements(() =>
      app.rest('POST', '/graphql', { body: { query, variables }, headers: { accept, ...member.headers } }),
    );
    expect(statements).toEqual([]); // not even the credential's look-up: refused before the context is built
    return result;
  };
  const org = () => member.organizationId;

  test('the statement counter sees the statements of an answered request', async () => {
    const { result, statements } = await app.sqlStatements(() =>
      post(`{ organization(id: "${org()}") { accounts(first: 5) { nodes { id } } } }`, member.headers),
    );
    expect(result.status).toBe(200);
    expect(result.body.errors).toBeUndefined();
    expect(statements.length).toBeGreaterThan(0);
  });

  test('deep nesting: 400 QUERY_TOO_COMPLEX naming the depth limit', async () => {
    const r = await refusedWithoutSql(`{ networks { ${nest(12, 'assetNetworks { network { ', 'id', '} } ')} } }`);
    expectRefused(r, /depth limit of 12 exceeded/i);
  });

  test('1,000 aliases of a field that reads the database: 400 QUERY_TOO_COMPLEX', async () => {
    const aliases = Array.from({ length: 1000 }, (_, i) => `a${i}: account(id: "${org()}") { id }`).join(' ');
    expectRefused(await refusedWithoutSql(`{ ${aliases} }`), /tokens/);
    // 31 of them, within the token limit: the aliases limit
    const few = Array.from({ length: 31 }, (_, i) => `a${i}: account(id: "${org()}") { id }`).join(' ');
    expectRefused(await refusedWithoutSql(`{ ${few} }`), /aliases limit of 30 exceeded/i);
  });

  test('a page size over its maximum: 400 VALIDATION_FAILED naming the argument, as a literal or a variable', async () => {
    const expectOversized = (r: Awaited<ReturnType<typeof post>>, field: string, max: number) => {
      expect(r.status).toBe(400);
      expect(r.body.data ?? null).toBeNull();
      expect(r.body.errors).toHaveLength(1);
      expect(r.body.errors[0].extensions).toEqual({
        code: 'VALIDATION_FAILED',
        fieldErrors: [{ field, message: `must be at most ${max} (the maximum page size)`, code: 'page_size' }],
      });
      expect(r.body.errors[0].message).toBe(`${field}: must be at most ${max} (the maximum page size)`);
    };
    // Organization.accounts is read by a REST list route: its cap is REST's 500 (docs/decisions.md, "Issue 19: one paging style").
    expectOversized(
      await refusedWithoutSql(`{ organization(id: "${org()}") { accounts(first: 1000000) { nodes { id } } } }`),
      'organization.accounts.first',
      500,
    );
    const byVariable = 'query Accounts($org: ID!, $n: Int) { organization(id: $org) { accounts(first: $n) { nodes { id } } } }';
    expectOversized(await refusedWithoutSql(byVariable, { org: org(), n: 1_000_000 }), 'organization.accounts.first', 500);
    expectOversized(await refusedWithoutSql('{ auditLogEntries(first: 501) { totalCount } }'), 'auditLogEntries.first', 500);
    expectOversized(
      await refusedWithoutSql(`{ organization(id: "${org()}") { transactions(first: 101) { nodes { id } } } }`),
      'organization.transactions.first',
      100,
    );
    // the same document with a size within the maximum runs
    const ok = await app.gql<{ organization: { accounts: { nodes: unknown[] } } }>(byVariable, { org: org(), n: 10 }, member.headers);
    expect(ok.errors).toBeUndefined();
    expect(ok.data!.organization.accounts.nodes).toEqual([]);
  });

  test('a fragment cycle: refused by validation (400 under the GraphQL-over-HTTP media type)', async () => {
    const q = '{ networks { ...A } } fragment A on Network { assetNetworks { network { ...B } } } fragment B on Network { ...A }';
    const r = await refusedWithoutSql(q, undefined, 'application/graphql-response+json');
    expect(r.status).toBe(400);
    expect(r.body.data ?? null).toBeNull();
    expect(r.body.errors[0].extensions.code).toBe('VALIDATION_FAILED');
    expect(r.body.errors[0].message).toMatch(/Cannot spread fragment "A" within itself/);
  });

  test('a wide query multiplying pages and lists: 400 QUERY_TOO_COMPLEX by its cost, with literal or variable sizes', async () => {
    const wide = (size: string) =>
      `query Wide($org: ID!, $n: Int) { organization(id: $org) { accounts(first: ${size}) { nodes { id ledgerEntries(first: 100) { nodes { id } } } } } }`;
    // 500 accounts x (2 + 100 entries x 1) = 500 x 102 > 50,000
    expectRefused(await refusedWithoutSql(wide('500'), { org: org() }), /cost.*limit is 50000/i);
    expectRefused(await refusedWithoutSql(wide('$n'), { org: org(), n: 500 }), /cost.*limit is 50000/i);
    expectRefused(await refusedWithoutSql(wide('$n'), { org: org() }), /cost/i); // no size: counted at the maximum
    const ok = await app.gql(wide('$n'), { org: org(), n: 50 }, member.headers); // 50 x 102
    expect(ok.errors).toBeUndefined();
  });
});

describe('the cost of relay connections (first/last, edges and nodes), on a schema of that shape', () => {
  const relay = buildSchema(`
    type Query { organization(id: ID!): Organization, accounts(first: Int, after: String, last: Int, before: String): AccountConnection! }
    type Organization { id: ID! accounts(first: Int, after: String, last: Int, before: String): AccountConnection! }
    type AccountConnection { edges: [AccountEdge!]! nodes: [Account!]! pageInfo: PageInfo! totalCount: Int! }
    type AccountEdge { cursor: String! node: Account! }
    type PageInfo { hasNextPage: Boolean! endCursor: String }
    type Account { id: ID! name: String! balances: [Balance!]! transactions(first: Int, last: Int): TransactionConnection! }
    type Balance { posted: String! }
    type TransactionConnection { edges: [TransactionEdge!]! }
    type TransactionEdge { node: Transaction! }
    type Transaction { id: ID! }
  `);
  const measure = (query: string, variables?: Record<string, unknown>) => {
    const document = parse(query);
    const operation = document.definitions.find((d) => d.kind === Kind.OPERATION_DEFINITION) as OperationDefinitionNode;
    const fragments = new Map(document.definitions.flatMap((d) => (d.kind === Kind.FRAGMENT_DEFINITION ? [[d.name.value, d] as const] : [])));
    return measureOperation(relay, (name) => fragments.get(name), operation, variables);
  };
  const refusal = (query: string) => {
    try {
      validate(relay, parse(query), [...specifiedRules, ...limitRules]);
      return null;
    } catch (e) {
      return e as GraphQLError;
    }
  };

  test('a connection costs its size times what it selects; edges and nodes are that page', () => {
    // 1 (accounts) + 10 x (edges 1 + node 1 + id 1 + name 1, pageInfo 1 + hasNextPage 1)
    expect(measure('{ accounts(first: 10) { edges { node { id name } } pageInfo { hasNextPage } } }').cost).toBe(1 + 10 * 6);
    expect(measure('{ accounts(last: 10) { nodes { id } } }').cost).toBe(1 + 10 * 2);
    // no size: the maximum page size
    expect(measure('{ accounts { nodes { id } } }').cost).toBe(1 + graphqlLimits.pageSize.first * 2);
    // an unpaged list inside a node multiplies by listFactor; a nested connection by its size
    expect(measure('{ accounts(first: 10) { nodes { balances { posted } } } }').cost).toBe(1 + 10 * (1 + 1 + 10 * 1));
    expect(measure('{ accounts(first: 10) { nodes { transactions(first: 5) { edges { node { id } } } } } }').cost).toBe(1 + 10 * (1 + 1 + 5 * 3));
    // variables: their value when known, else the maximum (and the document is measured again at execution)
    const withVariable = 'query A($n: Int) { accounts(first: $n) { nodes { id } } }';
    expect(measure(withVariable, { n: 7 }).cost).toBe(1 + 7 * 2);
    expect(measure(withVariable)).toMatchObject({ cost: 1 + 100 * 2, variableSizes: true });
    expect(measure('query A($n: Int = 3) { accounts(first: $n) { nodes { id } } }', {}).cost).toBe(1 + 3 * 2);
  });

  test('first or last over the maximum page size is refused at validation, naming the field', () => {
    const e = refusal('{ organization(id: "x") { accounts(first: 1000) { nodes { id } } } }');
    expect(e?.extensions).toEqual({
      code: 'VALIDATION_FAILED',
      fieldErrors: [{ field: 'organization.accounts.first', message: 'must be at most 100 (the maximum page size)', code: 'page_size' }],
    });
    expect(refusal('{ accounts(last: 101) { nodes { id } } }')?.message).toBe('accounts.last: must be at most 100 (the maximum page size)');
    expect(refusal('{ accounts(first: 100) { nodes { id } } }')).toBeNull();
    expect(measure('query A($n: Int) { accounts(first: $n) { nodes { id } } }', { n: 101 }).oversized).toEqual([
      { field: 'accounts.first', message: 'must be at most 100 (the maximum page size)', code: 'page_size' },
    ]);
  });

  test('two full pages nested (100 x 100, 10,000 nodes) pass; the same twice in one document is refused by the cost', () => {
    const nested = (outer: number, inner: number, leaf = 'id') =>
      `{ accounts(first: ${outer}) { edges { node { id transactions(first: ${inner}) { edges { node { ${leaf} } } } } } } }`;
    expect(refusal(nested(100, 100))).toBeNull();
    expect(measure(nested(100, 100)).cost).toBe(1 + 100 * (1 + 1 + 1 + 1 + 100 * 3));
    expect(refusal(nested(100, 100).replace('node { id transactions', 'node { id balances { posted } transactions'))).toBeNull();
    const twice =
      '{ accounts(first: 100) { nodes { transactions(first: 100) { edges { node { id } } } } } accounts2: accounts(first: 100) { nodes { transactions(first: 100) { edges { node { id } } } } } }';
    expect(refusal(twice)?.extensions).toEqual({ code: 'QUERY_TOO_COMPLEX' });
    expect(refusal(nested(50, 10))).toBeNull();
    expect(measure(nested(50, 10)).cost).toBe(1 + 50 * (1 + 1 + 1 + 1 + 10 * 3));
  });
});
