import { z } from 'zod';
import type { Context, Deps } from '../context';
import type { Db } from '../db/prisma';
import { DomainError, fieldError, invalidState, notFound, uniqueConflict } from '../errors';
import { isUniqueViolation, isUuid } from '../ids';
import { audit } from '../audit/audit';
import { emitEvent } from '../webhooks/outbox';
import { webhookEvent } from '../webhooks/events';
import { adapterFor, networkRef } from '../chains/adapter';
import { statusAllows } from '../catalog/catalog';
import { loadCallerApplication, loadWallet } from './wallets';

/**
 * Deposit addresses. One per payment intent, derived from a wallet's root at the wallet's next
 * index (deterministic: the same wallet and index always give the same address), never handed out
 * twice on a network (so never to two organizations) and never reused by another payment intent:
 * the unique constraints (networkId, address), (walletId, derivationIndex) and (paymentIntentId)
 * hold it in the database.
 */

export interface AllocatedAddress {
  id: string;
  address: string;
  networkId: string;
  assetNetworkId: string;
  walletId: string;
  paymentIntentId: string;
  derivationIndex: number;
  publicKey: string;
  createdAt: Date;
}

export const allocateInput = z.object({
  walletId: z.string(),
  assetNetworkId: z.string(),
  paymentIntentId: z.string(),
});

const shape = (r: {
  id: string;
  address: string;
  networkId: string;
  assetNetworkId: string;
  walletId: string;
  paymentIntentId: string | null;
  derivationIndex: number;
  publicKey: string;
  createdAt: Date;
}): AllocatedAddress => ({
  id: r.id,
  address: r.address,
  networkId: r.networkId,
  assetNetworkId: r.assetNetworkId,
  walletId: r.walletId,
  paymentIntentId: r.paymentIntentId!,
  derivationIndex: r.derivationIndex,
  publicKey: r.publicKey,
  createdAt: r.createdAt,
});

/**
 * Allocates the deposit address of a payment intent, inside the caller's transaction: the address,
 * PaymentIntent.depositAddressId and the `deposit.address_generated` event commit together (and the
 * audit entry, when `ctx` is given). A payment intent that has its address already gets that same
 * address back (idempotent), whatever its status; otherwise it must be AWAITING_PAYMENT, and the
 * asset-network ENABLED and on the wallet's network.
 *
 * Errors: payment intent or wallet not of this organization and application (or, with
 * `environmentId`, not of that environment): 404; an address from another wallet or asset-network
 * already: 409; payment intent not AWAITING_PAYMENT or asset-network not ENABLED: 409; the
 * asset-network not the payment intent's, or not on the wallet's network, or the wallet of another
 * environment: 400.
 */
export async function allocateAddressInTx(
  tx: Db,
  deps: Deps,
  args: { organizationId: string; applicationId: string; walletId: string; assetNetworkId: string; paymentIntentId: string; environmentId?: string },
  ctx?: Context,
): Promise<AllocatedAddress> {
  if (!isUuid(args.paymentIntentId)) throw notFound('PaymentIntent');
  if (!isUuid(args.walletId)) throw notFound('Wallet');
  if (!isUuid(args.assetNetworkId)) throw fieldError('assetNetworkId', 'must be the id of an asset-network of the catalog');
  const paymentIntentId = args.paymentIntentId.toLowerCase();
  const assetNetworkId = args.assetNetworkId.toLowerCase();
  // The payment intent's row lock serializes allocations for it: one address, ever.
  const [pi] = await tx.$queryRaw<
    {
      id: string;
      organizationId: string;
      applicationId: string;
      environmentId: string;
      assetNetworkId: string;
      status: string;
      depositAddressId: string | null;
    }[]
  >`SELECT "id", "organizationId", "applicationId", "environmentId", "assetNetworkId", "status"::text AS "status", "depositAddressId"
    FROM "PaymentIntent" WHERE "id" = ${paymentIntentId}::uuid FOR UPDATE`;
  if (
    !pi ||
    pi.organizationId !== args.organizationId ||
    pi.applicationId !== args.applicationId ||
    (args.environmentId !== undefined && pi.environmentId !== args.environmentId)
  )
    throw notFound('PaymentIntent');
  const wallet = await tx.wallet.findUnique({ where: { id: args.walletId.toLowerCase() } });
  if (!wallet || wallet.organizationId !== args.organizationId || wallet.applicationId !== args.applicationId) throw notFound('Wallet');

  if (pi.depositAddressId) {
    const existing = await tx.depositAddress.findUniqueOrThrow({ where: { id: pi.depositAddressId } });
    if (existing.walletId !== wallet.id || existing.assetNetworkId !== assetNetworkId)
      throw new DomainError('CONFLICT', 'The payment intent has its deposit address already, from another wallet or asset-network.');
    return shape(existing);
  }
  if (pi.status !== 'AWAITING_PAYMENT') throw invalidState(`Only a payment intent AWAITING_PAYMENT gets a deposit address; this one is ${pi.status}.`);
  if (pi.environmentId !== wallet.environmentId) throw fieldError('walletId', "must be a wallet of the payment intent's environment");
  if (pi.assetNetworkId !== assetNetworkId) throw fieldError('assetNetworkId', "must be the payment intent's asset-network");
  const assetNetwork = await tx.assetNetwork.findUnique({ where: { id: assetNetworkId }, include: { network: true } });
  if (!assetNetwork) throw fieldError('assetNetworkId', 'must be the id of an asset-network of the catalog');
  if (assetNetwork.networkId !== wallet.networkId) throw fieldError('assetNetworkId', "must be on the wallet's network");
  if (!statusAllows.addressAllocation(assetNetwork.status)) throw invalidState(`The asset-network is ${assetNetwork.status}: no new deposit addresses.`);

  // The wallet's row lock (the increment) serializes its derivations: each index is used once.
  const { nextAddressIndex } = await tx.wallet.update({
    where: { id: wallet.id },
    data: { nextAddressIndex: { increment: 1 } },
    select: { nextAddressIndex: true },
  });
  const derivationIndex = nextAddressIndex - 1;
  const network = networkRef(assetNetwork.network);
  const adapter = adapterFor(network.kind, tx);
  const derived = adapter.deriveAddress(network, { curve: wallet.curve, publicKey: wallet.publicKey }, derivationIndex);
  const now = deps.clock.now();
  const row = await tx.depositAddress.create({
    data: {
      organizationId: args.organizationId,
      applicationId: args.applicationId,
      walletId: wallet.id,
      networkId: network.id,
      assetNetworkId,
      address: derived.address,
      derivationIndex,
      publicKey: derived.publicKey,
      paymentIntentId,
      createdAt: now,
    },
  });
  await tx.paymentIntent.update({ where: { id: paymentIntentId }, data: { depositAddressId: row.id, updatedAt: now } });
  await adapter.watchAddresses(network, [row.address]);
  await emitEvent(
    tx,
    deps,
    args.organizationId,
    webhookEvent('deposit.address_generated', { PaymentIntentId: paymentIntentId, Address: row.address, AssetNetworkId: assetNetworkId }),
  );
  if (ctx)
    await audit(tx, ctx, {
      organizationId: args.organizationId,
      entityType: 'DepositAddress',
      entityId: row.id,
      action: 'deposit_address.allocated',
      after: { address: row.address, walletId: wallet.id, derivationIndex, assetNetworkId, paymentIntentId },
    });
  return shape(row);
}

/** AllocateDepositAddress: checks the caller, then allocates in a transaction of its own. */
export async function allocateDepositAddress(ctx: Context, applicationIdArg: string, input: z.infer<typeof allocateInput>): Promise<AllocatedAddress> {
  const app = await loadCallerApplication(ctx, applicationIdArg);
  // As every other creation under a suspended or archived application (issue 26).
  if (app.status !== 'ACTIVE') throw invalidState(`The application is ${app.status.toLowerCase()}: no new deposit addresses.`);
  const wallet = await loadWallet(ctx, input.walletId);
  if (wallet.applicationId !== app.id) throw notFound('Wallet');
  const p = ctx.principal;
  try {
    return await ctx.deps.db.$transaction((tx) =>
      allocateAddressInTx(
        tx,
        ctx.deps,
        {
          organizationId: app.organizationId,
          applicationId: app.id,
          walletId: wallet.id,
          assetNetworkId: input.assetNetworkId,
          paymentIntentId: input.paymentIntentId,
          ...(p?.type === 'apiKey' ? { environmentId: p.environmentId } : {}),
        },
        ctx,
      ),
    );
  } catch (e) {
    if (isUniqueViolation(e)) throw uniqueConflict(e, 'The address was allocated meanwhile; retry.');
    throw e;
  }
}
