import type { PgBoss } from 'pg-boss';
import type { PrismaClient } from '../../db/prisma';
import type { Clock } from '../../clock';
import type { Logger } from 'pino';
import { workEach, ensureQueue } from '../../kernel/work';
import { RESERVE_REPLENISH_QUEUE } from '../../kernel/queues';
import { replenishReserves, type ReserveReplenishJob } from './reserve';

/** The handlers by queue (jobs/ registers them; test/fixtures/settlements/testing.ts drains them in tests). */
export const reserveHandlers = {
  [RESERVE_REPLENISH_QUEUE]: (deps: { db: PrismaClient; clock: Clock }, data: ReserveReplenishJob | null | undefined) => replenishReserves(deps, data),
} as const;

/** Creates the queue; with `work`, schedules the sweep every minute and works it. */
export async function registerReserveJobs(
  boss: PgBoss,
  deps: { db: PrismaClient; clock: Clock; log: Pick<Logger, 'info' | 'error'> },
  work: boolean,
): Promise<void> {
  await ensureQueue(boss, RESERVE_REPLENISH_QUEUE, { retryLimit: 5, retryDelay: 10, retryBackoff: true, deleteAfterSeconds: 3600 });
  if (!work) return;
  await boss.schedule(RESERVE_REPLENISH_QUEUE, '* * * * *');
  await workEach<ReserveReplenishJob>(boss, deps.log, RESERVE_REPLENISH_QUEUE, {}, async ({ data }) => {
    const n = await reserveHandlers[RESERVE_REPLENISH_QUEUE](deps, data);
    if (n) deps.log.info({ replenished: n }, 'network resource reserves replenished');
  });
}
