import { describe, expect, test } from 'vitest';
import { checkLedgerInvariants } from './ledger-invariants';
import { recoverOperations } from '../src/operations/recovery';
import { ERROR_LEVEL, pollUntil, serviceEnv } from './process-harness';
import { createIntents, crashDatabase, fund, holdLock, idOf, RECOVERY_BOUND_MS, sandboxIntegrator, startCrashService } from './crash-case';

/**
 * Several workers on one database (issue 15): a job held by a live worker (blocked, heartbeat fresh)
 * is not run again by the other worker's sweep; once that worker is killed, the other runs it, once.
 */
describe('several workers on one database', () => {
  test(
    "a live worker's job (blocked, heartbeat fresh) is not run twice by the other's sweep; once that worker is " + 'killed, the other runs it, once',
    async () => {
      const { databaseUrl, ownerUrl, db } = await crashDatabase('multi');
      const env = await serviceEnv();
      const a = await startCrashService(databaseUrl, env);
      const x = await sandboxIntegrator(a, db);
      const f = x.f;
      const [intent] = await createIntents(a, x, 1);
      await fund(a, x, [intent!]);

      // Block the settlement's execution inside its handler: hold its escrow's ledger account row.
      const blocker = await holdLock(ownerUrl, {
        rowSql: `SELECT id FROM "LedgerAccount" WHERE kind = 'ESCROW' AND "ownerId" = $1 FOR UPDATE`,
        params: [intent!.transactionId],
      });
      const st = await a.rest('POST', `/v1/transactions/${intent!.transactionId}/settlements`, { headers: f.apiKeyHeaders, body: { amount: '1000000' } });
      expect(st.status, st.text).toBe(201);
      const settlementId = idOf(st);
      const jobs = () => db.$queryRaw<{ id: string; state: string; started_on: Date | null; heartbeat_on: Date | null }[]>`
      SELECT id::text, state::text, started_on, heartbeat_on FROM pgboss.job WHERE name = 'settlement.execute' AND data->>'settlementId' = ${settlementId}`;
      await pollUntil('job active', jobs, (j) => j.length === 1 && j[0]!.state === 'active', 20_000, 100);

      // A second worker on the same database, and a sweep well past the grace period, while A's heartbeat stays fresh.
      const b = await startCrashService(databaseUrl, env);
      await new Promise((r) => setTimeout(r, 13_000)); // > the heartbeat (10 s): A refreshes it meanwhile
      const later = { now: () => new Date(Date.now() + 3_600_000) };
      const quiet = { warn: () => {}, error: () => {}, info: () => {} } as never;
      const swept = await recoverOperations({ db, boss: null as never, clock: later, log: quiet }, { stuckAfterSeconds: 3_600 });
      expect(swept.requeued.SETTLEMENT).toBe(0);
      const held = await jobs();
      expect(held).toHaveLength(1);
      expect(held[0]!.state).toBe('active');
      expect(held[0]!.heartbeat_on!.getTime()).toBeGreaterThan(held[0]!.started_on!.getTime() + 4_000);
      expect((await a.rest('GET', `/v1/settlements/${settlementId}`, { headers: f.apiKeyHeaders })).body.status).toBe('PENDING');

      // A dies; its job's heartbeat goes stale; B runs it once the row is free.
      await a.killGroup('SIGKILL');
      const killedAt = Date.now();
      await blocker.release();
      await pollUntil(
        'settlement executed by B',
        async () => (await b.rest('GET', `/v1/settlements/${settlementId}`, { headers: f.apiKeyHeaders })).body.status,
        (s) => s === 'EXECUTED',
        RECOVERY_BOUND_MS,
        250,
      );
      expect(Date.now() - killedAt).toBeLessThan(RECOVERY_BOUND_MS);
      expect(await db.ledgerTransaction.count({ where: { idempotencyKey: `settlement:${settlementId}` } })).toBe(1);
      // The lost attempt itself is run again by B and logged, within the bound too: B's recovery sweep
      // may have requeued the settlement first (its new job executed it), and the lost job then finds
      // it EXECUTED and completes with nothing posted (the count above, and below).
      await pollUntil(
        'lost attempt logged by B',
        async () => b.logs().some((l) => l.level === ERROR_LEVEL && String(l.msg).startsWith('job attempt lost') && l.queue === 'settlement.execute'),
        (seen) => seen,
        Math.max(1_000, RECOVERY_BOUND_MS - (Date.now() - killedAt)),
        250,
      );
      expect(await db.ledgerTransaction.count({ where: { idempotencyKey: `settlement:${settlementId}` } })).toBe(1);
      await checkLedgerInvariants(db);
    },
    180_000,
  );
});
