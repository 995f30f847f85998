import { afterAll, beforeAll, expect, test } from 'vitest';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { bearer, createApiKey, createOperator, createTestApp, PASSWORD, signUpMember, uniqueEmail, type TestApp } from './harness';
import type { RunningServer } from '../src/server';

/**
 * graphql-ws sockets and their credential (docs/graphql.md): refused without a valid one, closed
 * (4401) when it stops authenticating, closed (1001) when the server shuts down. Over a real socket.
 */
let app: TestApp;
let server: RunningServer;
let wsUrl: string;

beforeAll(async () => {
  // a re-check every 100 ms, access tokens of 60 s (the manual clock expires them)
  app = await createTestApp({ env: { WS_REAUTH_INTERVAL_MS: '100', ACCESS_TOKEN_TTL_SECONDS: '60' } });
  server = await app.listen();
  wsUrl = server.url.replace('http', 'ws') + '/graphql';
});
afterAll(() => app.close());

interface Live {
  /** Resolves with the first heartbeat. */
  started: Promise<void>;
  /** Resolves with the socket's close code and reason. */
  closed: Promise<{ code: number; reason: string }>;
  acknowledged: () => boolean;
  beats: () => number;
  dispose: () => void;
}

/** A socket with a long heartbeat subscription (1,000 beats, 100 ms apart). */
function heartbeat(connectionParams: Record<string, string>, url = wsUrl): Live {
  let acknowledged = false;
  let beats = 0;
  let onClosed!: (v: { code: number; reason: string }) => void;
  const closed = new Promise<{ code: number; reason: string }>((r) => (onClosed = r));
  const client = createClient({
    url,
    webSocketImpl: WebSocket,
    connectionParams,
    retryAttempts: 0,
    on: {
      connected: () => (acknowledged = true),
      closed: (e) => onClosed({ code: (e as CloseEvent).code, reason: (e as CloseEvent).reason }),
    },
  });
  const started = new Promise<void>((resolve, reject) => {
    client.subscribe(
      { query: 'subscription { heartbeat(intervalMs: 100, count: 1000) { sequence } }' },
      {
        next: (v) => {
          if (v.errors) reject(new Error(JSON.stringify(v.errors)));
          beats++;
          resolve();
        },
        error: (e) => reject(e),
        complete: () => {},
      },
    );
  });
  started.catch(() => {});
  return { started, closed, acknowledged: () => acknowledged, beats: () => beats, dispose: () => void client.dispose() };
}

/** A member of owner's organization with `role`: added over GraphQL, password set from the mailed token, logged in. */
async function joinedMember(on: TestApp, owner: Awaited<ReturnType<typeof signUpMember>>, role: string) {
  const email = uniqueEmail(role.toLowerCase());
  const added = await on.gql<{ addMember: { id: string } }>(
    'mutation($org: ID!, $input: AddMemberInput!) { addMember(organizationId: $org, input: $input) { id } }',
    { org: owner.organizationId, input: { email, name: role, role } },
    owner.headers,
  );
  const token = on.mailer.last(email)!.data!.token!;
  expect((await on.rest('POST', '/v1/auth/password-reset/confirm', { body: { token, newPassword: PASSWORD } })).status).toBe(204);
  const l = await on.rest('POST', '/v1/auth/login', { body: { email, password: PASSWORD } });
  expect(l.status).toBe(200);
  return { memberId: added.data!.addMember.id, headers: bearer(l.body.accessToken) };
}

const within = <T>(p: Promise<T>, ms = 3000) =>
  Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`not within ${ms} ms`)), ms))]);

test('a socket without a credential, or with an invalid one, is closed with 4401 before any acknowledgement', async () => {
  for (const params of <Record<string, string>[]>[
    {},
    { 'x-api-key': 'sk_test_' + 'x'.repeat(40) },
    { authorization: 'Bearer not-a-token' },
    { 'x-operator-key': 'op_nope' },
  ]) {
    const s = heartbeat(params);
    const { code, reason } = await within(s.closed);
    expect(code).toBe(4401);
    expect(reason.length).toBeGreaterThan(0);
    expect(s.acknowledged()).toBe(false);
    expect(s.beats()).toBe(0);
    s.dispose();
  }
});

test("a member's subscription is closed with 4401 when the access token expires", async () => {
  const m = await signUpMember(app);
  const s = heartbeat(m.headers);
  await within(s.started);
  expect(s.acknowledged()).toBe(true);
  app.clock.advance(61_000);
  const { code, reason } = await within(s.closed);
  expect(code).toBe(4401);
  expect(reason).toMatch(/invalid or expired/);
  s.dispose();
});

test("a member's subscription is closed when the member resets the password (tokens issued before are refused)", async () => {
  const m = await signUpMember(app);
  const s = heartbeat(m.headers);
  await within(s.started);
  app.clock.advance(2_000); // the reset is a later second than the token's iat
  expect((await app.rest('POST', '/v1/auth/password-reset/request', { body: { email: m.email } })).status).toBe(204);
  const token = (app.mailer.last(m.email)!.data as { token: string }).token;
  expect((await app.rest('POST', '/v1/auth/password-reset/confirm', { body: { token, newPassword: PASSWORD + '!' } })).status).toBe(204);
  const { code, reason } = await within(s.closed);
  expect(code).toBe(4401);
  expect(reason).toMatch(/no longer valid/);
  s.dispose();
});

test('an API key revoked through DELETE /v1/api-keys/{id} closes its sockets; another key keeps streaming', async () => {
  const m = await signUpMember(app);
  const revoked = await createApiKey(app, m);
  const kept = await createApiKey(app, m);
  const a = heartbeat(revoked.headers);
  const b = heartbeat(kept.headers);
  await within(Promise.all([a.started, b.started]));
  expect((await app.rest('DELETE', `/v1/api-keys/${revoked.apiKeyId}`, { headers: m.headers })).status).toBe(204);
  const { code, reason } = await within(a.closed);
  expect(code).toBe(4401);
  expect(reason).toMatch(/revoked/);
  const before = b.beats();
  await new Promise((r) => setTimeout(r, 400));
  expect(b.beats()).toBeGreaterThan(before);
  a.dispose();
  b.dispose();
});

test("an operator's socket is closed when its key is revoked (revokedAt set, as operators revoke keys in the database)", async () => {
  const op = await createOperator(app);
  const s = heartbeat(op.headers);
  await within(s.started);
  await app.deps.db.operator.update({ where: { id: op.operatorId }, data: { revokedAt: app.clock.now() } });
  const { code, reason } = await within(s.closed);
  expect(code).toBe(4401);
  expect(reason).toMatch(/revoked/);
  s.dispose();
});

test('a member removed through DELETE /v1/organizations/{id}/members/{id} has their socket closed with 4401', async () => {
  const owner = await signUpMember(app);
  const m = await joinedMember(app, owner, 'DEVELOPER');
  const s = heartbeat(m.headers);
  const kept = heartbeat(owner.headers);
  await within(Promise.all([s.started, kept.started]));
  expect((await app.rest('DELETE', `/v1/organizations/${owner.organizationId}/members/${m.memberId}`, { headers: owner.headers })).status).toBe(204);
  const { code, reason } = await within(s.closed);
  expect(code).toBe(4401);
  expect(reason).toMatch(/no longer valid/);
  const before = kept.beats();
  await new Promise((r) => setTimeout(r, 400));
  expect(kept.beats()).toBeGreaterThan(before);
  s.dispose();
  kept.dispose();
});

test('a member whose role is changed through PUT …/members/{id}/role has their socket closed with 4401 (their sessions end; log in again)', async () => {
  const owner = await signUpMember(app);
  const m = await joinedMember(app, owner, 'DEVELOPER');
  const s = heartbeat(m.headers);
  await within(s.started);
  expect(
    (await app.rest('PUT', `/v1/organizations/${owner.organizationId}/members/${m.memberId}/role`, { headers: owner.headers, body: { role: 'VIEWER' } }))
      .status,
  ).toBe(200);
  const { code } = await within(s.closed);
  expect(code).toBe(4401);
  s.dispose();
});

test('a member whose role changes without their sessions ending (a change straight in the database) is closed with 4403', async () => {
  const m = await signUpMember(app);
  const s = heartbeat(m.headers);
  await within(s.started);
  await app.deps.db.member.update({ where: { id: m.memberId }, data: { role: 'VIEWER' } });
  const { code } = await within(s.closed);
  expect(code).toBe(4403);
  s.dispose();
});

test("removal and role changes close the member's sockets of this process at once, not at the next interval", async () => {
  // The same database, a process whose sockets re-check only every 5 minutes.
  const slow = await createTestApp({ databaseUrl: app.databaseUrl, env: { WS_REAUTH_INTERVAL_MS: '300000' } });
  try {
    const url = (await slow.listen()).url.replace('http', 'ws') + '/graphql';
    const owner = await signUpMember(slow);
    const removed = await joinedMember(slow, owner, 'DEVELOPER');
    const changed = await joinedMember(slow, owner, 'OPERATIONS');
    const a = heartbeat(removed.headers, url);
    const b = heartbeat(changed.headers, url);
    await within(Promise.all([a.started, b.started]));
    expect((await slow.rest('DELETE', `/v1/organizations/${owner.organizationId}/members/${removed.memberId}`, { headers: owner.headers })).status).toBe(204);
    expect((await within(a.closed, 1000)).code).toBe(4401);
    expect(
      (
        await slow.rest('PUT', `/v1/organizations/${owner.organizationId}/members/${changed.memberId}/role`, {
          headers: owner.headers,
          body: { role: 'VIEWER' },
        })
      ).status,
    ).toBe(200);
    expect((await within(b.closed, 1000)).code).toBe(4401);
    a.dispose();
    b.dispose();
  } finally {
    await slow.close();
  }
});

test('limits apply to subscriptions too: an over-deep document is refused with QUERY_TOO_COMPLEX and the socket stays open', async () => {
  const m = await signUpMember(app);
  const client = createClient({ url: wsUrl, webSocketImpl: WebSocket, connectionParams: m.headers, retryAttempts: 0 });
  const deep = `subscription { heartbeat(count: 1) { sequence } x: heartbeat(count: 1) { ${'a { '.repeat(2000)} b ${'}'.repeat(2000)} } }`;
  const result = await new Promise<unknown>((resolve) => client.subscribe({ query: deep }, { next: resolve, error: resolve, complete: () => {} }));
  expect(JSON.stringify(result)).toContain('QUERY_TOO_COMPLEX');
  const ok = await new Promise<unknown>((resolve) =>
    client.subscribe({ query: 'subscription { heartbeat(intervalMs: 100, count: 1) { sequence } }' }, { next: resolve, error: resolve, complete: () => {} }),
  );
  expect(ok).toEqual({ data: { heartbeat: { sequence: 1 } } });
  await client.dispose();
});

test('a websocket message over 1 MiB closes the socket (1009)', async () => {
  const socket = new WebSocket(wsUrl, 'graphql-transport-ws');
  await new Promise((r) => socket.once('open', r));
  const closed = new Promise<number>((r) => socket.once('close', (code) => r(code)));
  socket.send(JSON.stringify({ type: 'connection_init', payload: { pad: 'x'.repeat(1 << 20) } }));
  expect(await within(closed)).toBe(1009);
});

test('closing the server closes every socket with 1001', async () => {
  const own = await app.listen();
  const m = await signUpMember(app);
  const s = heartbeat(m.headers, own.url.replace('http', 'ws') + '/graphql');
  await within(s.started);
  await own.close();
  const { code } = await within(s.closed);
  expect(code).toBe(1001);
  s.dispose();
});
