import { z } from 'zod';
import { builder, createdWhere, creationArgs, keysetConnection, loadMany, NodeRef, registerNode } from '../builder';
import { visibleMoneyWhere } from '../deposits/payment-intents';
import { Account } from '../accounts/accounts.graphql';
import { policies, type Policy } from '../auth/policy';
import { EnvironmentType } from '../tenancy/tenancy.graphql';
import { amountToString, numericToAmount, numericToPercentage, percentageToString } from '../money';
import { loadTransactionOf, loadVisibleAccount, Transaction } from '../transactions/transactions.graphql';
import type { RevenueExecutionDestination as DestinationRow } from '../generated/prisma/client';
import { configurePolicy } from './policies/policies';
import { ConfigurePricingPolicyInput, policyListField, PricingPolicy, toPolicyInput } from './policies/policies.graphql';
import * as settlements from './settlements';
import * as revenue from './revenue';
import type { SettlementRow } from './settlements';
import type { RetainReason } from './retained';

const amount = (v: Parameters<typeof numericToAmount>[0]) => amountToString(numericToAmount(v));
const maybeAmount = (v: Parameters<typeof numericToAmount>[0] | null) => (v === null ? null : amount(v));

/** Who reads settlements: members with account-read, API keys (their environment's), operators (any). */
export const settlementReadPolicy: Policy = { member: 'account-read', apiKey: true, operator: true };

const SettlementStatus = builder.enumType('SettlementStatus', {
  description:
    'PENDING -> EXECUTED (one ledger transaction moved gross = fee + portions) or FAILED (a reason; nothing ' +
    'moved); FAILED -> PENDING by AdminRetrySettlement. docs/settlements.md.',
  values: ['PENDING', 'EXECUTED', 'FAILED'] as const,
});
const SettlementAllocationStatus = builder.enumType('SettlementAllocationStatus', {
  description:
    "RELEASED: credited to its account's balance. RETAINED: held in its own RETAINED ledger account until the cause (retainReason) clears, then RELEASED.",
  values: ['RELEASED', 'RETAINED'] as const,
});
const SettlementRetainReason = builder.enumType('SettlementRetainReason', {
  description:
    'Why a portion is retained: the account is CLOSED (never clears), FROZEN (until unfrozen), not authorized for ' +
    "the transaction's application (until authorized), or a hold condition of its split rule is not met (until " +
    'approved / its time passes).',
  values: ['ACCOUNT_CLOSED', 'ACCOUNT_FROZEN', 'ACCOUNT_NOT_AUTHORIZED', 'HOLD_CONDITION_NOT_MET'] as const satisfies readonly RetainReason[],
});

type AllocationRow = SettlementRow['allocations'][number];
const SettlementAllocation = builder.objectRef<AllocationRow>('SettlementAllocation').implement({
  description: "One beneficiary's portion of a settlement. Amounts: base units, decimal strings.",
  fields: (t) => ({
    id: t.exposeID('id', { description: 'The AllocationId of the split_portion events.' }),
    settlementId: t.exposeID('settlementId'),
    splitRuleId: t.exposeID('splitRuleId', { nullable: true, description: 'Null: no split rule, everything to the beneficiary.' }),
    participantId: t.exposeID('participantId', { description: 'The TransactionParticipant id (ParticipantId of settlement.split_portion_retained).' }),
    accountId: t.exposeID('accountId'),
    amount: t.string({ resolve: (a) => amount(a.amount) }),
    status: t.field({ type: SettlementAllocationStatus, resolve: (a) => a.status }),
    retainReason: t.field({ type: SettlementRetainReason, nullable: true, resolve: (a) => a.retainReason as never }),
    account: t.field({
      type: Account,
      nullable: true,
      description: 'The account credited, when the caller may see it (an API key: when authorized for its application); null otherwise.',
      resolve: (a, _args, ctx) => loadVisibleAccount(ctx, a.accountId),
    }),
    reversedAmount: t.string({ description: 'Taken back by refunds with reversal (never more than amount).', resolve: (a) => amount(a.reversedAmount) }),
    releasedAt: t.expose('releasedAt', { type: 'DateTime', nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

export const Settlement = builder.objectRef<SettlementRow>('Settlement').implement({
  interfaces: [NodeRef],
  description: 'Money leaving a transaction escrow: the platform fee and the split portions, in one ledger transaction. Amounts: base units, decimal strings.',
  fields: (t) => ({
    id: t.exposeID('id'),
    organizationId: t.exposeID('organizationId'),
    applicationId: t.exposeID('applicationId'),
    environmentId: t.exposeID('environmentId'),
    environmentType: t.field({ type: EnvironmentType, resolve: (s) => s.environmentType }),
    transactionId: t.exposeID('transactionId'),
    assetNetworkId: t.exposeID('assetNetworkId'),
    milestoneId: t.exposeID('milestoneId', { nullable: true, description: 'The release milestone that requested it; null for a direct request.' }),
    requestedAmount: t.string({
      nullable: true,
      description: 'What was asked (gross); null: everything left in escrow when it executes.',
      resolve: (s) => maybeAmount(s.requestedAmount),
    }),
    status: t.field({ type: SettlementStatus, resolve: (s) => s.status }),
    grossAmount: t.string({
      nullable: true,
      description: 'Executed: what left the escrow = feeAmount + distributableAmount.',
      resolve: (s) => maybeAmount(s.grossAmount),
    }),
    feeAmount: t.string({
      nullable: true,
      description: 'Executed: the platform fee (credited to platform revenue).',
      resolve: (s) => maybeAmount(s.feeAmount),
    }),
    distributableAmount: t.string({
      nullable: true,
      description: 'Executed: gross - fee = the sum of the allocations.',
      resolve: (s) => maybeAmount(s.distributableAmount),
    }),
    pricingPolicyId: t.exposeID('pricingPolicyId', { nullable: true, description: 'The pricing policy version applied; null: none in force (no fee).' }),
    feePercentage: t.string({
      nullable: true,
      description: 'The policy\'s percentage applied ("1.5" for 1.5%).',
      resolve: (s) => (s.feePercentage === null ? null : percentageToString(numericToPercentage(s.feePercentage))),
    }),
    isTotal: t.exposeBoolean('isTotal', { nullable: true, description: 'Executed: whether it emptied the escrow (the transaction is SETTLED).' }),
    attempts: t.exposeInt('attempts'),
    failureReason: t.exposeString('failureReason', {
      nullable: true,
      description: 'The last failed attempt: a code, then details. Kept while PENDING again after a retry.',
    }),
    failedAt: t.expose('failedAt', { type: 'DateTime', nullable: true }),
    executedAt: t.expose('executedAt', { type: 'DateTime', nullable: true }),
    ledgerTransactionId: t.exposeID('ledgerTransactionId', { nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
    allocations: t.field({ type: [SettlementAllocation], resolve: (s) => s.allocations }),
  }),
});

builder.objectField(Transaction, 'settlements', (t) =>
  t.field({
    type: [Settlement],
    description: "The transaction's settlements, oldest first.",
    resolve: (x, _a, ctx) =>
      loadMany(
        ctx,
        'Transaction.settlements',
        x.id,
        async (ids) =>
          settlements.withAllocations(ctx.deps.db, await ctx.deps.db.settlement.findMany({ where: { transactionId: { in: ids } }, orderBy: { id: 'asc' } })),
        (r) => r.transactionId,
      ),
  }),
);

const RequestSettlementInput = builder.inputType('RequestSettlementInput', {
  fields: (t) => ({ amount: t.string({ description: 'Gross to settle (fee included), base units; omitted: everything left in escrow when it executes.' }) }),
  validate: settlements.requestSettlementInput,
});

const RevenueExecutionDestination = builder.objectRef<DestinationRow>('RevenueExecutionDestination').implement({
  description: "Where an asset-network's platform revenue is paid out (a version; the newest is in force). Paying out is the treasury's work.",
  fields: (t) => ({
    id: t.exposeID('id'),
    assetNetworkId: t.exposeID('assetNetworkId'),
    version: t.exposeInt('version'),
    address: t.exposeString('address'),
    label: t.exposeString('label', { nullable: true }),
    createdByOperatorId: t.exposeID('createdByOperatorId', { nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});
const RegisterRevenueDestinationInput = builder.inputType('RegisterRevenueDestinationInput', {
  description: 'The AdminRegisterGlobalRevenueAccountExecutionDestinationCommand.',
  fields: (t) => ({
    assetNetworkId: t.id({ required: true }),
    address: t.string({ required: true, description: "Validated by the network's adapter." }),
    label: t.string(),
  }),
  validate: z.object({
    assetNetworkId: z.union([z.string(), z.number()]),
    address: revenue.revenueDestinationInput.shape.address,
    label: revenue.revenueDestinationInput.shape.label,
  }),
});

const GlobalRevenueBalance = builder.objectRef<revenue.RevenueOverview>('GlobalRevenueBalance').implement({
  description: 'The platform revenue of one asset-network: its PLATFORM_REVENUE ledger balance and the payout destination in force.',
  fields: (t) => ({
    assetNetworkId: t.exposeID('assetNetworkId'),
    balance: t.string({ description: 'Posted revenue not yet paid out, base units.', resolve: (r) => r.balance.posted.toString() }),
    destination: t.field({ type: RevenueExecutionDestination, nullable: true, resolve: (r) => r.destination }),
  }),
});

const read = settlementReadPolicy;

registerNode({ typename: 'Settlement', policy: read, load: (ctx, id) => settlements.loadSettlement(ctx, id) });

builder.objectField(Settlement, 'transaction', (t) =>
  t.field({ type: Transaction, nullable: true, resolve: (r, _a, ctx) => loadTransactionOf(ctx, r.transactionId) }),
);

builder.prismaObjectField('Organization', 'settlements', (t) =>
  t.connection({
    type: Settlement,
    description: "The organization's settlements, newest first (an API key: its environment's).",
    authScopes: { policy: read },
    args: { ...creationArgs, status: t.arg({ type: [SettlementStatus] }), assetNetworkId: t.arg.id(), transactionId: t.arg.id() },
    resolve: (org, args, ctx) => {
      const where = {
        AND: [
          visibleMoneyWhere(ctx) ?? { id: { in: [] } },
          { organizationId: org.id },
          createdWhere(args),
          args.status?.length ? { status: { in: args.status } } : {},
          args.assetNetworkId ? { assetNetworkId: String(args.assetNetworkId) } : {},
          args.transactionId ? { transactionId: String(args.transactionId) } : {},
        ],
      };
      return keysetConnection(args, async (q) =>
        settlements.withAllocations(
          ctx.deps.db,
          await ctx.deps.db.settlement.findMany({ where: { AND: [...where.AND, q.where] }, orderBy: q.orderBy, take: q.take }),
        ),
      );
    },
  }),
);
const manage = policies.memberOrApiKey('payment-manage');

builder.queryFields((t) => ({
  settlement: t.field({
    type: Settlement,
    authScopes: { policy: read },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_p, args, ctx) => settlements.loadSettlement(ctx, String(args.id)),
  }),
  pricingPolicies: policyListField(
    t,
    'pricing',
    PricingPolicy,
    'Pricing policy versions (operators), oldest first, optionally of one scope, organization, application or asset-network.',
  ),
  globalRevenueAccount: t.field({
    type: [GlobalRevenueBalance],
    description: 'The platform revenue per asset-network of the catalog (operators): balance and payout destination in force.',
    authScopes: { policy: policies.operator },
    resolve: (_p, _a, ctx) => revenue.globalRevenueAccount(ctx),
  }),
}));

builder.mutationFields((t) => ({
  requestSettlement: t.field({
    type: Settlement,
    description:
      'Asks to settle a RESERVED transaction without release milestones (PENDING; the settlement job executes it). ' +
      '409 when a milestone rule governs it, it may not release now, or the amount exceeds its escrow beyond pending ' +
      'settlements.',
    authScopes: { policy: manage },
    args: {
      transactionId: t.arg.id({ required: true }),
      input: t.arg({ type: RequestSettlementInput }),
      idempotencyKey: t.arg.string({ description: 'Same key and input: the same settlement; another input: 409.' }),
    },
    resolve: (_p, args, ctx) => settlements.requestSettlement(ctx, String(args.transactionId), args.input ?? null, args.idempotencyKey),
  }),
  adminRetrySettlement: t.field({
    type: Settlement,
    description: 'Operators: a FAILED settlement back to PENDING, executed again under the same ledger key (it can never pay twice). 409 unless FAILED.',
    authScopes: { policy: policies.operator },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_p, args, ctx) => settlements.retrySettlement(ctx, String(args.id)),
  }),
  adminConfigurePricingPolicy: t.field({
    type: PricingPolicy,
    description:
      'Operators: the next version of the platform fee of a scope (platform, organization or application, optionally ' +
      'one asset-network), effective from now or a future time.',
    authScopes: { policy: policies.operator },
    args: { input: t.arg({ type: ConfigurePricingPolicyInput, required: true }) },
    resolve: (_p, args, ctx) => configurePolicy(ctx, 'pricing', toPolicyInput(args.input)),
  }),
  adminRegisterGlobalRevenueAccountExecutionDestination: t.field({
    type: RevenueExecutionDestination,
    description:
      "Operators: where an asset-network's platform revenue is paid out (a new version, in force at once). The address is validated by the network's adapter.",
    authScopes: { policy: policies.operator },
    args: { input: t.arg({ type: RegisterRevenueDestinationInput, required: true }) },
    resolve: (_p, args, ctx) =>
      revenue.registerRevenueDestination(ctx, { assetNetworkId: String(args.input.assetNetworkId), address: args.input.address, label: args.input.label }),
  }),
}));
