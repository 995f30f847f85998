import { fromPrisma, type Job, type PgBoss } from 'pg-boss';
import { DELIVER_QUEUE } from '../kernel/queues';
import { type DeliverJob } from './outbox';
import { attemptDelivery, prepareAttempts, recordAttempts, type DeliveryDeps } from './delivery';

/**
 * The delivery worker of a process. It does not use `boss.work`, whose handler holds a whole batch
 * until its slowest attempt ends (one slow receiver would then hold up every delivery fetched with
 * it). Instead it streams:
 *
 * - it fetches jobs while fewer than `maxInFlight` attempts are running, at most
 *   `groupConcurrency` active jobs per endpoint across all workers (pg-boss group concurrency);
 * - each attempt runs on its own; its outcome joins the next flush;
 * - a flush (every `flushMs`, or at once when `batchSize` outcomes wait) records the outcomes and
 *   completes their jobs in ONE transaction.
 *
 * A job fetched and never completed (the process died) becomes active-expired and pg-boss gives it
 * to another worker: the attempt is made again and recorded once.
 *
 * A receiver's refusal or timeout is an attempt outcome (recorded on the delivery, retried on its
 * schedule), not a failure of the job. A fault of the worker itself (fetching, reading the
 * deliveries, preparing an attempt, recording outcomes) is logged at level error with the queue and
 * the job ids it leaves uncompleted, as src/kernel/work.ts logs the failures of every other queue.
 */
export interface DeliveryWorkerOptions {
  batchSize: number;
  maxInFlight: number;
  groupConcurrency: number;
  /** Wait between fetches when there was nothing to do. */
  idlePollMs: number;
  flushMs: number;
}

export function startDeliveryWorker(boss: PgBoss, deps: DeliveryDeps, opts: DeliveryWorkerOptions): { stop: () => Promise<void> } {
  let stopped = false;
  let inFlight = 0;
  let wake: (() => void) | null = null;
  const waiting: { outcome: Awaited<ReturnType<typeof attemptDelivery>>; jobId: string }[] = [];
  const toComplete: string[] = [];
  let flushing: Promise<void> | null = null;
  let flushTimer: NodeJS.Timeout | null = null;
  boss.on('stopped', () => (stopped = true));

  const sleep = (ms: number) =>
    new Promise<void>((r) => {
      const t = setTimeout(() => {
        wake = null;
        r();
      }, ms);
      wake = () => {
        clearTimeout(t);
        wake = null;
        r();
      };
    });

  async function flush(): Promise<void> {
    if (flushTimer) clearTimeout(flushTimer);
    flushTimer = null;
    if (!waiting.length && !toComplete.length) return;
    const batch = waiting.splice(0, waiting.length);
    const done = toComplete.splice(0, toComplete.length);
    const ids = [...batch.map((b) => b.jobId), ...done];
    try {
      await recordAttempts(
        deps,
        batch.map((b) => b.outcome),
        (tx) => boss.complete(DELIVER_QUEUE, ids, null, { db: fromPrisma(tx as never) }),
      );
    } catch (err) {
      // Not recorded, jobs not completed: they expire and are attempted again.
      deps.log.error({ err, queue: DELIVER_QUEUE, jobIds: ids }, 'recording delivery attempts failed (their jobs expire and are attempted again)');
    }
  }
  function scheduleFlush(): void {
    if (waiting.length + toComplete.length >= opts.batchSize) void runFlush();
    else
      flushTimer ??= setTimeout(() => {
        flushTimer = null;
        void runFlush();
      }, opts.flushMs);
  }
  function runFlush(): Promise<void> {
    // One flush at a time; another is scheduled if outcomes arrive meanwhile.
    flushing ??= flush().finally(() => {
      flushing = null;
      // The completed jobs freed their endpoints' group slots: fetch again now, not after idlePollMs
      // (with every slot of an endpoint taken, a fetch finds nothing until the flush completes them).
      wake?.();
      if (waiting.length || toComplete.length) scheduleFlush();
    });
    return flushing;
  }

  async function loop(): Promise<void> {
    while (!stopped) {
      const room = opts.maxInFlight - inFlight;
      if (room <= 0) {
        await sleep(opts.idlePollMs);
        continue;
      }
      let jobs: Job<DeliverJob>[];
      try {
        jobs = await boss.fetch<DeliverJob>(DELIVER_QUEUE, { batchSize: Math.min(opts.batchSize, room), groupConcurrency: opts.groupConcurrency });
      } catch (err) {
        if (!stopped) deps.log.error({ err, queue: DELIVER_QUEUE }, 'fetching delivery jobs failed');
        await sleep(1000);
        continue;
      }
      if (!jobs.length) {
        await sleep(opts.idlePollMs);
        continue;
      }
      let prepared: Awaited<ReturnType<typeof prepareAttempts>>;
      try {
        prepared = await prepareAttempts(
          deps,
          jobs.map((j) => j.data),
        );
      } catch (err) {
        deps.log.error({ err, queue: DELIVER_QUEUE, jobIds: jobs.map((j) => j.id) }, 'reading deliveries failed (their jobs expire and are attempted again)');
        await sleep(1000);
        continue;
      }
      const byKey = new Map(jobs.map((j) => [`${j.data.deliveryId}:${j.data.attempt}`, j.id]));
      const started = new Set<string>();
      for (const item of prepared.due) {
        const key = `${item.job.deliveryId}:${item.job.attempt}`;
        const jobId = byKey.get(key)!;
        started.add(jobId);
        inFlight++;
        attemptDelivery(deps, item)
          .then((outcome) => waiting.push({ outcome, jobId }))
          .catch((err: unknown) =>
            deps.log.error(
              { err, queue: DELIVER_QUEUE, jobId, deliveryId: item.job.deliveryId },
              'delivery attempt failed before sending (its job expires and is attempted again)',
            ),
          )
          .finally(() => {
            inFlight--;
            scheduleFlush();
            wake?.();
          });
      }
      // Jobs with nothing to do (stale, duplicate, put back for later) complete with the next flush.
      for (const j of jobs) if (!started.has(j.id)) toComplete.push(j.id);
      scheduleFlush();
    }
  }

  const running = loop();
  return {
    async stop() {
      stopped = true;
      wake?.();
      await running;
      while (inFlight > 0) await new Promise((r) => setTimeout(r, 20));
      await runFlush();
    },
  };
}
