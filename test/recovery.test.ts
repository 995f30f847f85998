import type { Logger } from 'pino';
import { describe, expect, test } from 'vitest';
import { signUpMember } from './harness';
import { moneySuite } from './money-suite';
import { drainMoneyWork, fundedTransaction } from './fixtures/settlements/testing';
import { recoverOperations, RECOVERY_GRACE_SECONDS } from '../src/operations/recovery';
import { SETTLEMENT_EXECUTE_QUEUE } from '../src/kernel/queues';

/**
 * The recovery sweep and the stuck-operation list (src/operations/recovery.ts), in process against
 * the real database and pg-boss tables: a settlement whose job is gone is re-queued; a live job
 * (created, or active with a fresh heartbeat) is never duplicated; a dead worker's job (active, stale
 * heartbeat) is; the re-queued job executes the settlement once. GET /v1/admin/stuck-operations and
 * /readyz report it meanwhile, and the sweep logs it at error once per interval.
 */
const suite = moneySuite();

const idOf = (r: { headers: Headers }) => r.headers.get('location')!.split('/').pop()!;

function captureLog() {
  const lines: { level: string; obj: Record<string, unknown>; msg: string }[] = [];
  const at = (level: string) => ((obj: Record<string, unknown>, msg: string) => void lines.push({ level, obj, msg })) as unknown as Logger['info'];
  return { lines, log: { warn: at('warn'), error: at('error'), info: at('info') } };
}

const jobsOf = (settlementId: string) =>
  suite.app.deps.db.$queryRaw<{ id: string; state: string }[]>`
    SELECT id::text, state::text FROM pgboss.job WHERE name = ${SETTLEMENT_EXECUTE_QUEUE} AND data->>'settlementId' = ${settlementId} ORDER BY created_on`;

describe('recovery sweep', () => {
  test(
    'a settlement whose job is lost is re-queued once; a live job (created, or active with a fresh heartbeat) is ' +
      'not duplicated; a stale one is; executed once',
    async () => {
      const { f, transactionId } = await fundedTransaction(suite.app);
      const s = await suite.app.rest('POST', `/v1/transactions/${transactionId}/settlements`, { headers: f.apiKeyHeaders, body: { amount: '400000' } });
      expect(s.status, s.text).toBe(201);
      const settlementId = idOf(s);
      const [sent] = await jobsOf(settlementId);
      expect(sent).toMatchObject({ state: 'created' });

      // The sweep runs well past the grace period; pg-boss's own clock (now()) judges heartbeats.
      const later = { now: () => new Date(Date.now() + (RECOVERY_GRACE_SECONDS + 600) * 1000) };
      const { lines, log } = captureLog();
      const sweep = () => recoverOperations({ db: suite.app.deps.db, boss: suite.app.deps.boss!, clock: later, log }, { stuckAfterSeconds: 60 });

      // A created job is live: nothing sent.
      expect((await sweep()).requeued.SETTLEMENT).toBe(0);
      // Active with a fresh heartbeat (a live worker holds it): nothing sent.
      await suite.app.deps.db
        .$executeRaw`UPDATE pgboss.job SET state = 'active', started_on = now() - interval '1 hour', heartbeat_on = now() WHERE id = ${sent!.id}::uuid`;
      expect((await sweep()).requeued.SETTLEMENT).toBe(0);
      expect(await jobsOf(settlementId)).toHaveLength(1);
      // Active with a stale heartbeat (its worker was killed): sent again.
      await suite.app.deps.db.$executeRaw`UPDATE pgboss.job SET heartbeat_on = now() - interval '1 minute' WHERE id = ${sent!.id}::uuid`;
      expect((await sweep()).requeued.SETTLEMENT).toBe(1);
      expect((await jobsOf(settlementId)).map((j) => j.state)).toEqual(['active', 'created']);
      expect(lines.filter((l) => l.level === 'warn' && l.obj.kind === 'SETTLEMENT')).toHaveLength(1);
      // The new job is live: the next sweep sends nothing.
      expect((await sweep()).requeued.SETTLEMENT).toBe(0);
      // Lost altogether (deleted, e.g. retention after it failed for good): sent again.
      await suite.app.deps.db.$executeRaw`DELETE FROM pgboss.job WHERE name = ${SETTLEMENT_EXECUTE_QUEUE} AND data->>'settlementId' = ${settlementId}`;
      expect((await sweep()).requeued.SETTLEMENT).toBe(1);

      // Stuck meanwhile: listed for operators, counted by /readyz, logged at error once per interval.
      const errors = lines.filter((l) => l.level === 'error' && l.obj.id === settlementId);
      expect(errors).toHaveLength(1);
      expect(errors[0]!.obj).toMatchObject({ kind: 'SETTLEMENT', status: 'PENDING', organizationId: f.organizationId });
      suite.app.clock.set(later.now()); // the list's clock: the operation's updatedAt is real time
      const list = await suite.app.rest('GET', '/v1/admin/stuck-operations?olderThanSeconds=60', { headers: suite.op.headers });
      expect(list.status, list.text).toBe(200);
      expect(list.body).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            kind: 'SETTLEMENT',
            id: settlementId,
            organizationId: f.organizationId,
            status: 'PENDING',
            jobState: 'created',
            lastError: null,
            ageSeconds: expect.any(Number),
            since: expect.any(String),
          }),
        ]),
      );
      const ready = await suite.app.rest('GET', '/readyz');
      expect(ready.status).toBe(200);
      expect(ready.body.stuckOperations).toBeGreaterThanOrEqual(1);

      // The re-queued job executes it, once (the stale and deleted ones are gone or find nothing).
      await drainMoneyWork(suite.app);
      expect((await suite.app.rest('GET', `/v1/settlements/${settlementId}`, { headers: f.apiKeyHeaders })).body).toMatchObject({ status: 'EXECUTED' });
      expect(await suite.app.deps.db.ledgerTransaction.count({ where: { idempotencyKey: `settlement:${settlementId}` } })).toBe(1);
      expect((await sweep()).requeued.SETTLEMENT).toBe(0);
      const after = await suite.app.rest('GET', '/v1/admin/stuck-operations?olderThanSeconds=0', { headers: suite.op.headers });
      expect((after.body as { id: string }[]).map((o) => o.id)).not.toContain(settlementId);
    },
  );

  test("the job's last error is listed with a stuck refund", async () => {
    const { f, transactionId } = await fundedTransaction(suite.app);
    const r = await suite.app.rest('POST', `/v1/transactions/${transactionId}/refunds`, { headers: f.apiKeyHeaders, body: { amount: '1000' } });
    expect(r.status, r.text).toBe(201);
    const refundId = idOf(r);
    await suite.app.deps.db
      .$executeRaw`UPDATE pgboss.job SET state = 'retry', retry_count = 1, output = '{"message":"connection refused"}'::jsonb WHERE name = 'refund.execute' AND data->>'refundId' = ${refundId}`;
    suite.app.clock.set(new Date(Math.max(Date.now(), suite.app.clock.now().getTime()) + 1000));
    const list = await suite.app.rest('GET', '/v1/admin/stuck-operations?olderThanSeconds=0&limit=500', { headers: suite.op.headers });
    expect(list.status, list.text).toBe(200);
    expect(list.body).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ kind: 'REFUND', id: refundId, status: 'PENDING', jobState: 'retry', lastError: 'connection refused' }),
      ]),
    );
    await drainMoneyWork(suite.app);
  });
});

describe('GET /v1/admin/stuck-operations', () => {
  test('operators only; bad parameters answer 400 naming them', async () => {
    const m = await signUpMember(suite.app);
    expect((await suite.app.rest('GET', '/v1/admin/stuck-operations', { headers: m.headers })).status).toBe(403);
    expect((await suite.app.rest('GET', '/v1/admin/stuck-operations')).status).toBe(401);
    for (const [q, field] of [
      ['limit=0', 'limit'],
      ['limit=501', 'limit'],
      ['olderThanSeconds=-1', 'olderThanSeconds'],
      ['limit=abc', 'limit'],
    ] as const) {
      const r = await suite.app.rest('GET', `/v1/admin/stuck-operations?${q}`, { headers: suite.op.headers });
      expect(r.status, `${q}: ${r.text}`).toBe(400);
      expect(r.text).toContain(field);
    }
    const ok = await suite.app.rest('GET', '/v1/admin/stuck-operations', { headers: suite.op.headers });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body).toEqual([]);
  });
});
