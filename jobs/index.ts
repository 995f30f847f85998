import { PgBoss, type ConstructorOptions } from 'pg-boss';
import type { Logger } from 'pino';
import type { PrismaClient } from '../src/db/prisma';
import type { Clock } from '../src/clock';
import type { Config } from '../src/config';
import { JOB_SCHEMA } from '../src/db/roles';
import { DELIVER_QUEUE } from '../src/kernel/queues';
import { startDeliveryWorker } from '../src/webhooks/worker';
import { deliveryDeps } from '../src/webhooks/delivery';
import { BULK_QUEUE } from '../src/kernel/queues';
import { failBulkRedelivery, runBulkRedelivery } from '../src/webhooks/deliveries';
import { registerLedgerJobs } from '../src/ledger/ledger.jobs';
import { CHAIN_SYNC_QUEUE, endDetectionPauses } from '../src/kernel/queues';
import { startBlockProduction } from '../src/chains/sandbox/producer';
import { registerMoneyInJobs } from '../src/deposits/deposits.jobs';
import { createSettlementQueues } from '../src/kernel/queues';
import { registerSettlementJobs } from '../src/settlements/settlements.jobs';
import { registerRefundJobs } from '../src/refunds/refunds.jobs';
import { registerReleaseJobs } from '../src/release/release-rules.jobs';
import { registerReconciliationJobs } from '../src/treasury/reconciliation/reconciliation.jobs';
import { registerReserveJobs } from '../src/treasury/costs/reserve.jobs';
import { registerFeeBumpJobs } from '../src/treasury/fee-bumps.jobs';
import { registerWithdrawalJobs } from '../src/withdrawals/withdrawals.jobs';
import { dataOf, ensureQueue, heldJobs, JOB_SUPERVISE_SECONDS, propagateTraces, workEach } from '../src/kernel/work';
import { RECOVER_QUEUE } from '../src/kernel/queues';
import { registerEvmJobs } from '../src/chains/evm/evm.jobs';
import { configureEvmNetworks } from '../src/chains/evm/config';
import { evmNetworksOf } from '../src/config';
import { RECOVERY_INTERVAL_MS, recoverOperations } from '../src/operations/recovery';

/**
 * The job runner: pg-boss in its own schema of the same database. Jobs are sent inside the
 * transaction of the change that needs them (`fromPrisma(tx)`), so a rollback leaves no job.
 * Every handler is idempotent: delivery is at least once.
 *
 * Every process that changes data starts one (it sends jobs); only processes with JOBS=on work
 * the queues and run pg-boss maintenance.
 *
 * Every queue is worked through src/kernel/work.ts (workEach / workBatch), which logs each failed attempt
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

/** What a process's job runner runs besides pg-boss's workers, stopped first by stopJobs. */
const runners = new WeakMap<PgBoss, { stop: () => Promise<void> | void }[]>();
/** Job runners being stopped: a late error of pg-boss (a handler finishing after its pool closed) is no fault then. */
const stopping = new WeakSet<PgBoss>();

/**
 * Stops the process's job runner (src/shutdown.ts): the timers (block production, recovery ticks)
 * and the delivery worker first (its attempts in flight are recorded), then pg-boss, waiting up to
 * `timeout` for the handlers running; the jobs still held then are failed by pg-boss into `retry`
 * ("pg-boss shut down while active"). Answers those jobs (id → queue), for the caller to make them
 * runnable at once (handBack).
 */
export async function stopJobs(boss: PgBoss, opts: { graceful?: boolean; timeout?: number } = {}): Promise<Map<string, string>> {
  stopping.add(boss);
  for (const r of runners.get(boss) ?? []) await r.stop();
  const deadline = Date.now() + (opts.timeout ?? 10_000);
  const stopped = boss.stop({ graceful: opts.graceful ?? true, timeout: Math.max(1000, deadline - Date.now()) });
  // A chain.sync handler pausing after sends alone (pauseAfterSendsAlone) returns at once: its jobs complete.
  endDetectionPauses();
  await stopped;
  return heldJobs(boss);
}

export function isStopping(boss: PgBoss): boolean {
  return stopping.has(boss);
}

/**
 * Makes the jobs a stopped runner handed back (`retry`, "pg-boss shut down while active") runnable
 * now rather than after their queue's retry delay: another process, or the next start, takes them at
 * once. pg-boss has no public call for this (a `retry` job waits for start_after): one UPDATE of its
 * job table per queue, by primary key. Answers how many were made runnable.
 */
export async function handBackJobs(db: PrismaClient, jobs: Map<string, string>): Promise<number> {
  const byQueue = new Map<string, string[]>();
  for (const [id, queue] of jobs) byQueue.set(queue, [...(byQueue.get(queue) ?? []), id]);
  let n = 0;
  for (const [queue, ids] of byQueue)
    n += await db.$executeRawUnsafe(
      `UPDATE "${JOB_SCHEMA}".job SET start_after = now() WHERE name = $1 AND id = ANY($2::uuid[]) AND state = 'retry'`,
      queue,
      ids,
    );
  return n;
}

export async function startJobs(url: string, deps: JobDeps, opts: { work: boolean; boss?: Partial<ConstructorOptions> }): Promise<PgBoss> {
  // The EVM networks' settings before any worker starts: a chain.sync worked before them failed as if
  // this process had none (a start-up race the EVM process test caught).
  configureEvmNetworks(evmNetworksOf(deps.config));
  const boss = new PgBoss({
    connectionString: url,
    schema: JOB_SCHEMA,
    // The schema is the owner's (installed and migrated with the migrations, src/db/migrate.ts):
    // the service's role makes no DDL, so pg-boss only checks its version here. Queues are not
    // partitioned (a partitioned queue's createQueue makes a table).
    migrate: false,
    max: opts.work ? 10 : 4,
    supervise: opts.work,
    // A killed worker's job is found by its stale heartbeat at the next supervise pass (src/kernel/work.ts).
    superviseIntervalSeconds: JOB_SUPERVISE_SECONDS,
    monitorIntervalSeconds: JOB_SUPERVISE_SECONDS,
    schedule: opts.work,
    useListenNotify: opts.work,
    ...opts.boss,
  });
  // While stopping, a handler that outlived the shutdown timeout completes against a closed pool: its
  // job was already handed back (retry) and runs again, finding nothing to do.
  propagateTraces(boss);
  boss.on('error', (err) => (stopping.has(boss) ? deps.log.warn({ err }, 'job runner error while stopping') : deps.log.error({ err }, 'job runner error')));
  await boss.start();
  await ensureQueue(boss, queues.purgeExpired, { policy: 'singleton', retryLimit: 3 });
  await boss.createQueue(queues.webhookDeliver, {
    retryLimit: 100,
    retryDelay: 2,
    expireInSeconds: deliverExpiry(deps.config),
    deleteAfterSeconds: 600,
    notify: true,
  });
  await ensureQueue(boss, queues.webhookBulkRedeliver, { retryLimit: 5, retryDelay: 10, retryBackoff: true, notify: true });
  await registerLedgerJobs(boss, deps, opts.work);
  // chain.sync: one job per chain change (src/kernel/queues.ts); its handler is idempotent.
  await ensureQueue(boss, queues.chainSync, { retryLimit: 20, retryDelay: 2, retryBackoff: true, retryDelayMax: 300, deleteAfterSeconds: 3600, notify: true });
  await ensureQueue(boss, RECOVER_QUEUE, { policy: 'singleton', retryLimit: 0, deleteAfterSeconds: 600 });
  await registerMoneyInJobs(boss, deps, opts.work);
  // Release, settlement and refund queues (src/kernel/queues.ts); each domain works its own.
  await createSettlementQueues(boss);
  await registerSettlementJobs(boss, deps, opts.work);
  await registerRefundJobs(boss, deps, opts.work);
  await registerReleaseJobs(boss, deps, opts.work);
  await registerReconciliationJobs(boss, deps, opts.work);
  await registerReserveJobs(boss, deps, opts.work);
  await registerWithdrawalJobs(boss, deps, opts.work);
  // EVM watchers (issue 18, src/chains/evm/evm.jobs.ts): one live job per configured network.
  const evmWatch = await registerEvmJobs(boss, deps, opts.work);
  // Gas bumping of the platform's stuck EVM transactions (src/treasury/fee-bumps.ts), every minute.
  await registerFeeBumpJobs(boss, deps, opts.work);
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
    const producer = startBlockProduction(boss, { db: deps.db, clock: deps.clock, log: deps.log, intervalMs: deps.config.SANDBOX_BLOCK_INTERVAL_MS });
    const recovery = await startRecovery(boss, deps);
    runners.set(boss, [producer, recovery, worker, ...(evmWatch ? [evmWatch] : [])]);
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

/**
 * The recovery sweep (src/operations/recovery.ts) of a worker process: asked for at start and every
 * RECOVERY_INTERVAL_MS by a timer that sends `operations.recover` with a singleton slot (one job per
 * interval across every process), worked on a singleton queue (never two sweeps at once).
 */
async function startRecovery(boss: PgBoss, deps: JobDeps): Promise<{ stop: () => void }> {
  await workEach(boss, deps.log, RECOVER_QUEUE, {}, async () => {
    await recoverOperations({ db: deps.db, boss, clock: deps.clock, log: deps.log }, { stuckAfterSeconds: deps.config.STUCK_AFTER_SECONDS });
  });
  const tick = () => {
    if (stopping.has(boss)) return;
    boss
      .send(RECOVER_QUEUE, {}, { singletonKey: 'tick', singletonSeconds: Math.floor(RECOVERY_INTERVAL_MS / 1000) })
      .catch((err: unknown) => deps.log.error({ err }, 'recovery sweep: could not queue a round'));
  };
  const timer = setInterval(tick, RECOVERY_INTERVAL_MS);
  timer.unref();
  tick();
  return { stop: () => clearInterval(timer) };
}

/** Deletes idempotency records and refresh/reset tokens past their retention. Safe to run twice. */
export async function purgeExpired({
  db,
  clock,
  log,
}: Pick<JobDeps, 'db' | 'clock' | 'log'>): Promise<{ idempotency: number; refresh: number; reset: number; throttle: number; requestLimits: number }> {
  const now = clock.now();
  const dayAgo = new Date(now.getTime() - 24 * 3600_000);
  const idempotency = await db.idempotencyRecord.deleteMany({ where: { expiresAt: { lt: now } } });
  const refresh = await db.refreshToken.deleteMany({ where: { expiresAt: { lt: dayAgo } } });
  const reset = await db.passwordResetToken.deleteMany({ where: { expiresAt: { lt: dayAgo } } });
  // Rate-limit counters quiet for 30 days (every count has leaked away; a trusted source lapses) and not waiting.
  const monthAgo = new Date(now.getTime() - 30 * 24 * 3600_000);
  const throttle = await db.authThrottle.deleteMany({ where: { updatedAt: { lt: monthAgo }, OR: [{ blockedUntil: null }, { blockedUntil: { lt: now } }] } });
  // Request rate-limit rows whose window is over (windows are at most an hour): the key's next request starts a new one anyway.
  const requestLimits = await db.requestRateLimit.deleteMany({ where: { windowStart: { lt: new Date(now.getTime() - 2 * 3600_000) } } });
  const counts = { idempotency: idempotency.count, refresh: refresh.count, reset: reset.count, throttle: throttle.count, requestLimits: requestLimits.count };
  log.info(counts, 'purged expired records');
  return counts;
}
