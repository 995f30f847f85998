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
    ADD, { org: owner.organizationId, input: { email, name: 'Vee', role: 'VIEWER' } }, owner.headers);
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
