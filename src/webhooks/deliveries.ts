import { z } from 'zod';
import type { PgBoss } from 'pg-boss';
import { fromPrisma } from 'pg-boss';
import type { Context } from '../context';
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
// Endpoint health: what an operator looks at first.

export async function endpointHealth(db: PrismaClient, endpointId: string, now: Date) {
  const since = new Date(now.getTime() - 24 * 3600_000);
  const [row] = await db.$queryRaw<
    {
      attempts: bigint;
      successes: bigint;
      deadLetters: bigint;
      pending: bigint;
      nextRetryAt: Date | null;
      lastErrorAt: Date | null;
      lastError: string | null;
      lastOutcome: string | null;
      lastStatusCode: number | null;
      lastSuccessAt: Date | null;
    }[]
  >`
    SELECT
      (SELECT count(*) FROM "WebhookDeliveryAttempt" a JOIN "WebhookDelivery" d ON d."id" = a."deliveryId" WHERE d."endpointId" = ${endpointId}::uuid AND a."attemptedAt" >= ${since}) AS "attempts",
      (SELECT count(*) FROM "WebhookDeliveryAttempt" a JOIN "WebhookDelivery" d ON d."id" = a."deliveryId" WHERE d."endpointId" = ${endpointId}::uuid AND a."attemptedAt" >= ${since} AND a."outcome" = 'SUCCESS') AS "successes",
      (SELECT count(*) FROM "WebhookDelivery" WHERE "endpointId" = ${endpointId}::uuid AND "status" = 'DEAD_LETTER') AS "deadLetters",
      (SELECT count(*) FROM "WebhookDelivery" WHERE "endpointId" = ${endpointId}::uuid AND "status" IN ('ATTEMPT_PENDING', 'AWAITING_RETRY')) AS "pending",
      (SELECT min("nextAttemptAt") FROM "WebhookDelivery" WHERE "endpointId" = ${endpointId}::uuid AND "status" = 'AWAITING_RETRY') AS "nextRetryAt",
      f."attemptedAt" AS "lastErrorAt", f."error" AS "lastError", f."outcome"::text AS "lastOutcome", f."statusCode" AS "lastStatusCode",
      (SELECT max(a."attemptedAt") FROM "WebhookDeliveryAttempt" a JOIN "WebhookDelivery" d ON d."id" = a."deliveryId" WHERE d."endpointId" = ${endpointId}::uuid AND a."outcome" = 'SUCCESS') AS "lastSuccessAt"
    FROM (SELECT 1) one
    LEFT JOIN LATERAL (
      SELECT a."attemptedAt", a."error", a."outcome", a."statusCode" FROM "WebhookDeliveryAttempt" a JOIN "WebhookDelivery" d ON d."id" = a."deliveryId"
      WHERE d."endpointId" = ${endpointId}::uuid AND a."outcome" <> 'SUCCESS' ORDER BY a."attemptedAt" DESC LIMIT 1
    ) f ON true`;
  const attempts = Number(row!.attempts);
  return {
    attemptsLast24h: attempts,
    successRateLast24h: attempts ? Number(row!.successes) / attempts : null,
    deadLetterCount: Number(row!.deadLetters),
    pendingCount: Number(row!.pending),
    nextRetryAt: row!.nextRetryAt,
    lastSuccessAt: row!.lastSuccessAt,
    lastErrorAt: row!.lastErrorAt,
    lastError: row!.lastError ?? (row!.lastOutcome ? `${row!.lastOutcome}${row!.lastStatusCode ? ` ${row!.lastStatusCode}` : ''}` : null),
  };
}
