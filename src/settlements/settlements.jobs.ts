import type { PgBoss } from 'pg-boss';
import type { Logger } from 'pino';
import type { Clock } from '../clock';
import type { PrismaClient } from '../db/prisma';
import type { MoneyDeps } from '../kernel/service';
import { RETAINED_RELEASE_QUEUE, SETTLEMENT_EXECUTE_QUEUE, type RetainedReleaseJob, type SettlementExecuteJob } from '../kernel/queues';
import { executeSettlement, executeSettlementGroup } from './settlements';
import { releaseRetained } from './retained';
import { workEach, workGroup } from '../kernel/work';

/**
 * Settlement jobs (registered by jobs/index.ts; the queues are created by createSettlementQueues):
 * - `settlement.execute` {settlementId}: executeSettlement, sent with the request (and with an
 *   operator's retry). SETTLEMENT_WORKERS workers per process, each fetching SETTLEMENT_BATCH jobs
 *   and executing them as one group in one database transaction (executeSettlementGroup); groups
 *   run in parallel; settlements of one transaction execute one after another (its row lock).
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
      if (r.outOfRange.length)
        deps.log.warn(
          { transactionIds: r.outOfRange, scope: data },
          'retained split portions not released: the account would pass the ledger bound (AMOUNT_OUT_OF_RANGE)',
        );
    },
  );
}

/**
 * Jobs a settlement worker fetches at once: executed as one group, in one database transaction
 * (executeSettlementGroup; docs/decisions.md, "Money paths at database speed").
 */
export const SETTLEMENT_BATCH = 64;

/**
 * The settlement.execute workers of this process (stop them with boss.offWork(SETTLEMENT_EXECUTE_QUEUE)).
 * Each fetches up to SETTLEMENT_BATCH jobs and executes their settlements as one group, in one
 * database transaction with one commit (executeSettlementGroup): a settlement that cannot execute
 * with the others runs again alone, and a job whose settlement throws then fails alone (logged by
 * workGroup; pg-boss retries it), the others complete.
 * `burstWhenBatchFull`: while fetches come back full the worker fetches again at once. Without it a
 * worker of a NOTIFY queue waits the 30 s backstop after every fetch unless a new job wakes it, so a
 * backlog queued before the workers started (or while they were busy) drained at a few jobs a minute.
 */
export async function startSettlementWorkers(
  boss: PgBoss,
  deps: SettlementJobDeps,
  workers: number,
  /** Told each group's size and duration (the bench's diagnostics). */
  onGroup?: (jobs: number, ms: number) => void,
): Promise<void> {
  const moneyDeps: MoneyDeps = { db: deps.db, clock: deps.clock, boss };
  await workGroup<SettlementExecuteJob>(
    boss,
    deps.log,
    SETTLEMENT_EXECUTE_QUEUE,
    { batchSize: SETTLEMENT_BATCH, burstWhenBatchFull: true, localConcurrency: workers },
    async (jobs) => {
      // A job without data names no settlement: it fails alone (an Error in its place).
      const ids = jobs.map((j) => (typeof j.data?.settlementId === 'string' ? j.data.settlementId : ''));
      const started = performance.now();
      const results = await executeSettlementGroup(moneyDeps, ids);
      onGroup?.(ids.length, performance.now() - started);
      return results.map((r, i) => {
        if (!jobs[i]!.data) return new Error(`job ${jobs[i]!.id} of ${jobs[i]!.name} carries no data`);
        if (!(r instanceof Error) && r.status === 'FAILED') deps.log.info({ settlementId: ids[i], reason: r.reason }, 'settlement failed');
        return r;
      });
    },
  );
}
