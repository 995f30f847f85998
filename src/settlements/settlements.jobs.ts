import type { PgBoss } from 'pg-boss';
import type { Logger } from 'pino';
import type { Clock } from '../clock';
import type { PrismaClient } from '../db/prisma';
import type { MoneyDeps } from '../kernel/service';
import { RETAINED_RELEASE_QUEUE, SETTLEMENT_EXECUTE_QUEUE, type RetainedReleaseJob, type SettlementExecuteJob } from '../kernel/queues';
import { executeSettlement } from './settlements';
import { releaseRetained } from './retained';
import { dataOf, workEach } from '../kernel/work';

/**
 * Settlement jobs (registered by jobs/index.ts; the queues are created by createSettlementQueues):
 * - `settlement.execute` {settlementId}: executeSettlement, sent with the request (and with an
 *   operator's retry). SETTLEMENT_WORKERS workers per process, each fetching SETTLEMENT_BATCH jobs
 *   and running them one after another: settlements of different transactions run in parallel;
 *   those of one transaction one after another (its row lock).
 * - `settlement.release-retained` {accountId? | transactionId? | organizationId?}: releaseRetained,
 *   sent when a cause of retention may have cleared, at a time hold's due time, and every minute
 *   (no scope: every retained portion) as a sweep.
 * Both handlers are idempotent and re-check state under the Transaction row lock.
 */
export interface SettlementJobDeps {
  db: PrismaClient;
  clock: Clock;
  log: Logger;
}

/** Workers of settlement.execute per process. */
export const SETTLEMENT_WORKERS = 8;

/** The handlers, as the job runner and the tests' drainMoneyWork run them. */
export const settlementHandlers = {
  [SETTLEMENT_EXECUTE_QUEUE]: (deps: MoneyDeps, data: SettlementExecuteJob) => executeSettlement(deps, data.settlementId),
  [RETAINED_RELEASE_QUEUE]: (deps: MoneyDeps, data: RetainedReleaseJob | null | undefined) => releaseRetained(deps, data ?? {}),
};

export async function registerSettlementJobs(boss: PgBoss, deps: SettlementJobDeps, work: boolean, opts: { workers?: number } = {}): Promise<void> {
  if (!work) return;
  const moneyDeps: MoneyDeps = { db: deps.db, clock: deps.clock, boss };
  await startSettlementWorkers(boss, deps, opts.workers ?? SETTLEMENT_WORKERS);
  await boss.schedule(RETAINED_RELEASE_QUEUE, '* * * * *', {});
  // Batches with burstWhenBatchFull for the same reason as the execution workers (below).
  await workEach<RetainedReleaseJob>(
    boss,
    deps.log,
    RETAINED_RELEASE_QUEUE,
    { batchSize: SETTLEMENT_BATCH, burstWhenBatchFull: true, localConcurrency: 2 },
    async ({ data }) => {
      const r = await settlementHandlers[RETAINED_RELEASE_QUEUE](moneyDeps, data);
      if (r.released) deps.log.info({ ...r, scope: data }, 'retained split portions released');
    },
  );
}

/** Jobs a settlement worker fetches at once (run one after another). */
export const SETTLEMENT_BATCH = 4;

/**
 * The settlement.execute workers of this process (stop them with boss.offWork(SETTLEMENT_EXECUTE_QUEUE)).
 * Each fetches up to SETTLEMENT_BATCH jobs and runs them one after another, each settlement in its
 * own database transaction; a job that throws fails alone (logged by workEach; pg-boss retries it),
 * the others complete.
 * `burstWhenBatchFull`: while fetches come back full the worker fetches again at once. Without it a
 * worker of a NOTIFY queue waits the 30 s backstop after every fetch unless a new job wakes it, so a
 * backlog queued before the workers started (or while they were busy) drained at a few jobs a minute.
 */
export async function startSettlementWorkers(boss: PgBoss, deps: SettlementJobDeps, workers: number): Promise<void> {
  const moneyDeps: MoneyDeps = { db: deps.db, clock: deps.clock, boss };
  await workEach<SettlementExecuteJob>(
    boss,
    deps.log,
    SETTLEMENT_EXECUTE_QUEUE,
    { batchSize: SETTLEMENT_BATCH, burstWhenBatchFull: true, localConcurrency: workers },
    async (job) => {
      const { settlementId } = dataOf(job);
      const r = await settlementHandlers[SETTLEMENT_EXECUTE_QUEUE](moneyDeps, { settlementId });
      if (r.status === 'FAILED') deps.log.info({ settlementId, reason: r.reason }, 'settlement failed');
    },
  );
}
