import { fromPrisma, type PgBoss } from 'pg-boss';
import type { Db } from '../db/prisma';

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
