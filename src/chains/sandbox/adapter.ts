import { numericToAmount } from '../../money';
import { DomainError } from '../../errors';
import { poolQuery, type Db, type PrismaClient } from '../../db/prisma';
import type { AddressBalance, ChainChanges, DerivedAddress, FeeEstimate, NetworkAdapter, NetworkRef, ObservedTransfer } from '../adapter';
import { sha256 } from '@noble/hashes/sha2.js';
import * as keys from '../secp256k1';
import { lockNetwork, observe, sendTransaction, sendTransactions, spendableOf, tip, type ChainDeps, type SandboxTransactionRow } from './chain';

const TRANSACTIONS_SQL = `
  SELECT t.*, COALESCE((SELECT b."height" FROM "SandboxBlock" b WHERE b."networkId" = $1::uuid AND b."canonical" ORDER BY b."height" DESC LIMIT 1), 0) AS "tipHeight"
    FROM "SandboxTransaction" t WHERE t."networkId" = $1::uuid AND t."txHash" = ANY($2::text[])`;

/** A raw read: straight on the pool when `d` is a client of createPrisma (no query engine), else through `d` (a transaction's). */
async function rowsOf<R extends object>(d: Db, text: string, values: unknown[]): Promise<R[]> {
  const pooled = poolQuery<R>(d, text, values);
  return pooled ? (await pooled).rows : d.$queryRawUnsafe<R[]>(text, ...values);
}

/**
 * The NetworkAdapter of SANDBOX networks: keys and addresses as on an EVM chain (secp256k1, keccak
 * addresses, src/chains/secp256k1.ts); the chain itself is the PostgreSQL-persisted sandbox chain
 * (src/chains/sandbox/chain.ts). Reads go through the database handle it was made with.
 */
export function sandboxAdapter(db?: Db, deps?: ChainDeps): NetworkAdapter {
  const database = (): Db => {
    if (!db) throw new Error("the sandbox adapter reads the chain through a database handle: adapterFor('SANDBOX', db)");
    return db;
  };
  return {
    kind: 'SANDBOX',
    ...keys.secp256k1KeyOps,
    deriveAddress(_network: NetworkRef, wallet: { curve: string; publicKey: string }, index: number): DerivedAddress {
      return keys.secp256k1KeyOps.deriveChildWithAddress('sandbox', wallet, index);
    },
    deriveAddresses: (_network, pairs) => keys.secp256k1KeyOps.deriveChildrenWithAddress('sandbox', pairs),
    validateAddress: (address) => keys.ADDRESS_PATTERN.test(address),
    signTransfer: async (_network, payload, privateKey) => keys.signTransfer(payload, privateKey),
    async signingRequest(_network, payload) {
      const canonical = keys.canonicalTransferJson(payload);
      return { payload: { ...payload }, canonical, digest: keys.bytesToHex(sha256(new TextEncoder().encode(canonical))) };
    },
    async assembleSigned(_network, request, signature) {
      const signed = JSON.stringify({ payload: request.payload, signature });
      keys.verifySignedTransfer(signed); // RangeError when it does not verify
      return signed;
    },
    // The sandbox chain is in our own database: every address is watched already.
    async watchAddresses() {},
    async blockHeight(network) {
      return (await tip(database(), network.id)).height;
    },
    async transfersTo(network, addresses): Promise<ObservedTransfer[]> {
      if (!addresses.length) return [];
      const d = database();
      const { height } = await tip(d, network.id);
      // Raw (issue 22): a sync chunk's read, also on a connection of poolTransaction; the model's columns and types.
      const rows = await d.$queryRaw<SandboxTransactionRow[]>`
        SELECT * FROM "SandboxTransaction" WHERE "networkId" = ${network.id}::uuid AND "toAddress" = ANY(${addresses}::text[])
         ORDER BY "createdAt", "id"`;
      return rows.map((r) => observe(r, height));
    },
    async changedSince(network, cursor): Promise<ChainChanges> {
      const d = database();
      const now = await tip(d, network.id);
      let from = cursor?.height ?? 0;
      // The block the cursor saw was orphaned by a reorganization: from its first canonical ancestor.
      for (let hash = cursor?.hash ?? null; hash;) {
        // Raw (issue 22): a sync's read, also on the pool's RawDb (no Prisma model there).
        const [b] = await d.$queryRaw<{ height: number; parentHash: string | null; canonical: boolean }[]>`
          SELECT "height", "parentHash", "canonical" FROM "SandboxBlock" WHERE "hash" = ${hash}`;
        if (!b || b.canonical) break;
        from = Math.min(from, b.height - 1);
        hash = b.parentHash;
      }
      const rows = await d.$queryRaw<{ toAddress: string }[]>`
        SELECT DISTINCT "toAddress" FROM "SandboxTransaction"
         WHERE "networkId" = ${network.id}::uuid AND ("blockHeight" >= ${from} OR "status" IN ('PENDING', 'ORPHANED'))`;
      return { tip: now, from, addresses: rows.map((r) => r.toAddress) };
    },
    async transactions(network, txHashes) {
      const d = database();
      const out = new Map<string, ObservedTransfer>();
      if (!txHashes.length) return out;
      // Raw, with the tip, in one statement (issue 22: every chain.sync follows the network's BROADCAST
      // withdrawals with it); straight on the pool when the handle is the client.
      const rows = await rowsOf<SandboxTransactionRow & { tipHeight: number }>(d, TRANSACTIONS_SQL, [network.id, [...new Set(txHashes)]]);
      for (const row of rows) out.set(row.txHash, observe(row, row.tipHeight));
      return out;
    },
    async transaction(network, txHash) {
      const d = database();
      const row = await d.sandboxTransaction.findUnique({ where: { txHash } });
      if (!row || row.networkId !== network.id) return null;
      return observe(row, (await tip(d, network.id)).height);
    },
    /**
     * Accepts a signed transfer (src/chains/secp256k1.ts `signTransfer`): verified, then PENDING in the
     * mempool (and a chain.sync queued when the adapter was given the job runner), recorded as sent by
     * `organizationId`. Refused, with nothing written: a bad signature, another network, or more than
     * the sender's mined balance less what it already has pending.
     */
    async broadcast(network, signedTransaction, organizationId) {
      if (!deps) throw new Error("broadcasting needs the clock (and the job runner): adapterFor('SANDBOX', db, deps)");
      const d = database();
      const p = keys.verifySignedTransfer(signedTransaction);
      if (p.networkId !== network.id) throw new RangeError('the transfer is signed for another network');
      const amount = BigInt(p.amount);
      // In the caller's transaction, or one of its own: the balance check and the insert hold the network lock together.
      const inTx = <T>(f: (tx: Db) => Promise<T>): Promise<T> => ('$transaction' in d ? (d as PrismaClient).$transaction(f) : f(d));
      return inTx(async (d) => {
        await lockNetwork(d, network.id);
        const spendable = await spendableOf(d, { networkId: network.id, assetNetworkId: p.assetNetworkId, address: p.fromAddress });
        if (spendable < amount) throw new RangeError(`insufficient funds: ${p.fromAddress} can spend ${spendable}, not ${amount}`);
        try {
          const row = await sendTransaction(d, deps, {
            networkId: network.id,
            assetNetworkId: p.assetNetworkId,
            fromAddress: p.fromAddress,
            toAddress: p.toAddress,
            amount,
            replaceable: true,
            revert: false,
            senderOrganizationId: organizationId,
          });
          return { txHash: row.txHash };
        } catch (e) {
          // The chain refusing the transfer (the recipient would hold more than 2^256 - 1): a network refusal, as for funds.
          if (e instanceof DomainError && e.code === 'INVALID_STATE') throw new RangeError(e.message);
          throw e;
        }
      });
    },
    /**
     * A broadcast group (issue 22), in the caller's transaction: every transfer verified, then under
     * one network lock each sender's spendable balance read once and spent in list order in memory (a
     * transfer beyond it is refused alone, as `broadcast` refuses it), and the accepted ones sent
     * together (sendTransactions, the one send path: consecutive nonces in list order, one chain.sync job).
     */
    async broadcastMany(network, items) {
      if (!deps) throw new Error("broadcasting needs the clock (and the job runner): adapterFor('SANDBOX', db, deps)");
      const d = database();
      const payloads = items.map((i) => keys.verifySignedTransfer(i.signedTransaction));
      await lockNetwork(d, network.id);
      const spendable = new Map<string, bigint>();
      const key = (assetNetworkId: string, address: string) => `${assetNetworkId} ${address}`;
      for (const assetNetworkId of new Set(payloads.map((p) => p.assetNetworkId))) {
        const from = payloads.filter((p) => p.assetNetworkId === assetNetworkId).map((p) => p.fromAddress);
        for (const [address, b] of await sandboxAdapter(d, deps).balances(network, assetNetworkId, from))
          spendable.set(key(assetNetworkId, address), b.spendable);
      }
      const out: ({ txHash: string } | RangeError)[] = new Array(items.length);
      const accepted: number[] = [];
      for (const [i, p] of payloads.entries()) {
        if (p.networkId !== network.id) {
          out[i] = new RangeError('the transfer is signed for another network');
          continue;
        }
        const k = key(p.assetNetworkId, p.fromAddress);
        const can = spendable.get(k)!;
        const amount = BigInt(p.amount);
        if (can < amount) {
          out[i] = new RangeError(`insufficient funds: ${p.fromAddress} can spend ${can}, not ${amount}`);
          continue;
        }
        spendable.set(k, can - amount);
        accepted.push(i);
      }
      const sent = await sendTransactions(
        d,
        deps,
        network.id,
        accepted.map((i) => ({
          assetNetworkId: payloads[i]!.assetNetworkId,
          fromAddress: payloads[i]!.fromAddress,
          toAddress: payloads[i]!.toAddress,
          amount: BigInt(payloads[i]!.amount),
          replaceable: true,
          revert: false,
          senderOrganizationId: items[i]!.organizationId,
        })),
      );
      for (const [j, i] of accepted.entries()) {
        const r = sent[j]!;
        // The chain refusing the transfer (the recipient would hold more than 2^256 - 1): a network refusal, as for funds.
        out[i] = r instanceof Error ? (r instanceof RangeError ? r : new RangeError(r.message)) : { txHash: r.txHash };
      }
      return out;
    },
    /**
     * Mined: the chain's balance rows (canonical mined transactions). Spendable: mined less the
     * address's PENDING and ORPHANED outgoing transfers, as `broadcast` checks it. Two queries for
     * any number of addresses.
     */
    async balances(network, assetNetworkId, addresses): Promise<Map<string, AddressBalance>> {
      const out = new Map<string, AddressBalance>();
      const wanted = [...new Set(addresses)];
      for (const a of wanted) out.set(a, { mined: 0n, spendable: 0n });
      if (!wanted.length) return out;
      // One raw statement (issue 22: read by every broadcast group, in its transaction).
      const rows = await database().$queryRaw<{ address: string; mined: string; pending: string }[]>`
        SELECT w."address", COALESCE(b."balance", 0)::text AS "mined",
               COALESCE((SELECT sum(t."amount") FROM "SandboxTransaction" t
                          WHERE t."networkId" = ${network.id}::uuid AND t."assetNetworkId" = ${assetNetworkId}::uuid AND t."fromAddress" = w."address"
                            AND t."status" IN ('PENDING', 'ORPHANED')), 0)::text AS "pending"
          FROM unnest(${wanted}::text[]) AS w("address")
          LEFT JOIN "SandboxAddressBalance" b ON b."networkId" = ${network.id}::uuid AND b."assetNetworkId" = ${assetNetworkId}::uuid AND b."address" = w."address"`;
      for (const r of rows) {
        const mined = BigInt(r.mined);
        out.set(r.address, { mined, spendable: mined - BigInt(r.pending) });
      }
      return out;
    },
    async estimateFee(): Promise<FeeEstimate> {
      // A flat, deterministic cost: 21,000 gas at 1 base unit each.
      return { fee: 21_000n, resources: { gas: 21_000n } };
    },
  };
}
