import { numericToAmount } from '../money';
import { z } from 'zod';
import { amountArgs, amountWhere, builder, createdWhere, creationArgs, keysetConnection, loadMany, loadOne, NodeRef, registerNode } from '../builder';
import { Deposit, loadIntent, PaymentIntent } from '../deposits/deposits.graphql';
import { visibleMoneyWhere } from '../deposits/payment-intents';
import { Account } from '../accounts/accounts.graphql';
import * as accounts from '../accounts/accounts';
import { WebhookDelivery } from '../webhooks/webhooks.graphql';
import { policies } from '../auth/policy';
import type { Context } from '../context';
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
      account: t.field({
        type: Account,
        nullable: true,
        description: 'The account, when the caller may see it (an API key: when authorized for its application); null otherwise.',
        resolve: (p, _a, ctx) => loadVisibleAccount(ctx, p.accountId),
      }),
    }),
  });

export const Transaction = builder.objectRef<TransactionRow>('Transaction').implement({
  interfaces: [NodeRef],
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
    paymentIntent: t.field({
      type: PaymentIntent,
      nullable: true,
      resolve: (x, _a, ctx) => loadIntent(ctx, x.paymentIntent?.id),
    }),
    deposits: t.field({
      type: [Deposit],
      description: 'The deposits credited to it or seen for it, oldest first.',
      resolve: (x, _a, ctx) =>
        loadMany(
          ctx,
          'Transaction.deposits',
          x.id,
          (ids) => ctx.deps.db.deposit.findMany({ where: { transactionId: { in: ids } }, orderBy: { id: 'asc' } }),
          (d) => d.transactionId!,
        ),
    }),
    webhookDeliveries: t.connection({
      type: WebhookDelivery,
      nullable: true,
      description: "The webhook deliveries of its events to the organization's endpoints, newest first (members with webhook-endpoint-manage).",
      authScopes: { policy: policies.member('webhook-endpoint-manage') },
      args: creationArgs,
      resolve: (x, args, ctx) =>
        keysetConnection(args, (q) =>
          ctx.deps.db.webhookDelivery.findMany({
            where: { AND: [q.where, createdWhere(args), { organizationId: x.organizationId, event: { aggregateId: x.id, organizationId: x.organizationId } }] },
            orderBy: q.orderBy,
            take: q.take,
          }),
        ),
    }),
  }),
});

/** An account the principal may see (accounts.visibleWhere), batched per request; null otherwise. */
export function loadVisibleAccount(ctx: Context, id: string | null | undefined) {
  return loadOne(
    ctx,
    'Account',
    id,
    (ids) =>
      ctx.deps.db.account.findMany({ where: { AND: [{ id: { in: ids } }, accounts.visibleWhere(ctx) ?? { id: { in: [] } }] }, include: accounts.include }),
    (a) => a.id,
  );
}

/** A transaction the principal may see, batched per request; null otherwise. */
export function loadTransactionOf(ctx: Context, id: string | null | undefined) {
  return loadOne(
    ctx,
    'Transaction',
    id,
    (ids) =>
      ctx.deps.db.transaction.findMany({
        where: { id: { in: ids }, ...(visibleMoneyWhere(ctx) ?? { id: { in: [] } }) },
        include: transactions.transactionInclude,
      }),
    (x) => x.id,
  );
}

builder.objectField(Deposit, 'transaction', (t) =>
  t.field({ type: Transaction, nullable: true, resolve: (d, _a, ctx) => loadTransactionOf(ctx, d.transactionId) }),
);
builder.objectField(PaymentIntent, 'transaction', (t) =>
  t.field({ type: Transaction, nullable: true, resolve: (i, _a, ctx) => loadTransactionOf(ctx, i.transactionId) }),
);

builder.prismaObjectField('Organization', 'transactions', (t) =>
  t.connection({
    type: Transaction,
    description: "The organization's transactions, newest first (an API key: its environment's).",
    authScopes: { policy: policies.memberOrApiKey('account-read') },
    args: {
      ...creationArgs,
      ...amountArgs,
      status: t.arg({ type: [TransactionStatus] }),
      assetNetworkId: t.arg.id(),
      accountId: t.arg.id({ description: 'Only transactions the account takes part in (any role).' }),
      frozen: t.arg.boolean(),
    },
    resolve: (org, args, ctx) => {
      const where = {
        AND: [
          visibleMoneyWhere(ctx) ?? { id: { in: [] } },
          { organizationId: org.id },
          createdWhere(args),
          amountWhere(args),
          args.status?.length ? { status: { in: args.status } } : {},
          args.assetNetworkId ? { assetNetworkId: String(args.assetNetworkId) } : {},
          args.accountId ? { participants: { some: { accountId: String(args.accountId) } } } : {},
          args.frozen != null ? { frozen: args.frozen } : {},
        ],
      };
      return keysetConnection(args, (q) =>
        ctx.deps.db.transaction.findMany({
          where: { AND: [...where.AND, q.where] },
          include: transactions.transactionInclude,
          orderBy: q.orderBy,
          take: q.take,
        }),
      );
    },
  }),
);

const TransactionReasonInput = builder.inputType('TransactionReasonInput', {
  fields: (t) => ({ reason: t.string({ required: true }) }),
  validate: z.object({ reason: transactions.reasonInput }),
});
const CancelTransactionInput = builder.inputType('CancelTransactionInput', {
  fields: (t) => ({ reason: t.string({ description: 'Sent as the Reason of transaction.cancelled (default: "Cancelled by the integrator").' }) }),
  validate: z.object({ reason: transactions.reasonInput.nullish() }),
});

const read = policies.memberOrApiKey('account-read');
registerNode({ typename: 'Transaction', policy: read, load: (ctx, id) => transactions.loadTransaction(ctx, id) });
const manage = policies.memberOrApiKey('payment-manage');

builder.queryFields((t) => ({
  transaction: t.field({
    type: Transaction,
    authScopes: { policy: read },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_p, args, ctx) => transactions.loadTransaction(ctx, String(args.id)),
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
