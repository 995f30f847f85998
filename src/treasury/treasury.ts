import { z } from 'zod';
import type { Context } from '../context';
import type { Db } from '../db/prisma';
import type { ControlledAddress, Network, TreasuryLiquidityPolicy } from '../generated/prisma/client';
import type { NetworkKind, TreasuryTier } from '../generated/prisma/enums';
import { DomainError, fieldError, invalidState, notFound } from '../errors';
import { assertId, isUniqueViolation, isUuid, uuidv7 } from '../ids';
import { amountToString, numericToAmount, type Amount, amountText } from '../money';
import { seal, unseal } from '../auth/secrets';
import { auditAs } from '../audit/audit';
import { requestActor, TX_OPTIONS, type MoneyDeps } from '../kernel/service';
import { adapterFor, hasAdapter, networkRef } from '../chains/adapter';
import * as secp from '../chains/secp256k1';
import { normalizeAddress } from '../chains/address';

/**
 * Treasury (docs/treasury.md): the addresses the platform controls on each network (HOT, WARM and
 * COLD tiers, as BitGo and Fireblocks wallets are tiered), the overview of customer liabilities
 * against the assets held on chain, the liquidity policy per asset-network and the rebalance plan
 * computed from it. Sweeps are in ./sweeps.ts. Every operation is for platform operators.
 */

export const TIERS: readonly TreasuryTier[] = ['HOT', 'WARM', 'COLD'];

const uuid = (what: string) =>
  z
    .string()
    .refine(isUuid, `must be ${what} (uuid)`)
    .transform((s) => s.toLowerCase());

function parseInput<T extends z.ZodTypeAny>(schema: T, input: unknown): z.infer<T> {
  const parsed = schema.safeParse(input ?? {});
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    throw fieldError(i.path.map(String).join('.') || '(input)', i.message);
  }
  return parsed.data;
}

function operatorId(ctx: Context): string {
  const p = ctx.principal;
  if (p?.type !== 'operator') throw new DomainError('PRINCIPAL_NOT_ALLOWED', 'Platform operators only.');
  return p.operatorId;
}

// ------------------------------------------------------------------------------------------------
// Chain balances

/**
 * The balance of addresses on the chain (base units), read through the network's adapter
 * (NetworkAdapter.balances): `mined`, the canonical mined balance; and what can still be sent
 * (`spendable`: mined less what the address has pending in the mempool, as the adapter's broadcast
 * checks it). Every address asked is in the map. Null (unknown) when this version has no adapter
 * for the network's kind. Reads go through `db`: pass the transaction you work in.
 */
export async function chainBalances(
  db: Db,
  network: Network,
  assetNetworkId: string,
  addresses: readonly string[],
): Promise<Map<string, { mined: Amount; spendable: Amount }> | null> {
  if (!hasAdapter(network.kind)) return null;
  return adapterFor(network.kind, db).balances(networkRef(network), assetNetworkId, addresses);
}

/**
 * The sum of the mined balances of every deposit address of an asset-network, through the adapter
 * (null: unknown, no adapter for the network). O(deposit addresses): the addresses are listed and
 * their balances read in one adapter call; a large production would keep a running total instead.
 */
async function depositAddressHoldings(db: Db, network: Network, assetNetworkId: string): Promise<Amount | null> {
  if (!hasAdapter(network.kind)) return null;
  const addresses = (await db.depositAddress.findMany({ where: { networkId: network.id, assetNetworkId }, select: { address: true } })).map((a) => a.address);
  if (!addresses.length) return 0n;
  const balances = await adapterFor(network.kind, db).balances(networkRef(network), assetNetworkId, addresses);
  let total = 0n;
  for (const b of balances.values()) total += b.mined;
  return total;
}

// ------------------------------------------------------------------------------------------------
// Controlled addresses

export interface ControlledAddressView {
  id: string;
  networkId: string;
  assetNetworkIds: string[];
  tier: TreasuryTier;
  control: 'GENERATED' | 'WATCH_ONLY';
  label: string;
  address: string;
  publicKey: string | null;
  active: boolean;
  deactivatedAt: Date | null;
  createdByOperatorId: string;
  createdAt: Date;
  updatedAt: Date;
  /** GetTreasuryControlledAddresses: the mined balance of the listed asset-network (null elsewhere, or unknown). */
  balance: string | null;
}

export const controlledAddressView = (r: ControlledAddress, balance: Amount | null = null): ControlledAddressView => ({
  id: r.id,
  networkId: r.networkId,
  assetNetworkIds: r.assetNetworkIds,
  tier: r.tier,
  control: r.control,
  label: r.label,
  address: r.address,
  publicKey: r.publicKey,
  active: r.active,
  deactivatedAt: r.deactivatedAt,
  createdByOperatorId: r.createdByOperatorId,
  createdAt: r.createdAt,
  updatedAt: r.updatedAt,
  balance: balance === null ? null : amountToString(balance),
});

export const registerControlledAddressInput = z
  .object({
    assetNetworkIds: z.array(uuid('an asset-network id')).min(1, 'name at least one asset-network').max(100),
    tier: z.enum(['HOT', 'WARM', 'COLD']),
    control: z.enum(['GENERATED', 'WATCH_ONLY']),
    label: z.string().trim().min(1, 'must not be empty').max(200),
    address: z.string().trim().min(1, 'must not be empty').max(200).nullish(),
  })
  .strict();

/** The sealed key's associated data: a ciphertext copied to another row does not open. */
export const controlledKeyAad = (id: string) => `controlled-address-key:${id}`;

/**
 * AdminRegisterControlledAddress. GENERATED: the service generates a secp256k1 root key pair, seals
 * its private key (as custodial wallet roots are sealed) and derives the address at index 0 with
 * the network's adapter; `address` must be omitted. WATCH_ONLY: `address` is required and validated
 * by the adapter; the service never sends from it. The asset-networks must all be on one network
 * with an adapter. 400 on any of these; 409 when the address is registered already on the network
 * or is a deposit address.
 */
export async function registerControlledAddress(ctx: Context, input: unknown): Promise<ControlledAddressView> {
  const opId = operatorId(ctx);
  const data = parseInput(registerControlledAddressInput, input);
  const assetNetworkIds = [...new Set(data.assetNetworkIds)].sort();
  const db = ctx.deps.db;
  const ans = await db.assetNetwork.findMany({ where: { id: { in: assetNetworkIds } }, include: { network: true } });
  if (ans.length !== assetNetworkIds.length) throw fieldError('assetNetworkIds', 'must all be asset-networks of the catalog');
  const network = ans[0]!.network;
  if (ans.some((a) => a.networkId !== network.id)) throw fieldError('assetNetworkIds', 'must all be on one network');
  if (!hasAdapter(network.kind)) throw fieldError('assetNetworkIds', `${network.kind} networks have no adapter in this version`);
  const adapter = adapterFor(network.kind);

  const id = uuidv7();
  let address: string;
  let key: { curve: string; rootPublicKey: string; derivationIndex: number; publicKey: string; sealedPrivateKey: Uint8Array<ArrayBuffer> } | null = null;
  if (data.control === 'GENERATED') {
    if (data.address != null) throw fieldError('address', 'must be omitted for a GENERATED address: the service generates its key');
    const pair = adapter.generateKeyPair();
    const derived = adapter.deriveAddress(networkRef(network), { curve: pair.curve, publicKey: pair.publicKey }, 0);
    key = {
      curve: pair.curve,
      rootPublicKey: pair.publicKey,
      derivationIndex: 0,
      publicKey: derived.publicKey,
      sealedPrivateKey: seal(ctx.deps.sealingKey, secp.bytesToHex(pair.privateKey), controlledKeyAad(id)),
    };
    pair.privateKey.fill(0);
    address = derived.address;
  } else {
    if (data.address == null) throw fieldError('address', 'required for a WATCH_ONLY address');
    address = normalizeAddress(network.kind, data.address);
    if (!adapter.validateAddress(address)) throw fieldError('address', `must be a valid ${network.kind} address (SANDBOX: 0x and 40 hex digits)`);
  }

  try {
    const row = await db.$transaction(async (tx) => {
      if (await tx.depositAddress.findFirst({ where: { networkId: network.id, address }, select: { id: true } }))
        throw new DomainError('CONFLICT', 'This address is a deposit address of an organization: it cannot be a treasury address.');
      if (await tx.controlledAddress.findFirst({ where: { networkId: network.id, address }, select: { id: true } }))
        throw new DomainError('CONFLICT', 'This address is registered already on this network.');
      const created = await tx.controlledAddress.create({
        data: {
          id,
          networkId: network.id,
          assetNetworkIds,
          tier: data.tier,
          control: data.control,
          label: data.label,
          address,
          ...(key ?? {}),
          createdByOperatorId: opId,
          createdAt: ctx.deps.clock.now(),
        },
      });
      await adapterFor(network.kind, tx).watchAddresses(networkRef(network), [address]);
      await auditAs(tx, ctx.deps, requestActor(ctx), {
        organizationId: null,
        entityType: 'ControlledAddress',
        entityId: id,
        action: 'treasury.controlled_address.registered',
        after: {
          networkId: network.id,
          assetNetworkIds,
          tier: data.tier,
          control: data.control,
          label: data.label,
          address,
          publicKey: key?.publicKey ?? null,
        },
      });
      return created;
    });
    return controlledAddressView(row);
  } catch (e) {
    if (isUniqueViolation(e)) throw new DomainError('CONFLICT', 'This address is registered already on this network.');
    throw e;
  }
}

export async function loadControlledAddress(ctx: Context, idArg: unknown, db: Db = ctx.deps.db): Promise<ControlledAddress> {
  const id = assertId(idArg, 'ControlledAddress');
  if (ctx.principal?.type !== 'operator') throw notFound('ControlledAddress');
  const row = await db.controlledAddress.findUnique({ where: { id } });
  if (!row) throw notFound('ControlledAddress');
  return row;
}

/** Deactivates a controlled address (idempotent): no new sweeps, withdrawals or plans use it; its history stays. */
export async function deactivateControlledAddress(ctx: Context, idArg: unknown): Promise<ControlledAddressView> {
  operatorId(ctx);
  const id = assertId(idArg, 'ControlledAddress');
  const row = await ctx.deps.db.$transaction(async (tx) => {
    const [locked] = await tx.$queryRaw<{ id: string }[]>`SELECT "id" FROM "ControlledAddress" WHERE "id" = ${id}::uuid FOR UPDATE`;
    if (!locked) throw notFound('ControlledAddress');
    const current = await tx.controlledAddress.findUniqueOrThrow({ where: { id } });
    if (!current.active) return current;
    const updated = await tx.controlledAddress.update({ where: { id }, data: { active: false, deactivatedAt: ctx.deps.clock.now() } });
    await auditAs(tx, ctx.deps, requestActor(ctx), {
      organizationId: null,
      entityType: 'ControlledAddress',
      entityId: id,
      action: 'treasury.controlled_address.deactivated',
      before: { active: true },
      after: { active: false },
    });
    return updated;
  });
  return controlledAddressView(row);
}

async function loadAssetNetwork(db: Db, idArg: unknown) {
  const id = assertId(idArg, 'AssetNetwork');
  const an = await db.assetNetwork.findUnique({ where: { id }, include: { network: true, asset: { select: { code: true } } } });
  if (!an) throw notFound('AssetNetwork');
  return an;
}

/** GetTreasuryControlledAddresses: the addresses holding the asset-network (oldest first), each with its mined balance of it. */
export async function listControlledAddresses(
  ctx: Context,
  assetNetworkIdArg: unknown,
  activeOnly: boolean | null | undefined,
): Promise<ControlledAddressView[]> {
  operatorId(ctx);
  const db = ctx.deps.db;
  const an = await loadAssetNetwork(db, assetNetworkIdArg);
  const rows = await db.controlledAddress.findMany({
    where: { networkId: an.networkId, assetNetworkIds: { has: an.id }, ...(activeOnly ? { active: true } : {}) },
    orderBy: { id: 'asc' },
  });
  const balances = await chainBalances(
    db,
    an.network,
    an.id,
    rows.map((r) => r.address),
  );
  return rows.map((r) => controlledAddressView(r, balances ? balances.get(r.address)!.mined : null));
}

// ------------------------------------------------------------------------------------------------
// For other parts (withdrawals): a HOT address that can pay, and signing from it

export interface HotAddress {
  id: string;
  networkId: string;
  address: string;
  publicKey: string;
  /** What it can send now (mined balance less its pending transfers). */
  spendable: Amount;
}

/**
 * A HOT, GENERATED, active controlled address of the asset-network whose spendable chain balance
 * covers `amount`: the one with the largest spendable balance (ties: the oldest). Null when none
 * covers it (or the network has no balance read). Read in `tx`: call it in the transaction that
 * signs and broadcasts, after taking the lock that serializes your sends (the adapter's broadcast
 * re-checks the balance under the network lock anyway).
 */
export async function hotAddressFor(tx: Db, assetNetworkId: string, amount: Amount): Promise<HotAddress | null> {
  const best = pickHotAddress((await hotAddressesFor(tx, assetNetworkId)) ?? [], amount);
  return best && { id: best.id, networkId: best.networkId, address: best.address, publicKey: best.publicKey, spendable: best.spendable };
}

/**
 * Every HOT, GENERATED, active controlled address of the asset-network with its spendable chain
 * balance (id order), and its row (to sign with: controlledPrivateKey); null when the asset-network
 * is unknown or its network has no balance read. For a group of sends (issue 22): read once, then
 * pickHotAddress for each send, lowering the chosen address's `spendable` by what it sends.
 * `network`: the asset-network's network when the caller has it (a broadcast group: two statements fewer).
 */
export async function hotAddressesFor(
  tx: Db,
  assetNetworkId: string,
  network?: Network,
): Promise<(HotAddress & { row: Pick<ControlledAddress, 'id' | 'sealedPrivateKey' | 'derivationIndex'> })[] | null> {
  if (!isUuid(assetNetworkId)) return null;
  const an = network
    ? { id: assetNetworkId.toLowerCase(), networkId: network.id, network }
    : await tx.assetNetwork.findUnique({ where: { id: assetNetworkId.toLowerCase() }, include: { network: true } });
  if (!an) return null;
  // Raw (issue 22: read by every broadcast group, in its transaction): what sending needs of each.
  const rows = await tx.$queryRaw<Pick<ControlledAddress, 'id' | 'networkId' | 'address' | 'publicKey' | 'sealedPrivateKey' | 'derivationIndex'>[]>`
    SELECT "id"::text AS "id", "networkId"::text AS "networkId", "address", "publicKey", "sealedPrivateKey", "derivationIndex"
      FROM "ControlledAddress"
     WHERE "networkId" = ${an.networkId}::uuid AND ${an.id}::uuid = ANY("assetNetworkIds") AND "tier" = 'HOT' AND "control" = 'GENERATED' AND "active"
     ORDER BY "id"`;
  const balances = await chainBalances(
    tx,
    an.network,
    an.id,
    rows.map((r) => r.address),
  );
  if (!balances) return null;
  return rows.map((r) => ({
    id: r.id,
    networkId: r.networkId,
    address: r.address,
    publicKey: r.publicKey!,
    spendable: balances.get(r.address)!.spendable,
    row: r,
  }));
}

/** Of `candidates`, the one with the largest spendable balance covering `amount` (ties: the first, the oldest); null when none covers it. */
export function pickHotAddress<T extends HotAddress>(candidates: readonly T[], amount: Amount): T | null {
  let best: T | null = null;
  for (const c of candidates) if (c.spendable >= amount && (!best || c.spendable > best.spendable)) best = c;
  return best;
}

/**
 * Signs a transfer from a GENERATED, active controlled address with its sealed key: answers the
 * signed transfer for the network adapter's broadcast (src/chains/secp256k1.ts signTransfer).
 * `nonce` makes two equal transfers two transactions (use the id of what pays: the withdrawal's).
 * Throws INVALID_STATE for a WATCH_ONLY or inactive address or an asset-network it does not hold.
 */
/** The private key of a GENERATED controlled address (unsealed root, derived); the caller zeroes it. */
export function controlledPrivateKey(sealingKey: Buffer, r: Pick<ControlledAddress, 'id' | 'sealedPrivateKey' | 'derivationIndex'>): Uint8Array {
  if (!r.sealedPrivateKey) throw invalidState('A WATCH_ONLY address can receive, never send: the service holds no key for it.');
  const root = secp.hexToBytes(unseal(sealingKey, r.sealedPrivateKey, controlledKeyAad(r.id)));
  try {
    return secp.derivePrivateKey(root, r.derivationIndex!);
  } finally {
    root.fill(0);
  }
}

/**
 * controlledPrivateKey for the broadcast path, cached (issue 22: unsealing the root and deriving the
 * child, a scalar multiplication in JavaScript, was ~0.45 ms of CPU per broadcast group): the derived
 * key of each recently used controlled address, per sealing key, held in this process's memory only
 * (never logged, never written) and used again only while the row's sealed key and index are the ones
 * it was derived from. The caller must not zero it.
 */
interface CachedKey {
  sealed: Uint8Array;
  index: number | null;
  key: Uint8Array;
}
const KEY_CACHE_SIZE = 256;
const keyCaches = new WeakMap<Buffer, Map<string, CachedKey>>();
export function cachedControlledPrivateKey(sealingKey: Buffer, r: Pick<ControlledAddress, 'id' | 'sealedPrivateKey' | 'derivationIndex'>): Uint8Array {
  let cache = keyCaches.get(sealingKey);
  if (!cache) keyCaches.set(sealingKey, (cache = new Map()));
  const hit = cache.get(r.id);
  if (hit && r.sealedPrivateKey && hit.index === r.derivationIndex && Buffer.compare(hit.sealed, r.sealedPrivateKey) === 0) {
    cache.delete(r.id); // most recently used last
    cache.set(r.id, hit);
    return hit.key;
  }
  const key = controlledPrivateKey(sealingKey, r);
  if (hit) hit.key.fill(0);
  cache.delete(r.id);
  cache.set(r.id, { sealed: Uint8Array.from(r.sealedPrivateKey!), index: r.derivationIndex, key });
  if (cache.size > KEY_CACHE_SIZE) {
    const oldest = cache.keys().next().value!;
    cache.get(oldest)!.key.fill(0);
    cache.delete(oldest);
  }
  return key;
}

export async function signFromControlledAddress(
  tx: Db,
  deps: { sealingKey?: Buffer },
  addressId: string,
  payload: { assetNetworkId: string; toAddress: string; amount: Amount; nonce: string },
): Promise<string> {
  if (!deps.sealingKey) throw new Error('signing from a controlled address needs the sealing key (deps.sealingKey)');
  const r = await tx.controlledAddress.findUnique({ where: { id: addressId } });
  if (!r) throw notFound('ControlledAddress');
  if (r.control !== 'GENERATED' || !r.sealedPrivateKey) throw invalidState('A WATCH_ONLY address can receive, never send: the service holds no key for it.');
  if (!r.active) throw invalidState('The controlled address is deactivated.');
  if (!r.assetNetworkIds.includes(payload.assetNetworkId)) throw invalidState('The controlled address does not hold this asset-network.');
  if (payload.amount <= 0n) throw new RangeError('the amount must be positive');
  const key = controlledPrivateKey(deps.sealingKey, r);
  try {
    const network = await tx.network.findUniqueOrThrow({ where: { id: r.networkId } });
    return await adapterFor(network.kind, tx).signTransfer(
      networkRef(network),
      {
        networkId: r.networkId,
        assetNetworkId: payload.assetNetworkId,
        fromAddress: r.address,
        fromPublicKey: r.publicKey!,
        toAddress: payload.toAddress,
        amount: payload.amount.toString(),
        nonce: payload.nonce,
      },
      key,
    );
  } finally {
    key.fill(0);
  }
}

// ------------------------------------------------------------------------------------------------
// Overview

export interface TierHolding {
  tier: TreasuryTier;
  addresses: number;
  balance: string | null;
}

export interface AssetNetworkOverview {
  assetNetworkId: string;
  assetCode: string;
  networkId: string;
  networkKind: NetworkKind;
  /** CUSTOMER + ESCROW + SUSPENSE + RETAINED posted balances (credit-normal). */
  customerLiabilities: string;
  liabilities: { customer: string; escrow: string; suspense: string; retained: string };
  /** FEES + PLATFORM_REVENUE: the platform's own funds on chain. */
  platformFunds: string;
  /** CHAIN_CLEARING (debit-normal): what the ledger says is on chain. */
  chainClearing: string;
  controlledHoldings: TierHolding[];
  depositAddressHoldings: string | null;
  /** Controlled + deposit addresses' mined balances; null when the network has no balance read. */
  assetsHeld: string | null;
  /** assetsHeld - customerLiabilities (negative: customers are owed more than is held). */
  difference: string | null;
  /** assetsHeld - chainClearing (not 0: the chain and the ledger disagree, e.g. deposits not yet confirmed). */
  clearingDifference: string | null;
}

export interface TreasuryOverview {
  generatedAt: Date;
  assetNetworks: AssetNetworkOverview[];
}

const LIABILITY_KINDS = ['CUSTOMER', 'ESCROW', 'SUSPENSE', 'RETAINED'] as const;

async function overviewOf(db: Db, an: { id: string; networkId: string; network: Network; asset: { code: string } }): Promise<AssetNetworkOverview> {
  const byKind = await db.$queryRaw<{ kind: string; credit: string }[]>`
    SELECT "kind"::text AS "kind", sum("creditsPosted" - "debitsPosted")::text AS "credit"
      FROM "LedgerAccount" WHERE "assetNetworkId" = ${an.id}::uuid GROUP BY 1`;
  const k = (kind: string) => numericToAmount(byKind.find((r) => r.kind === kind)?.credit ?? '0');
  const liabilities = { customer: k('CUSTOMER'), escrow: k('ESCROW'), suspense: k('SUSPENSE'), retained: k('RETAINED') };
  const customerLiabilities = LIABILITY_KINDS.reduce((s, kind) => s + k(kind), 0n);
  const clearing = -k('CHAIN_CLEARING');
  const addresses = await db.controlledAddress.findMany({ where: { networkId: an.networkId, assetNetworkIds: { has: an.id } }, orderBy: { id: 'asc' } });
  const balances = await chainBalances(
    db,
    an.network,
    an.id,
    addresses.map((a) => a.address),
  );
  const deposits = await depositAddressHoldings(db, an.network, an.id);
  const holdings: TierHolding[] = TIERS.map((tier) => {
    const of = addresses.filter((a) => a.tier === tier);
    return { tier, addresses: of.length, balance: balances ? amountToString(of.reduce((s, a) => s + balances.get(a.address)!.mined, 0n)) : null };
  });
  const controlled = balances ? addresses.reduce((s, a) => s + balances.get(a.address)!.mined, 0n) : null;
  const held = controlled !== null && deposits !== null ? controlled + deposits : null;
  return {
    assetNetworkId: an.id,
    assetCode: an.asset.code,
    networkId: an.networkId,
    networkKind: an.network.kind,
    customerLiabilities: amountToString(customerLiabilities),
    liabilities: {
      customer: amountToString(liabilities.customer),
      escrow: amountToString(liabilities.escrow),
      suspense: amountToString(liabilities.suspense),
      retained: amountToString(liabilities.retained),
    },
    platformFunds: amountToString(k('FEES') + k('PLATFORM_REVENUE')),
    chainClearing: amountToString(clearing),
    controlledHoldings: holdings,
    depositAddressHoldings: deposits === null ? null : amountToString(deposits),
    assetsHeld: held === null ? null : amountToString(held),
    difference: held === null ? null : amountToString(held - customerLiabilities),
    clearingDifference: held === null ? null : amountToString(held - clearing),
  };
}

/** GetTreasuryOverview: every asset-network of the catalog (oldest first), read in one repeatable-read transaction. */
export async function treasuryOverview(ctx: Context): Promise<TreasuryOverview> {
  operatorId(ctx);
  return ctx.deps.db.$transaction(
    async (tx) => {
      const ans = await tx.assetNetwork.findMany({ include: { network: true, asset: { select: { code: true } } }, orderBy: { id: 'asc' } });
      const out: AssetNetworkOverview[] = [];
      for (const an of ans) out.push(await overviewOf(tx, an));
      return { generatedAt: ctx.deps.clock.now(), assetNetworks: out };
    },
    { ...TX_OPTIONS, isolationLevel: 'RepeatableRead' },
  );
}

/** The overview of one asset-network (tests, and other parts). */
export async function assetNetworkOverview(db: Db, assetNetworkId: string): Promise<AssetNetworkOverview> {
  return overviewOf(db, await loadAssetNetwork(db, assetNetworkId));
}

// ------------------------------------------------------------------------------------------------
// Liquidity policy

export interface TierTarget {
  tier: TreasuryTier;
  min: string;
  target: string;
  max: string | null;
}

export interface LiquidityPolicyView {
  id: string;
  assetNetworkId: string;
  version: number;
  tiers: TierTarget[];
  operatorId: string;
  createdAt: Date;
}

export const configureLiquidityPolicyInput = z
  .object({
    assetNetworkId: uuid('an asset-network id'),
    tiers: z
      .array(z.object({ tier: z.enum(['HOT', 'WARM', 'COLD']), min: amountText, target: amountText, max: amountText.nullish() }).strict())
      .min(1, 'name the targets of at least one tier')
      .max(3),
  })
  .strict();

const policyView = (p: TreasuryLiquidityPolicy): LiquidityPolicyView => ({
  id: p.id,
  assetNetworkId: p.assetNetworkId,
  version: p.version,
  tiers: p.tiers as unknown as TierTarget[],
  operatorId: p.operatorId,
  createdAt: p.createdAt,
});

/**
 * AdminConfigureTreasuryLiquidityPolicy: the next version of an asset-network's targets per tier,
 * in base units: { tier, min, target, max } with min <= target <= max (max null: no ceiling), each
 * tier at most once. 400 otherwise; 404 for an unknown asset-network.
 */
export async function configureLiquidityPolicy(ctx: Context, input: unknown): Promise<LiquidityPolicyView> {
  const opId = operatorId(ctx);
  const data = parseInput(configureLiquidityPolicyInput, input);
  const tiers: TierTarget[] = [];
  for (const [i, t] of data.tiers.entries()) {
    if (tiers.some((x) => x.tier === t.tier)) throw fieldError(`tiers.${i}.tier`, `${t.tier} is named twice`);
    const min = BigInt(t.min);
    const target = BigInt(t.target);
    if (min > target) throw fieldError(`tiers.${i}.target`, 'must not be less than min');
    if (t.max != null && BigInt(t.max) < target) throw fieldError(`tiers.${i}.max`, 'must not be less than target');
    tiers.push({ tier: t.tier, min: t.min, target: t.target, max: t.max ?? null });
  }
  tiers.sort((a, b) => TIERS.indexOf(a.tier) - TIERS.indexOf(b.tier));
  const an = await loadAssetNetwork(ctx.deps.db, data.assetNetworkId);
  const row = await ctx.deps.db.$transaction(async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${'treasury-liquidity-policy ' + an.id}, 0))`;
    const last = await tx.treasuryLiquidityPolicy.findFirst({ where: { assetNetworkId: an.id }, orderBy: { version: 'desc' }, select: { version: true } });
    const version = (last?.version ?? 0) + 1;
    const created = await tx.treasuryLiquidityPolicy.create({
      data: { assetNetworkId: an.id, version, tiers: tiers as never, operatorId: opId, createdAt: ctx.deps.clock.now() },
    });
    await auditAs(tx, ctx.deps, requestActor(ctx), {
      organizationId: null,
      entityType: 'TreasuryLiquidityPolicy',
      entityId: created.id,
      action: 'treasury.liquidity_policy.configured',
      after: { assetNetworkId: an.id, version, tiers },
    });
    return created;
  });
  return policyView(row);
}

export async function liquidityPolicyInForce(db: Db, assetNetworkId: string): Promise<LiquidityPolicyView | null> {
  const p = await db.treasuryLiquidityPolicy.findFirst({ where: { assetNetworkId }, orderBy: { version: 'desc' } });
  return p ? policyView(p) : null;
}

// ------------------------------------------------------------------------------------------------
// Rebalance plan

export interface TierPosition {
  tier: TreasuryTier;
  balance: string;
  /** What the tier's GENERATED addresses can send (WATCH_ONLY addresses only receive). */
  movable: string;
  min: string | null;
  target: string | null;
  max: string | null;
  position: 'NO_TARGET' | 'BELOW_MIN' | 'WITHIN' | 'ABOVE_MAX';
}

export interface RebalanceMove {
  fromTier: TreasuryTier;
  fromControlledAddressId: string;
  fromAddress: string;
  toTier: TreasuryTier;
  toControlledAddressId: string;
  toAddress: string;
  amount: string;
  reason: string;
}

export interface RebalancePlan {
  assetNetworkId: string;
  policyId: string | null;
  policyVersion: number | null;
  tiers: TierPosition[];
  moves: RebalanceMove[];
  /** What the plan could not do (a shortfall, an excess with nowhere to go) and what it noticed. */
  notes: string[];
  depositAddressHoldings: string | null;
}

interface PlanAddress {
  id: string;
  tier: TreasuryTier;
  address: string;
  generated: boolean;
  balance: Amount;
  spendable: Amount;
}

/**
 * The moves that bring each tier back within its policy (read-only: nothing is sent).
 * 1. Deficits, HOT first: a tier below its min is refilled to its target, from the nearest tiers
 *    first (HOT from WARM then COLD; WARM from COLD then HOT; COLD from WARM then HOT), each source
 *    giving only what it holds above its own target (a tier without targets gives nothing).
 * 2. Excesses, HOT then WARM: a tier above its max sends what it holds above its target to the next
 *    colder tier (COLD's excess stays: a note).
 * Sources are GENERATED addresses, largest spendable balance first; a destination is the tier's
 * active address with the smallest balance. What cannot be covered is reported in `notes`.
 */
export function planMoves(
  addresses: readonly PlanAddress[],
  policy: LiquidityPolicyView | null,
): { positions: TierPosition[]; moves: RebalanceMove[]; notes: string[] } {
  const targets = new Map(
    policy?.tiers.map((t) => [t.tier, { min: BigInt(t.min), target: BigInt(t.target), max: t.max === null ? null : BigInt(t.max) }]) ?? [],
  );
  const state = addresses.map((a) => ({ ...a }));
  const balanceOf = (tier: TreasuryTier) => state.filter((a) => a.tier === tier).reduce((s, a) => s + a.balance, 0n);
  const positions: TierPosition[] = TIERS.map((tier) => {
    const t = targets.get(tier);
    const balance = balanceOf(tier);
    const movable = state.filter((a) => a.tier === tier && a.generated).reduce((s, a) => s + (a.spendable > 0n ? a.spendable : 0n), 0n);
    return {
      tier,
      balance: amountToString(balance),
      movable: amountToString(movable),
      min: t ? amountToString(t.min) : null,
      target: t ? amountToString(t.target) : null,
      max: t?.max == null ? null : amountToString(t.max),
      position: !t ? 'NO_TARGET' : balance < t.min ? 'BELOW_MIN' : t.max !== null && balance > t.max ? 'ABOVE_MAX' : 'WITHIN',
    };
  });
  const moves: RebalanceMove[] = [];
  const notes: string[] = [];
  if (!policy) {
    notes.push('No liquidity policy for this asset-network: nothing to plan (AdminConfigureTreasuryLiquidityPolicy).');
    return { positions, moves, notes };
  }
  const destination = (tier: TreasuryTier) =>
    [...state].filter((a) => a.tier === tier).sort((a, b) => (a.balance === b.balance ? (a.id < b.id ? -1 : 1) : a.balance < b.balance ? -1 : 1))[0];
  /** Moves up to `amount` from `from`'s GENERATED addresses (never below `floor` for the tier); answers what moved. */
  const move = (from: TreasuryTier, to: TreasuryTier, amount: Amount, floor: Amount, reason: string): Amount => {
    const dest = destination(to);
    if (!dest || amount <= 0n) return 0n;
    let left = amount;
    let tierBalance = balanceOf(from);
    const sources = state
      .filter((a) => a.tier === from && a.generated && a.spendable > 0n)
      .sort((a, b) => (a.spendable === b.spendable ? (a.id < b.id ? -1 : 1) : a.spendable > b.spendable ? -1 : 1));
    for (const s of sources) {
      if (left === 0n) break;
      let take = s.spendable < left ? s.spendable : left;
      if (tierBalance - take < floor) take = tierBalance - floor;
      if (take <= 0n) break;
      s.balance -= take;
      s.spendable -= take;
      dest.balance += take;
      tierBalance -= take;
      left -= take;
      moves.push({
        fromTier: from,
        fromControlledAddressId: s.id,
        fromAddress: s.address,
        toTier: to,
        toControlledAddressId: dest.id,
        toAddress: dest.address,
        amount: amountToString(take),
        reason,
      });
    }
    return amount - left;
  };
  const sourcesFor: Record<TreasuryTier, TreasuryTier[]> = { HOT: ['WARM', 'COLD'], WARM: ['COLD', 'HOT'], COLD: ['WARM', 'HOT'] };
  for (const tier of TIERS) {
    const t = targets.get(tier);
    if (!t) continue;
    const balance = balanceOf(tier);
    if (balance >= t.min) continue;
    if (!destination(tier)) {
      notes.push(`${tier} is below its minimum (${balance} < ${t.min}) but has no address to receive.`);
      continue;
    }
    let need = t.target - balance;
    for (const src of sourcesFor[tier]) {
      const st = targets.get(src);
      if (!st || need === 0n) continue;
      const spare = balanceOf(src) - st.target;
      if (spare <= 0n) continue;
      need -= move(
        src,
        tier,
        spare < need ? spare : need,
        st.target,
        `${tier} is below its minimum (${balance} < ${t.min}): refilled toward its target ${t.target} from ${src}, which holds more than its target ${st.target}.`,
      );
    }
    if (need > 0n)
      notes.push(`${tier} stays short of its target by ${need}: no tier holds enough above its own target (sweep deposit addresses, or fund the treasury).`);
  }
  const colder: Partial<Record<TreasuryTier, TreasuryTier>> = { HOT: 'WARM', WARM: 'COLD' };
  for (const tier of TIERS) {
    const t = targets.get(tier);
    if (!t || t.max === null) continue;
    const balance = balanceOf(tier);
    if (balance <= t.max) continue;
    const to = colder[tier];
    if (!to) {
      notes.push(`${tier} holds ${balance - t.max} above its maximum ${t.max}: there is no colder tier to move it to.`);
      continue;
    }
    if (!destination(to)) {
      notes.push(`${tier} holds ${balance - t.max} above its maximum ${t.max}, but ${to} has no address to receive.`);
      continue;
    }
    const excess = balance - t.target;
    const moved = move(
      tier,
      to,
      excess,
      t.target,
      `${tier} is above its maximum (${balance} > ${t.max}): down to its target ${t.target}, the excess to ${to}.`,
    );
    if (moved < excess) notes.push(`${tier} keeps ${excess - moved} above its target: its WATCH_ONLY addresses cannot send, or transfers are pending.`);
  }
  return { positions, moves, notes };
}

/** GetTreasuryRebalancePlan: the plan for the active controlled addresses of the asset-network, under its policy in force. */
export async function rebalancePlan(ctx: Context, assetNetworkIdArg: unknown): Promise<RebalancePlan> {
  operatorId(ctx);
  const db = ctx.deps.db;
  const an = await loadAssetNetwork(db, assetNetworkIdArg);
  const policy = await liquidityPolicyInForce(db, an.id);
  const rows = await db.controlledAddress.findMany({
    where: { networkId: an.networkId, assetNetworkIds: { has: an.id }, active: true },
    orderBy: { id: 'asc' },
  });
  const balances = await chainBalances(
    db,
    an.network,
    an.id,
    rows.map((r) => r.address),
  );
  const deposits = await depositAddressHoldings(db, an.network, an.id);
  if (!balances)
    return {
      assetNetworkId: an.id,
      policyId: policy?.id ?? null,
      policyVersion: policy?.version ?? null,
      tiers: [],
      moves: [],
      notes: [`${an.network.kind} networks have no balance read in this version: no plan.`],
      depositAddressHoldings: null,
    };
  const addresses: PlanAddress[] = rows.map((r) => {
    const b = balances.get(r.address)!;
    return { id: r.id, tier: r.tier, address: r.address, generated: r.control === 'GENERATED', balance: b.mined, spendable: b.spendable };
  });
  const { positions, moves, notes } = planMoves(addresses, policy);
  if (deposits !== null && deposits > 0n) notes.push(`Deposit addresses hold ${deposits}: sweeps (AdminExecuteSandboxSweep) move it to HOT or WARM.`);
  return {
    assetNetworkId: an.id,
    policyId: policy?.id ?? null,
    policyVersion: policy?.version ?? null,
    tiers: positions,
    moves,
    notes,
    depositAddressHoldings: deposits === null ? null : amountToString(deposits),
  };
}

export type { MoneyDeps };
