import type { PgBoss } from 'pg-boss';
import type { Logger } from 'pino';
import type { Clock } from '../clock';
import type { PrismaClient } from '../db/prisma';
import type { MoneyDeps } from '../kernel/service';
import { REFUND_EXECUTE_QUEUE, type RefundExecuteJob } from '../kernel/queues';
import { executeRefund } from './refunds';
import { dataOf, workEach } from '../kernel/work';

/**
 * Refund jobs (registered by jobs/index.ts; the queue is created by createSettlementQueues):
 * `refund.execute` {refundId}: executeRefund, sent with the request. REFUND_WORKERS workers per
 * process, one job at a time each: refunds of different transactions run in parallel, those of one
 * transaction one after another (its row lock). Idempotent: a refund no longer PENDING is skipped,
 * and its ledger posting has the key refund:<id>.
 */
export interface RefundJobDeps {
  db: PrismaClient;
  clock: Clock;
  log: Logger;
  /** Unseals the custodial key of the deposit address that sends the refund. */
  sealingKey: Buffer;
}

export const REFUND_WORKERS = 4;

/** The handler, as the job runner and the tests' drainMoneyWork run it (deps must carry sealingKey). */
export const refundHandlers = {
  [REFUND_EXECUTE_QUEUE]: (deps: MoneyDeps, data: RefundExecuteJob) => executeRefund(deps, data.refundId),
};

export async function registerRefundJobs(boss: PgBoss, deps: RefundJobDeps, work: boolean, opts: { workers?: number } = {}): Promise<void> {
  if (!work) return;
  const moneyDeps: MoneyDeps = { db: deps.db, clock: deps.clock, boss, sealingKey: deps.sealingKey };
  // A few jobs per fetch, fetching again at once while batches come back full: a worker of a NOTIFY
  // queue otherwise waits for the next notification or the polling backstop after each fetch.
  // Each job settles on its own: a failure retries that refund only (logged by workEach).
  await workEach<RefundExecuteJob>(
    boss,
    deps.log,
    REFUND_EXECUTE_QUEUE,
    { batchSize: 4, burstWhenBatchFull: true, localConcurrency: opts.workers ?? REFUND_WORKERS },
    async (job) => {
      const { refundId } = dataOf(job);
      const r = await refundHandlers[REFUND_EXECUTE_QUEUE](moneyDeps, { refundId });
      if (r.status === 'REJECTED') deps.log.info({ refundId, reason: r.reason }, 'refund rejected');
    },
  );
}
