import { afterAll, beforeAll, expect, test } from 'vitest';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { createTestApp, signUpMember, uniqueEmail, PASSWORD, bearer, operatorKey, type TestApp } from './harness';

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp();
});
afterAll(() => app.close());

const ADD = `mutation($org: ID!, $input: AddMemberInput!) { addMember(organizationId: $org, input: $input) { id email role permissions } }`;

test('an owner adds a VIEWER, who sets a password from the mailed token and is limited by role', async () => {
  const owner = await signUpMember(app);
  const email = uniqueEmail('viewer');
  const added = await app.gql<{ addMember: { id: string; role: string; permissions: string[] } }>(
    ADD,
    { org: owner.organizationId, input: { email, name: 'Vee', role: 'VIEWER' } },
    owner.headers,
  );
  expect(added.errors).toBeUndefined();
  expect(added.data!.addMember).toMatchObject({ role: 'VIEWER', permissions: ['account-read'] });

  // No usable password until the token is spent.
  expect((await app.rest('POST', '/v1/auth/login', { body: { email, password: PASSWORD } })).status).toBe(401);
  const token = app.mailer.last(email)!.data!.token!;
  expect((await app.rest('POST', '/v1/auth/password-reset/confirm', { body: { token, newPassword: PASSWORD } })).status).toBe(204);
  const login = await app.rest('POST', '/v1/auth/login', { body: { email, password: PASSWORD } });
  expect(login.status).toBe(200);
  const viewer = bearer(login.body.accessToken);

  // VIEWER lacks application-manage and member-manage.
  const apps = await app.rest('GET', `/v1/organizations/${owner.organizationId}/applications`, { headers: viewer });
  expect(apps.status).toBe(403);
  expect(apps.body.code).toBe('PERMISSION_DENIED');
  const again = await app.gql(ADD, { org: owner.organizationId, input: { email: uniqueEmail(), name: 'X', role: 'ADMIN' } }, viewer);
  expect(again.errors?.[0]?.extensions?.code).toBe('PERMISSION_DENIED');

  const audit = await app.deps.db.auditLogEntry.findMany({ where: { entityId: added.data!.addMember.id }, orderBy: [{ occurredAt: 'asc' }, { id: 'asc' }] });
  expect(audit.map((a) => a.action)).toEqual(['member.added', 'member.set_password_issued', 'member.password_reset']);
  expect(audit[0]).toMatchObject({ actorType: 'MEMBER', actorId: owner.memberId, organizationId: owner.organizationId });
});

test('members cannot be added to another organization, nor as OWNER, nor twice', async () => {
  const a = await signUpMember(app);
  const b = await signUpMember(app);
  const cross = await app.gql(ADD, { org: b.organizationId, input: { email: uniqueEmail(), name: 'X', role: 'ADMIN' } }, a.headers);
  expect(cross.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  const owner = await app.gql(ADD, { org: a.organizationId, input: { email: uniqueEmail(), name: 'X', role: 'OWNER' } }, a.headers);
  expect(owner.errors?.[0]?.extensions?.code).toBe('VALIDATION_FAILED');
  const dup = await app.gql(ADD, { org: a.organizationId, input: { email: b.email, name: 'X', role: 'ADMIN' } }, a.headers);
  expect(dup.errors?.[0]?.extensions?.code).toBe('EMAIL_TAKEN');
  expect(await app.deps.db.member.count({ where: { organizationId: b.organizationId } })).toBe(1);
});

test('npm run operator:create prints a key once that authenticates operator routes, stored only as a hash', async () => {
  const email = uniqueEmail('ops');
  const { stdout } = await promisify(execFile)('npx', ['tsx', 'scripts/operator-create.ts', '--email', email], {
    env: { ...process.env, DATABASE_URL: app.databaseUrl },
  });
  const key = /X-Operator-Key: (op_\w+)/.exec(stdout)![1]!;
  const op = await app.deps.db.operator.findUniqueOrThrow({ where: { email } });
  expect(op.keyHash).not.toContain(key);
  expect(JSON.stringify(op)).not.toContain(key);
  // An operator route authorizes the key.
  const r = await app.rest('GET', '/v1/admin/dashboard', { headers: operatorKey(key) });
  expect(r.status).toBe(200);
  expect(r.body.generatedAt).toBeTypeOf('string');
  // The operator key is refused on member routes.
  const m = await app.rest('GET', `/v1/organizations/${op.id}/applications`, { headers: operatorKey(key) });
  expect(m.status).toBe(403);
  expect(m.body.code).toBe('PRINCIPAL_NOT_ALLOWED');
}, 60_000);

// Issue 27 point 4: members removed and given another role.
const REMOVE = `mutation($org: ID!, $id: ID!) { removeMember(organizationId: $org, id: $id) { id removedAt } }`;
const CHANGE = `mutation($org: ID!, $id: ID!, $role: MemberRole!) { changeMemberRole(organizationId: $org, id: $id, input: { role: $role }) { id role permissions } }`;
type Org = Awaited<ReturnType<typeof signUpMember>>;

/** A member added to `owner`'s organization with `role`, with a password set from the mailed token, logged in. */
async function joined(owner: Org, role: string) {
  const email = uniqueEmail(role.toLowerCase());
  const added = await app.gql<{ addMember: { id: string } }>(ADD, { org: owner.organizationId, input: { email, name: role, role } }, owner.headers);
  expect(added.errors).toBeUndefined();
  const token = app.mailer.last(email)!.data!.token!;
  expect((await app.rest('POST', '/v1/auth/password-reset/confirm', { body: { token, newPassword: PASSWORD } })).status).toBe(204);
  const l = await app.rest('POST', '/v1/auth/login', { body: { email, password: PASSWORD } });
  expect(l.status).toBe(200);
  return { email, memberId: added.data!.addMember.id, organizationId: owner.organizationId, tokens: l.body, headers: bearer(l.body.accessToken) };
}
const memberPath = (org: string, id: string) => `/v1/organizations/${org}/members/${id}`;
const remove = (by: { headers: Record<string, string> }, org: string, id: string) => app.rest('DELETE', memberPath(org, id), { headers: by.headers });
const setRole = (by: { headers: Record<string, string> }, org: string, id: string, role: string) =>
  app.rest('PUT', `${memberPath(org, id)}/role`, { headers: by.headers, body: { role } });
const viewerOf = (headers: Record<string, string>) => app.gql<{ viewer: { id: string; role: string } }>('{ viewer { id role } }', {}, headers);
const membersOf = async (owner: Org) =>
  (
    await app.gql<{ organization: { members: { edges: { node: { id: string } }[] } } }>(
      'query($id: ID!) { organization(id: $id) { members(first: 100, orderBy: OLDEST_FIRST) { edges { node { id } } } } }',
      { id: owner.organizationId },
      owner.headers,
    )
  ).data!.organization.members.edges.map((x) => x.node.id);

test("RemoveMember: 204; the member's access and refresh tokens stop at once, login and reset too; audited; the email can join again", async () => {
  const owner = await signUpMember(app);
  const dev = await joined(owner, 'DEVELOPER');
  const other = await app.rest('POST', '/v1/auth/login', { body: { email: dev.email, password: PASSWORD } }); // a second session
  expect((await viewerOf(dev.headers)).data?.viewer.id).toBe(dev.memberId);
  const r = await remove(owner, owner.organizationId, dev.memberId);
  expect(r.status, r.text).toBe(204);
  expect(r.text).toBe('');
  // At once, without any clock advance: every access token, every refresh token.
  for (const token of [dev.tokens.accessToken, other.body.accessToken]) {
    const apps = await app.rest('GET', `/v1/organizations/${owner.organizationId}/applications`, { headers: bearer(token) });
    expect(apps.status).toBe(401);
    expect(apps.body.code).toBe('INVALID_CREDENTIAL');
    expect((await viewerOf(bearer(token))).errors?.[0]?.extensions?.code).toBe('INVALID_CREDENTIAL');
  }
  for (const refreshToken of [dev.tokens.refreshToken, other.body.refreshToken])
    expect((await app.rest('POST', '/v1/auth/refresh', { body: { refreshToken } })).status).toBe(401);
  expect((await app.rest('POST', '/v1/auth/login', { body: { email: dev.email, password: PASSWORD } })).status).toBe(401);
  const before = app.mailer.sent.length;
  expect((await app.rest('POST', '/v1/auth/password-reset/request', { body: { email: dev.email } })).status).toBe(204);
  expect(app.mailer.sent.length).toBe(before); // no mail for a removed member
  expect(await membersOf(owner)).toEqual([owner.memberId]);
  const entry = (await app.deps.db.auditLogEntry.findMany({ where: { entityId: dev.memberId }, orderBy: { id: 'asc' } })).at(-1)!;
  expect(entry).toMatchObject({
    action: 'member.removed',
    actorType: 'MEMBER',
    actorId: owner.memberId,
    organizationId: owner.organizationId,
    before: { email: dev.email, role: 'DEVELOPER' },
  });
  // Removing again: the member is gone (404).
  expect((await remove(owner, owner.organizationId, dev.memberId)).status).toBe(404);
  // The person can be a member again: signing up a new organization with the same email.
  const again = await app.rest('POST', '/v1/auth/signup', { body: { email: dev.email, password: PASSWORD, name: 'Back', organizationName: 'Elsewhere' } });
  expect(again.status, again.text).toBe(201);
  expect(again.body.memberId).not.toBe(dev.memberId);
  const back = await app.rest('POST', '/v1/auth/login', { body: { email: dev.email, password: PASSWORD } });
  expect(back.body.memberId).toBe(again.body.memberId);
});

test(
  "ChangeMemberRole: 200 with the new role; the member's sessions end at once and a new login has the new " +
    'permissions; the same role changes nothing; audited',
  async () => {
    const owner = await signUpMember(app);
    const dev = await joined(owner, 'DEVELOPER');
    expect((await app.rest('GET', `/v1/organizations/${owner.organizationId}/applications`, { headers: dev.headers })).status).toBe(200);
    const r = await setRole(owner, owner.organizationId, dev.memberId, 'VIEWER');
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ id: dev.memberId, organizationId: owner.organizationId, email: dev.email, role: 'VIEWER', permissions: ['account-read'] });
    expect((await app.rest('GET', `/v1/organizations/${owner.organizationId}/applications`, { headers: dev.headers })).status).toBe(401);
    expect((await app.rest('POST', '/v1/auth/refresh', { body: { refreshToken: dev.tokens.refreshToken } })).status).toBe(401);
    const l = await app.rest('POST', '/v1/auth/login', { body: { email: dev.email, password: PASSWORD } });
    const apps = await app.rest('GET', `/v1/organizations/${owner.organizationId}/applications`, { headers: bearer(l.body.accessToken) });
    expect(apps.status).toBe(403);
    expect(apps.body.code).toBe('PERMISSION_DENIED');
    const entry = (await app.deps.db.auditLogEntry.findMany({ where: { entityId: dev.memberId }, orderBy: { id: 'asc' } })).at(-1)!;
    expect(entry).toMatchObject({ action: 'member.role_changed', actorId: owner.memberId, before: { role: 'DEVELOPER' }, after: { role: 'VIEWER' } });
    // The same role again: 200, no entry, the session goes on.
    expect((await setRole(owner, owner.organizationId, dev.memberId, 'VIEWER')).status).toBe(200);
    expect(await app.deps.db.auditLogEntry.count({ where: { entityId: dev.memberId, action: 'member.role_changed' } })).toBe(1);
    expect((await viewerOf(bearer(l.body.accessToken))).data?.viewer.role).toBe('VIEWER');
    // Hostile input: 400 with a field error, never 500.
    const bad = await setRole(owner, owner.organizationId, dev.memberId, 'KING');
    expect(bad.status).toBe(400);
    expect((await app.rest('PUT', `${memberPath(owner.organizationId, dev.memberId)}/role`, { headers: owner.headers, body: {} })).status).toBe(400);
  },
);

test(
  'the last OWNER can be neither removed nor demoted (409); only an OWNER removes, demotes or appoints an OWNER; ' +
    'member-manage is required; other organizations are 404',
  async () => {
    const owner = await signUpMember(app);
    const self = await remove(owner, owner.organizationId, owner.memberId);
    expect(self.status).toBe(409);
    expect(self.body.code).toBe('INVALID_STATE');
    expect((await setRole(owner, owner.organizationId, owner.memberId, 'ADMIN')).status).toBe(409);
    const g = await app.gql(CHANGE, { org: owner.organizationId, id: owner.memberId, role: 'VIEWER' }, owner.headers);
    expect(g.errors?.[0]?.extensions?.code).toBe('INVALID_STATE');
    expect((await app.gql(REMOVE, { org: owner.organizationId, id: owner.memberId }, owner.headers)).errors?.[0]?.extensions?.code).toBe('INVALID_STATE');

    const admin = await joined(owner, 'ADMIN');
    expect((await remove(admin, owner.organizationId, owner.memberId)).body.code).toBe('PERMISSION_DENIED');
    expect((await setRole(admin, owner.organizationId, owner.memberId, 'VIEWER')).body.code).toBe('PERMISSION_DENIED');
    expect((await setRole(admin, owner.organizationId, admin.memberId, 'OWNER')).body.code).toBe('PERMISSION_DENIED');
    const viewer = await joined(owner, 'VIEWER');
    expect((await remove(viewer, owner.organizationId, admin.memberId)).body.code).toBe('PERMISSION_DENIED');
    // An ADMIN manages the other roles.
    const dev = await joined(owner, 'DEVELOPER');
    expect((await setRole(admin, owner.organizationId, dev.memberId, 'OPERATIONS')).status).toBe(200);
    expect((await remove(admin, owner.organizationId, dev.memberId)).status).toBe(204);

    // An OWNER appoints a second OWNER; then either may leave, but not both.
    const second = await setRole(owner, owner.organizationId, admin.memberId, 'OWNER');
    expect(second.status).toBe(200);
    const admin2 = await app.rest('POST', '/v1/auth/login', { body: { email: admin.email, password: PASSWORD } });
    const r = await app.gql<{ removeMember: { id: string; removedAt: string } }>(
      REMOVE,
      { org: owner.organizationId, id: owner.memberId },
      bearer(admin2.body.accessToken),
    );
    expect(r.errors).toBeUndefined();
    expect(r.data!.removeMember).toEqual({ id: owner.memberId, removedAt: expect.any(String) });
    expect((await remove({ headers: bearer(admin2.body.accessToken) }, owner.organizationId, admin.memberId)).status).toBe(409);

    const other = await signUpMember(app);
    expect((await remove(other, owner.organizationId, viewer.memberId)).status).toBe(404);
    expect((await remove(other, other.organizationId, viewer.memberId)).status).toBe(404);
    expect((await setRole(other, other.organizationId, viewer.memberId, 'ADMIN')).status).toBe(404);
    expect((await remove(other, other.organizationId, 'nope')).status).toBe(404);
    expect((await app.gql(CHANGE, { org: other.organizationId, id: viewer.memberId, role: 'ADMIN' }, other.headers)).errors?.[0]?.extensions?.code).toBe(
      'NOT_FOUND',
    );
  },
);

test('two owners demoting (or removing) each other at once never leave the organization without an owner', async () => {
  for (let i = 0; i < 6; i++) {
    const a = await signUpMember(app);
    const b = await joined(a, 'ADMIN');
    expect((await setRole(a, a.organizationId, b.memberId, 'OWNER')).status).toBe(200);
    const bl = await app.rest('POST', '/v1/auth/login', { body: { email: b.email, password: PASSWORD } });
    const bh = { headers: bearer(bl.body.accessToken) };
    const [x, y] =
      i % 2 === 0
        ? await Promise.all([setRole(a, a.organizationId, b.memberId, 'ADMIN'), setRole(bh, a.organizationId, a.memberId, 'ADMIN')])
        : await Promise.all([remove(a, a.organizationId, b.memberId), remove(bh, a.organizationId, a.memberId)]);
    const statuses = [x.status, y.status];
    expect(
      statuses.filter((s) => s === 200 || s === 204),
      `${x.text} ${y.text}`,
    ).toHaveLength(1);
    expect(await app.deps.db.member.count({ where: { organizationId: a.organizationId, role: 'OWNER', removedAt: null } })).toBe(1);
  }
});
