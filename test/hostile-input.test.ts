import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import pg from 'pg';
import { isInputObjectType, isNonNullType, getNamedType, type GraphQLInputObjectType } from 'graphql';
import { routes, type Route } from '../rest/routes';
import { compileRoutes } from '../rest/adapter';
import { allows, denial } from '../src/auth/policy';
import { rolePermissions } from '../src/auth/permissions';
import { signAccessToken } from '../src/auth/tokens';
import type { Principal } from '../src/auth/principal';
import { bearer, createApiKey, createOperator, createTestApp, createViewer, PASSWORD, signUpMember, uniqueEmail, type TestApp } from './harness';

/**
 * Hostile input (issue 14, points 4 to 7 and 12): credentials never echoed or logged, bad input
 * answers 400 with field errors (never 500, nothing written), one error shape on REST and
 * GraphQL, authentication before input validation on GraphQL, refusals not logged as errors.
 */

let app: TestApp;
const compiled = compileRoutes();
const documentOf = (r: Route) => readFileSync(resolve(import.meta.dirname, '../rest/operations', `${r.operation}.graphql`), 'utf8');

interface Caller {
  headers: Record<string, string>;
  principal: Principal | null;
}
const callers: Record<'none' | 'owner' | 'viewer' | 'apiKey' | 'holder' | 'operator', Caller> = {} as never;
let organizationId: string;

beforeAll(async () => {
  app = await createTestApp({ captureLogs: true });
  const owner = await signUpMember(app);
  organizationId = owner.organizationId;
  const member = (memberId: string, role: 'OWNER' | 'VIEWER'): Principal => ({
    type: 'member',
    memberId,
    organizationId,
    role,
    permissions: new Set(rolePermissions[role]),
  });
  callers.none = { headers: {}, principal: null };
  callers.owner = { headers: owner.headers, principal: member(owner.memberId, 'OWNER') };
  const viewer = await createViewer(app, organizationId);
  callers.viewer = { headers: viewer.headers, principal: member(viewer.memberId, 'VIEWER') };
  const key = await createApiKey(app, owner);
  callers.apiKey = {
    headers: key.headers,
    principal: { type: 'apiKey', apiKeyId: key.apiKeyId, organizationId, applicationId: key.applicationId, environmentId: key.environmentId, mode: 'SANDBOX' },
  };
  const holderEmail = uniqueEmail('holder');
  const holder = await app.rest('POST', '/v1/account-holders/signup', { body: { email: holderEmail, password: PASSWORD, name: 'Holder' } });
  const holderRow = await app.deps.db.accountHolder.findUniqueOrThrow({ where: { email: holderEmail } });
  callers.holder = { headers: bearer(holder.body.accessToken), principal: { type: 'accountHolder', accountHolderId: holderRow.id } };
  const operator = await createOperator(app);
  callers.operator = { headers: operator.headers, principal: { type: 'operator', operatorId: operator.operatorId } };
});
afterAll(() => app.close());

/** A caller the route's policy allows (the cheapest one). */
function allowedCaller(route: Route): Caller {
  const order = ['none', 'owner', 'apiKey', 'holder', 'operator'] as const;
  for (const k of order) if (allows(route.policy, callers[k].principal) && (k !== 'none' || route.policy.public)) return callers[k];
  throw new Error(`no caller for ${route.operationId}`);
}

const pathOf = (route: Route) => route.path.replace(/\{(\w+)\}/g, (_m, n: string) => (n === 'organizationId' ? organizationId : crypto.randomUUID()));
const levels = () => app.logs.map((l) => JSON.parse(l) as { level: number; msg: string });
const errorLines = () => levels().filter((l) => l.level >= 50);

// ---------------------------------------------------------------------------------------------
describe('point 4: credentials are never echoed nor logged', () => {
  const MARKER = `Mk${crypto.randomUUID().replace(/-/g, '')}`;
  const credentialField = /password|token|secret/i;
  const credentialRoutes = compiled.filter((r) => {
    const input = r.variableTypes.get('input');
    const named = input && getNamedType(input);
    return r.variables?.input === 'body' && named && isInputObjectType(named) && Object.keys(named.getFields()).some((f) => credentialField.test(f));
  });

  test('the credential-bearing routes are found', () => {
    expect(credentialRoutes.map((r) => r.operationId)).toEqual(
      expect.arrayContaining([
        'SignUp',
        'Login',
        'RefreshToken',
        'SignUpAccountHolder',
        'LoginAccountHolder',
        'RefreshAccountHolderToken',
        'ConfirmPasswordReset',
        'ClaimAccountHolderInvitation',
      ]),
    );
  });

  function bodies(type: GraphQLInputObjectType): unknown[] {
    const fields = Object.values(type.getFields());
    const base: Record<string, unknown> = {};
    for (const f of fields) base[f.name] = credentialField.test(f.name) ? MARKER : f.name === 'email' ? uniqueEmail('m') : 'Plain';
    const creds = fields.filter((f) => credentialField.test(f.name)).map((f) => f.name);
    const required = fields.filter((f) => isNonNullType(f.type) && !credentialField.test(f.name)).map((f) => f.name);
    const out: unknown[] = [base, { ...base, remember: true }, { ...base, remember: MARKER }, [base], MARKER, { input: base }];
    for (const c of creds)
      out.push(
        { ...base, [c]: [MARKER] },
        { ...base, [c]: { v: MARKER } },
        { ...base, [c]: `${MARKER}\u0000` },
        { ...base, [c]: `${MARKER}\u202e` },
        { ...base, [c]: MARKER.repeat(300) },
      );
    for (const r of required) {
      const { [r]: _gone, ...rest } = base;
      out.push(rest, { ...base, [r]: 12 });
    }
    return out;
  }

  test('REST and GraphQL answers and log lines never hold the secret', async () => {
    app.logs.length = 0;
    const answers: string[] = [];
    for (const route of credentialRoutes) {
      const caller = allowedCaller(route);
      const type = getNamedType(route.variableTypes.get('input')!) as GraphQLInputObjectType;
      const document = documentOf(route);
      for (const body of bodies(type)) {
        const r = await app.rest(route.method, pathOf(route), { body, headers: caller.headers });
        expect(r.status, `${route.operationId} ${r.text}`).toBeLessThan(500);
        answers.push(r.text);
        answers.push(JSON.stringify(await app.gql(document, { input: body }, caller.headers)));
      }
      const raw = await app.rest(route.method, pathOf(route), {
        raw: `{"password":"${MARKER}"`,
        headers: { ...caller.headers, 'content-type': 'application/json' },
      });
      answers.push(raw.text);
    }
    // Inline literals of the wrong type are echoed by graphql-js's own validation messages.
    answers.push(JSON.stringify(await app.gql(`mutation { login(input: { email: "a@example.com", password: ["${MARKER}"] }) { succeeded } }`)));
    answers.push(JSON.stringify(await app.gql(`mutation { login(input: { email: "a@example.com", password: 1, x: "${MARKER}" }) { succeeded } }`)));
    answers.push(JSON.stringify(await app.gql(`mutation { login(input: { email: "a@example.com", password: "${MARKER}\\u0000" }) { succeeded } }`)));
    answers.push(
      JSON.stringify(await app.gql(`mutation L($p: [String!]) { login(input: { email: "a@example.com", password: $p }) { succeeded } }`, { p: [MARKER] })),
    );
    answers.push(
      JSON.stringify(await app.gql(`mutation L($p: String!) { login(input: { email: "a@example.com", password: $p }) { succeeded } }`, { p: [MARKER] })),
    );
    answers.push(
      JSON.stringify(await app.gql(`mutation L($p: AccountStatus!) { login(input: { email: "a@example.com", password: "x" }) { succeeded } }`, { p: MARKER })),
    );
    for (const a of answers) expect(a).not.toContain(MARKER);
    expect(app.logs.length).toBeGreaterThan(0);
    for (const line of app.logs) expect(line).not.toContain(MARKER);
  });
});

// ---------------------------------------------------------------------------------------------
describe('point 5: bad input answers 400 naming the field, nothing written', () => {
  const signUp = (name: string, email = uniqueEmail('nul')) => ({ email, password: PASSWORD, name, organizationName: 'Org' });

  test.each([
    ['NUL', 'a\u0000b'],
    ['BEL', 'a\u0007b'],
    ['ESC', '\u001b[31m'],
    ['DEL', 'a\u007f'],
    ['C1', 'a\u0085'],
    ['RLO', 'gnp.\u202eexe'],
    ['LRI', 'a\u2066b'],
    ['lone surrogate', 'a\ud800b'],
  ])('%s in a name: REST and GraphQL 400, no member', async (_n, name) => {
    const body = signUp(name);
    const r = await app.rest('POST', '/v1/auth/signup', { body });
    expect(r.status, r.text).toBe(400);
    expect(r.body.code).toBe('VALIDATION_FAILED');
    expect(r.body.errors).toEqual([expect.objectContaining({ field: 'name', code: 'invalid_format' })]);
    const g = await app.gql(documentOf(routes.find((x) => x.operationId === 'SignUp')!), { input: { ...body, email: uniqueEmail('nul') } });
    expect(g.errors?.[0]?.extensions?.code).toBe('VALIDATION_FAILED');
    expect(g.errors?.[0]?.extensions?.fieldErrors).toEqual([expect.objectContaining({ field: 'name', code: 'invalid_format' })]);
    expect(await app.deps.db.member.count({ where: { email: body.email } })).toBe(0);
  });

  test('allowed whitespace (TAB, LF, CR) and ordinary Unicode pass', async () => {
    const r = await app.rest('POST', '/v1/auth/signup', { body: signUp('Zoë\tO\u2019Neil\r\n 日本') });
    expect(r.status, r.text).toBe(201);
  });

  test('inline literals of a GraphQL document are checked too', async () => {
    const email = uniqueEmail('lit');
    const g = await app.gql(
      `mutation { signUp(input: { email: "${email}", password: "${PASSWORD}", name: "a\\u0000b", organizationName: "Org" }) { memberId } }`,
    );
    expect(g.errors?.[0]?.extensions?.code).toBe('VALIDATION_FAILED');
    expect(g.errors?.[0]?.extensions?.fieldErrors).toEqual([expect.objectContaining({ field: 'name' })]);
    expect(await app.deps.db.member.count({ where: { email } })).toBe(0);
  });

  test('an authenticated write with BEL in a name writes nothing', async () => {
    const before = await app.deps.db.application.count();
    const r = await app.rest('POST', `/v1/organizations/${organizationId}/applications`, { body: { name: 'App\u0007' }, headers: callers.owner.headers });
    expect(r.status, r.text).toBe(400);
    expect(r.body.errors).toEqual([expect.objectContaining({ field: 'name' })]);
    expect(await app.deps.db.application.count()).toBe(before);
  });

  test('NUL inside a JSON value (metadata keys and strings) answers 400', async () => {
    const route = compiled.find((r) => r.operationId === 'CreatePaymentIntent')!;
    for (const metadata of [{ 'a\u0000': 1 }, { a: ['x\u0000'] }]) {
      const r = await app.rest('POST', pathOf(route), {
        body: { amount: '1', assetNetworkId: crypto.randomUUID(), beneficiaryAccountId: crypto.randomUUID(), metadata },
        headers: callers.apiKey.headers,
      });
      expect(r.status, r.text).toBe(400);
      expect(r.body.errors).toEqual([expect.objectContaining({ field: expect.stringMatching(/^metadata/) })]);
    }
  });

  test('malformed percent-encoding in a path: 400 MALFORMED_REQUEST naming the parameter', async () => {
    for (const headers of [{}, callers.owner.headers]) {
      const r = await app.rest('GET', '/v1/accounts/%zz', { headers });
      expect(r.status, r.text).toBe(400);
      expect(r.body.code).toBe('MALFORMED_REQUEST');
      expect(r.body.errors).toEqual([expect.objectContaining({ field: 'accountId' })]);
    }
  });

  test('a validly signed token with a malformed subject: 401 INVALID_CREDENTIAL', async () => {
    for (const aud of ['member', 'account-holder'] as const) {
      for (const sub of ['not-a-uuid', 'a\u0000b', '']) {
        const { token } = await signAccessToken(app.deps.tokenKeys, app.deps.config.JWT_ISSUER, { sub, aud, sid: crypto.randomUUID() }, app.clock.now(), 900);
        const r = await app.rest('GET', aud === 'member' ? `/v1/organizations/${organizationId}/accounts` : '/v1/account-holders/me', {
          headers: bearer(token),
        });
        expect(r.status, r.text).toBe(401);
        expect(r.body.code).toBe('INVALID_CREDENTIAL');
        const g = await app.gql('{ accountHolderMe { id } }', {}, bearer(token));
        expect(g.errors?.[0]?.extensions?.code).toBe('INVALID_CREDENTIAL');
      }
    }
  });
});

// ---------------------------------------------------------------------------------------------
describe('point 6: one error shape', () => {
  test('variable coercion errors are field errors, without GraphQL internals', async () => {
    const cases: [unknown, { field: string; code: string }[]][] = [
      [{ email: 'a@example.com', password: 'x', remember: true }, [{ field: 'remember', code: 'unrecognized_keys' }]],
      [
        {},
        [
          { field: 'email', code: 'invalid_type' },
          { field: 'password', code: 'invalid_type' },
        ],
      ],
      [{ email: 5, password: 'x' }, [{ field: 'email', code: 'invalid_type' }]],
      [{ email: 'a@example.com', password: null }, [{ field: 'password', code: 'invalid_type' }]],
    ];
    for (const [body, errors] of cases) {
      const r = await app.rest('POST', '/v1/auth/login', { body });
      expect(r.status, r.text).toBe(400);
      expect(r.body.code).toBe('VALIDATION_FAILED');
      expect(r.body.errors).toEqual(errors.map((e) => expect.objectContaining({ ...e, message: expect.any(String) })));
      expect(r.body.detail).not.toMatch(/Variable|\$input|String!|GraphQL/);
      const g = await app.gql(documentOf(routes.find((x) => x.operationId === 'Login')!), { input: body });
      expect(g.errors?.[0]?.extensions?.code).toBe('VALIDATION_FAILED');
      expect(g.errors?.[0]?.extensions?.fieldErrors).toEqual(r.body.errors);
    }
    // The whole input: a REST body that is not an object; a GraphQL input that is not one.
    const r = await app.rest('POST', '/v1/auth/login', { body: [] });
    expect(r.body.errors).toEqual([expect.objectContaining({ field: '(body)', code: 'invalid_type' })]);
    const g = await app.gql(documentOf(routes.find((x) => x.operationId === 'Login')!), { input: [] });
    expect(g.errors?.[0]?.extensions?.fieldErrors).toEqual([expect.objectContaining({ field: '(input)', code: 'invalid_type' })]);
  });

  test('a query parameter of the wrong type names the parameter', async () => {
    const op = await createOperator(app);
    const r = await app.rest('GET', '/v1/admin/audit-log?take=abc', { headers: op.headers });
    expect(r.status, r.text).toBe(400);
    expect(r.body.errors).toEqual([expect.objectContaining({ field: 'take', code: 'invalid_type' })]);
  });

  test('zod failures carry a code too', async () => {
    const r = await app.rest('POST', '/v1/auth/signup', { body: { email: 'not an email', password: PASSWORD, name: 'N', organizationName: 'O' } });
    expect(r.status, r.text).toBe(400);
    expect(r.body.errors).toEqual([expect.objectContaining({ field: 'email', message: expect.any(String), code: expect.any(String) })]);
  });

  test.each(compiled.filter((r) => r.body === 'optional' && r.operation).map((r) => [r.operationId, r] as const))(
    '%s: a null body is refused',
    async (_n, route) => {
      const r = await app.rest(route.method, pathOf(route), { raw: 'null', headers: { ...allowedCaller(route).headers, 'content-type': 'application/json' } });
      expect(r.status, r.text).toBe(400);
      expect(r.body.code).toBe('VALIDATION_FAILED');
      expect(r.body.errors).toEqual([expect.objectContaining({ field: '(body)' })]);
    },
  );

  // Routes whose body has an ID field: the id sent as a JSON number answers 400 naming it.
  const withIds = compiled.flatMap((r) => {
    const t = r.variables?.input === 'body' ? getNamedType(r.variableTypes.get('input')!) : undefined;
    const id =
      t && isInputObjectType(t)
        ? Object.values(t.getFields()).find((f) => getNamedType(f.type).name === 'ID' && !isListTypeName(f.type.toString()))
        : undefined;
    return id && r.operation ? [[r.operationId, r, id.name] as const] : [];
  });
  test('there are routes with ids in their bodies', () => expect(withIds.length).toBeGreaterThan(5));
  test.each(withIds)('%s: an id given as a JSON number answers 400', async (_n, route, field) => {
    const r = await app.rest(route.method, pathOf(route), { body: { [field]: 12345 }, headers: allowedCaller(route).headers });
    expect(r.status, r.text).toBe(400);
    expect(r.body.errors).toContainEqual(expect.objectContaining({ field, code: 'invalid_type' }));
  });

  test('every VALIDATION_FAILED carries errors[] (a missing body, a bad Idempotency-Key)', async () => {
    const a = await app.rest('POST', '/v1/auth/login', {});
    expect(a.status).toBe(400);
    expect(a.body.errors).toEqual([expect.objectContaining({ field: '(body)', code: expect.any(String) })]);
  });
});

function isListTypeName(t: string) {
  return t.startsWith('[');
}

// ---------------------------------------------------------------------------------------------
describe('point 7: GraphQL authenticates before it validates input', () => {
  const guarded = routes.filter((r) => r.operation && !r.policy.public);
  test.each(guarded.map((r) => [r.operationId, r] as const))('%s', async (_n, route) => {
    const document = documentOf(route);
    const variables = Object.fromEntries([...document.matchAll(/\$(\w+)\s*:/g)].map((m) => [m[1]!, { bogus: [1] }]));
    for (const kind of ['none', 'viewer', 'apiKey', 'holder'] as const) {
      const caller = callers[kind];
      if (allows(route.policy, caller.principal)) continue;
      const expected = denial(route.policy, caller.principal, null).extensions.code;
      const g = await app.gql(document, variables, caller.headers);
      expect(g.errors?.[0]?.extensions?.code, `${kind}: ${JSON.stringify(g)}`).toBe(expected);
      const r = await app.rest(route.method, pathOf(route), { headers: caller.headers, ...(route.body ? { body: { bogus: [1] } } : {}) });
      expect(r.body.code, `${kind} REST: ${r.text}`).toBe(expected);
    }
  });
});

describe('point 7: also for rules checked in the resolver (zod) and for subscriptions', () => {
  test('a VIEWER with a type-valid input that breaks a zod rule: PERMISSION_DENIED', async () => {
    const document = documentOf(routes.find((r) => r.operationId === 'CreateApplication')!);
    const g = await app.gql(document, { organizationId, input: { name: '' } }, callers.viewer.headers);
    expect(g.errors?.[0]?.extensions?.code, JSON.stringify(g)).toBe('PERMISSION_DENIED');
    const anonymous = await app.gql(document, { organizationId, input: { name: 'a\u0000' } });
    expect(anonymous.errors?.[0]?.extensions?.code, JSON.stringify(anonymous)).toBe('UNAUTHENTICATED');
  });
});

// ---------------------------------------------------------------------------------------------
describe('point 12: refusals are not errors in the logs', () => {
  test('4xx answers through REST and GraphQL write no error-level line', async () => {
    app.logs.length = 0;
    expect((await app.rest('POST', '/v1/auth/login', { body: { email: 'nobody@example.com', password: 'wrong password!' } })).status).toBe(401);
    expect((await app.rest('POST', '/v1/auth/login', { body: { email: 'x' } })).status).toBe(400);
    expect((await app.rest('GET', `/v1/accounts/${crypto.randomUUID()}`, { headers: callers.owner.headers })).status).toBe(404);
    expect((await app.rest('GET', `/v1/accounts/${crypto.randomUUID()}`, {})).status).toBe(401);
    expect((await app.rest('POST', `/v1/organizations/${organizationId}/applications`, { body: { name: '' }, headers: callers.owner.headers })).status).toBe(
      400,
    );
    const g = await app.gql('mutation { login(input: { email: "nobody@example.com", password: "wrong password!" }) { succeeded } }');
    expect(g.data ?? g.errors).toBeTruthy();
    await app.gql('query Q($id: ID!) { account(id: $id) { id } }', { id: crypto.randomUUID() }, callers.owner.headers);
    await app.gql('query Q($id: ID!) { account(id: $id) { id } }', { id: crypto.randomUUID() });
    expect(errorLines()).toEqual([]);
    expect(app.logs.length).toBeGreaterThan(0);
  });
});

describe('real faults: INTERNAL on both, one error-level line each', () => {
  let faulty: TestApp;
  beforeAll(async () => {
    faulty = await createTestApp({ captureLogs: true });
  });
  afterAll(() => faulty?.close());

  test('a broken database table answers 500 INTERNAL (REST) and code INTERNAL (GraphQL)', async () => {
    const owner = await signUpMember(faulty);
    const db = new pg.Client({ connectionString: faulty.ownerDatabaseUrl }); // the service role cannot rename tables
    await db.connect();
    await db.query('ALTER TABLE "Account" RENAME TO "AccountGone"');
    try {
      faulty.logs.length = 0;
      const r = await faulty.rest('GET', `/v1/organizations/${owner.organizationId}/accounts`, { headers: owner.headers });
      expect(r.status, r.text).toBe(500);
      expect(r.body.code).toBe('INTERNAL');
      expect(
        faulty.logs.map((l) => JSON.parse(l)).filter((l) => l.level >= 50),
        faulty.logs.join('\n'),
      ).toHaveLength(1);
      faulty.logs.length = 0;
      const g = await faulty.gql(`{ organization(id: "${owner.organizationId}") { accounts { nodes { id } } } }`, {}, owner.headers);
      expect(g.errors?.[0]?.extensions?.code, JSON.stringify(g)).toBe('INTERNAL');
      expect(g.errors?.[0]?.message).toBe('Unexpected error.');
      expect(faulty.logs.map((l) => JSON.parse(l)).filter((l) => l.level >= 50)).toHaveLength(1);
    } finally {
      await db.query('ALTER TABLE "AccountGone" RENAME TO "Account"');
      await db.end();
    }
  });
});
