import { z } from 'zod';
import type { Context } from '../context';
import { destinationPolicy } from '../config';
import { DomainError, fieldError, invalidState, notFound } from '../errors';
import { assertId, uuidv7 } from '../ids';
import { audit } from '../audit/audit';
import { assertOrganization } from '../tenancy/access';
import { newWebhookSecret, seal } from '../auth/secrets';
import { checkDestination, checkUrlSyntax } from './destination';
import { secretAad } from './delivery';
import { notifyStatus } from './status';

/**
 * Webhook endpoints of an organization. The signing secret is shown once, in the answer of
 * registration and of each rotation; it is stored sealed (AES-256-GCM) and never read back by
 * any query. Rotation replaces it at once: the next attempt of any delivery signs with the new one.
 */
export const MAX_ACTIVE_ENDPOINTS = 50;

export const registerInput = z.object({ url: z.string().trim().min(1, 'must not be empty').max(2048) });

export const endpointSelect = {
  id: true,
  organizationId: true,
  url: true,
  status: true,
  secretVersion: true,
  createdAt: true,
  updatedAt: true,
  secretRotatedAt: true,
  deactivatedAt: true,
} as const;

/** Syntax, then the resolved addresses: a URL that is not a public https destination is refused at registration. */
async function validateUrl(ctx: Context, raw: string): Promise<string> {
  const policy = destinationPolicy(ctx.deps.config);
  const syntax = checkUrlSyntax(raw, policy);
  if (!syntax.ok) throw fieldError('url', withAllowlistHint(ctx, syntax));
  const dest = await checkDestination(syntax.url.toString(), policy);
  if (!dest.ok) throw fieldError('url', withAllowlistHint(ctx, dest));
  return syntax.url.toString();
}

/**
 * A loopback, private or localhost destination is refused with the way to allow it: a developer
 * registering a local receiver learns the setting from the 400 itself (README "Webhooks").
 */
function withAllowlistHint(ctx: Context, refusal: { reason: string; addressRefused?: true }): string {
  if (!refusal.addressRefused) return refusal.reason;
  return ctx.deps.config.NODE_ENV === 'production'
    ? `${refusal.reason}; in production webhooks go to public https addresses only`
    : `${refusal.reason}; outside production, start the service with WEBHOOK_DESTINATION_ALLOWLIST (CIDRs, e.g. WEBHOOK_DESTINATION_ALLOWLIST=127.0.0.1/32) to deliver to a local receiver`;
}

export async function loadEndpoint(ctx: Context, idArg: unknown) {
  const id = assertId(idArg, 'WebhookEndpoint');
  const endpoint = await ctx.deps.db.webhookEndpoint.findUnique({ where: { id }, select: endpointSelect });
  if (!endpoint) throw notFound('WebhookEndpoint');
  assertOrganization(ctx, endpoint.organizationId, 'WebhookEndpoint');
  return endpoint;
}

export async function registerEndpoint(ctx: Context, organizationIdArg: string, input: z.infer<typeof registerInput>) {
  const organizationId = assertId(organizationIdArg, 'Organization');
  assertOrganization(ctx, organizationId, 'Organization');
  const url = await validateUrl(ctx, input.url);
  const id = uuidv7(ctx.deps.clock.now().getTime());
  const secret = newWebhookSecret();
  const memberId = ctx.principal?.type === 'member' ? ctx.principal.memberId : null;
  const endpoint = await ctx.deps.db.$transaction(async (tx) => {
    // Serializes registrations of one organization so the limit holds under concurrency.
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${'webhook-endpoints ' + organizationId}, 0))`;
    const active = await tx.webhookEndpoint.count({ where: { organizationId, status: 'ACTIVE' } });
    if (active >= MAX_ACTIVE_ENDPOINTS) throw new DomainError('CONFLICT', `An organization has at most ${MAX_ACTIVE_ENDPOINTS} active webhook endpoints.`);
    const created = await tx.webhookEndpoint.create({
      data: {
        id,
        organizationId,
        url,
        secretCiphertext: seal(ctx.deps.sealingKey, secret, secretAad(id)),
        createdByMemberId: memberId,
        createdAt: ctx.deps.clock.now(),
      },
      select: endpointSelect,
    });
    await audit(tx, ctx, {
      organizationId,
      entityType: 'WebhookEndpoint',
      entityId: id,
      action: 'webhook_endpoint.registered',
      after: { url, status: created.status },
    });
    return created;
  });
  return { ...endpoint, secret };
}

export async function rotateSecret(ctx: Context, idArg: unknown) {
  const current = await loadEndpoint(ctx, idArg);
  const secret = newWebhookSecret();
  const now = ctx.deps.clock.now();
  const endpoint = await ctx.deps.db.$transaction(async (tx) => {
    const rows = await tx.webhookEndpoint.updateManyAndReturn({
      where: { id: current.id, status: 'ACTIVE' },
      data: { secretCiphertext: seal(ctx.deps.sealingKey, secret, secretAad(current.id)), secretVersion: { increment: 1 }, secretRotatedAt: now },
      select: endpointSelect,
    });
    if (!rows.length) throw invalidState('A deactivated endpoint has no secret to rotate.');
    await audit(tx, ctx, {
      organizationId: current.organizationId,
      entityType: 'WebhookEndpoint',
      entityId: current.id,
      action: 'webhook_endpoint.secret_rotated',
      before: { secretVersion: current.secretVersion },
      after: { secretVersion: rows[0]!.secretVersion },
    });
    return rows[0]!;
  });
  return { ...endpoint, secret };
}

/**
 * Deactivates an endpoint (terminal). It gets no new deliveries, and its deliveries still pending
 * (first attempt or awaiting retry) are CANCELLED in the same transaction: their jobs find them
 * cancelled and do nothing. Deactivating a deactivated endpoint changes nothing.
 */
export async function deactivateEndpoint(ctx: Context, idArg: unknown) {
  const current = await loadEndpoint(ctx, idArg);
  if (current.status === 'DEACTIVATED') return current;
  const now = ctx.deps.clock.now();
  return ctx.deps.db.$transaction(async (tx) => {
    const rows = await tx.webhookEndpoint.updateManyAndReturn({
      where: { id: current.id, status: 'ACTIVE' },
      data: { status: 'DEACTIVATED', deactivatedAt: now },
      select: endpointSelect,
    });
    if (!rows.length) return loadEndpoint(ctx, current.id);
    const cancelled = await tx.webhookDelivery.updateManyAndReturn({
      where: { endpointId: current.id, status: { in: ['ATTEMPT_PENDING', 'AWAITING_RETRY'] } },
      data: { status: 'CANCELLED', cancelledAt: now, nextAttemptAt: null },
      select: { id: true, eventType: true, attemptCount: true, originalDeliveryId: true },
    });
    await notifyStatus(
      tx,
      cancelled.map((d) => ({
        kind: 'CANCELLED' as const,
        deliveryId: d.id,
        endpointId: current.id,
        organizationId: current.organizationId,
        eventType: d.eventType,
        status: 'CANCELLED',
        attemptCount: d.attemptCount,
        outcome: null,
        statusCode: null,
        nextAttemptAt: null,
        originalDeliveryId: d.originalDeliveryId,
        at: now.toISOString(),
      })),
    );
    await audit(tx, ctx, {
      organizationId: current.organizationId,
      entityType: 'WebhookEndpoint',
      entityId: current.id,
      action: 'webhook_endpoint.deactivated',
      before: { status: 'ACTIVE' },
      after: { status: 'DEACTIVATED', cancelledDeliveries: cancelled.length },
    });
    return rows[0]!;
  });
}
