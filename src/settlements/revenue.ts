import { z } from 'zod';
import type { Context } from '../context';
import type { RevenueExecutionDestination } from '../generated/prisma/client';
import { fieldError, notFound } from '../errors';
import { isUuid } from '../ids';
import { audit } from '../audit/audit';
import { adapterFor, hasAdapter } from '../chains/adapter';
import { balanceOf } from '../ledger/ledger';

/**
 * The platform's revenue (docs/settlements.md, "Platform revenue"): settlement fees (and refund
 * fees) are credited to one PLATFORM_REVENUE system ledger account per asset-network. Operators
 * name where each asset-network's revenue is paid out (AdminRegisterGlobalRevenueAccountExecutionDestination):
 * every registration is a new version; the newest is in force. Paying the revenue out on the chain
 * is the treasury's work (issue 6): this version records the destination and reports the balance.
 */

export const revenueDestinationInput = z
  .object({
    assetNetworkId: z.string(),
    address: z.string().trim().min(1, 'must not be empty').max(200),
    label: z.string().trim().min(1, 'must not be empty').max(200).nullish(),
  })
  .strict();
export type RevenueDestinationInput = z.infer<typeof revenueDestinationInput>;

const revenueAccount = (assetNetworkId: string) => ({ kind: 'PLATFORM_REVENUE', ownerId: null, organizationId: null, assetNetworkId }) as const;

/** Registers the next destination version of an asset-network (operators). The address must be valid for the network (its adapter says). */
export async function registerRevenueDestination(ctx: Context, input: RevenueDestinationInput): Promise<RevenueExecutionDestination> {
  if (ctx.principal?.type !== 'operator') throw notFound('AssetNetwork');
  const operatorId = ctx.principal.operatorId;
  const an = isUuid(input.assetNetworkId)
    ? await ctx.deps.db.assetNetwork.findUnique({ where: { id: input.assetNetworkId.toLowerCase() }, include: { network: true } })
    : null;
  if (!an) throw fieldError('assetNetworkId', 'must be the id of an asset-network of the catalog');
  if (!hasAdapter(an.network.kind))
    throw fieldError('assetNetworkId', `its network (${an.network.kind}) has no adapter in this version: addresses cannot be validated (docs/chains.md)`);
  if (!adapterFor(an.network.kind).validateAddress(input.address)) throw fieldError('address', `is not a valid ${an.network.kind} address`);
  const now = ctx.deps.clock.now();
  return ctx.deps.db.$transaction(async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${'revenue-destination:' + an.id}, 0))`;
    const last = await tx.revenueExecutionDestination.findFirst({
      where: { assetNetworkId: an.id },
      orderBy: { version: 'desc' },
      select: { version: true, address: true },
    });
    const row = await tx.revenueExecutionDestination.create({
      data: {
        assetNetworkId: an.id,
        version: (last?.version ?? 0) + 1,
        address: input.address,
        label: input.label ?? null,
        createdByOperatorId: operatorId,
        createdAt: now,
      },
    });
    await audit(tx, ctx, {
      organizationId: null,
      entityType: 'RevenueExecutionDestination',
      entityId: row.id,
      action: 'revenue_destination.registered',
      before: last ? { version: last.version, address: last.address } : null,
      after: { assetNetworkId: an.id, version: row.version, address: row.address, label: row.label },
    });
    return row;
  });
}

export interface RevenueOverview {
  assetNetworkId: string;
  balance: Awaited<ReturnType<typeof balanceOf>>;
  destination: RevenueExecutionDestination | null;
}

/** Per asset-network of the catalog: the PLATFORM_REVENUE balance and the destination in force (operators). */
export async function globalRevenueAccount(ctx: Context): Promise<RevenueOverview[]> {
  const db = ctx.deps.db;
  const assetNetworks = await db.assetNetwork.findMany({ select: { id: true }, orderBy: { id: 'asc' } });
  const destinations = await db.revenueExecutionDestination.findMany({
    orderBy: [{ assetNetworkId: 'asc' }, { version: 'desc' }],
    distinct: ['assetNetworkId'],
  });
  const byNetwork = new Map(destinations.map((d) => [d.assetNetworkId, d]));
  const out: RevenueOverview[] = [];
  for (const an of assetNetworks)
    out.push({ assetNetworkId: an.id, balance: await balanceOf(db, revenueAccount(an.id)), destination: byNetwork.get(an.id) ?? null });
  return out;
}
