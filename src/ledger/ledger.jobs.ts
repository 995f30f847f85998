import type { PgBoss } from 'pg-boss';
import type { Logger } from 'pino';
import type { PrismaClient } from '../db/prisma';
import type { Clock } from '../clock';
import { expireHolds } from './ledger';
import { workEach, ensureQueue } from '../kernel/work';
import { EXPIRE_HOLDS_QUEUE } from '../kernel/queues';

export async function registerLedgerJobs(boss: PgBoss, deps: { db: PrismaClient; clock: Clock; log: Logger }, work: boolean): Promise<void> {
  await ensureQueue(boss, EXPIRE_HOLDS_QUEUE, { policy: 'singleton', retryLimit: 3, retryDelay: 5 });
  if (!work) return;
  await boss.schedule(EXPIRE_HOLDS_QUEUE, '* * * * *');
  await workEach(boss, deps.log, EXPIRE_HOLDS_QUEUE, {}, async () => {
    const expired = await expireHolds(deps.db, deps.clock.now());
    if (expired) deps.log.info({ expired }, 'ledger holds expired');
  });
}
