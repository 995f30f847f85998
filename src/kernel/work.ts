import type { JobResult, JobWithMetadata, PgBoss, Queue, WorkOptions } from 'pg-boss';
import type { Logger } from 'pino';
import { contextOfJob, inSpan, metrics, SpanKind, traceCarrier, withTrace } from './telemetry';

/**
 * The one way a queue is worked (every domain registers its workers through these, never through
 * `boss.work` directly: workEach or workBatch). pg-boss swallows a handler's exception: it marks the job failed (or
 * retry) and logs nothing, so a job failing every minute is invisible. Here every throwing attempt
 * is logged once, at level error, with the queue, the job id, the retry count and limit, whether
 * the retries are exhausted, and the error; then the job fails as before and pg-boss retries it.
 *
 * The job's data is never logged (it may name anything; the job id finds it in pgboss.job).
 *
 * Handlers see `data: T | null`: a job created by `boss.schedule(queue, cron)` without data
 * carries `null`, and the type makes every handler say what it does then.
 */
export type JobOf<T> = JobWithMetadata<T | null>;

/** Options of a worker: pg-boss's, without those this module sets (metadata, per-job results). */
export type WorkerOptions = Omit<WorkOptions, 'includeMetadata' | 'perJobResults' | 'transactional' | 'transactionTimeoutSeconds'>;

/**
 * Liveness of every queue worked by `work()` (docs/decisions.md, crash recovery): a worker refreshes
 * the heartbeat of the jobs it holds every JOB_HEARTBEAT_SECONDS / 2; pg-boss's supervisor (every
 * JOB_SUPERVISE_SECONDS, jobs/index.ts) fails a job whose heartbeat is older than
 * JOB_HEARTBEAT_SECONDS into `retry`, so the job of a killed process runs again within about
 * 10 + 5 + its retry delay seconds, while a live worker's job, however long, keeps its claim.
 * `expireInSeconds` bounds one attempt of a live but hung handler: above the longest a money handler
 * can take (its database transaction: TX_OPTIONS, 60 s, plus 20 s waiting for a connection).
 */
export const JOB_HEARTBEAT_SECONDS = 10;
export const JOB_EXPIRE_SECONDS = 120;
/** pg-boss's supervise and monitor interval (constructor options; default 60 s). */
export const JOB_SUPERVISE_SECONDS = 5;
/**
 * How often an idle worker of a queue with `notify: true` fetches anyway (pg-boss's
 * `notifyPollingIntervalSeconds`; its default is 30 s, "a slow backstop"). NOTIFY wakes a worker
 * only for a job sent or inserted: a job that becomes runnable later — a `retry` whose delay has
 * passed, above all the job of a killed worker once its heartbeat went stale — is found by this poll
 * alone. At 30 s a killed worker's settlement ran again about 38 s after the kill (21 s of it runnable
 * and waiting); at 2 s, pg-boss's own poll of a queue without NOTIFY, a retry delay means what it says
 * (docs/decisions.md, "Recovery polls").
 */
export const JOB_POLL_SECONDS = 2;

/** The polling options of every worker here: JOB_POLL_SECONDS unless it sets its own (its base poll stays the floor). */
function polling(options: WorkerOptions): WorkerOptions {
  return { ...options, notifyPollingIntervalSeconds: options.notifyPollingIntervalSeconds ?? Math.max(JOB_POLL_SECONDS, options.pollingIntervalSeconds ?? 2) };
}

type QueueOptions = Omit<Queue, 'name'>;

/**
 * Creates a queue worked by `work()` (workEach, workBatch) with the liveness above (`options` may
 * set its own expireInSeconds), and brings an existing queue's liveness to these values: createQueue
 * leaves an existing queue as it is, and a database made before this setting must not keep its
 * 15-minute expiry. A job carries the values of its queue when it is sent.
 */
export async function ensureQueue(boss: PgBoss, name: string, options: QueueOptions = {}): Promise<void> {
  const liveness = { heartbeatSeconds: JOB_HEARTBEAT_SECONDS, expireInSeconds: options.expireInSeconds ?? JOB_EXPIRE_SECONDS };
  await boss.createQueue(name, { ...options, ...liveness });
  const [current] = await boss.getQueues([name]);
  if (current && (current.heartbeatSeconds !== liveness.heartbeatSeconds || current.expireInSeconds !== liveness.expireInSeconds))
    await boss.updateQueue(name, liveness);
}

/**
 * The work of a process's workers, for its shutdown (src/shutdown.ts): the jobs whose handler has not
 * returned yet (pg-boss's graceful stop fails them into `retry` once its timeout passes), and the
 * handlers still running (their database work must end before the pool closes).
 */
interface Held {
  jobs: Map<string, string>;
  running: Set<Promise<unknown>>;
}
const held = new WeakMap<PgBoss, Held>();
function heldOf(boss: PgBoss): Held {
  let h = held.get(boss);
  if (!h) held.set(boss, (h = { jobs: new Map(), running: new Set() }));
  return h;
}
/** The jobs (id → queue) this process's workers hold now. */
export function heldJobs(boss: PgBoss): Map<string, string> {
  return new Map(heldOf(boss).jobs);
}
/** Resolves when every handler running now has returned, or after `timeoutMs`: answers whether they all returned. */
export async function handlersSettled(boss: PgBoss, timeoutMs: number): Promise<boolean> {
  const running = [...heldOf(boss).running];
  if (!running.length) return true;
  let timer: NodeJS.Timeout | undefined;
  const done = await Promise.race([
    Promise.allSettled(running).then(() => true),
    new Promise<boolean>((r) => (timer = setTimeout(() => r(false), Math.max(0, timeoutMs)))),
  ]);
  clearTimeout(timer);
  return done;
}
/** Runs a batch handler, recording its jobs and its promise as held until it returns. */
async function holding<R>(boss: PgBoss, queue: string, jobs: { id: string }[], run: () => Promise<R>): Promise<R> {
  const h = heldOf(boss);
  for (const j of jobs) h.jobs.set(j.id, queue);
  const p = run();
  h.running.add(p);
  try {
    return await p;
  } finally {
    h.running.delete(p);
    for (const j of jobs) h.jobs.delete(j.id);
  }
}

/** What pg-boss wrote on a job it failed itself (no handler threw): a killed worker, a hung handler, a shutdown. */
const LOST_ATTEMPT = ['job heartbeat timeout', 'job timed out'] as const;
const HANDED_BACK = 'pg-boss shut down while active';
function lostReason(output: unknown): string | null {
  const value = (output as { value?: unknown } | null | undefined)?.value;
  const message = typeof value === 'string' ? value : (value as { message?: unknown } | null | undefined)?.message;
  if (typeof message !== 'string') return null;
  return (LOST_ATTEMPT as readonly string[]).includes(message) || message === HANDED_BACK ? message : null;
}

/**
 * A job run again after pg-boss failed its previous attempt without an exception (its worker died or
 * hung: `job heartbeat timeout`, `job timed out`; or a shutdown handed it back): the lost attempt is
 * logged here, at level error (a shutdown's hand-back at info), so no failure stays only in
 * pgboss.job.output.
 */
export function logLostAttempt(
  log: Pick<Logger, 'error' | 'info'>,
  queue: string,
  job: { id: string; retryCount?: number; retryLimit?: number; output?: unknown },
): void {
  if (!job.retryCount) return;
  const reason = lostReason(job.output);
  if (!reason) return;
  const line = { queue, jobId: job.id, retryCount: job.retryCount, retryLimit: job.retryLimit ?? 0, reason };
  if (reason === HANDED_BACK) log.info(line, `job handed back by a shutdown, running it again: ${queue}`);
  else log.error(line, `job attempt lost (${reason}), running it again: ${queue}`);
}

/** Logs one failed attempt of a job at level error (see above). */
export function logJobFailure(log: Pick<Logger, 'error'>, queue: string, job: { id: string; retryCount?: number; retryLimit?: number }, err: unknown): void {
  const retryCount = job.retryCount ?? 0;
  const retryLimit = job.retryLimit ?? 0;
  const retriesExhausted = retryCount >= retryLimit;
  log.error(
    { queue, jobId: job.id, retryCount, retryLimit, retriesExhausted, err },
    retriesExhausted ? `job failed: ${queue}, retries exhausted` : `job failed: ${queue}, will be retried`,
  );
}

/**
 * Runs a handler in a span (child of the trace that sent the first job, when its data carries one)
 * and counts its jobs' outcome and the handler's duration (job_runs_total, job_duration_seconds).
 */
async function measured<R>(queue: string, jobs: { id: string; data: unknown }[], run: () => Promise<R>): Promise<R> {
  const started = performance.now();
  let outcome = 'failed';
  try {
    const r = await inSpan(
      `job ${queue}`,
      { 'messaging.destination.name': queue, 'messaging.batch.message_count': jobs.length, 'job.id': jobs[0]?.id ?? '' },
      run,
      {
        kind: SpanKind.CONSUMER,
        parent: contextOfJob(jobs[0]?.data),
      },
    );
    outcome = 'completed';
    return r;
  } finally {
    metrics.jobRuns.inc({ queue, outcome }, jobs.length);
    metrics.jobDuration.observe({ queue }, (performance.now() - started) / 1000);
  }
}

/**
 * When a trace is recorded, a job sent from it carries the trace context in its data (key
 * JOB_TRACE_KEY, a W3C traceparent), so the job's span (measured above) and a webhook attempt are
 * children of the request that sent them. Nothing is added when tracing is off or not sampled.
 */
export function propagateTraces(boss: PgBoss): void {
  const send = boss.send.bind(boss) as (...a: unknown[]) => Promise<string | null>;
  boss.send = ((...a: unknown[]) => (typeof a[0] === 'string' ? send(a[0], withTrace(a[1]), ...a.slice(2)) : send(...a))) as typeof boss.send;
  const insert = boss.insert.bind(boss) as (...a: unknown[]) => Promise<unknown>;
  boss.insert = ((name: string, jobs: { data?: unknown }[], ...rest: unknown[]) =>
    insert(name, traceCarrier() ? jobs.map((j) => ({ ...j, data: withTrace(j.data) })) : jobs, ...rest)) as typeof boss.insert;
}

/**
 * Works `queue` job by job: a fetched batch (options.batchSize, default 1) runs one job after
 * another, each settled on its own. A job whose handler throws is logged and fails alone (pg-boss
 * retries it per the queue's policy); the others of its batch complete.
 */
export function workEach<T>(
  boss: PgBoss,
  log: Pick<Logger, 'error' | 'info'>,
  queue: string,
  options: WorkerOptions,
  handler: (job: JobOf<T>) => Promise<unknown>,
): Promise<string> {
  return runGroup<T>(boss, log, queue, options, async (jobs) => {
    const answers: unknown[] = [];
    for (const job of jobs) {
      try {
        await measured(queue, [job], () => handler(job));
        answers.push(undefined);
      } catch (err) {
        answers.push(err instanceof Error ? err : new Error(String(err)));
      }
    }
    return answers;
  });
}

/**
 * Works `queue` a fetched batch at a time, with one answer per job: the handler takes every job
 * fetched at once (to run them as one group, e.g. one database transaction for many settlements)
 * and answers, in order, an Error for each job that failed (logged, retried by pg-boss alone) or
 * anything else for one that completed. A throw fails the whole batch.
 */
export function workGroup<T>(
  boss: PgBoss,
  log: Pick<Logger, 'error' | 'info'>,
  queue: string,
  options: WorkerOptions,
  handler: (jobs: JobOf<T>[]) => Promise<unknown[]>,
): Promise<string> {
  return runGroup<T>(boss, log, queue, options, (jobs) => measured(queue, jobs, () => handler(jobs)));
}

function runGroup<T>(
  boss: PgBoss,
  log: Pick<Logger, 'error' | 'info'>,
  queue: string,
  options: WorkerOptions,
  handler: (jobs: JobOf<T>[]) => Promise<unknown[]>,
): Promise<string> {
  return boss.work<T | null, unknown, WorkerOptions & { includeMetadata: true; perJobResults: true }>(
    queue,
    { ...polling(options), includeMetadata: true, perJobResults: true },
    (jobs) =>
      holding(boss, queue, jobs, async () => {
        for (const job of jobs) logLostAttempt(log, queue, job);
        let answers: unknown[];
        try {
          answers = await handler(jobs);
        } catch (err) {
          for (const job of jobs) logJobFailure(log, queue, job, err);
          throw err;
        }
        return jobs.map((job, i): JobResult => {
          const a = answers[i];
          if (!(a instanceof Error)) return { id: job.id, status: 'completed' };
          logJobFailure(log, queue, job, a);
          return { id: job.id, status: 'failed', output: { message: a.message } };
        });
      }),
  );
}

/**
 * Works `queue` batch by batch: the handler takes every job fetched at once (to coalesce them, e.g.
 * one chain sync per network for many `chain.sync` jobs). A throw fails the whole batch: each of
 * its jobs is logged, then pg-boss retries them.
 */
export function workBatch<T>(
  boss: PgBoss,
  log: Pick<Logger, 'error' | 'info'>,
  queue: string,
  options: WorkerOptions,
  handler: (jobs: JobOf<T>[]) => Promise<unknown>,
): Promise<string> {
  return boss.work<T | null, unknown, WorkerOptions & { includeMetadata: true }>(queue, { ...polling(options), includeMetadata: true }, (jobs) =>
    holding(boss, queue, jobs, async () => {
      for (const job of jobs) logLostAttempt(log, queue, job);
      try {
        await measured(queue, jobs, () => handler(jobs));
      } catch (err) {
        for (const job of jobs) logJobFailure(log, queue, job, err);
        throw err;
      }
    }),
  );
}

/** The job's data, or a throw (logged, retried) when it carries none: for queues whose jobs always name what to work on. */
export function dataOf<T>(job: JobOf<T>): T {
  if (job.data === null || job.data === undefined) throw new Error(`job ${job.id} of ${job.name} carries no data`);
  return job.data;
}

/**
 * Runs `items` as one group (`run`: one database transaction answering one outcome per item, in
 * order) so that one bad item never takes the others with it: when the group throws (a database
 * error, a bug, a posting refused) its transaction has rolled back whole, and with `isolateOnError`
 * (the default) each item then runs again alone, as a group of one, answering its own outcome or its
 * own error in its place. Without it, or for a single item, the throw goes to the caller.
 * `errorOf` maps what a run threw to what is answered or thrown (default: as thrown). The settlement
 * groups and the withdrawal broadcast groups run through it (issue 22).
 */
export async function runIsolatingErrors<T, R>(
  items: readonly T[],
  run: (items: readonly T[]) => Promise<R[]>,
  opts: { isolateOnError?: boolean; errorOf?: (e: unknown) => unknown } = {},
): Promise<(R | Error)[]> {
  const errorOf = opts.errorOf ?? ((e: unknown) => e);
  try {
    return await run(items);
  } catch (e) {
    if (!(opts.isolateOnError ?? true) || items.length <= 1) throw errorOf(e);
    const out: (R | Error)[] = [];
    for (const item of items)
      try {
        out.push((await run([item]))[0]!);
      } catch (e1) {
        const err = errorOf(e1);
        out.push(err instanceof Error ? err : new Error(String(err)));
      }
    return out;
  }
}
