import { builder } from '../../builder';
import { policies } from '../../auth/policy';
import { amountToString, numericToAmount, numericToPercentage, percentageToString } from '../../money';
import * as costs from './costs';
import * as reserve from './reserve';

/**
 * Network execution costs and resource reserves (docs/network-costs.md): the integrator's quote,
 * the operators' cost tables, margin policies and the network resource reserve.
 */
const operator = policies.operator;
const amount = (v: Parameters<typeof numericToAmount>[0]) => amountToString(numericToAmount(v));

const NetworkExecutionOperation = builder.enumType('NetworkExecutionOperation', {
  description: 'The operation a network execution quote prices.',
  values: ['WITHDRAWAL', 'SWEEP'] as const,
});

const ReplenishmentSource = builder.enumType('ReplenishmentSource', {
  description:
    'Where reserve top-ups come from: SANDBOX_FAUCET (sandbox networks: the job credits the reserve itself) or ' +
    'EXTERNAL_TOP_UP (operators top up and record it with a seed).',
  values: ['SANDBOX_FAUCET', 'EXTERNAL_TOP_UP'] as const,
});

export const NetworkExecutionQuote = builder.prismaObject('NetworkExecutionQuote', {
  description:
    "What an operation costs on its network, in base units of the NETWORK'S NATIVE asset (decimal strings): " +
    "networkCost = Σ resource quantity × unit price of the cost table in force (or the adapter's own fee without a " +
    'table), margin = percentage of networkCost (half up) + fixed amount, total = networkCost + margin. Valid ' +
    'until expiresAt (60 s).',
  fields: (t) => ({
    quoteId: t.exposeID('id'),
    assetNetworkId: t.exposeID('assetNetworkId'),
    networkId: t.exposeID('networkId'),
    operation: t.expose('operation', { type: NetworkExecutionOperation }),
    amount: t.string({ resolve: (q) => amount(q.amount) }),
    resources: t.field({
      type: 'JSON',
      description: 'Resource name → quantity (decimal strings), e.g. {"energy":"65000","bandwidth":"345"}.',
      resolve: (q) => q.resources,
    }),
    networkCost: t.string({ resolve: (q) => amount(q.networkCost) }),
    margin: t.string({ resolve: (q) => amount(q.margin) }),
    total: t.string({ resolve: (q) => amount(q.total) }),
    costSource: t.exposeString('costSource', { description: 'COST_TABLE or ADAPTER.' }),
    costTableVersion: t.exposeInt('costTableVersion', { nullable: true }),
    marginPolicyVersion: t.exposeInt('marginPolicyVersion', { nullable: true }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime' }),
  }),
});

const NetworkResourcePrice = builder.prismaObject('NetworkResourcePrice', {
  fields: (t) => ({
    resource: t.exposeString('resource'),
    unitPrice: t.string({ description: 'Base units of the native asset per unit of the resource.', resolve: (p) => amount(p.unitPrice) }),
  }),
});

export const NetworkResourceCostTable = builder.prismaObject('NetworkResourceCostTable', {
  description: "A version of a network's resource cost table (resource → unit price in native base units).",
  fields: (t) => ({
    id: t.exposeID('id'),
    networkId: t.exposeID('networkId'),
    version: t.exposeInt('version'),
    prices: t.relation('prices'),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

export const NetworkExecutionMarginPolicy = builder.prismaObject('NetworkExecutionMarginPolicy', {
  description: 'A version of the margin on network costs: global (assetNetworkId null; a percentage only) or of one asset-network.',
  fields: (t) => ({
    id: t.exposeID('id'),
    assetNetworkId: t.exposeID('assetNetworkId', { nullable: true }),
    version: t.exposeInt('version'),
    percentage: t.string({ resolve: (p) => percentageToString(numericToPercentage(p.percentage)) }),
    fixedAmount: t.string({ description: 'Native base units of the network.', resolve: (p) => amount(p.fixedAmount) }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

export const NetworkResourceReserveBalance = builder.objectRef<reserve.ReserveView>('NetworkResourceReserveBalance').implement({
  description: "The network resource reserve of an asset-network's network: its balance (native base units), policy and replenishment route.",
  fields: (t) => ({
    networkId: t.exposeID('networkId'),
    networkName: t.exposeString('networkName'),
    assetNetworkId: t.exposeID('assetNetworkId', { nullable: true }),
    configured: t.exposeBoolean('configured', { description: 'False: the network has no reserve (its operations are not metered).' }),
    balance: t.exposeString('balance'),
    lowThreshold: t.exposeString('lowThreshold', { nullable: true }),
    targetBalance: t.exposeString('targetBalance', { nullable: true }),
    belowThreshold: t.exposeBoolean('belowThreshold'),
    replenishmentSource: t.field({ type: ReplenishmentSource, nullable: true, resolve: (r) => r.replenishmentSource }),
    replenishmentAddress: t.exposeString('replenishmentAddress', { nullable: true }),
    maxTopUpAmount: t.exposeString('maxTopUpAmount', { nullable: true }),
    updatedAt: t.field({ type: 'DateTime', nullable: true, resolve: (r) => r.updatedAt }),
  }),
});

const NetworkExecutionQuoteInput = builder.inputType('NetworkExecutionQuoteInput', {
  fields: (t) => ({
    assetNetworkId: t.id({ required: true, description: "An asset-network of a network of the environment's type." }),
    operation: t.field({ type: NetworkExecutionOperation, required: true }),
    amount: t.string({ required: true, description: 'Base units of the asset-network (positive).' }),
  }),
});

const ConfigureTronResourceCostTableInput = builder.inputType('ConfigureTronResourceCostTableInput', {
  description: 'AdminConfigureTronResourceCostTableCommand: prices in sun per unit.',
  fields: (t) => ({
    networkId: t.id({ required: true, description: 'A TRON network.' }),
    energyPrice: t.string({ required: true, description: 'Sun per energy unit (base units, decimal string).' }),
    bandwidthPrice: t.string({ required: true, description: 'Sun per bandwidth point (base units, decimal string).' }),
  }),
});

const ResourcePriceInput = builder.inputType('ResourcePriceInput', {
  fields: (t) => ({
    resource: t.string({ required: true, description: 'Lower-case resource name, e.g. "gas".' }),
    unitPrice: t.string({ required: true, description: 'Native base units per unit.' }),
  }),
});

const ConfigureNetworkResourceCostTableInput = builder.inputType('ConfigureNetworkResourceCostTableInput', {
  fields: (t) => ({
    networkId: t.id({ required: true }),
    prices: t.field({ type: [ResourcePriceInput], required: true }),
  }),
});

const ConfigureNetworkExecutionMarginPolicyInput = builder.inputType('ConfigureNetworkExecutionMarginPolicyInput', {
  description: 'AdminConfigureNetworkExecutionMarginPolicyCommand.',
  fields: (t) => ({
    assetNetworkId: t.id({ description: 'Null: the global margin (a percentage only).' }),
    percentage: t.string({ description: 'Percent of the network cost, 0 to 100, up to 6 decimals; default "0".' }),
    fixedAmount: t.string({ description: 'Native base units of the network; default "0". Needs assetNetworkId.' }),
  }),
});

const SeedNetworkResourceReserveInput = builder.inputType('SeedNetworkResourceReserveInput', {
  description: 'AdminSeedNetworkResourceReserveCommand.',
  fields: (t) => ({
    assetNetworkId: t.id({ required: true, description: "Any asset-network of the network: the reserve is the network's." }),
    amount: t.string({ required: true, description: 'Native base units to add (positive).' }),
  }),
});

const ConfigureResourceReservePolicyInput = builder.inputType('ConfigureResourceReservePolicyInput', {
  description: 'AdminConfigureResourceReservePolicyCommand.',
  fields: (t) => ({
    assetNetworkId: t.id({ required: true }),
    lowThreshold: t.string({ required: true, description: 'Below it, the reserve is replenished.' }),
    targetBalance: t.string({ required: true, description: 'What a replenishment tops up to (at least lowThreshold).' }),
  }),
});

const ConfigureReplenishmentRouteInput = builder.inputType('ConfigureReplenishmentRouteInput', {
  description: 'AdminConfigureReplenishmentRouteCommand.',
  fields: (t) => ({
    assetNetworkId: t.id({ required: true }),
    source: t.field({ type: ReplenishmentSource, required: true }),
    address: t.string({ description: 'EXTERNAL_TOP_UP: the reserve address operators fund (validated by the network adapter where one exists).' }),
    maxTopUpAmount: t.string({ description: 'At most this much per replenishment run; null: up to the target.' }),
  }),
});

const id = (v: string | number) => String(v);

builder.queryFields((t) => ({
  networkResourceReserveBalance: t.field({
    type: NetworkResourceReserveBalance,
    description: "Operators: the network resource reserve of the asset-network's network (404: unknown asset-network).",
    authScopes: { policy: operator },
    args: { assetNetworkId: t.arg.id({ required: true }) },
    resolve: (_p, args, ctx) => reserve.reserveBalance(ctx, id(args.assetNetworkId)),
  }),
}));

builder.mutationFields((t) => ({
  createNetworkExecutionQuote: t.prismaField({
    type: 'NetworkExecutionQuote',
    description: 'GetNetworkExecutionQuote: the network cost of a withdrawal or sweep of the asset-network, with the margin and the total, valid 60 s.',
    authScopes: { policy: policies.memberOrApiKey('account-read') },
    args: { environmentId: t.arg.id({ required: true }), input: t.arg({ type: NetworkExecutionQuoteInput, required: true }) },
    resolve: (_q, _p, args, ctx) => costs.createQuote(ctx, id(args.environmentId), { ...args.input, assetNetworkId: id(args.input.assetNetworkId) }),
  }),
  adminConfigureTronResourceCostTable: t.prismaField({
    type: 'NetworkResourceCostTable',
    description: "Operators: the next version of a TRON network's cost table (energy and bandwidth prices in sun). 400 for any other kind of network.",
    authScopes: { policy: operator },
    args: { input: t.arg({ type: ConfigureTronResourceCostTableInput, required: true }) },
    resolve: (_q, _p, args, ctx) => costs.configureTronCostTable(ctx, { ...args.input, networkId: id(args.input.networkId) }),
  }),
  adminConfigureNetworkResourceCostTable: t.prismaField({
    type: 'NetworkResourceCostTable',
    description: "Operators (GraphQL only): the next version of any network's cost table, resource by resource (e.g. the sandbox's gas).",
    authScopes: { policy: operator },
    args: { input: t.arg({ type: ConfigureNetworkResourceCostTableInput, required: true }) },
    resolve: (_q, _p, args, ctx) => costs.configureGenericCostTable(ctx, { ...args.input, networkId: id(args.input.networkId) }),
  }),
  adminConfigureNetworkExecutionMarginPolicy: t.prismaField({
    type: 'NetworkExecutionMarginPolicy',
    description: 'Operators: the next version of the margin on network costs, global or of one asset-network.',
    authScopes: { policy: operator },
    args: { input: t.arg({ type: ConfigureNetworkExecutionMarginPolicyInput, required: true }) },
    resolve: (_q, _p, args, ctx) =>
      costs.configureMarginPolicy(ctx, {
        ...args.input,
        assetNetworkId: args.input.assetNetworkId == null ? args.input.assetNetworkId : id(args.input.assetNetworkId),
      }),
  }),
  adminSeedNetworkResourceReserve: t.field({
    type: NetworkResourceReserveBalance,
    description: "Operators: adds to the network's reserve (created when missing); answers the new balance.",
    authScopes: { policy: operator },
    args: { input: t.arg({ type: SeedNetworkResourceReserveInput, required: true }) },
    resolve: (_p, args, ctx) => reserve.seedReserve(ctx, { ...args.input, assetNetworkId: id(args.input.assetNetworkId) }),
  }),
  adminConfigureResourceReservePolicy: t.field({
    type: NetworkResourceReserveBalance,
    description: "Operators: the reserve's low threshold and target balance.",
    authScopes: { policy: operator },
    args: { input: t.arg({ type: ConfigureResourceReservePolicyInput, required: true }) },
    resolve: (_p, args, ctx) => reserve.configureReservePolicy(ctx, { ...args.input, assetNetworkId: id(args.input.assetNetworkId) }),
  }),
  adminConfigureReplenishmentRoute: t.field({
    type: NetworkResourceReserveBalance,
    description: "Operators: where the reserve's top-ups come from.",
    authScopes: { policy: operator },
    args: { input: t.arg({ type: ConfigureReplenishmentRouteInput, required: true }) },
    resolve: (_p, args, ctx) => reserve.configureReplenishmentRoute(ctx, { ...args.input, assetNetworkId: id(args.input.assetNetworkId) }),
  }),
}));
