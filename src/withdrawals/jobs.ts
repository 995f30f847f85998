import type { PgBoss } from 'pg-boss';
import type { Logger } from 'pino';
import type { Clock } from '../clock';
import type { PrismaClient } from '../db/prisma';
import type { MoneyDeps } from '../deposits/common';
import {
  broadcastWithdrawal, sweepWithdrawals, WITHDRAWAL_BROADCAST_QUEUE, WITHDRAWAL_SWEEP_QUEUE, type WithdrawalBroadcastJob, type WithdrawalSweepJob,
} from './withdrawals';

/**
 * Withdrawal jobs (registered by jobs/index.ts):
 * - `withdrawal.broadcast` {withdrawalId}: sent with an approval of a custodial withdrawal; signs and
 *   broadcasts it (broadcastWithdrawal). Idempotent: anything but APPROVED (or a due
 *   BROADCAST_FAILED) is skipped.
 * - `withdrawal.sweep` {organizationId?}: scheduled every minute; retries due BROADCAST_FAILED
 *   withdrawals (backoff) and follows BROADCAST ones to CONFIRMED, FAILED or
 *   REQUIRES_RECONCILIATION (sweepWithdrawals).
 */
export interface WithdrawalJobDeps {
  db: PrismaClient;
  clock: Clock;
  log: Logger;
  sealingKey: Buffer;
}

/** The handlers, as the job runner and the tests' drain helper run them (deps must carry sealingKey). */
export const withdrawalHandlers = {
  [WITHDRAWAL_BROADCAST_QUEUE]: (deps: MoneyDeps, data: WithdrawalBroadcastJob) => broadcastWithdrawal(deps, data.withdrawalId),
  [WITHDRAWAL_SWEEP_QUEUE]: (deps: MoneyDeps, data: WithdrawalSweepJob) => sweepWithdrawals(deps, data.organizationId ? { organizationId: data.organizationId } : {}),
};

export async function registerWithdrawalJobs(boss: PgBoss, deps: WithdrawalJobDeps, work: boolean): Promise<void> {
  await boss.createQueue(WITHDRAWAL_BROADCAST_QUEUE, { retryLimit: 10, retryDelay: 2, retryBackoff: true, retryDelayMax: 300, deleteAfterSeconds: 3600, notify: true });
  await boss.createQueue(WITHDRAWAL_SWEEP_QUEUE, { policy: 'singleton', retryLimit: 3, retryDelay: 10, deleteAfterSeconds: 3600 });
  if (!work) return;
  const moneyDeps: MoneyDeps = { db: deps.db, clock: deps.clock, boss, sealingKey: deps.sealingKey };
  await boss.schedule(WITHDRAWAL_SWEEP_QUEUE, '* * * * *');
  await boss.work<WithdrawalBroadcastJob>(WITHDRAWAL_BROADCAST_QUEUE, { batchSize: 4, burstWhenBatchFull: true, localConcurrency: 4 }, async (jobs) => {
    for (const job of jobs) {
      const r = await broadcastWithdrawal(moneyDeps, job.data.withdrawalId);
      if (r !== 'BROADCAST' && r !== 'SKIPPED') deps.log.info({ withdrawalId: job.data.withdrawalId, outcome: r }, 'withdrawal not broadcast');
    }
  });
  await boss.work<WithdrawalSweepJob>(WITHDRAWAL_SWEEP_QUEUE, async ([job]) => {
    await sweepWithdrawals(moneyDeps, job?.data.organizationId ? { organizationId: job.data.organizationId } : {});
  });
}
