import { builder, searchArgs, searchConnection, searchConnectionFields, searchSize } from '../../builder';
import { policies } from '../../auth/policy';
import { amountToString, numericToAmount } from '../../money';
import * as reconciliation from './reconciliation';
import type { AssetNetworkSummary } from './reconciliation';

/** GraphQL of reconciliation (docs/reconciliation.md): every field is for platform operators only. */
const operator = policies.operator;
const amount = (v: { toFixed(dp: number): string }) => amountToString(numericToAmount(v));

const ReconciliationAssetNetworkSummary = builder.objectRef<AssetNetworkSummary>('ReconciliationAssetNetworkSummary').implement({
  description: 'What one run compared for one asset-network (amounts: base units, decimal strings).',
  fields: (t) => ({
    assetNetworkId: t.exposeID('assetNetworkId'),
    networkId: t.exposeID('networkId'),
    networkKind: t.exposeString('networkKind'),
    skipped: t.exposeBoolean('skipped', { description: 'True when the network has no adapter in this version (note says so): nothing compared.' }),
    note: t.exposeString('note', { nullable: true }),
    ledger: t.exposeString('ledger', { description: 'The CHAIN_CLEARING balance: what the ledger says the platform holds on the chain.' }),
    chain: t.exposeString('chain', { description: "Sum of the mined balances of the platform's addresses (deposit and controlled addresses)." }),
    inFlightOut: t.exposeString('inFlightOut', { description: 'Refunds broadcast from those addresses (CHAIN_CLEARING credited already), not mined yet.' }),
    outMinedNotPosted: t.exposeString('outMinedNotPosted', {
      description: 'Withdrawals mined from those addresses whose CHAIN_CLEARING hold is not posted yet (posted when CONFIRMED).',
    }),
    pendingIn: t.exposeString('pendingIn', { description: 'Mined transfers whose deposit is not credited yet (pending, or below the required depth).' }),
    rejectedIn: t.exposeString('rejectedIn', { description: 'Mined transfers of REJECTED deposits (never credited).' }),
    observed: t.exposeString('observed', { description: 'The chain side compared with ledger.' }),
    addresses: t.exposeInt('addresses'),
    divergences: t.exposeInt('divergences'),
  }),
});

export const ReconciliationDivergence = builder.prismaObject('ReconciliationDivergence', {
  description: 'A difference between the ledger and the chain found by a reconciliation (docs/reconciliation.md).',
  fields: (t) => ({
    id: t.exposeID('id'),
    reconciliationId: t.exposeID('reconciliationId'),
    assetNetworkId: t.exposeID('assetNetworkId'),
    kind: t.exposeString('kind', { description: 'BALANCE_MISMATCH, DEPOSIT_NOT_ON_CHAIN or UNCREDITED_TRANSFER.' }),
    expected: t.string({ description: 'What the ledger says (base units).', resolve: (d) => amount(d.expected) }),
    observed: t.string({ description: 'What the chain shows (base units).', resolve: (d) => amount(d.observed) }),
    difference: t.string({ description: 'observed - expected (base units; negative when the chain holds less).', resolve: (d) => amount(d.difference) }),
    details: t.field({ type: 'JSON', resolve: (d) => d.details as never }),
    status: t.exposeString('status', { description: 'OPEN or RESOLVED.' }),
    resolution: t.exposeString('resolution', { nullable: true, description: 'CORRECTION or ACCEPT_CHAIN.' }),
    resolutionReason: t.exposeString('resolutionReason', { nullable: true }),
    resolvedByOperatorId: t.exposeID('resolvedByOperatorId', { nullable: true }),
    ledgerCorrectionId: t.exposeID('ledgerCorrectionId', { nullable: true, description: 'CORRECTION: the LedgerCorrection posted.' }),
    resolvedAt: t.expose('resolvedAt', { type: 'DateTime', nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

export const Reconciliation = builder.prismaObject('Reconciliation', {
  description: 'One reconciliation run: the ledger against the chain, per asset-network (docs/reconciliation.md).',
  fields: (t) => ({
    id: t.exposeID('id'),
    trigger: t.exposeString('trigger', { description: 'OPERATOR (AdminExecuteReconciliation) or SCHEDULE (the hourly job).' }),
    operatorId: t.exposeID('operatorId', { nullable: true }),
    status: t.exposeString('status', { description: 'COMPLETED.' }),
    divergenceCount: t.exposeInt('divergenceCount'),
    startedAt: t.expose('startedAt', { type: 'DateTime' }),
    completedAt: t.expose('completedAt', { type: 'DateTime' }),
    summaries: t.field({ type: [ReconciliationAssetNetworkSummary], resolve: (r) => r.summaries as unknown as AssetNetworkSummary[] }),
    divergences: t.field({ type: [ReconciliationDivergence], resolve: (r, _a, ctx) => reconciliation.divergencesOf(ctx, r.id) }),
  }),
});

const ReconciliationCorrectionAccountInput = builder.inputType('ReconciliationCorrectionAccountInput', {
  fields: (t) => ({
    kind: t.string({ required: true, description: 'CUSTOMER, ESCROW, SUSPENSE, RETAINED, CHAIN_CLEARING, FEES or PLATFORM_REVENUE.' }),
    ownerId: t.id({ description: 'As in LedgerCorrectionAccountInput: omitted for system kinds.' }),
    assetNetworkId: t.id({ required: true }),
  }),
});

const ReconciliationCorrectionLineInput = builder.inputType('ReconciliationCorrectionLineInput', {
  fields: (t) => ({
    account: t.field({ type: ReconciliationCorrectionAccountInput, required: true }),
    direction: t.string({ required: true, description: 'DEBIT or CREDIT.' }),
    amount: t.string({ required: true, description: 'Base units > 0, a decimal string.' }),
  }),
});

const ResolveReconciliationDivergenceInput = builder.inputType('ResolveReconciliationDivergenceInput', {
  fields: (t) => ({
    divergenceId: t.id({ required: true, description: 'A divergence of this reconciliation.' }),
    resolution: t.string({ required: true, description: 'CORRECTION (lines required: a ledger correction) or ACCEPT_CHAIN (no ledger change).' }),
    reason: t.string({ required: true, description: '1 to 1000 characters.' }),
    organizationId: t.id({ description: 'CORRECTION: as AdminRecordLedgerCorrection (required when a line names an organization-owned account).' }),
    correctsLedgerTransactionId: t.id({ description: 'CORRECTION: the ledger transaction it corrects, if one.' }),
    lines: t.field({ type: [ReconciliationCorrectionLineInput], description: "CORRECTION: balanced lines, at least one on the divergence's asset-network." }),
  }),
});

builder.queryFields((t) => ({
  reconciliation: t.field({
    type: Reconciliation,
    description: 'A reconciliation with its per-asset-network summaries and divergences (operators).',
    authScopes: { policy: operator },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_p, args, ctx) => reconciliation.loadReconciliation(ctx, String(args.id)),
  }),
  reconciliations: t.connection(
    {
      type: Reconciliation,
      description: 'Reconciliations, newest first (startedAt, then id; operators); totalCount exact.',
      authScopes: { policy: operator },
      ...searchSize,
      args: searchArgs,
      resolve: (_p, args, ctx) => searchConnection(args, (paging) => reconciliation.searchReconciliations(ctx, paging)),
    },
    searchConnectionFields,
  ),
}));

builder.mutationFields((t) => ({
  adminExecuteReconciliation: t.field({
    type: Reconciliation,
    description: 'AdminExecuteReconciliation (operators): compares the ledger against the chain per asset-network now and records each divergence.',
    authScopes: { policy: operator },
    resolve: (_p, _a, ctx) => reconciliation.executeReconciliation(ctx),
  }),
  adminResolveReconciliationDivergence: t.field({
    type: ReconciliationDivergence,
    description:
      'AdminResolveReconciliationDivergence (operators): resolves an OPEN divergence by a ledger correction or by accepting the chain, with a reason.',
    authScopes: { policy: operator },
    args: {
      reconciliationId: t.arg.id({ required: true }),
      input: t.arg({ type: ResolveReconciliationDivergenceInput, required: true }),
    },
    resolve: (_p, args, ctx) => reconciliation.resolveDivergence(ctx, String(args.reconciliationId), args.input),
  }),
}));
