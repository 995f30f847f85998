import { afterAll, beforeAll, expect, test } from 'vitest';
import type { PgBoss } from 'pg-boss';
import { createTestApp, signUpMember, type TestApp } from './harness';
import { queues, startJobs } from '../jobs/index';

let app: TestApp;
let boss: PgBoss;

beforeAll(async () => {
  app = await createTestApp();
  boss = await startJobs(
    app.databaseUrl,
    { db: app.deps.db, clock: app.clock, log: app.deps.log, config: app.deps.config, sealingKey: app.deps.sealingKey },
    { work: true },
  );
  app.deps.boss = boss;
});
afterAll(async () => {
  await boss.stop({ graceful: false });
  await app.close();
});

test('readyz reports the database and the job runner', async () => {
  const r = await app.rest('GET', '/readyz');
  expect(r.status).toBe(200);
  expect(r.body).toEqual({ status: 'ready', checks: { database: 'ok', jobs: 'ok' }, stuckOperations: 0 });
  const h = await app.rest('GET', '/healthz');
  expect(h.status).toBe(200);
});

test('the purge job deletes idempotency records past retention and keeps the others', async () => {
  await signUpMember(app); // no key: nothing stored
  const s = await app.rest('POST', '/v1/auth/signup', {
    headers: { 'idempotency-key': 'purge-me' },
    body: { email: 'purge@example.com', password: 'correct horse battery staple', name: 'P', organizationName: 'P' },
  });
  expect(s.status).toBe(201);
  const keep = await app.rest('POST', '/v1/auth/signup', {
    headers: { 'idempotency-key': 'keep-me' },
    body: { email: 'keep@example.com', password: 'correct horse battery staple', name: 'K', organizationName: 'K' },
  });
  expect(keep.status).toBe(201);
  // Age the first record past its 24 h retention.
  await app.deps.db.idempotencyRecord.update({
    where: { scope_key: { scope: 'signup', key: 'purge-me' } },
    data: { expiresAt: new Date(app.clock.now().getTime() - 1000) },
  });

  // Request rate-limit rows (issue 20): one of a window long over, one of the current window.
  const now = app.clock.now().getTime();
  await app.deps.db.requestRateLimit.createMany({
    data: [
      { key: 'k:stale', windowStart: new Date(now - 3 * 3600_000), count: 5 },
      { key: 'k:current', windowStart: new Date(now - 30_000), count: 5 },
    ],
  });

  const jobId = await boss.send(queues.purgeExpired, {});
  expect(jobId).toBeTruthy();
  let state: string | undefined;
  for (let i = 0; i < 100 && state !== 'completed'; i++) {
    await new Promise((r) => setTimeout(r, 100));
    state = (await boss.getJobById(queues.purgeExpired, jobId!))?.state;
  }
  expect(state).toBe('completed');
  const keys = (await app.deps.db.idempotencyRecord.findMany({ select: { key: true } })).map((r) => r.key);
  expect(keys).toEqual(['keep-me']);
  expect((await app.deps.db.requestRateLimit.findMany({ select: { key: true } })).map((r) => r.key)).toEqual(['k:current']);
});
