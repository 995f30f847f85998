import { afterAll, beforeAll, expect, test } from 'vitest';
import { createApiKey, createTestApp, signUpMember, type TestApp } from './harness';
import { API_KEYS_CHANNEL } from '../src/auth/authenticate';
import { createApp } from '../src/compose';

/**
 * The API key cache (issue 22) stays correct under revocation on every API process: a revocation,
 * a rotation or an application's suspension made through one process reaches the cache of another
 * when PostgreSQL delivers its commit's notification, not after a TTL (the clock of these apps
 * never moves, so no entry ever expires here). Without its LISTEN connection a process does not
 * cache at all.
 */
let a: TestApp;
let b: TestApp;
beforeAll(async () => {
  a = await createTestApp();
  // A second API process on the same database.
  b = await createTestApp({ databaseUrl: a.databaseUrl });
});
afterAll(async () => {
  await b?.close();
  await a?.close();
});

const keyLookups = (statements: string[]) => statements.filter((s) => /"ApiKey"/.test(s)).length;

async function until(what: string, check: () => Promise<boolean>, ms = 5000): Promise<number> {
  const start = Date.now();
  while (!(await check())) {
    if (Date.now() - start > ms) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
  return Date.now() - start;
}

test('a key revoked, rotated or suspended through one process is refused by another at once; without its listener a process looks every key up', async () => {
  const m = await signUpMember(a);
  const k1 = await createApiKey(a, m);
  const k2 = await createApiKey(a, m);
  const k3 = await createApiKey(a, m);
  const list = (app: TestApp, headers: Record<string, string>) => app.rest('GET', `/v1/organizations/${m.organizationId}/accounts`, { headers });
  for (const k of [k1, k2, k3]) expect((await list(b, k.headers)).status).toBe(200);
  await until('B listens', async () => b.deps.deliveryStatus.isListening(API_KEYS_CHANNEL));
  // Cached on B once listening: a request looks nothing up.
  for (const k of [k1, k2, k3]) expect((await list(b, k.headers)).status).toBe(200);
  const cached = await b.sqlStatements(() => list(b, k1.headers));
  expect(cached.result.status).toBe(200);
  expect(keyLookups(cached.statements)).toBe(0);

  // A second app in process B (as bench/run.ts's other servers): B's listener, a cache of its own.
  const b2 = createApp({ ...b.deps });
  const listB2 = async (headers: Record<string, string>) => (await b2.fetch(`http://test/v1/organizations/${m.organizationId}/accounts`, { headers })).status;
  expect(await listB2(k1.headers)).toBe(200);
  expect(await listB2(k1.headers)).toBe(200);

  // Revoked through A: B refuses it as soon as the notification arrives (no TTL involved).
  expect((await a.rest('DELETE', `/v1/api-keys/${k1.apiKeyId}`, { headers: m.headers })).status).toBe(204);
  await until('the second app of B refuses the revoked key', async () => (await listB2(k1.headers)) === 401);
  let stale = 0;
  const revokedAfter = await until('B refuses the revoked key', async () => (await list(b, k1.headers)).status === 401 || (stale++, false));
  expect(revokedAfter).toBeLessThan(2000);
  // The window is the notification's way from PostgreSQL to B (LISTEN connection, B's event loop): a request or two at most here.
  expect(stale).toBeLessThanOrEqual(2);
  expect((await list(b, k1.headers)).body.code).toBe('INVALID_CREDENTIAL');

  // Rotated without grace through A: the old key is refused by B, the new one accepted.
  const rotated = await a.rest('POST', `/v1/api-keys/${k2.apiKeyId}/rotate`, { body: {}, headers: m.headers });
  expect(rotated.status).toBe(200);
  await until('B refuses the rotated key', async () => (await list(b, k2.headers)).status === 401);
  expect((await list(b, { 'x-api-key': rotated.body.apiKey })).status).toBe(200);

  // The application suspended through A: B refuses its key (403), and accepts it again once reactivated.
  expect((await a.rest('POST', `/v1/applications/${k3.applicationId}/suspend`, { body: { reason: 'test' }, headers: m.headers })).status).toBe(204);
  await until('B refuses the suspended application', async () => (await list(b, k3.headers)).status === 403);
  expect((await a.rest('POST', `/v1/applications/${k3.applicationId}/reactivate`, { headers: m.headers })).status).toBe(204);
  await until('B accepts the reactivated application', async () => (await list(b, k3.headers)).status === 200);

  // B's listener gone: nothing tells B of a change any more, so B looks every key up.
  await b.deps.deliveryStatus.close();
  expect(b.deps.deliveryStatus.isListening(API_KEYS_CHANNEL)).toBe(false);
  const uncached = await b.sqlStatements(() => list(b, k3.headers));
  expect(uncached.result.status).toBe(200);
  expect(keyLookups(uncached.statements)).toBe(1);
  expect((await a.rest('DELETE', `/v1/api-keys/${k3.apiKeyId}`, { headers: m.headers })).status).toBe(204);
  expect((await list(b, k3.headers)).status).toBe(401);
});
