import type { PgBoss } from 'pg-boss';
import type { Context } from '../context';
import type { Clock } from '../clock';
import { poolTransaction, type Db, type PrismaClient, type RawDb } from '../db/prisma';
import type { Actor } from '../audit/audit';
import { isRetryable } from '../errors';

/**
 * What money-in code needs from the process: the database, the clock and the job runner (events
 * and jobs are sent through the caller's transaction). Request handlers pass `ctx.deps`; jobs
 * (chain sync, expiry) pass their own.
 */
export interface MoneyDeps {
  db: PrismaClient;
  clock: Clock;
  boss: PgBoss | null;
  /** The key sealing custodial wallet keys: only jobs that sign on the chain need it (refunds). */
  sealingKey?: Buffer;
}

export const systemActor = (requestId: string | null = null): Actor => ({ principal: null, requestId });
export const requestActor = (ctx: Context): Actor => ({ principal: ctx.principal, requestId: ctx.requestId });

/** Interactive transaction settings of money-in changes: a sync chunk may hold many changes. */
export const TX_OPTIONS = { timeout: 60_000, maxWait: 20_000 } as const;

const RETRY_ATTEMPTS = 5;

/**
 * One interactive transaction, run again from the start when PostgreSQL aborts it with a deadlock
 * (40P01) or a serialization failure (40001): nothing of the failed attempt committed, so running it
 * again is safe as long as `f` changes nothing outside the database (the sandbox chain is in it).
 * Backoff 10, 20, 40, 80 ms, each with ±50% jitter. For the paths that lock a withdrawal destination
 * and withdrawals (docs/decisions.md, issue 26); any other error is thrown at once.
 */
export async function retryingTransaction<T>(
  db: PrismaClient,
  f: (tx: Db) => Promise<T>,
  options: { timeout?: number; maxWait?: number } = TX_OPTIONS,
): Promise<T> {
  return retrying(() => db.$transaction(f, options));
}

/**
 * retryingTransaction for work that sends raw statements only (a RawDb): the transaction straight on
 * the client's pg pool (poolTransaction: no Prisma query engine, issue 22), bounded by the same
 * timeout; through Prisma when the client has no pool of ours.
 */
export async function retryingRawTransaction<T>(db: PrismaClient, f: (tx: RawDb) => Promise<T>, options: { timeout: number } = TX_OPTIONS): Promise<T> {
  return retrying(() => poolTransaction(db, (_query, raw) => f(raw), { timeoutMs: options.timeout }) ?? db.$transaction(f, options));
}

async function retrying<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (e) {
      const retryable = isRetryable(e) || (e as { code?: unknown } | null)?.code === 'P2034'; // Prisma's "write conflict or deadlock"
      if (!retryable || attempt >= RETRY_ATTEMPTS) throw e;
      await new Promise((ok) => setTimeout(ok, 10 * 2 ** (attempt - 1) * (0.5 + Math.random())));
    }
  }
}

/** Locks the Transaction row (the aggregate root of an intent, its deposits' effects and its escrow). */
export async function lockTransactionRow(tx: Db, transactionId: string): Promise<void> {
  await tx.$queryRaw`SELECT 1 FROM "Transaction" WHERE "id" = ${transactionId}::uuid FOR UPDATE`;
}

/** Serializes everything that reconciles deposits of one network (sync chunks, admin resolutions). */
export async function lockNetwork(tx: Db, networkId: string): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${'chain.sync ' + networkId}, 0))`;
}
