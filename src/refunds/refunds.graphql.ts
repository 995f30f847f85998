import { builder, createdWhere, creationArgs, keysetConnection, loadMany, NodeRef, registerNode } from '../builder';
import { visibleMoneyWhere } from '../deposits/payment-intents';
import { policies, type Policy } from '../auth/policy';
import { amountToString, numericToAmount } from '../money';
import { EnvironmentType } from '../tenancy/tenancy.graphql';
import { loadTransactionOf, Transaction } from '../transactions/transactions.graphql';
import { configurePolicy } from '../settlements/policies/policies';
import { ConfigureRefundFeePolicyInput, policyListField, RefundFeePolicy, toPolicyInput } from '../settlements/policies/policies.graphql';
import * as refunds from './refunds';

const RefundStatus = builder.enumType('RefundStatus', {
  description:
    'PENDING (requested) -> EXECUTED (sent to the payer on the chain; the ledger moved) or REJECTED (rejectionReason; nothing moved). docs/refunds.md.',
  values: ['PENDING', 'EXECUTED', 'REJECTED'] as const,
});

const amount = (v: Parameters<typeof numericToAmount>[0] | null) => (v === null ? null : amountToString(numericToAmount(v)));

export const Refund = builder.prismaObject('Refund', {
  interfaces: [NodeRef],
  description: 'Money of a transaction sent back to the payer’s origin on the chain, less the refund fee. Amounts: base units, decimal strings.',
  fields: (t) => ({
    id: t.exposeID('id'),
    organizationId: t.exposeID('organizationId'),
    applicationId: t.exposeID('applicationId'),
    environmentId: t.exposeID('environmentId'),
    environmentType: t.expose('environmentType', { type: EnvironmentType }),
    transactionId: t.exposeID('transactionId'),
    assetNetworkId: t.exposeID('assetNetworkId'),
    requestedAmount: t.string({
      nullable: true,
      description: 'What was asked (fee included); null: everything in escrow at execution.',
      resolve: (r) => amount(r.requestedAmount),
    }),
    reason: t.exposeString('reason', { nullable: true }),
    status: t.expose('status', { type: RefundStatus }),
    amount: t.string({ nullable: true, description: 'Executed: what left the transaction (feeAmount + netAmount).', resolve: (r) => amount(r.amount) }),
    feeAmount: t.string({ nullable: true, description: 'Executed: the refund fee (platform revenue).', resolve: (r) => amount(r.feeAmount) }),
    netAmount: t.string({ nullable: true, description: 'Executed: what the payer receives on the chain.', resolve: (r) => amount(r.netAmount) }),
    reversedAmount: t.string({
      description: 'The part of amount taken back from beneficiaries after settlement.',
      resolve: (r) => amountToString(numericToAmount(r.reversedAmount)),
    }),
    refundFeePolicyId: t.exposeID('refundFeePolicyId', {
      nullable: true,
      description: 'Executed: the refund fee policy applied (null: none in force, no fee).',
    }),
    fromAddress: t.exposeString('fromAddress', { nullable: true, description: 'Executed: the deposit address the transfer left from.' }),
    toAddress: t.exposeString('toAddress', { nullable: true, description: "The payer's origin address the refund goes to." }),
    txHash: t.exposeString('txHash', { nullable: true, description: 'Executed: the hash of the transfer on the chain.' }),
    isTotal: t.exposeBoolean('isTotal', {
      nullable: true,
      description: "Executed: whether it emptied the transaction's escrow (the IsTotal of transaction.refunded).",
    }),
    rejectionReason: t.exposeString('rejectionReason', { nullable: true, description: 'REJECTED: "CODE: detail" (the Reason of refund.rejected).' }),
    executedAt: t.expose('executedAt', { type: 'DateTime', nullable: true }),
    rejectedAt: t.expose('rejectedAt', { type: 'DateTime', nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
  }),
});

const RequestRefundInput = builder.inputType('RequestRefundInput', {
  fields: (t) => ({
    amount: t.string({
      description:
        'Base units, fee included; default: everything in escrow when it executes. More than the escrow needs a policy allowing reversal after settlement.',
    }),
    reason: t.string({ description: 'Free text, kept with the refund.' }),
    toAddress: t.string({ description: "The payer's origin to refund; required when the transaction's deposits came from several addresses." }),
  }),
  validate: refunds.requestRefundInput,
});

const manage = policies.memberOrApiKey('payment-manage');
const readOrOperator: Policy = { member: 'account-read', apiKey: true, operator: true };

builder.objectField(Transaction, 'refunds', (t) =>
  t.field({
    type: [Refund],
    description: "The transaction's refunds, oldest first.",
    resolve: (x, _a, ctx) =>
      loadMany(
        ctx,
        'Transaction.refunds',
        x.id,
        (ids) => ctx.deps.db.refund.findMany({ where: { transactionId: { in: ids } }, orderBy: { id: 'asc' } }),
        (r) => r.transactionId,
      ),
  }),
);

registerNode({ typename: 'Refund', policy: readOrOperator, load: (ctx, id) => refunds.loadRefund(ctx, id) });

builder.objectField(Refund, 'transaction', (t) =>
  t.field({ type: Transaction, nullable: true, resolve: (r, _a, ctx) => loadTransactionOf(ctx, r.transactionId) }),
);

builder.prismaObjectField('Organization', 'refunds', (t) =>
  t.connection({
    type: Refund,
    description: "The organization's refunds, newest first (an API key: its environment's).",
    authScopes: { policy: readOrOperator },
    args: { ...creationArgs, status: t.arg({ type: [RefundStatus] }), assetNetworkId: t.arg.id() },
    resolve: (org, args, ctx) => {
      const where = {
        AND: [
          visibleMoneyWhere(ctx) ?? { id: { in: [] } },
          { organizationId: org.id },
          createdWhere(args),
          args.status?.length ? { status: { in: args.status } } : {},
          args.assetNetworkId ? { assetNetworkId: String(args.assetNetworkId) } : {},
        ],
      };
      return keysetConnection(args, (q) => ctx.deps.db.refund.findMany({ where: { AND: [...where.AND, q.where] }, orderBy: q.orderBy, take: q.take }));
    },
  }),
);

builder.queryFields((t) => ({
  refund: t.field({
    type: Refund,
    authScopes: { policy: readOrOperator },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_p, args, ctx) => refunds.loadRefund(ctx, String(args.id)),
  }),
  refundFeePolicies: policyListField(t, 'refundFee', RefundFeePolicy, 'Every refund fee policy version (operators), oldest first; the arguments filter.'),
}));

builder.mutationFields((t) => ({
  requestRefund: t.field({
    type: Refund,
    description:
      'Requests a refund of a funded transaction to the payer’s origin (PENDING; the refund.execute job executes or ' +
      'rejects it: refund.executed / refund.rejected). 409 when never funded or the origin is unknown.',
    authScopes: { policy: manage },
    args: {
      transactionId: t.arg.id({ required: true }),
      input: t.arg({ type: RequestRefundInput }),
      idempotencyKey: t.arg.string({ description: 'Same key and input: the same refund; another input: 409.' }),
    },
    resolve: (_p, args, ctx) => refunds.requestRefund(ctx, String(args.transactionId), args.input ?? null, args.idempotencyKey),
  }),
  adminConfigureRefundFeePolicy: t.field({
    type: RefundFeePolicy,
    description: 'AdminConfigureRefundFeePolicy: the next version of the refund fee policy of a scope (operators).',
    authScopes: { policy: policies.operator },
    args: { input: t.arg({ type: ConfigureRefundFeePolicyInput, required: true }) },
    resolve: (_p, args, ctx) => configurePolicy(ctx, 'refundFee', toPolicyInput(args.input)),
  }),
}));
