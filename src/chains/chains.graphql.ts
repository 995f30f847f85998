import { builder } from '../builder';
import { policies } from '../auth/policy';
import * as sandbox from './sandbox/service';

const manage = policies.memberOrApiKey('payment-manage');
const read = policies.memberOrApiKey('account-read');

const SandboxTransactionStatus = builder.enumType('SandboxTransactionStatus', {
  description:
    'PENDING: in the mempool. MINED: in a canonical block. ORPHANED: its block left the canonical chain; back in the mempool until mined again or dropped. ' +
    'DROPPED, REPLACED: gone for good. REVERTED: mined, but failed: no value moved.',
  values: ['PENDING', 'MINED', 'ORPHANED', 'DROPPED', 'REPLACED', 'REVERTED'] as const,
});

const SandboxTransaction = builder.objectRef<sandbox.SandboxTransactionView>('SandboxTransaction').implement({
  description: 'A transaction of a sandbox chain, as the chain reports it now.',
  fields: (t) => ({
    txHash: t.exposeString('txHash'),
    status: t.field({ type: SandboxTransactionStatus, resolve: (x) => x.status as never }),
    networkId: t.exposeID('networkId'),
    assetNetworkId: t.exposeID('assetNetworkId'),
    fromAddress: t.exposeString('fromAddress', { description: "The organization's sandbox payer (a deterministic address)." }),
    toAddress: t.exposeString('toAddress'),
    amount: t.exposeString('amount', { description: 'Base units, a decimal string.' }),
    replaceable: t.exposeBoolean('replaceable'),
    willRevert: t.exposeBoolean('willRevert', { description: 'Sent to fail: it is mined REVERTED.' }),
    replacedByTxHash: t.exposeString('replacedByTxHash', { nullable: true }),
    blockHash: t.exposeString('blockHash', { nullable: true }),
    blockHeight: t.exposeInt('blockHeight', { nullable: true }),
    confirmations: t.exposeInt('confirmations', { description: 'Tip height - block height + 1 when MINED; 0 otherwise.' }),
  }),
});

const SandboxDepositBatch = builder.objectRef<{ transactions: sandbox.SandboxTransactionView[] }>('SandboxDepositBatch').implement({
  description: 'The transactions of a batch send, in the order of its items.',
  fields: (t) => ({ transactions: t.field({ type: [SandboxTransaction], resolve: (b) => b.transactions }) }),
});

const SandboxChainTip = builder.objectRef<sandbox.ChainTipView>('SandboxChainTip').implement({
  fields: (t) => ({
    networkId: t.exposeID('networkId'),
    height: t.exposeInt('height', { description: 'Height of the canonical tip; 0 before the first block.' }),
    tipHash: t.exposeString('tipHash', { nullable: true }),
  }),
});

const SandboxClock = builder.objectRef<sandbox.SandboxClockView>('SandboxClock').implement({
  description: "The organization's sandbox clock: real time plus the offset advanced so far.",
  fields: (t) => ({
    organizationId: t.exposeID('organizationId'),
    now: t.field({ type: 'DateTime', resolve: (c) => c.now }),
    offsetSeconds: t.exposeFloat('offsetSeconds'),
  }),
});

const SandboxBalance = builder.objectRef<Awaited<ReturnType<typeof sandbox.balance>>>('SandboxBalance').implement({
  fields: (t) => ({
    assetNetworkId: t.exposeID('assetNetworkId'),
    networkId: t.exposeID('networkId'),
    address: t.exposeString('address'),
    balance: t.exposeString('balance', { description: 'Base units received in canonical mined transactions, a decimal string.' }),
  }),
});

const environmentIdField = { description: 'A member may name the (SANDBOX) environment it acts for; a production one answers 404. API keys omit it.' };

/** The fields of one sandbox transfer: a send alone, or an item of a batch send. */
type Types = typeof builder extends PothosSchemaTypes.SchemaBuilder<infer T> ? T : never;
const depositFields = (t: PothosSchemaTypes.InputFieldBuilder<Types, 'InputObject'>) => ({
  address: t.string({ required: true, description: 'Any address of the sandbox network (0x and 40 hex digits).' }),
  amount: t.string({ required: true, description: 'Base units, a positive decimal string.' }),
  assetNetworkId: t.id({ required: true, description: 'An asset-network of a SANDBOX network (any status: the chain does not care).' }),
  replaceable: t.boolean({ description: 'May be replaced while PENDING (default false).' }),
  revert: t.boolean({ description: 'Mined as REVERTED: no value moves (default false).' }),
});
const SandboxDepositInput = builder.inputType('SandboxDepositInput', {
  fields: (t) => ({ ...depositFields(t), environmentId: t.id(environmentIdField) }),
  validate: sandbox.sendInput,
});
const SandboxDepositsItemInput = builder.inputType('SandboxDepositsItemInput', {
  description: "One transfer of a batch send: its own PENDING transaction (and deposit), from the caller's sandbox payer.",
  fields: depositFields,
});
const SandboxDepositsInput = builder.inputType('SandboxDepositsInput', {
  fields: (t) => ({
    deposits: t.field({
      type: [SandboxDepositsItemInput],
      required: true,
      description: `1 to ${sandbox.MAX_DEPOSIT_BATCH} transfers, sent in this order, all or none.`,
    }),
    environmentId: t.id(environmentIdField),
  }),
  validate: sandbox.sendBatchInput,
});
const SandboxMineInput = builder.inputType('SandboxMineInput', {
  fields: (t) => ({ blocks: t.int({ description: '1 to 100; default 1.' }), environmentId: t.id(environmentIdField) }),
  validate: sandbox.mineInput,
});
const SandboxReorgInput = builder.inputType('SandboxReorgInput', {
  fields: (t) => ({
    depth: t.int({ required: true, description: 'Canonical blocks to orphan: 1 to 100, at most the height.' }),
    includeOrphanedTransactions: t.boolean({ description: 'Re-include the orphaned transactions in the replacement blocks (default true).' }),
    environmentId: t.id(environmentIdField),
  }),
  validate: sandbox.reorgInput,
});
const SandboxDropInput = builder.inputType('SandboxDropTransactionInput', {
  fields: (t) => ({ txHash: t.string({ required: true }), environmentId: t.id(environmentIdField) }),
  validate: sandbox.dropInput,
});
const SandboxReplaceInput = builder.inputType('SandboxReplaceTransactionInput', {
  fields: (t) => ({
    txHash: t.string({ required: true }),
    amount: t.string({ description: 'The new amount (base units); default the same.' }),
    environmentId: t.id(environmentIdField),
  }),
  validate: sandbox.replaceInput,
});
const SandboxAdvanceClockInput = builder.inputType('SandboxAdvanceClockInput', {
  fields: (t) => ({ seconds: t.int({ required: true, description: '1 to 31622400 (366 days).' }), environmentId: t.id(environmentIdField) }),
  validate: sandbox.advanceClockInput,
});

const idempotencyKeyArg = { description: 'The Idempotency-Key header: same key and input, the first answer again; same key with another input, 409.' };

builder.queryFields((t) => ({
  sandboxTransaction: t.field({
    type: SandboxTransaction,
    description: 'A sandbox chain transaction by hash (sandbox only).',
    authScopes: { policy: read },
    args: { txHash: t.arg.string({ required: true }) },
    resolve: (_p, args, ctx) => sandbox.transactionByHash(ctx, args.txHash),
  }),
  sandboxChain: t.field({
    type: SandboxChainTip,
    description: 'The canonical tip of a sandbox network.',
    authScopes: { policy: read },
    args: { networkId: t.arg.id({ required: true }) },
    resolve: (_p, args, ctx) => sandbox.chainTip(ctx, String(args.networkId)),
  }),
  sandboxBalance: t.field({
    type: SandboxBalance,
    description: 'The balance of an address on a sandbox network, from its canonical mined transactions.',
    authScopes: { policy: read },
    args: { assetNetworkId: t.arg.id({ required: true }), address: t.arg.string({ required: true }) },
    resolve: (_p, args, ctx) => sandbox.balance(ctx, String(args.assetNetworkId), args.address),
  }),
}));

builder.mutationFields((t) => ({
  sandboxSendDeposit: t.field({
    type: SandboxTransaction,
    description: 'A payer sends value to an address of a sandbox network: a PENDING transaction.',
    authScopes: { policy: manage },
    args: { input: t.arg({ type: SandboxDepositInput, required: true }), idempotencyKey: t.arg.string(idempotencyKeyArg) },
    resolve: (_p, args, ctx) =>
      sandbox.sendDeposit(
        ctx,
        { ...args.input, assetNetworkId: String(args.input.assetNetworkId), environmentId: idOrNull(args.input.environmentId) },
        args.idempotencyKey,
      ),
  }),
  sandboxSendDeposits: t.field({
    type: SandboxDepositBatch,
    description:
      'Several payers send value to addresses of sandbox networks in one request, as a block carries many transfers: ' +
      'each item its own PENDING transaction, in list order. Every invalid item field is answered at once ' +
      '(VALIDATION_FAILED, `deposits.<i>.<field>`); an item the chain refuses (its recipient would hold more than ' +
      '2^256 - 1) answers INVALID_STATE naming it, and nothing of the batch is sent.',
    authScopes: { policy: manage },
    args: { input: t.arg({ type: SandboxDepositsInput, required: true }), idempotencyKey: t.arg.string(idempotencyKeyArg) },
    resolve: (_p, args, ctx) =>
      sandbox.sendDeposits(
        ctx,
        {
          deposits: args.input.deposits.map((d) => ({ ...d, assetNetworkId: String(d.assetNetworkId) })),
          environmentId: idOrNull(args.input.environmentId),
        },
        args.idempotencyKey,
      ),
  }),
  sandboxMineBlocks: t.field({
    type: SandboxChainTip,
    description: 'Mines blocks on a sandbox network (shared by every organization).',
    authScopes: { policy: manage },
    args: { networkId: t.arg.id({ required: true }), input: t.arg({ type: SandboxMineInput }), idempotencyKey: t.arg.string(idempotencyKeyArg) },
    resolve: (_p, args, ctx) =>
      sandbox.mine(ctx, String(args.networkId), args.input ? { ...args.input, environmentId: idOrNull(args.input.environmentId) } : null, args.idempotencyKey),
  }),
  sandboxReorg: t.field({
    type: SandboxChainTip,
    description:
      "Orphans the last `depth` canonical blocks and mines depth + 1 replacement blocks. Only the caller's " +
      "organization's transactions are orphaned; other organizations' are carried into the replacement blocks at " +
      'their heights. 409 when the chain is shorter than `depth`.',
    authScopes: { policy: manage },
    args: {
      networkId: t.arg.id({ required: true }),
      input: t.arg({ type: SandboxReorgInput, required: true }),
      idempotencyKey: t.arg.string(idempotencyKeyArg),
    },
    resolve: (_p, args, ctx) =>
      sandbox.reorg(ctx, String(args.networkId), { ...args.input, environmentId: idOrNull(args.input.environmentId) }, args.idempotencyKey),
  }),
  sandboxDropTransaction: t.field({
    type: SandboxTransaction,
    description: "PENDING or ORPHANED -> DROPPED; anything else 409. Only a transaction the caller's organization sent (NOT_FOUND otherwise).",
    authScopes: { policy: manage },
    args: { input: t.arg({ type: SandboxDropInput, required: true }), idempotencyKey: t.arg.string(idempotencyKeyArg) },
    resolve: (_p, args, ctx) => sandbox.drop(ctx, { ...args.input, environmentId: idOrNull(args.input.environmentId) }, args.idempotencyKey),
  }),
  sandboxReplaceTransaction: t.field({
    type: SandboxTransaction,
    description:
      'A PENDING replaceable transaction becomes REPLACED by a new PENDING one (the answer); anything else 409, as ' +
      "is an amount the sender cannot spend. Only a transaction the caller's organization sent (NOT_FOUND otherwise).",
    authScopes: { policy: manage },
    args: { input: t.arg({ type: SandboxReplaceInput, required: true }), idempotencyKey: t.arg.string(idempotencyKeyArg) },
    resolve: (_p, args, ctx) => sandbox.replace(ctx, { ...args.input, environmentId: idOrNull(args.input.environmentId) }, args.idempotencyKey),
  }),
  sandboxAdvanceClock: t.field({
    type: SandboxClock,
    description: "Advances the organization's sandbox clock (sandbox payment intents expire by it).",
    authScopes: { policy: manage },
    args: { input: t.arg({ type: SandboxAdvanceClockInput, required: true }), idempotencyKey: t.arg.string(idempotencyKeyArg) },
    resolve: (_p, args, ctx) => sandbox.advanceClock(ctx, { ...args.input, environmentId: idOrNull(args.input.environmentId) }, args.idempotencyKey),
  }),
}));

function idOrNull(v: string | number | null | undefined): string | null {
  return v == null ? null : String(v);
}
