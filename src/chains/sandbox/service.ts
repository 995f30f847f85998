import { positiveAmountText } from '../../money';
import { z } from 'zod';
import type { Context } from '../../context';
import { poolTransaction, type Db, type PoolQuery, type RawDb } from '../../db/prisma';
import { DomainError, fieldError, notFound, validationFailed, type FieldError } from '../../errors';
import { assertId, isUuid } from '../../ids';
import { audit } from '../../audit/audit';
import { idempotent } from '../../idempotency';
import { createGroupCommit, type GroupCommit } from '../../kernel/group-commit';
import { adapterFor } from '../adapter';
import * as chain from './chain';
import { advanceSandboxClock, sandboxOffsetMs } from './clock';
import { sandboxCaller } from '../../tenancy/sandbox-caller';
import { sendExpirySweep } from '../../kernel/queues';
import { sendReleaseSweep, sendRetainedRelease } from '../../kernel/queues';
import { immutableRows } from '../../kernel/immutable-rows';

/**
 * The sandbox chain for integrators (test helpers, like BTCPay's regtest "cheat mode" and Stripe's
 * test helpers): send a deposit, mine, reorganize, drop, replace, advance the sandbox clock.
 *
 * - SANDBOX only: a production API key, or a member naming a production environment, gets 404 (the
 *   sandbox does not exist there). A member may name the environment it acts for (`environmentId`);
 *   without one it acts for its organization's sandbox.
 * - Networks touched are SANDBOX networks (another network id: 404 in a path, 400 in a body).
 *   A sandbox network is shared by every organization, as a public chain is: anyone may mine it, and
 *   its transactions are readable by hash. Altering them is not shared: drop and replace only the
 *   transactions the caller's organization sent (404 otherwise, as for an unknown hash); a
 *   reorganization orphans only the caller's transactions (src/chains/sandbox/chain.ts). The sandbox
 *   clock is per organization.
 * - Each operation is idempotent under `Idempotency-Key` (same key and request: the first answer;
 *   another request: 409) and refuses an illegal prior state with 409.
 * - Each change sends `chain.sync` in its transaction and writes an audit entry.
 */

export const txHashPattern = /^0x[0-9a-f]{64}$/;
const txHash = z.string().trim().toLowerCase().regex(txHashPattern, 'must be a transaction hash: 0x and 64 hex digits');
const environmentId = z.string().nullish();

export const sendInput = z.object({
  address: z.string().trim().toLowerCase().max(200),
  amount: positiveAmountText,
  assetNetworkId: z.string(),
  replaceable: z.boolean().nullish(),
  revert: z.boolean().nullish(),
  environmentId,
});
export const mineInput = z.object({ blocks: z.number().int('must be an integer').min(1).max(100).nullish(), environmentId });
export const reorgInput = z.object({
  depth: z.number().int('must be an integer').min(1).max(100),
  includeOrphanedTransactions: z.boolean().nullish(),
  environmentId,
});
export const dropInput = z.object({ txHash, environmentId });
export const replaceInput = z.object({ txHash, amount: positiveAmountText.nullish(), environmentId });
export const advanceClockInput = z.object({
  seconds: z
    .number()
    .int('must be an integer')
    .min(1)
    .max(366 * 86_400),
  environmentId,
});

/** A transaction as the sandbox API answers it (JSON-safe: it is also the stored idempotent answer). */
export interface SandboxTransactionView {
  txHash: string;
  status: string;
  networkId: string;
  assetNetworkId: string;
  fromAddress: string;
  toAddress: string;
  amount: string;
  replaceable: boolean;
  willRevert: boolean;
  replacedByTxHash: string | null;
  blockHash: string | null;
  blockHeight: number | null;
  confirmations: number;
}
export interface ChainTipView {
  networkId: string;
  height: number;
  tipHash: string | null;
}
export interface SandboxClockView {
  organizationId: string;
  now: Date | string;
  offsetSeconds: number;
}

export function view(row: chain.SandboxTransactionRow, tipHeight: number): SandboxTransactionView {
  const o = chain.observe(row, tipHeight);
  return {
    txHash: row.txHash,
    status: row.status,
    networkId: row.networkId,
    assetNetworkId: row.assetNetworkId,
    fromAddress: row.fromAddress,
    toAddress: row.toAddress,
    amount: o.amount.toString(),
    replaceable: row.replaceable,
    willRevert: row.willRevert,
    replacedByTxHash: row.replacedByTxHash,
    blockHash: row.blockHash,
    blockHeight: row.blockHeight,
    confirmations: o.confirmations,
  };
}

/**
 * A SANDBOX network by id; 404 for anything else. The SANDBOX networks found are remembered
 * (bounded; issue 22: read by every mine): a network's id and kind never change.
 */
const sandboxNetworks = immutableRows<{ id: string; kind: 'SANDBOX' }>();
export async function loadSandboxNetwork(db: Db, idArg: unknown): Promise<{ id: string; kind: 'SANDBOX' }> {
  const id = assertId(idArg, 'Network');
  const found = await sandboxNetworks.get(id, async () => {
    const network = await db.network.findUnique({ where: { id }, select: { id: true, kind: true } });
    return network?.kind === 'SANDBOX' ? { id: network.id, kind: 'SANDBOX' as const } : null;
  });
  if (!found) throw notFound('Network');
  return found;
}

async function tipHeight(db: Db, networkId: string) {
  return (await chain.tip(db, networkId)).height;
}

const scope = (op: string, caller: { organizationId: string; actor: string }) => `sandbox.${op}:${caller.organizationId}:${caller.actor}`;

/**
 * An asset-network's network and its kind, read once per process (issue 22: a sandbox send is a
 * hot path): neither ever changes (the catalog adds asset-networks and changes their status, which
 * a send does not read). Bounded; a missing id is not remembered.
 */
const assetNetworks = immutableRows<{ id: string; networkId: string; network: { kind: string } }>();
const assetNetworkOf = (db: Db, id: string) =>
  assetNetworks.get(id, () => db.assetNetwork.findUnique({ where: { id }, select: { id: true, networkId: true, network: { select: { kind: true } } } }));

/**
 * Sends without an Idempotency-Key are written in groups (issue 22): the sends that arrive while the
 * previous group is being written share one database transaction (createGroupCommit): per network,
 * one statement for the recipients' locks, one insert of the transactions with their nonces and
 * audit entries that checks what the recipients hold or await, one chain.sync job
 * (chain.sendTransactions). A send the chain refuses (its recipient's bound) fails alone, answered
 * with the error a send alone gets; the others commit. Each request is answered after its group's commit. Per client. The
 * group's transaction runs on the client's pg pool (poolTransaction), its statements the same.
 * One group in flight (issue 22, session 8): the sends that arrive while it commits form the next,
 * larger group (mean 7.9 against 4.5 with two at 16 requests in flight): fewer round trips and less
 * CPU per send in both the process and PostgreSQL, measured (docs/benchmarks.md).
 */
const SEND_GROUP = { maxGroup: 64, concurrency: 1 };
type SendResult = chain.SandboxTransactionRow | Error;
const sendGroups = new WeakMap<object, GroupCommit<chain.SendArgs, SendResult>>();
function sendGroupOf(deps: Context['deps']): GroupCommit<chain.SendArgs, SendResult> {
  let g = sendGroups.get(deps.db);
  if (!g) {
    g = createGroupCommit<chain.SendArgs, SendResult>({
      ...SEND_GROUP,
      // Straight on the pool (no Prisma query engine: the group's statements are the whole work), else through Prisma.
      write: (items) => poolTransaction(deps.db, (tx) => sendAcross(tx, deps, items)) ?? deps.db.$transaction((tx) => sendAcross(tx, deps, items)),
    });
    sendGroups.set(deps.db, g);
  }
  return g;
}

/**
 * Sends of any networks in the caller's transaction: network by network in id order (each one's
 * recipients in address order, chain.sendTransactions): no deadlock between groups and batches.
 * Answers, per item in order, the transaction sent or the error that refused it.
 */
async function sendAcross(tx: Db | PoolQuery, deps: Context['deps'], items: readonly chain.SendArgs[]): Promise<SendResult[]> {
  const out: SendResult[] = new Array(items.length);
  const networks = [...new Set(items.map((a) => a.networkId))].sort();
  for (const networkId of networks) {
    const of = items.flatMap((a, i) => (a.networkId === networkId ? [i] : []));
    const sent = await chain.sendTransactions(
      tx,
      deps,
      networkId,
      of.map((i) => items[i]!),
    );
    of.forEach((i, j) => (out[i] = sent[j]!));
  }
  return out;
}

/** The statistics of a client's send groups (groups written, sends, largest group), none before its first send: for benchmarks and tests. */
export const sendGroupStats = (db: object) => sendGroups.get(db)?.stats ?? null;

type DepositItem = Omit<z.infer<typeof sendInput>, 'environmentId'>;

/**
 * One deposit's send and the request it records, checked against the catalog (cached) and the
 * address format: `at` prefixes the fields of its errors (`deposits.3.` in a batch). Errors are
 * collected in `errors` (a batch answers all of them at once); null when the item has any.
 */
async function depositSend(
  ctx: Context,
  caller: { organizationId: string },
  input: DepositItem,
  at: string,
  errors: FieldError[],
): Promise<{ send: chain.SendArgs; request: Record<string, unknown> } | null> {
  const assetNetwork = isUuid(input.assetNetworkId) ? await assetNetworkOf(ctx.deps.db, input.assetNetworkId.toLowerCase()) : null;
  const failed = errors.length;
  if (!assetNetwork) errors.push({ field: `${at}assetNetworkId`, message: 'must be the id of an asset-network of the catalog' });
  else if (assetNetwork.network.kind !== 'SANDBOX') errors.push({ field: `${at}assetNetworkId`, message: 'must be an asset-network of a SANDBOX network' });
  if (!adapterFor('SANDBOX').validateAddress(input.address)) errors.push({ field: `${at}address`, message: 'must be a sandbox address: 0x and 40 hex digits' });
  if (errors.length > failed || !assetNetwork) return null;
  const request = {
    address: input.address,
    amount: input.amount,
    assetNetworkId: assetNetwork.id,
    replaceable: input.replaceable ?? false,
    revert: input.revert ?? false,
  };
  const send: chain.SendArgs = {
    networkId: assetNetwork.networkId,
    assetNetworkId: assetNetwork.id,
    fromAddress: chain.payerAddress(caller.organizationId),
    toAddress: request.address,
    amount: BigInt(request.amount),
    replaceable: request.replaceable,
    revert: request.revert,
    senderOrganizationId: caller.organizationId,
    // Written by the insert's statement, with the txHash it computes.
    audit: {
      actor: { principal: ctx.principal, requestId: ctx.requestId },
      entry: (id) => ({
        organizationId: caller.organizationId,
        entityType: 'SandboxTransaction',
        entityId: id,
        action: 'sandbox.transaction_sent',
        after: { ...request, networkId: assetNetwork.networkId },
      }),
    },
  };
  return { send, request };
}

/** The first error's field alone (400 naming it), as a send alone always answered. */
const firstFieldError = (errors: FieldError[]) => fieldError(errors[0]!.field, errors[0]!.message);

export async function sendDeposit(ctx: Context, input: z.infer<typeof sendInput>, idempotencyKey?: string | null): Promise<SandboxTransactionView> {
  const caller = await sandboxCaller(ctx, input.environmentId);
  const errors: FieldError[] = [];
  const checked = await depositSend(ctx, caller, input, '', errors);
  if (!checked) throw firstFieldError(errors);
  const { send, request } = checked;
  // Just sent: PENDING, no confirmations whatever the tip (no read of it).
  if (idempotencyKey == null) {
    const r = await sendGroupOf(ctx.deps).submit(send);
    if (r instanceof Error) throw r;
    return view(r, 0);
  }
  return ctx.deps.db.$transaction((tx) =>
    idempotent(tx, ctx, { scope: scope('deposit', caller), key: idempotencyKey, request }, async () =>
      view(await chain.sendTransaction(tx, ctx.deps, send), 0),
    ),
  );
}

/** Deposits one batch send may carry (POST /v1/sandbox/deposits/batch). */
export const MAX_DEPOSIT_BATCH = 100;
export const sendBatchInput = z.object({
  deposits: z
    .array(sendInput.omit({ environmentId: true }))
    .min(1, 'must hold at least one deposit')
    .max(MAX_DEPOSIT_BATCH, `must hold at most ${MAX_DEPOSIT_BATCH} deposits`),
  environmentId,
});

/**
 * Several payers' transfers in one request (issue 22), as a block carries many: each item its own
 * PENDING transaction (its own deposit once detected), in list order (their nonces). Every item is
 * checked first and every failing field answered at once (400, `deposits.<i>.<field>`); then all
 * are sent in one database transaction (chain.sendTransactions per network) or none: an item the
 * chain refuses (its recipient's bound) answers 409 naming it and nothing of the batch is sent.
 * Idempotent under `Idempotency-Key` like a send alone. Answers the transactions in list order.
 */
export async function sendDeposits(
  ctx: Context,
  input: z.infer<typeof sendBatchInput>,
  idempotencyKey?: string | null,
): Promise<{ transactions: SandboxTransactionView[] }> {
  const caller = await sandboxCaller(ctx, input.environmentId);
  const errors: FieldError[] = [];
  const checked = [];
  for (const [i, d] of input.deposits.entries()) checked.push(await depositSend(ctx, caller, d, `deposits.${i}.`, errors));
  if (errors.length) throw validationFailed(errors);
  const sends = checked.map((c) => c!.send);
  const write = async (tx: Db | PoolQuery) => {
    const sent = await sendAcross(tx, ctx.deps, sends);
    const refused = sent.findIndex((r) => r instanceof Error);
    // Thrown: the transaction rolls back, nothing of the batch is sent.
    if (refused >= 0) throw refusalOf(sent[refused] as Error, refused);
    return { transactions: sent.map((r) => view(r as chain.SandboxTransactionRow, 0)) };
  };
  if (idempotencyKey == null) return poolTransaction(ctx.deps.db, (tx) => write(tx)) ?? ctx.deps.db.$transaction((tx) => write(tx));
  const request = { deposits: checked.map((c) => c!.request) };
  return ctx.deps.db.$transaction((tx) => idempotent(tx, ctx, { scope: scope('deposits', caller), key: idempotencyKey, request }, () => write(tx)));
}

/** A batch item the chain refused, named (its index) in the error the send alone would get. */
function refusalOf(e: Error, index: number): Error {
  return e instanceof DomainError ? new DomainError(e.code, `deposits.${index}: ${e.message}`) : e;
}

export async function mine(
  ctx: Context,
  networkIdArg: string,
  input: z.infer<typeof mineInput> | null | undefined,
  idempotencyKey?: string | null,
): Promise<ChainTipView> {
  const caller = await sandboxCaller(ctx, input?.environmentId);
  const network = await loadSandboxNetwork(ctx.deps.db, networkIdArg);
  const blocks = input?.blocks ?? 1;
  const work = async (tx: RawDb) => {
    const r = await chain.mineBlocks(tx, ctx.deps, network.id, blocks);
    await audit(tx, ctx, {
      organizationId: caller.organizationId,
      entityType: 'Network',
      entityId: network.id,
      action: 'sandbox.blocks_mined',
      after: { blocks, height: r.height },
    });
    return { networkId: network.id, height: r.height, tipHash: r.hash };
  };
  // Without an Idempotency-Key (issue 22: the bench mines every 100 ms, mostly empty blocks), the
  // mine's raw statements straight on the pool: no Prisma interactive transaction or query engine.
  if (idempotencyKey == null) {
    const pooled = poolTransaction(ctx.deps.db, (_query, raw) => work(raw));
    if (pooled) return pooled;
  }
  return ctx.deps.db.$transaction((tx) =>
    idempotent(tx, ctx, { scope: scope('mine', caller), key: idempotencyKey, request: { networkId: network.id, blocks } }, () => work(tx)),
  );
}

export async function reorg(ctx: Context, networkIdArg: string, input: z.infer<typeof reorgInput>, idempotencyKey?: string | null): Promise<ChainTipView> {
  const caller = await sandboxCaller(ctx, input.environmentId);
  const network = await loadSandboxNetwork(ctx.deps.db, networkIdArg);
  const request = { networkId: network.id, depth: input.depth, includeOrphanedTransactions: input.includeOrphanedTransactions ?? true };
  return ctx.deps.db.$transaction((tx) =>
    idempotent(tx, ctx, { scope: scope('reorg', caller), key: idempotencyKey, request }, async () => {
      const r = await chain.reorganize(tx, ctx.deps, network.id, request.depth, request.includeOrphanedTransactions, caller.organizationId);
      await audit(tx, ctx, {
        organizationId: caller.organizationId,
        entityType: 'Network',
        entityId: network.id,
        action: 'sandbox.reorganized',
        after: {
          depth: request.depth,
          includeOrphanedTransactions: request.includeOrphanedTransactions,
          height: r.height,
          orphanedTransactions: r.orphanedTransactions,
        },
      });
      return { networkId: network.id, height: r.height, tipHash: r.hash };
    }),
  );
}

export async function drop(ctx: Context, input: z.infer<typeof dropInput>, idempotencyKey?: string | null): Promise<SandboxTransactionView> {
  const caller = await sandboxCaller(ctx, input.environmentId);
  return ctx.deps.db.$transaction((tx) =>
    idempotent(tx, ctx, { scope: scope('drop', caller), key: idempotencyKey, request: { txHash: input.txHash } }, async () => {
      const row = await chain.dropTransaction(tx, ctx.deps, input.txHash, caller.organizationId);
      await audit(tx, ctx, {
        organizationId: caller.organizationId,
        entityType: 'SandboxTransaction',
        entityId: row.id,
        action: 'sandbox.transaction_dropped',
        after: { txHash: row.txHash, status: row.status },
      });
      return view(row, await tipHeight(tx, row.networkId));
    }),
  );
}

export async function replace(ctx: Context, input: z.infer<typeof replaceInput>, idempotencyKey?: string | null): Promise<SandboxTransactionView> {
  const caller = await sandboxCaller(ctx, input.environmentId);
  const amount = input.amount == null ? undefined : BigInt(input.amount);
  return ctx.deps.db.$transaction((tx) =>
    idempotent(tx, ctx, { scope: scope('replace', caller), key: idempotencyKey, request: { txHash: input.txHash, amount: input.amount ?? null } }, async () => {
      const { replaced, replacement } = await chain.replaceTransaction(tx, ctx.deps, input.txHash, caller.organizationId, amount);
      await audit(tx, ctx, {
        organizationId: caller.organizationId,
        entityType: 'SandboxTransaction',
        entityId: replaced.id,
        action: 'sandbox.transaction_replaced',
        after: { txHash: replaced.txHash, status: replaced.status, replacedByTxHash: replacement.txHash, amount: replacement.amount.toFixed() },
      });
      return view(replacement, await tipHeight(tx, replacement.networkId));
    }),
  );
}

export async function advanceClock(ctx: Context, input: z.infer<typeof advanceClockInput>, idempotencyKey?: string | null): Promise<SandboxClockView> {
  const caller = await sandboxCaller(ctx, input.environmentId);
  return ctx.deps.db.$transaction((tx) =>
    idempotent(tx, ctx, { scope: scope('clock', caller), key: idempotencyKey, request: { seconds: input.seconds } }, async () => {
      const now = await advanceSandboxClock(tx, ctx.deps.clock, caller.organizationId, input.seconds);
      const offsetMs = await sandboxOffsetMs(tx, caller.organizationId);
      // The organization's sandbox intents now due expire at once, not at the next periodic sweep.
      await sendExpirySweep(tx, ctx.deps.boss, caller.organizationId);
      // Release rules and retained split portions due by the new sandbox time, at once.
      await sendReleaseSweep(tx, ctx.deps.boss, caller.organizationId);
      await sendRetainedRelease(tx, ctx.deps.boss, { organizationId: caller.organizationId });
      await audit(tx, ctx, {
        organizationId: caller.organizationId,
        entityType: 'SandboxClock',
        entityId: caller.organizationId,
        action: 'sandbox.clock_advanced',
        after: { seconds: input.seconds, offsetSeconds: offsetMs / 1000 },
      });
      return { organizationId: caller.organizationId, now, offsetSeconds: offsetMs / 1000 };
    }),
  );
}

/** Reads: a transaction by hash (404 when the chain never saw it), the tip, a balance. */
export async function transactionByHash(ctx: Context, hash: string): Promise<SandboxTransactionView> {
  await sandboxCaller(ctx);
  const h = hash.trim().toLowerCase();
  const row = txHashPattern.test(h) ? await ctx.deps.db.sandboxTransaction.findUnique({ where: { txHash: h } }) : null;
  if (!row) throw notFound('Sandbox transaction');
  return view(row, await tipHeight(ctx.deps.db, row.networkId));
}

export async function chainTip(ctx: Context, networkIdArg: string): Promise<ChainTipView> {
  await sandboxCaller(ctx);
  const network = await loadSandboxNetwork(ctx.deps.db, networkIdArg);
  const t = await chain.tip(ctx.deps.db, network.id);
  return { networkId: network.id, height: t.height, tipHash: t.hash };
}

export async function balance(ctx: Context, assetNetworkIdArg: string, addressArg: string) {
  await sandboxCaller(ctx);
  const assetNetwork = await ctx.deps.db.assetNetwork.findUnique({ where: { id: assertId(assetNetworkIdArg, 'AssetNetwork') }, include: { network: true } });
  if (!assetNetwork || assetNetwork.network.kind !== 'SANDBOX') throw notFound('AssetNetwork');
  const address = addressArg.trim().toLowerCase();
  return {
    assetNetworkId: assetNetwork.id,
    networkId: assetNetwork.networkId,
    address,
    balance: (await chain.balanceOf(ctx.deps.db, assetNetwork.networkId, assetNetwork.id, address)).toString(),
  };
}
