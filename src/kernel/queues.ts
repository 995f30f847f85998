import { fromPrisma, type PgBoss } from 'pg-boss';
import { Prisma, type Db, type PoolQuery, type PrismaClient, type RawDb } from '../db/prisma';
import { JOB_SCHEMA } from '../db/roles';
import { jobInsertFromRows, jobInsertParts } from './job-rows';
import { ensureQueue } from './work';

/**
 * Every queue's name, and the senders of the jobs that more than one domain sends. A handler lives
 * with its domain (`<domain>.jobs.ts`); jobs/index.ts creates the queues and registers the handlers.
 */
export const EXPIRE_QUEUE = 'payment-intent.expire';
export const EXPIRE_SWEEP_QUEUE = 'payment-intent.expire-sweep';
/** Every minute: expire the PENDING holds whose expiresAt has passed (docs/ledger.md). */
export const EXPIRE_HOLDS_QUEUE = 'ledger.expire-holds';
export const RECOVER_QUEUE = 'operations.recover';
export const DELIVER_QUEUE = 'webhook.deliver';
export const BULK_QUEUE = 'webhook.redeliver-bulk';
export const RECONCILE_QUEUE = 'treasury.reconcile';
export const RESERVE_REPLENISH_QUEUE = 'reserve.replenish';
export const WITHDRAWAL_BROADCAST_QUEUE = 'withdrawal.broadcast';
export const WITHDRAWAL_SWEEP_QUEUE = 'withdrawal.sweep';
/** Every minute: replace the platform's stuck EVM transactions with higher fees (src/treasury/fee-bumps.ts). */
export const FEE_BUMP_QUEUE = 'treasury.fee-bump';

/**
 * The queues of release, settlement and refund work (docs/settlements.md). Jobs are sent inside the
 * transaction of the change that needs them, so a rollback leaves no job; every handler re-reads
 * state under the Transaction row lock and is idempotent (delivery is at least once).
 */
export const RELEASE_EVALUATE_QUEUE = 'release.evaluate';
export const RELEASE_SWEEP_QUEUE = 'release.sweep';
export const SETTLEMENT_EXECUTE_QUEUE = 'settlement.execute';
export const RETAINED_RELEASE_QUEUE = 'settlement.release-retained';
export const REFUND_EXECUTE_QUEUE = 'refund.execute';

/** Evaluates a transaction's release rule (milestones due → settlements requested). `startAfter`: when a time condition falls due. */
export interface ReleaseEvaluateJob {
  transactionId: string;
}
/** Evaluates every open rule (of one organization): periodic, and after a sandbox clock advance. */
export interface ReleaseSweepJob {
  organizationId?: string;
}
export interface SettlementExecuteJob {
  settlementId: string;
}
/** Re-checks retained allocations (of one account, transaction or organization; none: all) and releases those whose cause cleared. */
export interface RetainedReleaseJob {
  accountId?: string;
  transactionId?: string;
  organizationId?: string;
}
export interface RefundExecuteJob {
  refundId: string;
}

export async function createSettlementQueues(boss: PgBoss): Promise<void> {
  const base = { retryLimit: 10, retryDelay: 2, retryBackoff: true, retryDelayMax: 300, deleteAfterSeconds: 3600, notify: true } as const;
  await ensureQueue(boss, RELEASE_EVALUATE_QUEUE, base);
  await ensureQueue(boss, RELEASE_SWEEP_QUEUE, { retryLimit: 3, retryDelay: 10, deleteAfterSeconds: 3600 });
  await ensureQueue(boss, SETTLEMENT_EXECUTE_QUEUE, base);
  await ensureQueue(boss, RETAINED_RELEASE_QUEUE, base);
  await ensureQueue(boss, REFUND_EXECUTE_QUEUE, base);
}

const inTx = (tx: Db) => ({ db: fromPrisma(tx as never) });

export async function sendReleaseEvaluation(tx: Db, boss: PgBoss | null, transactionId: string, startAfter?: Date): Promise<void> {
  if (!boss) return;
  await boss.send(RELEASE_EVALUATE_QUEUE, { transactionId } satisfies ReleaseEvaluateJob, { ...inTx(tx), ...(startAfter ? { startAfter } : {}) });
}
/**
 * Release evaluation jobs for transactions that became RESERVED, in one statement of the caller's
 * transaction: only for those with a PENDING milestone (the partial index "ReleaseMilestone_pending_idx"),
 * since an evaluation of any other finds nothing to release (evaluateRelease) and would cost a job
 * and a transaction per funded transaction for nothing. The caller holds the transactions' rows
 * locked: a rule set at the same time (setTransactionReleaseRule locks the row too) either committed
 * before this statement, which then sees its milestones, or waits for the caller's commit and then
 * evaluates the RESERVED transaction itself. The minute's release sweep stays the safety net.
 */
export async function sendReleaseEvaluations(tx: Db, boss: PgBoss | null, transactionIds: string[]): Promise<void> {
  if (!boss || !transactionIds.length) return;
  const pending = Prisma.sql`SELECT jsonb_build_object('transactionId', m."transactionId"::text) AS "data"
                     FROM (SELECT DISTINCT "transactionId" FROM "ReleaseMilestone"
                            WHERE "transactionId" = ANY(${transactionIds}::uuid[]) AND "status" = 'PENDING') AS m`;
  const parts = await jobInsertParts(boss, RELEASE_EVALUATE_QUEUE);
  if (parts) {
    await tx.$executeRaw(jobInsertFromRows(parts, pending));
    return;
  }
  // A pg-boss whose insert this version cannot take apart: the same rows read, then boss.insert.
  const jobs = await tx.$queryRaw<{ data: ReleaseEvaluateJob }[]>(pending);
  if (jobs.length) await boss.insert(RELEASE_EVALUATE_QUEUE, jobs, inTx(tx));
}
export async function sendReleaseSweep(tx: Db, boss: PgBoss | null, organizationId?: string): Promise<void> {
  if (!boss) return;
  await boss.send(RELEASE_SWEEP_QUEUE, (organizationId ? { organizationId } : {}) satisfies ReleaseSweepJob, inTx(tx));
}
export async function sendSettlementExecution(tx: Db, boss: PgBoss | null, settlementId: string): Promise<void> {
  if (!boss) return;
  await boss.send(SETTLEMENT_EXECUTE_QUEUE, { settlementId } satisfies SettlementExecuteJob, inTx(tx));
}
export async function sendRetainedRelease(tx: Db, boss: PgBoss | null, scope: RetainedReleaseJob): Promise<void> {
  if (!boss) return;
  await boss.send(RETAINED_RELEASE_QUEUE, scope, inTx(tx));
}
export async function sendRefundExecution(tx: Db, boss: PgBoss | null, refundId: string): Promise<void> {
  if (!boss) return;
  await boss.send(REFUND_EXECUTE_QUEUE, { refundId } satisfies RefundExecuteJob, inTx(tx));
}

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
  /**
   * The recipients of the transfers a send (a group) added, when that is all it changed
   * (sendTransactions): a sync of such jobs alone, while the chain's tip is still the one its cursor
   * followed, reconciles only these addresses (issue 22). Absent: anything may have changed (a block,
   * a drop, a replacement, a reorganization), and the sync looks at everything that may have.
   */
  addresses?: string[];
}

/**
 * The cadence of detection in a burst of sandbox sends (issue 22, session 17). After a sync whose jobs
 * were all sends alone (each naming its recipients: transfers in the mempool, no block) and that
 * detected something, the chain.sync worker pauses (SANDBOX_DETECTION_PAUSE_MS, 250 ms by default)
 * before it fetches again, so the sends of a burst are detected together by the next sync instead of
 * one sync per send group. Every
 * PAUSE_CHECK_MS of it, the queue is read for a job of any other change of a chain (a block, a
 * reorganization, a drop, a replacement, an EVM watcher's step; committed by any process): the first
 * one seen ends the pause, and the next fetch takes it with the sends, which that sync detects and
 * confirms in one pass. docs/decisions.md, "Mempool detection at a cadence in a burst of sandbox sends".
 */
const PAUSE_CHECK_MS = 10;
const pauses = new Set<() => void>();

/** Ends the pauses under way (the job runner stops: their handlers return at once). */
export function endDetectionPauses(): void {
  for (const end of [...pauses]) end();
}

/**
 * A chain.sync job due and not fetched yet that is not a send alone (it names no recipients): one
 * read of pg-boss's index of the queue's waiting jobs (job_i11: state < active, not blocked).
 */
async function chainChangeWaiting(db: RawDb): Promise<boolean> {
  const [r] = await db.$queryRaw<{ waiting: boolean }[]>`
    SELECT EXISTS (SELECT 1 FROM ${jobTable} j WHERE j.name = ${CHAIN_SYNC_QUEUE} AND j.state < 'active' AND NOT j.blocked
                     AND j.start_after <= now() AND NOT (j.data ? 'addresses')) AS "waiting"`;
  return r?.waiting === true;
}

/**
 * The pause after a sync of sends alone: until `ms` passed, a job of another change of a chain is
 * waiting (checked first, then every PAUSE_CHECK_MS), or the job runner stops. A failed check ends it.
 */
export async function pauseAfterSendsAlone(db: RawDb, ms: number): Promise<void> {
  const until = performance.now() + ms;
  let ended = false;
  let wake = () => {};
  const end = () => {
    ended = true;
    wake();
  };
  pauses.add(end);
  try {
    while (!ended && !(await chainChangeWaiting(db).catch(() => true))) {
      const left = until - performance.now();
      if (left <= 0 || ended) return;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(PAUSE_CHECK_MS, left));
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  } finally {
    pauses.delete(end);
  }
}

/** Sends a `chain.sync` job for the network through the caller's transaction (Prisma's, or a pg connection's: poolTransaction). */
export async function sendChainSync(tx: RawDb | PoolQuery, boss: PgBoss | null, networkId: string, addresses?: string[]): Promise<void> {
  if (!boss) throw new Error('chain changes need the job runner (deps.boss) to notify deposit detection');
  // A pg connection's transaction (poolTransaction) or a Prisma one.
  const db =
    typeof tx === 'function' ? { executeSql: async (text: string, values?: unknown[]) => ({ rows: await tx(text, values ?? []) }) } : fromPrisma(tx as never);
  await boss.send(CHAIN_SYNC_QUEUE, (addresses ? { networkId, addresses } : { networkId }) satisfies ChainSyncJob, { db });
}

/**
 * The watcher of an EVM network (issue 18, src/chains/evm/watcher.ts): one job per network at a
 * time across processes (policy `exclusive`, singleton key = the network id), asked for by every
 * worker's ticker (and, with a wsUrl, at each new head).
 */
export const EVM_WATCH_QUEUE = 'evm.watch';

export interface EvmWatchJob {
  networkId: string;
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
  /**
   * When the sync sent it, on the service clock (ISO 8601): the stuck list's `since`
   * (src/operations/recovery.ts), compared with the same clock's now. Absent from jobs sent before it
   * existed (the list then reads pg-boss's created_on, the database's clock).
   */
  sentAt?: string;
}

/** The queue's options (created by src/deposits/deposits.jobs.ts): retried with backoff up to 5 minutes apart, for about 8 hours. */
export const CHAIN_SYNC_ADDRESS_QUEUE_OPTIONS = {
  policy: 'exclusive',
  retryLimit: 100,
  retryDelay: 2,
  retryBackoff: true,
  retryDelayMax: 300,
  deleteAfterSeconds: 7 * 86_400,
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
export async function addressJobStates(db: RawDb, networkId: string): Promise<Map<string, string>> {
  const rows = await db.$queryRaw<{ k: string; state: string }[]>`
    SELECT DISTINCT ON (j.data->>'depositAddressId') j.data->>'depositAddressId' AS k, j.state::text AS state
      FROM ${jobTable} j WHERE j.name = ${CHAIN_SYNC_ADDRESS_QUEUE} AND j.data->>'networkId' = ${networkId}
     ORDER BY j.data->>'depositAddressId', j.created_on DESC`;
  return new Map(rows.map((r) => [r.k, r.state]));
}

/** A job state in which the job will still run (pg-boss's created, retry, active). */
export const isLiveJobState = (state: string | undefined) => state === 'created' || state === 'retry' || state === 'active';

export interface ExpirySweepJob {
  organizationId?: string;
}

/** Asks for an expiry sweep (of one organization) through the caller's transaction. */
export async function sendExpirySweep(tx: Db, boss: PgBoss | null, organizationId?: string): Promise<void> {
  if (!boss) return;
  await boss.send(EXPIRE_SWEEP_QUEUE, (organizationId ? { organizationId } : {}) satisfies ExpirySweepJob, { db: fromPrisma(tx as never) });
}
