import { afterAll, beforeAll, expect, test } from 'vitest';
import type { PgBoss } from 'pg-boss';
import { createTestApp, signUpMember, type TestApp } from '../../test/harness';
import { emitTransactionCreated, registerEndpoint, startReceiver, webhookEnv } from '../../test/webhook-helpers';
import { startJobs, stopJobs } from '../../jobs/index';
import { createLogger } from '../app';

/** The per-endpoint concurrency cap, with the real pg-boss worker: a slow receiver holds only its own slots. */
let app: TestApp;
let worker: PgBoss;
beforeAll(async () => {
  app = await createTestApp({ env: { ...webhookEnv, WEBHOOK_ATTEMPT_TIMEOUT_MS: '5000', WEBHOOK_ENDPOINT_CONCURRENCY: '2', WEBHOOK_BATCH_SIZE: '20' } });
  worker = await startJobs(
    app.databaseUrl,
    { db: app.deps.db, clock: app.clock, log: createLogger('warn'), config: app.deps.config, sealingKey: app.deps.sealingKey },
    { work: true },
  );
});
afterAll(async () => {
  await stopJobs(worker);
  await app.close();
});

test('a slow receiver never has more than WEBHOOK_ENDPOINT_CONCURRENCY attempts in flight, and does not hold up a fast one', async () => {
  let inFlight = 0;
  let maxInFlight = 0;
  const slow = await startReceiver(async (_r, res) => {
    maxInFlight = Math.max(maxInFlight, ++inFlight);
    await new Promise((r) => setTimeout(r, 1000));
    inFlight--;
    res.end('slow');
  });
  const fast = await startReceiver();
  try {
    const m = await signUpMember(app);
    const slowEndpoint = await registerEndpoint(app, m, slow.url);
    const fastEndpoint = await registerEndpoint(app, m, fast.url);
    const started = Date.now();
    for (let i = 0; i < 6; i++) await emitTransactionCreated(app, m.organizationId);
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline && (fast.received.length < 6 || slow.received.length < 6)) await new Promise((r) => setTimeout(r, 50));
    expect(fast.received).toHaveLength(6);
    expect(slow.received).toHaveLength(6);
    expect(maxInFlight).toBeLessThanOrEqual(2);
    expect(maxInFlight).toBeGreaterThanOrEqual(1);
    // Six 1-second requests two at a time take at least 3 s; the fast receiver had all of its six long before.
    const fastDone = Math.max(...fast.received.map((r) => r.at)) - started;
    const slowDone = Math.max(...slow.received.map((r) => r.at)) - started;
    expect(slowDone).toBeGreaterThanOrEqual(2000);
    expect(fastDone).toBeLessThan(slowDone);
    const delivered = await app.deps.db.webhookDelivery.count({ where: { endpointId: { in: [slowEndpoint.id, fastEndpoint.id] }, status: 'DELIVERED' } });
    for (let i = 0; i < 100 && delivered < 12; i++) await new Promise((r) => setTimeout(r, 100));
    expect(await app.deps.db.webhookDelivery.count({ where: { endpointId: { in: [slowEndpoint.id, fastEndpoint.id] }, status: 'DELIVERED' } })).toBe(12);
  } finally {
    await slow.close();
    await fast.close();
  }
}, 60_000);
