import type { PgBoss } from 'pg-boss';
import type { Logger } from 'pino';
import type { Clock } from '../clock';
import { Prisma, type PrismaClient } from '../db/prisma';
import { JOB_SCHEMA } from '../db/roles';
import { SETTLEMENT_EXECUTE_QUEUE, REFUND_EXECUTE_QUEUE } from '../kernel/queues';
import { WITHDRAWAL_BROADCAST_QUEUE } from '../kernel/queues';
import { CHAIN_SYNC_ADDRESS_QUEUE, CHAIN_SYNC_QUEUE } from '../kernel/queues';
import { JOB_EXPIRE_SECONDS } from '../kernel/work';
import { RECOVER_QUEUE } from '../kernel/queues';

/**
 * Money operations that must finish on their own (docs/deployment.md, "Crash recovery"): settlements
 * and refunds PENDING, custodial withdrawals APPROVED (to broadcast), BROADCAST_FAILED (retried) or
 * BROADCAST (followed to their confirmations), deposits DETECTED or CONFIRMING (followed per block).
 * States that wait for a person (a withdrawal PENDING_APPROVAL or AWAITING_SIGNATURE, a deposit
 * UNDER_REVIEW or REORG_FROZEN) are documented waiting states, not counted here.
 *
 * Two uses:
 * - the recovery sweep (`recoverOperations`, queue `operations.recover`, at each worker's start and
 *   every RECOVERY_INTERVAL_MS): an operation idle for RECOVERY_GRACE_SECONDS with no live job gets
 *   its job again (a live job: created, retry, or active with a fresh heartbeat);
 * - the stuck list (`stuckOperations`, the admin query, /readyz's count, the sweep's error lines):
 *   operations idle for longer than STUCK_AFTER_SECONDS, with their job's last error.
 *
 * Every list walks a partial index on ("updatedAt") of the non-terminal states (migration
 * 20261125100600_recovery): its cost follows the operations in flight, not the history.
 *
 * CHAIN_SYNC (issue 26) is no row of ours: a deposit address whose reconciliation failed alone and is
 * retried by its own `chain.sync.address` job (src/kernel/queues.ts). It is stuck while its newest
 * job is not completed (created, retry, active, failed), since that job was sent
 * (its data's sentAt, on the service clock); read from pg-boss's job table by queue name, bounded by the queue's retention. The sweep
 * sends it nothing: pg-boss retries the job, and a job whose retries are spent is replaced by the next
 * chain.sync of its network that finds the address failing.
 */
export type OperationKind = 'SETTLEMENT' | 'REFUND' | 'WITHDRAWAL' | 'DEPOSIT' | 'CHAIN_SYNC';
export const OPERATION_KINDS: readonly OperationKind[] = ['SETTLEMENT', 'REFUND', 'WITHDRAWAL', 'DEPOSIT', 'CHAIN_SYNC'];

/** An operation idle this long with no live job is re-queued (its job would normally have run in well under a second). */
export const RECOVERY_GRACE_SECONDS = 20;
/** Each worker process asks for a sweep this often (one runs per interval across processes: singleton slot). */
export const RECOVERY_INTERVAL_MS = 20_000;
/** A stuck operation is logged at error at most once per this interval per process. */
export const STUCK_LOG_EVERY_MS = 15 * 60_000;

/**
 * The job that moves each kind, and the key of its data naming the operation (a deposit: its network's
 * sync). A job may also name several in an array under `key` + 's' (a withdrawal request group's one
 * broadcast job: `withdrawalIds`); the sweep sends one job per operation, under `key`.
 */
const JOB_OF: Record<OperationKind, { queue: string; key: string }> = {
  SETTLEMENT: { queue: SETTLEMENT_EXECUTE_QUEUE, key: 'settlementId' },
  REFUND: { queue: REFUND_EXECUTE_QUEUE, key: 'refundId' },
  WITHDRAWAL: { queue: WITHDRAWAL_BROADCAST_QUEUE, key: 'withdrawalId' },
  DEPOSIT: { queue: CHAIN_SYNC_QUEUE, key: 'networkId' },
  CHAIN_SYNC: { queue: CHAIN_SYNC_ADDRESS_QUEUE, key: 'depositAddressId' },
};

interface Row {
  id: string;
  organizationId: string;
  status: string;
  since: Date;
  /** The id its job names (a deposit: its networkId). */
  jobKey: string;
  /** The operation's own record of its last failure (a withdrawal's lastBroadcastError). */
  ownError: string | null;
  /** A deposit's or a failing deposit address's network and address; null for the other kinds. */
  networkId: string | null;
  address: string | null;
}

/**
 * The kind's operations idle since `before` (updatedAt <= before), oldest first, at most `limit`.
 * `requeue`: only those the sweep may send a job for (a withdrawal APPROVED: its broadcast job; BROADCAST
 * and BROADCAST_FAILED ones move by chain.sync and withdrawal.sweep at their own times).
 */
async function idle(db: PrismaClient, kind: OperationKind, before: Date, limit: number, requeue: boolean): Promise<Row[]> {
  switch (kind) {
    case 'SETTLEMENT':
      return db.$queryRaw<Row[]>`
        SELECT "id"::text AS "id", "organizationId"::text AS "organizationId", "status"::text AS "status", "updatedAt" AS "since", "id"::text AS "jobKey", NULL AS "ownError", NULL AS "networkId", NULL AS "address"
          FROM "Settlement" WHERE "status" = 'PENDING' AND "updatedAt" <= ${before} ORDER BY "updatedAt" LIMIT ${limit}`;
    case 'REFUND':
      return db.$queryRaw<Row[]>`
        SELECT "id"::text AS "id", "organizationId"::text AS "organizationId", "status"::text AS "status", "updatedAt" AS "since", "id"::text AS "jobKey", NULL AS "ownError", NULL AS "networkId", NULL AS "address"
          FROM "Refund" WHERE "status" = 'PENDING' AND "updatedAt" <= ${before} ORDER BY "updatedAt" LIMIT ${limit}`;
    case 'WITHDRAWAL':
      return requeue
        ? db.$queryRaw<Row[]>`
            SELECT "id"::text AS "id", "organizationId"::text AS "organizationId", "status"::text AS "status", "updatedAt" AS "since", "id"::text AS "jobKey", "lastBroadcastError" AS "ownError", NULL AS "networkId", NULL AS "address"
              FROM "Withdrawal" WHERE "status" = 'APPROVED' AND "custodyMode" = 'CUSTODIAL' AND "updatedAt" <= ${before} ORDER BY "updatedAt" LIMIT ${limit}`
        : db.$queryRaw<Row[]>`
            SELECT "id"::text AS "id", "organizationId"::text AS "organizationId", "status"::text AS "status", "updatedAt" AS "since", "id"::text AS "jobKey", "lastBroadcastError" AS "ownError", NULL AS "networkId", NULL AS "address"
              FROM "Withdrawal" WHERE "status" IN ('APPROVED', 'BROADCAST', 'BROADCAST_FAILED') AND "updatedAt" <= ${before} ORDER BY "updatedAt" LIMIT ${limit}`;
    case 'DEPOSIT':
      return db.$queryRaw<Row[]>`
        SELECT d."id"::text AS "id", d."organizationId"::text AS "organizationId", d."status"::text AS "status", d."updatedAt" AS "since", d."networkId"::text AS "jobKey", NULL AS "ownError",
               d."networkId"::text AS "networkId", d."address" AS "address"
          FROM "Deposit" d WHERE d."status" IN ('DETECTED', 'CONFIRMING') AND d."updatedAt" <= ${before} ORDER BY d."updatedAt" LIMIT ${limit}`;
    case 'CHAIN_SYNC':
      if (requeue) return [];
      return db.$queryRaw<Row[]>`
        SELECT a."id"::text AS "id", a."organizationId"::text AS "organizationId", 'FAILING' AS "status", x.since AS "since", a."id"::text AS "jobKey",
               NULL AS "ownError", a."networkId"::text AS "networkId", a."address" AS "address"
          FROM (${failingAddresses}) x JOIN "DepositAddress" a ON a."id" = x.k::uuid
         WHERE x.since <= ${before} ORDER BY x.since LIMIT ${limit}`;
  }
}

const job = Prisma.raw(`"${JOB_SCHEMA}".job`);

/**
 * The newest chain.sync.address job of each address, when it is not completed nor cancelled: the
 * address still fails (k, state, since). `since` is when the sync sent that job, on the service clock
 * (its data's sentAt), compared with the same clock's now like every other kind's
 * updatedAt; pg-boss's created_on (the database's clock) only for a job sent without it.
 */
const failingAddresses = Prisma.sql`
  SELECT y.k, y.state, y.since FROM (
    SELECT DISTINCT ON (j.data->>'depositAddressId') j.data->>'depositAddressId' AS k, j.state::text AS state,
           COALESCE((j.data->>'sentAt')::timestamptz, j.created_on) AS since
      FROM ${job} j WHERE j.name = ${CHAIN_SYNC_ADDRESS_QUEUE} ORDER BY j.data->>'depositAddressId', j.created_on DESC) y
   WHERE y.state NOT IN ('completed', 'cancelled')`;

/** Counts the kind's operations idle since `before` (the same partial indexes). */
async function countIdle(db: PrismaClient, before: Date): Promise<number> {
  const [r] = await db.$queryRaw<{ n: bigint }[]>`
    SELECT (SELECT count(*) FROM "Settlement" WHERE "status" = 'PENDING' AND "updatedAt" <= ${before})
         + (SELECT count(*) FROM "Refund" WHERE "status" = 'PENDING' AND "updatedAt" <= ${before})
         + (SELECT count(*) FROM "Withdrawal" WHERE "status" IN ('APPROVED', 'BROADCAST', 'BROADCAST_FAILED') AND "updatedAt" <= ${before})
         + (SELECT count(*) FROM "Deposit" WHERE "status" IN ('DETECTED', 'CONFIRMING') AND "updatedAt" <= ${before})
         + (SELECT count(*) FROM (${failingAddresses}) x WHERE x.since <= ${before}) AS n`;
  return Number(r?.n ?? 0);
}

/**
 * The keys among `keys` with a live job on `queue`: created or retry (it will run), or active with a
 * fresh heartbeat (a worker holds it now). An active job whose heartbeat (or, for a job sent without
 * one, its start) is older than its limit belongs to a dead worker: not live. Reads pg-boss's job
 * table by queue name (its primary key): bounded by the queue's retention (deleteAfterSeconds), not
 * by history.
 */
export async function liveJobKeys(db: PrismaClient, queue: string, key: string, keys: string[]): Promise<Set<string>> {
  if (!keys.length) return new Set();
  const rows = await db.$queryRaw<{ k: string }[]>`
    SELECT DISTINCT n.k FROM ${job} j CROSS JOIN LATERAL ${namedBy(key)} n
     WHERE j.name = ${queue} AND j.state IN ('created', 'retry', 'active') AND n.k = ANY(${keys}::text[])
       AND NOT (j.state = 'active'
                AND COALESCE(j.heartbeat_on, j.started_on) + COALESCE(j.heartbeat_seconds, LEAST(j.expire_seconds, ${JOB_EXPIRE_SECONDS})) * interval '1 second' < now())`;
  return new Set(rows.map((r) => r.k));
}

/** The keys a job `j` names (k): its data's `key`, and each element of its array `key` + 's' when it has one. */
const namedBy = (key: string) => Prisma.sql`(
  SELECT j.data->>${key} AS k WHERE j.data ? ${key}
  UNION ALL
  SELECT e.k FROM jsonb_array_elements_text(CASE WHEN jsonb_typeof(j.data->${`${key}s`}) = 'array' THEN j.data->${`${key}s`} END) AS e(k))`;

/** The newest job of each key: its state and, when it failed, the error pg-boss recorded. */
async function lastJobs(db: PrismaClient, queue: string, key: string, keys: string[]): Promise<Map<string, { state: string; error: string | null }>> {
  if (!keys.length) return new Map();
  const rows = await db.$queryRaw<{ k: string; state: string; output: unknown }[]>`
    SELECT DISTINCT ON (x.k) x.k, x.state, x.output FROM (
      SELECT n.k, j.state::text AS state, j.output, j.created_on
        FROM ${job} j CROSS JOIN LATERAL ${namedBy(key)} n WHERE j.name = ${queue} AND n.k = ANY(${keys}::text[])) x
     ORDER BY x.k, x.created_on DESC`;
  return new Map(rows.map((r) => [r.k, { state: r.state, error: r.state === 'completed' ? null : errorOf(r.output) }]));
}

function errorOf(output: unknown): string | null {
  if (!output || typeof output !== 'object') return null;
  const o = output as { message?: unknown; value?: unknown };
  if (typeof o.message === 'string') return o.message;
  if (typeof o.value === 'string') return o.value;
  const inner = (o.value as { message?: unknown } | null | undefined)?.message;
  return typeof inner === 'string' ? inner : null;
}

export interface StuckOperation {
  kind: OperationKind;
  id: string;
  organizationId: string;
  status: string;
  /** Last change of the operation (updatedAt). */
  since: Date;
  ageSeconds: number;
  /** The newest job's state (created, retry, active, completed, failed…), null when no job is kept. */
  jobState: string | null;
  /** The newest failure known: the job's error, else the operation's own (a withdrawal's lastBroadcastError). */
  lastError: string | null;
  /** DEPOSIT and CHAIN_SYNC: the network and the deposit address; null for the other kinds. */
  networkId: string | null;
  address: string | null;
}

/**
 * Operations idle for longer than `olderThanSeconds` (oldest first, at most `limit`), with their
 * job's state and last error. The admin query and the sweep's error lines.
 */
export async function stuckOperations(db: PrismaClient, now: Date, opts: { olderThanSeconds: number; limit: number }): Promise<StuckOperation[]> {
  const before = new Date(now.getTime() - opts.olderThanSeconds * 1000);
  const perKind = await Promise.all(OPERATION_KINDS.map(async (kind) => ({ kind, rows: await idle(db, kind, before, opts.limit, false) })));
  const all = perKind
    .flatMap(({ kind, rows }) => rows.map((r) => ({ kind, r })))
    .sort((a, b) => a.r.since.getTime() - b.r.since.getTime() || (a.r.id < b.r.id ? -1 : 1))
    .slice(0, opts.limit);
  const out: StuckOperation[] = [];
  for (const kind of OPERATION_KINDS) {
    const mine = all.filter((a) => a.kind === kind);
    if (!mine.length) continue;
    const { queue, key } = JOB_OF[kind];
    const jobs = await lastJobs(db, queue, key, [...new Set(mine.map((m) => m.r.jobKey))]);
    for (const { r } of mine) {
      const j = jobs.get(r.jobKey);
      out.push({
        kind,
        id: r.id,
        organizationId: r.organizationId,
        status: r.status,
        since: r.since,
        ageSeconds: Math.max(0, Math.floor((now.getTime() - r.since.getTime()) / 1000)),
        jobState: j?.state ?? null,
        lastError: j?.error ?? r.ownError ?? null,
        networkId: r.networkId,
        address: r.address,
      });
    }
  }
  return out.sort((a, b) => a.since.getTime() - b.since.getTime() || (a.id < b.id ? -1 : 1));
}

/** How many operations are idle for longer than `olderThanSeconds` (/readyz). */
export function countStuckOperations(db: PrismaClient, now: Date, olderThanSeconds: number): Promise<number> {
  return countIdle(db, new Date(now.getTime() - olderThanSeconds * 1000));
}

export interface RecoveryDeps {
  db: PrismaClient;
  boss: PgBoss;
  clock: Clock;
  log: Pick<Logger, 'warn' | 'error' | 'info'>;
}

/** When each stuck operation was last logged by this process (rate limit of the error lines). */
const reported = new Map<string, number>();

/**
 * The recovery sweep: per kind, the operations idle for RECOVERY_GRACE_SECONDS (oldest first, at
 * most `limit`) whose job is not live get it again (logged at warn: a job was lost), and those
 * idle past `stuckAfterSeconds` are logged at error (once per operation per STUCK_LOG_EVERY_MS).
 *
 * Never twice at once for one operation: a live job is never duplicated (see liveJobKeys), the sweep
 * itself runs on a singleton queue, and should a duplicate run anyway (a worker alive but so blocked
 * its heartbeat went stale), every handler locks the operation's row and re-checks its state first:
 * the second run finds nothing to do.
 */
export async function recoverOperations(
  deps: RecoveryDeps,
  opts: { stuckAfterSeconds: number; limit?: number; graceSeconds?: number },
): Promise<{ requeued: Record<OperationKind, number>; stuck: number }> {
  const now = deps.clock.now();
  const limit = opts.limit ?? 500;
  const before = new Date(now.getTime() - (opts.graceSeconds ?? RECOVERY_GRACE_SECONDS) * 1000);
  const requeued = { SETTLEMENT: 0, REFUND: 0, WITHDRAWAL: 0, DEPOSIT: 0, CHAIN_SYNC: 0 } as Record<OperationKind, number>;
  for (const kind of OPERATION_KINDS) {
    const rows = await idle(deps.db, kind, before, limit, true);
    if (!rows.length) continue;
    const { queue, key } = JOB_OF[kind];
    const keys = [...new Set(rows.map((r) => r.jobKey))];
    const live = await liveJobKeys(deps.db, queue, key, keys);
    for (const k of keys) {
      if (live.has(k)) continue;
      await deps.boss.send(queue, { [key]: k });
      requeued[kind]++;
      const ops = rows.filter((r) => r.jobKey === k).map((r) => r.id);
      deps.log.warn(
        { kind, queue, [key]: k, operations: ops.length > 10 ? ops.slice(0, 10) : ops },
        `recovery: ${kind.toLowerCase()} had no live job; its job is sent again`,
      );
    }
  }
  const stuck = await stuckOperations(deps.db, now, { olderThanSeconds: opts.stuckAfterSeconds, limit: 100 });
  const t = Date.now();
  for (const [id, at] of reported) if (t - at > STUCK_LOG_EVERY_MS) reported.delete(id);
  for (const s of stuck) {
    if (reported.has(s.id)) continue;
    reported.set(s.id, t);
    deps.log.error(
      {
        kind: s.kind,
        id: s.id,
        organizationId: s.organizationId,
        status: s.status,
        since: s.since.toISOString(),
        ageSeconds: s.ageSeconds,
        jobState: s.jobState,
        lastError: s.lastError,
      },
      `stuck operation: ${s.kind.toLowerCase()} ${s.id} ${s.status} for ${s.ageSeconds} s`,
    );
  }
  return { requeued, stuck: stuck.length };
}

/** /readyz's count, cached per client for READYZ_CACHE_MS: a probe every second costs one count every 10 s. */
const READYZ_CACHE_MS = 10_000;
const readyzCache = new WeakMap<PrismaClient, { at: number; count: number }>();
export async function stuckCountForReadiness(deps: { db: PrismaClient; clock: Clock; config: { STUCK_AFTER_SECONDS: number } }): Promise<number> {
  const hit = readyzCache.get(deps.db);
  if (hit && Date.now() - hit.at < READYZ_CACHE_MS) return hit.count;
  const count = await countStuckOperations(deps.db, deps.clock.now(), deps.config.STUCK_AFTER_SECONDS);
  readyzCache.set(deps.db, { at: Date.now(), count });
  return count;
}
