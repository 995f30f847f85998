import type { PgBoss } from 'pg-boss';
import type { Logger } from 'pino';
import { workEach, ensureQueue } from '../../kernel/work';
import type { MoneyDeps } from '../../kernel/service';
import { RECONCILE_QUEUE } from '../../kernel/queues';
import { RECONCILE_SCHEDULE, reconcileJob } from './reconciliation';

/**
 * The scheduled reconciliation (jobs/index.ts): queue treasury.reconcile, hourly; a singleton queue,
 * so two runs never overlap. Processes that only send jobs create the queue and nothing else.
 */
export async function registerReconciliationJobs(
  boss: PgBoss,
  deps: { db: MoneyDeps['db']; clock: MoneyDeps['clock']; log: Pick<Logger, 'error' | 'info'> },
  work: boolean,
): Promise<void> {
  // A whole reconciliation may take minutes: its attempt is bounded at 15 minutes (its heartbeat still finds a dead worker in seconds).
  await ensureQueue(boss, RECONCILE_QUEUE, { policy: 'singleton', retryLimit: 2, retryDelay: 60, expireInSeconds: 900 });
  if (!work) return;
  await boss.schedule(RECONCILE_QUEUE, RECONCILE_SCHEDULE);
  await workEach(boss, deps.log, RECONCILE_QUEUE, {}, async () => {
    await reconcileJob({ db: deps.db, clock: deps.clock, boss });
  });
}
