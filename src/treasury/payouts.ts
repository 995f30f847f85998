import type { Db } from '../db/prisma';
import type { Network } from '../generated/prisma/client';
import type { Amount } from '../money';
import { adapterFor, networkRef } from '../chains/adapter';
import type { MoneyDeps } from '../kernel/service';
import { cachedControlledPrivateKey, hotAddressesFor, hotAddressFor, pickHotAddress, signFromControlledAddress } from './treasury';

/**
 * Sends the platform's outgoing transfer (an organization's withdrawal, refund) from the treasury: the HOT,
 * GENERATED, active controlled address of the asset-network with the largest spendable balance
 * that covers the amount (docs/treasury.md). Call it in the transaction that records the send.
 *
 * Answers the broadcast transfer, or `{ refused }` with why when no HOT address covers the amount or
 * the network refuses the transfer (the adapter re-checks the balance under the network lock, so a
 * concurrent payer may have taken it): the caller falls back to another source or retries later.
 */
export async function sendFromTreasury(
  tx: Db,
  deps: Pick<MoneyDeps, 'clock' | 'boss' | 'sealingKey'>,
  network: Network,
  t: { assetNetworkId: string; toAddress: string; amount: Amount; nonce: string; organizationId: string },
): Promise<{ txHash: string; fromAddress: string; controlledAddressId: string } | { refused: string }> {
  const hot = await hotAddressFor(tx, t.assetNetworkId, t.amount);
  if (!hot) return { refused: `no HOT treasury address can send ${t.amount}` };
  const signed = await signFromControlledAddress(tx, deps, hot.id, t);
  try {
    const { txHash } = await adapterFor(network.kind, tx, { clock: deps.clock, boss: deps.boss }).broadcast(networkRef(network), signed, t.organizationId);
    return { txHash, fromAddress: hot.address, controlledAddressId: hot.id };
  } catch (e) {
    if (e instanceof RangeError) return { refused: `the HOT treasury address ${hot.address}: ${e.message}` };
    throw e;
  }
}

export type TreasuryTransfer = { toAddress: string; amount: Amount; nonce: string; organizationId: string };

/**
 * sendFromTreasury for a group of transfers of one asset-network (a broadcast group, issue 22), in
 * the transaction that records them: the HOT addresses and their spendable balances read once; each
 * transfer, in list order, takes the address with the largest spendable balance left that covers it
 * (as sendFromTreasury called for each in turn would) and is signed with that address's key
 * (unsealed and derived once per address and kept in memory: cachedControlledPrivateKey); the signed ones are broadcast together (the adapter's
 * broadcastMany: one network lock, set-based inserts; else one by one). Each answers its transfer or
 * why it was refused (`{ refused }`: the caller falls back to another source or retries later).
 */
export async function sendGroupFromTreasury(
  tx: Db,
  deps: Pick<MoneyDeps, 'clock' | 'boss' | 'sealingKey'>,
  network: Network,
  assetNetworkId: string,
  transfers: readonly TreasuryTransfer[],
): Promise<({ txHash: string; fromAddress: string; controlledAddressId: string } | { refused: string })[]> {
  if (!transfers.length) return [];
  if (!deps.sealingKey) throw new Error('signing from a controlled address needs the sealing key (deps.sealingKey)');
  const candidates = (await hotAddressesFor(tx, assetNetworkId, network)) ?? [];
  const adapter = adapterFor(network.kind, tx, { clock: deps.clock, boss: deps.boss });
  const ref = networkRef(network);
  const out: ({ txHash: string; fromAddress: string; controlledAddressId: string } | { refused: string })[] = new Array(transfers.length);
  const answer = (i: number, hot: (typeof candidates)[number], r: { txHash: string } | RangeError) => {
    out[i] =
      r instanceof RangeError
        ? { refused: `the HOT treasury address ${hot.address}: ${r.message}` }
        : { txHash: r.txHash, fromAddress: hot.address, controlledAddressId: hot.id };
  };
  const signed: { i: number; hot: (typeof candidates)[number]; signedTransaction: string }[] = [];
  for (const [i, t] of transfers.entries()) {
    const hot = t.amount > 0n ? pickHotAddress(candidates, t.amount) : null;
    if (!hot) {
      out[i] = { refused: `no HOT treasury address can send ${t.amount}` };
      continue;
    }
    hot.spendable -= t.amount;
    const key = cachedControlledPrivateKey(deps.sealingKey, hot.row);
    const payload = {
      networkId: hot.networkId,
      assetNetworkId,
      fromAddress: hot.address,
      fromPublicKey: hot.publicKey,
      toAddress: t.toAddress,
      amount: t.amount.toString(),
      nonce: t.nonce,
    };
    const signedTransaction = await adapter.signTransfer(ref, payload, key);
    if (adapter.broadcastMany) {
      signed.push({ i, hot, signedTransaction });
      continue;
    }
    // No group broadcast (EVM): each is sent before the next is signed (the sender's nonce is the chain's next).
    try {
      answer(i, hot, await adapter.broadcast(ref, signedTransaction, t.organizationId));
    } catch (e) {
      if (!(e instanceof RangeError)) throw e;
      answer(i, hot, e);
    }
  }
  if (adapter.broadcastMany && signed.length) {
    const sent = await adapter.broadcastMany(
      ref,
      signed.map((s) => ({ signedTransaction: s.signedTransaction, organizationId: transfers[s.i]!.organizationId })),
    );
    for (const [j, s] of signed.entries()) answer(s.i, s.hot, sent[j]!);
  }
  return out;
}
