import { fromPrisma, type PgBoss } from 'pg-boss';
import { Prisma, type Db, type PrismaClient } from '../db/prisma';
import { JOB_SCHEMA } from '../db/roles';

/**
 * The queue that tells deposit detection a chain changed. Every change of a sandbox chain (send,
 * mine, reorg, drop, replace, produced block) sends one job `{ networkId }` in the SAME database
 * transaction as the change, so the job exists exactly when the change committed.
 *
 * No deduplication: a job per change (a mine of 100 blocks is one change, one job). A singleton
 * key would lose changes: a queued job that a worker picks up before the sending transaction
 * commits would not see that change, and the send would have been absorbed by it. The handler
 * (deposit detection, src/deposits) compares the chain with its records, so running it twice, or
 * for several changes at once, is cheap and changes nothing the second time.
 */
export const CHAIN_SYNC_QUEUE = 'chain.sync';

export interface ChainSyncJob {
  networkId: string;
}

/** Sends a `chain.sync` job for the network through the caller's transaction. */
export async function sendChainSync(tx: Db, boss: PgBoss | null, networkId: string): Promise<void> {
  if (!boss) throw new Error('chain changes need the job runner (deps.boss) to notify deposit detection');
  await boss.send(CHAIN_SYNC_QUEUE, { networkId } satisfies ChainSyncJob, { db: fromPrisma(tx as never) });
}

/**
 * A deposit address whose reconciliation failed alone (issue 26): taken out of its network's
 * `chain.sync` chunks and retried by its own job `{ networkId, depositAddressId }` with backoff until
 * it reconciles. The queue's `exclusive` policy with the singleton key `networkId/depositAddressId`
 * keeps at most one live job (created, retry or active) per address: sending again while one lives
 * is a no-op. While its newest job is not completed the address is listed as stuck (kind CHAIN_SYNC,
 * src/operations/recovery.ts).
 */
export const CHAIN_SYNC_ADDRESS_QUEUE = 'chain.sync.address';

export interface ChainSyncAddressJob {
  networkId: string;
  depositAddressId: string;
}

/** The queue's options (created by src/deposits/jobs.ts): retried with backoff up to 5 minutes apart, for about 8 hours. */
export const CHAIN_SYNC_ADDRESS_QUEUE_OPTIONS = {
  policy: 'exclusive', retryLimit: 100, retryDelay: 2, retryBackoff: true, retryDelayMax: 300, deleteAfterSeconds: 7 * 86_400,
} as const;

/** Sends the address's retry job, unless one is live already (answers whether a job was created). */
export async function sendAddressSync(boss: PgBoss, job: ChainSyncAddressJob): Promise<boolean> {
  const id = await boss.send(CHAIN_SYNC_ADDRESS_QUEUE, job satisfies ChainSyncAddressJob, { singletonKey: `${job.networkId}/${job.depositAddressId}` });
  return id !== null;
}

const jobTable = Prisma.raw(`"${JOB_SCHEMA}".job`);

/**
 * The state of the newest `chain.sync.address` job of each address of the network that has one
 * (created, retry, active, completed, failed, cancelled). Reads pg-boss's job table by queue name
 * (its primary key), bounded by the queue's retention: only addresses that failed have jobs.
 */
export async function addressJobStates(db: PrismaClient, networkId: string): Promise<Map<string, string>> {
  const rows = await db.$queryRaw<{ k: string; state: string }[]>`
    SELECT DISTINCT ON (j.data->>'depositAddressId') j.data->>'depositAddressId' AS k, j.state::text AS state
      FROM ${jobTable} j WHERE j.name = ${CHAIN_SYNC_ADDRESS_QUEUE} AND j.data->>'networkId' = ${networkId}
     ORDER BY j.data->>'depositAddressId', j.created_on DESC`;
  return new Map(rows.map((r) => [r.k, r.state]));
}

/** A job state in which the job will still run (pg-boss's created, retry, active). */
export const isLiveJobState = (state: string | undefined) => state === 'created' || state === 'retry' || state === 'active';
