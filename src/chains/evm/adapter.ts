import { privateKeyToAccount } from 'viem/accounts';
import {
  bytesToHex,
  decodeFunctionData,
  encodeFunctionData,
  erc20Abi,
  getAddress,
  isAddress,
  keccak256,
  parseTransaction,
  recoverTransactionAddress,
  serializeTransaction,
  TransactionNotFoundError,
  TransactionReceiptNotFoundError,
  type Hex,
  type PublicClient,
  type TransactionSerializableEIP1559,
} from 'viem';
import { numericToAmount } from '../../money';
import { systemClock } from '../../clock';
import type { Db } from '../../db/prisma';
import type { Clock } from '../../clock';
import type { AddressBalance, ChainChanges, DerivedAddress, FeeEstimate, NetworkAdapter, NetworkRef, ObservedTransfer, StuckTransaction } from '../adapter';
import * as keys from '../secp256k1';
import type { TransferPayload } from '../secp256k1';
import { requireEvmSettings } from './config';
import { checkedClientOf } from './client';
import { assetNetworksOf, cursorOf } from './index-store';

/**
 * The NetworkAdapter of EVM networks (issue 18; docs/chains.md), on viem over JSON-RPC.
 *
 * Keys and addresses: those of src/chains/secp256k1.ts, addresses EIP-55 checksummed. Transfers to
 * watched addresses come from the index the network's watcher fills (src/chains/evm/watcher.ts:
 * EvmTransfer, EvmBlock), so `transfersTo` and `blockHeight` are database reads consistent with one
 * another (the tip is the watcher's cursor). One transaction by hash (`transaction`) is the index's
 * when it holds it, else read from the node: PENDING, MINED, ORPHANED (its block no longer
 * canonical), REVERTED (receipt), and for the platform's own broadcasts (EvmBroadcast) REPLACED
 * (another of its transactions took the nonce) or DROPPED (unknown to the node, nonce unused).
 */
export function evmAdapter(db?: Db, clock?: Clock): NetworkAdapter {
  const database = (): Db => {
    if (!db) throw new Error("the EVM adapter reads its index through a database handle: adapterFor('EVM', db)");
    return db;
  };
  return {
    kind: 'EVM',
    ...keys.secp256k1KeyOps,
    deriveAddress(_network: NetworkRef, wallet: { curve: string; publicKey: string }, index: number): DerivedAddress {
      const { publicKey, address } = keys.secp256k1KeyOps.deriveChildWithAddress('EVM', wallet, index);
      return { address: getAddress(address), publicKey };
    },
    deriveAddresses: (_network, pairs) =>
      keys.secp256k1KeyOps.deriveChildrenWithAddress('EVM', pairs).map(({ publicKey, address }) => ({ address: getAddress(address), publicKey })),
    // All lower-case, all upper-case, or a valid EIP-55 checksum.
    validateAddress: (address) => isAddress(address, { strict: true }),
    async signTransfer(network, p, privateKey) {
      const account = privateKeyToAccount(bytesToHex(privateKey));
      if (account.address.toLowerCase() !== p.fromAddress.toLowerCase()) throw new Error('the signing key is not the key of the sending address');
      return account.signTransaction(await unsignedTransfer(database(), network, p));
    },
    async signingRequest(network, p) {
      const tx = await unsignedTransfer(database(), network, p);
      const canonical = serializeTransaction(tx);
      const evm = {
        type: 'eip1559',
        chainId: tx.chainId,
        nonce: tx.nonce,
        to: tx.to,
        value: tx.value!.toString(),
        data: tx.data ?? '0x',
        gas: tx.gas!.toString(),
        maxFeePerGas: tx.maxFeePerGas!.toString(),
        maxPriorityFeePerGas: tx.maxPriorityFeePerGas!.toString(),
      };
      return { payload: { ...p, evm }, canonical, digest: keccak256(canonical).slice(2) };
    },
    /** The stored unsigned transaction with the signature: the recovery bit is the one that recovers the payload's sender. */
    async assembleSigned(_network, request, signature) {
      if (!/^[0-9a-fA-F]{128}$/.test(signature)) throw new RangeError('signature must be 64 bytes of hex (r||s)');
      const tx = parseTransaction(request.canonical as Hex) as TransactionSerializableEIP1559;
      const from = String(request.payload.fromAddress).toLowerCase();
      const r = `0x${signature.slice(0, 64)}` as Hex;
      const s = `0x${signature.slice(64)}` as Hex;
      for (const yParity of [0, 1]) {
        const signed = serializeTransaction(tx, { r, s, yParity });
        try {
          if ((await recoverTransactionAddress({ serializedTransaction: signed as never })).toLowerCase() === from) return signed;
        } catch {
          // not a valid signature for this parity
        }
      }
      throw new RangeError(`the signature does not verify: it is not by the key of ${from} over the transaction's signing hash`);
    },
    async watchAddresses(network, addresses) {
      if (!addresses.length) return;
      await database().evmWatchedAddress.createMany({
        data: [...new Set(addresses.map((a) => a.toLowerCase()))].map((address) => ({ networkId: network.id, address })),
        skipDuplicates: true,
      });
    },
    async blockHeight(network) {
      const cursor = await cursorOf(database(), network.id);
      if (cursor) return cursor.height;
      return Number(await (await checkedClientOf(network.id)).getBlockNumber());
    },
    async transfersTo(network, addresses): Promise<ObservedTransfer[]> {
      if (!addresses.length) return [];
      const d = database();
      // Answered in the caller's spelling of each address (stored lower-case).
      const asked = new Map(addresses.map((a) => [a.toLowerCase(), a]));
      const tip = (await cursorOf(d, network.id))?.height ?? 0;
      const rows = await d.evmTransfer.findMany({
        where: { networkId: network.id, toAddress: { in: [...asked.keys()] } },
        orderBy: [{ blockHeight: 'asc' }, { id: 'asc' }],
      });
      return rows.map((r) => ({ ...observe(r, tip), toAddress: asked.get(r.toAddress) ?? r.toAddress }));
    },
    async changedSince(network, cursor): Promise<ChainChanges> {
      const d = database();
      const now = await cursorOf(d, network.id);
      let from = cursor?.height ?? 0;
      if (cursor?.hash) {
        // The watcher rewound past the block the cursor saw (or pruned it): a reorganization is at most finalityDepth deep.
        const seen = await d.evmBlock.findUnique({ where: { networkId_height: { networkId: network.id, height: cursor.height } }, select: { hash: true } });
        if (seen?.hash !== cursor.hash) from = Math.max(0, cursor.height - requireEvmSettings(network.id).finalityDepth);
      }
      const rows = await d.$queryRaw<{ toAddress: string }[]>`
        SELECT DISTINCT "toAddress" FROM "EvmTransfer"
         WHERE "networkId" = ${network.id}::uuid AND ("blockHeight" >= ${from} OR "status" = 'ORPHANED')`;
      return {
        tip: now ? { height: now.height, hash: now.hash } : { height: 0, hash: null },
        from,
        addresses: rows.map((r) => getAddress(r.toAddress)),
      };
    },
    async transaction(network, txHash) {
      const d = database();
      const hash = txHash.toLowerCase();
      const indexed = await d.evmTransfer.findFirst({ where: { networkId: network.id, txHash: hash }, orderBy: { logIndex: 'asc' } });
      const tip = (await cursorOf(d, network.id))?.height;
      if (indexed && tip !== undefined && (indexed.status !== 'MINED' || (indexed.blockHeight ?? 0) <= tip)) return observe(indexed, tip);
      return liveTransaction(d, network, hash);
    },
    /**
     * Sends a signed EVM transaction (0x RLP, legacy or EIP-1559) with eth_sendRawTransaction. Refused
     * (RangeError, nothing sent) when it is unsigned, for another chain id, or the node refuses it
     * (funds, nonce, underpriced replacement). Recorded in EvmBroadcast (sender, nonce, what it moves)
     * in the caller's transaction.
     */
    async broadcast(network, signedTransaction, organizationId) {
      const d = database();
      const s = requireEvmSettings(network.id);
      let parsed: ReturnType<typeof parseTransaction>;
      let from: string;
      try {
        parsed = parseTransaction(signedTransaction as Hex);
        if (parsed.r === undefined || parsed.s === undefined) throw new Error('unsigned');
        from = (await recoverTransactionAddress({ serializedTransaction: signedTransaction as never })).toLowerCase();
      } catch {
        throw new RangeError('not a signed EVM transaction (0x-prefixed RLP, legacy or EIP-1559)');
      }
      if (parsed.chainId !== s.chainId)
        throw new RangeError(`the transaction is signed for chain id ${parsed.chainId ?? 'none'}, the network's is ${s.chainId}`);
      if (parsed.nonce === undefined || !parsed.to) throw new RangeError('a transfer names its recipient and nonce');
      const moved = await movedBy(d, network.id, { to: parsed.to, value: parsed.value ?? 0n, data: parsed.data });
      const client = await checkedClientOf(network.id);
      let txHash: string;
      try {
        txHash = (await client.sendRawTransaction({ serializedTransaction: signedTransaction as Hex })).toLowerCase();
      } catch (e) {
        throw new RangeError(`the node refused the transaction: ${shortMessage(e)}`);
      }
      await d.evmBroadcast.upsert({
        where: { txHash },
        create: {
          txHash,
          networkId: network.id,
          assetNetworkId: moved.assetNetworkId,
          fromAddress: from,
          nonce: parsed.nonce,
          toAddress: moved.toAddress,
          amount: moved.amount.toString(),
          organizationId,
          signedTransaction: signedTransaction.toLowerCase(),
          broadcastAt: (clock ?? systemClock).now(),
        },
        update: {},
      });
      return { txHash };
    },
    stuckTransactions: (network, now) => stuckTransactions(database(), network, now),
    prepareFeeBump: (network, txHash, privateKey, now) => prepareFeeBump(database(), network, txHash, privateKey, now),
    sendRecorded: (network, txHash) => sendRecorded(database(), network, txHash),
    /**
     * Mined: the node's balance at its latest block (eth_getBalance, or the token's balanceOf), the
     * calls of one request sent as one JSON-RPC batch. Spendable: that less what the platform's own
     * broadcasts from the address still pending in the node's pool move.
     */
    async balances(network, assetNetworkId, addresses): Promise<Map<string, AddressBalance>> {
      const out = new Map<string, AddressBalance>();
      const wanted = [...new Set(addresses)];
      if (!wanted.length) return out;
      const d = database();
      const client = await checkedClientOf(network.id);
      const contract = requireEvmSettings(network.id).tokens[assetNetworkId] as Hex | undefined;
      if (!contract && (await assetNetworksOf(d, network.id)).native !== assetNetworkId)
        throw new RangeError(`the asset-network ${assetNetworkId} is no token configured for the network (EVM_NETWORKS tokens) and not its native coin`);
      const mined = await Promise.all(
        wanted.map((a) =>
          contract
            ? client.readContract({ address: contract, abi: erc20Abi, functionName: 'balanceOf', args: [getAddress(a)] })
            : client.getBalance({ address: getAddress(a) }),
        ),
      );
      wanted.forEach((a, i) => out.set(a, { mined: mined[i]!, spendable: mined[i]! }));
      const lower = new Map(wanted.map((a) => [a.toLowerCase(), a]));
      const open = await d.evmBroadcast.findMany({ where: { networkId: network.id, assetNetworkId, settled: false, fromAddress: { in: [...lower.keys()] } } });
      const pending = await Promise.all(open.map((b) => pendingInPool(client, b.txHash)));
      open.forEach((b, i) => {
        if (!pending[i]) return;
        const bal = out.get(lower.get(b.fromAddress)!)!;
        bal.spendable -= numericToAmount(b.amount);
      });
      return out;
    },
    /** EIP-1559: the node's maxFeePerGas now × the gas of the operation (21,000 native; the configured tokenTransferGas for a token). */
    async estimateFee(network, operation): Promise<FeeEstimate> {
      const s = requireEvmSettings(network.id);
      const client = await checkedClientOf(network.id);
      const gas = BigInt(s.tokens[operation.assetNetworkId] ? s.tokenTransferGas : 21_000);
      const fees = await client.estimateFeesPerGas();
      return { fee: gas * fees.maxFeePerGas, resources: { gas } };
    },
  };
}

type TransferRow = {
  txHash: string;
  fromAddress: string;
  toAddress: string;
  assetNetworkId: string;
  amount: { toFixed(): string } | string | number | bigint;
  status: string;
  blockHash: string | null;
  blockHeight: number | null;
};

function observe(r: TransferRow, tip: number): ObservedTransfer {
  const mined = r.status === 'MINED' && r.blockHeight !== null;
  return {
    txHash: r.txHash,
    fromAddress: r.fromAddress,
    toAddress: r.toAddress,
    assetNetworkId: r.assetNetworkId,
    amount: numericToAmount(r.amount as never),
    status: r.status as ObservedTransfer['status'],
    blockHash: mined ? r.blockHash : null,
    blockHeight: mined ? r.blockHeight : null,
    confirmations: mined ? Math.max(0, tip - r.blockHeight! + 1) : 0,
    replacedByTxHash: null,
  };
}

function shortMessage(e: unknown): string {
  const m = (e as { shortMessage?: string; details?: string; message?: string }) ?? {};
  return (m.details ?? m.shortMessage ?? m.message ?? String(e)).split('\n')[0]!.slice(0, 300);
}

async function pendingInPool(client: PublicClient, hash: string): Promise<boolean> {
  try {
    const t = await client.getTransaction({ hash: hash as Hex });
    return t.blockNumber === null;
  } catch (e) {
    if (e instanceof TransactionNotFoundError) return false;
    throw e;
  }
}

/** What a transaction moves: a token's transfer(to, amount) to a configured contract, else its native value. */
async function movedBy(
  db: Db,
  networkId: string,
  t: { to: string; value: bigint; data?: Hex },
): Promise<{ assetNetworkId: string | null; toAddress: string; amount: bigint }> {
  const s = requireEvmSettings(networkId);
  const to = t.to.toLowerCase();
  const token = Object.entries(s.tokens).find(([, c]) => c === to)?.[0];
  if (token && t.data && t.data !== '0x') {
    try {
      const f = decodeFunctionData({ abi: erc20Abi, data: t.data });
      if (f.functionName === 'transfer') return { assetNetworkId: token, toAddress: (f.args[0] as string).toLowerCase(), amount: f.args[1] as bigint };
    } catch {
      // not a transfer call: what it moves is unknown to us
    }
    return { assetNetworkId: token, toAddress: to, amount: 0n };
  }
  const native = (await assetNetworksOf(db, networkId)).native;
  return { assetNetworkId: native, toAddress: to, amount: t.value };
}

/** A transaction the index does not hold, as the node reports it now. */
async function liveTransaction(db: Db, network: NetworkRef, hash: string): Promise<ObservedTransfer | null> {
  const client = await checkedClientOf(network.id);
  const ours = await db.evmBroadcast.findUnique({ where: { txHash: hash } });
  let tx: Awaited<ReturnType<PublicClient['getTransaction']>> | null = null;
  try {
    tx = await client.getTransaction({ hash: hash as Hex });
  } catch (e) {
    if (!(e instanceof TransactionNotFoundError)) throw e;
  }
  if (!tx) {
    if (!ours) return null;
    // Unknown to the node: another transaction of ours with its nonce was mined (REPLACED), or it left the pool (DROPPED).
    const base = {
      txHash: hash,
      fromAddress: ours.fromAddress,
      toAddress: ours.toAddress,
      assetNetworkId: ours.assetNetworkId ?? '',
      amount: numericToAmount(ours.amount),
      blockHash: null,
      blockHeight: null,
      confirmations: 0,
    };
    const all = await db.evmBroadcast.findMany({
      where: { networkId: network.id, fromAddress: ours.fromAddress, nonce: ours.nonce },
      orderBy: { createdAt: 'asc' },
    });
    const siblings = all.filter((b) => b.txHash !== hash);
    const root = rootOf(all);
    const feeBump = (other: string) => root(other) === root(hash);
    const nonce = await client.getTransactionCount({ address: getAddress(ours.fromAddress), blockTag: 'latest' });
    if (nonce > ours.nonce) {
      for (const sib of siblings) {
        if (await receiptOf(client, sib.txHash)) return { ...base, status: 'REPLACED', replacedByTxHash: sib.txHash, feeBump: feeBump(sib.txHash) };
      }
    }
    const newer = siblings.find((s) => s.createdAt >= ours.createdAt);
    if (newer) return { ...base, status: 'REPLACED', replacedByTxHash: newer.txHash, feeBump: feeBump(newer.txHash) };
    return { ...base, status: 'DROPPED', replacedByTxHash: null };
  }
  const moved = tx.to ? await movedBy(db, network.id, { to: tx.to, value: tx.value, data: tx.input }) : { assetNetworkId: null, toAddress: '', amount: 0n };
  const base = {
    txHash: hash,
    fromAddress: tx.from.toLowerCase(),
    toAddress: moved.toAddress,
    assetNetworkId: moved.assetNetworkId ?? '',
    amount: moved.amount,
    replacedByTxHash: null,
  };
  if (tx.blockNumber === null) return { ...base, status: 'PENDING', blockHash: null, blockHeight: null, confirmations: 0 };
  const receipt = await receiptOf(client, hash);
  if (!receipt) return { ...base, status: 'PENDING', blockHash: null, blockHeight: null, confirmations: 0 };
  const height = Number(receipt.blockNumber);
  const paid = (await db.evmBroadcast.findUnique({ where: { txHash: hash }, select: { txHash: true } }))
    ? { feePaid: receipt.gasUsed * receipt.effectiveGasPrice }
    : {};
  const [block, head] = await Promise.all([client.getBlock({ blockNumber: receipt.blockNumber }).catch(() => null), client.getBlockNumber()]);
  if (!block || block.hash !== receipt.blockHash) return { ...base, status: 'ORPHANED', blockHash: null, blockHeight: null, confirmations: 0 };
  if (receipt.status === 'reverted') return { ...base, ...paid, status: 'REVERTED', blockHash: receipt.blockHash, blockHeight: height, confirmations: 0 };
  return { ...base, ...paid, status: 'MINED', blockHash: receipt.blockHash, blockHeight: height, confirmations: Number(head) - height + 1 };
}

/**
 * The EIP-1559 transaction of a transfer, unsigned: native value (21,000 gas) or the token's
 * transfer(to, amount) (tokenTransferGas), the sender's next nonce (nextNonce), the node's fees now.
 */
async function unsignedTransfer(db: Db, network: NetworkRef, p: TransferPayload): Promise<TransactionSerializableEIP1559> {
  const s = requireEvmSettings(network.id);
  const client = await checkedClientOf(network.id);
  const contract = s.tokens[p.assetNetworkId] as Hex | undefined;
  if (!contract && (await assetNetworksOf(db, network.id)).native !== p.assetNetworkId)
    throw new RangeError(`the asset-network ${p.assetNetworkId} is no token configured for the network (EVM_NETWORKS tokens) and not its native coin`);
  const amount = BigInt(p.amount);
  const to = getAddress(p.toAddress);
  const call = contract
    ? { to: contract, value: 0n, data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, amount] }), gas: BigInt(s.tokenTransferGas) }
    : { to, value: amount, gas: 21_000n };
  const nonce = await nextNonce(db, client, network.id, p.fromAddress.toLowerCase());
  // Gas policy (docs/decisions.md): the node's EIP-1559 estimate now (viem: base fee x 1.2 + priority fee).
  const fees = await client.estimateFeesPerGas();
  return { type: 'eip1559', chainId: s.chainId, nonce, maxFeePerGas: fees.maxFeePerGas, maxPriorityFeePerGas: fees.maxPriorityFeePerGas, ...call };
}

/**
 * The nonce of the sender's next transaction: the node's count of its transactions including those
 * pending in the pool, taken under the sender's EvmNonce row lock, which the caller's transaction
 * holds until it commits (its broadcast included). So two workers, in any processes, never sign the
 * same nonce, a restart loses nothing (the node's count is the truth), and a refused or dropped
 * transaction leaves no gap (its nonce is counted again). The row keeps the last nonce signed.
 */
async function nextNonce(db: Db, client: PublicClient, networkId: string, address: string): Promise<number> {
  await lockSender(db, networkId, address);
  const nonce = await client.getTransactionCount({ address: getAddress(address), blockTag: 'pending' });
  await db.evmNonce.update({ where: { networkId_address: { networkId, address } }, data: { next: nonce + 1 } });
  return nonce;
}

async function receiptOf(client: PublicClient, hash: string) {
  try {
    return await client.getTransactionReceipt({ hash: hash as Hex });
  } catch (e) {
    if (e instanceof TransactionReceiptNotFoundError) return null;
    throw e;
  }
}

/** The sender's EvmNonce row, locked (FOR UPDATE) until the caller's transaction ends: one signer per sending address at a time. */
async function lockSender(db: Db, networkId: string, address: string): Promise<void> {
  await db.$executeRaw`INSERT INTO "EvmNonce" ("networkId", "address", "next") VALUES (${networkId}::uuid, ${address}, 0) ON CONFLICT DO NOTHING`;
  await db.$queryRaw`SELECT "next" FROM "EvmNonce" WHERE "networkId" = ${networkId}::uuid AND "address" = ${address} FOR UPDATE`;
}

// ------------------------------------------------------------------------------------------------
// Fee bumps (docs/chains.md "Stuck transactions"; docs/decisions.md, issue 18 "Gas policy")

/** The first transaction of each one's fee-bump line (its `replacesTxHash` links followed back), among one nonce's broadcasts. */
function rootOf(rows: { txHash: string; replacesTxHash: string | null }[]): (hash: string) => string {
  const parent = new Map(rows.map((r) => [r.txHash, r.replacesTxHash]));
  return (hash) => {
    let h = hash;
    for (let i = 0; i <= rows.length && parent.get(h); i++) h = parent.get(h)!;
    return h;
  };
}

/** At least 12.5% more (rounded up): the replacement rule of geth and anvil (geth asks 10%). */
export const bumped = (fee: bigint): bigint => fee + (fee + 7n) / 8n;

/**
 * The platform's broadcasts of the network whose nonce is not mined yet, newest of each nonce:
 * stuck (in the node's pool, not mined, sent `bumpAfterSeconds` ago or more) or unsent (a recorded
 * bump the node does not know). A nonce the chain mined is marked settled and never read again.
 */
async function stuckTransactions(db: Db, network: NetworkRef, now: Date): Promise<StuckTransaction[]> {
  const s = requireEvmSettings(network.id);
  if (!s.bumpAfterSeconds) return [];
  const client = await checkedClientOf(network.id);
  const open = await db.evmBroadcast.findMany({ where: { networkId: network.id, settled: false }, orderBy: [{ createdAt: 'asc' }], take: 5000 });
  const groups = new Map<string, typeof open>();
  for (const b of open) groups.set(`${b.fromAddress}/${b.nonce}`, [...(groups.get(`${b.fromAddress}/${b.nonce}`) ?? []), b]);
  const minedCount = new Map<string, number>();
  const out: StuckTransaction[] = [];
  for (const rows of groups.values()) {
    const newest = rows.at(-1)!;
    const from = newest.fromAddress;
    if (!minedCount.has(from)) minedCount.set(from, await client.getTransactionCount({ address: getAddress(from), blockTag: 'latest' }));
    if (minedCount.get(from)! > newest.nonce) {
      await db.evmBroadcast.updateMany({ where: { networkId: network.id, fromAddress: from, nonce: newest.nonce }, data: { settled: true } });
      continue;
    }
    if (!newest.signedTransaction) continue; // sent before fee bumps were recorded: nothing to re-sign
    const family = rows.map((r) => r.txHash);
    const inPool = await pendingInPool(client, newest.txHash);
    const known = inPool || (await receiptOf(client, newest.txHash)) !== null;
    if (!known) {
      if (newest.replacesTxHash) out.push({ txHash: newest.txHash, fromAddress: from, family, unsent: true });
      continue; // an original the node dropped: the operation's follower handles it (docs/chains.md)
    }
    const sentAt = newest.broadcastAt ?? newest.createdAt;
    if (inPool && now.getTime() - sentAt.getTime() >= s.bumpAfterSeconds * 1000) out.push({ txHash: newest.txHash, fromAddress: from, family, unsent: false });
  }
  return out;
}

async function prepareFeeBump(
  db: Db,
  network: NetworkRef,
  txHash: string,
  privateKey: Uint8Array,
  now: Date,
): Promise<{ txHash: string } | { skipped: string }> {
  const s = requireEvmSettings(network.id);
  const client = await checkedClientOf(network.id);
  const row = await db.evmBroadcast.findUnique({ where: { txHash: txHash.toLowerCase() } });
  if (!row || row.networkId !== network.id) return { skipped: 'not a transaction the platform sent on this network' };
  if (!row.signedTransaction) return { skipped: 'sent before fee bumps were recorded: no signed transaction to re-sign' };
  const account = privateKeyToAccount(bytesToHex(privateKey));
  if (account.address.toLowerCase() !== row.fromAddress) throw new Error('the signing key is not the key of the sending address');
  // Re-checked under the sender's lock (the one nonce assignment takes): still the newest of its nonce, still not mined.
  await lockSender(db, network.id, row.fromAddress);
  const newest = await db.evmBroadcast.findFirst({
    where: { networkId: network.id, fromAddress: row.fromAddress, nonce: row.nonce },
    orderBy: { createdAt: 'desc' },
  });
  if (newest && newest.txHash !== row.txHash) return { skipped: `already replaced by ${newest.txHash}` };
  if ((await client.getTransactionCount({ address: getAddress(row.fromAddress), blockTag: 'latest' })) > row.nonce) return { skipped: 'its nonce is mined' };
  const old = parseTransaction(row.signedTransaction as Hex) as TransactionSerializableEIP1559;
  if (old.type !== 'eip1559' || old.maxFeePerGas === undefined || old.maxPriorityFeePerGas === undefined)
    return { skipped: 'not an EIP-1559 transaction of this service' };
  const fees = await client.estimateFeesPerGas();
  const max = (...xs: bigint[]) => xs.reduce((a, b) => (a > b ? a : b));
  const priority = max(bumped(old.maxPriorityFeePerGas), fees.maxPriorityFeePerGas);
  let maxFee = max(bumped(old.maxFeePerGas), fees.maxFeePerGas, priority);
  const cap = BigInt(s.maxFeePerGasCap);
  if (maxFee > cap) {
    if (bumped(old.maxFeePerGas) > cap || priority > cap)
      return { skipped: `the next fee (${maxFee} wei per gas) passes the network's maxFeePerGasCap (${cap}): no more bumps` };
    maxFee = cap;
  }
  const signed = await account.signTransaction({
    type: 'eip1559',
    chainId: s.chainId,
    nonce: row.nonce,
    to: old.to!,
    value: old.value ?? 0n,
    ...(old.data && old.data !== '0x' ? { data: old.data } : {}),
    gas: old.gas!,
    maxFeePerGas: maxFee,
    maxPriorityFeePerGas: priority,
  });
  const replacement = keccak256(signed).toLowerCase();
  await db.evmBroadcast.create({
    data: {
      txHash: replacement,
      networkId: network.id,
      assetNetworkId: row.assetNetworkId,
      fromAddress: row.fromAddress,
      nonce: row.nonce,
      toAddress: row.toAddress,
      amount: row.amount,
      organizationId: row.organizationId,
      signedTransaction: signed.toLowerCase(),
      broadcastAt: now,
      replacesTxHash: row.txHash,
    },
  });
  return { txHash: replacement };
}

async function sendRecorded(db: Db, network: NetworkRef, txHash: string): Promise<{ sent: true } | { refused: string }> {
  const row = await db.evmBroadcast.findUnique({ where: { txHash: txHash.toLowerCase() } });
  if (!row?.signedTransaction || row.networkId !== network.id) return { refused: 'no recorded transaction with this hash' };
  const client = await checkedClientOf(network.id);
  try {
    await client.sendRawTransaction({ serializedTransaction: row.signedTransaction as Hex });
    return { sent: true };
  } catch (e) {
    const why = shortMessage(e);
    if (/already known|known transaction/i.test(why)) return { sent: true };
    // A bump the node refuses (underpriced, nonce mined) and does not hold never reached the chain: its record goes.
    if (row.replacesTxHash && !(await pendingInPool(client, row.txHash)) && !(await receiptOf(client, row.txHash)))
      await db.evmBroadcast.deleteMany({ where: { txHash: row.txHash } });
    return { refused: why };
  }
}
