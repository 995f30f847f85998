import { PgBoss } from 'pg-boss';
import type { Logger } from 'pino';
import type { PrismaClient } from '../src/db/prisma';
import type { Clock } from '../src/clock';

/**
 * The job runner: pg-boss in its own schema of the same database. Jobs are sent inside the
 * transaction of the change that needs them (see `fromPrisma` in later domains), so a rollback
 * leaves no job. Every handler is idempotent: delivery is at least once.
 */
export const queues = {
  purgeExpired: 'maintenance.purge-expired',
} as const;

export interface JobDeps {
  db: PrismaClient;
  clock: Clock;
  log: Logger;
}

export async function startJobs(url: string, deps: JobDeps, opts: { work: boolean }): Promise<PgBoss> {
  const boss = new PgBoss({ connectionString: url, schema: 'pgboss', max: 4 });
  boss.on('error', (err) => deps.log.error({ err }, 'job runner error'));
  await boss.start();
  await boss.createQueue(queues.purgeExpired, { policy: 'singleton', retryLimit: 3 });
  if (opts.work) {
    await boss.schedule(queues.purgeExpired, '17 * * * *');
    await boss.work(queues.purgeExpired, async () => {
      await purgeExpired(deps);
    });
  }
  return boss;
}

/** Deletes idempotency records and refresh/reset tokens past their retention. Safe to run twice. */
export async function purgeExpired({ db, clock, log }: JobDeps): Promise<{ idempotency: number; refresh: number; reset: number }> {
  const now = clock.now();
  const dayAgo = new Date(now.getTime() - 24 * 3600_000);
  const idempotency = await db.idempotencyRecord.deleteMany({ where: { expiresAt: { lt: now } } });
  const refresh = await db.refreshToken.deleteMany({ where: { expiresAt: { lt: dayAgo } } });
  const reset = await db.passwordResetToken.deleteMany({ where: { expiresAt: { lt: dayAgo } } });
  const counts = { idempotency: idempotency.count, refresh: refresh.count, reset: reset.count };
  log.info(counts, 'purged expired records');
  return counts;
}
