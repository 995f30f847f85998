import { numericToAmount } from '../money';
import { z } from 'zod';
import { amountArgs, amountWhere, builder, createdWhere, creationArgs, keysetConnection, loadMany, loadOne, NodeRef, registerNode } from '../builder';
import { DepositAddress, visibleAddressWhere } from '../custody/custody.graphql';
import { policies } from '../auth/policy';
import type { Context } from '../context';
import { EnvironmentType } from '../tenancy/tenancy.graphql';
import { amountToString } from '../money';
import type { Deposit as DepositRow } from '../generated/prisma/client';
import * as intents from './payment-intents';
import * as deposits from './deposits';
import type { IntentRow } from './payment-intents';
import { ReleaseRuleInput } from '../release/release-rules.graphql';
import { selectsOnlyId } from '../kernel/selection';

const amount = (v: { toFixed(dp: number): string }) => amountToString(numericToAmount(v));

const PaymentIntentStatus = builder.enumType('PaymentIntentStatus', {
  description:
    'AWAITING_PAYMENT -> PROCESSING (a deposit detected) -> SUCCEEDED (confirmed deposits cover the amount); ' +
    'AWAITING_PAYMENT or PROCESSING -> EXPIRED (ExpiresAt passed, nothing undecided); AWAITING_PAYMENT -> ' +
    'CANCELLED. Exceptions are flags: overpaid, paidLate. docs/money-in.md.',
  values: ['AWAITING_PAYMENT', 'PROCESSING', 'SUCCEEDED', 'EXPIRED', 'CANCELLED'] as const,
});
const DepositStatus = builder.enumType('DepositStatus', {
  description:
    'DETECTED -> CONFIRMING -> CONFIRMED (credited); -> REJECTED (dropped, replaced, reverted, wrong asset, below ' +
    'the minimum, review rejected); UNDER_REVIEW (screening; an operator accepts or rejects); CONFIRMED -> ' +
    'REORG_FROZEN (a reorganization; an operator resolves: CONFIRMED again or REVERSED). docs/money-in.md.',
  values: ['DETECTED', 'CONFIRMING', 'CONFIRMED', 'REJECTED', 'UNDER_REVIEW', 'REORG_FROZEN', 'REVERSED'] as const,
});
const DepositCreditedTo = builder.enumType('DepositCreditedTo', {
  description: "ESCROW: the transaction's escrow account. SUSPENSE: the organization's suspense account (late deposits; an expired intent's partial payment).",
  values: ['ESCROW', 'SUSPENSE'] as const,
});
const DepositReviewDecision = builder.enumType('DepositReviewDecision', { values: ['ACCEPT', 'REJECT'] as const });
const DepositReorgOutcome = builder.enumType('DepositReorgOutcome', {
  description:
    'REMINED: the chain has the transaction mined at the required depth again. GONE: the chain can never mine it (dropped, replaced, reverted, unknown).',
  values: ['REMINED', 'GONE'] as const,
});

export const Deposit = builder.objectRef<DepositRow>('Deposit');
export const PaymentIntent = builder.objectRef<IntentRow>('PaymentIntent');
Deposit.implement({
  interfaces: [NodeRef],
  description: 'A transfer seen on a chain to a deposit address (DepositResponse). Amounts: base units, decimal strings.',
  fields: (t) => ({
    id: t.exposeID('id'),
    organizationId: t.exposeID('organizationId'),
    paymentIntentId: t.exposeID('paymentIntentId', { nullable: true }),
    transactionId: t.exposeID('transactionId', { nullable: true }),
    networkId: t.exposeID('networkId'),
    assetNetworkId: t.exposeID('assetNetworkId', { description: 'What was received (differs from the address’s when REJECTED as WRONG_ASSET).' }),
    address: t.exposeString('address'),
    txHash: t.exposeString('txHash'),
    amount: t.string({ resolve: (d) => amount(d.amount) }),
    status: t.field({ type: DepositStatus, resolve: (d) => d.status }),
    confirmations: t.exposeInt('confirmations', { description: 'As last seen, counted up to the required depth.' }),
    blockHash: t.exposeString('blockHash', { nullable: true }),
    blockHeight: t.exposeInt('blockHeight', { nullable: true }),
    late: t.exposeBoolean('late', { description: 'Arrived after its payment intent expired or was cancelled: credited to SUSPENSE.' }),
    creditedTo: t.field({
      type: DepositCreditedTo,
      nullable: true,
      resolve: (d) => (d.creditedTo === 'ESCROW' || d.creditedTo === 'SUSPENSE' ? d.creditedTo : null),
    }),
    reason: t.exposeString('reason', { nullable: true, description: 'Why it was rejected or reversed (a code, then details).' }),
    reviewReason: t.exposeString('reviewReason', { nullable: true, description: 'Why it was held for review.' }),
    detectedAt: t.expose('detectedAt', { type: 'DateTime' }),
    confirmedAt: t.expose('confirmedAt', { type: 'DateTime', nullable: true }),
    resolvedAt: t.expose('resolvedAt', { type: 'DateTime', nullable: true, description: 'When it was rejected, reviewed or its reorganization resolved.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
    paymentIntent: t.field({
      type: PaymentIntent,
      nullable: true,
      description: 'The payment intent it paid (null for a deposit to an address without one).',
      resolve: (d, _a, ctx) => loadIntent(ctx, d.paymentIntentId),
    }),
    depositAddress: t.field({
      type: DepositAddress,
      nullable: true,
      description: 'The deposit address it arrived at.',
      resolve: (d, _a, ctx) =>
        loadOne(
          ctx,
          'Deposit.address',
          d.depositAddressId,
          (ids) => ctx.deps.db.depositAddress.findMany({ where: { id: { in: ids }, ...(visibleAddressWhere(ctx) ?? { id: { in: [] } }) } }),
          (a) => a.id,
        ),
    }),
  }),
});

/** A payment intent the principal may see, batched per request. */
export function loadIntent(ctx: Context, id: string | null | undefined) {
  return loadOne(
    ctx,
    'PaymentIntent',
    id,
    (ids) =>
      ctx.deps.db.paymentIntent.findMany({
        where: { id: { in: ids }, ...(intents.visibleMoneyWhere(ctx) ?? { id: { in: [] } }) },
        include: intents.intentInclude,
      }),
    (i) => i.id,
  );
}

PaymentIntent.implement({
  interfaces: [NodeRef],
  description: 'An amount to be paid on chain before expiresAt, for a transaction (PaymentIntentResponse). Amounts: base units, decimal strings.',
  fields: (t) => ({
    id: t.exposeID('id'),
    organizationId: t.exposeID('organizationId'),
    applicationId: t.exposeID('applicationId'),
    environmentId: t.exposeID('environmentId'),
    environmentType: t.field({ type: EnvironmentType, resolve: (i) => i.environmentType }),
    transactionId: t.exposeID('transactionId'),
    assetNetworkId: t.exposeID('assetNetworkId'),
    amount: t.string({ resolve: (i) => amount(i.amount) }),
    status: t.field({ type: PaymentIntentStatus, resolve: (i) => i.status }),
    detectedAmount: t.string({ description: 'Deposits detected and not rejected or reversed (late ones excluded).', resolve: (i) => amount(i.detectedAmount) }),
    confirmedAmount: t.string({ description: 'Deposits confirmed and credited (late ones excluded).', resolve: (i) => amount(i.confirmedAmount) }),
    overpaid: t.exposeBoolean('overpaid', { description: 'confirmedAmount exceeds amount (the excess is held in the escrow too).' }),
    paidLate: t.exposeBoolean('paidLate', { description: 'A deposit was confirmed after it expired or was cancelled (credited to SUSPENSE).' }),
    reference: t.exposeString('reference', { nullable: true }),
    metadata: t.field({ type: 'JSON', nullable: true, resolve: (i) => i.metadata }),
    depositAddressId: t.exposeID('depositAddressId', { nullable: true }),
    address: t.string({
      nullable: true,
      description: 'The deposit address (null until allocated).',
      resolve: async (i, _a, ctx) =>
        i.depositAddressId
          ? ((await ctx.deps.db.depositAddress.findUnique({ where: { id: i.depositAddressId }, select: { address: true } }))?.address ?? null)
          : null,
    }),
    beneficiaryAccountId: t.id({ resolve: (i) => i.transaction.participants.find((p) => p.role === 'BENEFICIARY')!.accountId }),
    payerAccountId: t.id({ nullable: true, resolve: (i) => i.transaction.participants.find((p) => p.role === 'PAYER')?.accountId ?? null }),
    depositIds: t.idList({ description: 'Its deposits, oldest first (late and rejected ones included).', resolve: (i) => i.deposits.map((d) => d.id) }),
    deposits: t.field({
      type: [Deposit],
      description: 'Its deposits, oldest first.',
      resolve: (i, _a, ctx) =>
        loadMany(
          ctx,
          'PaymentIntent.deposits',
          i.id,
          (ids) => ctx.deps.db.deposit.findMany({ where: { paymentIntentId: { in: ids } }, orderBy: { id: 'asc' } }),
          (d) => d.paymentIntentId!,
        ),
    }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime', description: 'In a sandbox, by the organization’s sandbox clock.' }),
    succeededAt: t.expose('succeededAt', { type: 'DateTime', nullable: true }),
    expiredAt: t.expose('expiredAt', { type: 'DateTime', nullable: true }),
    cancelledAt: t.expose('cancelledAt', { type: 'DateTime', nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
  }),
});

const CreatePaymentIntentInput = builder.inputType('CreatePaymentIntentInput', {
  fields: (t) => ({
    applicationId: t.id({ description: 'Required for a member; an API key implies its own.' }),
    environmentId: t.id({ description: 'Required for a member; an API key implies its own.' }),
    assetNetworkId: t.id({ required: true, description: "ENABLED, on a network of the environment's type." }),
    amount: t.string({ required: true, description: 'Base units, a positive decimal string, at least the minimum deposit.' }),
    beneficiaryAccountId: t.id({
      required: true,
      description: 'An ACTIVE account of the organization, authorized for the application, of the environment’s mode.',
    }),
    payerAccountId: t.id({ description: 'The paying side, when it has an account (same rules).' }),
    expiresInSeconds: t.int({ description: '60 to 2592000 (30 days); default 3600. Or expiresAt.' }),
    expiresAt: t.field({ type: 'DateTime', description: '60 seconds to 30 days from now (a sandbox: its clock).' }),
    reference: t.string({ description: "The integrator's own reference, unique within the organization." }),
    walletId: t.id({ description: 'Allocates the deposit address from this wallet at once (deposit.address_generated).' }),
    metadata: t.field({ type: 'JSON', description: 'A JSON object of the integrator’s, at most 8 KiB.' }),
    releaseRule: t.field({
      type: ReleaseRuleInput,
      description: "The transaction's release rule (docs/release-rules.md), set with it. Or releaseRuleTemplateId.",
    }),
    releaseRuleTemplateId: t.id({ description: 'Sets the release rule from this template of the application.' }),
  }),
  validate: intents.createPaymentIntentInput,
});
const CancelPaymentIntentInput = builder.inputType('CancelPaymentIntentInput', {
  fields: (t) => ({ reason: t.string({ description: 'The Reason of transaction.cancelled (default: "Cancelled by the integrator").' }) }),
  validate: z.object({ reason: intents.cancelReason.nullish() }),
});
const ResolveDepositUnderReviewInput = builder.inputType('ResolveDepositUnderReviewInput', {
  fields: (t) => ({ decision: t.field({ type: DepositReviewDecision, required: true }), reason: t.string({ required: true }) }),
  validate: deposits.resolveUnderReviewInput,
});
const ResolveDepositReorgInput = builder.inputType('ResolveDepositReorgInput', {
  fields: (t) => ({ outcome: t.field({ type: DepositReorgOutcome, required: true }), reason: t.string({ required: true }) }),
  validate: deposits.resolveReorgInput,
});

const read = policies.memberOrApiKey('account-read');

registerNode({ typename: 'PaymentIntent', policy: read, load: (ctx, id) => intents.loadPaymentIntent(ctx, id) });
registerNode({ typename: 'Deposit', policy: read, load: (ctx, id) => deposits.loadDeposit(ctx, id) });

builder.prismaObjectField('Organization', 'paymentIntents', (t) =>
  t.connection({
    type: PaymentIntent,
    description: "The organization's payment intents, newest first (an API key: its environment's).",
    authScopes: { policy: read },
    args: { ...creationArgs, ...amountArgs, status: t.arg({ type: [PaymentIntentStatus] }), assetNetworkId: t.arg.id() },
    resolve: (org, args, ctx) => {
      const where = {
        AND: [
          intents.visibleMoneyWhere(ctx) ?? { id: { in: [] } },
          { organizationId: org.id },
          createdWhere(args),
          amountWhere(args),
          args.status?.length ? { status: { in: args.status } } : {},
          args.assetNetworkId ? { assetNetworkId: String(args.assetNetworkId) } : {},
        ],
      };
      return keysetConnection(args, (q) =>
        ctx.deps.db.paymentIntent.findMany({ where: { AND: [...where.AND, q.where] }, include: intents.intentInclude, orderBy: q.orderBy, take: q.take }),
      );
    },
  }),
);
const manage = policies.memberOrApiKey('payment-manage');

builder.queryFields((t) => ({
  paymentIntent: t.field({
    type: PaymentIntent,
    authScopes: { policy: read },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_p, args, ctx) => intents.loadPaymentIntent(ctx, String(args.id)),
  }),
  deposit: t.field({
    type: Deposit,
    authScopes: { policy: read },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_p, args, ctx) => deposits.loadDeposit(ctx, String(args.id)),
  }),
}));

builder.mutationFields((t) => ({
  createPaymentIntent: t.field({
    type: PaymentIntent,
    description: 'Creates the payment intent and its transaction (AWAITING_FUNDS): transaction.created, payment_intent.created.',
    authScopes: { policy: manage },
    args: {
      organizationId: t.arg.id({ required: true }),
      input: t.arg({ type: CreatePaymentIntentInput, required: true }),
      idempotencyKey: t.arg.string({ description: 'Same key and input: the same intent; another input: 409.' }),
    },
    // Only `id` selected (REST's CreatePaymentIntent): the id written, without a re-read (its other fields are never read).
    resolve: async (_p, args, ctx, info) =>
      (await intents.createPaymentIntent(ctx, String(args.organizationId), args.input as intents.CreatePaymentIntentInput, args.idempotencyKey, {
        reread: !selectsOnlyId(info),
      })) as IntentRow,
  }),
  cancelPaymentIntent: t.field({
    type: PaymentIntent,
    description: 'AWAITING_PAYMENT (nothing detected) -> CANCELLED, with its transaction: payment_intent.cancelled, transaction.cancelled.',
    authScopes: { policy: manage },
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: CancelPaymentIntentInput }) },
    resolve: (_p, args, ctx) => intents.cancelPaymentIntent(ctx, String(args.id), args.input?.reason),
  }),
  resolveDepositUnderReview: t.field({
    type: Deposit,
    description: 'Operators: ACCEPT (the deposit goes on: credited once deep enough) or REJECT (never credited) a deposit UNDER_REVIEW.',
    authScopes: { policy: policies.operator },
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: ResolveDepositUnderReviewInput, required: true }) },
    resolve: (_p, args, ctx) => deposits.resolveUnderReview(ctx, String(args.id), args.input),
  }),
  resolveDepositReorg: t.field({
    type: Deposit,
    description:
      'Operators: a REORG_FROZEN deposit is REMINED (confirmed again, no second credit) or GONE (REVERSED, its credit reversed), as the chain shows.',
    authScopes: { policy: policies.operator },
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: ResolveDepositReorgInput, required: true }) },
    resolve: (_p, args, ctx) => deposits.resolveReorg(ctx, String(args.id), args.input),
  }),
}));
