import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { getNamedType, getOperationAST, isObjectType, parse, type GraphQLField, type OperationDefinitionNode } from 'graphql';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { routes, type Route } from '../rest/routes';
import { allows, principalsOf, type Policy } from '../src/auth/policy';
import { rolePermissions } from '../src/auth/permissions';
import { hashPassword } from '../src/auth/passwords';
import { signAccessToken } from '../src/auth/tokens';
import type { Principal } from '../src/auth/principal';
import { schema } from '../src/schema';
import { apiKey, bearer, createApiKey, createOperator, createTestApp, createViewer, PASSWORD, signUpMember, uniqueEmail, type TestApp } from './harness';

/**
 * The principal matrix, generated from rest/routes.ts: every route is called with every kind of
 * principal and the answer must agree with the route's policy (allows() of src/auth/policy.ts).
 */

type Kind = 'none' | 'owner' | 'viewer' | 'apiKey' | 'accountHolder' | 'operator' | 'invalid' | 'twoCredentials';
const kinds: Kind[] = ['none', 'owner', 'viewer', 'apiKey', 'accountHolder', 'operator', 'invalid', 'twoCredentials'];

interface Caller {
  headers: Record<string, string>;
  /** The principal as src/auth/policy.ts sees it; null for no (valid) credential. */
  principal: Principal | null;
  organizationId: string;
  /** Another session of the same principal, for the routes that end the caller's session (logout). */
  renew?: () => Promise<Record<string, string>>;
}

/** Routes that end the session of the caller: each call gets a session of its own. */
const endsSession = new Set(['Logout', 'LogoutAccountHolder']);
const relogin = (path: string, email: string) => async () => {
  const r = await app.rest('POST', path, { body: { email, password: PASSWORD } });
  if (r.status !== 200) throw new Error(`login failed: ${r.status} ${r.text}`);
  return bearer(r.body.accessToken as string);
};

let app: TestApp;
const callers = new Map<Kind, Caller>();

beforeAll(async () => {
  app = await createTestApp();
  const owner = await signUpMember(app);
  const org = owner.organizationId;
  const member = (memberId: string, role: 'OWNER' | 'VIEWER'): Principal => ({
    type: 'member',
    memberId,
    organizationId: org,
    role,
    permissions: new Set(rolePermissions[role]),
  });
  callers.set('none', { headers: {}, principal: null, organizationId: org });
  callers.set('owner', {
    headers: owner.headers,
    principal: member(owner.memberId, 'OWNER'),
    organizationId: org,
    renew: relogin('/v1/auth/login', owner.email),
  });

  // A VIEWER of the owner's organization, straight in the database, logged in over REST.
  const viewer = await createViewer(app, org);
  callers.set('viewer', {
    headers: viewer.headers,
    principal: member(viewer.memberId, 'VIEWER'),
    organizationId: org,
    renew: relogin('/v1/auth/login', viewer.email),
  });

  const key = await createApiKey(app, owner);
  callers.set('apiKey', {
    headers: key.headers,
    principal: {
      type: 'apiKey',
      apiKeyId: key.apiKeyId,
      organizationId: org,
      applicationId: key.applicationId,
      environmentId: key.environmentId,
      mode: 'SANDBOX',
    },
    organizationId: org,
  });

  callers.set('accountHolder', { ...(await accountHolder()), organizationId: org });

  const operator = await createOperator(app);
  callers.set('operator', { headers: operator.headers, principal: { type: 'operator', operatorId: operator.operatorId }, organizationId: org });

  callers.set('invalid', { headers: bearer('not.a.valid-token'), principal: null, organizationId: org });
  callers.set('twoCredentials', { headers: { ...owner.headers, ...apiKey(key.key) }, principal: null, organizationId: org });
});
afterAll(() => app.close());

/** An account holder session: through the sign-up route once it is built, else minted for a row we insert. */
async function accountHolder(): Promise<Omit<Caller, 'organizationId'>> {
  const email = uniqueEmail('holder');
  const signUp = await app.rest('POST', '/v1/account-holders/signup', { body: { email, password: PASSWORD, name: 'Holder' } });
  if (signUp.status === 200 || signUp.status === 201) {
    const token = signUp.body?.accessToken;
    const row = await app.deps.db.accountHolder.findUnique({ where: { email } });
    if (typeof token === 'string' && row)
      return { headers: bearer(token), principal: { type: 'accountHolder', accountHolderId: row.id }, renew: relogin('/v1/account-holders/login', email) };
  } else if (signUp.status !== 501) {
    throw new Error(`account holder sign-up answered ${signUp.status} ${signUp.text}`);
  }
  const row = await app.deps.db.accountHolder.create({
    data: { email, name: 'Holder', passwordHash: await hashPassword(PASSWORD), credentialsChangedAt: new Date(app.clock.now().getTime() - 5000) },
  });
  const { token } = await signAccessToken(
    app.deps.tokenKeys,
    app.deps.config.JWT_ISSUER,
    { sub: row.id, aud: 'account-holder', sid: crypto.randomUUID() },
    app.clock.now(),
    900,
  );
  return { headers: bearer(token), principal: { type: 'accountHolder', accountHolderId: row.id } };
}

function pathFor(route: Route, caller: Caller): string {
  return route.path.replace(/\{(\w+)\}/g, (_m, name: string) => (name === 'organizationId' ? caller.organizationId : crypto.randomUUID()));
}

async function call(route: Route, kind: Kind) {
  const caller = callers.get(kind)!;
  const headers = endsSession.has(route.operationId) && caller.renew ? await caller.renew() : caller.headers;
  return app.rest(route.method, pathFor(route, caller), { headers, ...(route.body ? { body: {} } : {}) });
}

const label = (r: Route) => `${r.operationId} ${r.method} ${r.path}`;

describe.each(routes.map((r) => [label(r), r] as const))('%s', (_name, route) => {
  test.each(kinds)('%s', async (kind) => {
    const caller = callers.get(kind)!;
    const r = await call(route, kind);
    const why = `${kind} on ${label(route)}: ${r.status} ${r.text}`;
    expect(r.headers.get('x-request-id'), why).toBeTruthy();

    if (kind === 'invalid' || kind === 'twoCredentials') {
      if (route.policy.public) expect([401, 403], why).not.toContain(r.status);
      else {
        expect(r.status, why).toBe(401);
        expect(r.body.code, why).toBe(kind === 'invalid' ? 'INVALID_CREDENTIAL' : 'MULTIPLE_CREDENTIALS');
      }
      return;
    }
    if (kind === 'none') {
      if (route.policy.public) expect([401, 403], why).not.toContain(r.status);
      else {
        expect(r.status, why).toBe(401);
        expect(r.body.code, why).toBe('UNAUTHENTICATED');
      }
      return;
    }
    if (allows(route.policy, caller.principal)) {
      expect([401, 403], why).not.toContain(r.status);
      // Past authorization: the input, the resource or (a route not built yet) 501 decide, never a crash.
      expect(r.status, why).not.toBe(500);
      if (route.operation) expect(r.status, why).not.toBe(501);
    } else {
      expect(r.status, why).toBe(403);
      const p = caller.principal!;
      expect(r.body.code, why).toBe(p.type === 'member' && route.policy.member ? 'PERMISSION_DENIED' : 'PRINCIPAL_NOT_ALLOWED');
    }
  });
});

describe('the matrix covers what it should', () => {
  test('every principal kind is allowed somewhere and refused somewhere', () => {
    for (const kind of ['owner', 'viewer', 'apiKey', 'accountHolder', 'operator'] as const) {
      const p = callers.get(kind)!.principal;
      const verdicts = routes.map((r) => allows(r.policy, p));
      expect(verdicts, kind).toContain(true);
      expect(verdicts, kind).toContain(false);
    }
  });

  test('a route without an operation answers 501 to an allowed principal', async () => {
    const pending = routes.filter((r) => !r.operation);
    for (const route of pending) {
      const kind = kinds.find((k) => !['invalid', 'twoCredentials'].includes(k) && allows(route.policy, callers.get(k)!.principal));
      expect(kind, route.operationId).toBeDefined();
      const r = await call(route, kind!);
      expect(r.status, `${label(route)} as ${kind}: ${r.text}`).toBe(501);
    }
  });
});

/** The root field an operation document selects, with its parent type. */
function rootFieldOf(operation: string): { type: 'Query' | 'Mutation' | 'Subscription'; field: string } {
  const doc = parse(readFileSync(resolve(import.meta.dirname, '../rest/operations', `${operation}.graphql`), 'utf8'));
  const op = getOperationAST(doc, operation) as OperationDefinitionNode;
  const selection = op.selectionSet.selections[0]!;
  if (selection.kind !== 'Field') throw new Error(`${operation}: the first selection is not a field`);
  return { type: op.operation === 'query' ? 'Query' : op.operation === 'mutation' ? 'Mutation' : 'Subscription', field: selection.name.value };
}

describe('REST and GraphQL share one policy per operation', () => {
  const withOperation = routes.filter((r) => r.operation);
  test('there are routes with operations', () => expect(withOperation.length).toBeGreaterThan(0));
  test.each(withOperation.map((r) => [r.operationId, r] as const))('%s', (_name, route) => {
    const { type, field } = rootFieldOf(route.operation!);
    const root = schema.getType(type);
    expect(isObjectType(root)).toBe(true);
    const f = isObjectType(root) ? root.getFields()[field] : undefined;
    expect(f, `${type}.${field}`).toBeDefined();
    const policyOf = (x: GraphQLField<unknown, unknown> | undefined) =>
      (x?.extensions?.pothosOptions as { authScopes?: { policy?: Policy } } | undefined)?.authScopes?.policy;
    const rootPolicy = policyOf(f);
    expect(rootPolicy, `${type}.${field} declares no policy`).toBeDefined();
    // A list route reads a connection below its root field (success.page, e.g. organization.accounts):
    // the deepest policy on that path is the route's, and the root field admits every principal kind the route does.
    let policy = rootPolicy;
    if (route.success.page) {
      let here: GraphQLField<unknown, unknown> | undefined = f;
      for (const key of route.success.body!.split('.').slice(1)) {
        const parent = here ? getNamedType(here.type) : undefined;
        here = parent && isObjectType(parent) ? parent.getFields()[key] : undefined;
        expect(here, `${route.success.body}: ${key}`).toBeDefined();
        policy = policyOf(here) ?? policy;
      }
      expect(principalsOf(rootPolicy!)).toEqual(expect.arrayContaining(principalsOf(route.policy)));
    }
    expect(policy).toEqual(route.policy);
  });
});
