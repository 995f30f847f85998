import type { PgBoss } from 'pg-boss';
import type { Logger } from 'pino';
import type { Clock } from '../clock';
import type { PrismaClient } from '../db/prisma';
import { isUuid } from '../ids';
import type { MoneyDeps } from '../kernel/service';
import { RELEASE_EVALUATE_QUEUE, RELEASE_SWEEP_QUEUE, type ReleaseEvaluateJob, type ReleaseSweepJob } from '../kernel/queues';
import { evaluateReleaseNow, runReleaseSweep } from './release-rules';
import { workEach } from '../kernel/work';

/**
 * Release rule jobs (registered by jobs/index.ts; the queues are created by createSettlementQueues):
 * - `release.evaluate` {transactionId}: sent when a transaction is reserved, unfrozen or a deposit
 *   resolution may have cleared a blocker (at once), and by evaluations for the next time a time
 *   condition falls due (startAfter, one job per due time). Its handler re-checks everything.
 * - `release.sweep` {organizationId?}: every minute, and after a sandbox clock advance.
 */
export interface ReleaseJobDeps {
  db: PrismaClient;
  clock: Clock;
  log: Logger;
}

/** The release.evaluate handler: answers how many milestones it released. */
export async function runReleaseEvaluationJob(deps: MoneyDeps, data: ReleaseEvaluateJob | null | undefined): Promise<number> {
  if (!data || !isUuid(data.transactionId)) return 0;
  return (await evaluateReleaseNow(deps, data.transactionId.toLowerCase())).released.length;
}

/** The release.sweep handler. Scheduled sweeps carry no data; on-demand ones may name an organization. */
export function runReleaseSweepJob(deps: MoneyDeps, data: ReleaseSweepJob | null | undefined): Promise<number> {
  const organizationId = data?.organizationId;
  return runReleaseSweep(deps, organizationId ? { organizationId } : {});
}

/** The handlers by queue, as the job runner works them (test/fixtures/settlements/testing.ts runs the same). */
export const releaseHandlers = {
  [RELEASE_EVALUATE_QUEUE]: runReleaseEvaluationJob,
  [RELEASE_SWEEP_QUEUE]: runReleaseSweepJob,
} as const;

export async function registerReleaseJobs(boss: PgBoss, deps: ReleaseJobDeps, work: boolean): Promise<void> {
  if (!work) return;
  const moneyDeps: MoneyDeps = { db: deps.db, clock: deps.clock, boss };
  // Each evaluation commits on its own and settles its job on its own (idempotent).
  await workEach<ReleaseEvaluateJob>(boss, deps.log, RELEASE_EVALUATE_QUEUE, { batchSize: 20, burstWhenBatchFull: true }, ({ data }) =>
    runReleaseEvaluationJob(moneyDeps, data),
  );
  await boss.schedule(RELEASE_SWEEP_QUEUE, '* * * * *');
  await workEach<ReleaseSweepJob>(boss, deps.log, RELEASE_SWEEP_QUEUE, {}, async ({ data }) => {
    const n = await runReleaseSweepJob(moneyDeps, data);
    if (n) deps.log.info({ released: n }, 'release sweep released milestones');
  });
}
