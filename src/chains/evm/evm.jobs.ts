import type { PgBoss } from 'pg-boss';
import type { Logger } from 'pino';
import type { PrismaClient } from '../../db/prisma';
import { dataOf, ensureQueue, workEach } from '../../kernel/work';
import { EVM_WATCH_QUEUE, type EvmWatchJob } from '../../kernel/queues';
import { EVM_WATCH_QUEUE_OPTIONS, startEvmWatchTicker, watchNetwork } from './watcher';

/**
 * The EVM watchers' jobs (issue 18; jobs/index.ts registers them): the `evm.watch` queue (one job
 * per network at a time), its handler (the watcher steps until the cursor reaches the head), and in
 * a worker process the ticker that asks for a watch of every configured network. Answers the
 * ticker's stopper (null when the process works no queue), for the job runner's shutdown.
 */
export async function registerEvmJobs(boss: PgBoss, deps: { db: PrismaClient; log: Logger }, work: boolean): Promise<{ stop: () => void } | null> {
  await ensureQueue(boss, EVM_WATCH_QUEUE, EVM_WATCH_QUEUE_OPTIONS);
  if (!work) return null;
  await workEach<EvmWatchJob>(boss, deps.log, EVM_WATCH_QUEUE, { batchSize: 4 }, async (job) => {
    await watchNetwork({ db: deps.db, boss, log: deps.log }, dataOf(job).networkId);
  });
  return startEvmWatchTicker(boss, deps.log);
}
