import { z } from 'zod';
import type { PgBoss } from 'pg-boss';
import { fromPrisma } from 'pg-boss';
import type { Context } from '../context';
import { Prisma } from '../generated/prisma/client';
import type { Db, PrismaClient } from '../db/prisma';
import type { Clock } from '../clock';
import type { Logger } from 'pino';
import { fieldError, invalidState, notFound } from '../errors';
import { assertId, isUuid } from '../ids';
import { audit } from '../audit/audit';
import { assertOrganization } from '../tenancy/access';
import { isEventType } from './events';
import { deliveryEnvironmentType } from './environment';
import { loadEndpoint } from './endpoints';
import { deliverJob, sendDeliverJobs } from './outbox';
import { notifyStatus, type DeliveryStatusChange } from './status';
import { BULK_QUEUE } from '../kernel/queues';

export const deliveryInclude = { attempts: { orderBy: { attemptNumber: 'asc' } }, event: { select: { body: true } } } as const;

/**
 * A delivery the principal may see: a member's or operator's as the organization rule says; an API
 * key's only when the delivery's event is of the key's mode (a sandbox key reads sandbox events, a
 * production key production ones), as it sees the aggregates themselves. 404 otherwise.
 */
export async function loadDelivery(ctx: Context, idArg: unknown) {
  const id = assertId(idArg, 'WebhookDelivery');
  const delivery = await ctx.deps.db.webhookDelivery.findUnique({ where: { id }, include: deliveryInclude });
  if (!delivery) throw notFound('WebhookDelivery');
  assertOrganization(ctx, delivery.organizationId, 'WebhookDelivery');
  const p = ctx.principal;
  if (p?.type === 'apiKey' && (await deliveryEnvironmentType(ctx.deps.db, delivery.id)) !== p.mode) throw notFound('WebhookDelivery');
  return delivery;
}

/** The eventType filter of a delivery list: an event type of the catalog (400 naming eventType otherwise). */
export function checkEventType(eventType: string | null | undefined): void {
  if (eventType != null && !isEventType(eventType)) throw fieldError('eventType', 'must be an event type of the catalog, e.g. deposit.confirmed');
}

type NewDelivery = { id: string; endpointId: string; organizationId: string; eventType: string; originalDeliveryId: string; attemptCount: number };

/**
 * Inserts redeliveries of `originalIds` (dead-lettered deliveries of `endpointId`) with the next
 * SequenceNumbers of the endpoint, their jobs and REDELIVERED notifications, in `tx`.
 */
async function insertRedeliveries(
  tx: Db,
  boss: PgBoss | null,
  now: Date,
  endpointId: string,
  originalIds: string[],
  redeliveryJobId: string | null,
): Promise<NewDelivery[]> {
  if (!originalIds.length) return [];
  const created = await tx.$queryRaw<NewDelivery[]>`
    WITH originals AS (
      SELECT o."id", o."organizationId", o."eventId", o."eventType", row_number() OVER (ORDER BY o."id") AS n
      FROM "WebhookDelivery" o
      WHERE o."id" = ANY(${originalIds}::uuid[]) AND o."endpointId" = ${endpointId}::uuid AND o."status" = 'DEAD_LETTER'
    ), endpoint AS MATERIALIZED (
      SELECT e."id" FROM "WebhookEndpoint" e WHERE e."id" = ${endpointId}::uuid AND e."status" = 'ACTIVE' FOR SHARE
    ), numbered AS MATERIALIZED (
      -- Numbers taken in the originals' order (the sort below the call).
      SELECT o.*, nextval(webhook_endpoint_sequence(o."endpointId")::regclass) AS "sequenceNumber"
      FROM (SELECT originals.*, endpoint."id" AS "endpointId" FROM originals, endpoint ORDER BY originals.n) o
    )
    INSERT INTO "WebhookDelivery" ("id", "organizationId", "endpointId", "eventId", "eventType", "sequenceNumber", "status", "attemptCount", "nextAttemptAt",
                                   "originalDeliveryId", "redeliveryJobId", "createdAt", "updatedAt")
    SELECT uuidv7(), o."organizationId", ${endpointId}::uuid, o."eventId", o."eventType", o."sequenceNumber", 'ATTEMPT_PENDING', 0, ${now},
           o."id", ${redeliveryJobId}::uuid, ${now}, ${now}
    FROM numbered o
    ON CONFLICT ("redeliveryJobId", "originalDeliveryId") DO NOTHING
    RETURNING "id", "endpointId", "organizationId", "eventType", "originalDeliveryId", "attemptCount"`;
  await sendDeliverJobs(
    tx,
    boss,
    created.map((d) => deliverJob(d.id, d.endpointId, 1)),
  );
  await notifyStatus(
    tx,
    created.map((d): DeliveryStatusChange => ({
      kind: 'REDELIVERED',
      deliveryId: d.id,
      endpointId: d.endpointId,
      organizationId: d.organizationId,
      eventType: d.eventType,
      status: 'ATTEMPT_PENDING',
      attemptCount: 0,
      outcome: null,
      statusCode: null,
      nextAttemptAt: now.toISOString(),
      originalDeliveryId: d.originalDeliveryId,
      at: now.toISOString(),
    })),
  );
  return created;
}

/**
 * Redelivers a dead-lettered delivery: a new delivery (new id, attempt count 0, the same event
 * body, the endpoint's next SequenceNumber) linked to the original, which stays dead-letter.
 * Anything but a dead-lettered delivery of an active endpoint answers 409.
 */
export async function redeliver(ctx: Context, idArg: unknown) {
  const original = await loadDelivery(ctx, idArg);
  const now = ctx.deps.clock.now();
  const created = await ctx.deps.db.$transaction(async (tx) => {
    const [locked] = await tx.$queryRaw<{ status: string; endpointStatus: string }[]>`
      SELECT d."status"::text AS "status", e."status"::text AS "endpointStatus"
      FROM "WebhookDelivery" d JOIN "WebhookEndpoint" e ON e."id" = d."endpointId"
      WHERE d."id" = ${original.id}::uuid FOR UPDATE OF d`;
    if (locked!.status !== 'DEAD_LETTER') throw invalidState(`Only a dead-lettered delivery can be redelivered; this one is ${locked!.status}.`);
    if (locked!.endpointStatus !== 'ACTIVE') throw invalidState('The endpoint is deactivated.');
    const [d] = await insertRedeliveries(tx, ctx.deps.boss, now, original.endpointId, [original.id], null);
    await audit(tx, ctx, {
      organizationId: original.organizationId,
      entityType: 'WebhookDelivery',
      entityId: d!.id,
      action: 'webhook_delivery.redelivered',
      after: { originalDeliveryId: original.id, endpointId: original.endpointId },
    });
    return d!;
  });
  return loadDelivery(ctx, created.id);
}

// ---------------------------------------------------------------------------------------------
// Bulk redelivery: an endpoint's dead-lettered deliveries created in [since, until), optionally of
// one event type, redelivered by a background job in chunks, with progress on the job row.

const CHUNK = 200;

export const bulkInput = z.object({
  endpointId: z.string(),
  since: z.date(),
  until: z.date(),
  eventType: z.string().nullish(),
});

export async function startBulkRedelivery(ctx: Context, input: z.infer<typeof bulkInput>) {
  const endpoint = await loadEndpoint(ctx, input.endpointId);
  if (endpoint.status !== 'ACTIVE') throw invalidState('The endpoint is deactivated.');
  if (!(input.since < input.until)) throw fieldError('until', 'must be after since');
  if (input.eventType != null && !isEventType(input.eventType)) throw fieldError('eventType', 'must be an event type of the catalog');
  const now = ctx.deps.clock.now();
  if (!ctx.deps.boss) throw new Error('bulk redelivery needs the job runner (deps.boss)');
  const boss = ctx.deps.boss;
  return ctx.deps.db.$transaction(async (tx) => {
    const job = await tx.webhookRedeliveryJob.create({
      data: {
        organizationId: endpoint.organizationId,
        endpointId: endpoint.id,
        since: input.since,
        until: input.until,
        eventType: input.eventType ?? null,
        requestedByMemberId: ctx.principal?.type === 'member' ? ctx.principal.memberId : null,
        createdAt: now,
      },
    });
    await boss.send(BULK_QUEUE, { jobId: job.id }, { id: job.id, db: fromPrisma(tx as never) });
    await audit(tx, ctx, {
      organizationId: endpoint.organizationId,
      entityType: 'WebhookRedeliveryJob',
      entityId: job.id,
      action: 'webhook_delivery.bulk_redelivery_requested',
      after: { endpointId: endpoint.id, since: input.since.toISOString(), until: input.until.toISOString(), eventType: input.eventType ?? null },
    });
    return job;
  });
}

export async function loadBulkRedelivery(ctx: Context, idArg: unknown) {
  const id = assertId(idArg, 'WebhookRedeliveryJob');
  const job = await ctx.deps.db.webhookRedeliveryJob.findUnique({ where: { id } });
  if (!job) throw notFound('WebhookRedeliveryJob');
  assertOrganization(ctx, job.organizationId, 'WebhookRedeliveryJob');
  return job;
}

/**
 * The bulk job. Each chunk commits its redeliveries and the progress together. An original is
 * picked only when it has no redelivery yet (from this job or any other, or a manual one), so
 * running the job again, or two jobs over overlapping ranges, never redelivers an original twice.
 */
export async function runBulkRedelivery(deps: { db: PrismaClient; boss: PgBoss | null; clock: Clock; log: Logger }, jobId: string): Promise<void> {
  const job = await deps.db.webhookRedeliveryJob.findUnique({ where: { id: jobId } });
  if (!job || job.status === 'COMPLETED' || job.status === 'FAILED') return;
  const match = {
    endpointId: job.endpointId,
    status: 'DEAD_LETTER' as const,
    createdAt: { gte: job.since, lt: job.until },
    ...(job.eventType ? { eventType: job.eventType } : {}),
    redeliveries: { none: {} },
  };
  const total = await deps.db.webhookDelivery.count({ where: match });
  await deps.db.webhookRedeliveryJob.update({ where: { id: job.id }, data: { status: 'RUNNING', total: job.redelivered + total } });
  for (;;) {
    const done = await deps.db.$transaction(async (tx) => {
      // One chunk at a time per endpoint: the endpoint row lock taken by the insert serializes chunks.
      const originals = await tx.webhookDelivery.findMany({ where: match, select: { id: true }, orderBy: { id: 'asc' }, take: CHUNK });
      if (!originals.length) return true;
      const endpoint = await tx.webhookEndpoint.findUnique({ where: { id: job.endpointId }, select: { status: true } });
      if (endpoint?.status !== 'ACTIVE') throw invalidState('The endpoint was deactivated during the bulk redelivery.');
      const created = await insertRedeliveries(
        tx,
        deps.boss,
        deps.clock.now(),
        job.endpointId,
        originals.map((o) => o.id),
        job.id,
      );
      await tx.webhookRedeliveryJob.update({ where: { id: job.id }, data: { redelivered: { increment: created.length } } });
      return created.length === 0;
    });
    if (done) break;
  }
  await deps.db.webhookRedeliveryJob.update({ where: { id: job.id }, data: { status: 'COMPLETED', completedAt: deps.clock.now() } });
}

export async function failBulkRedelivery(db: PrismaClient, jobId: string, error: string, at: Date): Promise<void> {
  await db.webhookRedeliveryJob.updateMany({
    where: { id: jobId, status: { in: ['PENDING', 'RUNNING'] } },
    data: { status: 'FAILED', error, completedAt: at },
  });
}

// ---------------------------------------------------------------------------------------------
// The dead-letter queue: dead-lettered deliveries by organization, endpoint, creation time and event
// type, newest first. Read through partial indexes on ("endpointId", "id"), ("organizationId", "id")
// and ("id") WHERE status = 'DEAD_LETTER' (migration 20261126224205_console_reads): the queue is read
// without touching the deliveries that did not dead-letter.

export interface DeadLetterFilter {
  organizationId?: string | null;
  endpointId?: string | null;
  eventType?: string | null;
  createdAfter?: Date | null;
  createdBefore?: Date | null;
}

/**
 * The Prisma filter of a dead-letter query the principal may run: a member reads its organization
 * (organizationId, when given, must be its own: 404 otherwise, as for any other tenant's id); an
 * operator reads one organization, one endpoint, or the whole platform.
 */
export async function deadLetterWhere(ctx: Context, f: DeadLetterFilter) {
  const p = ctx.principal;
  let organizationId: string | null = null;
  if (f.organizationId != null) {
    organizationId = assertId(f.organizationId, 'Organization');
    assertOrganization(ctx, organizationId, 'Organization');
  } else if (p?.type === 'member') organizationId = p.organizationId;
  else if (p?.type !== 'operator') throw notFound('Organization');
  let endpointId: string | null = null;
  if (f.endpointId != null) {
    const endpoint = await loadEndpoint(ctx, f.endpointId);
    if (organizationId && endpoint.organizationId !== organizationId) throw notFound('WebhookEndpoint');
    endpointId = endpoint.id;
  }
  if (f.eventType != null && !isEventType(f.eventType)) throw fieldError('eventType', 'must be an event type of the catalog, e.g. deposit.confirmed');
  if (f.createdAfter && f.createdBefore && !(f.createdAfter < f.createdBefore)) throw fieldError('createdBefore', 'must be after createdAfter');
  return {
    status: 'DEAD_LETTER' as const,
    ...(organizationId ? { organizationId } : {}),
    ...(endpointId ? { endpointId } : {}),
    ...(f.eventType ? { eventType: f.eventType } : {}),
    ...(f.createdAfter || f.createdBefore
      ? { createdAt: { ...(f.createdAfter ? { gte: f.createdAfter } : {}), ...(f.createdBefore ? { lt: f.createdBefore } : {}) } }
      : {}),
  };
}

// ---------------------------------------------------------------------------------------------
// Endpoint health: what an operator looks at first. Computed by aggregates over a bounded window:
// the deliveries attempted in it are found through the ("endpointId", "lastAttemptAt") index (a
// delivery's last attempt is its latest, so any attempt in the window belongs to a delivery whose
// lastAttemptAt is in it), and their attempts through ("deliveryId", "attemptNumber"). Nothing
// walks an endpoint's whole history.

export const HEALTH_WINDOW_HOURS = { min: 1, max: 168, default: 24 } as const;
const HOUR = 3600_000;

export function healthWindow(now: Date, windowHours: number | null | undefined) {
  const hours = windowHours ?? HEALTH_WINDOW_HOURS.default;
  if (!Number.isInteger(hours) || hours < HEALTH_WINDOW_HOURS.min || hours > HEALTH_WINDOW_HOURS.max)
    throw fieldError('windowHours', `must be an integer from ${HEALTH_WINDOW_HOURS.min} to ${HEALTH_WINDOW_HOURS.max}`);
  // Whole UTC hours: the current one and the hours - 1 before it, so the rate and the chart count the same attempts.
  const firstHour = Math.floor(now.getTime() / HOUR) - hours + 1;
  return { hours, firstHour, start: new Date(firstHour * HOUR) };
}

export async function endpointHealth(db: PrismaClient, endpointId: string, now: Date, windowHours?: number | null) {
  const w = healthWindow(now, windowHours);
  const since24h = new Date(now.getTime() - 24 * HOUR);
  const scanSince = since24h < w.start ? since24h : w.start;
  const attemptsSince = (since: Date) => Prisma.sql`
    SELECT a."attemptedAt" AS "at", a."outcome"::text AS "outcome", a."statusCode", a."error"
    FROM "WebhookDelivery" d JOIN "WebhookDeliveryAttempt" a ON a."deliveryId" = d."id"
    WHERE d."endpointId" = ${endpointId}::uuid AND d."lastAttemptAt" >= ${since} AND a."attemptedAt" >= ${since}`;
  const [hours, [lastFailure], [row]] = await Promise.all([
    db.$queryRaw<{ hour: bigint; successes: bigint; failures: bigint; day: bigint; daySuccesses: bigint }[]>`
      SELECT floor(extract(epoch FROM r."at") / 3600)::bigint AS "hour",
        count(*) FILTER (WHERE r."at" >= ${w.start} AND r."outcome" = 'SUCCESS') AS "successes",
        count(*) FILTER (WHERE r."at" >= ${w.start} AND r."outcome" <> 'SUCCESS') AS "failures",
        count(*) FILTER (WHERE r."at" >= ${since24h}) AS "day",
        count(*) FILTER (WHERE r."at" >= ${since24h} AND r."outcome" = 'SUCCESS') AS "daySuccesses"
      FROM (${attemptsSince(scanSince)}) r GROUP BY 1`,
    db.$queryRaw<{ at: Date; outcome: string; statusCode: number | null; error: string | null }[]>`
      SELECT r.* FROM (${attemptsSince(w.start)}) r WHERE r."outcome" <> 'SUCCESS' ORDER BY r."at" DESC LIMIT 1`,
    db.$queryRaw<
      {
        deadLetters: bigint;
        pending: bigint;
        nextRetryAt: Date | null;
        lastSuccessAt: Date | null;
        lastFailedAt: Date | null;
        lastFailedOutcome: string | null;
        lastFailedStatusCode: number | null;
        lastFailedError: string | null;
      }[]
    >`
      SELECT
        (SELECT count(*) FROM "WebhookDelivery" WHERE "endpointId" = ${endpointId}::uuid AND "status" = 'DEAD_LETTER') AS "deadLetters",
        (SELECT count(*) FROM "WebhookDelivery" WHERE "endpointId" = ${endpointId}::uuid AND "status" IN ('ATTEMPT_PENDING', 'AWAITING_RETRY')) AS "pending",
        (SELECT min("nextAttemptAt") FROM "WebhookDelivery" WHERE "endpointId" = ${endpointId}::uuid AND "status" = 'AWAITING_RETRY') AS "nextRetryAt",
        -- A success is always its delivery's last attempt: the newest delivery whose last attempt succeeded.
        (SELECT "lastAttemptAt" FROM "WebhookDelivery" WHERE "endpointId" = ${endpointId}::uuid AND "lastOutcome" = 'SUCCESS'
          ORDER BY "lastAttemptAt" DESC LIMIT 1) AS "lastSuccessAt",
        f."lastAttemptAt" AS "lastFailedAt", f."lastOutcome"::text AS "lastFailedOutcome", f."lastStatusCode" AS "lastFailedStatusCode", f."lastError" AS "lastFailedError"
      FROM (SELECT 1) one
      LEFT JOIN LATERAL (
        SELECT "lastAttemptAt", "lastOutcome", "lastStatusCode", "lastError" FROM "WebhookDelivery"
        WHERE "endpointId" = ${endpointId}::uuid AND "lastOutcome" <> 'SUCCESS' ORDER BY "lastAttemptAt" DESC LIMIT 1
      ) f ON true`,
  ]);
  const byHour = new Map(hours.map((h) => [Number(h.hour), h]));
  const outcomesPerHour = Array.from({ length: w.hours }, (_, i) => {
    const h = byHour.get(w.firstHour + i);
    return { hour: new Date((w.firstHour + i) * HOUR), successes: Number(h?.successes ?? 0), failures: Number(h?.failures ?? 0) };
  });
  const successes = outcomesPerHour.reduce((a, h) => a + h.successes, 0);
  const attempts = successes + outcomesPerHour.reduce((a, h) => a + h.failures, 0);
  const day = hours.reduce((a, h) => a + Number(h.day), 0);
  const daySuccesses = hours.reduce((a, h) => a + Number(h.daySuccesses), 0);
  // The last failed attempt: exact within the window; before it, the newest delivery whose last attempt failed.
  const failure = lastFailure
    ? { at: lastFailure.at, outcome: lastFailure.outcome, statusCode: lastFailure.statusCode, error: lastFailure.error }
    : row!.lastFailedAt
      ? { at: row!.lastFailedAt, outcome: row!.lastFailedOutcome, statusCode: row!.lastFailedStatusCode, error: row!.lastFailedError }
      : null;
  return {
    windowHours: w.hours,
    windowStart: w.start,
    attempts,
    successes,
    failures: attempts - successes,
    successRate: attempts ? successes / attempts : null,
    outcomesPerHour,
    attemptsLast24h: day,
    successRateLast24h: day ? daySuccesses / day : null,
    deadLetterCount: Number(row!.deadLetters),
    pendingCount: Number(row!.pending),
    nextRetryAt: row!.nextRetryAt,
    lastSuccessAt: row!.lastSuccessAt,
    lastErrorAt: failure?.at ?? null,
    lastError: failure ? (failure.error ?? `${failure.outcome}${failure.statusCode ? ` ${failure.statusCode}` : ''}`) : null,
  };
}
