import type { Context } from '../context';
import { pipelined, Prisma, type RawDb } from '../db/prisma';
import type { Principal } from '../auth/principal';
import type { Clock } from '../clock';
import { monotonicUuidv7 } from '../ids';

export interface AuditInput {
  organizationId: string | null;
  entityType: string;
  entityId: string;
  action: string;
  before?: Record<string, unknown> | null;
  after?: Record<string, unknown> | null;
}

/**
 * Writes the audit entry of a state change. Call it with the transaction that makes the change,
 * so both commit or neither does. Summaries never hold secrets or their hashes.
 */
export async function audit(tx: RawDb, ctx: Context, entry: AuditInput): Promise<void> {
  await auditAll(tx, ctx.deps, { principal: ctx.principal, requestId: ctx.requestId }, [entry]);
}

/** Who makes a change: the principal of a request, or the service itself (null: a job). */
export interface Actor {
  principal: Principal | null;
  requestId: string | null;
}

/** The audit entries of one change, in one statement, for requests and jobs alike (queued instead in a transaction that defers them: deferAudits). */
export async function auditAll(tx: RawDb, deps: { clock: Clock }, actor: Actor, entries: AuditInput[]): Promise<void> {
  if (!entries.length) return;
  const data = auditRows(deps, actor, entries);
  const queued = deferredAudits.get(tx);
  if (queued) queued.push(...data);
  else await insertAuditRows(tx, data);
}

function auditRows(deps: { clock: Clock }, actor: Actor, entries: AuditInput[]) {
  const { actorType, actorId } = actorOf(actor.principal);
  const occurredAt = deps.clock.now();
  // Ids increase in writing order, so entries of one clock tick still read back in order.
  return entries.map((entry) => ({
    id: monotonicUuidv7(occurredAt.getTime()),
    occurredAt,
    organizationId: entry.organizationId,
    actorType,
    actorId,
    entityType: entry.entityType,
    entityId: entry.entityId,
    action: entry.action,
    requestId: actor.requestId,
    before: (entry.before ?? undefined) as never,
    after: (entry.after ?? undefined) as never,
  }));
}

/**
 * Inserts audit rows with one statement whatever their number: the columns as arrays, unnest()ed
 * in list order (Prisma's createMany binds 11 parameters per row and serializes each JSON value
 * itself, which made the 128 entries of a settlement group its costliest write; issue 22).
 */
async function insertAuditRows(tx: RawDb, rows: ReturnType<typeof auditRows>): Promise<void> {
  await tx.$executeRaw`${auditRowsInsertSql(rows)}`;
}

function auditRowsInsertSql(rows: ReturnType<typeof auditRows>): Prisma.Sql {
  const json = (v: unknown) => (v === undefined || v === null ? null : JSON.stringify(v));
  return Prisma.sql`
    INSERT INTO "AuditLogEntry" ("id", "occurredAt", "organizationId", "actorType", "actorId", "entityType", "entityId", "action", "requestId", "before", "after")
    SELECT * FROM unnest(${rows.map((r) => r.id)}::uuid[], ${rows.map((r) => r.occurredAt)}::timestamptz[], ${rows.map((r) => r.organizationId)}::uuid[],
                         ${rows.map((r) => r.actorType)}::"PrincipalType"[], ${rows.map((r) => r.actorId)}::uuid[], ${rows.map((r) => r.entityType)}::text[],
                         ${rows.map((r) => r.entityId)}::uuid[], ${rows.map((r) => r.action)}::text[], ${rows.map((r) => r.requestId)}::text[],
                         ${rows.map((r) => json(r.before))}::jsonb[], ${rows.map((r) => json(r.after))}::jsonb[])`;
}

/**
 * The insert of the entries of `changes`, each with its actor (as auditAll writes them: ids
 * increasing in list order), as one statement, for a data-modifying CTE that makes the changes and
 * writes their entries in one statement (issue 22).
 */
export function auditAllSql(deps: { clock: Clock }, changes: readonly { actor: Actor; entries: AuditInput[] }[]): Prisma.Sql {
  return auditRowsInsertSql(changes.flatMap((c) => auditRows(deps, c.actor, c.entries)));
}

/** Audit rows queued by auditAll() in a database transaction that defers them (deferAudits). */
const deferredAudits = new WeakMap<object, ReturnType<typeof auditRows>>();

/**
 * Runs `fn` with the audit entries written in `tx` queued (each with its actor, time and id as it
 * was made), then inserts them all with one statement in the same database transaction: a group
 * commit's entries cost one insert. Nested calls join the outer queue.
 */
export async function deferAudits<R>(tx: RawDb, fn: () => Promise<R>): Promise<R> {
  if (deferredAudits.has(tx)) return fn();
  const queue: ReturnType<typeof auditRows> = [];
  deferredAudits.set(tx, queue);
  try {
    const r = await fn();
    deferredAudits.delete(tx);
    // Pipelined on the pool's connection (a sync chunk's): nothing reads the entries back in the transaction.
    if (queue.length) await pipelined(tx, insertAuditRows(tx, queue));
    return r;
  } finally {
    deferredAudits.delete(tx);
  }
}

/**
 * The audit entry of a change as one `INSERT … SELECT … FROM <source>`, for a data-modifying CTE
 * that makes the change and writes its entry in one statement (issue 22): the entry is written once
 * per row of `source` (a CTE name: the changed row), so a change that inserted nothing writes no
 * entry. The same columns and values as auditAll.
 */
export function auditInsertSql(
  deps: { clock: Clock },
  actor: Actor,
  entry: AuditInput,
  source: string,
  /** Fields of `after` only the statement knows (a jsonb expression over `source`'s columns), merged into it. */
  afterFromSource?: Prisma.Sql,
): Prisma.Sql {
  const { actorType, actorId } = actorOf(actor.principal);
  const occurredAt = deps.clock.now();
  const json = (v: Record<string, unknown> | null | undefined) => (v ? JSON.stringify(v) : null);
  const after = afterFromSource
    ? Prisma.sql`COALESCE(${json(entry.after)}::jsonb, '{}'::jsonb) || ${afterFromSource}`
    : Prisma.sql`${json(entry.after)}::jsonb`;
  return Prisma.sql`INSERT INTO "AuditLogEntry" ("id", "occurredAt", "organizationId", "actorType", "actorId", "entityType", "entityId", "action", "requestId", "before", "after")
    SELECT ${monotonicUuidv7(occurredAt.getTime())}::uuid, ${occurredAt}::timestamptz, ${entry.organizationId}::uuid, ${actorType}::"PrincipalType", ${actorId}::uuid,
      ${entry.entityType}, ${entry.entityId}::uuid, ${entry.action}, ${actor.requestId}, ${json(entry.before)}::jsonb, ${after}
    FROM ${Prisma.raw(`"${source.replace(/"/g, '')}"`)}`;
}

/**
 * The head of an audit insert (`INSERT INTO … (columns)`), for a set-based statement that writes the
 * entries of many changes from its own rows (a group commit's CTE: src/accounts/create-batch.ts).
 * The columns, in order: id, occurredAt, organizationId, actorType (actorOf), actorId, entityType,
 * entityId, action, requestId, before, after.
 */
export const AUDIT_INSERT_HEAD =
  'INSERT INTO "AuditLogEntry" ("id", "occurredAt", "organizationId", "actorType", "actorId", "entityType", "entityId", "action", "requestId", "before", "after")';

/** One audit entry of a change made by `actor`. */
export const auditAs = (tx: RawDb, deps: { clock: Clock }, actor: Actor, entry: AuditInput) => auditAll(tx, deps, actor, [entry]);

/** The actor recorded in audit entries. */
export function actorOf(p: Principal | null): { actorType: 'MEMBER' | 'API_KEY' | 'ACCOUNT_HOLDER' | 'OPERATOR' | 'SYSTEM'; actorId: string | null } {
  switch (p?.type) {
    case 'member':
      return { actorType: 'MEMBER', actorId: p.memberId };
    case 'apiKey':
      return { actorType: 'API_KEY', actorId: p.apiKeyId };
    case 'accountHolder':
      return { actorType: 'ACCOUNT_HOLDER', actorId: p.accountHolderId };
    case 'operator':
      return { actorType: 'OPERATOR', actorId: p.operatorId };
    default:
      return { actorType: 'SYSTEM', actorId: null };
  }
}
