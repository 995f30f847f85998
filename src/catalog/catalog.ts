import { z } from 'zod';
import type { Context } from '../context';
import type { Db } from '../db/prisma';
import type { AssetNetworkStatus } from '../generated/prisma/enums';
import { DomainError, fieldError, invalidState, notFound } from '../errors';
import { assertId, isUniqueViolation, isUuid } from '../ids';
import { audit } from '../audit/audit';
import { amountToString, parseAmount, amountText } from '../money';

/**
 * The asset and network catalog, administered by platform operators and readable by every
 * principal. An asset-network (an asset as one network carries it) has a status that gates money
 * movement (docs/catalog-custody.md):
 *
 * | status   | new payment intents | address allocation | crediting deposits                          | withdrawals |
 * |----------|---------------------|--------------------|---------------------------------------------|-------------|
 * | ENABLED  | yes                 | yes                | yes                                         | yes         |
 * | PAUSED   | no                  | no                 | yes (deposits already on their way)         | no          |
 * | DISABLED | no                  | no                 | no: newly detected deposits go UNDER_REVIEW | no          |
 *
 * New asset-networks start DISABLED. Moves: enable (DISABLED or PAUSED -> ENABLED), pause (ENABLED
 * -> PAUSED, with a reason), disable (ENABLED or PAUSED -> DISABLED). Asking for the status an
 * asset-network already has changes nothing (204, no audit entry); the one refused move is pausing a
 * DISABLED asset-network (409): pausing keeps deposits flowing, which a disabled one never had.
 */

/** Whether a status allows each money movement: the one table domain code consults. */
export const statusAllows = {
  newPaymentIntents: (s: AssetNetworkStatus) => s === 'ENABLED',
  addressAllocation: (s: AssetNetworkStatus) => s === 'ENABLED',
  /** Crediting a deposit detected now; DISABLED sends it UNDER_REVIEW instead. */
  depositCrediting: (s: AssetNetworkStatus) => s === 'ENABLED' || s === 'PAUSED',
  withdrawals: (s: AssetNetworkStatus) => s === 'ENABLED',
} as const;

export const createAssetInput = z.object({
  code: z
    .string()
    .trim()
    .regex(/^[A-Z0-9][A-Z0-9._-]{0,31}$/, 'must be 1 to 32 characters: upper-case letters, digits, ".", "_" or "-" (e.g. USDC)'),
  name: z.string().trim().min(1, 'must not be empty').max(200),
  decimals: z.number().int('must be an integer').min(0).max(36),
});

export const createNetworkInput = z
  .object({
    name: z.string().trim().min(1, 'must not be empty').max(100),
    kind: z.enum(['SANDBOX', 'EVM', 'UTXO', 'TRON', 'SOLANA']),
    environmentType: z.enum(['SANDBOX', 'PRODUCTION']),
    blockTimeSeconds: z.number().int('must be an integer').min(1).max(86_400),
    requiredConfirmations: z.number().int('must be an integer').min(0).max(1000),
  })
  .superRefine((v, ctx) => {
    if (v.kind === 'SANDBOX' && v.environmentType !== 'SANDBOX')
      ctx.addIssue({ code: 'custom', path: ['environmentType'], message: 'a SANDBOX network serves SANDBOX environments only' });
    // Issue 18: a real network (EVM, UTXO, TRON, SOLANA) moves real money: PRODUCTION environments only.
    if (v.kind !== 'SANDBOX' && v.environmentType !== 'PRODUCTION')
      ctx.addIssue({
        code: 'custom',
        path: ['environmentType'],
        message: `a ${v.kind} network moves real money: it serves PRODUCTION environments only (sandbox environments use SANDBOX networks)`,
      });
  });

export const createAssetNetworkInput = z.object({
  assetId: z.string(),
  networkId: z.string(),
  decimals: z.number().int('must be an integer').min(0).max(36),
  contractReference: z.string().trim().min(1, 'must not be empty').max(200).nullish(),
  minimumDeposit: amountText.nullish(),
});

export const pauseInput = z.object({ reason: z.string().trim().min(1, 'must not be empty').max(1000) });

export async function loadAsset(db: Db, idArg: unknown) {
  const row = await db.asset.findUnique({ where: { id: assertId(idArg, 'Asset') } });
  if (!row) throw notFound('Asset');
  return row;
}
export async function loadNetwork(db: Db, idArg: unknown) {
  const row = await db.network.findUnique({ where: { id: assertId(idArg, 'Network') } });
  if (!row) throw notFound('Network');
  return row;
}
export async function loadAssetNetwork(db: Db, idArg: unknown) {
  const row = await db.assetNetwork.findUnique({ where: { id: assertId(idArg, 'AssetNetwork') } });
  if (!row) throw notFound('AssetNetwork');
  return row;
}

export async function createAsset(ctx: Context, input: z.infer<typeof createAssetInput>) {
  try {
    return await ctx.deps.db.$transaction(async (tx) => {
      const row = await tx.asset.create({ data: { code: input.code, name: input.name, decimals: input.decimals, createdAt: ctx.deps.clock.now() } });
      await audit(tx, ctx, {
        organizationId: null,
        entityType: 'Asset',
        entityId: row.id,
        action: 'asset.created',
        after: { code: row.code, name: row.name, decimals: row.decimals },
      });
      return row;
    });
  } catch (e) {
    if (isUniqueViolation(e)) throw new DomainError('CONFLICT', `An asset with code ${input.code} exists already.`);
    throw e;
  }
}

export async function createNetwork(ctx: Context, input: z.infer<typeof createNetworkInput>) {
  try {
    return await ctx.deps.db.$transaction(async (tx) => {
      const row = await tx.network.create({ data: { ...input, createdAt: ctx.deps.clock.now() } });
      await audit(tx, ctx, { organizationId: null, entityType: 'Network', entityId: row.id, action: 'network.created', after: { ...input } });
      return row;
    });
  } catch (e) {
    if (isUniqueViolation(e)) throw new DomainError('CONFLICT', `A network named ${input.name} exists already.`);
    throw e;
  }
}

export async function createAssetNetwork(ctx: Context, input: z.infer<typeof createAssetNetworkInput>) {
  const db = ctx.deps.db;
  if (!isUuid(input.assetId) || !(await db.asset.findUnique({ where: { id: input.assetId.toLowerCase() }, select: { id: true } })))
    throw fieldError('assetId', 'must be the id of an asset of the catalog');
  if (!isUuid(input.networkId) || !(await db.network.findUnique({ where: { id: input.networkId.toLowerCase() }, select: { id: true } })))
    throw fieldError('networkId', 'must be the id of a network of the catalog');
  const minimumDeposit = parseAmount(input.minimumDeposit ?? '0');
  const now = ctx.deps.clock.now();
  try {
    return await db.$transaction(async (tx) => {
      const row = await tx.assetNetwork.create({
        data: {
          assetId: input.assetId.toLowerCase(),
          networkId: input.networkId.toLowerCase(),
          decimals: input.decimals,
          contractReference: input.contractReference ?? null,
          minimumDeposit: amountToString(minimumDeposit),
          status: 'DISABLED',
          statusChangedAt: now,
          createdAt: now,
          updatedAt: now,
        },
      });
      await audit(tx, ctx, {
        organizationId: null,
        entityType: 'AssetNetwork',
        entityId: row.id,
        action: 'asset_network.created',
        after: {
          assetId: row.assetId,
          networkId: row.networkId,
          decimals: row.decimals,
          contractReference: row.contractReference,
          minimumDeposit: amountToString(minimumDeposit),
          status: row.status,
        },
      });
      return row;
    });
  } catch (e) {
    if (isUniqueViolation(e)) throw new DomainError('CONFLICT', 'The asset is on this network already (one asset-network per asset and network).');
    throw e;
  }
}

const moves = {
  enable: { from: ['DISABLED', 'PAUSED'], to: 'ENABLED', action: 'asset_network.enabled' },
  pause: { from: ['ENABLED'], to: 'PAUSED', action: 'asset_network.paused' },
  disable: { from: ['ENABLED', 'PAUSED'], to: 'DISABLED', action: 'asset_network.disabled' },
} as const satisfies Record<string, { from: readonly AssetNetworkStatus[]; to: AssetNetworkStatus; action: string }>;

/** Enable, pause (with a reason) or disable. The status it has already: no change. Pausing a DISABLED one: 409. */
export async function changeStatus(ctx: Context, idArg: unknown, move: keyof typeof moves, reason?: string) {
  const current = await loadAssetNetwork(ctx.deps.db, idArg);
  const { from, to, action } = moves[move];
  if (current.status === to) return current;
  if (!(from as readonly AssetNetworkStatus[]).includes(current.status))
    throw invalidState(`A ${current.status} asset-network cannot be paused: enable it first.`);
  const now = ctx.deps.clock.now();
  return ctx.deps.db.$transaction(async (tx) => {
    // Conditional on the status read: a concurrent move makes this one start over (409 if it no longer applies).
    const rows = await tx.assetNetwork.updateManyAndReturn({
      where: { id: current.id, status: current.status },
      data: { status: to, statusReason: to === 'PAUSED' ? (reason ?? null) : null, statusChangedAt: now, updatedAt: now },
    });
    if (!rows.length) throw new DomainError('CONFLICT', 'The asset-network changed meanwhile; read it again and retry.');
    await audit(tx, ctx, {
      organizationId: null,
      entityType: 'AssetNetwork',
      entityId: current.id,
      action,
      before: { status: current.status, statusReason: current.statusReason },
      after: { status: to, statusReason: rows[0]!.statusReason },
    });
    return rows[0]!;
  });
}
