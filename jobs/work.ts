import type { JobResult, JobWithMetadata, PgBoss, WorkOptions } from 'pg-boss';
import type { Logger } from 'pino';

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
 * Works `queue` job by job: a fetched batch (options.batchSize, default 1) runs one job after
 * another, each settled on its own. A job whose handler throws is logged and fails alone (pg-boss
 * retries it per the queue's policy); the others of its batch complete.
 */
export function workEach<T>(boss: PgBoss, log: Pick<Logger, 'error'>, queue: string, options: WorkerOptions, handler: (job: JobOf<T>) => Promise<unknown>): Promise<string> {
  return boss.work<T | null, unknown, WorkerOptions & { includeMetadata: true; perJobResults: true }>(
    queue,
    { ...options, includeMetadata: true, perJobResults: true },
    async (jobs) => {
      const results: JobResult[] = [];
      for (const job of jobs) {
        try {
          await handler(job);
          results.push({ id: job.id, status: 'completed' });
        } catch (err) {
          logJobFailure(log, queue, job, err);
          results.push({ id: job.id, status: 'failed', output: { message: err instanceof Error ? err.message : String(err) } });
        }
      }
      return results;
    },
  );
}

/**
 * Works `queue` batch by batch: the handler takes every job fetched at once (to coalesce them, e.g.
 * one chain sync per network for many `chain.sync` jobs). A throw fails the whole batch: each of
 * its jobs is logged, then pg-boss retries them.
 */
export function workBatch<T>(boss: PgBoss, log: Pick<Logger, 'error'>, queue: string, options: WorkerOptions, handler: (jobs: JobOf<T>[]) => Promise<unknown>): Promise<string> {
  return boss.work<T | null, unknown, WorkerOptions & { includeMetadata: true }>(queue, { ...options, includeMetadata: true }, async (jobs) => {
    try {
      await handler(jobs);
    } catch (err) {
      for (const job of jobs) logJobFailure(log, queue, job, err);
      throw err;
    }
  });
}

/** The job's data, or a throw (logged, retried) when it carries none: for queues whose jobs always name what to work on. */
export function dataOf<T>(job: JobOf<T>): T {
  if (job.data === null || job.data === undefined) throw new Error(`job ${job.id} of ${job.name} carries no data`);
  return job.data;
}
