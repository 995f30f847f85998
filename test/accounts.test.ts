import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createApiKey, createTestApp, signUpMember, uniqueEmail, bearer, PASSWORD, type TestApp } from './harness';

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp();
});
afterAll(() => app.close());

type Creds = { organizationId: string; headers: Record<string, string> };

async function create(who: Creds, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  return app.rest('POST', `/v1/organizations/${who.organizationId}/accounts`, { body, headers: { ...who.headers, ...headers } });
}
async function createId(who: Creds, body: Record<string, unknown> = { name: 'Acc' }) {
  const r = await create(who, body);
  expect(r.status).toBe(201);
  return r.headers.get('location')!.split('/').pop()!;
}
const audits = (entityId: string) => app.deps.db.auditLogEntry.findMany({ where: { entityId }, orderBy: { id: 'asc' } });

/** A holder with an ACTIVE relationship with the member's organization. */
async function holderOf(m: Creds) {
  const email = uniqueEmail('holder');
  const inv = await app.rest('POST', `/v1/organizations/${m.organizationId}/account-holder-invitations`, { body: { email }, headers: m.headers });
  const r = await app.rest('POST', '/v1/account-holders/invitations/signup-and-claim', {
    body: { token: inv.body.token, email, password: PASSWORD, name: 'H' },
  });
  expect(r.status).toBe(200);
  return { accountHolderId: r.body.accountHolderId as string, relationshipId: r.body.relationshipId as string, headers: bearer(r.body.tokens.accessToken) };
}

const fields = [
  'id',
  'organizationId',
  'accountHolderId',
  'name',
  'reference',
  'mode',
  'status',
  'frozenReason',
  'createdAt',
  'updatedAt',
  'closedAt',
  'authorizedApplicationIds',
];

describe('CreateAccount and GetAccount', () => {
  test('a member creates an account: 201, no body, Location resolves; PRODUCTION by default; audited', async () => {
    const m = await signUpMember(app);
    const r = await create(m, { name: ' Main ', reference: 'ref-1' });
    expect(r.status).toBe(201);
    expect(r.text).toBe('');
    const location = r.headers.get('location')!;
    expect(location).toMatch(/^\/v1\/accounts\/[0-9a-f-]{36}$/);
    const id = location.split('/').pop()!;
    const g = await app.rest('GET', location, { headers: m.headers });
    expect(g.status).toBe(200);
    expect(Object.keys(g.body).sort()).toEqual([...fields].sort());
    expect(g.body).toMatchObject({
      id,
      organizationId: m.organizationId,
      accountHolderId: null,
      name: 'Main',
      reference: 'ref-1',
      mode: 'PRODUCTION',
      status: 'ACTIVE',
      frozenReason: null,
      closedAt: null,
      authorizedApplicationIds: [],
    });
    expect(await app.deps.db.account.findUniqueOrThrow({ where: { id } })).toMatchObject({ name: 'Main', mode: 'PRODUCTION' });
    const a = await audits(id);
    expect(a).toHaveLength(1);
    expect(a[0]).toMatchObject({
      action: 'account.created',
      organizationId: m.organizationId,
      actorType: 'MEMBER',
      actorId: m.memberId,
      after: { name: 'Main', reference: 'ref-1', mode: 'PRODUCTION' },
    });

    const sandbox = await createId(m, { name: 'S', mode: 'SANDBOX' });
    expect((await app.rest('GET', `/v1/accounts/${sandbox}`, { headers: m.headers })).body.mode).toBe('SANDBOX');
  });

  test('CreateAccount: 400 on bad input, 409 on a duplicate reference, 400 for a holder without an active relationship', async () => {
    const m = await signUpMember(app);
    await createId(m, { name: 'A', reference: 'dup' });
    const dup = await create(m, { name: 'B', reference: 'dup' });
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe('CONFLICT');
    expect(await app.deps.db.account.count({ where: { organizationId: m.organizationId } })).toBe(1);
    // References are unique per organization only.
    const other = await signUpMember(app);
    await createId(other, { name: 'B', reference: 'dup' });

    for (const body of [{}, { name: '' }, { name: 'x'.repeat(201) }, { name: 'A', mode: 'TEST' }]) expect((await create(m, body)).status).toBe(400);
    const stranger = await app.rest('POST', '/v1/account-holders/signup', { body: { email: uniqueEmail(), password: PASSWORD, name: 'S' } });
    for (const accountHolderId of [stranger.body.accountHolderId, crypto.randomUUID(), 'not-a-uuid']) {
      const r = await create(m, { name: 'A', accountHolderId });
      expect(r.status).toBe(400);
      expect(r.body.code).toBe('VALIDATION_FAILED');
      expect(r.body.errors).toEqual([expect.objectContaining({ field: 'accountHolderId' })]);
    }
    const h = await holderOf(m);
    const ok = await createId(m, { name: 'Held', accountHolderId: h.accountHolderId });
    expect((await app.rest('GET', `/v1/accounts/${ok}`, { headers: m.headers })).body.accountHolderId).toBe(h.accountHolderId);
  });

  test('an API key creates accounts in its mode, authorized for its application; a different mode is refused', async () => {
    const m = await signUpMember(app);
    const k = await createApiKey(app, m, 'SANDBOX');
    const made = await app.rest('POST', `/v1/organizations/${m.organizationId}/accounts`, { body: { name: 'K' }, headers: k.headers });
    expect(made.status).toBe(201);
    const id = made.headers.get('location')!.split('/').pop()!;
    const g = await app.rest('GET', `/v1/accounts/${id}`, { headers: k.headers });
    expect(g.status).toBe(200);
    expect(g.body).toMatchObject({ mode: 'SANDBOX', authorizedApplicationIds: [k.applicationId] });
    expect((await audits(id))[0]).toMatchObject({ actorType: 'API_KEY', actorId: k.apiKeyId, after: { authorizedApplicationIds: [k.applicationId] } });
    const same = await app.rest('POST', `/v1/organizations/${m.organizationId}/accounts`, { body: { name: 'K', mode: 'SANDBOX' }, headers: k.headers });
    expect(same.status).toBe(201);
    const wrong = await app.rest('POST', `/v1/organizations/${m.organizationId}/accounts`, { body: { name: 'K', mode: 'PRODUCTION' }, headers: k.headers });
    expect(wrong.status).toBe(400);
    expect(wrong.body.errors).toEqual([expect.objectContaining({ field: 'mode' })]);
  });

  test('CreateAccount costs one statement without an Idempotency-Key, six with one (issue 22); the row, its authorization and its audit entry all written', async () => {
    const m = await signUpMember(app);
    const k = await createApiKey(app, m);
    // The key authenticated once already (its look-up is cached, src/auth/authenticate.ts): the count is the creation's.
    await app.rest('GET', `/v1/organizations/${m.organizationId}/accounts`, { headers: k.headers });
    const plain = await app.sqlStatements(() => create({ organizationId: m.organizationId, headers: k.headers }, { name: 'One' }));
    expect(plain.result.status).toBe(201);
    // One data-modifying CTE, committed on its own: no BEGIN/COMMIT, no re-read.
    expect(plain.statements).toHaveLength(1);
    expect(plain.statements[0]).toMatch(/^\s*WITH "account" AS \(/);
    const id = plain.result.headers.get('location')!.split('/').pop()!;
    const g = await app.rest('GET', `/v1/accounts/${id}`, { headers: k.headers });
    expect(g.body).toMatchObject({ name: 'One', mode: 'SANDBOX', status: 'ACTIVE', authorizedApplicationIds: [k.applicationId] });
    expect((await audits(id)).map((a) => [a.action, a.actorType, a.actorId])).toEqual([['account.created', 'API_KEY', k.apiKeyId]]);
    const keyed = await app.sqlStatements(() =>
      create({ organizationId: m.organizationId, headers: k.headers }, { name: 'Two' }, { 'idempotency-key': 'count-1' }),
    );
    expect(keyed.result.status).toBe(201);
    // BEGIN, the key's advisory lock, the record's read, the CTE, the record's write, COMMIT.
    expect(keyed.statements).toHaveLength(6);
  });

  test('idempotent CreateAccount: same key and body answer the same account; another body answers 409', async () => {
    const m = await signUpMember(app);
    const key = { 'idempotency-key': 'create-1' };
    const a = await create(m, { name: 'Idem', reference: 'i-1' }, key);
    const b = await create(m, { name: 'Idem', reference: 'i-1' }, key);
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.headers.get('location')).toBe(a.headers.get('location'));
    expect(await app.deps.db.account.count({ where: { organizationId: m.organizationId } })).toBe(1);
    const c = await create(m, { name: 'Other', reference: 'i-2' }, key);
    expect(c.status).toBe(409);
    expect(c.body.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(await app.deps.db.account.count({ where: { organizationId: m.organizationId } })).toBe(1);
    // GraphQL, same semantics.
    const q = 'mutation($o: ID!, $k: String) { createAccount(organizationId: $o, input: { name: "G" }, idempotencyKey: $k) { id name } }';
    const g1 = await app.gql<{ createAccount: { id: string } }>(q, { o: m.organizationId, k: 'gql-1' }, m.headers);
    const g2 = await app.gql<{ createAccount: { id: string } }>(q, { o: m.organizationId, k: 'gql-1' }, m.headers);
    expect(g1.errors).toBeUndefined();
    expect(g2.data!.createAccount.id).toBe(g1.data!.createAccount.id);
  });

  test('GetAccount: 404 for unknown or malformed ids, in REST and GraphQL; 401 without a credential', async () => {
    const m = await signUpMember(app);
    expect((await app.rest('GET', `/v1/accounts/${crypto.randomUUID()}`, { headers: m.headers })).status).toBe(404);
    expect((await app.rest('GET', '/v1/accounts/nope', { headers: m.headers })).status).toBe(404);
    for (const q of [
      '{ account(id: "nope") { id } }',
      'mutation { freezeAccount(id: "x", input: { reason: "r" }) { id } }',
      'mutation { closeAccount(id: "x") { id } }',
    ]) {
      const g = await app.gql(q, {}, m.headers);
      expect(g.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    }
    const g = await app.gql(`{ organization(id: "nope") { accounts { totalCount } } }`, {}, m.headers);
    expect(g.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    const id = await createId(m);
    expect((await app.rest('GET', `/v1/accounts/${id}`)).status).toBe(401);
  });
});

describe('visibility', () => {
  test('tenant isolation: another organization’s member and API key get 404 on reads and writes; nothing changes', async () => {
    const m = await signUpMember(app);
    const k = await createApiKey(app, m, 'PRODUCTION');
    const id = await createId(m);
    const other = await signUpMember(app);
    const otherKey = await createApiKey(app, other, 'PRODUCTION');
    const before = await app.deps.db.account.findUniqueOrThrow({ where: { id } });
    for (const headers of [other.headers, otherKey.headers]) {
      expect((await app.rest('GET', `/v1/accounts/${id}`, { headers })).status).toBe(404);
      expect((await app.rest('GET', `/v1/organizations/${m.organizationId}/accounts`, { headers })).status).toBe(404);
      expect((await app.rest('POST', `/v1/organizations/${m.organizationId}/accounts`, { body: { name: 'X' }, headers })).status).toBe(404);
    }
    expect((await app.rest('POST', `/v1/accounts/${id}/freeze`, { body: { reason: 'r' }, headers: other.headers })).status).toBe(404);
    expect((await app.rest('POST', `/v1/accounts/${id}/unfreeze`, { headers: other.headers })).status).toBe(404);
    expect((await app.rest('DELETE', `/v1/accounts/${id}`, { headers: other.headers })).status).toBe(404);
    const otherApp = await app.rest('POST', `/v1/organizations/${other.organizationId}/applications`, { body: { name: 'O' }, headers: other.headers });
    expect(
      (
        await app.rest('POST', `/v1/organizations/${m.organizationId}/accounts/${id}/authorize-application`, {
          body: { applicationId: otherApp.body.id },
          headers: other.headers,
        })
      ).status,
    ).toBe(404);
    expect(
      (
        await app.rest('POST', `/v1/organizations/${other.organizationId}/accounts/${id}/authorize-application`, {
          body: { applicationId: otherApp.body.id },
          headers: other.headers,
        })
      ).status,
    ).toBe(404);
    // The owner cannot authorize another organization's application either.
    expect(
      (
        await app.rest('POST', `/v1/organizations/${m.organizationId}/accounts/${id}/authorize-application`, {
          body: { applicationId: otherApp.body.id },
          headers: m.headers,
        })
      ).status,
    ).toBe(404);
    expect(await app.deps.db.account.findUniqueOrThrow({ where: { id } })).toEqual(before);
    expect(await app.deps.db.account.count({ where: { organizationId: m.organizationId } })).toBe(1);
    expect(await app.deps.db.accountApplicationAuthorization.count({ where: { accountId: id } })).toBe(0);
    expect((await audits(id)).map((a) => a.action)).toEqual(['account.created']);
    // The owner's own key does not see it until authorized.
    expect((await app.rest('GET', `/v1/accounts/${id}`, { headers: k.headers })).status).toBe(404);
  });

  test('an API key sees only accounts of its mode authorized for its application', async () => {
    const m = await signUpMember(app);
    const sandboxKey = await createApiKey(app, m, 'SANDBOX');
    const prodKey = await createApiKey(app, m, 'PRODUCTION');
    const bySandbox = (
      await app.rest('POST', `/v1/organizations/${m.organizationId}/accounts`, { body: { name: 'S' }, headers: sandboxKey.headers })
    ).headers.get('location')!;
    const prodAccount = await createId(m, { name: 'P', mode: 'PRODUCTION' });
    const sandboxByMember = await createId(m, { name: 'S2', mode: 'SANDBOX' });

    expect((await app.rest('GET', bySandbox, { headers: prodKey.headers })).status).toBe(404);
    expect((await app.rest('GET', `/v1/accounts/${prodAccount}`, { headers: prodKey.headers })).status).toBe(404);
    const auth = await app.rest('POST', `/v1/organizations/${m.organizationId}/accounts/${prodAccount}/authorize-application`, {
      body: { applicationId: prodKey.applicationId },
      headers: m.headers,
    });
    expect(auth.status).toBe(204);
    expect((await app.rest('GET', `/v1/accounts/${prodAccount}`, { headers: prodKey.headers })).status).toBe(200);
    // Authorized for the sandbox key's application, but a PRODUCTION account: not visible to a sandbox key.
    await app.rest('POST', `/v1/organizations/${m.organizationId}/accounts/${prodAccount}/authorize-application`, {
      body: { applicationId: sandboxKey.applicationId },
      headers: m.headers,
    });
    expect((await app.rest('GET', `/v1/accounts/${prodAccount}`, { headers: sandboxKey.headers })).status).toBe(404);

    const listProd = await app.rest('GET', `/v1/organizations/${m.organizationId}/accounts`, { headers: prodKey.headers });
    expect(listProd.body.map((a: { id: string }) => a.id)).toEqual([prodAccount]);
    const listSandbox = await app.rest('GET', `/v1/organizations/${m.organizationId}/accounts`, { headers: sandboxKey.headers });
    expect(listSandbox.body.map((a: { id: string }) => a.id)).toEqual([bySandbox.split('/').pop()]);
    const listMember = await app.rest('GET', `/v1/organizations/${m.organizationId}/accounts`, { headers: m.headers });
    expect(listMember.body).toHaveLength(3);
    expect(listMember.body.map((a: { id: string }) => a.id)).toContain(sandboxByMember);
  });

  test('an account holder sees only its own accounts, while its relationship is active', async () => {
    const m = await signUpMember(app);
    const h = await holderOf(m);
    const h2 = await holderOf(m);
    const mine = await createId(m, { name: 'Mine', accountHolderId: h.accountHolderId });
    const theirs = await createId(m, { name: 'Theirs', accountHolderId: h2.accountHolderId });
    const orgOwned = await createId(m, { name: 'Org' });
    expect((await app.rest('GET', `/v1/accounts/${mine}`, { headers: h.headers })).body).toMatchObject({ id: mine, accountHolderId: h.accountHolderId });
    expect((await app.rest('GET', `/v1/accounts/${theirs}`, { headers: h.headers })).status).toBe(404);
    expect((await app.rest('GET', `/v1/accounts/${orgOwned}`, { headers: h.headers })).status).toBe(404);
    const me = await app.rest('GET', '/v1/account-holders/me', { headers: h.headers });
    expect(me.body.accounts.map((a: { id: string }) => a.id)).toEqual([mine]);
    // Holders do not list, freeze or create.
    expect((await app.rest('GET', `/v1/organizations/${m.organizationId}/accounts`, { headers: h.headers })).status).toBe(403);
    expect((await app.rest('POST', `/v1/accounts/${mine}/freeze`, { body: { reason: 'r' }, headers: h.headers })).status).toBe(403);
    expect((await app.rest('POST', `/v1/organizations/${m.organizationId}/relationships/${h.relationshipId}/revoke`, { headers: m.headers })).status).toBe(204);
    expect((await app.rest('GET', `/v1/accounts/${mine}`, { headers: h.headers })).status).toBe(404);
    expect((await app.rest('GET', '/v1/account-holders/me', { headers: h.headers })).body.accounts).toEqual([]);
  });
});

describe('ListAccountsByOrganization', () => {
  test('pages by id with limit and after; Link rel="next" until the last page', async () => {
    const m = await signUpMember(app);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await createId(m, { name: `A${i}` }));
    const sorted = [...ids].sort();
    expect(sorted).toEqual(ids); // UUIDv7: creation order
    const seen: string[] = [];
    let path: string | null = `/v1/organizations/${m.organizationId}/accounts?limit=2`;
    let pages = 0;
    while (path) {
      const r = await app.rest('GET', path, { headers: m.headers });
      expect(r.status).toBe(200);
      expect(r.body.length).toBeLessThanOrEqual(2);
      seen.push(...r.body.map((a: { id: string }) => a.id));
      const link = r.headers.get('link');
      path = link ? /^<([^>]+)>; rel="next"$/.exec(link)![1]! : null;
      if (path) expect(path).toContain('limit=2');
      pages++;
    }
    expect(seen).toEqual(ids);
    expect(pages).toBe(3);
    const all = await app.rest('GET', `/v1/organizations/${m.organizationId}/accounts`, { headers: m.headers });
    expect(all.body.map((a: { id: string }) => a.id)).toEqual(ids);
    expect(all.headers.get('link')).toBeNull();
    expect(Object.keys(all.body[0]).sort()).toEqual([...fields].sort());
    const exact = await app.rest('GET', `/v1/organizations/${m.organizationId}/accounts?limit=5`, { headers: m.headers });
    expect(exact.headers.get('link')).toBeNull();
    const after = await app.rest('GET', `/v1/organizations/${m.organizationId}/accounts?after=${ids[3]}`, { headers: m.headers });
    expect(after.body.map((a: { id: string }) => a.id)).toEqual([ids[4]]);

    for (const q of ['limit=0', 'limit=501', 'limit=abc', 'after=nope']) {
      const r = await app.rest('GET', `/v1/organizations/${m.organizationId}/accounts?${q}`, { headers: m.headers });
      expect(r.status).toBe(400);
    }
    expect((await app.rest('GET', `/v1/organizations/${m.organizationId}/accounts?limit=500`, { headers: m.headers })).status).toBe(200);
    const g = await app.gql<{ organization: { accounts: { pageInfo: { hasNextPage: boolean; endCursor: string } } } }>(
      'query($o: ID!) { organization(id: $o) { accounts(first: 4, orderBy: OLDEST_FIRST) { pageInfo { hasNextPage endCursor } } } }',
      { o: m.organizationId },
      m.headers,
    );
    expect(g.data!.organization.accounts.pageInfo).toEqual({ hasNextPage: true, endCursor: ids[3] });
    expect((await app.rest('GET', `/v1/organizations/${m.organizationId}/accounts`)).status).toBe(401);
  });

  test("a list route reads no organization row (the caller's own organization is known from its credential); a selection of the row's columns still reads it", async () => {
    const m = await signUpMember(app);
    const k = await createApiKey(app, m);
    const other = await signUpMember(app);
    const id = await createId(m, { name: 'Listed' });
    const readsOrganization = (statements: string[]) => statements.some((s) => /FROM "public"\."Organization"/.test(s));
    for (const [who, path] of [
      [m.headers, `/v1/organizations/${m.organizationId}/accounts`],
      [k.headers, `/v1/organizations/${m.organizationId}/accounts`],
      [m.headers, `/v1/organizations/${m.organizationId}/account-holder-invitations`],
      [k.headers, `/v1/organizations/${m.organizationId}/withdrawal-destinations`],
    ] as const) {
      const { result, statements } = await app.sqlStatements(() => app.rest('GET', path, { headers: who }));
      expect(result.status, result.text).toBe(200);
      expect(readsOrganization(statements), path).toBe(false);
    }
    const listed = await app.rest('GET', `/v1/organizations/${m.organizationId}/accounts`, { headers: m.headers });
    expect(listed.body.map((a: { id: string; name: string }) => [a.id, a.name])).toEqual([[id, 'Listed']]);
    // Another organization's list: 404 as before.
    expect((await app.rest('GET', `/v1/organizations/${other.organizationId}/accounts`, { headers: m.headers })).status).toBe(404);
    // Its columns selected (directly or through a fragment): the row is read and answered.
    const name = `Org ${m.email}`;
    for (const query of [
      'query($o: ID!) { organization(id: $o) { name accounts { nodes { id } } } }',
      'query($o: ID!) { organization(id: $o) { ...F accounts { nodes { id } } } } fragment F on Organization { name }',
      'query($o: ID!) { organization(id: $o) { ... on Organization { name } } }',
    ]) {
      const { result, statements } = await app.sqlStatements(() => app.gql<{ organization: { name: string } }>(query, { o: m.organizationId }, m.headers));
      expect(result.errors).toBeUndefined();
      expect(result.data!.organization.name).toBe(name);
      expect(readsOrganization(statements)).toBe(true);
    }
    const ids = await app.gql<{ organization: { id: string; accounts: { nodes: { id: string }[] } } }>(
      'query($o: ID!) { organization(id: $o) { id __typename accounts { nodes { id } } } }',
      { o: m.organizationId },
      m.headers,
    );
    expect(ids.data!.organization).toEqual({ id: m.organizationId, __typename: 'Organization', accounts: { nodes: [{ id }] } });
  });
});

describe('lifecycle', () => {
  test('freeze, unfreeze and close: 204s, 409 for any other move, audit entries with before and after', async () => {
    const m = await signUpMember(app);
    const id = await createId(m);
    const path = `/v1/accounts/${id}`;
    const status = async () => (await app.deps.db.account.findUniqueOrThrow({ where: { id } })).status;

    expect((await app.rest('POST', `${path}/unfreeze`, { headers: m.headers })).status).toBe(409);
    expect((await app.rest('POST', `${path}/freeze`, { body: {}, headers: m.headers })).status).toBe(400);
    expect((await app.rest('POST', `${path}/freeze`, { body: { reason: ' ' }, headers: m.headers })).status).toBe(400);
    expect((await app.rest('POST', `${path}/freeze`, { body: { reason: 'x'.repeat(1001) }, headers: m.headers })).status).toBe(400);
    const f = await app.rest('POST', `${path}/freeze`, { body: { reason: 'Suspicious activity' }, headers: m.headers });
    expect(f.status).toBe(204);
    expect(f.text).toBe('');
    expect(await app.deps.db.account.findUniqueOrThrow({ where: { id } })).toMatchObject({ status: 'FROZEN', frozenReason: 'Suspicious activity' });
    const again = await app.rest('POST', `${path}/freeze`, { body: { reason: 'again' }, headers: m.headers });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('INVALID_STATE');
    const closeFrozen = await app.rest('DELETE', path, { headers: m.headers });
    expect(closeFrozen.status).toBe(409);
    expect(closeFrozen.body.detail).toMatch(/unfreeze/);
    expect(await status()).toBe('FROZEN');

    expect((await app.rest('POST', `${path}/unfreeze`, { headers: m.headers })).status).toBe(204);
    expect(await app.deps.db.account.findUniqueOrThrow({ where: { id } })).toMatchObject({ status: 'ACTIVE', frozenReason: null });
    expect((await app.rest('POST', `${path}/unfreeze`, { headers: m.headers })).status).toBe(409);

    expect((await app.rest('DELETE', path, { headers: m.headers })).status).toBe(204);
    expect(await app.deps.db.account.findUniqueOrThrow({ where: { id } })).toMatchObject({ status: 'CLOSED', closedAt: expect.any(Date) });
    expect((await app.rest('DELETE', path, { headers: m.headers })).status).toBe(409);
    expect((await app.rest('POST', `${path}/freeze`, { body: { reason: 'r' }, headers: m.headers })).status).toBe(409);
    expect((await app.rest('POST', `${path}/unfreeze`, { headers: m.headers })).status).toBe(409);
    const g = await app.rest('GET', path, { headers: m.headers });
    expect(g.body).toMatchObject({ status: 'CLOSED', closedAt: expect.any(String) });

    const a = await audits(id);
    expect(a.map((e) => [e.action, e.before, e.after])).toEqual([
      ['account.created', null, expect.any(Object)],
      ['account.frozen', { status: 'ACTIVE' }, { status: 'FROZEN', reason: 'Suspicious activity' }],
      ['account.unfrozen', { status: 'FROZEN' }, { status: 'ACTIVE' }],
      ['account.closed', { status: 'ACTIVE' }, { status: 'CLOSED' }],
    ]);
    expect(a.every((e) => e.actorType === 'MEMBER' && e.actorId === m.memberId)).toBe(true);

    const gq = await app.gql<{ freezeAccount: unknown }>('mutation($id: ID!) { freezeAccount(id: $id, input: { reason: "r" }) { id } }', { id }, m.headers);
    expect(gq.errors?.[0]?.extensions?.code).toBe('INVALID_STATE');
  });

  test('an API key is refused by freeze, unfreeze, close, authorize and revoke (403) even when valid', async () => {
    const m = await signUpMember(app);
    const k = await createApiKey(app, m, 'PRODUCTION');
    const made = await app.rest('POST', `/v1/organizations/${m.organizationId}/accounts`, { body: { name: 'K' }, headers: k.headers });
    const id = made.headers.get('location')!.split('/').pop()!;
    expect((await app.rest('GET', `/v1/accounts/${id}`, { headers: k.headers })).status).toBe(200);
    const calls: [string, string, unknown][] = [
      ['POST', `/v1/accounts/${id}/freeze`, { reason: 'r' }],
      ['POST', `/v1/accounts/${id}/unfreeze`, undefined],
      ['DELETE', `/v1/accounts/${id}`, undefined],
      ['POST', `/v1/organizations/${m.organizationId}/accounts/${id}/authorize-application`, { applicationId: k.applicationId }],
      ['POST', `/v1/organizations/${m.organizationId}/relationships/${crypto.randomUUID()}/revoke`, undefined],
    ];
    for (const [method, path, body] of calls) {
      const r = await app.rest(method, path, { body, headers: k.headers });
      expect(r.status).toBe(403);
      expect(r.body.code).toBe('PRINCIPAL_NOT_ALLOWED');
    }
    const g = await app.gql('mutation($id: ID!) { closeAccount(id: $id) { id } }', { id }, k.headers);
    expect(g.errors?.[0]?.extensions?.code).toBe('PRINCIPAL_NOT_ALLOWED');
    expect((await app.deps.db.account.findUniqueOrThrow({ where: { id } })).status).toBe('ACTIVE');
  });

  test('AuthorizeAccountForApplication: 204, twice is a no-op, 409 for an inactive application or a closed account, 400 without a body', async () => {
    const m = await signUpMember(app);
    const id = await createId(m);
    const appRes = await app.rest('POST', `/v1/organizations/${m.organizationId}/applications`, { body: { name: 'A' }, headers: m.headers });
    const applicationId = appRes.body.id as string;
    const path = `/v1/organizations/${m.organizationId}/accounts/${id}/authorize-application`;
    expect((await app.rest('POST', path, { body: { applicationId }, headers: m.headers })).status).toBe(204);
    expect((await app.rest('POST', path, { body: { applicationId }, headers: m.headers })).status).toBe(204);
    expect(await app.deps.db.accountApplicationAuthorization.count({ where: { accountId: id } })).toBe(1);
    expect((await audits(id)).map((a) => a.action)).toEqual(['account.created', 'account.application_authorized']);
    expect((await app.rest('GET', `/v1/accounts/${id}`, { headers: m.headers })).body.authorizedApplicationIds).toEqual([applicationId]);

    expect((await app.rest('POST', path, { body: { applicationId: crypto.randomUUID() }, headers: m.headers })).status).toBe(404);
    expect((await app.rest('POST', path, { body: { applicationId: 'nope' }, headers: m.headers })).status).toBe(404);
    expect((await app.rest('POST', path, { headers: m.headers })).status).toBe(400);
    expect(
      (
        await app.rest('POST', `/v1/organizations/${m.organizationId}/accounts/${crypto.randomUUID()}/authorize-application`, {
          body: { applicationId },
          headers: m.headers,
        })
      ).status,
    ).toBe(404);

    const second = await app.rest('POST', `/v1/organizations/${m.organizationId}/applications`, { body: { name: 'B' }, headers: m.headers });
    expect((await app.rest('POST', `/v1/applications/${second.body.id}/suspend`, { body: { reason: 'r' }, headers: m.headers })).status).toBe(204);
    const suspended = await app.rest('POST', path, { body: { applicationId: second.body.id }, headers: m.headers });
    expect(suspended.status).toBe(409);
    expect(suspended.body.code).toBe('INVALID_STATE');

    expect((await app.rest('DELETE', `/v1/accounts/${id}`, { headers: m.headers })).status).toBe(204);
    const third = await app.rest('POST', `/v1/organizations/${m.organizationId}/applications`, { body: { name: 'C' }, headers: m.headers });
    expect((await app.rest('POST', path, { body: { applicationId: third.body.id }, headers: m.headers })).status).toBe(409);
  });
});

describe('group commit of account creations (issue 22)', () => {
  test('concurrent creations share one statement; a used reference and a refused holder fail alone, the others commit with their authorization and audit entry', async () => {
    const m = await signUpMember(app);
    const other = await signUpMember(app);
    const k = await createApiKey(app, m, 'SANDBOX');
    const k2 = await createApiKey(app, other, 'PRODUCTION');
    const h = await holderOf(m);
    await createId(m, { name: 'First', reference: 'taken' });
    // Warm the API keys' look-ups (cached), so the statements counted are the creations'.
    for (const key of [k, k2])
      await app.rest('GET', `/v1/organizations/${key === k ? m.organizationId : other.organizationId}/accounts`, { headers: key.headers });
    const stranger = await app.rest('POST', '/v1/account-holders/signup', { body: { email: uniqueEmail(), password: PASSWORD, name: 'S' } });

    const requests: [Creds, Record<string, unknown>][] = [
      [{ organizationId: m.organizationId, headers: k.headers }, { name: 'Key 1' }],
      [m, { name: 'Dup', reference: 'taken' }],
      [
        { organizationId: other.organizationId, headers: k2.headers },
        { name: 'Other org', reference: 'taken' },
      ],
      [m, { name: 'Stranger', accountHolderId: stranger.body.accountHolderId }],
      [m, { name: 'Held', accountHolderId: h.accountHolderId, reference: 'held' }],
      [
        { organizationId: m.organizationId, headers: k.headers },
        { name: 'Same ref twice', reference: 'twice' },
      ],
      [
        { organizationId: m.organizationId, headers: k.headers },
        { name: 'Same ref twice', reference: 'twice' },
      ],
    ];
    const { result, statements } = await app.sqlStatements(() => Promise.all(requests.map(([who, body]) => create(who, body))));
    expect(result.map((r) => r.status)).toEqual([201, 409, 201, 400, 201, expect.any(Number), expect.any(Number)]);
    // Exactly one of the two creations with the same new reference wins.
    expect(
      result
        .slice(5)
        .map((r) => r.status)
        .sort(),
    ).toEqual([201, 409]);
    expect(result[1]!.body).toMatchObject({ code: 'CONFLICT', detail: 'The organization already has an account with this reference.' });
    expect(result[3]!.body.errors).toEqual([expect.objectContaining({ field: 'accountHolderId' })]);
    // The seven requests were parsed in the same turns of the event loop: their writes went out together.
    const writes = statements.filter((s) => /^\s*WITH "account" AS \(/.test(s));
    expect(writes.length).toBeLessThan(requests.length);

    // Each created account reads back as its creator sees it, with its authorization and its one audit entry.
    for (const [i, r] of result.entries()) {
      if (r.status !== 201) continue;
      const [who, body] = requests[i]!;
      const id = r.headers.get('location')!.split('/').pop()!;
      const g = await app.rest('GET', `/v1/accounts/${id}`, { headers: who.headers });
      expect(g.status).toBe(200);
      expect(g.body).toMatchObject({ name: body.name, organizationId: who.organizationId, reference: body.reference ?? null, status: 'ACTIVE' });
      const apiKeyOf = who.headers === k.headers ? k : who.headers === k2.headers ? k2 : null;
      expect(g.body.authorizedApplicationIds).toEqual(apiKeyOf ? [apiKeyOf.applicationId] : []);
      const entries = await audits(id);
      expect(entries.map((a) => [a.action, a.actorType, a.actorId, a.organizationId])).toEqual([
        ['account.created', apiKeyOf ? 'API_KEY' : 'MEMBER', apiKeyOf ? apiKeyOf.apiKeyId : expect.any(String), who.organizationId],
      ]);
      expect(entries[0]!.after).toMatchObject({ name: body.name, status: 'ACTIVE' });
    }
    // Nothing of the refused ones was written.
    const names = (await app.deps.db.account.findMany({ where: { organizationId: m.organizationId }, select: { name: true } })).map((a) => a.name).sort();
    expect(names).toEqual(['First', 'Held', 'Key 1', 'Same ref twice']);
    const refusedAudits = await app.deps.db.auditLogEntry.count({ where: { organizationId: m.organizationId, action: 'account.created' } });
    expect(refusedAudits).toBe(4);
  });
});
