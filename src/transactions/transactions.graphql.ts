import { numericToAmount } from '../money';
import { z } from 'zod';
import { builder, cursorPageArgs } from '../builder';
import { policies } from '../auth/policy';
import { EnvironmentType } from '../tenancy/tenancy.graphql';
import { amountToString } from '../money';
import * as transactions from './transactions';
import type { TransactionRow } from './transactions';
import { releaseRuleOf } from '../release/release-rules';
import { ReleaseRule } from '../release/release-rules.graphql';

export const TransactionStatus = builder.enumType('TransactionStatus', {
  description:
    'AWAITING_FUNDS -> RESERVED (funded: FUNDED and RESERVED in one step, the funds held in its escrow) -> back to ' +
    'AWAITING_FUNDS only when a reorganization reverses a credit; RESERVED -> SETTLED or REFUNDED once settlements ' +
    'and refunds empty the escrow; AWAITING_FUNDS -> CANCELLED or EXPIRED (terminal). docs/money-in.md, ' +
    'docs/settlements.md.',
  values: ['AWAITING_FUNDS', 'FUNDED', 'RESERVED', 'SETTLED', 'REFUNDED', 'CANCELLED', 'EXPIRED'] as const,
});
const ParticipantRole = builder.enumType('ParticipantRole', {
  values: ['BENEFICIARY', 'PAYER', 'SPLIT_RECIPIENT'] as const,
  description: 'SPLIT_RECIPIENT: an account named only by the split rule.',
});

const TransactionParticipant = builder
  .objectRef<{ id: string; accountId: string; role: 'BENEFICIARY' | 'PAYER' | 'SPLIT_RECIPIENT' }>('TransactionParticipant')
  .implement({
    fields: (t) => ({
      id: t.exposeID('id', { description: 'The ParticipantId of settlement.split_portion_retained.' }),
      accountId: t.exposeID('accountId'),
      role: t.field({ type: ParticipantRole, resolve: (p) => p.role }),
    }),
  });

export const Transaction = builder.objectRef<TransactionRow>('Transaction').implement({
  description: 'Money collected by a payment intent, held in escrow once funded for conditional release. Amounts: base units, decimal strings.',
  fields: (t) => ({
    id: t.exposeID('id'),
    organizationId: t.exposeID('organizationId'),
    applicationId: t.exposeID('applicationId'),
    environmentId: t.exposeID('environmentId'),
    environmentType: t.field({ type: EnvironmentType, resolve: (x) => x.environmentType }),
    assetNetworkId: t.exposeID('assetNetworkId'),
    paymentIntentId: t.id({ nullable: true, resolve: (x) => x.paymentIntent?.id ?? null }),
    amount: t.string({ resolve: (x) => amountToString(numericToAmount(x.amount)) }),
    fundedAmount: t.string({
      description: 'Confirmed deposits credited to its escrow (may exceed amount: an overpayment is held too). 0 once expired or cancelled.',
      resolve: (x) => amountToString(numericToAmount(x.fundedAmount)),
    }),
    settledAmount: t.string({
      description: 'Gross of its executed settlements (fees included).',
      resolve: (x) => amountToString(numericToAmount(x.settledAmount)),
    }),
    refundedAmount: t.string({
      description: 'Its executed refunds (fees and reversals included).',
      resolve: (x) => amountToString(numericToAmount(x.refundedAmount)),
    }),
    reversedAmount: t.string({
      description: 'The part of refundedAmount taken back from beneficiaries after settlement.',
      resolve: (x) => amountToString(numericToAmount(x.reversedAmount)),
    }),
    escrowAmount: t.string({
      description: 'What its escrow holds now: funded - settled - (refunded - reversed).',
      resolve: (x) =>
        amountToString(
          numericToAmount(x.fundedAmount) - numericToAmount(x.settledAmount) - numericToAmount(x.refundedAmount) + numericToAmount(x.reversedAmount),
        ),
    }),
    status: t.field({ type: TransactionStatus, resolve: (x) => x.status }),
    frozen: t.exposeBoolean('frozen', { description: 'A flag, not a state: a frozen transaction moves no funds.' }),
    frozenReason: t.exposeString('frozenReason', { nullable: true }),
    frozenByMemberId: t.exposeID('frozenByMemberId', { nullable: true, description: 'The member whose freeze holds it.' }),
    frozenByDepositId: t.exposeID('frozenByDepositId', {
      nullable: true,
      description: 'A deposit in doubt after a chain reorganization holds it (resolved by an operator).',
    }),
    cancelReason: t.exposeString('cancelReason', { nullable: true }),
    fundedAt: t.expose('fundedAt', { type: 'DateTime', nullable: true }),
    reservedAt: t.expose('reservedAt', { type: 'DateTime', nullable: true }),
    cancelledAt: t.expose('cancelledAt', { type: 'DateTime', nullable: true }),
    settledAt: t.expose('settledAt', { type: 'DateTime', nullable: true }),
    refundedAt: t.expose('refundedAt', { type: 'DateTime', nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
    participants: t.field({ type: [TransactionParticipant], resolve: (x) => x.participants }),
  }),
});

const TransactionPage = builder.objectRef<{ items: TransactionRow[]; nextCursor: string | null }>('TransactionPage').implement({
  fields: (t) => ({
    items: t.field({ type: [Transaction], resolve: (p) => p.items }),
    nextCursor: t.exposeID('nextCursor', { nullable: true, description: 'Pass as `after` for the next page; null on the last page.' }),
  }),
});

const TransactionReasonInput = builder.inputType('TransactionReasonInput', {
  fields: (t) => ({ reason: t.string({ required: true }) }),
  validate: z.object({ reason: transactions.reasonInput }),
});
const CancelTransactionInput = builder.inputType('CancelTransactionInput', {
  fields: (t) => ({ reason: t.string({ description: 'Sent as the Reason of transaction.cancelled (default: "Cancelled by the integrator").' }) }),
  validate: z.object({ reason: transactions.reasonInput.nullish() }),
});

const read = policies.memberOrApiKey('account-read');
const manage = policies.memberOrApiKey('payment-manage');

builder.queryFields((t) => ({
  transaction: t.field({
    type: Transaction,
    authScopes: { policy: read },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_p, args, ctx) => transactions.loadTransaction(ctx, String(args.id)),
  }),
  transactions: t.field({
    type: TransactionPage,
    description: "A page of the organization's transactions, oldest first (an API key: its environment's).",
    authScopes: { policy: read },
    args: {
      organizationId: t.arg.id({ required: true }),
      ...cursorPageArgs,
    },
    resolve: (_p, args, ctx) =>
      transactions.listTransactions(ctx, String(args.organizationId), { limit: args.limit, after: args.after == null ? null : String(args.after) }),
  }),
}));

builder.mutationFields((t) => ({
  cancelTransaction: t.field({
    type: Transaction,
    description: 'AWAITING_FUNDS with nothing detected -> CANCELLED, with its payment intent (transaction.cancelled Reason, payment_intent.cancelled).',
    authScopes: { policy: manage },
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: CancelTransactionInput }) },
    resolve: (_p, args, ctx) => transactions.cancelTransaction(ctx, String(args.id), args.input?.reason),
  }),
  freezeTransaction: t.field({
    type: Transaction,
    description: 'A member freezes an open transaction with a reason (transaction.frozen): it moves no funds until unfrozen.',
    authScopes: { policy: policies.member('payment-manage') },
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: TransactionReasonInput, required: true }) },
    resolve: (_p, args, ctx) => transactions.freezeTransaction(ctx, String(args.id), args.input.reason),
  }),
  unfreezeTransaction: t.field({
    type: Transaction,
    description: "Lifts a member's freeze (transaction.unfrozen). A reorganization's hold stays until an operator resolves it.",
    authScopes: { policy: policies.member('payment-manage') },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_p, args, ctx) => transactions.unfreezeTransaction(ctx, String(args.id)),
  }),
}));

builder.objectField(Transaction, 'releaseRule', (t) =>
  t.field({
    type: ReleaseRule,
    description: 'Its release rule (docs/release-rules.md).',
    resolve: (x, _a, ctx) => releaseRuleOf(ctx.deps.db, ctx.deps.clock, x),
  }),
);
