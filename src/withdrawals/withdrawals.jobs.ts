import type { PgBoss } from 'pg-boss';
import type { Logger } from 'pino';
import type { Clock } from '../clock';
import type { PrismaClient } from '../db/prisma';
import type { MoneyDeps } from '../kernel/service';
import { broadcastWithdrawalGroup, sweepWithdrawals, type StepOutcome, type WithdrawalBroadcastJob, type WithdrawalSweepJob } from './withdrawals';
import { WITHDRAWAL_BROADCAST_QUEUE, WITHDRAWAL_SWEEP_QUEUE } from '../kernel/queues';
import { workEach, workGroup, ensureQueue, type JobOf } from '../kernel/work';

/**
 * Withdrawal jobs (registered by jobs/index.ts):
 * - `withdrawal.broadcast` {withdrawalId}: sent with an approval of a custodial withdrawal; signs and
 *   broadcasts it. Worked a fetched batch at a time (up to BROADCAST_GROUP jobs): one group, one
 *   database transaction (broadcastWithdrawalGroup), each job answering its own withdrawal's outcome.
 *   Idempotent: anything but APPROVED (or a due BROADCAST_FAILED) is skipped.
 * - `withdrawal.sweep` {organizationId?}: scheduled every minute (no data: every organization);
 *   retries due BROADCAST_FAILED withdrawals (backoff) and deferred APPROVED ones, and follows
 *   BROADCAST ones to CONFIRMED, FAILED or REQUIRES_RECONCILIATION (sweepWithdrawals). The safety
 *   net: BROADCAST withdrawals are followed at each block by `chain.sync` (src/deposits/deposits.jobs.ts).
 * The job runner runs exactly these handlers (withdrawalHandlers), as the tests do.
 */
export interface WithdrawalJobDeps {
  db: PrismaClient;
  clock: Clock;
  log: Logger;
  sealingKey: Buffer;
}

/** The most broadcast jobs one group takes (one database transaction, one network lock). */
export const BROADCAST_GROUP = 100;

/** A broadcast group's jobs: each answers its withdrawal's outcome, or an Error (a job without data fails alone). */
export async function runBroadcastJobs(
  deps: MoneyDeps,
  jobs: readonly { data: WithdrawalBroadcastJob | null | undefined }[],
): Promise<(StepOutcome | Error)[]> {
  const ids = jobs.map((j) => (typeof j.data?.withdrawalId === 'string' ? j.data.withdrawalId : null));
  const outcomes = await broadcastWithdrawalGroup(
    deps,
    ids.filter((id): id is string => id !== null),
  );
  let k = 0;
  return ids.map((id) => (id === null ? new Error('a withdrawal.broadcast job carries no withdrawalId') : outcomes[k++]!));
}

/** The handlers, as the job runner and the tests' drain helper run them (deps must carry sealingKey). */
export const withdrawalHandlers = {
  [WITHDRAWAL_BROADCAST_QUEUE]: runBroadcastJobs,
  [WITHDRAWAL_SWEEP_QUEUE]: (deps: MoneyDeps, data: WithdrawalSweepJob | null | undefined) =>
    sweepWithdrawals(deps, data?.organizationId ? { organizationId: data.organizationId } : {}),
};

export async function registerWithdrawalJobs(boss: PgBoss, deps: WithdrawalJobDeps, work: boolean): Promise<void> {
  await ensureQueue(boss, WITHDRAWAL_BROADCAST_QUEUE, {
    retryLimit: 10,
    retryDelay: 2,
    retryBackoff: true,
    retryDelayMax: 300,
    deleteAfterSeconds: 3600,
    notify: true,
  });
  await ensureQueue(boss, WITHDRAWAL_SWEEP_QUEUE, { policy: 'singleton', retryLimit: 3, retryDelay: 10, deleteAfterSeconds: 3600 });
  if (!work) return;
  const moneyDeps: MoneyDeps = { db: deps.db, clock: deps.clock, boss, sealingKey: deps.sealingKey };
  await boss.schedule(WITHDRAWAL_SWEEP_QUEUE, '* * * * *');
  // Two groups at a time: one is fetched and read while the other holds the network lock.
  await workGroup<WithdrawalBroadcastJob>(
    boss,
    deps.log,
    WITHDRAWAL_BROADCAST_QUEUE,
    { batchSize: BROADCAST_GROUP, burstWhenBatchFull: true, localConcurrency: 2 },
    async (jobs: JobOf<WithdrawalBroadcastJob>[]) => {
      const results = await withdrawalHandlers[WITHDRAWAL_BROADCAST_QUEUE](moneyDeps, jobs);
      for (const [i, r] of results.entries())
        if (r !== 'BROADCAST' && r !== 'SKIPPED' && !(r instanceof Error))
          deps.log.info({ withdrawalId: jobs[i]!.data?.withdrawalId, outcome: r }, 'withdrawal not broadcast');
      return results;
    },
  );
  await workEach<WithdrawalSweepJob>(boss, deps.log, WITHDRAWAL_SWEEP_QUEUE, {}, async ({ data }) => {
    const counts = await withdrawalHandlers[WITHDRAWAL_SWEEP_QUEUE](moneyDeps, data);
    const moved = Object.entries(counts).filter(([k, n]) => n && k !== 'WAITING' && k !== 'SKIPPED');
    if (moved.length) deps.log.info(Object.fromEntries(moved), 'withdrawal sweep');
  });
}
