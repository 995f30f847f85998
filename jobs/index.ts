import { PgBoss, type ConstructorOptions } from 'pg-boss';
import type { Logger } from 'pino';
import type { PrismaClient } from '../src/db/prisma';
import type { Clock } from '../src/clock';
import type { Config } from '../src/config';
import { JOB_SCHEMA } from '../src/db/roles';
import { DELIVER_QUEUE } from '../src/webhooks/outbox';
import { startDeliveryWorker } from '../src/webhooks/worker';
import { deliveryDeps } from '../src/webhooks/delivery';
import { BULK_QUEUE, failBulkRedelivery, runBulkRedelivery } from '../src/webhooks/deliveries';
import { registerLedgerJobs } from '../src/ledger/jobs';
import { CHAIN_SYNC_QUEUE } from '../src/chains/sync-queue';
import { startBlockProduction } from '../src/chains/sandbox/producer';
import { registerMoneyInJobs } from '../src/deposits/jobs';
import { createSettlementQueues } from '../src/settlements/queues';
import { registerSettlementJobs } from '../src/settlements/jobs';
import { registerRefundJobs } from '../src/refunds/jobs';
import { registerReleaseJobs } from '../src/settlements/release-jobs';
import { registerReconciliationJobs } from '../src/treasury/reconciliation';
import { registerReserveJobs } from '../src/treasury/reserve';
import { registerWithdrawalJobs } from '../src/withdrawals/jobs';
import { dataOf, workEach } from './work';

/**
 * The job runner: pg-boss in its own schema of the same database. Jobs are sent inside the
 * transaction of the change that needs them (`fromPrisma(tx)`), so a rollback leaves no job.
 * Every handler is idempotent: delivery is at least once.
 *
 * Every process that changes data starts one (it sends jobs); only processes with JOBS=on work
 * the queues and run pg-boss maintenance.
 *
 * Every queue is worked through jobs/work.ts (workEach / workBatch), which logs each failed attempt
 * at level error (queue, job id, retry count and limit, retries exhausted, error); a scheduled job
 * (boss.schedule without data) carries `data: null`, which the handlers' types make explicit. The
 * webhook delivery worker fetches and completes its jobs itself (src/webhooks/worker.ts) and logs
 * its own failures the same way.
 */
export const queues = {
  purgeExpired: 'maintenance.purge-expired',
  webhookDeliver: DELIVER_QUEUE,
  webhookBulkRedeliver: BULK_QUEUE,
  chainSync: CHAIN_SYNC_QUEUE,
} as const;

export interface JobDeps {
  db: PrismaClient;
  clock: Clock;
  log: Logger;
  config: Config;
  sealingKey: Buffer;
  /** Extra trusted CA for webhook receivers (tests only). */
  webhookCa?: string;
}

/** How long a delivery job may stay active before pg-boss hands it to another worker (a crashed worker's attempt is made again). */
export const deliverExpiry = (config: Config) => Math.ceil(config.WEBHOOK_ATTEMPT_TIMEOUT_MS / 1000) * 2 + 5;

const deliveryWorkers = new WeakMap<PgBoss, { stop: () => Promise<void> }>();
const blockProducers = new WeakMap<PgBoss, { stop: () => Promise<void> }>();

/** Stops the process's job runner: the delivery worker first (its attempts in flight are recorded), then pg-boss. */
export async function stopJobs(boss: PgBoss, opts: { graceful?: boolean; timeout?: number } = {}): Promise<void> {
  await deliveryWorkers.get(boss)?.stop();
  await blockProducers.get(boss)?.stop();
  await boss.stop({ graceful: opts.graceful ?? true, timeout: opts.timeout ?? 10_000 });
}

export async function startJobs(url: string, deps: JobDeps, opts: { work: boolean; boss?: Partial<ConstructorOptions> }): Promise<PgBoss> {
  const boss = new PgBoss({
    connectionString: url,
    schema: JOB_SCHEMA,
    // The schema is the owner's (installed and migrated with the migrations, src/db/migrate.ts):
    // the service's role makes no DDL, so pg-boss only checks its version here. Queues are not
    // partitioned (a partitioned queue's createQueue makes a table).
    migrate: false,
    max: opts.work ? 10 : 4,
    supervise: opts.work,
    schedule: opts.work,
    useListenNotify: opts.work,
    ...opts.boss,
  });
  boss.on('error', (err) => deps.log.error({ err }, 'job runner error'));
  await boss.start();
  await boss.createQueue(queues.purgeExpired, { policy: 'singleton', retryLimit: 3 });
  await boss.createQueue(queues.webhookDeliver, {
    retryLimit: 100,
    retryDelay: 2,
    expireInSeconds: deliverExpiry(deps.config),
    deleteAfterSeconds: 600,
    notify: true,
  });
  await boss.createQueue(queues.webhookBulkRedeliver, { retryLimit: 5, retryDelay: 10, retryBackoff: true, notify: true });
  await registerLedgerJobs(boss, deps, opts.work);
  // chain.sync: one job per chain change (src/chains/sync-queue.ts); its handler is idempotent.
  await boss.createQueue(queues.chainSync, { retryLimit: 20, retryDelay: 2, retryBackoff: true, retryDelayMax: 300, deleteAfterSeconds: 3600, notify: true });
  await registerMoneyInJobs(boss, deps, opts.work);
  // Release, settlement and refund queues (src/settlements/queues.ts); each domain works its own.
  await createSettlementQueues(boss);
  await registerSettlementJobs(boss, deps, opts.work);
  await registerRefundJobs(boss, deps, opts.work);
  await registerReleaseJobs(boss, deps, opts.work);
  await registerReconciliationJobs(boss, deps, opts.work);
  await registerReserveJobs(boss, deps, opts.work);
  await registerWithdrawalJobs(boss, deps, opts.work);
  if (opts.work) {
    await boss.schedule(queues.purgeExpired, '17 * * * *');
    await workEach(boss, deps.log, queues.purgeExpired, {}, async () => {
      await purgeExpired(deps);
    });
    const c = deps.config;
    const worker = startDeliveryWorker(boss, deliveryDeps(deps, boss, deps.webhookCa), {
      batchSize: c.WEBHOOK_BATCH_SIZE,
      maxInFlight: c.WEBHOOK_MAX_IN_FLIGHT,
      groupConcurrency: c.WEBHOOK_ENDPOINT_CONCURRENCY,
      idlePollMs: 100,
      flushMs: 10,
    });
    deliveryWorkers.set(boss, worker);
    blockProducers.set(boss, startBlockProduction(boss, { db: deps.db, clock: deps.clock, log: deps.log, intervalMs: deps.config.SANDBOX_BLOCK_INTERVAL_MS }));
    await workEach<{ jobId: string }>(boss, deps.log, queues.webhookBulkRedeliver, {}, async (job) => {
      const { jobId } = dataOf(job);
      try {
        await runBulkRedelivery({ db: deps.db, boss, clock: deps.clock, log: deps.log }, jobId);
      } catch (err) {
        // The last retry records the failure on the job row, for the member polling it.
        if (job.retryCount >= job.retryLimit) await failBulkRedelivery(deps.db, jobId, String((err as Error).message), deps.clock.now());
        throw err;
      }
    });
  }
  return boss;
}

/** Deletes idempotency records and refresh/reset tokens past their retention. Safe to run twice. */
export async function purgeExpired({ db, clock, log }: Pick<JobDeps, 'db' | 'clock' | 'log'>): Promise<{ idempotency: number; refresh: number; reset: number; throttle: number }> {
  const now = clock.now();
  const dayAgo = new Date(now.getTime() - 24 * 3600_000);
  const idempotency = await db.idempotencyRecord.deleteMany({ where: { expiresAt: { lt: now } } });
  const refresh = await db.refreshToken.deleteMany({ where: { expiresAt: { lt: dayAgo } } });
  const reset = await db.passwordResetToken.deleteMany({ where: { expiresAt: { lt: dayAgo } } });
  // Rate-limit counters quiet for 30 days (every count has leaked away; a trusted source lapses) and not waiting.
  const monthAgo = new Date(now.getTime() - 30 * 24 * 3600_000);
  const throttle = await db.authThrottle.deleteMany({ where: { updatedAt: { lt: monthAgo }, OR: [{ blockedUntil: null }, { blockedUntil: { lt: now } }] } });
  const counts = { idempotency: idempotency.count, refresh: refresh.count, reset: reset.count, throttle: throttle.count };
  log.info(counts, 'purged expired records');
  return counts;
}
