import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createTestApp, PASSWORD, signUpMember, uniqueEmail, type RestResult, type TestApp } from './harness';

/**
 * Credential guessing limits (docs/decisions.md, "Credential guessing limits"): counters in
 * PostgreSQL, per account and per source address, with backoff. Each test uses its own addresses.
 */
let app: TestApp;
beforeAll(async () => {
  app = await createTestApp();
});
afterAll(() => app.close());

let ips = 0;
const newIp = () => `192.0.2.${++ips}`;

const login = (email: string, password: string, clientIp: string, base = '/v1/auth') =>
  app.rest('POST', `${base}/login`, { body: { email, password }, clientIp });
const retryAfter = (r: RestResult) => Number(r.headers.get('retry-after'));

function expectLimited(r: RestResult) {
  expect(r.status, r.text).toBe(429);
  expect(r.body.code).toBe('RATE_LIMITED');
  expect(r.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
}

async function signUpHolder(email = uniqueEmail('holder')) {
  const r = await app.rest('POST', '/v1/account-holders/signup', { body: { email, password: PASSWORD, name: 'Holder' } });
  expect(r.status, r.text).toBe(200);
  return { email, accountHolderId: r.body.accountHolderId as string };
}

describe('login', () => {
  test('30 concurrent wrong passwords for one email: 5 are evaluated (401), the rest answer 429', async () => {
    const m = await signUpMember(app);
    const ip = newIp();
    const all = await Promise.all(Array.from({ length: 30 }, (_, i) => login(m.email, `wrong password ${i}`, ip)));
    const statuses = all.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 401)).toHaveLength(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(25);
    for (const r of all.filter((x) => x.status === 429)) expectLimited(r);
  });

  test('GraphQL: the same limit, with RATE_LIMITED; account holders too', async () => {
    const h = await signUpHolder();
    const ip = newIp();
    const q = 'mutation($i: LoginAccountHolderInput!) { loginAccountHolder(input: $i) { accountHolderId } }';
    const all = await Promise.all(Array.from({ length: 12 }, () => app.gql(q, { i: { email: h.email, password: 'wrong password!' } }, {}, ip)));
    const codes = all.map((r) => r.errors?.[0]?.extensions?.code);
    expect(codes.filter((c) => c === 'INVALID_LOGIN')).toHaveLength(5);
    expect(codes.filter((c) => c === 'RATE_LIMITED')).toHaveLength(7);
  });

  test('once an account is backed off, another source cannot guess either', async () => {
    const m = await signUpMember(app);
    const attacker = newIp();
    for (let i = 0; i < 5; i++) expect((await login(m.email, `wrong password ${i}`, attacker)).status).toBe(401);
    expectLimited(await login(m.email, 'wrong password 5', attacker));
    // A second, third... address: still backed off (the limit is per account as well as per source).
    for (let i = 0; i < 3; i++) expectLimited(await login(m.email, `guess from elsewhere ${i}`, newIp()));
  });

  test("a stranger's guesses stop the owner at most the cap (300 s) from a new address, and not at all from an address of a past login", async () => {
    const m = await signUpMember(app);
    const usual = newIp();
    expect((await login(m.email, PASSWORD, usual)).status).toBe(200);
    // The stranger guesses as fast as the backoff lets it, until the wait reaches its cap.
    const stranger = newIp();
    let last = 0;
    for (let i = 0; i < 40 && last < 300; i++) {
      const r = await login(m.email, `wrong password ${i}`, stranger);
      if (r.status === 429) {
        last = retryAfter(r);
        expect(last).toBeLessThanOrEqual(300);
        app.clock.advance(last * 1000);
      } else expect(r.status).toBe(401);
    }
    expect(last).toBe(300);
    const r = await login(m.email, 'one more guess', stranger);
    expect(r.status).toBe(401); // the stranger waited; its attempt starts a new 300 s wait
    // The owner, from a new address: waits at most the cap.
    const travelling = newIp();
    const owner = await login(m.email, PASSWORD, travelling);
    expectLimited(owner);
    expect(retryAfter(owner)).toBeLessThanOrEqual(300);
    // From the address of an earlier login: at once, and without clearing the stranger's backoff.
    expect((await login(m.email, PASSWORD, usual)).status).toBe(200);
    expectLimited(await login(m.email, 'guess', stranger));
    app.clock.advance(retryAfter(owner) * 1000);
    expect((await login(m.email, PASSWORD, travelling)).status).toBe(200);
  });

  test('one source guessing across many accounts is limited per source (20 failures)', async () => {
    const ip = newIp();
    for (let i = 0; i < 20; i++) expect((await login(uniqueEmail('victim'), 'wrong password', ip)).status).toBe(401);
    expectLimited(await login(uniqueEmail('victim'), 'wrong password', ip));
    // Another address is not affected.
    const m = await signUpMember(app);
    expect((await login(m.email, PASSWORD, newIp())).status).toBe(200);
  });

  test('a password reset clears the account backoff', async () => {
    const m = await signUpMember(app);
    const ip = newIp();
    for (let i = 0; i < 6; i++) await login(m.email, `wrong password ${i}`, ip);
    expectLimited(await login(m.email, PASSWORD, ip));
    expect((await app.rest('POST', '/v1/auth/password-reset/request', { body: { email: m.email }, clientIp: newIp() })).status).toBe(204);
    const token = app.mailer.last(m.email)!.data!.token!;
    expect((await app.rest('POST', '/v1/auth/password-reset/confirm', { body: { token, newPassword: 'a new passphrase!' }, clientIp: ip })).status).toBe(204);
    expect((await login(m.email, 'a new passphrase!', newIp())).status).toBe(200);
  });

  test('the counters are shared by every API process on the database', async () => {
    const second = await createTestApp({ databaseUrl: app.databaseUrl, now: app.clock.now() });
    try {
      const m = await signUpMember(app);
      const ip = newIp();
      for (let i = 0; i < 3; i++) expect((await login(m.email, `wrong password ${i}`, ip)).status).toBe(401);
      for (let i = 0; i < 2; i++)
        expect((await second.rest('POST', '/v1/auth/login', { body: { email: m.email, password: 'wrong password' }, clientIp: ip })).status).toBe(401);
      expectLimited(await login(m.email, PASSWORD, ip));
      expectLimited(await second.rest('POST', '/v1/auth/login', { body: { email: m.email, password: PASSWORD }, clientIp: newIp() }));
    } finally {
      await second.close();
    }
  });
});

describe('sign-up', () => {
  test('limited per source before the password is hashed (SIGNUP_BURST_PER_SOURCE), members and account holders together', async () => {
    const limited = await createTestApp({ databaseUrl: app.databaseUrl, now: app.clock.now(), env: { SIGNUP_BURST_PER_SOURCE: '3' } });
    try {
      const ip = newIp();
      const member = (email: string, clientIp = ip) =>
        limited.rest('POST', '/v1/auth/signup', { body: { email, password: PASSWORD, name: 'A', organizationName: 'Org ' + email }, clientIp });
      const holder = (email: string, clientIp = ip) =>
        limited.rest('POST', '/v1/account-holders/signup', { body: { email, password: PASSWORD, name: 'H' }, clientIp });
      expect((await member(uniqueEmail('s'))).status).toBe(201);
      expect((await holder(uniqueEmail('s'))).status).toBe(200);
      expect((await member(uniqueEmail('s'))).status).toBe(201);
      const refusedEmail = uniqueEmail('s');
      const refused = await holder(refusedEmail);
      expectLimited(refused);
      expect(retryAfter(refused)).toBe(60);
      expect(await limited.deps.db.accountHolder.count({ where: { email: refusedEmail } })).toBe(0);
      const gql = await limited.gql(
        'mutation($i: SignUpInput!) { signUp(input: $i) { memberId } }',
        { i: { email: uniqueEmail('s'), password: PASSWORD, name: 'G', organizationName: 'G' } },
        {},
        ip,
      );
      expect(gql.errors?.[0]?.extensions?.code).toBe('RATE_LIMITED');
      // Another address signs up; the first one may again after its wait.
      expect((await member(uniqueEmail('s'), newIp())).status).toBe(201);
      limited.clock.advance(60_000);
      expect((await member(uniqueEmail('s'))).status).toBe(201);
    } finally {
      await limited.close();
    }
  });
});

describe('password reset requests', () => {
  const request = (email: string, clientIp: string, base = '/v1/auth') => app.rest('POST', `${base}/password-reset/request`, { body: { email }, clientIp });

  test("a stranger's requests never leave the owner without a valid token: 3 mails per 30 minutes, every request answers 204", async () => {
    const m = await signUpMember(app);
    const mails = () => app.mailer.sent.filter((x) => x.to === m.email);
    for (let i = 0; i < 6; i++) expect((await request(m.email, newIp())).status).toBe(204);
    expect(mails()).toHaveLength(3);
    // The owner's own request is answered alike and sends nothing more; the mailed tokens all work until the window ends.
    expect((await request(m.email, newIp())).status).toBe(204);
    expect(mails()).toHaveLength(3);
    app.clock.advance(29 * 60_000);
    const token = mails()[0]!.data!.token!;
    expect((await app.rest('POST', '/v1/auth/password-reset/confirm', { body: { token, newPassword: 'owner passphrase!' }, clientIp: newIp() })).status).toBe(
      204,
    );
    // The next window mails again.
    app.clock.advance(60_000);
    expect((await request(m.email, newIp())).status).toBe(204);
    expect(mails()).toHaveLength(4);
  });

  test('unknown emails are counted alike (the answer and the work do not depend on the email)', async () => {
    const ghost = uniqueEmail('ghost');
    for (let i = 0; i < 5; i++) expect((await request(ghost, newIp())).status).toBe(204);
    expect(app.mailer.last(ghost)).toBeUndefined();
  });

  test('limited per source: the 11th request in a burst answers 429, for members and account holders', async () => {
    const ip = newIp();
    for (let i = 0; i < 5; i++) expect((await request(uniqueEmail('r'), ip)).status).toBe(204);
    for (let i = 0; i < 5; i++) expect((await request(uniqueEmail('r'), ip, '/v1/account-holders')).status).toBe(204);
    expectLimited(await request(uniqueEmail('r'), ip, '/v1/account-holders'));
    expectLimited(await request(uniqueEmail('r'), ip));
    expect((await request(uniqueEmail('r'), newIp())).status).toBe(204);
  });
});

describe('refresh', () => {
  test('bad refresh tokens back off their source, but a valid refresh token from it still works', async () => {
    const m = await signUpMember(app);
    const ip = newIp();
    const refresh = (refreshToken: string) => app.rest('POST', '/v1/auth/refresh', { body: { refreshToken }, clientIp: ip });
    for (let i = 0; i < 20; i++) expect((await refresh('mrt_' + String(i).padStart(43, 'x'))).status).toBe(401);
    expectLimited(await refresh('mrt_' + 'y'.repeat(43)));
    const ok = await refresh(m.tokens.refreshToken);
    expect(ok.status, ok.text).toBe(200);
    // Account holders' refresh and reset confirmation count as bad tokens of the same source.
    expectLimited(await app.rest('POST', '/v1/account-holders/refresh', { body: { refreshToken: 'hrt_nope' }, clientIp: ip }));
    expectLimited(
      await app.rest('POST', '/v1/auth/password-reset/confirm', { body: { token: 'prt_nope', newPassword: 'long enough passphrase' }, clientIp: ip }),
    );
  });
});
