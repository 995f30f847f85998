import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createApiKey, createTestApp, signUpMember, uniqueEmail, bearer, PASSWORD, type TestApp } from './harness';
import { sha256 } from '../src/auth/secrets';
import { hashPassword } from '../src/auth/passwords';
import type { MemberRole } from '../src/generated/prisma/enums';

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp();
});
afterAll(() => app.close());

type Member = Awaited<ReturnType<typeof signUpMember>>;

async function signUpHolder(email = uniqueEmail('holder')) {
  const r = await app.rest('POST', '/v1/account-holders/signup', { body: { email, password: PASSWORD, name: 'Holder' } });
  expect(r.status).toBe(200);
  return { email, accountHolderId: r.body.accountHolderId as string, tokens: r.body, headers: bearer(r.body.accessToken) };
}

async function invite(m: { organizationId: string; headers: Record<string, string> }, email: string, expiresInSeconds?: number) {
  const r = await app.rest('POST', `/v1/organizations/${m.organizationId}/account-holder-invitations`, {
    body: { email, ...(expiresInSeconds ? { expiresInSeconds } : {}) },
    headers: m.headers,
  });
  expect(r.status).toBe(201);
  return r.body as { invitationId: string; organizationId: string; email: string; token: string; expiresAt: string };
}

/** A member of `organizationId` with `role`, straight in the database, logged in. */
async function memberWithRole(organizationId: string, role: MemberRole) {
  const email = uniqueEmail(role.toLowerCase());
  await app.deps.db.member.create({
    data: { organizationId, email, name: role, role, passwordHash: await hashPassword(PASSWORD), credentialsChangedAt: app.clock.now() },
  });
  const l = await app.rest('POST', '/v1/auth/login', { body: { email, password: PASSWORD } });
  expect(l.status).toBe(200);
  return { organizationId, headers: bearer(l.body.accessToken) };
}

const audits = (entityId: string) => app.deps.db.auditLogEntry.findMany({ where: { entityId }, orderBy: { id: 'asc' } });

describe('sign-up, login, refresh', () => {
  test('SignUpAccountHolder answers 200 with a TokenResult; the access token reads /me', async () => {
    const email = uniqueEmail('Holder').toUpperCase();
    const r = await app.rest('POST', '/v1/account-holders/signup', { body: { email, password: PASSWORD, name: ' Ada ' } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ succeeded: true, tokenType: 'Bearer', accountHolderId: expect.any(String) });
    expect(typeof r.body.accessToken).toBe('string');
    expect(r.body.refreshToken).toMatch(/^hrt_/);
    const row = await app.deps.db.accountHolder.findUniqueOrThrow({ where: { id: r.body.accountHolderId } });
    expect(row).toMatchObject({ email: email.toLowerCase(), name: 'Ada' });
    expect(row.passwordHash).not.toContain(PASSWORD);
    const me = await app.rest('GET', '/v1/account-holders/me', { headers: bearer(r.body.accessToken) });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ id: r.body.accountHolderId, email: email.toLowerCase(), name: 'Ada', relationships: [], accounts: [] });
    const a = await audits(r.body.accountHolderId);
    expect(a.map((e) => [e.action, e.actorType, e.actorId])).toEqual([['account_holder.signed_up', 'ACCOUNT_HOLDER', r.body.accountHolderId]]);
  });

  test('SignUpAccountHolder: a taken email answers 409, bad input 400', async () => {
    const h = await signUpHolder();
    const again = await app.rest('POST', '/v1/account-holders/signup', { body: { email: h.email, password: PASSWORD, name: 'Other' } });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('EMAIL_TAKEN');
    const short = await app.rest('POST', '/v1/account-holders/signup', { body: { email: uniqueEmail(), password: 'short', name: 'X' } });
    expect(short.status).toBe(400);
    expect(short.body.code).toBe('VALIDATION_FAILED');
    expect(short.body.errors).toEqual([expect.objectContaining({ field: 'password' })]);
    const noBody = await app.rest('POST', '/v1/account-holders/signup');
    expect(noBody.status).toBe(400);
  });

  test('LoginAccountHolder: 200 with tokens, 401 on a wrong password or unknown email, 429 after repeated failures', async () => {
    const h = await signUpHolder();
    const ok = await app.rest('POST', '/v1/account-holders/login', { body: { email: h.email, password: PASSWORD } });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ succeeded: true, tokenType: 'Bearer', accountHolderId: h.accountHolderId });
    expect((await app.rest('GET', '/v1/account-holders/me', { headers: bearer(ok.body.accessToken) })).status).toBe(200);

    const bad = await app.rest('POST', '/v1/account-holders/login', { body: { email: h.email, password: 'wrong password!' } });
    expect(bad.status).toBe(401);
    expect(bad.body.code).toBe('INVALID_LOGIN');
    const unknown = await app.rest('POST', '/v1/account-holders/login', { body: { email: uniqueEmail(), password: PASSWORD } });
    expect(unknown.status).toBe(401);

    // A member's credentials do not log in an account holder.
    const m = await signUpMember(app);
    expect((await app.rest('POST', '/v1/account-holders/login', { body: { email: m.email, password: PASSWORD } })).status).toBe(401);

    // From an address where the holder never logged in (see test/auth-limits.test.ts for the rules).
    const clientIp = '198.51.100.7';
    for (let i = 0; i < 9; i++) await app.rest('POST', '/v1/account-holders/login', { body: { email: h.email, password: 'wrong password!' }, clientIp });
    const limited = await app.rest('POST', '/v1/account-holders/login', { body: { email: h.email, password: PASSWORD }, clientIp });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toMatch(/^\d+$/);
    app.clock.advance(16 * 60_000);
    expect((await app.rest('POST', '/v1/account-holders/login', { body: { email: h.email, password: PASSWORD }, clientIp })).status).toBe(200);
  });

  test('RefreshAccountHolderToken rotates; reusing a spent token revokes the whole session', async () => {
    const h = await signUpHolder();
    const r1 = await app.rest('POST', '/v1/account-holders/refresh', { body: { refreshToken: h.tokens.refreshToken } });
    expect(r1.status).toBe(200);
    expect(r1.body).toMatchObject({ succeeded: true, accountHolderId: h.accountHolderId });
    expect(r1.body.refreshToken).not.toBe(h.tokens.refreshToken);
    expect((await app.rest('GET', '/v1/account-holders/me', { headers: bearer(r1.body.accessToken) })).status).toBe(200);

    const reuse = await app.rest('POST', '/v1/account-holders/refresh', { body: { refreshToken: h.tokens.refreshToken } });
    expect(reuse.status).toBe(401);
    expect(reuse.body.code).toBe('INVALID_REFRESH_TOKEN');
    const after = await app.rest('POST', '/v1/account-holders/refresh', { body: { refreshToken: r1.body.refreshToken } });
    expect(after.status).toBe(401);
    const family = await app.deps.db.refreshToken.findMany({ where: { subjectId: h.accountHolderId } });
    expect(family.every((t) => t.revokedAt !== null)).toBe(true);

    expect((await app.rest('POST', '/v1/account-holders/refresh', { body: { refreshToken: 'hrt_nope' } })).status).toBe(401);
    // A member's refresh token is not an account holder's.
    const m = await signUpMember(app);
    expect((await app.rest('POST', '/v1/account-holders/refresh', { body: { refreshToken: m.tokens.refreshToken } })).status).toBe(401);
  });

  test('GraphQL: signUpAccountHolder, loginAccountHolder and accountHolderMe', async () => {
    const email = uniqueEmail('gql');
    const s = await app.gql<{ signUpAccountHolder: { accountHolderId: string; accessToken: string } }>(
      'mutation($i: SignUpAccountHolderInput!) { signUpAccountHolder(input: $i) { accountHolderId accessToken } }',
      { i: { email, password: PASSWORD, name: 'G' } },
    );
    expect(s.errors).toBeUndefined();
    const l = await app.gql<{ loginAccountHolder: { accountHolderId: string } }>(
      'mutation($i: LoginAccountHolderInput!) { loginAccountHolder(input: $i) { accountHolderId } }',
      { i: { email, password: 'nope nope nope' } },
    );
    expect(l.errors?.[0]?.extensions?.code).toBe('INVALID_LOGIN');
    const me = await app.gql<{ accountHolderMe: { id: string } }>('{ accountHolderMe { id email } }', {}, bearer(s.data!.signUpAccountHolder.accessToken));
    expect(me.data!.accountHolderMe.id).toBe(s.data!.signUpAccountHolder.accountHolderId);
  });
});

describe('logout and password reset (extensions)', () => {
  const me = (accessToken: string) => app.rest('GET', '/v1/account-holders/me', { headers: bearer(accessToken) });
  const refresh = (refreshToken: string) => app.rest('POST', '/v1/account-holders/refresh', { body: { refreshToken } });
  const request = (email: string) => app.rest('POST', '/v1/account-holders/password-reset/request', { body: { email } });
  const confirm = (token: string, newPassword: string) => app.rest('POST', '/v1/account-holders/password-reset/confirm', { body: { token, newPassword } });

  test("LogoutAccountHolder: 204; the session's tokens stop working at once, another session goes on; audited; 403 for a member", async () => {
    const h = await signUpHolder();
    const other = await app.rest('POST', '/v1/account-holders/login', { body: { email: h.email, password: PASSWORD } });
    const r = await app.rest('POST', '/v1/account-holders/logout', { headers: h.headers });
    expect(r.status, r.text).toBe(204);
    expect((await me(h.tokens.accessToken)).status).toBe(401);
    expect((await refresh(h.tokens.refreshToken)).status).toBe(401);
    expect((await me(other.body.accessToken)).status).toBe(200);
    expect((await audits(h.accountHolderId)).map((a) => a.action)).toContain('account_holder.logged_out');
    const m = await signUpMember(app);
    expect((await app.rest('POST', '/v1/account-holders/logout', { headers: m.headers })).status).toBe(403);
    // GraphQL
    const g = await app.gql<{ logoutAccountHolder: boolean }>('mutation { logoutAccountHolder }', {}, bearer(other.body.accessToken));
    expect(g.data?.logoutAccountHolder).toBe(true);
    expect((await me(other.body.accessToken)).status).toBe(401);
  });

  test(
    'password reset: 204 for known and unknown emails, mail to the known one; confirm sets the password, ends ' +
      'sessions and older tokens, voids other tokens',
    async () => {
      const h = await signUpHolder();
      const ghost = uniqueEmail('ghost');
      const known = await request(h.email);
      const unknown = await request(ghost);
      expect(known.status, known.text).toBe(204);
      expect(unknown.status).toBe(204);
      expect(app.mailer.last(ghost)).toBeUndefined();
      const first = app.mailer.last(h.email)!.data!.token!;
      expect(first).toMatch(/^hpt_/);
      expect(await app.deps.db.passwordResetToken.count({ where: { tokenHash: sha256(first), accountHolderId: h.accountHolderId } })).toBe(1);
      await request(h.email);
      const second = app.mailer.last(h.email)!.data!.token!;
      // A holder's token is not a member's.
      expect((await app.rest('POST', '/v1/auth/password-reset/confirm', { body: { token: first, newPassword: 'a member passphrase' } })).status).toBe(400);
      // A short password: 400, the token stays usable.
      expect((await confirm(first, 'short')).status).toBe(400);
      app.clock.advance(1500);
      expect((await confirm(first, 'a holder passphrase')).status).toBe(204);
      expect((await me(h.tokens.accessToken)).status).toBe(401);
      expect((await refresh(h.tokens.refreshToken)).status).toBe(401);
      expect((await app.rest('POST', '/v1/account-holders/login', { body: { email: h.email, password: PASSWORD } })).status).toBe(401);
      const fresh = await app.rest('POST', '/v1/account-holders/login', { body: { email: h.email, password: 'a holder passphrase' } });
      expect(fresh.status).toBe(200);
      expect((await me(fresh.body.accessToken)).status).toBe(200);
      expect((await confirm(first, 'again a passphrase')).status).toBe(400);
      expect((await confirm(second, 'the voided passphrase')).body.code).toBe('INVALID_TOKEN');
      expect((await audits(h.accountHolderId)).map((a) => a.action)).toEqual(
        expect.arrayContaining(['account_holder.password_reset_requested', 'account_holder.password_reset']),
      );
    },
  );

  test('password reset over GraphQL; tokens expire after 30 minutes', async () => {
    const h = await signUpHolder();
    const r = await app.gql<{ requestAccountHolderPasswordReset: boolean }>(
      'mutation($i: RequestPasswordResetInput!) { requestAccountHolderPasswordReset(input: $i) }',
      { i: { email: h.email } },
    );
    expect(r.data?.requestAccountHolderPasswordReset).toBe(true);
    const token = app.mailer.last(h.email)!.data!.token!;
    app.clock.advance(30 * 60_000 + 1000);
    const c = await app.gql('mutation($i: ResetPasswordInput!) { confirmAccountHolderPasswordReset(input: $i) }', {
      i: { token, newPassword: 'too late passphrase' },
    });
    expect(c.errors?.[0]?.extensions?.code).toBe('INVALID_TOKEN');
  });
});

describe('principals', () => {
  test('GetAccountHolderMe: 401 without a credential, 403 for a member or an API key, 401 for a garbage token', async () => {
    const m = await signUpMember(app);
    const k = await createApiKey(app, m);
    expect((await app.rest('GET', '/v1/account-holders/me')).status).toBe(401);
    const asMember = await app.rest('GET', '/v1/account-holders/me', { headers: m.headers });
    expect(asMember.status).toBe(403);
    expect(asMember.body.code).toBe('PRINCIPAL_NOT_ALLOWED');
    expect((await app.rest('GET', '/v1/account-holders/me', { headers: k.headers })).status).toBe(403);
    expect((await app.rest('GET', '/v1/account-holders/me', { headers: bearer('garbage') })).status).toBe(401);
  });

  test('an account holder token is refused where a member is required', async () => {
    const m = await signUpMember(app);
    const h = await signUpHolder();
    const r = await app.rest('POST', `/v1/organizations/${m.organizationId}/account-holder-invitations`, { body: { email: h.email }, headers: h.headers });
    expect(r.status).toBe(403);
    expect(r.body.code).toBe('PRINCIPAL_NOT_ALLOWED');
    expect((await app.rest('GET', `/v1/organizations/${m.organizationId}/applications`, { headers: h.headers })).status).toBe(403);
    expect((await app.rest('GET', `/v1/organizations/${m.organizationId}/accounts`, { headers: h.headers })).status).toBe(403);
  });
});

describe('invitations', () => {
  test('CreateAccountHolderInvitation by a member: 201, the token shown once and stored hashed, audited', async () => {
    const m = await signUpMember(app);
    const email = uniqueEmail('invitee');
    const now = app.clock.now().getTime();
    const r = await app.rest('POST', `/v1/organizations/${m.organizationId}/account-holder-invitations`, {
      body: { email: email.toUpperCase() },
      headers: m.headers,
    });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({
      invitationId: expect.any(String),
      organizationId: m.organizationId,
      email,
      token: expect.stringMatching(/^inv_/),
      expiresAt: expect.any(String),
    });
    expect(new Date(r.body.expiresAt).getTime()).toBe(now + 7 * 24 * 3600_000);
    const row = await app.deps.db.accountHolderInvitation.findUniqueOrThrow({ where: { id: r.body.invitationId } });
    expect(row).toMatchObject({ tokenHash: sha256(r.body.token), createdByType: 'MEMBER', createdById: m.memberId, claimedAt: null });
    const a = await audits(r.body.invitationId);
    expect(a).toHaveLength(1);
    expect(a[0]).toMatchObject({ action: 'account_holder_invitation.created', organizationId: m.organizationId, actorType: 'MEMBER', actorId: m.memberId });
    expect(JSON.stringify(a[0]!.after)).not.toContain(r.body.token);
  });

  test('CreateAccountHolderInvitation by an API key; 404 for another organization; 403 without the permission; 400 on bad input', async () => {
    const m = await signUpMember(app);
    const k = await createApiKey(app, m);
    const byKey = await app.rest('POST', `/v1/organizations/${m.organizationId}/account-holder-invitations`, {
      body: { email: uniqueEmail(), expiresInSeconds: 3600 },
      headers: k.headers,
    });
    expect(byKey.status).toBe(201);
    expect(await app.deps.db.accountHolderInvitation.findUniqueOrThrow({ where: { id: byKey.body.invitationId } })).toMatchObject({
      createdByType: 'API_KEY',
      createdById: k.apiKeyId,
    });

    const other = await signUpMember(app);
    const otherKey = await createApiKey(app, other);
    const before = await app.deps.db.accountHolderInvitation.count();
    for (const headers of [other.headers, otherKey.headers]) {
      const r = await app.rest('POST', `/v1/organizations/${m.organizationId}/account-holder-invitations`, { body: { email: uniqueEmail() }, headers });
      expect(r.status).toBe(404);
      expect(r.body.code).toBe('NOT_FOUND');
    }
    expect(await app.deps.db.accountHolderInvitation.count()).toBe(before);
    expect(
      (await app.rest('POST', '/v1/organizations/not-a-uuid/account-holder-invitations', { body: { email: uniqueEmail() }, headers: m.headers })).status,
    ).toBe(404);

    const viewer = await memberWithRole(m.organizationId, 'VIEWER');
    const denied = await app.rest('POST', `/v1/organizations/${m.organizationId}/account-holder-invitations`, {
      body: { email: uniqueEmail() },
      headers: viewer.headers,
    });
    expect(denied.status).toBe(403);
    expect(denied.body.code).toBe('PERMISSION_DENIED');
    expect((await app.rest('POST', `/v1/organizations/${m.organizationId}/account-holder-invitations`, { body: { email: uniqueEmail() } })).status).toBe(401);

    for (const body of [
      { email: 'nope' },
      { email: uniqueEmail(), expiresInSeconds: 59 * 60 },
      { email: uniqueEmail(), expiresInSeconds: 31 * 24 * 3600 },
      {},
    ]) {
      const r = await app.rest('POST', `/v1/organizations/${m.organizationId}/account-holder-invitations`, { body, headers: m.headers });
      expect(r.status).toBe(400);
    }
    // GraphQL: a malformed organization id answers NOT_FOUND, never a 500.
    const g = await app.gql('mutation { createAccountHolderInvitation(organizationId: "x", input: { email: "a@b.co" }) { token } }', {}, m.headers);
    expect(g.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  });

  test('ClaimAccountHolderInvitation: 200 creates the relationship; single use; email must match; 403 for a member', async () => {
    const m = await signUpMember(app);
    const h = await signUpHolder();
    const inv = await invite(m, h.email.toUpperCase());
    const r = await app.rest('POST', '/v1/account-holders/invitations/claim', { body: { token: inv.token }, headers: h.headers });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ relationshipId: expect.any(String), organizationId: m.organizationId, accountHolderId: h.accountHolderId });
    const rel = await app.deps.db.relationship.findUniqueOrThrow({ where: { id: r.body.relationshipId } });
    expect(rel).toMatchObject({ organizationId: m.organizationId, accountHolderId: h.accountHolderId, status: 'ACTIVE', revokedAt: null });
    expect(await app.deps.db.accountHolderInvitation.findUniqueOrThrow({ where: { id: inv.invitationId } })).toMatchObject({
      claimedAt: expect.any(Date),
      relationshipId: rel.id,
    });
    expect((await audits(inv.invitationId)).map((a) => a.action)).toEqual(['account_holder_invitation.created', 'account_holder_invitation.claimed']);
    expect((await audits(rel.id)).map((a) => [a.action, a.actorType, a.actorId])).toEqual([['relationship.created', 'ACCOUNT_HOLDER', h.accountHolderId]]);

    const me = await app.rest('GET', '/v1/account-holders/me', { headers: h.headers });
    expect(me.body.relationships).toEqual([{ id: rel.id, organizationId: m.organizationId, status: 'ACTIVE', createdAt: expect.any(String), revokedAt: null }]);

    const second = await app.rest('POST', '/v1/account-holders/invitations/claim', { body: { token: inv.token }, headers: h.headers });
    expect(second.status).toBe(400);
    expect(second.body.code).toBe('INVALID_TOKEN');

    const someoneElse = await signUpHolder();
    const inv2 = await invite(m, h.email);
    const mismatch = await app.rest('POST', '/v1/account-holders/invitations/claim', { body: { token: inv2.token }, headers: someoneElse.headers });
    expect(mismatch.status).toBe(409);
    expect(mismatch.body.code).toBe('CONFLICT');
    expect(await app.deps.db.accountHolderInvitation.findUniqueOrThrow({ where: { id: inv2.invitationId } })).toMatchObject({ claimedAt: null });
    expect(await app.deps.db.relationship.count({ where: { accountHolderId: someoneElse.accountHolderId } })).toBe(0);

    const unknown = await app.rest('POST', '/v1/account-holders/invitations/claim', { body: { token: 'inv_unknown' }, headers: h.headers });
    expect(unknown.status).toBe(400);
    expect(unknown.body.code).toBe('INVALID_TOKEN');
    const asMember = await app.rest('POST', '/v1/account-holders/invitations/claim', { body: { token: inv2.token }, headers: m.headers });
    expect(asMember.status).toBe(403);
    expect((await app.rest('POST', '/v1/account-holders/invitations/claim', { body: { token: inv2.token } })).status).toBe(401);
    expect((await app.rest('POST', '/v1/account-holders/invitations/claim', { body: {}, headers: h.headers })).status).toBe(400);
  });

  test('an invitation expires: claimable just before expiresAt, INVALID_TOKEN from then on', async () => {
    const m = await signUpMember(app);
    const h = await signUpHolder();
    // Access tokens are short-lived: log in again after moving the clock.
    const fresh = async () => {
      const hl = await app.rest('POST', '/v1/account-holders/login', { body: { email: h.email, password: PASSWORD } });
      const ml = await app.rest('POST', '/v1/auth/login', { body: { email: m.email, password: PASSWORD } });
      return { holder: bearer(hl.body.accessToken), member: { organizationId: m.organizationId, headers: bearer(ml.body.accessToken) } };
    };
    const inv = await invite(m, h.email, 3600);
    const inv2 = await invite(m, h.email);
    app.clock.advance(3600_000);
    let t = await fresh();
    const late = await app.rest('POST', '/v1/account-holders/invitations/claim', { body: { token: inv.token }, headers: t.holder });
    expect(late.status).toBe(400);
    expect(late.body.code).toBe('INVALID_TOKEN');
    expect(await app.deps.db.accountHolderInvitation.findUniqueOrThrow({ where: { id: inv.invitationId } })).toMatchObject({ claimedAt: null });
    app.clock.advance(7 * 24 * 3600_000 - 3600_000 - 1000);
    t = await fresh();
    expect((await app.rest('POST', '/v1/account-holders/invitations/claim', { body: { token: inv2.token }, headers: t.holder })).status).toBe(200);
    const inv3 = await invite(t.member, h.email, 3600);
    app.clock.advance(3600_000 + 1);
    t = await fresh();
    const expired = await app.rest('POST', '/v1/account-holders/invitations/signup-and-claim', {
      body: { token: inv3.token, email: h.email, password: PASSWORD, name: 'X' },
    });
    expect(expired.status).toBe(409); // the email is taken: checked first
    const inv4 = await invite(t.member, uniqueEmail('late'), 3600);
    app.clock.advance(3600_000);
    const email4 = (await app.deps.db.accountHolderInvitation.findUniqueOrThrow({ where: { id: inv4.invitationId } })).email;
    const late4 = await app.rest('POST', '/v1/account-holders/invitations/signup-and-claim', {
      body: { token: inv4.token, email: email4, password: PASSWORD, name: 'X' },
    });
    expect(late4.status).toBe(400);
    expect(late4.body.code).toBe('INVALID_TOKEN');
    expect(await app.deps.db.accountHolder.findUnique({ where: { email: email4 } })).toBeNull();
  });

  test('SignUpAndClaimAccountHolderInvitation: 200 with tokens; failures roll the sign-up back', async () => {
    const m = await signUpMember(app);
    const email = uniqueEmail('sac');
    const inv = await invite(m, email);
    const r = await app.rest('POST', '/v1/account-holders/invitations/signup-and-claim', {
      body: { token: inv.token, email, password: PASSWORD, name: 'Sam' },
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ relationshipId: expect.any(String), organizationId: m.organizationId, accountHolderId: expect.any(String) });
    expect(r.body.tokens).toMatchObject({ succeeded: true, tokenType: 'Bearer', accountHolderId: r.body.accountHolderId });
    const me = await app.rest('GET', '/v1/account-holders/me', { headers: bearer(r.body.tokens.accessToken) });
    expect(me.status).toBe(200);
    expect(me.body.relationships.map((x: { id: string }) => x.id)).toEqual([r.body.relationshipId]);
    expect((await audits(r.body.accountHolderId)).map((a) => a.action)).toEqual(['account_holder.signed_up']);

    // The same token again: spent. Nothing is created.
    const email2 = uniqueEmail('sac2');
    const again = await app.rest('POST', '/v1/account-holders/invitations/signup-and-claim', {
      body: { token: inv.token, email: email2, password: PASSWORD, name: 'S' },
    });
    expect(again.status).toBe(400);
    expect(again.body.code).toBe('INVALID_TOKEN');
    expect(await app.deps.db.accountHolder.findUnique({ where: { email: email2 } })).toBeNull();

    // Another email than the invitation's: 409, and no holder is left behind.
    const inv3 = await invite(m, uniqueEmail('target'));
    const email3 = uniqueEmail('intruder');
    const mismatch = await app.rest('POST', '/v1/account-holders/invitations/signup-and-claim', {
      body: { token: inv3.token, email: email3, password: PASSWORD, name: 'I' },
    });
    expect(mismatch.status).toBe(409);
    expect(mismatch.body.code).toBe('CONFLICT');
    expect(await app.deps.db.accountHolder.findUnique({ where: { email: email3 } })).toBeNull();
    expect(await app.deps.db.accountHolderInvitation.findUniqueOrThrow({ where: { id: inv3.invitationId } })).toMatchObject({ claimedAt: null });

    // A taken email: 409 EMAIL_TAKEN; the invitation stays unclaimed.
    const inv4 = await invite(m, email);
    const taken = await app.rest('POST', '/v1/account-holders/invitations/signup-and-claim', {
      body: { token: inv4.token, email, password: PASSWORD, name: 'S' },
    });
    expect(taken.status).toBe(409);
    expect(taken.body.code).toBe('EMAIL_TAKEN');
    expect(await app.deps.db.accountHolderInvitation.findUniqueOrThrow({ where: { id: inv4.invitationId } })).toMatchObject({ claimedAt: null });

    expect(
      (await app.rest('POST', '/v1/account-holders/invitations/signup-and-claim', { body: { token: inv4.token, email, password: 'x', name: 'S' } })).status,
    ).toBe(400);
  });
});

describe('relationships', () => {
  async function holderOf(m: Member) {
    const h = await signUpHolder();
    const inv = await invite(m, h.email);
    const c = await app.rest('POST', '/v1/account-holders/invitations/claim', { body: { token: inv.token }, headers: h.headers });
    expect(c.status).toBe(200);
    return { ...h, relationshipId: c.body.relationshipId as string };
  }

  test('RevokeRelationship: 204, the holder loses its accounts; 409 when already revoked; a new invitation reactivates', async () => {
    const m = await signUpMember(app);
    const h = await holderOf(m);
    const created = await app.rest('POST', `/v1/organizations/${m.organizationId}/accounts`, {
      body: { name: 'Held', accountHolderId: h.accountHolderId },
      headers: m.headers,
    });
    expect(created.status).toBe(201);
    const accountPath = created.headers.get('location')!;
    expect((await app.rest('GET', accountPath, { headers: h.headers })).status).toBe(200);
    expect((await app.rest('GET', '/v1/account-holders/me', { headers: h.headers })).body.accounts).toHaveLength(1);

    const r = await app.rest('POST', `/v1/organizations/${m.organizationId}/relationships/${h.relationshipId}/revoke`, { headers: m.headers });
    expect(r.status).toBe(204);
    expect(r.text).toBe('');
    expect(await app.deps.db.relationship.findUniqueOrThrow({ where: { id: h.relationshipId } })).toMatchObject({
      status: 'REVOKED',
      revokedAt: expect.any(Date),
    });
    const a = (await audits(h.relationshipId)).at(-1)!;
    expect(a).toMatchObject({
      action: 'relationship.revoked',
      actorType: 'MEMBER',
      actorId: m.memberId,
      before: { status: 'ACTIVE' },
      after: { status: 'REVOKED', accountHolderId: h.accountHolderId },
    });

    expect((await app.rest('GET', accountPath, { headers: h.headers })).status).toBe(404);
    const me = await app.rest('GET', '/v1/account-holders/me', { headers: h.headers });
    expect(me.body.accounts).toEqual([]);
    expect(me.body.relationships).toEqual([expect.objectContaining({ id: h.relationshipId, status: 'REVOKED', revokedAt: expect.any(String) })]);
    // The account stays with the organization.
    expect((await app.rest('GET', accountPath, { headers: m.headers })).status).toBe(200);
    // A revoked relationship is not good enough to create accounts for the holder.
    const refused = await app.rest('POST', `/v1/organizations/${m.organizationId}/accounts`, {
      body: { name: 'X', accountHolderId: h.accountHolderId },
      headers: m.headers,
    });
    expect(refused.status).toBe(400);

    const again = await app.rest('POST', `/v1/organizations/${m.organizationId}/relationships/${h.relationshipId}/revoke`, { headers: m.headers });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('INVALID_STATE');

    const inv = await invite(m, h.email);
    const reclaim = await app.rest('POST', '/v1/account-holders/invitations/claim', { body: { token: inv.token }, headers: h.headers });
    expect(reclaim.status).toBe(200);
    expect(reclaim.body.relationshipId).toBe(h.relationshipId);
    expect(await app.deps.db.relationship.findUniqueOrThrow({ where: { id: h.relationshipId } })).toMatchObject({ status: 'ACTIVE', revokedAt: null });
    expect((await audits(h.relationshipId)).at(-1)).toMatchObject({ action: 'relationship.reactivated', before: { status: 'REVOKED' } });
    expect((await app.rest('GET', accountPath, { headers: h.headers })).status).toBe(200);
  });

  test('RevokeRelationship: 403 for an API key, 404 across organizations and for unknown or malformed ids', async () => {
    const m = await signUpMember(app);
    const k = await createApiKey(app, m);
    const h = await holderOf(m);
    const path = `/v1/organizations/${m.organizationId}/relationships/${h.relationshipId}/revoke`;
    const byKey = await app.rest('POST', path, { headers: k.headers });
    expect(byKey.status).toBe(403);
    expect(byKey.body.code).toBe('PRINCIPAL_NOT_ALLOWED');
    expect((await app.rest('POST', path, { headers: h.headers })).status).toBe(403);

    const other = await signUpMember(app);
    expect((await app.rest('POST', path, { headers: other.headers })).status).toBe(404);
    // Its own organization in the path, but the relationship is another organization's.
    expect(
      (await app.rest('POST', `/v1/organizations/${other.organizationId}/relationships/${h.relationshipId}/revoke`, { headers: other.headers })).status,
    ).toBe(404);
    expect((await app.rest('POST', `/v1/organizations/${m.organizationId}/relationships/${crypto.randomUUID()}/revoke`, { headers: m.headers })).status).toBe(
      404,
    );
    expect((await app.rest('POST', `/v1/organizations/${m.organizationId}/relationships/nope/revoke`, { headers: m.headers })).status).toBe(404);
    const g = await app.gql('mutation { revokeRelationship(organizationId: "' + m.organizationId + '", id: "nope") { id } }', {}, m.headers);
    expect(g.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    const viewer = await memberWithRole(m.organizationId, 'VIEWER');
    expect((await app.rest('POST', path, { headers: viewer.headers })).status).toBe(403);
    expect(await app.deps.db.relationship.findUniqueOrThrow({ where: { id: h.relationshipId } })).toMatchObject({ status: 'ACTIVE' });
  });
});

// Issue 27 point 1: an organization withdraws invitations; a revoked holder cannot reinstate themself.
describe('invitations withdrawn (issue 27)', () => {
  const claim = (h: { headers: Record<string, string> }, token: string) =>
    app.rest('POST', '/v1/account-holders/invitations/claim', { body: { token }, headers: h.headers });
  const list = (m: { organizationId: string; headers: Record<string, string> }, query = '') =>
    app.rest('GET', `/v1/organizations/${m.organizationId}/account-holder-invitations${query}`, { headers: m.headers });
  const revokeInvitation = (m: { organizationId: string; headers: Record<string, string> }, id: string) =>
    app.rest('POST', `/v1/organizations/${m.organizationId}/account-holder-invitations/${id}/revoke`, { headers: m.headers });

  test(
    'revoking the relationship voids the older unclaimed invitation: claiming it is 400 INVALID_TOKEN and access ' +
      'stays ended; a new invitation reactivates',
    async () => {
      const m = await signUpMember(app);
      const h = await signUpHolder();
      const first = await invite(m, h.email);
      const second = await invite(m, h.email.toUpperCase());
      const otherHolder = await invite(m, uniqueEmail('other'));
      const otherOrg = await signUpMember(app);
      const elsewhere = await invite(otherOrg, h.email);
      const c = await claim(h, first.token);
      expect(c.status).toBe(200);
      const relationshipId = c.body.relationshipId as string;
      const created = await app.rest('POST', `/v1/organizations/${m.organizationId}/accounts`, {
        body: { name: 'Held', accountHolderId: h.accountHolderId },
        headers: m.headers,
      });
      const accountPath = created.headers.get('location')!;
      expect((await app.rest('GET', accountPath, { headers: h.headers })).status).toBe(200);

      expect((await app.rest('POST', `/v1/organizations/${m.organizationId}/relationships/${relationshipId}/revoke`, { headers: m.headers })).status).toBe(204);
      expect((await app.rest('GET', accountPath, { headers: h.headers })).status).toBe(404);

      // The older invitation, same session: refused like a used one; nothing reactivated.
      const again = await claim(h, second.token);
      expect(again.status, again.text).toBe(400);
      expect(again.body.code).toBe('INVALID_TOKEN');
      const g = await app.gql(
        'mutation($i: ClaimAccountHolderInvitationInput!) { claimAccountHolderInvitation(input: $i) { relationshipId } }',
        { i: { token: second.token } },
        h.headers,
      );
      expect(g.errors?.[0]?.extensions?.code).toBe('INVALID_TOKEN');
      expect(await app.deps.db.relationship.findUniqueOrThrow({ where: { id: relationshipId } })).toMatchObject({ status: 'REVOKED' });
      expect((await app.rest('GET', accountPath, { headers: h.headers })).status).toBe(404);

      // What was voided: this organization's invitations to this holder, nothing else.
      const statuses = Object.fromEntries(((await list(m)).body as { id: string; status: string }[]).map((i) => [i.id, i.status]));
      expect(statuses).toEqual({ [first.invitationId]: 'CLAIMED', [second.invitationId]: 'REVOKED', [otherHolder.invitationId]: 'PENDING' });
      expect((await list(otherOrg)).body).toEqual([expect.objectContaining({ id: elsewhere.invitationId, status: 'PENDING' })]);
      expect((await audits(relationshipId)).at(-1)).toMatchObject({ action: 'relationship.revoked', after: { voidedInvitationIds: [second.invitationId] } });
      expect((await audits(second.invitationId)).at(-1)).toMatchObject({
        action: 'account_holder_invitation.revoked',
        actorType: 'MEMBER',
        actorId: m.memberId,
      });

      // Only an invitation issued after the revocation reactivates.
      const fresh = await invite(m, h.email);
      expect((await claim(h, fresh.token)).status).toBe(200);
      expect((await app.rest('GET', accountPath, { headers: h.headers })).status).toBe(200);
    },
  );

  test(
    'ListAccountHolderInvitations: paged by id with Link rel="next", every status, never a token; GraphQL; refused ' +
      'outside the permission and organization',
    async () => {
      const m = await signUpMember(app);
      const h = await signUpHolder();
      const claimed = await invite(m, h.email);
      expect((await claim(h, claimed.token)).status).toBe(200);
      const expiring = await invite(m, uniqueEmail('late'), 3600);
      const pending = await invite(m, uniqueEmail('p'));
      const withdrawn = await invite(m, uniqueEmail('w'));
      expect((await revokeInvitation(m, withdrawn.invitationId)).status).toBe(204);
      app.clock.advance(3600_000 + 1000);
      const relogin = await app.rest('POST', '/v1/auth/login', { body: { email: m.email, password: PASSWORD } }); // the access token expired too
      m.headers = bearer(relogin.body.accessToken);

      const all = await list(m);
      expect(all.status, all.text).toBe(200);
      expect(all.headers.get('link')).toBeNull();
      expect(all.body.map((i: { id: string }) => i.id)).toEqual([claimed.invitationId, expiring.invitationId, pending.invitationId, withdrawn.invitationId]);
      expect(all.body.map((i: { status: string }) => i.status)).toEqual(['CLAIMED', 'EXPIRED', 'PENDING', 'REVOKED']);
      expect(all.body[0]).toEqual({
        id: claimed.invitationId,
        organizationId: m.organizationId,
        email: h.email,
        status: 'CLAIMED',
        createdAt: expect.any(String),
        expiresAt: claimed.expiresAt,
        claimedAt: expect.any(String),
        revokedAt: null,
        relationshipId: expect.any(String),
        createdByType: 'MEMBER',
        createdById: m.memberId,
      });
      for (const inv of [claimed, expiring, pending, withdrawn]) expect(all.text).not.toContain(inv.token);
      expect(all.text).not.toMatch(/tokenHash|inv_/);

      const ids: string[] = [];
      let path: string | null = `/v1/organizations/${m.organizationId}/account-holder-invitations?limit=3`;
      while (path) {
        const page = await app.rest('GET', path, { headers: m.headers });
        expect(page.status).toBe(200);
        ids.push(...page.body.map((i: { id: string }) => i.id));
        const link = page.headers.get('link');
        path = link ? /^<([^>]+)>; rel="next"$/.exec(link)![1]! : null;
      }
      expect(ids).toEqual(all.body.map((i: { id: string }) => i.id));

      // GraphQL: the organization's invitations connection, the one the REST route reads.
      const g = await app.gql<{ organization: { accountHolderInvitations: { nodes: { id: string; status: string }[]; pageInfo: unknown } } }>(
        'query($o: ID!) { organization(id: $o) { accountHolderInvitations(first: 2, orderBy: OLDEST_FIRST) { nodes { id status } pageInfo { hasNextPage endCursor } } } }',
        { o: m.organizationId },
        m.headers,
      );
      expect(g.data!.organization.accountHolderInvitations).toEqual({
        nodes: [
          { id: claimed.invitationId, status: 'CLAIMED' },
          { id: expiring.invitationId, status: 'EXPIRED' },
        ],
        pageInfo: { hasNextPage: true, endCursor: expiring.invitationId },
      });

      expect((await list(m, '?limit=0')).status).toBe(400);
      expect((await list(m, '?after=nope')).status).toBe(400);
      const viewer = await memberWithRole(m.organizationId, 'VIEWER');
      expect((await list(viewer)).body.code).toBe('PERMISSION_DENIED');
      expect((await list(await memberWithRole(m.organizationId, 'OPERATIONS'))).status).toBe(200);
      const k = await createApiKey(app, m);
      expect((await list({ organizationId: m.organizationId, headers: k.headers })).body.code).toBe('PRINCIPAL_NOT_ALLOWED');
      const other = await signUpMember(app);
      expect((await list({ organizationId: m.organizationId, headers: other.headers })).status).toBe(404);
    },
  );

  test(
    'RevokeAccountHolderInvitation: 204, audited; the token then answers 400 like a used one; 409 when claimed or ' + 'revoked; 404 elsewhere; GraphQL',
    async () => {
      const m = await signUpMember(app);
      const h = await signUpHolder();
      const inv = await invite(m, h.email);
      const r = await revokeInvitation(m, inv.invitationId);
      expect(r.status, r.text).toBe(204);
      expect(r.text).toBe('');
      expect((await audits(inv.invitationId)).at(-1)).toMatchObject({
        action: 'account_holder_invitation.revoked',
        actorType: 'MEMBER',
        actorId: m.memberId,
        organizationId: m.organizationId,
        before: { status: 'PENDING' },
        after: { status: 'REVOKED' },
      });
      const refused = await claim(h, inv.token);
      expect(refused.status).toBe(400);
      expect(refused.body.code).toBe('INVALID_TOKEN');
      const signUpClaim = await app.rest('POST', '/v1/account-holders/invitations/signup-and-claim', {
        body: { token: inv.token, email: uniqueEmail('n'), password: PASSWORD, name: 'N' },
      });
      expect(signUpClaim.body.code).toBe('INVALID_TOKEN');
      expect(await app.deps.db.relationship.count({ where: { organizationId: m.organizationId } })).toBe(0);
      expect((await revokeInvitation(m, inv.invitationId)).body.code).toBe('INVALID_STATE');

      const used = await invite(m, h.email);
      expect((await claim(h, used.token)).status).toBe(200);
      expect((await revokeInvitation(m, used.invitationId)).status).toBe(409);

      const other = await signUpMember(app);
      const pending = await invite(m, uniqueEmail('p'));
      expect((await revokeInvitation({ organizationId: m.organizationId, headers: other.headers }, pending.invitationId)).status).toBe(404);
      expect((await revokeInvitation(other, pending.invitationId)).status).toBe(404);
      expect((await revokeInvitation(m, crypto.randomUUID())).status).toBe(404);
      expect((await revokeInvitation(m, 'nope')).status).toBe(404);
      expect((await revokeInvitation(await memberWithRole(m.organizationId, 'DEVELOPER'), pending.invitationId)).body.code).toBe('PERMISSION_DENIED');

      const g = await app.gql<{ revokeAccountHolderInvitation: { id: string; status: string; revokedAt: string } }>(
        'mutation($o: ID!, $id: ID!) { revokeAccountHolderInvitation(organizationId: $o, id: $id) { id status revokedAt } }',
        { o: m.organizationId, id: pending.invitationId },
        m.headers,
      );
      expect(g.errors).toBeUndefined();
      expect(g.data!.revokeAccountHolderInvitation).toMatchObject({ id: pending.invitationId, status: 'REVOKED', revokedAt: expect.any(String) });
    },
  );

  test('a claim and a revocation of the same invitation at once: exactly one wins, and the state agrees', async () => {
    for (let i = 0; i < 5; i++) {
      const m = await signUpMember(app);
      const h = await signUpHolder();
      const inv = await invite(m, h.email);
      const [c, r] = await Promise.all([claim(h, inv.token), revokeInvitation(m, inv.invitationId)]);
      expect([c.status, r.status].sort()).toEqual(c.status === 200 ? [200, 409] : [204, 400]);
      const row = await app.deps.db.accountHolderInvitation.findUniqueOrThrow({ where: { id: inv.invitationId } });
      expect(c.status === 200 ? row.claimedAt !== null && row.revokedAt === null : row.revokedAt !== null && row.claimedAt === null).toBe(true);
    }
  });
});

// Issue 27 points 2 and 3 for account holders.
describe('account-holder password reset: same second, older tokens (issue 27)', () => {
  const me = (accessToken: string) => app.rest('GET', '/v1/account-holders/me', { headers: bearer(accessToken) });
  const request = (email: string) => app.rest('POST', '/v1/account-holders/password-reset/request', { body: { email } });
  const confirm = (token: string, newPassword: string) => app.rest('POST', '/v1/account-holders/password-reset/confirm', { body: { token, newPassword } });
  const login = (email: string, password: string) => app.rest('POST', '/v1/account-holders/login', { body: { email, password } });

  test("a login, then a reset confirmed within the same second: the login's access token is refused (REST and GraphQL)", async () => {
    app.clock.set(new Date(Math.floor(app.clock.now().getTime() / 1000) * 1000 + 1000 + 100));
    const h = await signUpHolder();
    const session = await login(h.email, PASSWORD);
    expect((await me(session.body.accessToken)).status).toBe(200);
    await request(h.email);
    app.clock.advance(500);
    expect((await confirm(app.mailer.last(h.email)!.data!.token!, 'a same-second passphrase')).status).toBe(204);
    expect((await me(session.body.accessToken)).body.code).toBe('INVALID_CREDENTIAL');
    expect((await app.gql('{ accountHolderMe { id } }', {}, bearer(session.body.accessToken))).errors?.[0]?.extensions?.code).toBe('INVALID_CREDENTIAL');
    const after = await login(h.email, 'a same-second passphrase');
    expect((await me(after.body.accessToken)).status).toBe(200);
  });

  test("two reset tokens: confirm the second, then the first is 400 INVALID_TOKEN and the password stays the second's", async () => {
    const h = await signUpHolder();
    await request(h.email);
    const first = app.mailer.last(h.email)!.data!.token!;
    await request(h.email);
    const second = app.mailer.last(h.email)!.data!.token!;
    expect((await confirm(second, 'the second passphrase')).status).toBe(204);
    const stale = await confirm(first, 'the first passphrase');
    expect(stale.status).toBe(400);
    expect(stale.body.code).toBe('INVALID_TOKEN');
    expect((await login(h.email, 'the second passphrase')).status).toBe(200);
    expect((await login(h.email, 'the first passphrase')).status).toBe(401);
  });
});
