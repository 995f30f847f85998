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
 * - `withdrawal.broadcast` {withdrawalId} or {withdrawalIds}: sent with an approval of a custodial
 *   withdrawal (one job for all a request group approved); signs and broadcasts them. Worked a fetched
 *   batch at a time: groups of up to BROADCAST_GROUP withdrawals, one database transaction each
 *   (broadcastWithdrawalGroup), each job answering its withdrawals' outcomes (runBroadcastJobs).
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

/** The most withdrawals one broadcast group takes (one database transaction, one network lock). */
export const BROADCAST_GROUP = 100;
/** The most broadcast jobs fetched at once (a job names up to a request group's 64 withdrawals). */
const BROADCAST_JOBS_FETCHED = 20;

/** What a broadcast job answers: its withdrawal's outcome, one per withdrawal of a group's job, or an Error (the job fails and is retried). */
export type BroadcastJobAnswer = StepOutcome | StepOutcome[] | Error;

/** The withdrawal ids a job names, or null when it names none (a job without data fails alone). */
function idsOf(data: WithdrawalBroadcastJob | null | undefined): string[] | null {
  if (typeof data?.withdrawalId === 'string') return [data.withdrawalId];
  const ids = data?.withdrawalIds;
  return Array.isArray(ids) && ids.length && ids.every((id) => typeof id === 'string') ? ids : null;
}

/**
 * A fetched batch of broadcast jobs: every withdrawal they name, in job order, broadcast in groups of
 * up to BROADCAST_GROUP (broadcastWithdrawalGroup: one database transaction each, each withdrawal
 * answering its own outcome, one that throws taking none of the others with it). A job answers its
 * withdrawal's outcome (`withdrawalId`), the outcome of each of its withdrawals (`withdrawalIds`), or
 * the first Error among them: the job then fails and pg-boss retries it, and the retry skips the
 * withdrawals already moved (anything but APPROVED, or a due BROADCAST_FAILED, is SKIPPED).
 */
export async function runBroadcastJobs(deps: MoneyDeps, jobs: readonly { data: WithdrawalBroadcastJob | null | undefined }[]): Promise<BroadcastJobAnswer[]> {
  const named = jobs.map((j) => idsOf(j.data));
  const ids = named.flatMap((x) => x ?? []);
  const outcomes: (StepOutcome | Error)[] = [];
  for (let i = 0; i < ids.length; i += BROADCAST_GROUP) outcomes.push(...(await broadcastWithdrawalGroup(deps, ids.slice(i, i + BROADCAST_GROUP))));
  let k = 0;
  return jobs.map((j, i): BroadcastJobAnswer => {
    const x = named[i];
    if (!x) return new Error('a withdrawal.broadcast job names no withdrawal (withdrawalId or withdrawalIds)');
    const mine = outcomes.slice(k, (k += x.length));
    const failed = mine.find((o): o is Error => o instanceof Error);
    if (failed) return failed;
    return typeof j.data?.withdrawalId === 'string' ? (mine[0] as StepOutcome) : (mine as StepOutcome[]);
  });
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
  // One group at a time per process (issue 22, session 9; two before): two groups of one network passed
  // its sandbox lock and its reserve row one after the other anyway; with one, the jobs that arrive
  // while a group runs go together in the next, larger group (fewer statements per withdrawal).
  await workGroup<WithdrawalBroadcastJob>(
    boss,
    deps.log,
    WITHDRAWAL_BROADCAST_QUEUE,
    { batchSize: BROADCAST_JOBS_FETCHED, burstWhenBatchFull: true, localConcurrency: 1 },
    async (jobs: JobOf<WithdrawalBroadcastJob>[]) => {
      const results = await withdrawalHandlers[WITHDRAWAL_BROADCAST_QUEUE](moneyDeps, jobs);
      for (const [i, r] of results.entries()) {
        if (r instanceof Error) continue;
        const ids = idsOf(jobs[i]!.data)!;
        for (const [j, outcome] of (Array.isArray(r) ? r : [r]).entries())
          if (outcome !== 'BROADCAST' && outcome !== 'SKIPPED') deps.log.info({ withdrawalId: ids[j], outcome }, 'withdrawal not broadcast');
      }
      return results;
    },
  );
  await workEach<WithdrawalSweepJob>(boss, deps.log, WITHDRAWAL_SWEEP_QUEUE, {}, async ({ data }) => {
    const counts = await withdrawalHandlers[WITHDRAWAL_SWEEP_QUEUE](moneyDeps, data);
    const moved = Object.entries(counts).filter(([k, n]) => n && k !== 'WAITING' && k !== 'SKIPPED');
    if (moved.length) deps.log.info(Object.fromEntries(moved), 'withdrawal sweep');
  });
}
