import { builder, countedConnection, createdWhere, creationArgs, keysetConnection, loadOne, NodeRef, registerNode } from '../builder';
import type { Context } from '../context';
import { policies } from '../auth/policy';
import { EnvironmentType } from '../tenancy/tenancy.graphql';
import * as wallets from './wallets';
import * as addresses from './addresses';

const CustodyMode = builder.enumType('CustodyMode', {
  description: 'CUSTODIAL: the service holds the root private key (sealed). SELF_CUSTODY: the integrator does, and signs (signing requests).',
  values: ['CUSTODIAL', 'SELF_CUSTODY'] as const,
});

const Wallet = builder.objectRef<wallets.WalletRow>('Wallet');
Wallet.implement({
  description: 'A wallet (WalletResponse): the root deposit addresses derive from. Never carries private material.',
  interfaces: [NodeRef],
  fields: (t) => ({
    id: t.exposeID('id'),
    organizationId: t.exposeID('organizationId'),
    applicationId: t.exposeID('applicationId'),
    environmentId: t.exposeID('environmentId'),
    environmentType: t.field({ type: EnvironmentType, resolve: (w) => w.environmentType }),
    networkId: t.exposeID('networkId'),
    custodyMode: t.field({ type: CustodyMode, resolve: (w) => w.custodyMode }),
    label: t.exposeString('label', { nullable: true }),
    curve: t.exposeString('curve'),
    publicKey: t.exposeString('publicKey', { description: 'The root public key, compressed SEC1, hex.' }),
    nextDerivationIndex: t.exposeInt('nextAddressIndex', { description: 'The index the next deposit address derives at.' }),
    createdAt: t.field({ type: 'DateTime', resolve: (w) => w.createdAt }),
    depositAddresses: t.connection(
      {
        type: DepositAddress,
        description: 'The deposit addresses derived from the wallet, newest first.',
        args: creationArgs,
        resolve: (w, args, ctx) => {
          const where = { walletId: w.id, ...createdWhere(args) };
          return keysetConnection(
            args,
            (q) => ctx.deps.db.depositAddress.findMany({ where: { ...where, ...q.where }, orderBy: q.orderBy, take: q.take }),
            () => ctx.deps.db.depositAddress.count({ where }),
          );
        },
      },
      countedConnection,
    ),
  }),
});

/** The filter of the deposit addresses the principal sees: its organization's; an API key, its application's in its environment. */
export function visibleAddressWhere(ctx: Context) {
  const p = ctx.principal;
  if (p?.type === 'operator') return {};
  if (p?.type === 'member') return { organizationId: p.organizationId };
  if (p?.type === 'apiKey') return { organizationId: p.organizationId, applicationId: p.applicationId, wallet: { environmentId: p.environmentId } };
  return null;
}

export const DepositAddress = builder.prismaObject('DepositAddress', {
  description: 'A deposit address derived from a wallet, at most one per payment intent.',
  interfaces: [NodeRef],
  fields: (t) => ({
    id: t.exposeID('id'),
    organizationId: t.exposeID('organizationId'),
    applicationId: t.exposeID('applicationId'),
    walletId: t.exposeID('walletId'),
    networkId: t.exposeID('networkId'),
    assetNetworkId: t.exposeID('assetNetworkId'),
    address: t.exposeString('address'),
    derivationIndex: t.exposeInt('derivationIndex'),
    paymentIntentId: t.exposeID('paymentIntentId', { nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    wallet: t.field({
      type: Wallet,
      nullable: true,
      resolve: (a, _args, ctx) =>
        loadOne(
          ctx,
          'DepositAddress.wallet',
          a.walletId,
          (ids) =>
            ctx.deps.db.wallet.findMany({
              where: { AND: [{ id: { in: ids } }, wallets.visibleWalletWhere(ctx) ?? { id: { in: [] } }] },
              select: wallets.walletSelect,
            }),
          (w) => w.id,
        ),
    }),
  }),
});

const readCustody = policies.memberOrApiKey('account-read');
registerNode({ typename: 'Wallet', policy: readCustody, load: (ctx, id) => wallets.loadWallet(ctx, id) });
registerNode({
  typename: 'DepositAddress',
  policy: readCustody,
  load: (ctx, id) => {
    const visible = visibleAddressWhere(ctx);
    return visible ? ctx.deps.db.depositAddress.findFirst({ where: { id, ...visible } }) : Promise.resolve(null);
  },
});

builder.prismaObjectField('Organization', 'wallets', (t) =>
  t.connection(
    {
      type: Wallet,
      description: "The organization's wallets, newest first (an API key: its application's in its environment).",
      authScopes: { policy: readCustody },
      args: { ...creationArgs, networkId: t.arg.id() },
      resolve: (org, args, ctx) => {
        const where = {
          AND: [
            wallets.visibleWalletWhere(ctx) ?? { id: { in: [] } },
            { organizationId: org.id },
            createdWhere(args),
            args.networkId ? { networkId: String(args.networkId) } : {},
          ],
        };
        return keysetConnection(
          args,
          (q) => ctx.deps.db.wallet.findMany({ where: { AND: [...where.AND, q.where] }, select: wallets.walletSelect, orderBy: q.orderBy, take: q.take }),
          () => ctx.deps.db.wallet.count({ where }),
        );
      },
    },
    countedConnection,
  ),
);

type Material = ReturnType<typeof wallets.publicMaterial>;
const WalletPublicMaterial = builder.objectRef<Material>('WalletPublicMaterial').implement({
  description:
    "What derives and verifies a wallet's deposit addresses: BIP32 non-hardened public derivation (CKDpub) at m/{index} from the root public key, " +
    'with chainCode = SHA-256("ftis/v1/chain-code" || root public key); address = "0x" + the last 20 bytes of ' +
    'keccak-256 of the uncompressed child key (docs/catalog-custody.md).',
  fields: (t) => ({
    walletId: t.exposeID('walletId'),
    networkId: t.exposeID('networkId'),
    custodyMode: t.field({ type: CustodyMode, resolve: (m) => m.custodyMode }),
    curve: t.exposeString('curve'),
    publicKey: t.exposeString('publicKey'),
    publicKeyFormat: t.exposeString('publicKeyFormat'),
    chainCode: t.exposeString('chainCode', { description: 'Hex, 32 bytes: a function of the public key, not a secret.' }),
    derivationScheme: t.exposeString('derivationScheme'),
    derivationPath: t.exposeString('derivationPath'),
    addressFormat: t.exposeString('addressFormat'),
    nextDerivationIndex: t.exposeInt('nextDerivationIndex'),
  }),
});

const AllocatedDepositAddress = builder.objectRef<addresses.AllocatedAddress>('AllocatedDepositAddress').implement({
  description: 'The deposit address of a payment intent (AllocatedDepositAddressResponse).',
  fields: (t) => ({
    id: t.exposeID('id'),
    address: t.exposeString('address'),
    assetNetworkId: t.exposeID('assetNetworkId'),
    networkId: t.exposeID('networkId'),
    walletId: t.exposeID('walletId'),
    paymentIntentId: t.exposeID('paymentIntentId'),
    derivationIndex: t.exposeInt('derivationIndex'),
    publicKey: t.exposeString('publicKey', { description: 'The child public key the address commits to, compressed SEC1, hex.' }),
    createdAt: t.field({ type: 'DateTime', resolve: (a) => a.createdAt }),
  }),
});

const RegisterWalletInput = builder.inputType('RegisterWalletInput', {
  fields: (t) => ({
    networkId: t.id({
      required: true,
      description: 'A network of the environment type: SANDBOX networks for a sandbox environment, the others for production.',
    }),
    custodyMode: t.field({ type: CustodyMode, required: true }),
    label: t.string(),
    publicKey: t.string({ description: 'SELF_CUSTODY only (required): the root public key, SEC1 compressed or uncompressed, hex. Refused for CUSTODIAL.' }),
    environmentId: t.id({ description: "A member names the application's environment; an API key uses its own (omit it)." }),
  }),
  validate: wallets.registerWalletInput,
});
const AllocateDepositAddressInput = builder.inputType('AllocateDepositAddressInput', {
  fields: (t) => ({
    walletId: t.id({ required: true }),
    assetNetworkId: t.id({ required: true, description: "The payment intent's asset-network, ENABLED, on the wallet's network." }),
    paymentIntentId: t.id({ required: true, description: 'AWAITING_PAYMENT; a payment intent with an address gets that address again.' }),
  }),
  validate: addresses.allocateInput,
});

builder.queryFields((t) => ({
  wallet: t.field({
    type: Wallet,
    authScopes: { policy: policies.memberOrApiKey('account-read') },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_p, args, ctx) => wallets.loadWallet(ctx, String(args.id)),
  }),
  walletPublicMaterial: t.field({
    type: WalletPublicMaterial,
    authScopes: { policy: policies.memberOrApiKey('account-read') },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_p, args, ctx) => wallets.publicMaterial(await wallets.loadWallet(ctx, String(args.id))),
  }),
}));

builder.mutationFields((t) => ({
  registerWallet: t.field({
    type: Wallet,
    description: 'A new wallet of the application. CUSTODIAL: the service generates a secp256k1 root key. SELF_CUSTODY: give publicKey.',
    authScopes: { policy: policies.memberOrApiKey('custody-manage') },
    args: { applicationId: t.arg.id({ required: true }), input: t.arg({ type: RegisterWalletInput, required: true }) },
    resolve: (_p, args, ctx) =>
      wallets.registerWallet(ctx, String(args.applicationId), {
        ...args.input,
        networkId: String(args.input.networkId),
        environmentId: args.input.environmentId == null ? args.input.environmentId : String(args.input.environmentId),
      }),
  }),
  allocateDepositAddress: t.field({
    type: AllocatedDepositAddress,
    description: "The payment intent's deposit address, derived from the wallet; emits deposit.address_generated. Idempotent per payment intent.",
    authScopes: { policy: policies.memberOrApiKey('custody-manage') },
    args: { applicationId: t.arg.id({ required: true }), input: t.arg({ type: AllocateDepositAddressInput, required: true }) },
    resolve: (_p, args, ctx) =>
      addresses.allocateDepositAddress(ctx, String(args.applicationId), {
        walletId: String(args.input.walletId),
        assetNetworkId: String(args.input.assetNetworkId),
        paymentIntentId: String(args.input.paymentIntentId),
      }),
  }),
}));
