import { randomInt } from 'node:crypto';
import type { PgBoss } from 'pg-boss';
import type { Logger } from 'pino';
import type { Db, PrismaClient } from '../db/prisma';
import { signWebhook } from './verify';
import type { Clock } from '../clock';
import { destinationPolicy, type Config } from '../config';
import { unseal } from '../auth/secrets';
import type { DestinationPolicy } from './destination';
import { sendAttempt, type AttemptResult } from './sender';
import { deliverJob, sendDeliverJobs, type DeliverJob } from './outbox';
import { notifyStatus, type DeliveryStatusChange, type DeliveryStatusKind } from './status';
import { contextOfJob, inSpan, metrics, SpanKind } from '../kernel/telemetry';

/**
 * The delivery job: one attempt per job. A batch of jobs is attempted concurrently (pg-boss caps
 * the jobs in flight per endpoint), then every outcome is recorded in ONE transaction: the attempt
 * row (unique per delivery and attempt number, so a job that runs twice records once), the
 * delivery's new state, the next attempt's job and the status notifications.
 *
 * A job whose attempt is already recorded, or whose delivery is no longer pending, does nothing:
 * jobs are at least once, attempts are recorded exactly once.
 */
export const MAX_ATTEMPTS = 10;
const BASE_DELAY_MS = 30_000;
const MAX_DELAY_MS = 24 * 3600_000;
export const RESPONSE_BODY_LIMIT = 16 * 1024;

/**
 * The delay before retry n (n = 1 after the first failed attempt): 30 s x 2^(n-1), at most 24 h,
 * times a uniform jitter factor in [0.8, 1.2]. `random` returns [0, 1).
 */
export function retryDelayMs(n: number, random: () => number = () => randomInt(0, 2 ** 32) / 2 ** 32): number {
  const base = Math.min(BASE_DELAY_MS * 2 ** (n - 1), MAX_DELAY_MS);
  return Math.min(Math.round(base * (0.8 + 0.4 * random())), MAX_DELAY_MS);
}

export interface DeliveryDeps {
  db: PrismaClient;
  clock: Clock;
  log: Logger;
  boss: PgBoss | null;
  sealingKey: Buffer;
  policy: DestinationPolicy;
  timeoutMs: number;
  /** Extra trusted CA for receivers (tests only). */
  ca?: string;
}

/** The delivery settings of a process, from its configuration. */
export function deliveryDeps(
  deps: { db: PrismaClient; clock: Clock; log: Logger; sealingKey: Buffer; config: Config },
  boss: PgBoss | null,
  ca?: string,
): DeliveryDeps {
  const c = deps.config;
  return {
    db: deps.db,
    clock: deps.clock,
    log: deps.log,
    boss,
    sealingKey: deps.sealingKey,
    policy: destinationPolicy(c),
    timeoutMs: c.WEBHOOK_ATTEMPT_TIMEOUT_MS,
    ca,
  };
}

type Loaded = {
  id: string;
  endpointId: string;
  organizationId: string;
  eventType: string;
  status: string;
  attemptCount: number;
  nextAttemptAt: Date | null;
  originalDeliveryId: string | null;
  url: string;
  endpointStatus: string;
  secretCiphertext: Uint8Array;
  body: string;
};

/** Associated data of an endpoint's sealed secret (binds the ciphertext to the endpoint row). */
export const secretAad = (endpointId: string) => `webhook-endpoint:${endpointId}`;

type Due = { job: DeliverJob; d: Loaded };
type Attempted = Due & { at: Date; result: AttemptResult };

/**
 * Reads the deliveries of `jobs` and sorts the jobs: due (attempt them), early (fetched before their
 * time by our clock: put back for later), or stale (attempt already made, delivery no longer
 * pending, endpoint deactivated: nothing to do). Early jobs are put back here.
 */
export async function prepareAttempts(deps: DeliveryDeps, jobs: DeliverJob[]): Promise<{ due: Due[]; early: number }> {
  if (!jobs.length) return { due: [], early: 0 };
  const ids = [...new Set(jobs.map((j) => j.deliveryId))];
  const rows = await deps.db.$queryRaw<Loaded[]>`
    SELECT d."id", d."endpointId", d."organizationId", d."eventType", d."status"::text AS "status", d."attemptCount",
           d."nextAttemptAt", d."originalDeliveryId", e."url", e."status"::text AS "endpointStatus", e."secretCiphertext", ev."body"
    FROM "WebhookDelivery" d
    JOIN "WebhookEndpoint" e ON e."id" = d."endpointId"
    JOIN "WebhookEvent" ev ON ev."id" = d."eventId"
    WHERE d."id" = ANY(${ids}::uuid[])`;
  const byId = new Map(rows.map((r) => [r.id, r]));
  const now = deps.clock.now();
  const due: Due[] = [];
  const early: Due[] = [];
  const seen = new Set<string>();
  // Two jobs for one attempt (a sandbox fast-forward beside the scheduled retry): whichever is kept,
  // the attempt carries the fast-forward mark if either job does, so the chain never depends on order.
  const fastForwarded = new Set(jobs.filter((j) => j.fastForward).map((j) => `${j.deliveryId}:${j.attempt}`));
  for (const found of jobs) {
    const d = byId.get(found.deliveryId);
    const key = `${found.deliveryId}:${found.attempt}`;
    if (!d || seen.has(key)) continue;
    seen.add(key);
    const job: DeliverJob = fastForwarded.has(key) ? { ...found, fastForward: true } : found;
    if ((d.status !== 'ATTEMPT_PENDING' && d.status !== 'AWAITING_RETRY') || d.attemptCount + 1 !== job.attempt) continue;
    if (d.endpointStatus !== 'ACTIVE') continue; // deactivation cancelled it in its own transaction
    // Fetched before its time by our clock (clock skew with the database): put it back.
    if (d.nextAttemptAt && d.nextAttemptAt.getTime() > now.getTime() + 1000) early.push({ job, d });
    else due.push({ job, d });
  }
  if (early.length)
    await deps.db.$transaction((tx) =>
      sendDeliverJobs(
        tx,
        deps.boss,
        early.map(({ job, d }) => deliverJob(d.id, d.endpointId, job.attempt, d.nextAttemptAt!, job.fastForward)),
      ),
    );
  return { due, early: early.length };
}

/**
 * Unsealed secrets, per endpoint, for as long as the sealed value read with the delivery is the same
 * (a rotation changes it, so the next attempt unseals the new one). Bounded and short-lived: it saves
 * the AES-GCM unseal of every attempt, and keeps no secret in memory longer than SECRET_CACHE_MS.
 */
const SECRET_CACHE_MS = 60_000;
const SECRET_CACHE_MAX = 10_000;
const secrets = new Map<string, { sealed: Buffer; secret: string; at: number }>();
function endpointSecret(deps: DeliveryDeps, endpointId: string, sealed: Uint8Array): string {
  const now = performance.now();
  const hit = secrets.get(endpointId);
  if (hit && now - hit.at < SECRET_CACHE_MS && hit.sealed.equals(sealed)) return hit.secret;
  const secret = unseal(deps.sealingKey, sealed, secretAad(endpointId));
  if (secrets.size >= SECRET_CACHE_MAX) secrets.clear();
  secrets.set(endpointId, { sealed: Buffer.from(sealed), secret, at: now });
  return secret;
}

/** One attempt: signed when sent, with the endpoint's current secret. Never throws for the receiver's failures. */
export async function attemptDelivery(deps: DeliveryDeps, { job, d }: Due): Promise<Attempted> {
  const at = deps.clock.now();
  const ts = Math.floor(at.getTime() / 1000);
  const secret = endpointSecret(deps, d.endpointId, d.secretCiphertext);
  // A span per attempt, child of the trace that sent the delivery's job (its data carries it when traced).
  const result = await inSpan(
    'webhook attempt',
    { 'webhook.delivery_id': d.id, 'webhook.endpoint_id': d.endpointId, 'webhook.attempt': job.attempt },
    async (span) => {
      const r = await sendAttempt({
        url: d.url,
        body: d.body,
        headers: { 'X-Webhook-Signature': signWebhook(secret, ts, d.body), 'X-Webhook-Timestamp': String(ts), 'X-Webhook-Delivery-Id': d.id },
        timeoutMs: deps.timeoutMs,
        policy: deps.policy,
        maxResponseBytes: RESPONSE_BODY_LIMIT,
        ca: deps.ca,
      });
      span?.setAttributes({ 'webhook.outcome': r.outcome, ...(r.statusCode !== null ? { 'http.response.status_code': r.statusCode } : {}) });
      return r;
    },
    { kind: SpanKind.CLIENT, parent: contextOfJob(job) },
  );
  metrics.webhookAttempts.inc({ outcome: result.outcome });
  metrics.webhookAttemptDuration.observe({ outcome: result.outcome }, result.latencyMs / 1000);
  return { job, d, at, result };
}

/** A batch of jobs, start to end: prepare, attempt all concurrently, record in one transaction. */
export async function processDeliveries(deps: DeliveryDeps, jobs: DeliverJob[]): Promise<{ attempted: number; skipped: number }> {
  const { due, early } = await prepareAttempts(deps, jobs);
  if (!due.length) return { attempted: 0, skipped: jobs.length - early };
  const results = await Promise.all(due.map((item) => attemptDelivery(deps, item)));
  await recordAttempts(deps, results);
  return { attempted: results.length, skipped: jobs.length - results.length - early };
}

/**
 * Records attempts in one transaction (with `inTx`, e.g. completing their jobs, in the same one):
 * attempt rows, delivery states, next jobs, notifications.
 */
export async function recordAttempts(deps: DeliveryDeps, results: Attempted[], inTx?: (tx: Db) => Promise<unknown>): Promise<void> {
  const planned = results.map(({ job, d, at, result }) => {
    const ok = result.outcome === 'SUCCESS';
    const status = ok ? 'DELIVERED' : job.attempt >= MAX_ATTEMPTS ? 'DEAD_LETTER' : 'AWAITING_RETRY';
    // A sandbox fast-forward of the remaining schedule makes every retry due at once.
    const next = status === 'AWAITING_RETRY' ? new Date(at.getTime() + (job.fastForward ? 0 : retryDelayMs(job.attempt))) : null;
    return { job, d, at, result, status, next };
  });
  type Updated = {
    id: string;
    endpointId: string;
    organizationId: string;
    eventType: string;
    status: string;
    attemptCount: number;
    nextAttemptAt: Date | null;
    originalDeliveryId: string | null;
  };
  let deadLettered = 0;
  await deps.db.$transaction(async (tx) => {
    const updated = await tx.$queryRaw<Updated[]>`
      WITH input AS (
        SELECT * FROM unnest(
          ${planned.map((p) => p.d.id)}::uuid[], ${planned.map((p) => p.job.attempt)}::int[], ${planned.map((p) => p.at)}::timestamptz[],
          ${planned.map((p) => p.result.outcome)}::text[], ${planned.map((p) => p.result.statusCode)}::int[], ${planned.map((p) => p.result.latencyMs)}::int[],
          ${planned.map((p) => p.result.responseBody)}::text[], ${planned.map((p) => p.result.error)}::text[], ${planned.map((p) => p.next)}::timestamptz[],
          ${planned.map((p) => p.status)}::text[]
        ) AS t(delivery_id, attempt, at, outcome, status_code, latency, body, error, next_at, new_status)
      ), recorded AS (
        INSERT INTO "WebhookDeliveryAttempt" ("id", "deliveryId", "attemptNumber", "attemptedAt", "outcome", "statusCode", "latencyMs", "responseBody", "error", "nextAttemptAt")
        SELECT uuidv7(), delivery_id, attempt, at, outcome::"WebhookAttemptOutcome", status_code, latency, body, error, next_at FROM input
        ON CONFLICT ("deliveryId", "attemptNumber") DO NOTHING
        RETURNING "deliveryId", "attemptNumber"
      )
      UPDATE "WebhookDelivery" d SET
        "attemptCount" = i.attempt,
        "lastAttemptAt" = i.at,
        "lastOutcome" = i.outcome::"WebhookAttemptOutcome",
        "lastStatusCode" = i.status_code,
        "lastError" = i.error,
        -- Deactivation may have cancelled the delivery while the attempt was in flight: a success
        -- still counts, a failure leaves it cancelled with no retry.
        "status" = CASE WHEN d."status" = 'CANCELLED' AND i.new_status <> 'DELIVERED' THEN 'CANCELLED' ELSE i.new_status::"WebhookDeliveryStatus" END,
        "nextAttemptAt" = CASE WHEN d."status" = 'CANCELLED' THEN NULL ELSE i.next_at END,
        "deliveredAt" = CASE WHEN i.new_status = 'DELIVERED' THEN i.at ELSE d."deliveredAt" END,
        "deadLetteredAt" = CASE WHEN i.new_status = 'DEAD_LETTER' AND d."status" <> 'CANCELLED' THEN i.at ELSE d."deadLetteredAt" END,
        "updatedAt" = i.at
      FROM input i JOIN recorded r ON r."deliveryId" = i.delivery_id AND r."attemptNumber" = i.attempt
      WHERE d."id" = i.delivery_id AND d."attemptCount" = i.attempt - 1
      RETURNING d."id", d."endpointId", d."organizationId", d."eventType", d."status"::text AS "status", d."attemptCount", d."nextAttemptAt", d."originalDeliveryId"`;
    const byId = new Map(planned.map((p) => [p.d.id, p]));
    await sendDeliverJobs(
      tx,
      deps.boss,
      updated
        .filter((u) => u.status === 'AWAITING_RETRY')
        .map((u) => deliverJob(u.id, u.endpointId, u.attemptCount + 1, u.nextAttemptAt!, byId.get(u.id)!.job.fastForward)),
    );
    const changes: DeliveryStatusChange[] = [];
    for (const u of updated) {
      const p = byId.get(u.id)!;
      const base = {
        deliveryId: u.id,
        endpointId: u.endpointId,
        organizationId: u.organizationId,
        eventType: u.eventType,
        status: u.status,
        attemptCount: u.attemptCount,
        outcome: p.result.outcome,
        statusCode: p.result.statusCode,
        nextAttemptAt: u.nextAttemptAt?.toISOString() ?? null,
        originalDeliveryId: u.originalDeliveryId,
        at: p.at.toISOString(),
      };
      changes.push({ kind: 'ATTEMPTED', ...base });
      const kind: DeliveryStatusKind | null =
        u.status === 'DELIVERED' ? 'DELIVERED' : u.status === 'AWAITING_RETRY' ? 'RETRY_SCHEDULED' : u.status === 'DEAD_LETTER' ? 'DEAD_LETTERED' : null;
      if (kind) changes.push({ kind, ...base });
    }
    await notifyStatus(tx, changes);
    if (inTx) await inTx(tx);
    deadLettered = updated.filter((u) => u.status === 'DEAD_LETTER').length;
  });
  if (deadLettered) metrics.webhookDeadLettered.inc(deadLettered);
}
