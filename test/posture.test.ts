import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { createTestApp, createApiKey, signUpMember, uniqueEmail, bearer, PASSWORD, type TestApp } from './harness';
import { loadConfig } from '../src/config';
import { startSmtpSink } from './fixtures/smtp-sink';

// Production posture (issue 14, point 11): the mode, keys, JWT lifetimes, CORS, caching, schema privacy.

let app: TestApp; // NODE_ENV=test, as the suite runs (webhooks may go to 127.0.0.1)
let prod: TestApp; // NODE_ENV=production, keys given, no CORS_ORIGINS
beforeAll(async () => {
  app = await createTestApp({ env: { WEBHOOK_DESTINATION_ALLOWLIST: '127.0.0.1/32' } });
  prod = await createTestApp({ env: { NODE_ENV: 'production' } });
});
afterAll(async () => {
  await app?.close();
  await prod?.close();
});

async function holder(t: TestApp) {
  const r = await t.rest('POST', '/v1/account-holders/signup', { body: { email: uniqueEmail('holder'), password: PASSWORD, name: 'Holder' } });
  expect(r.status).toBe(200);
  return { accountHolderId: r.body.accountHolderId as string, tokens: r.body };
}

describe('access tokens: exp and iat required, lifetime at most ACCESS_TOKEN_TTL_SECONDS', () => {
  const ttl = 900;
  /** A token signed with the service's own key (what a leaked-signer or a sloppy minting tool would produce). */
  async function sign(aud: 'member' | 'account-holder', sub: string, org: string | undefined, claims: { iat?: number; exp?: number }) {
    const { tokenKeys, config } = app.deps;
    let jwt = new SignJWT({ org, sid: crypto.randomUUID() })
      .setProtectedHeader({ alg: 'EdDSA', kid: tokenKeys.kid, typ: 'at+jwt' })
      .setIssuer(config.JWT_ISSUER)
      .setAudience(aud)
      .setSubject(sub)
      .setJti(crypto.randomUUID());
    if (claims.iat !== undefined) jwt = jwt.setIssuedAt(claims.iat);
    if (claims.exp !== undefined) jwt = jwt.setExpirationTime(claims.exp);
    return jwt.sign(tokenKeys.privateKey);
  }

  test('the configured lifetime is the default one', () => {
    expect(app.deps.config.ACCESS_TOKEN_TTL_SECONDS).toBe(ttl);
  });

  for (const aud of ['member', 'account-holder'] as const) {
    test(`${aud}: a token without exp, without iat, longer than the TTL or issued in the future is refused with 401 INVALID_CREDENTIAL`, async () => {
      let sub: string;
      let org: string | undefined;
      let path: string;
      let query: string;
      if (aud === 'member') {
        const m = await signUpMember(app);
        [sub, org, path, query] = [m.memberId, m.organizationId, `/v1/organizations/${m.organizationId}/applications`, '{ viewer { id } }'];
      } else {
        const h = await holder(app);
        [sub, org, path, query] = [h.accountHolderId, undefined, '/v1/account-holders/me', '{ accountHolderMe { id } }'];
      }
      const now = Math.floor(app.clock.now().getTime() / 1000);
      // Control: a well-formed token of exactly the TTL works (the forging above is sound).
      const good = await sign(aud, sub, org, { iat: now, exp: now + ttl });
      expect((await app.rest('GET', path, { headers: bearer(good) })).status).toBe(200);
      expect((await app.gql(query, undefined, bearer(good))).errors).toBeUndefined();

      const refused = {
        'no exp': await sign(aud, sub, org, { iat: now }),
        'no iat': await sign(aud, sub, org, { exp: now + 60 }),
        'lifetime TTL + 1 s': await sign(aud, sub, org, { iat: now, exp: now + ttl + 1 }),
        'lifetime of a year': await sign(aud, sub, org, { iat: now - 10, exp: now + 365 * 86400 }),
        'issued an hour ahead (lifetime within the TTL)': await sign(aud, sub, org, { iat: now + 3600, exp: now + 3600 + ttl }),
      };
      for (const [name, token] of Object.entries(refused)) {
        const r = await app.rest('GET', path, { headers: bearer(token) });
        expect([r.status, r.body?.code], name).toEqual([401, 'INVALID_CREDENTIAL']);
        const g = await app.gql(query, undefined, bearer(token));
        expect(g.errors?.[0]?.extensions?.code, `${name} on GraphQL`).toBe('INVALID_CREDENTIAL');
      }
    });
  }

  test('a token issued within the clock skew (iat 30 s ahead) is accepted', async () => {
    const m = await signUpMember(app);
    const now = Math.floor(app.clock.now().getTime() / 1000);
    const token = await sign('member', m.memberId, m.organizationId, { iat: now + 30, exp: now + 30 + ttl });
    expect((await app.rest('GET', `/v1/organizations/${m.organizationId}/applications`, { headers: bearer(token) })).status).toBe(200);
  });

  test('lowering ACCESS_TOKEN_TTL_SECONDS refuses tokens minted for the longer lifetime', async () => {
    const short = await createTestApp({ env: { ACCESS_TOKEN_TTL_SECONDS: '300', JWT_PRIVATE_JWK: app.deps.config.JWT_PRIVATE_JWK! } });
    try {
      const m = await signUpMember(short);
      const path = `/v1/organizations/${m.organizationId}/applications`;
      expect((await short.rest('GET', path, { headers: m.headers })).status).toBe(200); // its own 300 s token
      const now = Math.floor(short.clock.now().getTime() / 1000);
      const long = await sign('member', m.memberId, m.organizationId, { iat: now, exp: now + 900 });
      expect((await short.rest('GET', path, { headers: bearer(long) })).status).toBe(401);
    } finally {
      await short.close();
    }
  });
});

describe('Cache-Control: no-store on every answer', () => {
  test('every REST route that answers a credential, GraphQL, errors and probes', async () => {
    const email = uniqueEmail('owner');
    const answers: [string, { status: number; headers: Headers }][] = [];
    const keep = <R extends { status: number; headers: Headers }>(name: string, r: R) => (answers.push([name, r]), r);
    const s = keep('signup', await app.rest('POST', '/v1/auth/signup', { body: { email, password: PASSWORD, name: 'O', organizationName: 'Org' } }));
    const l = keep('login', await app.rest('POST', '/v1/auth/login', { body: { email, password: PASSWORD } }));
    keep('refresh', await app.rest('POST', '/v1/auth/refresh', { body: { refreshToken: l.body.refreshToken } }));
    const m = { organizationId: s.body.organizationId as string, headers: bearer(l.body.accessToken) };
    const k = await createApiKey(app, m);
    keep('api key create', await app.rest('POST', `/v1/environments/${k.environmentId}/api-keys`, { headers: m.headers }));
    keep('api key rotate', await app.rest('POST', `/v1/api-keys/${k.apiKeyId}/rotate`, { headers: m.headers, body: {} }));
    const w = keep(
      'webhook endpoint create',
      await app.rest('POST', `/v1/organizations/${m.organizationId}/webhook-endpoints/`, { headers: m.headers, body: { url: 'http://127.0.0.1:9/hooks' } }),
    );
    keep('webhook secret rotate', await app.rest('POST', `/v1/webhook-endpoints/${w.body.id}/rotate-secret`, { headers: m.headers }));
    const hEmail = uniqueEmail('holder');
    keep('account holder signup', await app.rest('POST', '/v1/account-holders/signup', { body: { email: hEmail, password: PASSWORD, name: 'H' } }));
    const hl = keep('account holder login', await app.rest('POST', '/v1/account-holders/login', { body: { email: hEmail, password: PASSWORD } }));
    keep('account holder refresh', await app.rest('POST', '/v1/account-holders/refresh', { body: { refreshToken: hl.body.refreshToken } }));
    keep(
      'invitation',
      await app.rest('POST', `/v1/organizations/${m.organizationId}/account-holder-invitations`, { headers: m.headers, body: { email: uniqueEmail('inv') } }),
    );
    keep('401', await app.rest('GET', `/v1/organizations/${m.organizationId}/applications`));
    keep('404', await app.rest('GET', '/v1/nothing'));
    keep('healthz', await app.rest('GET', '/healthz'));
    keep('openapi', await app.rest('GET', '/v1/openapi.json'));
    keep('graphql', await app.rest('POST', '/graphql', { body: { query: '{ viewer { id } }' }, headers: m.headers }));
    keep('graphql GET', await app.rest('GET', '/graphql?query=%7Bhealth%7D', { headers: { accept: 'application/json' } }));
    for (const [name, r] of answers) {
      expect(r.status, name).toBe({ signup: 201, 'api key create': 201, 'webhook endpoint create': 201, invitation: 201, '401': 401, '404': 404 }[name] ?? 200);
      expect(r.headers.get('cache-control'), name).toBe('no-store');
    }
  });

  test('also over a real socket', async () => {
    const server = await app.listen();
    const r = await fetch(`${server.url}/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"email":"nobody@example.com","password":"wrong password"}',
    });
    expect(r.status).toBe(401);
    expect(r.headers.get('cache-control')).toBe('no-store');
  });
});

describe('CORS', () => {
  const preflight = (t: TestApp, path: string, origin: string) =>
    t.rest('OPTIONS', path, { headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' } });
  const simple = (t: TestApp, path: string, origin: string) =>
    path === '/graphql' ? t.rest('POST', path, { headers: { origin }, body: { query: '{ health }' } }) : t.rest('GET', path, { headers: { origin } });
  const paths = ['/v1/openapi.json', '/graphql'];

  test('development and test without CORS_ORIGINS: any origin, never with credentials', async () => {
    for (const path of paths) {
      const p = await preflight(app, path, 'https://evil.example');
      expect(p.status, path).toBe(204);
      expect(p.headers.get('access-control-allow-origin'), path).toBe('https://evil.example');
      expect(p.headers.get('access-control-allow-credentials'), path).toBeNull();
      expect(p.headers.get('access-control-allow-headers'), path).toMatch(/authorization/);
      const s = await simple(app, path, 'https://evil.example');
      expect(s.status, path).toBe(200);
      expect(s.headers.get('access-control-allow-origin'), path).toBe('https://evil.example');
      expect(s.headers.get('access-control-allow-credentials'), path).toBeNull();
      expect(s.headers.get('access-control-expose-headers'), path).toMatch(/x-request-id/i);
    }
  });

  test('production without CORS_ORIGINS: no CORS header for anyone', async () => {
    for (const path of paths) {
      const p = await preflight(prod, path, 'https://app.example');
      expect(p.headers.get('access-control-allow-origin'), path).toBeNull();
      expect(p.headers.get('access-control-allow-credentials'), path).toBeNull();
      const s = await simple(prod, path, 'https://app.example');
      expect(s.status, path).toBe(200);
      expect(s.headers.get('access-control-allow-origin'), path).toBeNull();
    }
  });

  test('CORS_ORIGINS: the listed origins only, exactly, without credentials', async () => {
    const listed = await createTestApp({ env: { NODE_ENV: 'production', CORS_ORIGINS: 'https://app.example, https://admin.example:8443' } });
    try {
      for (const path of paths) {
        for (const origin of ['https://app.example', 'https://admin.example:8443']) {
          const p = await preflight(listed, path, origin);
          expect(p.status, path).toBe(204);
          expect(p.headers.get('access-control-allow-origin'), `${path} ${origin}`).toBe(origin);
          expect(p.headers.get('access-control-allow-credentials'), path).toBeNull();
          const s = await simple(listed, path, origin);
          expect(s.headers.get('access-control-allow-origin'), `${path} ${origin}`).toBe(origin);
          expect(s.headers.get('access-control-allow-credentials'), path).toBeNull();
        }
        for (const origin of ['https://evil.example', 'http://app.example', 'https://app.example.evil.example', 'null']) {
          const p = await preflight(listed, path, origin);
          expect(p.headers.get('access-control-allow-origin'), `${path} ${origin}`).toBeNull();
          const s = await simple(listed, path, origin);
          expect(s.headers.get('access-control-allow-origin'), `${path} ${origin}`).toBeNull();
          expect(s.headers.get('access-control-allow-credentials'), path).toBeNull();
        }
      }
    } finally {
      await listed.close();
    }
  });

  test('CORS_ORIGINS must hold exact origins', () => {
    expect(() => loadConfig({ CORS_ORIGINS: 'https://app.example/path' })).toThrow(/CORS_ORIGINS/);
    expect(() => loadConfig({ CORS_ORIGINS: '*' })).toThrow(/CORS_ORIGINS/);
    expect(loadConfig({ CORS_ORIGINS: 'https://app.example/ ,http://localhost:5173' }).CORS_ORIGINS).toEqual(['https://app.example', 'http://localhost:5173']);
  });
});

describe('GraphQL schema privacy', () => {
  const INTROSPECT = '{ __schema { queryType { name } } }';
  const TYPO = '{ viewr { id } }';
  const COERCION = 'mutation ($org: ID!, $input: CreateApplicationInput!) { createApplication(organizationId: $org, input: $input) { id } }';

  test('development and test: introspection and suggestions on', async () => {
    expect((await app.gql(INTROSPECT)).data).toEqual({ __schema: { queryType: { name: 'Query' } } });
    expect((await app.gql(TYPO)).errors?.[0]?.message).toMatch(/Did you mean "viewer"\?/);
  });

  test('production: introspection refused, no "did you mean" (validation and variable coercion), __typename and REST unaffected', async () => {
    const i = await prod.gql(INTROSPECT);
    expect(i.data ?? null).toBeNull();
    expect(i.errors?.[0]?.message).toMatch(/introspection/i);
    expect((await prod.gql('{ __type(name: "Query") { name } }')).errors?.[0]?.message).toMatch(/introspection/i);
    const typo = await prod.gql(TYPO);
    expect(typo.errors?.[0]?.message).toMatch(/Cannot query field "viewr"/);
    expect(JSON.stringify(typo)).not.toMatch(/did you mean|viewer/i);
    const m = await signUpMember(prod);
    const coerced = await prod.gql(COERCION, { org: m.organizationId, input: { name: 'x', nme: 'x' } }, m.headers);
    expect(coerced.errors?.[0]?.message).toMatch(/nme: Unknown field/);
    expect(JSON.stringify(coerced)).not.toMatch(/did you mean/i);
    expect((await prod.gql('{ health __typename }')).data).toEqual({ health: expect.anything(), __typename: 'Query' });
    // REST runs its documents through the same envelop: unaffected.
    const created = await prod.rest('POST', `/v1/organizations/${m.organizationId}/applications`, { headers: m.headers, body: { name: 'App' } });
    expect(created.status).toBe(201);
    expect((await prod.rest('GET', '/v1/openapi.json')).body.openapi).toMatch(/^3\.1/);
  });

  test('production with GRAPHQL_INTROSPECTION=on: introspection and suggestions on', async () => {
    const open = await createTestApp({ env: { NODE_ENV: 'production', GRAPHQL_INTROSPECTION: 'on' } });
    try {
      expect((await open.gql(INTROSPECT)).data).toEqual({ __schema: { queryType: { name: 'Query' } } });
      expect((await open.gql(TYPO)).errors?.[0]?.message).toMatch(/Did you mean/);
    } finally {
      await open.close();
    }
  });

  test('production over graphql-ws: introspection refused there too', async () => {
    const { createClient } = await import('graphql-ws');
    const { default: WebSocket } = await import('ws');
    const m = await signUpMember(prod);
    const server = await prod.listen();
    const client = createClient({
      url: server.url.replace('http', 'ws') + '/graphql',
      webSocketImpl: WebSocket,
      connectionParams: m.headers,
      retryAttempts: 0,
      lazy: true,
    });
    try {
      const outcome = await new Promise<unknown>((resolve) => {
        let first: unknown;
        client.subscribe({ query: INTROSPECT }, { next: (v) => (first ??= v), error: resolve, complete: () => resolve(first) });
      });
      expect(JSON.stringify(outcome)).toMatch(/introspection/i);
      expect(JSON.stringify(outcome)).not.toMatch(/"queryType"/);
    } finally {
      await client.dispose();
    }
  });
});

describe('mode', () => {
  test('/healthz shows the mode', async () => {
    expect((await app.rest('GET', '/healthz')).body).toEqual({ status: 'ok', mode: 'test' });
    expect((await prod.rest('GET', '/healthz')).body).toEqual({ status: 'ok', mode: 'production' });
  });

  test('GraphiQL only in development, served from this process (no CDN)', async () => {
    const dev = await createTestApp({ env: { NODE_ENV: 'development' } });
    try {
      const page = await dev.rest('GET', '/graphql', { headers: { accept: 'text/html' } });
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/text\/html/);
      expect(page.text).toContain('id="graphiql-options"');
      // Scripts and styles are assets of this process (test/pages.test.ts loads each one).
      expect(page.text).not.toMatch(/<(?:script|link)[^>]+(?:src|href)="(?:https?:)?\/\//);
      expect(page.text).not.toMatch(/unpkg\.com|jsdelivr/);
    } finally {
      await dev.close();
    }
    for (const t of [app, prod]) {
      const page = await t.rest('GET', '/graphql', { headers: { accept: 'text/html' } });
      expect(page.text).not.toContain('graphiql-options');
    }
  });

  test('configuration errors name the variable, never its value', () => {
    const secret = Buffer.from('not thirty-two bytes of key').toString('base64');
    let message = '';
    try {
      loadConfig({ WEBHOOK_SECRET_KEY: secret, JWT_PRIVATE_JWK: '{"kty":"RSA","d":"sekret-d"}' });
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toMatch(/WEBHOOK_SECRET_KEY/);
    expect(message).toMatch(/JWT_PRIVATE_JWK/);
    expect(message).not.toContain(secret);
    expect(message).not.toContain('sekret-d');
  });
});

describe('npm start in production (a real process)', () => {
  /** Runs src/main.ts as `npm start` does (tsx), with exactly `env`; resolves on exit or on the "listening" line. */
  function start(env: Record<string, string>) {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', HOST: '127.0.0.1', PORT: '0', JOBS: 'off', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    let stdout = '';
    // The log: JSON lines on stdout (node's own warnings go to stderr).
    // Complete lines only: a chunk may end inside a line.
    const lines = () =>
      stdout
        .slice(0, stdout.lastIndexOf('\n') + 1)
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    const ready = new Promise<{ code: number | null; url?: string }>((resolve) => {
      child.stdout.on('data', (c: Buffer) => {
        output += c.toString('utf8');
        stdout += c.toString('utf8');
        const listening = lines().find((l) => l.msg === 'listening');
        if (listening) resolve({ code: null, url: listening.url as string });
      });
      child.stderr.on('data', (c: Buffer) => (output += c.toString('utf8')));
      child.on('close', (code) => resolve({ code })); // after its output is read to the end
    });
    const stop = async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((ok) => child.on('close', ok));
      child.kill('SIGTERM');
      await exited;
    };
    const kill = async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((ok) => child.on('close', ok));
      child.kill('SIGKILL');
      await exited;
    };
    return { ready, lines, output: () => output, stop, kill };
  }

  async function keys() {
    const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
    return { JWT_PRIVATE_JWK: JSON.stringify({ ...(await exportJWK(privateKey)), kid: 'k1' }), WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64') };
  }

  test('refuses to start without its settings, naming each missing one, before touching the database', async () => {
    // A database that does not exist: reaching it would fail with another message.
    const url = new URL(app.databaseUrl);
    url.pathname = '/never_created_' + process.pid;
    const p = start({ NODE_ENV: 'production', DATABASE_URL: url.toString(), DATA_DIR: `.data/posture-${process.pid}` });
    const { code } = await p.ready;
    expect(code).toBe(1);
    const [first, ...rest] = p.lines();
    expect(first).toMatchObject({ msg: 'mode: production', mode: 'production', graphiql: false, introspection: false, webhookHttp: false });
    const fatal = rest.find((l) => l.level === 60)!;
    expect(fatal.missing).toEqual(['JWT_PRIVATE_JWK', 'WEBHOOK_SECRET_KEY', 'SMTP_URL', 'MAIL_FROM']);
    for (const name of ['JWT_PRIVATE_JWK', 'WEBHOOK_SECRET_KEY', 'SMTP_URL', 'MAIL_FROM']) expect(fatal.msg).toContain(name);
    expect(p.output()).not.toMatch(/database ready|never_created|ECONNREFUSED/);

    // Only what is missing is named.
    const partial = start({ NODE_ENV: 'production', DATABASE_URL: url.toString(), ...(await keys()), MAIL_FROM: 'Ops <ops@example.com>' });
    expect((await partial.ready).code).toBe(1);
    expect(partial.lines().find((l) => l.level === 60)!.missing).toEqual(['SMTP_URL']);
  }, 60_000);

  test('with every setting it starts, says so first, hides the schema and sends mail over SMTP', async () => {
    const sink = await startSmtpSink();
    const p = start({
      NODE_ENV: 'production',
      DATABASE_URL: app.databaseUrl,
      ...(await keys()),
      SMTP_URL: sink.url,
      MAIL_FROM: 'Ops <ops@example.com>',
      LOG_LEVEL: 'info',
    });
    try {
      const { code, url } = await p.ready;
      expect(code, p.output()).toBeNull();
      expect(p.lines()[0]).toMatchObject({ msg: 'mode: production', generatedKeys: [], mailer: 'smtp', cors: 'none' });
      expect(p.output()).not.toMatch(/not for production/);
      expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ status: 'ok', mode: 'production' });
      const intro = await (
        await fetch(`${url}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ query: '{ __schema { queryType { name } } }' }),
        })
      ).json();
      expect(JSON.stringify(intro)).toMatch(/introspection/i);
      // A password reset mail leaves through the SMTP server.
      const email = uniqueEmail('smtp');
      const s = await fetch(`${url}/v1/auth/signup`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password: PASSWORD, name: 'O', organizationName: 'Org' }),
      });
      expect(s.status).toBe(201);
      const r = await fetch(`${url}/v1/auth/password-reset/request`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email }),
      });
      expect(r.status).toBe(204);
      for (let i = 0; i < 100 && !sink.mails.length; i++) await new Promise((ok) => setTimeout(ok, 50));
      expect(sink.mails).toHaveLength(1);
      expect(sink.mails[0]!.to).toEqual([`<${email}>`]);
      expect(sink.mails[0]!.from).toBe('<ops@example.com>');
      expect(sink.mails[0]!.data).toMatch(/Subject: Reset your password/);
      expect(sink.mails[0]!.data).toMatch(/prt_/);
      // The token went by mail only: never to the log.
      expect(p.output()).not.toMatch(/prt_/);
      // The mail server gone: the request still answers 204 (it does not wait for SMTP), the failure is logged without the token.
      await sink.close();
      const again = await fetch(`${url}/v1/auth/password-reset/request`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email }),
      });
      expect(again.status).toBe(204);
      for (let i = 0; i < 100 && !p.lines().some((l) => l.msg === 'mail not sent'); i++) await new Promise((ok) => setTimeout(ok, 50));
      expect(p.lines().find((l) => l.msg === 'mail not sent')).toMatchObject({
        level: 50,
        mail: { kind: 'password-reset' },
        err: { code: expect.any(String) },
      });
      expect(p.output()).not.toMatch(/prt_/);
    } finally {
      await p.stop();
      await sink.close();
    }
  }, 60_000);

  test('development (the default): the first line says so and warns', async () => {
    // Both lines come before the database is opened: the test reads them and kills the process
    // (its start-up and shutdown are the subject of test/process.test.ts and test/crash-*.test.ts).
    // With DATABASE_URL every mode takes the keys from the environment (test/shared-database.test.ts).
    const p = start({ DATABASE_URL: app.databaseUrl, DATA_DIR: `.data/posture-dev-${process.pid}`, ...(await keys()) });
    try {
      for (let waited = 0; p.lines().length < 2 && waited < 60_000; waited += 100) await new Promise((r) => setTimeout(r, 100));
      const [first, second] = p.lines();
      expect(first, p.output()).toMatchObject({
        msg: 'mode: development',
        mode: 'development',
        graphiql: true,
        introspection: true,
        webhookHttp: true,
        generatedKeys: [],
        mailer: 'file',
      });
      expect(second, p.output()).toMatchObject({ level: 40, msg: expect.stringMatching(/development mode: not for production; set NODE_ENV=production/) });
    } finally {
      await p.kill();
      rmSync(`.data/posture-dev-${process.pid}`, { recursive: true, force: true });
    }
  }, 90_000);
});
