import type { Db } from '../db/prisma';
import type { Network } from '../generated/prisma/client';
import type { Amount } from '../money';
import { adapterFor, networkRef } from '../chains/adapter';
import type { MoneyDeps } from '../kernel/service';
import { hotAddressFor, signFromControlledAddress } from './treasury';

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
