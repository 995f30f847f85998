import { z } from 'zod';
import type { Context } from '../context';
import { invalidState, notFound } from '../errors';
import { audit } from '../audit/audit';
import { idempotent } from '../idempotency';
import { sandboxCaller } from '../tenancy/sandbox-caller';
import { loadDelivery } from './deliveries';
import { deliveryEnvironmentType } from './environment';
import { deliverJob, sendDeliverJobs } from './outbox';
import { notifyStatus } from './status';

/**
 * Sandbox webhook testing (a test helper, like the sandbox chain's): the retry schedule spans about
 * 4.3 hours, so an integrator could not otherwise watch a delivery dead-letter and redeliver it.
 *
 * `fastForward` makes a pending delivery's next attempt due now (NEXT), or its whole remaining
 * schedule (REMAINING: each failed attempt schedules the next one at once, until a 2xx or the
 * tenth failure, DEAD_LETTER). Nothing else changes: the attempts are real POSTs to the endpoint,
 * signed and recorded as always, and the states and events are the same as on the normal schedule.
 *
 * - Sandbox only: a production API key answers 404 (as every /v1/sandbox route); so does a delivery
 *   whose event is not a sandbox one (its aggregate's environment type, src/webhooks/environment.ts),
 *   for members too: the facility does not exist for production deliveries.
 * - A delivery that is no longer pending (DELIVERED, DEAD_LETTER, CANCELLED) answers 409.
 * - Idempotent under `Idempotency-Key` (same key and request: the first answer); without a key,
 *   calling it again is harmless: a job for an attempt already made does nothing.
 * - The change, its audit entry, the job and the status notification commit together.
 */
export const fastForwardInput = z.object({ attempts: z.enum(['NEXT', 'REMAINING']).nullish() });

export async function fastForward(
  ctx: Context,
  idArg: unknown,
  input: z.infer<typeof fastForwardInput> | null | undefined,
  idempotencyKey?: string | null,
): Promise<{ id: string }> {
  const caller = await sandboxCaller(ctx);
  const delivery = await loadDelivery(ctx, idArg);
  if ((await deliveryEnvironmentType(ctx.deps.db, delivery.id)) !== 'SANDBOX') throw notFound('Sandbox webhook delivery');
  const attempts = input?.attempts ?? 'NEXT';
  return ctx.deps.db.$transaction((tx) =>
    idempotent(
      tx,
      ctx,
      { scope: `sandbox.webhook_fast_forward:${caller.organizationId}:${caller.actor}`, key: idempotencyKey, request: { deliveryId: delivery.id, attempts } },
      async () => {
        const now = ctx.deps.clock.now();
        const [locked] = await tx.$queryRaw<{ status: string; attemptCount: number; nextAttemptAt: Date | null }[]>`
        SELECT "status"::text AS "status", "attemptCount", "nextAttemptAt" FROM "WebhookDelivery" WHERE "id" = ${delivery.id}::uuid FOR UPDATE`;
        if (locked!.status !== 'ATTEMPT_PENDING' && locked!.status !== 'AWAITING_RETRY')
          throw invalidState(`Only a pending delivery (ATTEMPT_PENDING or AWAITING_RETRY) can be fast-forwarded; this one is ${locked!.status}.`);
        await tx.webhookDelivery.update({ where: { id: delivery.id }, data: { nextAttemptAt: now } });
        // A job of its own, due now (the one already scheduled finds its attempt made and does nothing).
        await sendDeliverJobs(tx, ctx.deps.boss, [deliverJob(delivery.id, delivery.endpointId, locked!.attemptCount + 1, now, attempts === 'REMAINING')]);
        await notifyStatus(tx, [
          {
            kind: 'RETRY_SCHEDULED',
            deliveryId: delivery.id,
            endpointId: delivery.endpointId,
            organizationId: delivery.organizationId,
            eventType: delivery.eventType,
            status: locked!.status,
            attemptCount: locked!.attemptCount,
            outcome: null,
            statusCode: null,
            nextAttemptAt: now.toISOString(),
            originalDeliveryId: delivery.originalDeliveryId,
            at: now.toISOString(),
          },
        ]);
        await audit(tx, ctx, {
          organizationId: delivery.organizationId,
          entityType: 'WebhookDelivery',
          entityId: delivery.id,
          action: 'sandbox.webhook_delivery_fast_forwarded',
          before: { status: locked!.status, attemptCount: locked!.attemptCount, nextAttemptAt: locked!.nextAttemptAt?.toISOString() ?? null },
          after: { nextAttemptAt: now.toISOString(), attempts },
        });
        return { id: delivery.id };
      },
    ),
  );
}
