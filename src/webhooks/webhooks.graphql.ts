import {
  batchLoad,
  builder,
  countedConnection,
  createdWhere,
  creationArgs,
  keysetConnection,
  NodeRef,
  registerNode,
  restListSize,
  REST_LIST_MAX,
} from '../builder';
import { policies, type Policy } from '../auth/policy';
import { DomainError, notFound } from '../errors';
import { assertId } from '../ids';
import { assertOrganization } from '../tenancy/access';
import * as endpoints from './endpoints';
import * as deliveries from './deliveries';
import { eventTypes } from './events';
import type { DeliveryStatusChange } from './status';
import { deliveryEnvironmentTypes } from './environment';
import * as sandboxWebhooks from './sandbox';
import { EnvironmentType } from '../tenancy/tenancy.graphql';

/** Registering, rotating and deactivating endpoints: the organization's own configuration and secrets, its members only. */
const manage = policies.member('webhook-endpoint-manage');
/**
 * Reading endpoints (never their secret), deliveries, payloads and attempts, and redelivering: the
 * organization's members, and platform operators for every organization (an operator's redelivery is
 * audited under the operator's identity). docs/decisions.md "Operators and tenants' deliveries (issue 23)".
 */
const manageOrOperator: Policy = policies.memberOrOperator('webhook-endpoint-manage');
/** Reading one delivery: also the organization's API keys, for the events of their mode. */
const readDelivery: Policy = { member: 'webhook-endpoint-manage', apiKey: true, operator: true };
/** Fast-forwarding a sandbox delivery: the organization's members and API keys (a test tool of the integrator's, not an operator's). */
const fastForward = policies.memberOrApiKey('webhook-endpoint-manage');

const WebhookEndpointStatus = builder.enumType('WebhookEndpointStatus', {
  description: 'ACTIVE -> DEACTIVATED (terminal).',
  values: ['ACTIVE', 'DEACTIVATED'] as const,
});
const WebhookDeliveryStatus = builder.enumType('WebhookDeliveryStatus', {
  description:
    "The spec's delivery states: ATTEMPT_PENDING (attempt pending), AWAITING_RETRY, DELIVERED, DEAD_LETTER; and " +
    'CANCELLED: the endpoint was deactivated before the delivery finished.',
  values: ['ATTEMPT_PENDING', 'AWAITING_RETRY', 'DELIVERED', 'DEAD_LETTER', 'CANCELLED'] as const,
});
const WebhookAttemptOutcome = builder.enumType('WebhookAttemptOutcome', {
  description: 'SUCCESS: a 2xx answer. HTTP_ERROR: any other status (redirects are not followed). The rest: no answer.',
  values: ['SUCCESS', 'HTTP_ERROR', 'TIMEOUT', 'CONNECTION_REFUSED', 'CONNECTION_ERROR', 'DNS_ERROR', 'TLS_ERROR', 'BLOCKED_DESTINATION'] as const,
});
const WebhookDeliveryStatusKind = builder.enumType('WebhookDeliveryStatusKind', {
  values: ['ATTEMPTED', 'DELIVERED', 'RETRY_SCHEDULED', 'DEAD_LETTERED', 'REDELIVERED', 'CANCELLED'] as const,
});
const WebhookRedeliveryJobStatus = builder.enumType('WebhookRedeliveryJobStatus', { values: ['PENDING', 'RUNNING', 'COMPLETED', 'FAILED'] as const });

type Health = Awaited<ReturnType<typeof deliveries.endpointHealth>>;
const WebhookOutcomeHour = builder.objectRef<Health['outcomesPerHour'][number]>('WebhookOutcomeHour').implement({
  description: "One UTC hour of an endpoint's attempts.",
  fields: (t) => ({
    hour: t.expose('hour', { type: 'DateTime', description: 'The start of the hour.' }),
    successes: t.exposeInt('successes'),
    failures: t.exposeInt('failures', { description: 'Attempts with any other outcome than SUCCESS.' }),
  }),
});
const WebhookEndpointHealth = builder.objectRef<Health>('WebhookEndpointHealth').implement({
  description:
    'Computed by the server with aggregates over a bounded window (the current UTC hour and the windowHours - 1 before it): ' +
    'attempt counts, success rate and outcomes per hour; backlog, dead letters, next retry, last success and last error of the endpoint.',
  fields: (t) => ({
    windowHours: t.exposeInt('windowHours'),
    windowStart: t.expose('windowStart', { type: 'DateTime', description: 'The start of the first hour of the window.' }),
    attempts: t.exposeInt('attempts', { description: 'Attempts in the window.' }),
    successes: t.exposeInt('successes'),
    failures: t.exposeInt('failures'),
    successRate: t.exposeFloat('successRate', { nullable: true, description: 'successes / attempts in the window (null: no attempt).' }),
    outcomesPerHour: t.field({
      type: [WebhookOutcomeHour],
      description: 'One entry per hour of the window, oldest first (zeros included).',
      resolve: (h) => h.outcomesPerHour,
    }),
    attemptsLast24h: t.exposeInt('attemptsLast24h', { description: 'Attempts of the last 24 hours (a sliding window, whatever windowHours).' }),
    successRateLast24h: t.exposeFloat('successRateLast24h', {
      nullable: true,
      description: 'Successful attempts / attempts over the last 24 hours (null: no attempt).',
    }),
    deadLetterCount: t.exposeInt('deadLetterCount'),
    pendingCount: t.exposeInt('pendingCount', { description: 'The backlog: deliveries waiting for their first attempt or a retry.' }),
    nextRetryAt: t.expose('nextRetryAt', { type: 'DateTime', nullable: true }),
    lastSuccessAt: t.expose('lastSuccessAt', { type: 'DateTime', nullable: true }),
    lastErrorAt: t.expose('lastErrorAt', {
      type: 'DateTime',
      nullable: true,
      description: 'The last failed attempt: exact within the window; before it, the last attempt of the newest delivery whose last attempt failed.',
    }),
    lastError: t.exposeString('lastError', { nullable: true }),
  }),
});

type EndpointFields = {
  id: string;
  organizationId: string;
  url: string;
  status: 'ACTIVE' | 'DEACTIVATED';
  secretVersion: number;
  createdAt: Date;
  updatedAt: Date;
  secretRotatedAt: Date | null;
  deactivatedAt: Date | null;
};
const WebhookEndpointFields = builder.interfaceRef<EndpointFields>('WebhookEndpointFields').implement({
  description: 'The fields of a webhook endpoint, with or without its secret.',
  fields: (t) => ({
    id: t.exposeID('id'),
    organizationId: t.exposeID('organizationId'),
    url: t.exposeString('url'),
    status: t.field({ type: WebhookEndpointStatus, resolve: (e) => e.status }),
    secretVersion: t.exposeInt('secretVersion', { description: 'Increases with each rotation; only the current secret signs.' }),
    createdAt: t.field({ type: 'DateTime', resolve: (e) => e.createdAt }),
    updatedAt: t.field({ type: 'DateTime', resolve: (e) => e.updatedAt }),
    secretRotatedAt: t.field({ type: 'DateTime', nullable: true, resolve: (e) => e.secretRotatedAt }),
    deactivatedAt: t.field({ type: 'DateTime', nullable: true, resolve: (e) => e.deactivatedAt }),
  }),
});

const WebhookEndpoint = builder.objectRef<EndpointFields>('WebhookEndpoint').implement({
  description: 'A webhook endpoint of an organization. It receives every event of the catalog. The secret is never readable here.',
  interfaces: [WebhookEndpointFields, NodeRef],
  isTypeOf: (v) => typeof v === 'object' && v !== null && !('secret' in v),
  fields: (t) => ({
    id: t.exposeID('id'),
    health: t.field({
      type: WebhookEndpointHealth,
      args: {
        windowHours: t.arg.int({
          description: `The window of attempts, in whole UTC hours (the current one included): ${deliveries.HEALTH_WINDOW_HOURS.min} to ${deliveries.HEALTH_WINDOW_HOURS.max}, default ${deliveries.HEALTH_WINDOW_HOURS.default}.`,
        }),
      },
      resolve: (e, args, ctx) => deliveries.endpointHealth(ctx.deps.db, e.id, ctx.deps.clock.now(), args.windowHours),
    }),
    deliveries: t.connection({
      type: WebhookDelivery,
      description: 'Its deliveries, newest first, with their attempts (REST ListWebhookDeliveries reads it).',
      ...restListSize,
      args: {
        ...creationArgs,
        status: t.arg({ type: [WebhookDeliveryStatus] }),
        eventType: t.arg.string({ description: 'An event type of the catalog, e.g. deposit.confirmed.' }),
      },
      resolve: (e, args, ctx) => {
        deliveries.checkEventType(args.eventType);
        return keysetConnection(
          args,
          (q) =>
            ctx.deps.db.webhookDelivery.findMany({
              where: {
                AND: [
                  q.where,
                  { endpointId: e.id },
                  createdWhere(args),
                  args.status?.length ? { status: { in: args.status } } : {},
                  args.eventType ? { eventType: args.eventType } : {},
                ],
              },
              orderBy: q.orderBy,
              take: q.take,
            }),
          undefined,
          REST_LIST_MAX,
        );
      },
    }),
  }),
});

registerNode({ typename: 'WebhookEndpoint', policy: manageOrOperator, load: (ctx, id) => endpoints.loadEndpoint(ctx, id) });
registerNode({ typename: 'WebhookDelivery', policy: readDelivery, load: (ctx, id) => deliveries.loadDelivery(ctx, id) });

builder.prismaObjectField('Organization', 'webhookEndpoints', (t) =>
  t.connection(
    {
      type: WebhookEndpoint,
      description: "The organization's webhook endpoints, newest first.",
      authScopes: { policy: manageOrOperator },
      args: { ...creationArgs, status: t.arg({ type: [WebhookEndpointStatus] }) },
      resolve: (org, args, ctx) => {
        const where = { organizationId: org.id, ...createdWhere(args), ...(args.status?.length ? { status: { in: args.status } } : {}) };
        return keysetConnection(
          args,
          (q) => ctx.deps.db.webhookEndpoint.findMany({ where: { ...where, ...q.where }, select: endpoints.endpointSelect, orderBy: q.orderBy, take: q.take }),
          () => ctx.deps.db.webhookEndpoint.count({ where }),
        );
      },
    },
    countedConnection,
  ),
);
const WebhookEndpointWithSecret = builder.objectRef<EndpointFields & { secret: string }>('WebhookEndpointWithSecret').implement({
  description: 'The answer of registration and of rotation: the endpoint with its signing secret, shown this once.',
  interfaces: [WebhookEndpointFields],
  isTypeOf: (v) => typeof v === 'object' && v !== null && 'secret' in v,
  fields: (t) => ({
    secret: t.exposeString('secret', { description: 'HMAC-SHA256 key: the UTF-8 bytes of this whole string.' }),
  }),
});

const WebhookDeliveryAttempt = builder.prismaObject('WebhookDeliveryAttempt', {
  fields: (t) => ({
    attemptNumber: t.exposeInt('attemptNumber'),
    attemptedAt: t.expose('attemptedAt', { type: 'DateTime' }),
    outcome: t.expose('outcome', { type: WebhookAttemptOutcome }),
    statusCode: t.exposeInt('statusCode', { nullable: true }),
    latencyMs: t.exposeInt('latencyMs'),
    responseBody: t.exposeString('responseBody', { nullable: true, description: 'The first 16 KiB of the answer.' }),
    error: t.exposeString('error', { nullable: true }),
    nextAttemptAt: t.expose('nextAttemptAt', { type: 'DateTime', nullable: true, description: 'When the retry after this attempt was scheduled.' }),
  }),
});

export const WebhookDelivery = builder.prismaObject('WebhookDelivery', {
  description: 'One event for one endpoint, with its attempts.',
  interfaces: [NodeRef],
  fields: (t) => ({
    id: t.exposeID('id', { description: 'Sent as X-Webhook-Delivery-Id.' }),
    endpointId: t.exposeID('endpointId'),
    organizationId: t.exposeID('organizationId'),
    eventId: t.exposeID('eventId'),
    eventType: t.exposeString('eventType'),
    environmentType: t.field({
      type: EnvironmentType,
      nullable: true,
      description: "SANDBOX or PRODUCTION: the environment type of the event's aggregate (null when it cannot be told).",
      // One statement for every delivery of a level (batchLoad), not one per delivery.
      resolve: async (d, _a, ctx) =>
        (await batchLoad(ctx, 'WebhookDelivery.environmentType', d.id, (ids) => deliveryEnvironmentTypes(ctx.deps.db, ids))) ?? null,
    }),
    sequenceNumber: t.string({ description: 'Per endpoint, strictly increasing; a hint only. A decimal string.', resolve: (d) => d.sequenceNumber.toString() }),
    status: t.expose('status', { type: WebhookDeliveryStatus }),
    attemptCount: t.exposeInt('attemptCount'),
    nextAttemptAt: t.expose('nextAttemptAt', { type: 'DateTime', nullable: true }),
    lastAttemptAt: t.expose('lastAttemptAt', { type: 'DateTime', nullable: true }),
    deliveredAt: t.expose('deliveredAt', { type: 'DateTime', nullable: true }),
    deadLetteredAt: t.expose('deadLetteredAt', { type: 'DateTime', nullable: true }),
    cancelledAt: t.expose('cancelledAt', { type: 'DateTime', nullable: true }),
    originalDeliveryId: t.exposeID('originalDeliveryId', { nullable: true, description: 'Set on a redelivery: the dead-lettered delivery it repeats.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    payload: t.string({
      description: 'The exact body delivered (the event, PascalCase, no envelope).',
      select: { event: { select: { body: true } } },
      resolve: (d) => d.event.body,
    }),
    attempts: t.relation('attempts', { query: { orderBy: { attemptNumber: 'asc' } } }),
  }),
});

const WebhookRedeliveryJob = builder.prismaObject('WebhookRedeliveryJob', {
  description: "Bulk redelivery of an endpoint's dead-lettered deliveries, run in the background.",
  fields: (t) => ({
    id: t.exposeID('id'),
    endpointId: t.exposeID('endpointId'),
    since: t.expose('since', { type: 'DateTime' }),
    until: t.expose('until', { type: 'DateTime' }),
    eventType: t.exposeString('eventType', { nullable: true }),
    status: t.expose('status', { type: WebhookRedeliveryJobStatus }),
    total: t.exposeInt('total', { description: 'Dead-lettered deliveries matched when the job started.' }),
    redelivered: t.exposeInt('redelivered'),
    error: t.exposeString('error', { nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    completedAt: t.expose('completedAt', { type: 'DateTime', nullable: true }),
  }),
});

const WebhookDeliveryStatusChange = builder.objectRef<DeliveryStatusChange>('WebhookDeliveryStatusChange').implement({
  fields: (t) => ({
    kind: t.field({ type: WebhookDeliveryStatusKind, resolve: (c) => c.kind }),
    deliveryId: t.exposeID('deliveryId'),
    endpointId: t.exposeID('endpointId'),
    organizationId: t.exposeID('organizationId'),
    eventType: t.exposeString('eventType'),
    status: t.field({ type: WebhookDeliveryStatus, resolve: (c) => c.status as never }),
    attemptCount: t.exposeInt('attemptCount'),
    outcome: t.field({ type: WebhookAttemptOutcome, nullable: true, resolve: (c) => c.outcome as never }),
    statusCode: t.exposeInt('statusCode', { nullable: true }),
    nextAttemptAt: t.field({ type: 'DateTime', nullable: true, resolve: (c) => c.nextAttemptAt }),
    originalDeliveryId: t.exposeID('originalDeliveryId', { nullable: true }),
    at: t.field({ type: 'DateTime', resolve: (c) => c.at }),
  }),
});

const RegisterWebhookEndpointInput = builder.inputType('RegisterWebhookEndpointInput', {
  fields: (t) => ({ url: t.string({ required: true, description: 'https, public address (checked at registration and at every attempt).' }) }),
  validate: endpoints.registerInput,
});
const WebhookFastForwardAttempts = builder.enumType('WebhookFastForwardAttempts', {
  description: 'NEXT: the next attempt is due now. REMAINING: every remaining attempt runs at once, one after the other, until a 2xx or DEAD_LETTER.',
  values: ['NEXT', 'REMAINING'] as const,
});
const SandboxFastForwardInput = builder.inputType('SandboxFastForwardWebhookDeliveryInput', {
  fields: (t) => ({ attempts: t.field({ type: WebhookFastForwardAttempts, description: 'Default NEXT.' }) }),
  validate: sandboxWebhooks.fastForwardInput,
});
const BulkRedeliverInput = builder.inputType('BulkRedeliverWebhookDeliveriesInput', {
  fields: (t) => ({
    endpointId: t.id({ required: true }),
    since: t.field({ type: 'DateTime', required: true, description: 'Deliveries created at or after this time.' }),
    until: t.field({ type: 'DateTime', required: true, description: 'Deliveries created before this time.' }),
    eventType: t.string({ description: `One of: ${eventTypes.length} catalog event types.` }),
  }),
});

builder.queryFields((t) => ({
  webhookEndpoint: t.field({
    type: WebhookEndpoint,
    authScopes: { policy: manageOrOperator },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_p, args, ctx) => endpoints.loadEndpoint(ctx, String(args.id)),
  }),
  webhookEndpoints: t.field({
    type: [WebhookEndpoint],
    description: "The organization's endpoints, oldest first.",
    authScopes: { policy: manageOrOperator },
    args: { organizationId: t.arg.id({ required: true }) },
    resolve: (_p, args, ctx) => {
      const organizationId = assertId(String(args.organizationId), 'Organization');
      assertOrganization(ctx, organizationId, 'Organization');
      return ctx.deps.db.webhookEndpoint.findMany({ where: { organizationId }, orderBy: { id: 'asc' } });
    },
  }),
  webhookDelivery: t.prismaField({
    type: 'WebhookDelivery',
    description:
      'A delivery by id (the X-Webhook-Delivery-Id header): a member with webhook-endpoint-manage, an API key of ' +
      'the organization for the events of its mode (sandbox or production), or a platform operator.',
    authScopes: { policy: readDelivery },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (query, _p, args, ctx) => {
      const d = await deliveries.loadDelivery(ctx, String(args.id));
      const row = await ctx.deps.db.webhookDelivery.findUnique({ ...query, where: { id: d.id } });
      if (!row) throw notFound('WebhookDelivery');
      return row;
    },
  }),
  webhookDeadLetters: t.connection(
    {
      type: WebhookDelivery,
      description:
        'The dead-letter queue: dead-lettered deliveries, newest first, by organization, endpoint, event type and creation time ' +
        '(createdAfter/createdBefore, the range bulkRedeliverWebhookDeliveries takes). A member reads its organization ' +
        '(organizationId defaults to it); a platform operator reads every organization (or one, or one endpoint).',
      authScopes: { policy: manageOrOperator },
      args: {
        organizationId: t.arg.id(),
        endpointId: t.arg.id(),
        eventType: t.arg.string(),
        createdAfter: t.arg({ type: 'DateTime', description: 'Created at or after this instant.' }),
        createdBefore: t.arg({ type: 'DateTime', description: 'Created before this instant.' }),
      },
      resolve: async (_p, args, ctx) => {
        const where = await deliveries.deadLetterWhere(ctx, {
          organizationId: args.organizationId == null ? null : String(args.organizationId),
          endpointId: args.endpointId == null ? null : String(args.endpointId),
          eventType: args.eventType,
          createdAfter: args.createdAfter,
          createdBefore: args.createdBefore,
        });
        return keysetConnection(
          args,
          (q) => ctx.deps.db.webhookDelivery.findMany({ where: { ...where, ...q.where }, orderBy: q.orderBy, take: q.take }),
          () => ctx.deps.db.webhookDelivery.count({ where }),
        );
      },
    },
    countedConnection,
  ),
  webhookRedeliveryJob: t.field({
    type: WebhookRedeliveryJob,
    authScopes: { policy: manageOrOperator },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_p, args, ctx) => deliveries.loadBulkRedelivery(ctx, String(args.id)),
  }),
}));

builder.mutationFields((t) => ({
  registerWebhookEndpoint: t.field({
    type: WebhookEndpointWithSecret,
    authScopes: { policy: manage },
    args: { organizationId: t.arg.id({ required: true }), input: t.arg({ type: RegisterWebhookEndpointInput, required: true }) },
    resolve: (_p, args, ctx) => endpoints.registerEndpoint(ctx, String(args.organizationId), args.input),
  }),
  rotateWebhookEndpointSecret: t.field({
    type: WebhookEndpointWithSecret,
    description: 'Replaces the secret at once: the old one signs nothing more, even retries already scheduled.',
    authScopes: { policy: manage },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_p, args, ctx) => endpoints.rotateSecret(ctx, String(args.id)),
  }),
  deactivateWebhookEndpoint: t.field({
    type: WebhookEndpoint,
    description: 'ACTIVE -> DEACTIVATED: no new deliveries; pending ones are CANCELLED. Idempotent.',
    authScopes: { policy: manage },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_p, args, ctx) => endpoints.deactivateEndpoint(ctx, String(args.id)),
  }),
  redeliverWebhookDelivery: t.prismaField({
    type: 'WebhookDelivery',
    description: 'A new delivery from a dead-lettered one (which stays dead-letter). Also platform operators, audited under their identity.',
    authScopes: { policy: manageOrOperator },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (query, _p, args, ctx) => {
      const d = await deliveries.redeliver(ctx, String(args.id));
      return ctx.deps.db.webhookDelivery.findUniqueOrThrow({ ...query, where: { id: d.id } });
    },
  }),
  sandboxFastForwardWebhookDelivery: t.prismaField({
    type: 'WebhookDelivery',
    description:
      'Sandbox: a pending delivery of a sandbox event attempts now instead of on its schedule (NEXT), or runs its ' +
      'whole remaining schedule at once (REMAINING), to test redelivery without waiting hours. Production keys and ' +
      'production deliveries: NOT_FOUND; a delivery no longer pending: INVALID_STATE.',
    authScopes: { policy: fastForward },
    args: {
      id: t.arg.id({ required: true }),
      input: t.arg({ type: SandboxFastForwardInput }),
      idempotencyKey: t.arg.string({
        description: 'The Idempotency-Key header: same key and input, the first answer again; same key with another input, 409.',
      }),
    },
    resolve: async (query, _p, args, ctx) => {
      const d = await sandboxWebhooks.fastForward(ctx, String(args.id), args.input, args.idempotencyKey);
      return ctx.deps.db.webhookDelivery.findUniqueOrThrow({ ...query, where: { id: d.id } });
    },
  }),
  bulkRedeliverWebhookDeliveries: t.field({
    type: WebhookRedeliveryJob,
    description:
      "Redelivers an endpoint's dead-lettered deliveries created in [since, until), in the background; an original is never redelivered twice. Also platform operators.",
    authScopes: { policy: manageOrOperator },
    args: { input: t.arg({ type: BulkRedeliverInput, required: true }) },
    resolve: (_p, args, ctx) =>
      deliveries.startBulkRedelivery(ctx, {
        endpointId: String(args.input.endpointId),
        since: args.input.since,
        until: args.input.until,
        eventType: args.input.eventType,
      }),
  }),
}));

builder.subscriptionField('webhookDeliveryStatus', (t) =>
  t.field({
    type: WebhookDeliveryStatusChange,
    description:
      'Delivery status changes as they commit, from every process: one endpoint (endpointId), one organization ' +
      '(organizationId), or the whole platform (neither; operators only).',
    authScopes: { policy: manageOrOperator },
    args: { endpointId: t.arg.id(), organizationId: t.arg.id() },
    subscribe: async (_root, args, ctx) => {
      if (args.endpointId != null) {
        const e = await endpoints.loadEndpoint(ctx, String(args.endpointId));
        return ctx.deps.deliveryStatus.subscribe({ endpointId: e.id });
      }
      if (args.organizationId != null) {
        const organizationId = assertId(String(args.organizationId), 'Organization');
        assertOrganization(ctx, organizationId, 'Organization');
        return ctx.deps.deliveryStatus.subscribe({ organizationId });
      }
      if (ctx.principal?.type !== 'operator')
        throw new DomainError('VALIDATION_FAILED', 'Give endpointId or organizationId; only operators follow the whole platform.', {
          fieldErrors: [{ field: 'organizationId', message: 'required unless authenticated as a platform operator' }],
        });
      return ctx.deps.deliveryStatus.subscribe({});
    },
    resolve: (change) => change,
  }),
);
