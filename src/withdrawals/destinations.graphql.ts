import { builder, createdWhere, creationArgs, keysetConnection, NodeRef, registerNode, restListSize, REST_LIST_MAX } from '../builder';
import { policies, type Policy } from '../auth/policy';
import { EnvironmentType } from '../tenancy/tenancy.graphql';
import * as destinations from './destinations';
import * as withdrawals from './withdrawals';

/** GraphQL of withdrawal destinations (docs/withdrawals.md). The REST routes of rest/routes.ts carry the same policies. */

// ------------------------------------------------------------------------------------------------
// Withdrawal destinations

const WithdrawalDestinationStatus = builder.enumType('WithdrawalDestinationStatus', {
  description: 'ACTIVE (usable for withdrawals) -> BLOCKED (by a platform operator; terminal: refuses new withdrawals, stops pending ones).',
  values: ['ACTIVE', 'BLOCKED'] as const,
});

export const WithdrawalDestination = builder.prismaObject('WithdrawalDestination', {
  interfaces: [NodeRef],
  description: 'An address an organization registered ahead of its withdrawals (an allow-list entry). docs/withdrawals.md.',
  fields: (t) => ({
    id: t.exposeID('id'),
    organizationId: t.exposeID('organizationId'),
    networkId: t.exposeID('networkId'),
    environmentType: t.expose('environmentType', { type: EnvironmentType, description: "The network's environment type." }),
    address: t.exposeString('address', { description: 'Normalized for its network (lower-case hex for SANDBOX and EVM).' }),
    label: t.exposeString('label', { nullable: true }),
    status: t.expose('status', { type: WithdrawalDestinationStatus }),
    blockedReason: t.exposeString('blockedReason', { nullable: true }),
    blockedAt: t.expose('blockedAt', { type: 'DateTime', nullable: true }),
    blockedByOperatorId: t.exposeID('blockedByOperatorId', { nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
  }),
});

const RegisterWithdrawalDestinationInput = builder.inputType('RegisterWithdrawalDestinationInput', {
  fields: (t) => ({
    networkId: t.id({ required: true, description: 'A network of the catalog (an API key: of its environment type).' }),
    address: t.string({ required: true, description: 'Well formed for the network (SANDBOX: 0x and 40 hex digits).' }),
    label: t.string({ description: 'Free text, up to 200 characters.' }),
  }),
});

const BlockWithdrawalDestinationInput = builder.inputType('BlockWithdrawalDestinationInput', {
  fields: (t) => ({ reason: t.string({ required: true, description: '1 to 1000 characters.' }) }),
});

const destinationRead: Policy = { member: 'account-read', apiKey: true, operator: true };
registerNode({ typename: 'WithdrawalDestination', policy: destinationRead, load: (ctx, id) => destinations.loadDestination(ctx, id) });
const destinationManage = policies.memberOrApiKey('payment-manage');

builder.prismaObjectField('Organization', 'withdrawalDestinations', (t) =>
  t.connection({
    type: WithdrawalDestination,
    description:
      'Its withdrawal destinations, newest first (REST ListWithdrawalDestinations reads it oldest first); an API key sees those of its environment type.',
    authScopes: { policy: destinationRead },
    ...restListSize,
    args: creationArgs,
    resolve: (org, args, ctx) =>
      keysetConnection(
        args,
        (q) =>
          ctx.deps.db.withdrawalDestination.findMany({
            where: { AND: [q.where, destinations.visibleWhere(ctx) ?? { id: { in: [] } }, { organizationId: org.id }, createdWhere(args)] },
            orderBy: q.orderBy,
            take: q.take,
          }),
        undefined,
        REST_LIST_MAX,
      ),
  }),
);

// ------------------------------------------------------------------------------------------------

builder.queryFields((t) => ({
  withdrawalDestination: t.field({
    type: WithdrawalDestination,
    authScopes: { policy: destinationRead },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_p, args, ctx) => destinations.loadDestination(ctx, String(args.id)),
  }),
}));

builder.mutationFields((t) => ({
  registerWithdrawalDestination: t.field({
    type: WithdrawalDestination,
    description:
      'Registers a withdrawal destination (ACTIVE; withdrawal_destination.registered). The same organization, ' +
      'network and address again: the existing destination, unchanged.',
    authScopes: { policy: destinationManage },
    args: {
      organizationId: t.arg.id({ required: true }),
      input: t.arg({ type: RegisterWithdrawalDestinationInput, required: true }),
      idempotencyKey: t.arg.string({ description: 'Same key and input: the same answer; another input: 409.' }),
    },
    resolve: (_p, args, ctx) => destinations.registerDestination(ctx, String(args.organizationId), args.input, args.idempotencyKey),
  }),
  adminBlockWithdrawalDestination: t.field({
    type: WithdrawalDestination,
    description: 'AdminBlockWithdrawalDestination (operators): ACTIVE -> BLOCKED with a reason; 409 when blocked already.',
    authScopes: { policy: policies.operator },
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: BlockWithdrawalDestinationInput, required: true }) },
    resolve: (_p, args, ctx) => withdrawals.blockDestination(ctx, String(args.id), args.input),
  }),
}));
