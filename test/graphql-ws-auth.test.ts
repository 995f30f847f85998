import { afterAll, beforeAll, expect, test } from 'vitest';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { createApiKey, createOperator, createTestApp, PASSWORD, signUpMember, type TestApp } from './harness';
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

const within = <T>(p: Promise<T>, ms = 3000) =>
  Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`not within ${ms} ms`)), ms))]);

test('a socket without a credential, or with an invalid one, is closed with 4401 before any acknowledgement', async () => {
  for (const params of <Record<string, string>[]>[{}, { 'x-api-key': 'sk_test_' + 'x'.repeat(40) }, { authorization: 'Bearer not-a-token' }, { 'x-operator-key': 'op_nope' }]) {
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

// No route removes a member or changes a role yet: the database changes below are what such a route would do.
test("a removed member's socket is closed with 4401", async () => {
  const m = await signUpMember(app);
  const s = heartbeat(m.headers);
  await within(s.started);
  await app.deps.db.member.delete({ where: { id: m.memberId } });
  const { code, reason } = await within(s.closed);
  expect(code).toBe(4401);
  expect(reason).toMatch(/no longer valid/);
  s.dispose();
});

test('a member whose role changes is closed with 4403 (reconnect to get the new permissions)', async () => {
  const m = await signUpMember(app);
  const s = heartbeat(m.headers);
  await within(s.started);
  await app.deps.db.member.update({ where: { id: m.memberId }, data: { role: 'VIEWER' } });
  const { code } = await within(s.closed);
  expect(code).toBe(4403);
  s.dispose();
});

test('limits apply to subscriptions too: an over-deep document is refused with QUERY_TOO_COMPLEX and the socket stays open', async () => {
  const m = await signUpMember(app);
  const client = createClient({ url: wsUrl, webSocketImpl: WebSocket, connectionParams: m.headers, retryAttempts: 0 });
  const deep = `subscription { heartbeat(count: 1) { sequence } x: heartbeat(count: 1) { ${'a { '.repeat(2000)} b ${'}'.repeat(2000)} } }`;
  const result = await new Promise<unknown>((resolve) => client.subscribe({ query: deep }, { next: resolve, error: resolve, complete: () => {} }));
  expect(JSON.stringify(result)).toContain('QUERY_TOO_COMPLEX');
  const ok = await new Promise<unknown>((resolve) => client.subscribe({ query: 'subscription { heartbeat(intervalMs: 100, count: 1) { sequence } }' }, { next: resolve, error: resolve, complete: () => {} }));
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
