import { amountArgs, amountWhere, builder, createdWhere, creationArgs, keysetConnection, loadOne, NodeRef, registerNode } from '../builder';
import type { Context } from '../context';
import * as accounts from '../accounts/accounts';
import { Account } from '../accounts/accounts.graphql';
import * as destinations from './destinations';
import { WithdrawalDestination } from './destinations.graphql';
import { policies, type Policy } from '../auth/policy';
import { amountToString, numericToAmount } from '../money';
import type { TransferPayload } from '../chains/secp256k1';
import { EnvironmentType } from '../tenancy/tenancy.graphql';
import * as withdrawals from './withdrawals';
import * as signing from './signing';
import * as policyFns from './policies';
import * as resolution from './resolution';
import { selectsOnlyId } from '../kernel/selection';
import type { Withdrawal as WithdrawalRow } from '../generated/prisma/client';

/** GraphQL of withdrawals, their policies and SelfCustody signing requests (docs/withdrawals.md). The REST routes carry the same policies. */

const WithdrawalStatus = builder.enumType('WithdrawalStatus', {
  description:
    'PENDING_APPROVAL -> APPROVED (custodial) or AWAITING_SIGNATURE (SelfCustody) -> BROADCAST -> CONFIRMED; ' +
    'REJECTED or CANCELLED before broadcast; BROADCAST_FAILED (retried) -> FAILED; BROADCAST -> FAILED (reverted) ' +
    'or REQUIRES_RECONCILIATION. docs/withdrawals.md.',
  values: [
    'PENDING_APPROVAL',
    'APPROVED',
    'AWAITING_SIGNATURE',
    'BROADCAST',
    'BROADCAST_FAILED',
    'CONFIRMED',
    'REJECTED',
    'CANCELLED',
    'FAILED',
    'REQUIRES_RECONCILIATION',
  ] as const,
});
const WithdrawalCustodyMode = builder.enumType('WithdrawalCustodyMode', {
  description: 'CUSTODIAL: the service signs from a custodial address; SELF_CUSTODY: the integrator signs a signing request.',
  values: ['CUSTODIAL', 'SELF_CUSTODY'] as const,
});
const SigningRequestStatus = builder.enumType('SigningRequestStatus', {
  description: 'PENDING (waits for the signature) -> SIGNED (verified and broadcast) or CLOSED (the withdrawal ended before).',
  values: ['PENDING', 'SIGNED', 'CLOSED'] as const,
});

const amount = (v: Parameters<typeof numericToAmount>[0] | null) => (v === null ? null : amountToString(numericToAmount(v)));

export const Withdrawal = builder.prismaObject('Withdrawal', {
  interfaces: [NodeRef],
  description: 'Money out of a customer account to a withdrawal destination. Amounts: base units, decimal strings.',
  fields: (t) => ({
    id: t.exposeID('id'),
    organizationId: t.exposeID('organizationId'),
    environmentType: t.expose('environmentType', { type: EnvironmentType }),
    accountId: t.exposeID('accountId'),
    assetNetworkId: t.exposeID('assetNetworkId'),
    networkId: t.exposeID('networkId'),
    withdrawalDestinationId: t.exposeID('withdrawalDestinationId'),
    toAddress: t.exposeString('toAddress'),
    amount: t.string({ resolve: (w) => amountToString(numericToAmount(w.amount)) }),
    status: t.expose('status', { type: WithdrawalStatus }),
    custodyMode: t.expose('custodyMode', { type: WithdrawalCustodyMode }),
    walletId: t.exposeID('walletId', { nullable: true, description: 'SELF_CUSTODY: the wallet of the source address.' }),
    sourceIndex: t.exposeInt('sourceIndex', { nullable: true, description: 'SELF_CUSTODY: the derivation index of the source address.' }),
    fromAddress: t.exposeString('fromAddress', { nullable: true, description: 'The address the transfer leaves from (custodial: known once broadcast).' }),
    holdId: t.exposeID('holdId', { description: 'The ledger hold of the amount (CUSTOMER -> CHAIN_CLEARING).' }),
    withdrawalPolicyId: t.exposeID('withdrawalPolicyId', { nullable: true }),
    payoutPolicyId: t.exposeID('payoutPolicyId', { nullable: true }),
    approvalReason: t.exposeString('approvalReason', { nullable: true, description: 'Why it waited for an operator (null: approved automatically).' }),
    approvedAt: t.expose('approvedAt', { type: 'DateTime', nullable: true }),
    approvedByOperatorId: t.exposeID('approvedByOperatorId', { nullable: true }),
    rejectionReason: t.exposeString('rejectionReason', { nullable: true }),
    failureReason: t.exposeString('failureReason', { nullable: true }),
    txHash: t.exposeString('txHash', { nullable: true }),
    broadcastAttempts: t.exposeInt('broadcastAttempts'),
    nextAttemptAt: t.expose('nextAttemptAt', { type: 'DateTime', nullable: true }),
    lastBroadcastError: t.exposeString('lastBroadcastError', { nullable: true }),
    broadcastAt: t.expose('broadcastAt', { type: 'DateTime', nullable: true }),
    confirmedAt: t.expose('confirmedAt', { type: 'DateTime', nullable: true }),
    closedAt: t.expose('closedAt', { type: 'DateTime', nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
  }),
});

const TransferPayloadRef = builder.objectRef<TransferPayload>('TransferPayload').implement({
  description: 'The transfer to sign (src/chains/secp256k1.ts). canonicalPayload is its JSON with keys sorted: the bytes signed.',
  fields: (t) => ({
    networkId: t.exposeID('networkId'),
    assetNetworkId: t.exposeID('assetNetworkId'),
    fromAddress: t.exposeString('fromAddress'),
    fromPublicKey: t.exposeString('fromPublicKey'),
    toAddress: t.exposeString('toAddress'),
    amount: t.exposeString('amount'),
    nonce: t.exposeString('nonce', { description: 'The withdrawal id.' }),
  }),
});

export const SigningRequest = builder.prismaObject('SigningRequest', {
  interfaces: [NodeRef],
  description: 'A SelfCustody signing request: sign canonicalPayload (ECDSA secp256k1 over its SHA-256, compact r||s hex) with the source address key.',
  fields: (t) => ({
    id: t.exposeID('id'),
    organizationId: t.exposeID('organizationId'),
    environmentId: t.exposeID('environmentId'),
    withdrawalId: t.exposeID('withdrawalId'),
    payload: t.field({ type: TransferPayloadRef, resolve: (r) => r.payload as unknown as TransferPayload }),
    canonicalPayload: t.exposeString('canonicalPayload', { description: 'The exact UTF-8 bytes to sign.' }),
    digest: t.exposeString('digest', { description: 'SHA-256 of canonicalPayload, hex.' }),
    status: t.expose('status', { type: SigningRequestStatus }),
    signature: t.exposeString('signature', { nullable: true }),
    signedAt: t.expose('signedAt', { type: 'DateTime', nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

export const WithdrawalPolicy = builder.prismaObject('WithdrawalPolicy', {
  description: 'A version of an organization’s withdrawal policy (limits and approval threshold; null: none).',
  fields: (t) => ({
    id: t.exposeID('id'),
    organizationId: t.exposeID('organizationId'),
    assetNetworkId: t.exposeID('assetNetworkId', { nullable: true, description: 'null: every asset-network without a policy of its own.' }),
    version: t.exposeInt('version'),
    perWithdrawalLimit: t.string({ nullable: true, resolve: (p) => amount(p.perWithdrawalLimit) }),
    periodLimit: t.string({ nullable: true, resolve: (p) => amount(p.periodLimit) }),
    periodSeconds: t.exposeInt('periodSeconds', { nullable: true }),
    approvalThreshold: t.string({ nullable: true, description: 'Amounts above it wait for an operator.', resolve: (p) => amount(p.approvalThreshold) }),
    operatorId: t.exposeID('operatorId'),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

export const PayoutPolicy = builder.prismaObject('PayoutPolicy', {
  description: 'A version of an organization’s payout policy (destination rules).',
  fields: (t) => ({
    id: t.exposeID('id'),
    organizationId: t.exposeID('organizationId'),
    version: t.exposeInt('version'),
    allowedNetworkIds: t.exposeIDList('allowedNetworkIds', { description: 'Empty: every network.' }),
    minimumDestinationAgeSeconds: t.exposeInt('minimumDestinationAgeSeconds'),
    requireApprovalForNewDestination: t.exposeBoolean('requireApprovalForNewDestination'),
    operatorId: t.exposeID('operatorId'),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

const WithdrawalPolicies = builder.objectRef<Awaited<ReturnType<typeof policyFns.listPolicies>>>('WithdrawalPolicies').implement({
  fields: (t) => ({
    withdrawal: t.field({ type: [WithdrawalPolicy], resolve: (p) => p.withdrawal }),
    payout: t.field({ type: [PayoutPolicy], resolve: (p) => p.payout }),
  }),
});

const RequestWithdrawalInput = builder.inputType('RequestWithdrawalInput', {
  fields: (t) => ({
    amount: t.string({ required: true, description: 'Base units, a positive decimal string.' }),
    assetNetworkId: t.id({ required: true }),
    withdrawalDestinationId: t.id({ required: true, description: "An ACTIVE destination of the organization on the asset-network's network." }),
    walletId: t.id({ description: 'SELF_CUSTODY: the wallet whose address sends (with sourceIndex). Omitted: custodial.' }),
    sourceIndex: t.int({ description: 'SELF_CUSTODY: the derivation index of the source address under the wallet.' }),
  }),
});
const WithdrawalReconciliationOutcome = builder.enumType('WithdrawalReconciliationOutcome', {
  description:
    'CONFIRMED: the value left (a mined transaction of the withdrawal or a replacement of it); FAILED: it did not and cannot (nothing mined or pending).',
  values: ['CONFIRMED', 'FAILED'] as const,
});
const ResolveWithdrawalReconciliationInput = builder.inputType('ResolveWithdrawalReconciliationInput', {
  fields: (t) => ({
    outcome: t.field({ type: WithdrawalReconciliationOutcome, required: true }),
    reason: t.string({ required: true, description: '1 to 1000 characters.' }),
    txHash: t.string({ description: "CONFIRMED: the mined transaction (default: the withdrawal's own; for a replaced one, its replacement)." }),
  }),
});
const RejectWithdrawalInput = builder.inputType('RejectWithdrawalInput', {
  fields: (t) => ({ reason: t.string({ required: true, description: '1 to 1000 characters.' }) }),
});
const ConfigureWithdrawalPolicyInput = builder.inputType('ConfigureWithdrawalPolicyInput', {
  fields: (t) => ({
    perWithdrawalLimit: t.string({ description: 'Base units; omitted: no limit.' }),
    periodLimit: t.string({ description: 'Base units over periodSeconds (with it); omitted: no limit.' }),
    periodSeconds: t.int(),
    approvalThreshold: t.string({ description: 'Amounts above it wait for an operator; omitted: none waits.' }),
    assetNetworkId: t.id({ description: 'The policy of one asset-network; omitted: organization-wide.' }),
  }),
});
const ConfigurePayoutPolicyInput = builder.inputType('ConfigurePayoutPolicyInput', {
  fields: (t) => ({
    allowedNetworkIds: t.idList({ description: 'Omitted or empty: every network.' }),
    minimumDestinationAgeSeconds: t.int({ description: 'A destination is usable from this age on (default 0).' }),
    requireApprovalForNewDestination: t.boolean({ description: 'A destination never used by a confirmed withdrawal waits for an operator.' }),
  }),
});
const CreateSigningRequestInput = builder.inputType('CreateSigningRequestInput', { fields: (t) => ({ withdrawalId: t.id({ required: true }) }) });
const SubmitSignatureInput = builder.inputType('SubmitSigningRequestSignatureInput', {
  fields: (t) => ({ signature: t.string({ required: true, description: '64-byte compact secp256k1 signature (r||s), hex.' }) }),
});

const read: Policy = { member: 'account-read', apiKey: true, operator: true };
const manage = policies.memberOrApiKey('payment-manage');

/** The withdrawals the principal may see (as loadWithdrawal): its organization; an API key, its mode and accounts authorized for its application. */
function visibleWithdrawalWhere(ctx: Context) {
  const p = ctx.principal;
  if (p?.type === 'operator') return {};
  if (p?.type === 'member') return { organizationId: p.organizationId };
  if (p?.type === 'apiKey') return { organizationId: p.organizationId, environmentType: p.mode };
  return null;
}

registerNode({ typename: 'Withdrawal', policy: read, load: (ctx, id) => withdrawals.loadWithdrawal(ctx, id) });
registerNode({ typename: 'SigningRequest', policy: read, load: (ctx, id) => signing.loadSigningRequest(ctx, id) });

builder.prismaObjectFields('Withdrawal', (t) => ({
  account: t.field({
    type: Account,
    nullable: true,
    resolve: (w, _a, ctx) =>
      loadOne(
        ctx,
        'Account',
        w.accountId,
        (ids) =>
          ctx.deps.db.account.findMany({ where: { AND: [{ id: { in: ids } }, accounts.visibleWhere(ctx) ?? { id: { in: [] } }] }, include: accounts.include }),
        (a) => a.id,
      ),
  }),
  destination: t.field({
    type: WithdrawalDestination,
    nullable: true,
    resolve: (w, _a, ctx) =>
      loadOne(
        ctx,
        'WithdrawalDestination',
        w.withdrawalDestinationId,
        (ids) => ctx.deps.db.withdrawalDestination.findMany({ where: { id: { in: ids }, ...(destinations.visibleWhere(ctx) ?? { id: { in: [] } }) } }),
        (d) => d.id,
      ),
  }),
  signingRequest: t.field({
    type: SigningRequest,
    nullable: true,
    description: 'Its SelfCustody signing request, if any.',
    resolve: (w, _a, ctx) =>
      loadOne(
        ctx,
        'Withdrawal.signingRequest',
        w.id,
        (ids) => ctx.deps.db.signingRequest.findMany({ where: { withdrawalId: { in: ids }, organizationId: w.organizationId } }),
        (r) => r.withdrawalId,
      ),
  }),
}));

builder.prismaObjectField('Organization', 'withdrawals', (t) =>
  t.connection({
    type: Withdrawal,
    description: "The organization's withdrawals, newest first (an API key: its mode's, of accounts authorized for its application).",
    authScopes: { policy: read },
    args: { ...creationArgs, ...amountArgs, status: t.arg({ type: [WithdrawalStatus] }), assetNetworkId: t.arg.id(), accountId: t.arg.id() },
    resolve: (org, args, ctx) => {
      const p = ctx.principal;
      const where = {
        AND: [
          visibleWithdrawalWhere(ctx) ?? { id: { in: [] } },
          p?.type === 'apiKey' ? { accountId: { in: [] as string[] } } : {},
          { organizationId: org.id },
          createdWhere(args),
          amountWhere(args),
          args.status?.length ? { status: { in: args.status } } : {},
          args.assetNetworkId ? { assetNetworkId: String(args.assetNetworkId) } : {},
          args.accountId ? { accountId: String(args.accountId) } : {},
        ],
      };
      return (async () => {
        if (p?.type === 'apiKey') {
          const authorized = await ctx.deps.db.accountApplicationAuthorization.findMany({
            where: { applicationId: p.applicationId },
            select: { accountId: true },
          });
          where.AND[1] = { accountId: { in: authorized.map((a) => a.accountId) } };
        }
        return keysetConnection(args, (q) => ctx.deps.db.withdrawal.findMany({ where: { AND: [...where.AND, q.where] }, orderBy: q.orderBy, take: q.take }));
      })();
    },
  }),
);
const custody = policies.memberOrApiKey('custody-manage');
const clean = <T extends object>(o: T) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null && v !== undefined));

builder.queryFields((t) => ({
  withdrawal: t.field({
    type: Withdrawal,
    authScopes: { policy: read },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_p, a, ctx) => withdrawals.loadWithdrawal(ctx, String(a.id)),
  }),
  signingRequest: t.field({
    type: SigningRequest,
    authScopes: { policy: read },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_p, a, ctx) => signing.loadSigningRequest(ctx, String(a.id)),
  }),
  withdrawalPolicies: t.field({
    type: WithdrawalPolicies,
    description: "Every version of an organization's withdrawal and payout policies (operators).",
    authScopes: { policy: policies.operator },
    args: { organizationId: t.arg.id({ required: true }) },
    resolve: (_p, a, ctx) => policyFns.listPolicies(ctx, String(a.organizationId)),
  }),
}));

builder.mutationFields((t) => ({
  requestWithdrawal: t.field({
    type: Withdrawal,
    description:
      'Requests a withdrawal: the amount is held at once; withdrawal.requested, then withdrawal.approved unless it ' +
      'waits for an operator. 409 over a policy limit or the available balance.',
    authScopes: { policy: manage },
    args: { accountId: t.arg.id({ required: true }), input: t.arg({ type: RequestWithdrawalInput, required: true }), idempotencyKey: t.arg.string() },
    // Only `id` selected (REST's RequestWithdrawal): the id written, without a re-read (its other fields are never read).
    resolve: async (_p, a, ctx, info) =>
      (await withdrawals.requestWithdrawal(ctx, String(a.accountId), clean(a.input), a.idempotencyKey, { reread: !selectsOnlyId(info) })) as WithdrawalRow,
  }),
  cancelWithdrawal: t.field({
    type: Withdrawal,
    description: 'Cancels a withdrawal until it is broadcast (the hold is released; withdrawal.cancelled); 409 after.',
    authScopes: { policy: manage },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_p, a, ctx) => withdrawals.cancelWithdrawal(ctx, String(a.id)),
  }),
  adminApproveWithdrawal: t.field({
    type: Withdrawal,
    description: 'AdminApproveWithdrawal (operators): PENDING_APPROVAL -> APPROVED / AWAITING_SIGNATURE; withdrawal.approved {ActorMemberId: the operator id}.',
    authScopes: { policy: policies.operator },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_p, a, ctx) => withdrawals.approveWithdrawal(ctx, String(a.id)),
  }),
  adminRejectWithdrawal: t.field({
    type: Withdrawal,
    description: 'AdminRejectWithdrawal (operators): before broadcast -> REJECTED with the reason; the hold is released.',
    authScopes: { policy: policies.operator },
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: RejectWithdrawalInput, required: true }) },
    resolve: (_p, a, ctx) => withdrawals.rejectWithdrawal(ctx, String(a.id), a.input),
  }),
  adminResolveWithdrawalReconciliation: t.field({
    type: Withdrawal,
    description:
      'AdminResolveWithdrawalReconciliation (operators, extension): REQUIRES_RECONCILIATION -> CONFIRMED (hold ' +
      'posted) or FAILED (hold released), each checked against the chain first (409 when the chain disagrees).',
    authScopes: { policy: policies.operator },
    args: { withdrawalId: t.arg.id({ required: true }), input: t.arg({ type: ResolveWithdrawalReconciliationInput, required: true }) },
    resolve: (_p, a, ctx) => resolution.resolveWithdrawalReconciliation(ctx, String(a.withdrawalId), clean(a.input)),
  }),
  adminConfigureWithdrawalPolicy: t.field({
    type: WithdrawalPolicy,
    description: "AdminConfigureWithdrawalPolicy (operators): the next version of the organization's withdrawal policy.",
    authScopes: { policy: policies.operator },
    args: { organizationId: t.arg.id({ required: true }), input: t.arg({ type: ConfigureWithdrawalPolicyInput, required: true }) },
    resolve: (_p, a, ctx) => policyFns.configureWithdrawalPolicy(ctx, String(a.organizationId), clean(a.input)),
  }),
  adminConfigurePayoutPolicy: t.field({
    type: PayoutPolicy,
    description: "AdminConfigurePayoutPolicy (operators): the next version of the organization's payout policy.",
    authScopes: { policy: policies.operator },
    args: { organizationId: t.arg.id({ required: true }), input: t.arg({ type: ConfigurePayoutPolicyInput, required: true }) },
    resolve: (_p, a, ctx) => policyFns.configurePayoutPolicy(ctx, String(a.organizationId), clean(a.input)),
  }),
  createSigningRequest: t.field({
    type: SigningRequest,
    description: 'CreateSigningRequest: the exact payload a SelfCustody withdrawal needs signed (one per withdrawal; again: the same request).',
    authScopes: { policy: custody },
    args: { environmentId: t.arg.id({ required: true }), input: t.arg({ type: CreateSigningRequestInput, required: true }) },
    resolve: (_p, a, ctx) => signing.createSigningRequest(ctx, String(a.environmentId), a.input),
  }),
  submitSigningRequestSignature: t.field({
    type: SigningRequest,
    description:
      'Submits the signature: verified with the wallet’s public material, then broadcast (withdrawal.broadcast); a wrong one: 400, nothing broadcast.',
    authScopes: { policy: custody },
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: SubmitSignatureInput, required: true }) },
    resolve: (_p, a, ctx) => signing.submitSignature(ctx, String(a.id), a.input),
  }),
}));
