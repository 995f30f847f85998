import type { PgBoss } from 'pg-boss';
import type { Logger } from 'pino';
import type { PrismaClient } from '../db/prisma';
import type { Clock } from '../clock';
import { ensureQueue, workEach } from '../kernel/work';
import { FEE_BUMP_QUEUE } from '../kernel/queues';
import { bumpStuckTransactions } from './fee-bumps';

/** Creates the `treasury.fee-bump` queue (one run at a time); with `work`, schedules it every minute and works it. */
export async function registerFeeBumpJobs(
  boss: PgBoss,
  deps: { db: PrismaClient; clock: Clock; log: Logger; sealingKey: Buffer },
  work: boolean,
): Promise<void> {
  await ensureQueue(boss, FEE_BUMP_QUEUE, { policy: 'singleton', retryLimit: 2, retryDelay: 10, deleteAfterSeconds: 3600 });
  if (!work) return;
  await boss.schedule(FEE_BUMP_QUEUE, '* * * * *');
  await workEach(boss, deps.log, FEE_BUMP_QUEUE, {}, async () => {
    await bumpStuckTransactions({ ...deps, boss });
  });
}
