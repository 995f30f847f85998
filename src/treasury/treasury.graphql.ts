import { builder, searchArgs, searchConnection, searchConnectionFields, searchSize } from '../builder';
import { policies } from '../auth/policy';
import * as treasury from './treasury';
import * as sweeps from './sweeps';

/** Treasury (docs/treasury.md): every field is for platform operators only. The REST routes carry the same policy. */
const operator = policies.operator;

const TreasuryTierEnum = builder.enumType('TreasuryTier', {
  description: 'HOT (online, pays withdrawals), WARM (online, refills HOT), COLD (the bulk of the funds).',
  values: ['HOT', 'WARM', 'COLD'] as const,
});

const ControlledAddressControlEnum = builder.enumType('ControlledAddressControl', {
  description: 'GENERATED: the service generated and sealed the key (sends and receives). WATCH_ONLY: given by the operator (receives, never sends).',
  values: ['GENERATED', 'WATCH_ONLY'] as const,
});

const ControlledAddress = builder.objectRef<treasury.ControlledAddressView>('ControlledAddress').implement({
  description: 'An address the platform controls (or watches) on one network, in a treasury tier.',
  fields: (t) => ({
    id: t.exposeID('id'),
    networkId: t.exposeID('networkId'),
    assetNetworkIds: t.exposeIDList('assetNetworkIds', { description: 'The asset-networks of the network it holds.' }),
    tier: t.expose('tier', { type: TreasuryTierEnum }),
    control: t.expose('control', { type: ControlledAddressControlEnum }),
    label: t.exposeString('label'),
    address: t.exposeString('address', { description: 'Normalized for its network (lower-case hex for SANDBOX).' }),
    publicKey: t.exposeString('publicKey', {
      nullable: true,
      description: 'GENERATED: the public key the address commits to (compressed hex); WATCH_ONLY: null.',
    }),
    active: t.exposeBoolean('active'),
    deactivatedAt: t.field({ type: 'DateTime', nullable: true, resolve: (a) => a.deactivatedAt }),
    createdByOperatorId: t.exposeID('createdByOperatorId'),
    createdAt: t.field({ type: 'DateTime', resolve: (a) => a.createdAt }),
    updatedAt: t.field({ type: 'DateTime', resolve: (a) => a.updatedAt }),
    balance: t.exposeString('balance', {
      nullable: true,
      description:
        'In a listing by asset-network: its mined balance of that asset-network (base units; null elsewhere, or when the network has no balance read).',
    }),
  }),
});

const TreasuryLiabilities = builder.objectRef<treasury.AssetNetworkOverview['liabilities']>('TreasuryLiabilities').implement({
  description: 'Posted balances of the liability ledger accounts (credit-normal), decimal strings of base units.',
  fields: (t) => ({
    customer: t.exposeString('customer'),
    escrow: t.exposeString('escrow'),
    suspense: t.exposeString('suspense'),
    retained: t.exposeString('retained'),
  }),
});

const TreasuryTierHolding = builder.objectRef<treasury.TierHolding>('TreasuryTierHolding').implement({
  fields: (t) => ({
    tier: t.expose('tier', { type: TreasuryTierEnum }),
    addresses: t.exposeInt('addresses', { description: 'Controlled addresses of the tier holding the asset-network (active or not).' }),
    balance: t.exposeString('balance', { nullable: true, description: 'Their mined balances (null: the network has no balance read).' }),
  }),
});

const AssetNetworkTreasuryOverview = builder.objectRef<treasury.AssetNetworkOverview>('AssetNetworkTreasuryOverview').implement({
  description: 'Customer liabilities from the ledger against the assets held on chain, for one asset-network (decimal strings of base units).',
  fields: (t) => ({
    assetNetworkId: t.exposeID('assetNetworkId'),
    assetCode: t.exposeString('assetCode'),
    networkId: t.exposeID('networkId'),
    networkKind: t.exposeString('networkKind'),
    customerLiabilities: t.exposeString('customerLiabilities', { description: 'CUSTOMER + ESCROW + SUSPENSE + RETAINED.' }),
    liabilities: t.field({ type: TreasuryLiabilities, resolve: (o) => o.liabilities }),
    platformFunds: t.exposeString('platformFunds', { description: "FEES + PLATFORM_REVENUE: the platform's own funds." }),
    chainClearing: t.exposeString('chainClearing', { description: 'CHAIN_CLEARING (debit-normal): what the ledger says is on chain.' }),
    controlledHoldings: t.field({ type: [TreasuryTierHolding], resolve: (o) => o.controlledHoldings }),
    depositAddressHoldings: t.exposeString('depositAddressHoldings', { nullable: true }),
    assetsHeld: t.exposeString('assetsHeld', { nullable: true, description: "Controlled and deposit addresses' mined balances." }),
    difference: t.exposeString('difference', { nullable: true, description: 'assetsHeld - customerLiabilities.' }),
    clearingDifference: t.exposeString('clearingDifference', {
      nullable: true,
      description: 'assetsHeld - chainClearing (0 when the chain and the ledger agree).',
    }),
  }),
});

const TreasuryOverview = builder.objectRef<treasury.TreasuryOverview>('TreasuryOverview').implement({
  description: 'GetTreasuryOverview: every asset-network of the catalog, read in one transaction.',
  fields: (t) => ({
    generatedAt: t.field({ type: 'DateTime', resolve: (o) => o.generatedAt }),
    assetNetworks: t.field({ type: [AssetNetworkTreasuryOverview], resolve: (o) => o.assetNetworks }),
  }),
});

const TreasuryTierTarget = builder.objectRef<treasury.TierTarget>('TreasuryTierTarget').implement({
  fields: (t) => ({
    tier: t.expose('tier', { type: TreasuryTierEnum }),
    min: t.exposeString('min'),
    target: t.exposeString('target'),
    max: t.exposeString('max', { nullable: true, description: 'Null: no ceiling.' }),
  }),
});

const TreasuryLiquidityPolicy = builder.objectRef<treasury.LiquidityPolicyView>('TreasuryLiquidityPolicy').implement({
  description: "A version of an asset-network's liquidity targets per tier (base units).",
  fields: (t) => ({
    id: t.exposeID('id'),
    assetNetworkId: t.exposeID('assetNetworkId'),
    version: t.exposeInt('version'),
    tiers: t.field({ type: [TreasuryTierTarget], resolve: (p) => p.tiers }),
    operatorId: t.exposeID('operatorId'),
    createdAt: t.field({ type: 'DateTime', resolve: (p) => p.createdAt }),
  }),
});

const TreasuryTierPosition = builder.objectRef<treasury.TierPosition>('TreasuryTierPosition').implement({
  fields: (t) => ({
    tier: t.expose('tier', { type: TreasuryTierEnum }),
    balance: t.exposeString('balance'),
    movable: t.exposeString('movable', { description: "What the tier's GENERATED addresses can send now." }),
    min: t.exposeString('min', { nullable: true }),
    target: t.exposeString('target', { nullable: true }),
    max: t.exposeString('max', { nullable: true }),
    position: t.exposeString('position', { description: 'NO_TARGET, BELOW_MIN, WITHIN or ABOVE_MAX.' }),
  }),
});

const TreasuryRebalanceMove = builder.objectRef<treasury.RebalanceMove>('TreasuryRebalanceMove').implement({
  fields: (t) => ({
    fromTier: t.expose('fromTier', { type: TreasuryTierEnum }),
    fromControlledAddressId: t.exposeID('fromControlledAddressId'),
    fromAddress: t.exposeString('fromAddress'),
    toTier: t.expose('toTier', { type: TreasuryTierEnum }),
    toControlledAddressId: t.exposeID('toControlledAddressId'),
    toAddress: t.exposeString('toAddress'),
    amount: t.exposeString('amount'),
    reason: t.exposeString('reason'),
  }),
});

const TreasuryRebalancePlan = builder.objectRef<treasury.RebalancePlan>('TreasuryRebalancePlan').implement({
  description: 'GetTreasuryRebalancePlan: proposed moves between tiers under the liquidity policy in force (read-only: nothing is sent).',
  fields: (t) => ({
    assetNetworkId: t.exposeID('assetNetworkId'),
    policyId: t.exposeID('policyId', { nullable: true }),
    policyVersion: t.exposeInt('policyVersion', { nullable: true }),
    tiers: t.field({ type: [TreasuryTierPosition], resolve: (p) => p.tiers }),
    moves: t.field({ type: [TreasuryRebalanceMove], resolve: (p) => p.moves }),
    notes: t.exposeStringList('notes'),
    depositAddressHoldings: t.exposeString('depositAddressHoldings', { nullable: true }),
  }),
});

const TreasurySweep = builder.objectRef<sweeps.SweepView>('TreasurySweep').implement({
  description: 'A sweep: one transfer on the chain from a deposit address to a HOT or WARM controlled address. The ledger does not move.',
  fields: (t) => ({
    id: t.exposeID('id'),
    assetNetworkId: t.exposeID('assetNetworkId'),
    networkId: t.exposeID('networkId'),
    organizationId: t.exposeID('organizationId', { description: "The deposit address's organization." }),
    depositAddressId: t.exposeID('depositAddressId'),
    fromAddress: t.exposeString('fromAddress'),
    toControlledAddressId: t.exposeID('toControlledAddressId'),
    toAddress: t.exposeString('toAddress'),
    amount: t.exposeString('amount'),
    networkCost: t.exposeString('networkCost', { description: "The adapter's estimate, in base units of the network's native asset (not charged)." }),
    txHash: t.exposeString('txHash'),
    chainStatus: t.exposeString('chainStatus', {
      nullable: true,
      description: 'PENDING, MINED, ORPHANED, DROPPED, REPLACED or REVERTED, as the chain shows it now.',
    }),
    confirmations: t.exposeInt('confirmations'),
    operatorId: t.exposeID('operatorId'),
    createdAt: t.field({ type: 'DateTime', resolve: (s) => s.createdAt }),
  }),
});

const RegisterControlledAddressInput = builder.inputType('RegisterControlledAddressInput', {
  fields: (t) => ({
    assetNetworkIds: t.idList({ required: true, description: 'The asset-networks it holds: all on one network with an adapter.' }),
    tier: t.field({ type: TreasuryTierEnum, required: true }),
    control: t.field({ type: ControlledAddressControlEnum, required: true }),
    label: t.string({ required: true, description: '1 to 200 characters.' }),
    address: t.string({ description: 'WATCH_ONLY: required, valid for the network. GENERATED: omitted (the service generates the key).' }),
  }),
});

const TierTargetInput = builder.inputType('TreasuryTierTargetInput', {
  fields: (t) => ({
    tier: t.field({ type: TreasuryTierEnum, required: true }),
    min: t.string({ required: true, description: 'Base units (decimal string).' }),
    target: t.string({ required: true, description: 'Base units; min <= target.' }),
    max: t.string({ description: 'Base units; target <= max. Omitted: no ceiling.' }),
  }),
});

const ConfigureLiquidityPolicyInput = builder.inputType('ConfigureTreasuryLiquidityPolicyInput', {
  fields: (t) => ({
    assetNetworkId: t.id({ required: true }),
    tiers: t.field({ type: [TierTargetInput], required: true, description: 'One to three tiers, each at most once.' }),
  }),
});

const ExecuteSandboxSweepInput = builder.inputType('ExecuteSandboxSweepInput', {
  fields: (t) => ({
    assetNetworkId: t.id({ required: true, description: 'An asset-network of a SANDBOX network.' }),
    fromDepositAddressId: t.id({ required: true, description: 'A deposit address of the asset-network, of a CUSTODIAL wallet.' }),
    toControlledAddressId: t.id({ required: true, description: 'An active HOT or WARM controlled address holding the asset-network.' }),
    amount: t.string({ description: 'Base units; default: everything the deposit address can send now.' }),
  }),
});

builder.queryFields((t) => ({
  treasuryOverview: t.field({
    type: TreasuryOverview,
    description: 'GetTreasuryOverview. Platform operators only.',
    authScopes: { policy: operator },
    resolve: (_p, _a, ctx) => treasury.treasuryOverview(ctx),
  }),
  treasuryControlledAddresses: t.field({
    type: [ControlledAddress],
    description: 'GetTreasuryControlledAddresses: the addresses holding the asset-network, oldest first. Platform operators only.',
    authScopes: { policy: operator },
    args: { assetNetworkId: t.arg.id({ required: true }), activeOnly: t.arg.boolean({ description: 'Only active addresses (default: all).' }) },
    resolve: (_p, a, ctx) => treasury.listControlledAddresses(ctx, String(a.assetNetworkId), a.activeOnly),
  }),
  treasuryControlledAddress: t.field({
    type: ControlledAddress,
    description: 'One controlled address. Platform operators only.',
    authScopes: { policy: operator },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_p, a, ctx) => treasury.controlledAddressView(await treasury.loadControlledAddress(ctx, String(a.id))),
  }),
  treasuryRebalancePlan: t.field({
    type: TreasuryRebalancePlan,
    description: 'GetTreasuryRebalancePlan. Platform operators only.',
    authScopes: { policy: operator },
    args: { assetNetworkId: t.arg.id({ required: true }) },
    resolve: (_p, a, ctx) => treasury.rebalancePlan(ctx, String(a.assetNetworkId)),
  }),
  treasurySweeps: t.connection(
    {
      type: TreasurySweep,
      description: 'SearchTreasurySweeps: newest first (createdAt, then id); totalCount exact. Platform operators only.',
      authScopes: { policy: operator },
      ...searchSize,
      args: { assetNetworkId: t.arg.id(), ...searchArgs },
      resolve: (_p, a, ctx) =>
        searchConnection(a, (paging) => sweeps.searchSweeps(ctx, { assetNetworkId: a.assetNetworkId == null ? null : String(a.assetNetworkId), ...paging })),
    },
    searchConnectionFields,
  ),
  treasurySweep: t.field({
    type: TreasurySweep,
    description: 'One sweep. Platform operators only.',
    authScopes: { policy: operator },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_p, a, ctx) => sweeps.loadSweep(ctx, String(a.id)),
  }),
}));

builder.mutationFields((t) => ({
  adminRegisterControlledAddress: t.field({
    type: ControlledAddress,
    description: 'AdminRegisterControlledAddress: a GENERATED (key generated and sealed here) or WATCH_ONLY (receive-only) treasury address.',
    authScopes: { policy: operator },
    args: { input: t.arg({ type: RegisterControlledAddressInput, required: true }) },
    resolve: (_p, a, ctx) => treasury.registerControlledAddress(ctx, a.input),
  }),
  adminDeactivateControlledAddress: t.field({
    type: ControlledAddress,
    description: 'Deactivates a controlled address (idempotent): no sweep, withdrawal or plan uses it any more.',
    authScopes: { policy: operator },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_p, a, ctx) => treasury.deactivateControlledAddress(ctx, String(a.id)),
  }),
  adminConfigureTreasuryLiquidityPolicy: t.field({
    type: TreasuryLiquidityPolicy,
    description: "AdminConfigureTreasuryLiquidityPolicy: the next version of an asset-network's targets per tier.",
    authScopes: { policy: operator },
    args: { input: t.arg({ type: ConfigureLiquidityPolicyInput, required: true }) },
    resolve: (_p, a, ctx) => treasury.configureLiquidityPolicy(ctx, a.input),
  }),
  adminExecuteSandboxSweep: t.field({
    type: TreasurySweep,
    description: 'AdminExecuteSandboxSweep: moves the value of a deposit address to a HOT or WARM controlled address on a SANDBOX network.',
    authScopes: { policy: operator },
    args: {
      input: t.arg({ type: ExecuteSandboxSweepInput, required: true }),
      idempotencyKey: t.arg.string({ description: 'Same key and input: the same sweep; another input: 409.' }),
    },
    resolve: (_p, a, ctx) => sweeps.executeSandboxSweep(ctx, a.input, a.idempotencyKey),
  }),
}));
