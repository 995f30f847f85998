import { fromPrisma } from 'pg-boss';
import type { PgBoss } from 'pg-boss';
import { pipelined, Prisma, type RawDb } from '../db/prisma';
import { sqlState } from '../errors';
import type { Clock } from '../clock';
import { webhookEvent, type EventFields, type EventType, type WebhookEventData } from './events';
import type { MoneyDeps } from '../kernel/service';
import { DELIVER_QUEUE } from '../kernel/queues';

/**
 * The transactional outbox. `emitEvent` runs inside the transaction of the change it describes and
 * writes, in that transaction: the event (with the exact body every attempt will send), one delivery
 * per ACTIVE endpoint of the organization, each with the endpoint's next SequenceNumber, and one
 * delivery job per delivery (pg-boss, through the same transaction). Commit makes all of it
 * visible at once; a rollback leaves no event, no delivery and no job.
 *
 * SequenceNumber: each endpoint has a PostgreSQL sequence of its own (`webhook_endpoint_sequence(id)`,
 * created with the row). Numbers are unique and strictly increasing per endpoint in the order they are
 * taken, and no lock is held to commit: the event-emitting transactions of one organization never
 * wait for each other. A rollback leaves a gap; two concurrent emitters may commit in the other order
 * than their numbers (the spec calls SequenceNumber a hint). The endpoint rows are only share-locked,
 * against a concurrent deactivation.
 */

export interface DeliverJob {
  deliveryId: string;
  /** The attempt this job makes (1 for the first); a job for an attempt already made is a no-op. */
  attempt: number;
  /**
   * Sandbox fast-forward of the whole schedule (POST /v1/sandbox/webhook-deliveries/{id}/fast-forward,
   * attempts REMAINING): a failed attempt schedules the next one at once, carrying the flag on.
   */
  fastForward?: true;
}

export interface OutboxDeps {
  clock: Clock;
  boss: PgBoss | null;
}

/** pg-boss options of a delivery job: grouped by endpoint for the per-endpoint concurrency cap. */
export function deliverJob(deliveryId: string, endpointId: string, attempt: number, startAfter?: Date, fastForward?: boolean) {
  return {
    // The first attempt's job id is the delivery id: sending it twice inserts one job. (A job put
    // back for later, with startAfter, gets a new id: the original may still be active.)
    ...(attempt === 1 && !startAfter ? { id: deliveryId } : {}),
    data: { deliveryId, attempt, ...(fastForward ? { fastForward: true as const } : {}) } satisfies DeliverJob,
    group: { id: endpointId },
    ...(startAfter ? { startAfter } : {}),
  };
}

/** Sends delivery jobs through the caller's transaction. */
export async function sendDeliverJobs(tx: RawDb, boss: PgBoss | null, jobs: ReturnType<typeof deliverJob>[]): Promise<void> {
  if (!jobs.length) return;
  if (!boss) throw new Error('webhook delivery needs the job runner (deps.boss)');
  await boss.insert(DELIVER_QUEUE, jobs, { db: fromPrisma(tx as never) });
}

export async function emitEvent(
  tx: RawDb,
  deps: OutboxDeps,
  organizationId: string,
  event: WebhookEventData,
): Promise<{ eventId: string; deliveries: { id: string; endpointId: string; sequenceNumber: bigint }[] }> {
  const now = deps.clock.now();
  const rows = await tx.$queryRaw<{ eventId: string; id: string | null; endpointId: string | null; sequenceNumber: bigint | null }[]>`
    WITH ev AS (
      INSERT INTO "WebhookEvent" ("id", "organizationId", "eventType", "aggregateId", "body", "occurredAt")
      VALUES (uuidv7(), ${organizationId}::uuid, ${event.type}, ${event.aggregateId}::uuid, ${event.body}, ${now})
      RETURNING "id"
    ), endpoints AS MATERIALIZED (
      -- FOR SHARE: emitters do not wait for each other; a deactivation (an UPDATE of the row) waits
      -- for the emitters in flight and then cancels their deliveries, and an emitter after it sees it.
      SELECT "id" FROM "WebhookEndpoint"
      WHERE "organizationId" = ${organizationId}::uuid AND "status" = 'ACTIVE'
      ORDER BY "id" FOR SHARE
    ), numbered AS MATERIALIZED (
      SELECT "id", nextval(webhook_endpoint_sequence("id")::regclass) AS "sequenceNumber" FROM endpoints
    ), deliveries AS (
      INSERT INTO "WebhookDelivery" ("id", "organizationId", "endpointId", "eventId", "eventType", "sequenceNumber", "status", "attemptCount", "nextAttemptAt", "createdAt", "updatedAt")
      SELECT uuidv7(), ${organizationId}::uuid, numbered."id", ev."id", ${event.type}, numbered."sequenceNumber", 'ATTEMPT_PENDING', 0, ${now}, ${now}, ${now}
      FROM numbered, ev
      RETURNING "id", "endpointId", "sequenceNumber"
    )
    SELECT ev."id" AS "eventId", d."id", d."endpointId", d."sequenceNumber"
    FROM ev LEFT JOIN deliveries d ON true`;
  const deliveries = rows.filter((r) => r.id !== null).map((r) => ({ id: r.id!, endpointId: r.endpointId!, sequenceNumber: r.sequenceNumber! }));
  await sendDeliverJobs(
    tx,
    deps.boss,
    deliveries.map((d) => deliverJob(d.id, d.endpointId, 1)),
  );
  return { eventId: rows[0]!.eventId, deliveries };
}

/** Emits a catalog event in the caller's transaction (the outbox). */
export async function emit<T extends EventType>(tx: RawDb, deps: MoneyDeps, organizationId: string, type: T, fields: EventFields[T]): Promise<void> {
  const queued = deferredEvents.get(tx);
  if (queued) queued.push({ organizationId, event: webhookEvent(type, fields) });
  else await emitEvent(tx, deps, organizationId, webhookEvent(type, fields));
}

/** Events queued by emit() in a database transaction that defers them (deferEvents). */
const deferredEvents = new WeakMap<object, { organizationId: string; event: WebhookEventData }[]>();

/**
 * Runs `fn` with the events that emit() makes in `tx` queued instead of inserted one statement each,
 * then writes them all, in emission order, with one statement (emitEvents) in the same database
 * transaction: a group commit's events (N deposits confirmed by one sync chunk) cost one insert.
 * Nothing reads an event back in the transaction that emits it, so deferring the insert to the end
 * of the same transaction changes nothing but the statement count. Nested calls join the outer queue.
 */
export async function deferEvents<R>(tx: RawDb, deps: OutboxDeps, fn: () => Promise<R>): Promise<R> {
  if (deferredEvents.has(tx)) return fn();
  const queue: { organizationId: string; event: WebhookEventData }[] = [];
  deferredEvents.set(tx, queue);
  try {
    const r = await fn();
    deferredEvents.delete(tx);
    // Pipelined on the pool's connection (a sync chunk's): nothing reads the events back in the transaction.
    await pipelined(tx, emitEvents(tx, deps, queue));
    return r;
  } finally {
    deferredEvents.delete(tx);
  }
}

/**
 * The common table expressions that write `events` (ids from the database's clock in list order) with
 * their deliveries, as emitEvents writes them, for a statement that writes other rows too (a payment
 * intent's creation: issue 22). The last one, `deliveries`, returns each delivery's "id" and
 * "endpointId": the caller sends their jobs (sendDeliverJobs) in the same transaction. The names
 * input, ev, endpoints, pairs, numbered and deliveries are taken.
 */
export function eventsCte(deps: Pick<OutboxDeps, 'clock'>, events: readonly { organizationId: string; event: WebhookEventData }[]): Prisma.Sql {
  const now = deps.clock.now();
  return Prisma.sql`input AS MATERIALIZED (
      -- Ids from the database's clock, as emitEvent's: taken row by row in list order (unnest's order).
      SELECT uuidv7() AS "id", i.* FROM unnest(${events.map((e) => e.organizationId)}::uuid[], ${events.map((e) => e.event.type)}::text[],
                           ${events.map((e) => e.event.aggregateId)}::uuid[], ${events.map((e) => e.event.body)}::text[])
             WITH ORDINALITY AS i("org", "type", "agg", "body", "n")
    ), ev AS (
      INSERT INTO "WebhookEvent" ("id", "organizationId", "eventType", "aggregateId", "body", "occurredAt")
      SELECT "id", "org", "type", "agg", "body", ${now} FROM input ORDER BY "n"
    ), endpoints AS MATERIALIZED (
      -- FOR SHARE, as emitEvent does.
      SELECT e."id", e."organizationId" FROM "WebhookEndpoint" e
      WHERE e."organizationId" IN (SELECT DISTINCT "org" FROM input) AND e."status" = 'ACTIVE'
      ORDER BY e."id" FOR SHARE
    ), pairs AS MATERIALIZED (
      SELECT i."id" AS "eventId", i."org", i."type", ep."id" AS "endpointId"
      FROM input i JOIN endpoints ep ON ep."organizationId" = i."org" ORDER BY i."n", ep."id"
    ), numbered AS MATERIALIZED (
      SELECT p.*, nextval(webhook_endpoint_sequence(p."endpointId")::regclass) AS "sequenceNumber" FROM pairs p
    ), deliveries AS (
      INSERT INTO "WebhookDelivery" ("id", "organizationId", "endpointId", "eventId", "eventType", "sequenceNumber", "status", "attemptCount", "nextAttemptAt", "createdAt", "updatedAt")
      SELECT uuidv7(), "org", "endpointId", "eventId", "type", "sequenceNumber", 'ATTEMPT_PENDING', 0, ${now}, ${now}, ${now} FROM numbered
      RETURNING "id", "endpointId"
    )`;
}

/**
 * For a statement with eventsCte written on the belief that no endpoint gets a delivery (none was
 * found by its read, so no delivery job is sent after it): an expression that is 1 while `deliveries`
 * wrote nothing, and fails the statement (a division by zero, as pg-boss's own flow insert guards
 * itself) once an endpoint added since the read got one, so nothing of it commits. The caller catches
 * that failure (deliveriesAppeared) and writes again, reading the endpoint.
 */
export const NO_DELIVERIES = Prisma.sql`(SELECT 1 / (CASE WHEN EXISTS (SELECT 1 FROM deliveries) THEN 0 ELSE 1 END))`;
/** Whether `e` is NO_DELIVERIES' failure. */
export const deliveriesAppeared = (e: unknown): boolean => sqlState(e) === '22012';

/**
 * Emits many events in the caller's transaction with one statement (group commit of independent
 * operations, issue 22): the same rows as `emitEvent` for each, in list order (event ids, from the
 * database's clock as emitEvent's, increase in that order; each endpoint's SequenceNumbers are taken in that order), and the delivery jobs in one
 * insert.
 */
export async function emitEvents(tx: RawDb, deps: OutboxDeps, events: readonly { organizationId: string; event: WebhookEventData }[]): Promise<void> {
  if (!events.length) return;
  if (events.length === 1) {
    await emitEvent(tx, deps, events[0]!.organizationId, events[0]!.event);
    return;
  }
  const rows = await tx.$queryRaw<{ id: string; endpointId: string }[]>`
    WITH ${eventsCte(deps, events)}
    SELECT "id"::text AS "id", "endpointId"::text AS "endpointId" FROM deliveries`;
  await sendDeliverJobs(
    tx,
    deps.boss,
    rows.map((d) => deliverJob(d.id, d.endpointId, 1)),
  );
}
