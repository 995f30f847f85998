import { z } from 'zod';
import type { Context, Deps } from '../context';
import { Prisma, type Db } from '../db/prisma';
import { DomainError, fieldError, invalidState, notFound, uniqueConflict } from '../errors';
import { isUniqueViolation, isUuid, monotonicUuidv7 } from '../ids';
import { audit, type AuditInput } from '../audit/audit';
import { emitEvent } from '../webhooks/outbox';
import { webhookEvent, type WebhookEventData } from '../webhooks/events';
import { adapterFor, networkRef, type DerivedAddress, type NetworkRef } from '../chains/adapter';
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
  const made = await deriveAndInsert(
    tx,
    deps,
    { organizationId: args.organizationId, applicationId: args.applicationId, paymentIntentId },
    wallet,
    assetNetwork,
  );
  await emitEvent(tx, deps, args.organizationId, made.event);
  if (ctx) await audit(tx, ctx, made.audit);
  return made.address;
}

type WalletRow = Prisma.WalletGetPayload<object>;
/** What an allocation reads of an asset-network and its network (a full row with its network is one). */
export type AssetNetworkWithNetwork = Pick<Prisma.AssetNetworkGetPayload<object>, 'id' | 'networkId' | 'status'> & {
  network: Pick<Prisma.NetworkGetPayload<object>, 'id' | 'kind' | 'requiredConfirmations'>;
};

type DepositAddressRow = Prisma.DepositAddressGetPayload<object>;

/** A deposit address may be derived from `wallet` for `assetNetwork`: on the wallet's network, the asset-network taking new addresses. */
function checkAddressable(wallet: Pick<WalletRow, 'networkId'>, assetNetwork: AssetNetworkWithNetwork): void {
  if (assetNetwork.networkId !== wallet.networkId) throw fieldError('assetNetworkId', "must be on the wallet's network");
  if (!statusAllows.addressAllocation(assetNetwork.status)) throw invalidState(`The asset-network is ${assetNetwork.status}: no new deposit addresses.`);
}

/**
 * The address at `derivationIndex` of `wallet` for a payment intent (pure: the derivation is CPU,
 * nothing is read or written): the DepositAddress row to insert, the `deposit.address_generated`
 * event and the audit entry.
 */
function derivedAddress(
  deps: Deps,
  args: { organizationId: string; applicationId: string; paymentIntentId: string },
  wallet: Pick<WalletRow, 'id' | 'curve' | 'publicKey'>,
  assetNetwork: AssetNetworkWithNetwork,
  derivationIndex: number,
  /** The address at `derivationIndex` of `wallet` on this network when derived already (with its group: deriveIntentAddresses). */
  derivedBefore?: DerivedAddress,
): { row: DepositAddressRow; event: WebhookEventData; audit: AuditInput } {
  const { paymentIntentId } = args;
  const assetNetworkId = assetNetwork.id;
  const network = networkRef(assetNetwork.network);
  const derived = derivedBefore ?? adapterFor(network.kind).deriveAddress(network, { curve: wallet.curve, publicKey: wallet.publicKey }, derivationIndex);
  const now = deps.clock.now();
  const row: DepositAddressRow = {
    // Increasing in creation order within this process, as Prisma's uuid(7) default made them (the sync pages addresses by id).
    id: monotonicUuidv7(now.getTime()),
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
  };
  return {
    row,
    event: webhookEvent('deposit.address_generated', { PaymentIntentId: paymentIntentId, Address: row.address, AssetNetworkId: assetNetworkId }),
    audit: {
      organizationId: args.organizationId,
      entityType: 'DepositAddress',
      entityId: row.id,
      action: 'deposit_address.allocated',
      after: { address: row.address, walletId: wallet.id, derivationIndex, assetNetworkId, paymentIntentId },
    },
  };
}

/**
 * The address of a payment intent that has none, from `wallet` on `assetNetwork` (both read by the
 * caller, the intent checked by it): the wallet's next index (its row lock, taken here, serializes
 * the wallet's derivations until the caller commits: each index is used once), the DepositAddress
 * row and PaymentIntent.depositAddressId. Answers the `deposit.address_generated` event and the
 * audit entry for the caller to write.
 */
async function deriveAndInsert(
  tx: Db,
  deps: Deps,
  args: { organizationId: string; applicationId: string; paymentIntentId: string },
  wallet: WalletRow,
  assetNetwork: AssetNetworkWithNetwork,
): Promise<{ address: AllocatedAddress; event: WebhookEventData; audit: AuditInput }> {
  checkAddressable(wallet, assetNetwork);
  // The wallet's row lock (the increment) serializes its derivations: each index is used once.
  const { nextAddressIndex } = await tx.wallet.update({
    where: { id: wallet.id },
    data: { nextAddressIndex: { increment: 1 } },
    select: { nextAddressIndex: true },
  });
  const made = derivedAddress(deps, args, wallet, assetNetwork, nextAddressIndex - 1);
  const row = await tx.depositAddress.create({ data: made.row });
  await tx.paymentIntent.update({ where: { id: args.paymentIntentId }, data: { depositAddressId: row.id, updatedAt: row.createdAt }, select: { id: true } });
  await adapterFor(assetNetwork.network.kind, tx).watchAddresses(networkRef(assetNetwork.network), [row.address]);
  return { address: shape(row), event: made.event, audit: made.audit };
}

/** The wallet's columns a reservation answers (never its sealed key). */
export type ReservedWallet = Pick<WalletRow, 'id' | 'organizationId' | 'applicationId' | 'environmentId' | 'networkId' | 'curve' | 'publicKey'>;

/**
 * The address of a payment intent being created (CreatePaymentIntent with a walletId), at the index
 * reserved for it, checked and derived without a statement: the caller inserts the row with the
 * intent, and writes the event and the audit entry with its own (issue 22).
 */
export function addressForNewIntent(
  deps: Deps,
  args: { organizationId: string; applicationId: string; environmentId: string; paymentIntentId: string },
  reserved: { wallet: ReservedWallet; derivationIndex: number; derived?: DerivedAddress },
  assetNetwork: AssetNetworkWithNetwork,
): { row: DepositAddressRow; event: WebhookEventData; audit: AuditInput } {
  const { wallet } = reserved;
  if (wallet.organizationId !== args.organizationId || wallet.applicationId !== args.applicationId) throw notFound('Wallet');
  if (args.environmentId !== wallet.environmentId) throw fieldError('walletId', "must be a wallet of the payment intent's environment");
  checkAddressable(wallet, assetNetwork);
  return derivedAddress(deps, args, wallet, assetNetwork, reserved.derivationIndex, reserved.derived);
}

/**
 * The addresses of a group of intents being created (issue 22, point 1), derived together before
 * they are checked one by one: per network, one adapter.deriveAddresses (one field inversion for
 * all, instead of one per address). Pure CPU; an item without a wallet or a network answers
 * undefined. When a network's derivation throws (no adapter for it, a wallet of another curve, an index
 * invalid for its key), its items answer undefined: each derives alone then (addressForNewIntent)
 * and only the one at fault gets its error.
 */
export function deriveIntentAddresses(
  items: readonly ({ network: NetworkRef; wallet: Pick<ReservedWallet, 'curve' | 'publicKey'>; derivationIndex: number } | null)[],
): (DerivedAddress | undefined)[] {
  const out: (DerivedAddress | undefined)[] = items.map(() => undefined);
  const byNetwork = new Map<string, { item: NonNullable<(typeof items)[number]>; i: number }[]>();
  items.forEach((item, i) => {
    if (!item) return;
    const group = byNetwork.get(item.network.id) ?? [];
    group.push({ item, i });
    byNetwork.set(item.network.id, group);
  });
  for (const group of byNetwork.values()) {
    try {
      const derived = adapterFor(group[0]!.item.network.kind).deriveAddresses(
        group[0]!.item.network,
        group.map(({ item }) => ({ wallet: item.wallet, index: item.derivationIndex })),
      );
      group.forEach(({ i }, j) => (out[i] = derived[j]));
    } catch {
      // Each derives alone (and the one at fault fails alone).
    }
  }
  return out;
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
