import { MAX_AMOUNT, numericToAmount } from '../../money';
import { createHash } from 'node:crypto';
import type { PgBoss } from 'pg-boss';
import type { Db } from '../../db/prisma';
import type { Clock } from '../../clock';
import type { SandboxTransactionStatus } from '../../generated/prisma/enums';
import { invalidState, notFound } from '../../errors';
import { sendChainSync } from '../sync-queue';
import { keccakHex } from '../secp256k1';
import type { ObservedTransfer } from '../adapter';

/**
 * The sandbox chain: a deterministic blockchain persisted in PostgreSQL, one per SANDBOX network.
 *
 * - Transactions enter the mempool PENDING. Mining a block takes the mempool (PENDING and ORPHANED
 *   transactions, oldest first, at most MAX_BLOCK_TRANSACTIONS) into a new canonical block at tip + 1:
 *   each becomes MINED, or REVERTED when it was sent to fail (mined, no value moved).
 * - A block's hash is SHA-256 over (network, height, parent hash, fork number, sorted transaction
 *   hashes); a transaction's over (network, nonce, from, to, asset-network, amount, flags), the nonce
 *   being the count of the network's transactions before it. The same operations in the same order
 *   give the same hashes. The fork number (blocks already seen at that height) tells a replacement
 *   block from the one it replaces.
 * - Confirmations of a MINED transaction: tip height - block height + 1; 0 for anything else.
 * - A reorganization of depth d orphans the last d canonical blocks (canonical = false); their
 *   transactions become ORPHANED (back in the mempool), and d + 1 replacement blocks are mined, so
 *   the new branch is longer than the old one. With includeOrphanedTransactions (the default) the
 *   replacement blocks re-include the orphaned transactions (MINED again, at a new height and block);
 *   without it they stay ORPHANED until a later block mines them or they are dropped.
 * - Drop: a PENDING or ORPHANED transaction leaves the mempool for good (DROPPED). Replace: a PENDING
 *   transaction sent as replaceable becomes REPLACED by a new PENDING one (replace-by-fee).
 * - Balances per (asset-network, address) are the sum of MINED (canonical) transactions to the
 *   address, recomputed for the addresses each change touches. The payer side is a faucet: payers'
 *   balances are not tracked.
 *
 * Every change of a network runs under that network's advisory lock (one writer at a time, so nonces
 * and heights never race) and sends a `chain.sync` job in its transaction (src/chains/sync-queue.ts).
 */
export const MAX_BLOCK_TRANSACTIONS = 1000;

export interface ChainDeps {
  clock: Clock;
  boss: PgBoss | null;
}

export interface SandboxTransactionRow {
  id: string;
  networkId: string;
  assetNetworkId: string;
  txHash: string;
  fromAddress: string;
  toAddress: string;
  amount: { toFixed(): string };
  status: SandboxTransactionStatus;
  replaceable: boolean;
  replacedByTxHash: string | null;
  blockHash: string | null;
  blockHeight: number | null;
  willRevert: boolean;
  createdAt: Date;
}

const sha = (parts: unknown[]) => '0x' + createHash('sha256').update(JSON.stringify(parts)).digest('hex');

/** A block's hash: SHA-256 of the JSON array [network, height, parent hash, fork number, sorted transaction hashes]. */
export function blockHash(networkId: string, height: number, parentHash: string | null, fork: number, txHashes: string[]): string {
  return sha(['block', networkId, height, parentHash, fork, [...txHashes].sort()]);
}

/** The payer of an organization's sandbox deposits: a deterministic address per organization. */
export function payerAddress(organizationId: string): string {
  return '0x' + keccakHex('ftis/sandbox/payer/' + organizationId).slice(24);
}

/** Serializes the changes of one sandbox network (transaction-scoped). */
export async function lockNetwork(tx: Db, networkId: string): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${'sandbox-chain ' + networkId}, 0))`;
}

/** The canonical tip: height 0 and no hash before the first block. */
export async function tip(db: Db, networkId: string): Promise<{ height: number; hash: string | null }> {
  const b = await db.sandboxBlock.findFirst({ where: { networkId, canonical: true }, orderBy: { height: 'desc' }, select: { height: true, hash: true } });
  return b ? { height: b.height, hash: b.hash } : { height: 0, hash: null };
}

/** A transaction as an adapter reports it, given the canonical tip height. */
export function observe(t: SandboxTransactionRow, tipHeight: number): ObservedTransfer {
  return {
    txHash: t.txHash,
    fromAddress: t.fromAddress,
    toAddress: t.toAddress,
    assetNetworkId: t.assetNetworkId,
    amount: numericToAmount(t.amount),
    status: t.status,
    blockHash: t.blockHash,
    blockHeight: t.blockHeight,
    confirmations: t.status === 'MINED' && t.blockHeight !== null ? tipHeight - t.blockHeight + 1 : 0,
    replacedByTxHash: t.replacedByTxHash,
  };
}

/** Recomputes the balances of the (asset-network, address) pairs from the canonical mined transactions. */
async function recomputeBalances(tx: Db, networkId: string, rows: { assetNetworkId: string; toAddress: string; fromAddress: string }[]): Promise<void> {
  // Both sides of each transfer: received minus sent, over canonical mined transactions. The
  // organizations' payer (faucet) addresses only ever send: they are unbounded sources and stay at 0.
  const pairs = [...new Map(rows.flatMap((r) => [r.toAddress, r.fromAddress].map((addr) => [`${r.assetNetworkId} ${addr}`, { a: r.assetNetworkId, addr }] as const))).values()];
  if (!pairs.length) return;
  const assetNetworkIds = pairs.map((p) => p.a);
  const addresses = pairs.map((p) => p.addr);
  await tx.$executeRaw`
    INSERT INTO "SandboxAddressBalance" ("networkId", "assetNetworkId", "address", "balance")
    SELECT ${networkId}::uuid, p.a, p.addr, GREATEST(0, COALESCE((
      SELECT SUM(CASE WHEN t."toAddress" = p.addr THEN t."amount" ELSE 0 END) - SUM(CASE WHEN t."fromAddress" = p.addr THEN t."amount" ELSE 0 END)
      FROM "SandboxTransaction" t
      WHERE t."networkId" = ${networkId}::uuid AND t."assetNetworkId" = p.a AND (t."toAddress" = p.addr OR t."fromAddress" = p.addr) AND t."status" = 'MINED'
    ), 0))
    FROM unnest(${assetNetworkIds}::uuid[], ${addresses}::text[]) AS p(a, addr)
    ON CONFLICT ("networkId", "assetNetworkId", "address") DO UPDATE SET "balance" = EXCLUDED."balance"`;
}

/**
 * An address never holds more than 2^256 - 1 base units (a uint256 balance): refused (409, nothing
 * written) when its balance plus every transfer still to be mined to it (PENDING, ORPHANED; less the
 * one a replacement replaces) plus `amount` would exceed it. So no block ever overflows a balance,
 * whatever order the mempool is mined in. The caller holds the network lock.
 */
async function assertRecipientCanHold(tx: Db, a: { networkId: string; assetNetworkId: string; toAddress: string; amount: bigint; replacesId?: string }): Promise<void> {
  if (a.amount > MAX_AMOUNT) throw invalidState(`A sandbox transfer moves at most 2^256 - 1 base units (${MAX_AMOUNT}).`);
  const incoming = await tx.sandboxTransaction.aggregate({
    where: {
      networkId: a.networkId, assetNetworkId: a.assetNetworkId, toAddress: a.toAddress, status: { in: ['PENDING', 'ORPHANED'] },
      ...(a.replacesId ? { id: { not: a.replacesId } } : {}),
    },
    _sum: { amount: true },
  });
  const held = (await balanceOf(tx, a.networkId, a.assetNetworkId, a.toAddress)) + (incoming._sum.amount ? numericToAmount(incoming._sum.amount) : 0n);
  if (held + a.amount > MAX_AMOUNT)
    throw invalidState(
      `The address ${a.toAddress} would hold more than 2^256 - 1 base units (${MAX_AMOUNT}): it holds or awaits ${held}, so it can receive at most ${MAX_AMOUNT - held} more.`,
    );
}

async function insertTransaction(
  tx: Db,
  deps: ChainDeps,
  a: { networkId: string; assetNetworkId: string; fromAddress: string; toAddress: string; amount: bigint; replaceable: boolean; revert: boolean; replacesId?: string },
): Promise<SandboxTransactionRow> {
  await assertRecipientCanHold(tx, a);
  const nonce = await tx.sandboxTransaction.count({ where: { networkId: a.networkId } });
  const txHash = sha(['tx', a.networkId, nonce, a.fromAddress, a.toAddress, a.assetNetworkId, a.amount.toString(), a.replaceable, a.revert]);
  const now = deps.clock.now();
  return tx.sandboxTransaction.create({
    data: {
      networkId: a.networkId, assetNetworkId: a.assetNetworkId, txHash, fromAddress: a.fromAddress, toAddress: a.toAddress,
      amount: a.amount.toString(), status: 'PENDING', replaceable: a.replaceable, willRevert: a.revert, createdAt: now, updatedAt: now,
    },
  });
}

/** Sends value to an address (a PENDING transaction in the mempool). */
export async function sendTransaction(
  tx: Db,
  deps: ChainDeps,
  a: { networkId: string; assetNetworkId: string; fromAddress: string; toAddress: string; amount: bigint; replaceable: boolean; revert: boolean },
): Promise<SandboxTransactionRow> {
  if (a.amount <= 0n) throw new RangeError('a sandbox transaction moves a positive amount');
  await lockNetwork(tx, a.networkId);
  const row = await insertTransaction(tx, deps, a);
  await sendChainSync(tx, deps.boss, a.networkId);
  return row;
}

/** Mines one block on top of the canonical tip (the caller holds the network lock). */
async function mineOne(tx: Db, deps: ChainDeps, networkId: string, exclude: string[]): Promise<{ height: number; hash: string }> {
  const parent = await tip(tx, networkId);
  const height = parent.height + 1;
  const mempool = await tx.sandboxTransaction.findMany({
    where: { networkId, status: { in: ['PENDING', 'ORPHANED'] }, ...(exclude.length ? { id: { notIn: exclude } } : {}) },
    orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
    take: MAX_BLOCK_TRANSACTIONS,
    select: { id: true, txHash: true, willRevert: true, assetNetworkId: true, toAddress: true, fromAddress: true },
  });
  const fork = await tx.sandboxBlock.count({ where: { networkId, height } });
  const hash = blockHash(networkId, height, parent.hash, fork, mempool.map((t) => t.txHash));
  const now = deps.clock.now();
  await tx.sandboxBlock.create({ data: { networkId, height, hash, parentHash: parent.hash, canonical: true, minedAt: now } });
  const succeeded = mempool.filter((t) => !t.willRevert);
  const reverted = mempool.filter((t) => t.willRevert);
  if (succeeded.length)
    await tx.sandboxTransaction.updateMany({ where: { id: { in: succeeded.map((t) => t.id) } }, data: { status: 'MINED', blockHash: hash, blockHeight: height, updatedAt: now } });
  if (reverted.length)
    await tx.sandboxTransaction.updateMany({ where: { id: { in: reverted.map((t) => t.id) } }, data: { status: 'REVERTED', blockHash: hash, blockHeight: height, updatedAt: now } });
  await recomputeBalances(tx, networkId, succeeded);
  return { height, hash };
}

async function mineMany(tx: Db, deps: ChainDeps, networkId: string, blocks: number, exclude: string[] = []) {
  let last = await tip(tx, networkId);
  for (let i = 0; i < blocks; i++) last = await mineOne(tx, deps, networkId, exclude);
  return last;
}

/** Mines `blocks` blocks; answers the new tip. */
export async function mineBlocks(tx: Db, deps: ChainDeps, networkId: string, blocks: number): Promise<{ height: number; hash: string | null }> {
  if (!Number.isInteger(blocks) || blocks < 1) throw new RangeError('mine at least one block');
  await lockNetwork(tx, networkId);
  const r = await mineMany(tx, deps, networkId, blocks);
  await sendChainSync(tx, deps.boss, networkId);
  return r;
}

/** Orphans the last `depth` canonical blocks and mines depth + 1 replacement blocks; answers the new tip. */
export async function reorganize(
  tx: Db,
  deps: ChainDeps,
  networkId: string,
  depth: number,
  includeOrphanedTransactions: boolean,
): Promise<{ height: number; hash: string | null; orphanedBlocks: number; orphanedTransactions: number }> {
  if (!Number.isInteger(depth) || depth < 1) throw new RangeError('a reorganization orphans at least one block');
  await lockNetwork(tx, networkId);
  const current = await tip(tx, networkId);
  if (depth > current.height)
    throw invalidState(`The chain has ${current.height} block${current.height === 1 ? '' : 's'}: a reorganization can orphan at most that many.`);
  const now = deps.clock.now();
  const orphaned = await tx.sandboxBlock.updateManyAndReturn({
    where: { networkId, canonical: true, height: { gt: current.height - depth } },
    data: { canonical: false },
    select: { hash: true },
  });
  const transactions = await tx.sandboxTransaction.updateManyAndReturn({
    where: { networkId, blockHash: { in: orphaned.map((b) => b.hash) }, status: { in: ['MINED', 'REVERTED'] } },
    data: { status: 'ORPHANED', updatedAt: now },
    select: { id: true, assetNetworkId: true, toAddress: true, fromAddress: true },
  });
  await recomputeBalances(tx, networkId, transactions);
  const r = await mineMany(tx, deps, networkId, depth + 1, includeOrphanedTransactions ? [] : transactions.map((t) => t.id));
  await sendChainSync(tx, deps.boss, networkId);
  return { ...r, orphanedBlocks: orphaned.length, orphanedTransactions: transactions.length };
}

/** Loads a transaction by hash and locks its network; 404 when the chain never saw it. */
async function lockedTransaction(tx: Db, txHash: string): Promise<SandboxTransactionRow> {
  const found = await tx.sandboxTransaction.findUnique({ where: { txHash }, select: { networkId: true } });
  if (!found) throw notFound('Sandbox transaction');
  await lockNetwork(tx, found.networkId);
  return tx.sandboxTransaction.findUniqueOrThrow({ where: { txHash } });
}

/** PENDING or ORPHANED -> DROPPED (it leaves the mempool for good); anything else: 409. */
export async function dropTransaction(tx: Db, deps: ChainDeps, txHash: string): Promise<SandboxTransactionRow> {
  const row = await lockedTransaction(tx, txHash);
  if (row.status !== 'PENDING' && row.status !== 'ORPHANED')
    throw invalidState(`Only a PENDING or ORPHANED transaction can be dropped; this one is ${row.status}.`);
  const dropped = await tx.sandboxTransaction.update({ where: { id: row.id }, data: { status: 'DROPPED', updatedAt: deps.clock.now() } });
  await sendChainSync(tx, deps.boss, row.networkId);
  return dropped;
}

/** A PENDING replaceable transaction -> REPLACED by a new PENDING one (same payer, recipient and asset; the amount given or the same). */
export async function replaceTransaction(tx: Db, deps: ChainDeps, txHash: string, amount?: bigint): Promise<{ replaced: SandboxTransactionRow; replacement: SandboxTransactionRow }> {
  const row = await lockedTransaction(tx, txHash);
  if (row.status !== 'PENDING') throw invalidState(`Only a PENDING transaction can be replaced; this one is ${row.status}.`);
  if (!row.replaceable) throw invalidState('This transaction was not sent as replaceable.');
  if (amount !== undefined && amount <= 0n) throw new RangeError('a sandbox transaction moves a positive amount');
  const replacement = await insertTransaction(tx, deps, {
    networkId: row.networkId, assetNetworkId: row.assetNetworkId, fromAddress: row.fromAddress, toAddress: row.toAddress,
    amount: amount ?? numericToAmount(row.amount), replaceable: true, revert: row.willRevert, replacesId: row.id,
  });
  const replaced = await tx.sandboxTransaction.update({
    where: { id: row.id },
    data: { status: 'REPLACED', replacedByTxHash: replacement.txHash, updatedAt: deps.clock.now() },
  });
  await sendChainSync(tx, deps.boss, row.networkId);
  return { replaced, replacement };
}

/** The balance of an address (base units) from the canonical mined transactions. */
export async function balanceOf(db: Db, networkId: string, assetNetworkId: string, address: string): Promise<bigint> {
  const row = await db.sandboxAddressBalance.findUnique({ where: { networkId_assetNetworkId_address: { networkId, assetNetworkId, address } } });
  return row ? numericToAmount(row.balance) : 0n;
}
