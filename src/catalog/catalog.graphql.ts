import { builder, NodeRef, registerNode } from '../builder';
import { policies } from '../auth/policy';
import type { Context } from '../context';
import { EnvironmentType } from '../tenancy/tenancy.graphql';
import * as catalog from './catalog';

export const NetworkKind = builder.enumType('NetworkKind', {
  description: 'The family of a network: which adapter talks to it. Only SANDBOX networks have an adapter in this version (docs/chains.md).',
  values: ['SANDBOX', 'EVM', 'UTXO', 'TRON', 'SOLANA'] as const,
});

export const AssetNetworkStatus = builder.enumType('AssetNetworkStatus', {
  description:
    'ENABLED: everything. PAUSED (with a reason): no new payment intents, addresses or withdrawals; deposits on their way are still credited. ' +
    'DISABLED (the initial status): nothing new; deposits detected are held UNDER_REVIEW.',
  values: ['ENABLED', 'PAUSED', 'DISABLED'] as const,
});

export const Asset = builder.prismaObject('Asset', {
  interfaces: [NodeRef],
  description: 'An asset (AssetResponse), e.g. USDC.',
  fields: (t) => ({
    id: t.exposeID('id'),
    code: t.exposeString('code'),
    name: t.exposeString('name'),
    decimals: t.exposeInt('decimals', { description: 'Decimals of the asset itself; an asset-network may represent it with others.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    assetNetworks: t.relation('assetNetworks', { query: { orderBy: { id: 'asc' } } }),
  }),
});

export const Network = builder.prismaObject('Network', {
  interfaces: [NodeRef],
  description: 'A blockchain network (NetworkResponse).',
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name'),
    kind: t.expose('kind', { type: NetworkKind }),
    environmentType: t.expose('environmentType', {
      type: EnvironmentType,
      description: 'SANDBOX networks serve sandbox environments; PRODUCTION networks production ones.',
    }),
    blockTimeSeconds: t.exposeInt('blockTimeSeconds'),
    requiredConfirmations: t.exposeInt('requiredConfirmations', { description: 'Confirmations a deposit needs to be credited.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    assetNetworks: t.relation('assetNetworks', { query: { orderBy: { id: 'asc' } } }),
  }),
});

export const AssetNetwork = builder.prismaObject('AssetNetwork', {
  interfaces: [NodeRef],
  description: 'An asset as one network carries it (AssetNetworkResponse).',
  fields: (t) => ({
    id: t.exposeID('id'),
    assetId: t.exposeID('assetId'),
    networkId: t.exposeID('networkId'),
    decimals: t.exposeInt('decimals'),
    contractReference: t.exposeString('contractReference', {
      nullable: true,
      description: "Token contract or mint on the network; null for the network's native asset.",
    }),
    minimumDeposit: t.string({ description: 'Base units, a decimal string. Smaller deposits are rejected.', resolve: (a) => a.minimumDeposit.toFixed() }),
    status: t.expose('status', { type: AssetNetworkStatus }),
    statusReason: t.exposeString('statusReason', { nullable: true, description: 'The reason given when PAUSED.' }),
    statusChangedAt: t.expose('statusChangedAt', { type: 'DateTime', nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
    asset: t.relation('asset'),
    network: t.relation('network'),
  }),
});

const CreateAssetInput = builder.inputType('CreateAssetInput', {
  fields: (t) => ({
    code: t.string({ required: true, description: 'Unique; upper-case letters, digits, ".", "_", "-"; at most 32.' }),
    name: t.string({ required: true }),
    decimals: t.int({ required: true, description: '0 to 36.' }),
  }),
  validate: catalog.createAssetInput,
});
const CreateNetworkInput = builder.inputType('CreateNetworkInput', {
  fields: (t) => ({
    name: t.string({ required: true, description: 'Unique.' }),
    kind: t.field({ type: NetworkKind, required: true }),
    environmentType: t.field({ type: EnvironmentType, required: true, description: 'A SANDBOX kind network must be SANDBOX.' }),
    blockTimeSeconds: t.int({ required: true, description: '1 to 86400.' }),
    requiredConfirmations: t.int({ required: true, description: '0 to 1000.' }),
  }),
  validate: catalog.createNetworkInput,
});
const CreateAssetNetworkInput = builder.inputType('CreateAssetNetworkInput', {
  fields: (t) => ({
    assetId: t.id({ required: true }),
    networkId: t.id({ required: true }),
    decimals: t.int({ required: true, description: '0 to 36.' }),
    contractReference: t.string({ description: "Token contract or mint; null for the network's native asset." }),
    minimumDeposit: t.string({ description: 'Base units as a decimal string; default "0".' }),
  }),
  validate: catalog.createAssetNetworkInput,
});
const PauseAssetNetworkInput = builder.inputType('PauseAssetNetworkInput', {
  fields: (t) => ({ reason: t.string({ required: true }) }),
  validate: catalog.pauseInput,
});

builder.queryFields((t) => ({
  assets: t.prismaField({
    type: ['Asset'],
    description: 'Every asset, oldest first.',
    authScopes: { policy: policies.catalogRead },
    resolve: (query, _p, _a, ctx) => ctx.deps.db.asset.findMany({ ...query, orderBy: { id: 'asc' } }),
  }),
  asset: t.prismaField({
    type: 'Asset',
    authScopes: { policy: policies.catalogRead },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (query, _p, args, ctx) => {
      const row = await catalog.loadAsset(ctx.deps.db, String(args.id));
      return ctx.deps.db.asset.findUniqueOrThrow({ ...query, where: { id: row.id } });
    },
  }),
  networks: t.prismaField({
    type: ['Network'],
    description: 'Every network, oldest first.',
    authScopes: { policy: policies.catalogRead },
    resolve: (query, _p, _a, ctx) => ctx.deps.db.network.findMany({ ...query, orderBy: { id: 'asc' } }),
  }),
  network: t.prismaField({
    type: 'Network',
    authScopes: { policy: policies.catalogRead },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (query, _p, args, ctx) => {
      const row = await catalog.loadNetwork(ctx.deps.db, String(args.id));
      return ctx.deps.db.network.findUniqueOrThrow({ ...query, where: { id: row.id } });
    },
  }),
  assetNetworks: t.prismaField({
    type: ['AssetNetwork'],
    description: 'Every asset-network, oldest first; `status` filters.',
    authScopes: { policy: policies.catalogRead },
    args: { status: t.arg({ type: AssetNetworkStatus }) },
    resolve: (query, _p, args, ctx) =>
      ctx.deps.db.assetNetwork.findMany({ ...query, where: args.status ? { status: args.status } : {}, orderBy: { id: 'asc' } }),
  }),
  assetNetwork: t.prismaField({
    type: 'AssetNetwork',
    authScopes: { policy: policies.catalogRead },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (query, _p, args, ctx) => {
      const row = await catalog.loadAssetNetwork(ctx.deps.db, String(args.id));
      return ctx.deps.db.assetNetwork.findUniqueOrThrow({ ...query, where: { id: row.id } });
    },
  }),
}));

builder.mutationFields((t) => ({
  createAsset: t.prismaField({
    type: 'Asset',
    description: 'A new asset. 409 when the code exists.',
    authScopes: { policy: policies.operator },
    args: { input: t.arg({ type: CreateAssetInput, required: true }) },
    resolve: (_q, _p, args, ctx) => catalog.createAsset(ctx, args.input),
  }),
  createNetwork: t.prismaField({
    type: 'Network',
    description: 'A new network. 409 when the name exists.',
    authScopes: { policy: policies.operator },
    args: { input: t.arg({ type: CreateNetworkInput, required: true }) },
    resolve: (_q, _p, args, ctx) => catalog.createNetwork(ctx, args.input),
  }),
  createAssetNetwork: t.prismaField({
    type: 'AssetNetwork',
    description: 'An asset on a network, DISABLED until enabled. 409 when the pair exists.',
    authScopes: { policy: policies.operator },
    args: { input: t.arg({ type: CreateAssetNetworkInput, required: true }) },
    resolve: (_q, _p, args, ctx) =>
      catalog.createAssetNetwork(ctx, { ...args.input, assetId: String(args.input.assetId), networkId: String(args.input.networkId) }),
  }),
  enableAssetNetwork: t.prismaField({
    type: 'AssetNetwork',
    description: 'DISABLED or PAUSED -> ENABLED. Already ENABLED: no change.',
    authScopes: { policy: policies.operator },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_q, _p, args, ctx) => catalog.changeStatus(ctx, String(args.id), 'enable'),
  }),
  pauseAssetNetwork: t.prismaField({
    type: 'AssetNetwork',
    description: 'ENABLED -> PAUSED, with a reason. Already PAUSED: no change. DISABLED: 409.',
    authScopes: { policy: policies.operator },
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: PauseAssetNetworkInput, required: true }) },
    resolve: (_q, _p, args, ctx) => catalog.changeStatus(ctx, String(args.id), 'pause', args.input.reason),
  }),
  disableAssetNetwork: t.prismaField({
    type: 'AssetNetwork',
    description: 'ENABLED or PAUSED -> DISABLED. Already DISABLED: no change.',
    authScopes: { policy: policies.operator },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_q, _p, args, ctx) => catalog.changeStatus(ctx, String(args.id), 'disable'),
  }),
}));

for (const [typename, find] of [
  ['Asset', (db, id) => db.asset.findUnique({ where: { id } })],
  ['Network', (db, id) => db.network.findUnique({ where: { id } })],
  ['AssetNetwork', (db, id) => db.assetNetwork.findUnique({ where: { id } })],
] as const satisfies readonly (readonly [string, (db: Context['deps']['db'], id: string) => Promise<object | null>])[])
  registerNode({ typename, policy: policies.catalogRead, load: (ctx, id) => find(ctx.deps.db, id) });
