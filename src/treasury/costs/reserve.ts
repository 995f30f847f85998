import { fromPrisma, type PgBoss } from 'pg-boss';
import { z } from 'zod';
import type { Context } from '../../context';
import { Prisma, type Db, type PrismaClient } from '../../db/prisma';
import type { Clock } from '../../clock';
import type { NetworkResourceReserve } from '../../generated/prisma/client';
import { fieldError, notFound, parseInput } from '../../errors';
import { isUuid, uuidv7 } from '../../ids';
import { audit, auditAs } from '../../audit/audit';
import { requireOperator as requireOperatorOf } from '../../auth/policy';
import { adapterFor, hasAdapter } from '../../chains/adapter';
import { amountToNumeric, amountToString, numericToAmount, parseAmount, type Amount, positiveAmountText, amountText } from '../../money';
import { RESERVE_REPLENISH_QUEUE } from '../../kernel/queues';

/**
 * The network resource reserve (a gas station; docs/network-costs.md): per NETWORK, a balance in
 * base units of the network's native asset that pays the network costs of withdrawals and sweeps.
 * Every change is a movement (SEED, CONSUME, REPLENISH, RELEASE) in an append-only table, written in
 * the same transaction as the balance under the reserve row's lock, so the balance is explained.
 *
 * Routes name an asset-network: any asset-network of the network addresses the network's reserve.
 *
 * - consumeReserveInTx: the WITHDRAWALS / TREASURY helpers call it in the transaction that hands an
 *   operation to the chain; idempotent per (referenceType, referenceId). A network without a reserve
 *   is not managed (ok). Balance short: { ok: false, reason: 'RESERVE_EXHAUSTED' } and nothing
 *   consumed; the caller keeps its operation queued (or refuses it) and a replenishment is queued.
 * - releaseReserveInTx: gives a consumption back when the operation never reached the chain.
 * - The replenish job (reserve.replenish: every minute, and queued when a consumption leaves the
 *   balance below the low threshold or finds it exhausted) tops a reserve whose route is
 *   SANDBOX_FAUCET up to its target (at most maxTopUpAmount per run). EXTERNAL_TOP_UP reserves are
 *   only flagged (belowThreshold) for an operator, who records the top-up with a seed.
 */

export interface ReserveReplenishJob {
  networkId?: string;
}

export interface ReserveDeps {
  clock: Clock;
  boss: PgBoss | null;
}

export type ReserveRef = { networkId: string; assetNetworkId?: undefined } | { assetNetworkId: string; networkId?: undefined };

export type ConsumeResult =
  { ok: true; managed: boolean; replayed: boolean; balance: Amount | null } | { ok: false; reason: 'RESERVE_EXHAUSTED'; balance: Amount };

export async function sendReserveReplenish(tx: Db, boss: PgBoss | null, networkId?: string): Promise<void> {
  if (!boss) return;
  await boss.send(RESERVE_REPLENISH_QUEUE, (networkId ? { networkId } : {}) satisfies ReserveReplenishJob, { db: fromPrisma(tx as never) });
}

async function networkIdOf(tx: Db, ref: ReserveRef): Promise<string> {
  if (ref.networkId) {
    if (!isUuid(ref.networkId)) throw notFound('Network');
    return ref.networkId.toLowerCase();
  }
  const an = isUuid(ref.assetNetworkId)
    ? await tx.assetNetwork.findUnique({ where: { id: ref.assetNetworkId.toLowerCase() }, select: { networkId: true } })
    : null;
  if (!an) throw notFound('Asset-network');
  return an.networkId;
}

/** The reserve row of a network, locked (FOR UPDATE), or null. */
async function lockReserve(tx: Db, networkId: string): Promise<NetworkResourceReserve | null> {
  // Locked and read in one raw statement (FOR UPDATE answers the row as it is once locked; issue 22).
  const rows = await tx.$queryRaw<NetworkResourceReserve[]>(lockReserveSql(networkId));
  return rows[0] ?? null;
}
const lockReserveSql = (networkId: string) => Prisma.sql`
    SELECT "id"::text AS "id", "networkId"::text AS "networkId", "balance", "lowThreshold", "targetBalance", "replenishmentSource"::text AS "replenishmentSource",
           "replenishmentAddress", "maxTopUpAmount", "createdAt", "updatedAt"
      FROM "NetworkResourceReserve" WHERE "networkId" = ${networkId}::uuid FOR UPDATE`;

/** The reserve of a network, created empty when missing, locked. */
async function ensureReserve(tx: Db, networkId: string, now: Date): Promise<NetworkResourceReserve> {
  await tx.$executeRaw`INSERT INTO "NetworkResourceReserve" ("id", "networkId", "balance", "createdAt", "updatedAt")
    VALUES (${uuidv7(now.getTime())}::uuid, ${networkId}::uuid, 0, ${now}, ${now}) ON CONFLICT ("networkId") DO NOTHING`;
  return (await lockReserve(tx, networkId))!;
}

const below = (r: NetworkResourceReserve, balance: Amount) => r.lowThreshold !== null && balance < numericToAmount(r.lowThreshold);

/** Consumes `amount` of a network's reserve for one operation (idempotent per reference). */
export async function consumeReserveInTx(
  tx: Db,
  deps: ReserveDeps,
  a: ReserveRef & { amount: bigint; referenceType: string; referenceId: string },
): Promise<ConsumeResult> {
  if (a.amount < 0n) throw new RangeError('a reserve consumption is not negative');
  const networkId = await networkIdOf(tx, a);
  const reserve = await lockReserve(tx, networkId);
  if (!reserve) return { ok: true, managed: false, replayed: false, balance: null };
  const balance = numericToAmount(reserve.balance);
  const done = await tx.networkResourceReserveMovement.findFirst({
    where: { reserveId: reserve.id, kind: 'CONSUME', referenceType: a.referenceType, referenceId: a.referenceId },
  });
  if (done) return { ok: true, managed: true, replayed: true, balance };
  if (a.amount === 0n) return { ok: true, managed: true, replayed: false, balance };
  if (balance < a.amount) {
    await sendReserveReplenish(tx, deps.boss, networkId);
    return { ok: false, reason: 'RESERVE_EXHAUSTED', balance };
  }
  const after = balance - a.amount;
  const now = deps.clock.now();
  await tx.networkResourceReserveMovement.create({
    data: {
      reserveId: reserve.id,
      kind: 'CONSUME',
      amount: amountToNumeric(a.amount),
      balanceAfter: amountToNumeric(after),
      referenceType: a.referenceType,
      referenceId: a.referenceId,
      createdAt: now,
    },
  });
  await tx.networkResourceReserve.update({ where: { id: reserve.id }, data: { balance: amountToNumeric(after), updatedAt: now } });
  if (below(reserve, after)) await sendReserveReplenish(tx, deps.boss, networkId);
  return { ok: true, managed: true, replayed: false, balance: after };
}

/**
 * consumeReserveInTx for several operations of one network at once (a broadcast group, issue 22):
 * one lock of the reserve row, one read of the references already consumed, the consumptions
 * decided in list order in memory (each answers as consumeReserveInTx would, called in that order:
 * replayed, consumed, or RESERVE_EXHAUSTED with nothing consumed), one insert of the movements and
 * one update of the balance; a replenishment queued once when one is needed.
 */
export async function consumeReserveGroupInTx(
  tx: Db,
  deps: ReserveDeps,
  networkId: string,
  items: readonly { amount: bigint; referenceType: string; referenceId: string }[],
): Promise<ConsumeResult[]> {
  if (items.some((a) => a.amount < 0n)) throw new RangeError('a reserve consumption is not negative');
  // The reserve locked and read, with the references already consumed, in one statement (issue 22,
  // session 9; was two). The consumed references are read in the statement's snapshot, taken before
  // the wait for the reserve's lock: the caller holds what serializes a reference's consumptions (a
  // withdrawal's row, locked earlier in this transaction, for its attempts `<id>:<attempt>`), so no
  // consumption of these references can commit during that wait.
  const [locked] = await tx.$queryRaw<(NetworkResourceReserve & { done: [string, string][] })[]>`
    WITH "r" AS MATERIALIZED (${lockReserveSql(networkId)})
    SELECT "r".*, (
      SELECT coalesce(jsonb_agg(jsonb_build_array(m."referenceType", m."referenceId")), '[]')
        FROM unnest(${items.map((a) => a.referenceType)}::text[], ${items.map((a) => a.referenceId)}::text[]) AS x(t, i)
        JOIN "NetworkResourceReserveMovement" m ON m."reserveId" = "r"."id"::uuid AND m."kind" = 'CONSUME' AND m."referenceType" = x.t AND m."referenceId" = x.i
    ) AS "done" FROM "r"`;
  if (!locked) return items.map(() => ({ ok: true, managed: false, replayed: false, balance: null }));
  const { done: consumed, ...reserve } = locked;
  const done = new Set(consumed.map(([t, i]) => `${t} ${i}`));
  let balance = numericToAmount(reserve.balance);
  let exhausted = false;
  const now = deps.clock.now();
  const movements: { amount: string; balanceAfter: string; referenceType: string; referenceId: string }[] = [];
  const out = items.map((a): ConsumeResult => {
    const ref = `${a.referenceType} ${a.referenceId}`;
    if (done.has(ref)) return { ok: true, managed: true, replayed: true, balance };
    if (a.amount === 0n) return { ok: true, managed: true, replayed: false, balance };
    if (balance < a.amount) {
      exhausted = true;
      return { ok: false, reason: 'RESERVE_EXHAUSTED', balance };
    }
    balance -= a.amount;
    done.add(ref);
    movements.push({ amount: amountToNumeric(a.amount), balanceAfter: amountToNumeric(balance), referenceType: a.referenceType, referenceId: a.referenceId });
    return { ok: true, managed: true, replayed: false, balance };
  });
  if (movements.length) {
    // The movements and the new balance in one raw statement (issue 22).
    await tx.$executeRaw`
      WITH m AS (
        INSERT INTO "NetworkResourceReserveMovement" ("id", "reserveId", "kind", "amount", "balanceAfter", "referenceType", "referenceId", "createdAt")
        SELECT v.id, ${reserve.id}::uuid, 'CONSUME'::"ReserveMovementKind", v.amount, v.after, v.t, v.i, ${now}
          FROM unnest(${movements.map(() => uuidv7(now.getTime()))}::uuid[], ${movements.map((m) => m.amount)}::numeric[], ${movements.map((m) => m.balanceAfter)}::numeric[],
                      ${movements.map((m) => m.referenceType)}::text[], ${movements.map((m) => m.referenceId)}::text[]) AS v(id, amount, after, t, i)
      )
      UPDATE "NetworkResourceReserve" SET "balance" = ${amountToNumeric(balance)}::numeric, "updatedAt" = ${now} WHERE "id" = ${reserve.id}::uuid`;
  }
  if (exhausted || (movements.length && below(reserve, balance))) await sendReserveReplenish(tx, deps.boss, networkId);
  return out;
}

/** Gives back the consumption of a reference (the operation never reached the chain). Idempotent; answers what was given back. */
export async function releaseReserveInTx(
  tx: Db,
  deps: ReserveDeps,
  a: ReserveRef & { referenceType: string; referenceId: string },
): Promise<{ released: Amount }> {
  const networkId = await networkIdOf(tx, a);
  const reserve = await lockReserve(tx, networkId);
  if (!reserve) return { released: 0n };
  const ref = { reserveId: reserve.id, referenceType: a.referenceType, referenceId: a.referenceId };
  const consumed = await tx.networkResourceReserveMovement.findFirst({ where: { ...ref, kind: 'CONSUME' } });
  if (!consumed) return { released: 0n };
  const released = await tx.networkResourceReserveMovement.findFirst({ where: { ...ref, kind: 'RELEASE' } });
  if (released) return { released: numericToAmount(released.amount) };
  const amount = numericToAmount(consumed.amount);
  const after = numericToAmount(reserve.balance) + amount;
  const now = deps.clock.now();
  await tx.networkResourceReserveMovement.create({
    data: { ...ref, kind: 'RELEASE', amount: amountToNumeric(amount), balanceAfter: amountToNumeric(after), createdAt: now },
  });
  await tx.networkResourceReserve.update({ where: { id: reserve.id }, data: { balance: amountToNumeric(after), updatedAt: now } });
  return { released: amount };
}

// ---------------------------------------------------------------------------------------------
// Views

export interface ReserveView {
  networkId: string;
  networkName: string;
  /** The asset-network the request named (null in the dashboard). */
  assetNetworkId: string | null;
  /** False: no reserve for the network (its consumptions are not managed). */
  configured: boolean;
  balance: string;
  lowThreshold: string | null;
  targetBalance: string | null;
  belowThreshold: boolean;
  replenishmentSource: 'SANDBOX_FAUCET' | 'EXTERNAL_TOP_UP' | null;
  replenishmentAddress: string | null;
  maxTopUpAmount: string | null;
  updatedAt: Date | null;
}

const opt = (v: Parameters<typeof numericToAmount>[0] | null) => (v === null ? null : amountToString(numericToAmount(v)));

export function reserveView(network: { id: string; name: string }, r: NetworkResourceReserve | null, assetNetworkId: string | null): ReserveView {
  const balance = r ? numericToAmount(r.balance) : 0n;
  return {
    networkId: network.id,
    networkName: network.name,
    assetNetworkId,
    configured: r !== null,
    balance: amountToString(balance),
    lowThreshold: r ? opt(r.lowThreshold) : null,
    targetBalance: r ? opt(r.targetBalance) : null,
    belowThreshold: r ? below(r, balance) : false,
    replenishmentSource: r?.replenishmentSource ?? null,
    replenishmentAddress: r?.replenishmentAddress ?? null,
    maxTopUpAmount: r ? opt(r.maxTopUpAmount) : null,
    updatedAt: r?.updatedAt ?? null,
  };
}

/** Every reserve's level (the platform dashboard), by network name. */
export async function reserveLevels(db: Db): Promise<ReserveView[]> {
  const rows = await db.networkResourceReserve.findMany({ orderBy: { networkId: 'asc' } });
  if (!rows.length) return [];
  const networks = new Map(
    (await db.network.findMany({ where: { id: { in: rows.map((r) => r.networkId) } }, select: { id: true, name: true } })).map((n) => [n.id, n]),
  );
  return rows
    .map((r) => reserveView(networks.get(r.networkId) ?? { id: r.networkId, name: '' }, r, null))
    .sort((a, b) => a.networkName.localeCompare(b.networkName));
}

// ---------------------------------------------------------------------------------------------
// Operator commands

export const seedInput = z.object({ assetNetworkId: z.string(), amount: positiveAmountText });
export const policyInput = z
  .object({ assetNetworkId: z.string(), lowThreshold: amountText, targetBalance: positiveAmountText })
  .refine((v) => !/^\d+$/.test(v.lowThreshold) || !/^\d+$/.test(v.targetBalance) || BigInt(v.targetBalance) >= BigInt(v.lowThreshold), {
    path: ['targetBalance'],
    message: 'must be at least lowThreshold',
  });
export const routeInput = z.object({
  assetNetworkId: z.string(),
  source: z.enum(['SANDBOX_FAUCET', 'EXTERNAL_TOP_UP']),
  address: z.string().trim().min(1).max(200).nullish(),
  maxTopUpAmount: positiveAmountText.nullish(),
});

const parse = parseInput;

const requireOperator = (ctx: Context) => requireOperatorOf(ctx.principal, ctx.credentialError);

async function assetNetworkOf(db: Db, id: unknown, field: string | null) {
  const an = isUuid(id) ? await db.assetNetwork.findUnique({ where: { id: id.toLowerCase() }, include: { network: true } }) : null;
  if (!an) throw field ? fieldError(field, 'must be the id of an asset-network of the catalog') : notFound('Asset-network');
  return an;
}

const terms = (r: NetworkResourceReserve) => ({
  balance: amountToString(numericToAmount(r.balance)),
  lowThreshold: opt(r.lowThreshold),
  targetBalance: opt(r.targetBalance),
  replenishmentSource: r.replenishmentSource,
  replenishmentAddress: r.replenishmentAddress,
  maxTopUpAmount: opt(r.maxTopUpAmount),
});

/** AdminGetNetworkResourceReserveBalance (operators). */
export async function reserveBalance(ctx: Context, assetNetworkId: string): Promise<ReserveView> {
  requireOperator(ctx);
  const an = await assetNetworkOf(ctx.deps.db, assetNetworkId, null);
  const r = await ctx.deps.db.networkResourceReserve.findUnique({ where: { networkId: an.networkId } });
  return reserveView(an.network, r, an.id);
}

/** AdminSeedNetworkResourceReserve: adds `amount` to the network's reserve (created when missing). */
export async function seedReserve(ctx: Context, rawInput: unknown): Promise<ReserveView> {
  const operatorId = requireOperator(ctx);
  const input = parse(seedInput, rawInput);
  const an = await assetNetworkOf(ctx.deps.db, input.assetNetworkId, 'assetNetworkId');
  const amount = parseAmount(input.amount);
  const now = ctx.deps.clock.now();
  return ctx.deps.db.$transaction(async (tx) => {
    const r = await ensureReserve(tx, an.networkId, now);
    const after = numericToAmount(r.balance) + amount;
    const movement = await tx.networkResourceReserveMovement.create({
      data: {
        reserveId: r.id,
        kind: 'SEED',
        amount: amountToNumeric(amount),
        balanceAfter: amountToNumeric(after),
        createdByOperatorId: operatorId,
        createdAt: now,
      },
    });
    const updated = await tx.networkResourceReserve.update({ where: { id: r.id }, data: { balance: amountToNumeric(after), updatedAt: now } });
    await audit(tx, ctx, {
      organizationId: null,
      entityType: 'NetworkResourceReserve',
      entityId: r.id,
      action: 'network_reserve.seeded',
      before: terms(r),
      after: { ...terms(updated), movementId: movement.id, amount: input.amount },
    });
    return reserveView(an.network, updated, an.id);
  });
}

/** AdminConfigureResourceReservePolicy: the low threshold and the target of the network's reserve. */
export async function configureReservePolicy(ctx: Context, rawInput: unknown): Promise<ReserveView> {
  requireOperator(ctx);
  const input = parse(policyInput, rawInput);
  const an = await assetNetworkOf(ctx.deps.db, input.assetNetworkId, 'assetNetworkId');
  const now = ctx.deps.clock.now();
  return ctx.deps.db.$transaction(async (tx) => {
    const r = await ensureReserve(tx, an.networkId, now);
    const updated = await tx.networkResourceReserve.update({
      where: { id: r.id },
      data: {
        lowThreshold: amountToNumeric(parseAmount(input.lowThreshold)),
        targetBalance: amountToNumeric(parseAmount(input.targetBalance)),
        updatedAt: now,
      },
    });
    await audit(tx, ctx, {
      organizationId: null,
      entityType: 'NetworkResourceReserve',
      entityId: r.id,
      action: 'network_reserve.policy_configured',
      before: terms(r),
      after: terms(updated),
    });
    if (below(updated, numericToAmount(updated.balance))) await sendReserveReplenish(tx, ctx.deps.boss, an.networkId);
    return reserveView(an.network, updated, an.id);
  });
}

/** AdminConfigureReplenishmentRoute: where top-ups come from. SANDBOX_FAUCET: sandbox networks only. */
export async function configureReplenishmentRoute(ctx: Context, rawInput: unknown): Promise<ReserveView> {
  requireOperator(ctx);
  const input = parse(routeInput, rawInput);
  const an = await assetNetworkOf(ctx.deps.db, input.assetNetworkId, 'assetNetworkId');
  let address: string | null = input.address ?? null;
  if (input.source === 'SANDBOX_FAUCET') {
    if (an.network.kind !== 'SANDBOX')
      throw fieldError('source', `SANDBOX_FAUCET tops up sandbox networks only (this one is ${an.network.kind}): use EXTERNAL_TOP_UP`);
    if (address) throw fieldError('address', 'the sandbox faucet takes no address');
  } else if (address && hasAdapter(an.network.kind)) {
    if (!adapterFor(an.network.kind).validateAddress(address)) throw fieldError('address', `is not an address of the network ${an.network.name}`);
    address = address.toLowerCase();
  }
  const now = ctx.deps.clock.now();
  return ctx.deps.db.$transaction(async (tx) => {
    const r = await ensureReserve(tx, an.networkId, now);
    const updated = await tx.networkResourceReserve.update({
      where: { id: r.id },
      data: {
        replenishmentSource: input.source,
        replenishmentAddress: address,
        maxTopUpAmount: input.maxTopUpAmount ? amountToNumeric(parseAmount(input.maxTopUpAmount)) : null,
        updatedAt: now,
      },
    });
    await audit(tx, ctx, {
      organizationId: null,
      entityType: 'NetworkResourceReserve',
      entityId: r.id,
      action: 'network_reserve.route_configured',
      before: terms(r),
      after: terms(updated),
    });
    if (below(updated, numericToAmount(updated.balance))) await sendReserveReplenish(tx, ctx.deps.boss, an.networkId);
    return reserveView(an.network, updated, an.id);
  });
}

// ---------------------------------------------------------------------------------------------
// The replenish job

/**
 * Tops up every reserve (or one network's) that is below its low threshold and whose route is
 * SANDBOX_FAUCET, up to its target (at most maxTopUpAmount per run): a REPLENISH movement, under
 * the row lock, audited as the system. Idempotent: a reserve at or above its threshold is left alone.
 */
export async function replenishReserves(deps: { db: PrismaClient; clock: Clock }, data?: ReserveReplenishJob | null): Promise<number> {
  const networkId = data?.networkId && isUuid(data.networkId) ? data.networkId.toLowerCase() : undefined;
  const candidates = await deps.db.networkResourceReserve.findMany({
    where: { replenishmentSource: 'SANDBOX_FAUCET', lowThreshold: { not: null }, targetBalance: { not: null }, ...(networkId ? { networkId } : {}) },
    select: { networkId: true },
  });
  let n = 0;
  for (const c of candidates) {
    const done = await deps.db.$transaction(async (tx) => {
      const r = await lockReserve(tx, c.networkId);
      if (!r || r.replenishmentSource !== 'SANDBOX_FAUCET' || r.targetBalance === null) return false;
      const balance = numericToAmount(r.balance);
      if (!below(r, balance)) return false;
      let topUp = numericToAmount(r.targetBalance) - balance;
      if (r.maxTopUpAmount !== null && topUp > numericToAmount(r.maxTopUpAmount)) topUp = numericToAmount(r.maxTopUpAmount);
      if (topUp <= 0n) return false;
      const after = balance + topUp;
      const now = deps.clock.now();
      const movement = await tx.networkResourceReserveMovement.create({
        data: {
          reserveId: r.id,
          kind: 'REPLENISH',
          amount: amountToNumeric(topUp),
          balanceAfter: amountToNumeric(after),
          referenceType: 'SANDBOX_FAUCET',
          createdAt: now,
        },
      });
      const updated = await tx.networkResourceReserve.update({ where: { id: r.id }, data: { balance: amountToNumeric(after), updatedAt: now } });
      await auditAs(
        tx,
        deps,
        { principal: null, requestId: null },
        {
          organizationId: null,
          entityType: 'NetworkResourceReserve',
          entityId: r.id,
          action: 'network_reserve.replenished',
          before: terms(r),
          after: { ...terms(updated), movementId: movement.id, amount: amountToString(topUp) },
        },
      );
      return true;
    });
    if (done) n++;
  }
  return n;
}
