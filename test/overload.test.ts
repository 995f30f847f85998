import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import pg from 'pg';
import { createApiKey, createTestApp, signUpMember, type TestApp } from './harness';

/**
 * Issue 22: an overloaded service answers 503 SERVICE_UNAVAILABLE with Retry-After, never 500, and
 * changes nothing; a retry with the same Idempotency-Key proceeds. The overload is made real: a test
 * connection holds the organization's row (FOR UPDATE), so the account insert's foreign-key check
 * waits, either past a lock_timeout (55P03) or past Prisma's interactive-transaction timeout (P2028).
 */
let app: TestApp;
let bounded: TestApp;
beforeAll(async () => {
  app = await createTestApp();
  // A second service on the same database whose connections bound every lock wait (a database setting:
  // the connections it opens from now on take it).
  const name = new URL(app.databaseUrl).pathname.slice(1);
  await app.ownerDb.$executeRawUnsafe(`ALTER DATABASE "${name}" SET lock_timeout = '300ms'`);
  bounded = await createTestApp({ databaseUrl: app.databaseUrl });
});
afterAll(async () => {
  await bounded?.close();
  await app?.close();
});

/** Holds the organization's row locked from a connection of the test until `release` is called. */
async function holdOrganization(organizationId: string) {
  const c = new pg.Client({ connectionString: app.ownerDatabaseUrl });
  await c.connect();
  await c.query('BEGIN');
  await c.query('SELECT 1 FROM "Organization" WHERE "id" = $1 FOR UPDATE', [organizationId]);
  return {
    async release() {
      await c.query('ROLLBACK');
      await c.end();
    },
  };
}

const accountsNamed = (organizationId: string, name: string) => app.deps.db.account.count({ where: { organizationId, name } });
const auditsOf = (organizationId: string) => app.deps.db.auditLogEntry.count({ where: { organizationId, action: 'account.created' } });

describe('overload answers 503 with Retry-After and changes nothing', () => {
  test('a lock wait past lock_timeout (55P03): REST and GraphQL answer 503; the retry with the same key creates the account once', async () => {
    const m = await signUpMember(bounded);
    const k = await createApiKey(bounded, m);
    const path = `/v1/organizations/${m.organizationId}/accounts`;
    const headers = { ...k.headers, 'idempotency-key': 'overload-1' };
    const lock = await holdOrganization(m.organizationId);
    try {
      const r = await bounded.rest('POST', path, { body: { name: 'Busy' }, headers });
      expect(r.status).toBe(503);
      expect(r.headers.get('retry-after')).toBe('1');
      expect(r.headers.get('content-type')).toContain('application/problem+json');
      expect(r.body).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE', retryAfterSeconds: 1 });
      expect(r.text).not.toMatch(/lock|timeout|prisma/i);

      const g = await bounded.gql(
        `mutation($o: ID!, $k: String) { createAccount(organizationId: $o, input: { name: "Busy" }, idempotencyKey: $k) { id } }`,
        { o: m.organizationId, k: 'overload-1' },
        k.headers,
      );
      expect(g.errors?.[0]?.extensions).toMatchObject({ code: 'SERVICE_UNAVAILABLE', retryAfterSeconds: 1 });
      expect(g.data).toBeNull();
      expect(await accountsNamed(m.organizationId, 'Busy')).toBe(0);
      expect(await auditsOf(m.organizationId)).toBe(0);
    } finally {
      await lock.release();
    }
    // Nothing was claimed: the same key proceeds, once.
    const again = await bounded.rest('POST', path, { body: { name: 'Busy' }, headers });
    expect(again.status).toBe(201);
    const replay = await bounded.rest('POST', path, { body: { name: 'Busy' }, headers });
    expect(replay.status).toBe(201);
    expect(replay.headers.get('location')).toBe(again.headers.get('location'));
    expect(await accountsNamed(m.organizationId, 'Busy')).toBe(1);
    expect(await auditsOf(m.organizationId)).toBe(1);
  });

  test("a transaction outliving Prisma's interactive-transaction timeout answers 503, not 500; nothing changed; the retry proceeds", async () => {
    const m = await signUpMember(app);
    const k = await createApiKey(app, m);
    const path = `/v1/organizations/${m.organizationId}/accounts`;
    const headers = { ...k.headers, 'idempotency-key': 'overload-2' };
    const lock = await holdOrganization(m.organizationId);
    // The request waits on the row past the 5 s timeout of its transaction; the lock goes after 6 s.
    const pending = app.rest('POST', path, { body: { name: 'Slow' }, headers });
    await new Promise((ok) => setTimeout(ok, 6_000));
    await lock.release();
    const r = await pending;
    expect(r.status).toBe(503);
    expect(r.headers.get('retry-after')).toBe('1');
    expect(r.body).toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
    expect(await accountsNamed(m.organizationId, 'Slow')).toBe(0);
    expect(await auditsOf(m.organizationId)).toBe(0);
    const again = await app.rest('POST', path, { body: { name: 'Slow' }, headers });
    expect(again.status).toBe(201);
    expect(await accountsNamed(m.organizationId, 'Slow')).toBe(1);
    expect(await auditsOf(m.organizationId)).toBe(1);
  }, 30_000);
});
