import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { bearer, createTestApp, PASSWORD, signUpMember, uniqueEmail, type RestResult, type TestApp } from './harness';

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp();
});
afterAll(() => app.close());
// Each test logs in (and fails) from its own address, so one test's failures never limit another.
let clientIp = '';
let ips = 0;
beforeEach(() => {
  clientIp = `203.0.113.${++ips}`;
});

const signUpBody = (email = uniqueEmail('signup')) => ({ email, password: PASSWORD, name: 'Ada', organizationName: 'Ada Ltd' });
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The problem+json members every error answer carries (a failed TokenResult's media type is application/json, as the spec's TokenResult). */
function expectProblem(r: RestResult, status: number, code: string, mediaType = /^application\/problem\+json/) {
  expect(r.status, r.text).toBe(status);
  expect(r.headers.get('content-type')).toMatch(mediaType);
  expect(r.body).toMatchObject({ status, code, type: expect.stringMatching(/^\/problems\//), title: expect.any(String), detail: expect.any(String) });
  expect(r.body.requestId).toBe(r.headers.get('x-request-id'));
}

/** The fields named by a 400's field errors, without the GraphQL argument prefix (`input.`). */
function fieldsOf(r: RestResult): string[] {
  expect(Array.isArray(r.body.errors), `field errors expected in ${r.text}`).toBe(true);
  return (r.body.errors as { field: string; message: string }[]).map((e) => {
    expect(typeof e.message).toBe('string');
    return e.field.replace(/^input\./, '');
  });
}

const countOrganizations = (name: string) => app.deps.db.organization.count({ where: { name } });

describe('SignUp', () => {
  test('201 with organizationId, memberId and email; the organization and its OWNER exist', async () => {
    const body = signUpBody();
    const r = await app.rest('POST', '/v1/auth/signup', { body });
    expect(r.status, r.text).toBe(201);
    expect(Object.keys(r.body).sort()).toEqual(['email', 'memberId', 'organizationId']);
    expect(r.body.email).toBe(body.email.toLowerCase());
    expect(r.body.organizationId).toMatch(uuid);
    expect(r.body.memberId).toMatch(uuid);
    const member = await app.deps.db.member.findUniqueOrThrow({ where: { id: r.body.memberId } });
    expect(member).toMatchObject({ organizationId: r.body.organizationId, role: 'OWNER', email: body.email });
    expect(member.passwordHash).not.toContain(PASSWORD);
  });

  test('the email is normalized: trimmed and lower-cased', async () => {
    const email = uniqueEmail('MiXeD').replace('mixed', 'MiXeD');
    const r = await app.rest('POST', '/v1/auth/signup', { body: { ...signUpBody(), email: `  ${email.toUpperCase()} ` } });
    expect(r.status, r.text).toBe(201);
    expect(r.body.email).toBe(email.toLowerCase());
  });

  test('400 with a field error for a bad email', async () => {
    const r = await app.rest('POST', '/v1/auth/signup', { body: { ...signUpBody(), email: 'not-an-email' } });
    expectProblem(r, 400, 'VALIDATION_FAILED');
    expect(fieldsOf(r)).toContain('email');
  });

  test('400 with a field error for a short password', async () => {
    const r = await app.rest('POST', '/v1/auth/signup', { body: { ...signUpBody(), password: 'short' } });
    expectProblem(r, 400, 'VALIDATION_FAILED');
    expect(fieldsOf(r)).toContain('password');
  });

  test('400 with field errors for several bad fields at once', async () => {
    const r = await app.rest('POST', '/v1/auth/signup', { body: { email: 'x', password: 'short', name: ' ', organizationName: '' } });
    expectProblem(r, 400, 'VALIDATION_FAILED');
    expect(fieldsOf(r).sort()).toEqual(['email', 'name', 'organizationName', 'password']);
  });

  test('400 for missing fields', async () => {
    const r = await app.rest('POST', '/v1/auth/signup', { body: { email: uniqueEmail() } });
    expectProblem(r, 400, 'VALIDATION_FAILED');
    expect(r.body.detail).toMatch(/password|name|organizationName/);
  });

  test('400 for a missing body', async () => {
    const r = await app.rest('POST', '/v1/auth/signup', { raw: '', headers: { 'content-type': 'application/json' } });
    expectProblem(r, 400, 'VALIDATION_FAILED');
  });

  test('400 MALFORMED_REQUEST for malformed JSON', async () => {
    const r = await app.rest('POST', '/v1/auth/signup', { raw: '{"email": ', headers: { 'content-type': 'application/json' } });
    expectProblem(r, 400, 'MALFORMED_REQUEST');
  });

  test('415 for a body that is not application/json', async () => {
    const r = await app.rest('POST', '/v1/auth/signup', { raw: JSON.stringify(signUpBody()), headers: { 'content-type': 'text/plain' } });
    expectProblem(r, 415, 'UNSUPPORTED_MEDIA_TYPE');
  });

  test('409 EMAIL_TAKEN for a registered email (in any case)', async () => {
    const body = signUpBody();
    expect((await app.rest('POST', '/v1/auth/signup', { body })).status).toBe(201);
    const again = await app.rest('POST', '/v1/auth/signup', { body: { ...body, email: body.email.toUpperCase(), organizationName: 'Other' } });
    expectProblem(again, 409, 'EMAIL_TAKEN');
    expect(await app.deps.db.member.count({ where: { email: body.email } })).toBe(1);
  });

  describe('Idempotency-Key', () => {
    test('same key and body: the identical 201 answer, and one organization', async () => {
      const body = { ...signUpBody(), organizationName: 'Idem ' + uniqueEmail() };
      const headers = { 'idempotency-key': 'idem-' + crypto.randomUUID() };
      const first = await app.rest('POST', '/v1/auth/signup', { body, headers });
      const second = await app.rest('POST', '/v1/auth/signup', { body, headers });
      expect(first.status, first.text).toBe(201);
      expect(second.status, second.text).toBe(201);
      expect(second.body).toEqual(first.body);
      expect(await countOrganizations(body.organizationName)).toBe(1);
      expect(await app.deps.db.member.count({ where: { email: body.email } })).toBe(1);
    });

    test('without a key, a repeated sign-up is a conflict, not a replay', async () => {
      const body = signUpBody();
      expect((await app.rest('POST', '/v1/auth/signup', { body })).status).toBe(201);
      expectProblem(await app.rest('POST', '/v1/auth/signup', { body }), 409, 'EMAIL_TAKEN');
    });

    test('same key, different body: 409 IDEMPOTENCY_KEY_REUSED and nothing created', async () => {
      const headers = { 'idempotency-key': 'idem-' + crypto.randomUUID() };
      const first = await app.rest('POST', '/v1/auth/signup', { body: signUpBody(), headers });
      expect(first.status, first.text).toBe(201);
      const other = { ...signUpBody(), organizationName: 'Reuse ' + uniqueEmail() };
      const second = await app.rest('POST', '/v1/auth/signup', { body: other, headers });
      expectProblem(second, 409, 'IDEMPOTENCY_KEY_REUSED');
      expect(await countOrganizations(other.organizationName)).toBe(0);
      expect(await app.deps.db.member.count({ where: { email: other.email } })).toBe(0);
    });

    test('an invalid key is refused with 400', async () => {
      const r = await app.rest('POST', '/v1/auth/signup', { body: signUpBody(), headers: { 'idempotency-key': 'x'.repeat(256) } });
      expectProblem(r, 400, 'VALIDATION_FAILED');
    });

    test('20 concurrent identical requests with one key: all 201 with the same body, one organization and member', async () => {
      const body = { ...signUpBody(), organizationName: 'Race ' + uniqueEmail() };
      const headers = { 'idempotency-key': 'race-' + crypto.randomUUID() };
      const all = await Promise.all(Array.from({ length: 20 }, () => app.rest('POST', '/v1/auth/signup', { body, headers })));
      for (const r of all) expect(r.status, r.text).toBe(201);
      for (const r of all) expect(r.body).toEqual(all[0]!.body);
      expect(await countOrganizations(body.organizationName)).toBe(1);
      expect(await app.deps.db.member.count({ where: { email: body.email } })).toBe(1);
      expect(await app.deps.db.auditLogEntry.count({ where: { entityId: all[0]!.body.organizationId, action: 'organization.created' } })).toBe(1);
    });
  });
});

const tokenResultKeys = [
  'accessToken',
  'accessTokenExpiresAt',
  'memberId',
  'organizationId',
  'refreshToken',
  'refreshTokenExpiresAt',
  'succeeded',
  'tokenType',
];

function expectTokenResultFailure(r: RestResult, code: string) {
  expectProblem(r, 401, code, /^application\/json/);
  expect(r.body).toMatchObject({
    succeeded: false,
    tokenType: 'Bearer',
    accessToken: null,
    accessTokenExpiresAt: null,
    refreshToken: null,
    refreshTokenExpiresAt: null,
  });
}

const login = (email: string, password: string) => app.rest('POST', '/v1/auth/login', { body: { email, password }, clientIp });
const refresh = (refreshToken: string) => app.rest('POST', '/v1/auth/refresh', { body: { refreshToken }, clientIp });
const viewer = (accessToken: string) => app.rest('GET', `/v1/organizations/${crypto.randomUUID()}/applications`, { headers: bearer(accessToken) });
/** A member-only read of the caller's own organization: 200 proves the access token is accepted. */
const ownApps = (m: { organizationId: string }, accessToken: string) =>
  app.rest('GET', `/v1/organizations/${m.organizationId}/applications`, { headers: bearer(accessToken) });

describe('Login', () => {
  test('200 TokenResult', async () => {
    const m = await signUpMember(app);
    const r = await login(m.email, PASSWORD);
    expect(r.status, r.text).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(tokenResultKeys);
    expect(r.body).toMatchObject({ succeeded: true, tokenType: 'Bearer', memberId: m.memberId, organizationId: m.organizationId });
    expect(typeof r.body.accessToken).toBe('string');
    expect(r.body.refreshToken).toMatch(/^\w+_\w+$/);
    const now = app.clock.now().getTime();
    expect(Date.parse(r.body.accessTokenExpiresAt)).toBeGreaterThan(now);
    expect(Date.parse(r.body.refreshTokenExpiresAt)).toBeGreaterThan(Date.parse(r.body.accessTokenExpiresAt));
    expect((await ownApps(m, r.body.accessToken)).status).toBe(200);
  });

  test('the email is matched case-insensitively', async () => {
    const m = await signUpMember(app);
    expect((await login(m.email.toUpperCase(), PASSWORD)).status).toBe(200);
  });

  test('401 with the TokenResult shape and problem fields for a wrong password', async () => {
    const m = await signUpMember(app);
    const r = await login(m.email, 'wrong password 123');
    expectTokenResultFailure(r, 'INVALID_LOGIN');
  });

  test('the 401 body carries every member of TokenResult (the spec: "body is TokenResult")', async () => {
    const m = await signUpMember(app);
    const r = await login(m.email, 'wrong password 123');
    expect(r.status).toBe(401);
    for (const key of tokenResultKeys) expect(r.body, `401 body lacks ${key}: ${r.text}`).toHaveProperty(key);
    expect(r.body).toMatchObject({ memberId: null, organizationId: null });
    const rr = await refresh('mrt_' + 'x'.repeat(43));
    expect(rr.status).toBe(401);
    for (const key of tokenResultKeys) expect(rr.body, `401 body lacks ${key}: ${rr.text}`).toHaveProperty(key);
  });

  test('unknown email and wrong password answer identically', async () => {
    const m = await signUpMember(app);
    const wrong = await login(m.email, 'wrong password 123');
    const unknown = await login(uniqueEmail('nobody'), 'wrong password 123');
    const strip = (r: RestResult) => {
      const { requestId: _r, ...rest } = r.body;
      return rest;
    };
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(wrong.status);
    expect(strip(unknown)).toEqual(strip(wrong));
    expect(unknown.headers.get('content-type')).toBe(wrong.headers.get('content-type'));
  });

  test('400 for a malformed login body', async () => {
    const r = await app.rest('POST', '/v1/auth/login', { body: { email: 'x' } });
    expectProblem(r, 400, 'VALIDATION_FAILED');
  });

  test('after 5 failures each attempt waits (429 with Retry-After), even with the right password; the wait doubles', async () => {
    const m = await signUpMember(app);
    for (let i = 0; i < 5; i++) expect((await login(m.email, `wrong password ${i}`)).status).toBe(401);
    const limited = await login(m.email, PASSWORD);
    expectProblem(limited, 429, 'RATE_LIMITED');
    expect(limited.headers.get('retry-after')).toBe('1');
    app.clock.advance(1000);
    expect((await login(m.email, 'wrong password 5')).status).toBe(401);
    expect((await login(m.email, PASSWORD)).headers.get('retry-after')).toBe('2');
    // Another email is not affected.
    const other = await signUpMember(app);
    expect((await login(other.email, PASSWORD)).status).toBe(200);
    // Once the wait has passed the member may log in again.
    app.clock.advance(2000);
    expect((await login(m.email, PASSWORD)).status).toBe(200);
  });

  test('a successful login clears the failure count', async () => {
    const m = await signUpMember(app);
    for (let i = 0; i < 4; i++) expect((await login(m.email, `wrong password ${i}`)).status).toBe(401);
    expect((await login(m.email, PASSWORD)).status).toBe(200);
    for (let i = 0; i < 4; i++) expect((await login(m.email, `wrong password ${i}`)).status).toBe(401);
    expect((await login(m.email, PASSWORD)).status).toBe(200);
  });
});

describe('RefreshToken', () => {
  test('rotation returns new tokens that work', async () => {
    const m = await signUpMember(app);
    app.clock.advance(1500); // a new iat, so the new access token differs in more than its jti
    const r = await refresh(m.tokens.refreshToken);
    expect(r.status, r.text).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(tokenResultKeys);
    expect(r.body).toMatchObject({ succeeded: true, tokenType: 'Bearer', memberId: m.memberId, organizationId: m.organizationId });
    expect(r.body.refreshToken).not.toBe(m.tokens.refreshToken);
    expect(r.body.accessToken).not.toBe(m.tokens.accessToken);
    expect((await ownApps(m, r.body.accessToken)).status).toBe(200);
    // The rotated token can itself be rotated.
    const again = await refresh(r.body.refreshToken);
    expect(again.status, again.text).toBe(200);
  });

  test('a used refresh token presented again: 401, and the whole family is revoked', async () => {
    const m = await signUpMember(app);
    const rotated = await refresh(m.tokens.refreshToken);
    expect(rotated.status).toBe(200);
    const reuse = await refresh(m.tokens.refreshToken);
    expectTokenResultFailure(reuse, 'INVALID_REFRESH_TOKEN');
    // The token issued by the rotation is revoked too.
    const stolen = await refresh(rotated.body.refreshToken);
    expectTokenResultFailure(stolen, 'INVALID_REFRESH_TOKEN');
    const rows = await app.deps.db.refreshToken.findMany({ where: { subjectId: m.memberId } });
    expect(rows.length).toBe(2);
    for (const row of rows) expect(row.revokedAt).not.toBeNull();
    // Another login (another family) is not affected.
    const fresh = await login(m.email, PASSWORD);
    expect((await refresh(fresh.body.refreshToken)).status).toBe(200);
  });

  test('an unknown refresh token: 401 with the TokenResult shape', async () => {
    expectTokenResultFailure(await refresh('mrt_' + 'x'.repeat(43)), 'INVALID_REFRESH_TOKEN');
  });

  test('an expired refresh token: 401', async () => {
    const m = await signUpMember(app);
    app.clock.advance(app.deps.config.REFRESH_TOKEN_TTL_SECONDS * 1000 + 1000);
    expectTokenResultFailure(await refresh(m.tokens.refreshToken), 'INVALID_REFRESH_TOKEN');
  });
});

describe('Password reset', () => {
  const requestReset = (email: string) => app.rest('POST', '/v1/auth/password-reset/request', { body: { email }, clientIp });
  const confirm = (token: string, newPassword: string) => app.rest('POST', '/v1/auth/password-reset/confirm', { body: { token, newPassword }, clientIp });

  test('the request answers 204 for known and unknown emails alike; mail goes only to the known one', async () => {
    const m = await signUpMember(app);
    const unknownEmail = uniqueEmail('ghost');
    const before = app.mailer.sent.length;
    const known = await requestReset(m.email);
    const unknown = await requestReset(unknownEmail);
    expect(known.status, known.text).toBe(204);
    expect(unknown.status, unknown.text).toBe(204);
    expect(known.text).toBe('');
    expect(unknown.text).toBe('');
    const sent = app.mailer.sent.slice(before);
    expect(sent.map((s) => s.to)).toEqual([m.email]);
    expect(sent[0]!.data).toMatchObject({ kind: 'password-reset', token: expect.any(String) });
    expect(app.mailer.last(unknownEmail)).toBeUndefined();
  });

  test('confirm with the mailed token: 204; the new password works, the old fails, old access and refresh tokens are refused', async () => {
    const m = await signUpMember(app);
    const second = await login(m.email, PASSWORD); // a second session
    expect((await requestReset(m.email)).status).toBe(204);
    const token = app.mailer.last(m.email)!.data!.token!;
    app.clock.advance(1500); // so a token issued after the reset has a later iat than the old ones
    const newPassword = 'a brand new passphrase';
    const r = await confirm(token, newPassword);
    expect(r.status, r.text).toBe(204);

    expectTokenResultFailure(await login(m.email, PASSWORD), 'INVALID_LOGIN');
    const fresh = await login(m.email, newPassword);
    expect(fresh.status, fresh.text).toBe(200);

    const old = await ownApps(m, m.tokens.accessToken);
    expectProblem(old, 401, 'INVALID_CREDENTIAL');
    expect((await ownApps(m, fresh.body.accessToken)).status).toBe(200);

    expectTokenResultFailure(await refresh(m.tokens.refreshToken), 'INVALID_REFRESH_TOKEN');
    expectTokenResultFailure(await refresh(second.body.refreshToken), 'INVALID_REFRESH_TOKEN');
    const rows = await app.deps.db.refreshToken.findMany({ where: { subjectId: m.memberId, revokedAt: null } });
    expect(rows.map((x) => x.tokenHash).length).toBe(1); // only the session of the new login
  });

  test('a spent token is refused: 400 INVALID_TOKEN', async () => {
    const m = await signUpMember(app);
    await requestReset(m.email);
    const token = app.mailer.last(m.email)!.data!.token!;
    expect((await confirm(token, 'first new passphrase')).status).toBe(204);
    const again = await confirm(token, 'second new passphrase');
    expectProblem(again, 400, 'INVALID_TOKEN');
    expect((await login(m.email, 'first new passphrase')).status).toBe(200);
  });

  test('an unknown token is refused: 400 INVALID_TOKEN', async () => {
    expectProblem(await confirm('prt_' + 'y'.repeat(43), 'some new passphrase'), 400, 'INVALID_TOKEN');
  });

  test('a short new password: 400 with a field error, and the token stays usable', async () => {
    const m = await signUpMember(app);
    await requestReset(m.email);
    const token = app.mailer.last(m.email)!.data!.token!;
    const r = await confirm(token, 'short');
    expectProblem(r, 400, 'VALIDATION_FAILED');
    expect(fieldsOf(r)).toContain('newPassword');
    expect((await confirm(token, 'long enough passphrase')).status).toBe(204);
  });

  test('the token expires after 30 minutes: 400', async () => {
    const m = await signUpMember(app);
    await requestReset(m.email);
    const token = app.mailer.last(m.email)!.data!.token!;
    app.clock.advance(30 * 60_000 + 1000);
    expectProblem(await confirm(token, 'too late passphrase'), 400, 'INVALID_TOKEN');
    expect((await login(m.email, PASSWORD)).status).toBe(200);
  });

  test('a token is still valid just before 30 minutes', async () => {
    const m = await signUpMember(app);
    await requestReset(m.email);
    const token = app.mailer.last(m.email)!.data!.token!;
    app.clock.advance(29 * 60_000);
    expect((await confirm(token, 'just in time passphrase')).status).toBe(204);
  });
});

describe('Logout (extension)', () => {
  const logout = (headers: Record<string, string>) => app.rest('POST', '/v1/auth/logout', { headers });

  test("204; the session's access and refresh tokens stop working at once; other sessions go on; audited", async () => {
    const m = await signUpMember(app);
    const other = await login(m.email, PASSWORD);
    const rotated = await refresh(m.tokens.refreshToken); // the session's newest tokens
    expect(rotated.status).toBe(200);
    const r = await logout(bearer(rotated.body.accessToken));
    expect(r.status, r.text).toBe(204);
    expect(r.text).toBe('');
    // Every access token of the session, older ones included, is refused at once (no clock advance).
    expectProblem(await ownApps(m, rotated.body.accessToken), 401, 'INVALID_CREDENTIAL');
    expectProblem(await ownApps(m, m.tokens.accessToken), 401, 'INVALID_CREDENTIAL');
    expectTokenResultFailure(await refresh(rotated.body.refreshToken), 'INVALID_REFRESH_TOKEN');
    // The other session is untouched.
    expect((await ownApps(m, other.body.accessToken)).status).toBe(200);
    expect((await refresh(other.body.refreshToken)).status).toBe(200);
    const entries = await app.deps.db.auditLogEntry.findMany({ where: { entityId: m.memberId, action: 'member.logged_out' } });
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ actorType: 'MEMBER', actorId: m.memberId, organizationId: m.organizationId });
  });

  test('401 without a credential or with a logged-out token; 403 for an account holder', async () => {
    expectProblem(await logout({}), 401, 'UNAUTHENTICATED');
    const m = await signUpMember(app);
    expect((await logout(m.headers)).status).toBe(204);
    expectProblem(await logout(m.headers), 401, 'INVALID_CREDENTIAL');
    const h = await app.rest('POST', '/v1/account-holders/signup', { body: { email: uniqueEmail('h'), password: PASSWORD, name: 'H' } });
    expectProblem(await logout(bearer(h.body.accessToken)), 403, 'PRINCIPAL_NOT_ALLOWED');
  });

  test('GraphQL logout', async () => {
    const m = await signUpMember(app);
    const r = await app.gql<{ logout: boolean }>('mutation { logout }', {}, m.headers);
    expect(r.errors).toBeUndefined();
    expect(r.data!.logout).toBe(true);
    expect((await app.gql('{ viewer { id } }', {}, m.headers)).errors?.[0]?.extensions?.code).toBe('INVALID_CREDENTIAL');
  });
});

describe('Password reset voids the other tokens', () => {
  test('a completed reset spends every other outstanding reset and set-password token of the member', async () => {
    const m = await signUpMember(app);
    const request = () => app.rest('POST', '/v1/auth/password-reset/request', { body: { email: m.email }, clientIp });
    const confirm = (token: string, newPassword: string) => app.rest('POST', '/v1/auth/password-reset/confirm', { body: { token, newPassword }, clientIp });
    await request();
    const first = app.mailer.last(m.email)!.data!.token!;
    await request();
    const second = app.mailer.last(m.email)!.data!.token!;
    expect(second).not.toBe(first);
    expect((await confirm(second, 'the second passphrase')).status).toBe(204);
    expectProblem(await confirm(first, 'the first passphrase!'), 400, 'INVALID_TOKEN');
    expect((await login(m.email, 'the second passphrase')).status).toBe(200);
  });
});

// Keeps `viewer` referenced for readers: a random organization is 404, never another tenant's data.
test('an access token reaches only its own organization (404 elsewhere)', async () => {
  const m = await signUpMember(app);
  const r = await viewer(m.tokens.accessToken);
  expectProblem(r, 404, 'NOT_FOUND');
});

// Issue 27 points 2 and 3: a reset within the same second as a login, and older reset tokens.
describe('Password reset: same second, older tokens (issue 27)', () => {
  const request = (email: string) => app.rest('POST', '/v1/auth/password-reset/request', { body: { email }, clientIp });
  const confirm = (token: string, newPassword: string) => app.rest('POST', '/v1/auth/password-reset/confirm', { body: { token, newPassword }, clientIp });

  test(
    "a login, then a reset confirmed within the same second: the login's access token is refused (REST and " +
      'GraphQL); a login after the reset, same second, works',
    async () => {
      app.clock.set(new Date(Math.floor(app.clock.now().getTime() / 1000) * 1000 + 1000 + 100)); // 100 ms into a second
      const m = await signUpMember(app);
      const session = await login(m.email, PASSWORD);
      expect(session.status).toBe(200);
      expect((await ownApps(m, session.body.accessToken)).status).toBe(200);
      await request(m.email);
      app.clock.advance(500); // still the same second as the login
      expect((await confirm(app.mailer.last(m.email)!.data!.token!, 'a same-second passphrase')).status).toBe(204);
      expectProblem(await ownApps(m, session.body.accessToken), 401, 'INVALID_CREDENTIAL');
      const g = await app.gql('{ viewer { id } }', {}, bearer(session.body.accessToken));
      expect(g.errors?.[0]?.extensions?.code).toBe('INVALID_CREDENTIAL');
      app.clock.advance(300); // a login after the reset, in that same second
      const after = await login(m.email, 'a same-second passphrase');
      expect(after.status).toBe(200);
      expect((await ownApps(m, after.body.accessToken)).status).toBe(200);
    },
  );

  test("two reset tokens: confirm the second, then the first is 400 INVALID_TOKEN and the password stays the second's (GraphQL)", async () => {
    const m = await signUpMember(app);
    await request(m.email);
    const first = app.mailer.last(m.email)!.data!.token!;
    await request(m.email);
    const second = app.mailer.last(m.email)!.data!.token!;
    const mutation = 'mutation($i: ResetPasswordInput!) { confirmPasswordReset(input: $i) }';
    const ok = await app.gql<{ confirmPasswordReset: boolean }>(mutation, { i: { token: second, newPassword: 'the second passphrase' } }, {}, clientIp);
    expect(ok.data?.confirmPasswordReset).toBe(true);
    const stale = await app.gql(mutation, { i: { token: first, newPassword: 'the first passphrase' } }, {}, clientIp);
    expect(stale.errors?.[0]?.extensions?.code).toBe('INVALID_TOKEN');
    expect((await login(m.email, 'the second passphrase')).status).toBe(200);
    expect((await login(m.email, 'the first passphrase')).status).toBe(401);
  });
});
