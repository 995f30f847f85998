import { z } from 'zod';
import type { Context } from '../../context';
import type { Db } from '../../db/prisma';
import type { NetworkKind } from '../../generated/prisma/enums';
import type {
  Network,
  NetworkExecutionMarginPolicy,
  NetworkExecutionQuote,
  NetworkResourceCostTable,
  NetworkResourcePrice,
} from '../../generated/prisma/client';
import { fieldError, invalidState, notFound, parseInput } from '../../errors';
import { isUuid } from '../../ids';
import { audit } from '../../audit/audit';
import { requireOperator as requireOperatorOf } from '../../auth/policy';
import { loadEnvironment } from '../../tenancy/access';
import { adapterFor, hasAdapter, networkRef } from '../../chains/adapter';
import { nowFor } from '../../chains/sandbox/clock';
import {
  amountToNumeric,
  amountToString,
  numericToAmount,
  numericToPercentage,
  parseAmount,
  parsePercentage,
  percentageToNumeric,
  percentageToString,
  percentOf,
  type Amount,
  type Percentage,
  positiveAmountText,
  amountText,
  percentageText,
} from '../../money';

/**
 * Network execution costs (docs/network-costs.md): what a withdrawal or a sweep costs on its
 * network, in base units of the network's NATIVE asset.
 *
 * - Resource quantities: the network adapter's estimateFee where an adapter exists (the sandbox:
 *   gas), else the built-in profile of the network kind (TRON: energy and bandwidth of a transfer).
 * - Prices: the network's resource cost table in force (versioned; resource -> unit price); with no
 *   table, the adapter's own fee; with neither, the quote is refused (409).
 * - Margin: the margin policy in force (versioned; the asset-network's own, else the global one):
 *   percentOf(networkCost, percentage, 'halfUp') + fixedAmount. total = networkCost + margin.
 * - A quote is valid for QUOTE_TTL_SECONDS.
 */

export const QUOTE_TTL_SECONDS = 60;
export type NetworkOperation = 'WITHDRAWAL' | 'SWEEP';

/**
 * Resource quantities of one transfer by network kind, for kinds without an adapter in this version.
 * TRON: a TRC-20 transfer burns about 65,000 energy and 345 bandwidth points; a native TRX transfer
 * about 270 bandwidth points and no energy.
 */
export const RESOURCE_PROFILES: Partial<Record<NetworkKind, { token: Record<string, bigint>; native: Record<string, bigint> }>> = {
  TRON: { token: { energy: 65_000n, bandwidth: 345n }, native: { energy: 0n, bandwidth: 270n } },
};

/** The resources a TRON cost table prices. */
export const TRON_RESOURCES = ['energy', 'bandwidth'] as const;

export interface NetworkExecutionQuoteResult {
  assetNetworkId: string;
  networkId: string;
  operation: NetworkOperation;
  amount: Amount;
  /** Resource name -> quantity. */
  resources: Record<string, bigint>;
  /** COST_TABLE: resources x the table's prices; ADAPTER: the adapter's own fee. */
  costSource: 'COST_TABLE' | 'ADAPTER';
  networkCost: Amount;
  margin: Amount;
  total: Amount;
  costTableVersion: number | null;
  marginPolicyVersion: number | null;
  marginPercentage: Percentage;
  marginFixedAmount: Amount;
}

type CostTable = NetworkResourceCostTable & { prices: NetworkResourcePrice[] };

/** The margin policy in force at `at`: the asset-network's own latest version, else the global one, or null. */
export async function marginPolicyInForce(tx: Db, assetNetworkId: string, at: Date): Promise<NetworkExecutionMarginPolicy | null> {
  const own = await tx.networkExecutionMarginPolicy.findFirst({ where: { assetNetworkId, createdAt: { lte: at } }, orderBy: { version: 'desc' } });
  return own ?? tx.networkExecutionMarginPolicy.findFirst({ where: { assetNetworkId: null, createdAt: { lte: at } }, orderBy: { version: 'desc' } });
}

/** Σ quantity x unit price; a resource the table does not price is refused (409). */
export function priceResources(
  resources: Record<string, bigint>,
  table: { version: number; prices: { resource: string; unitPrice: Parameters<typeof numericToAmount>[0] }[] },
): Amount {
  const prices = new Map(table.prices.map((p) => [p.resource, numericToAmount(p.unitPrice)]));
  let cost = 0n;
  for (const [name, qty] of Object.entries(resources)) {
    if (qty === 0n) continue;
    const price = prices.get(name);
    if (price === undefined) throw invalidState(`the network's cost table (version ${table.version}) has no price for the resource "${name}"`);
    cost += qty * price;
  }
  return cost;
}

/** The margin on a network cost: percentOf(cost, percentage, 'halfUp') + fixed. */
export function marginOf(
  cost: Amount,
  policy: { percentage: Parameters<typeof numericToPercentage>[0]; fixedAmount: Parameters<typeof numericToAmount>[0] } | null,
): { margin: Amount; percentage: Percentage; fixed: Amount } {
  if (!policy) return { margin: 0n, percentage: 0n, fixed: 0n };
  const percentage = numericToPercentage(policy.percentage);
  const fixed = numericToAmount(policy.fixedAmount);
  return { margin: percentOf(cost, percentage, 'halfUp') + fixed, percentage, fixed };
}

/** What an operation costs the network, before any margin (the part the resource reserve pays). */
export type NetworkCost = Pick<
  NetworkExecutionQuoteResult,
  'assetNetworkId' | 'networkId' | 'operation' | 'amount' | 'resources' | 'costSource' | 'networkCost' | 'costTableVersion'
>;

/**
 * The network cost of an operation, without the margin: the resources (the adapter's estimate, else
 * the kind's fixed profile) priced by the cost table in force, else the adapter's own fee. No side
 * effects: withdrawals and sweeps call it in the transaction that broadcasts (what the reserve pays).
 * Throws 404 for an unknown asset-network and 409 when the network can be neither estimated nor priced.
 */
export async function networkCostOf(tx: Db, q: { assetNetworkId: string; operation: NetworkOperation; amount: bigint; at: Date }): Promise<NetworkCost> {
  return (await networkCostsOf(tx, { ...q, amounts: [q.amount] }))[0]!;
}

/**
 * networkCostOf for several amounts of one asset-network and operation (a broadcast group, issue 22):
 * the asset-network and the cost table in force are read once; each amount is estimated and priced.
 */
export async function networkCostsOf(
  tx: Db,
  q: { assetNetworkId: string; operation: NetworkOperation; amounts: readonly bigint[]; at: Date },
): Promise<NetworkCost[]> {
  // The asset-network, its network and the cost table in force at `at` (the highest version configured
  // by then; none: null) with its prices, in one raw statement (issue 22: read by every broadcast group,
  // in its transaction).
  const [an] = isUuid(q.assetNetworkId)
    ? await tx.$queryRaw<
        {
          id: string;
          contractReference: string | null;
          network: Pick<Network, 'id' | 'name' | 'kind' | 'requiredConfirmations'>;
          tableVersion: number | null;
          prices: { resource: string; unitPrice: string }[] | null;
        }[]
      >`
        SELECT an."id"::text AS "id", an."contractReference",
               json_build_object('id', n."id", 'name', n."name", 'kind', n."kind", 'requiredConfirmations', n."requiredConfirmations") AS "network",
               t."version" AS "tableVersion",
               (SELECT json_agg(json_build_object('resource', p."resource", 'unitPrice', p."unitPrice"::text)) FROM "NetworkResourcePrice" p WHERE p."costTableId" = t."id") AS "prices"
          FROM "AssetNetwork" an JOIN "Network" n ON n."id" = an."networkId"
          LEFT JOIN LATERAL (
            SELECT c."id", c."version" FROM "NetworkResourceCostTable" c WHERE c."networkId" = n."id" AND c."createdAt" <= ${q.at} ORDER BY c."version" DESC LIMIT 1
          ) t ON true
         WHERE an."id" = ${q.assetNetworkId.toLowerCase()}::uuid`
    : [];
  if (!an) throw notFound('Asset-network');
  const network = an.network;
  const table = an.tableVersion === null ? null : { version: an.tableVersion, prices: an.prices ?? [] };
  const out: NetworkCost[] = [];
  for (const amount of q.amounts) {
    let resources: Record<string, bigint>;
    let adapterFee: bigint | null = null;
    if (hasAdapter(network.kind)) {
      const est = await adapterFor(network.kind, tx).estimateFee(networkRef(network), {
        kind: q.operation === 'SWEEP' ? 'sweep' : 'transfer',
        assetNetworkId: an.id,
        amount,
      });
      resources = { ...est.resources };
      adapterFee = est.fee;
    } else {
      const profile = RESOURCE_PROFILES[network.kind];
      if (!profile) throw invalidState(`network execution costs of ${network.kind} networks cannot be estimated in this version`);
      resources = { ...(an.contractReference ? profile.token : profile.native) };
    }
    let networkCost: bigint;
    if (table) networkCost = priceResources(resources, table);
    else if (adapterFee !== null) networkCost = adapterFee;
    else throw invalidState(`no resource cost table is configured for the network ${network.name}`);
    out.push({
      assetNetworkId: an.id,
      networkId: network.id,
      operation: q.operation,
      amount,
      resources,
      costSource: table ? 'COST_TABLE' : 'ADAPTER',
      networkCost,
      costTableVersion: table?.version ?? null,
    });
  }
  return out;
}

/** The network execution quote of an operation: its network cost (networkCostOf) plus the margin policy in force. No side effects. */
export async function quoteNetworkExecution(
  tx: Db,
  q: { assetNetworkId: string; operation: NetworkOperation; amount: bigint; at: Date },
): Promise<NetworkExecutionQuoteResult> {
  const cost = await networkCostOf(tx, q);
  const policy = await marginPolicyInForce(tx, cost.assetNetworkId, q.at);
  const { margin, percentage, fixed } = marginOf(cost.networkCost, policy);
  return {
    ...cost,
    margin,
    total: cost.networkCost + margin,
    marginPolicyVersion: policy?.version ?? null,
    marginPercentage: percentage,
    marginFixedAmount: fixed,
  };
}

// ---------------------------------------------------------------------------------------------
// Commands

export const quoteInput = z.object({
  assetNetworkId: z.string(),
  operation: z.enum(['WITHDRAWAL', 'SWEEP']),
  amount: positiveAmountText,
});
export const tronCostTableInput = z.object({ networkId: z.string(), energyPrice: amountText, bandwidthPrice: amountText });
export const costTableInput = z.object({
  networkId: z.string(),
  prices: z
    .array(z.object({ resource: z.string().regex(/^[a-z][a-z0-9_]{0,39}$/, 'must be a lower-case resource name, e.g. "gas"'), unitPrice: amountText }))
    .min(1, 'names at least one resource')
    .max(20)
    .refine((ps) => new Set(ps.map((p) => p.resource)).size === ps.length, 'names each resource once'),
});
export const marginPolicyInput = z
  .object({ assetNetworkId: z.string().nullish(), percentage: percentageText.nullish(), fixedAmount: amountText.nullish() })
  .refine((v) => v.assetNetworkId || v.fixedAmount == null || v.fixedAmount === '0', {
    path: ['fixedAmount'],
    message: 'is in native base units of one network: name the assetNetworkId (the global margin is a percentage only)',
  });

const parse = parseInput;

const requireOperator = (ctx: Context) => requireOperatorOf(ctx.principal, ctx.credentialError);

/** The wire form of a quote result. */
export function resourcesToWire(resources: Record<string, bigint>): Record<string, string> {
  return Object.fromEntries(Object.entries(resources).map(([k, v]) => [k, amountToString(v)]));
}

/**
 * GetNetworkExecutionQuote: members (account-read) of the environment's organization and the
 * environment's own API keys. The asset-network's network must be of the environment's type.
 */
export async function createQuote(ctx: Context, environmentId: string, rawInput: unknown): Promise<NetworkExecutionQuote> {
  const env = await loadEnvironment(ctx, environmentId);
  if (ctx.principal?.type === 'apiKey' && ctx.principal.environmentId !== env.id) throw notFound('Environment');
  const input = parse(quoteInput, rawInput);
  const db = ctx.deps.db;
  const an = isUuid(input.assetNetworkId)
    ? await db.assetNetwork.findUnique({ where: { id: input.assetNetworkId.toLowerCase() }, include: { network: true } })
    : null;
  if (!an) throw fieldError('assetNetworkId', 'must be the id of an asset-network of the catalog');
  if (an.network.environmentType !== env.type) throw fieldError('assetNetworkId', `must be an asset-network of a ${env.type} network (the environment's type)`);
  const at = await nowFor(db, ctx.deps.clock, env.organizationId, env.type);
  const q = await quoteNetworkExecution(db, { assetNetworkId: an.id, operation: input.operation, amount: parseAmount(input.amount), at });
  return db.networkExecutionQuote.create({
    data: {
      organizationId: env.organizationId,
      environmentId: env.id,
      assetNetworkId: an.id,
      networkId: an.networkId,
      operation: q.operation,
      amount: amountToNumeric(q.amount),
      resources: resourcesToWire(q.resources),
      networkCost: amountToNumeric(q.networkCost),
      margin: amountToNumeric(q.margin),
      total: amountToNumeric(q.total),
      costSource: q.costSource,
      costTableVersion: q.costTableVersion,
      marginPolicyVersion: q.marginPolicyVersion,
      expiresAt: new Date(at.getTime() + QUOTE_TTL_SECONDS * 1000),
      createdAt: ctx.deps.clock.now(),
    },
  });
}

/** The next version of a network's cost table (operators). `tron`: the route of TRON networks only. */
export async function configureCostTable(
  ctx: Context,
  networkIdArg: string,
  prices: { resource: string; unitPrice: string }[],
  opts: { tronOnly: boolean },
): Promise<CostTable> {
  const operatorId = requireOperator(ctx);
  const db = ctx.deps.db;
  const network = isUuid(networkIdArg) ? await db.network.findUnique({ where: { id: networkIdArg.toLowerCase() } }) : null;
  if (!network) throw fieldError('networkId', 'must be the id of a network of the catalog');
  if (opts.tronOnly && network.kind !== 'TRON')
    throw fieldError('networkId', `must be a TRON network (this one is ${network.kind}); other networks: adminConfigureNetworkResourceCostTable`);
  const now = ctx.deps.clock.now();
  return db.$transaction(async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${'cost-table:' + network.id}, 0))`;
    const last = await tx.networkResourceCostTable.findFirst({ where: { networkId: network.id }, orderBy: { version: 'desc' }, select: { version: true } });
    const row = await tx.networkResourceCostTable.create({
      data: {
        networkId: network.id,
        version: (last?.version ?? 0) + 1,
        createdByOperatorId: operatorId,
        createdAt: now,
        prices: { create: prices.map((p) => ({ resource: p.resource, unitPrice: amountToNumeric(parseAmount(p.unitPrice)) })) },
      },
      include: { prices: true },
    });
    await audit(tx, ctx, {
      organizationId: null,
      entityType: 'NetworkResourceCostTable',
      entityId: row.id,
      action: 'network_cost_table.configured',
      after: { networkId: network.id, version: row.version, prices: Object.fromEntries(prices.map((p) => [p.resource, p.unitPrice])) },
    });
    return row;
  });
}

export function configureTronCostTable(ctx: Context, rawInput: unknown) {
  requireOperator(ctx);
  const input = parse(tronCostTableInput, rawInput);
  return configureCostTable(
    ctx,
    input.networkId,
    [
      { resource: 'energy', unitPrice: input.energyPrice },
      { resource: 'bandwidth', unitPrice: input.bandwidthPrice },
    ],
    { tronOnly: true },
  );
}

export function configureGenericCostTable(ctx: Context, rawInput: unknown) {
  requireOperator(ctx);
  const input = parse(costTableInput, rawInput);
  return configureCostTable(ctx, input.networkId, input.prices, { tronOnly: false });
}

/** The next version of the margin policy of an asset-network, or of the global one (operators). */
export async function configureMarginPolicy(ctx: Context, rawInput: unknown): Promise<NetworkExecutionMarginPolicy> {
  const operatorId = requireOperator(ctx);
  const input = parse(marginPolicyInput, rawInput);
  const db = ctx.deps.db;
  let assetNetworkId: string | null = null;
  if (input.assetNetworkId) {
    const an = isUuid(input.assetNetworkId)
      ? await db.assetNetwork.findUnique({ where: { id: input.assetNetworkId.toLowerCase() }, select: { id: true } })
      : null;
    if (!an) throw fieldError('assetNetworkId', 'must be the id of an asset-network of the catalog');
    assetNetworkId = an.id;
  }
  const pct = parsePercentage(input.percentage ?? '0');
  const fixed = parseAmount(input.fixedAmount ?? '0');
  const now = ctx.deps.clock.now();
  return db.$transaction(async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${'margin-policy:' + (assetNetworkId ?? '-')}, 0))`;
    const last = await tx.networkExecutionMarginPolicy.findFirst({ where: { assetNetworkId }, orderBy: { version: 'desc' }, select: { version: true } });
    const row = await tx.networkExecutionMarginPolicy.create({
      data: {
        assetNetworkId,
        version: (last?.version ?? 0) + 1,
        percentage: percentageToNumeric(pct),
        fixedAmount: amountToNumeric(fixed),
        createdByOperatorId: operatorId,
        createdAt: now,
      },
    });
    await audit(tx, ctx, {
      organizationId: null,
      entityType: 'NetworkExecutionMarginPolicy',
      entityId: row.id,
      action: 'network_margin_policy.configured',
      after: { assetNetworkId, version: row.version, percentage: percentageToString(pct), fixedAmount: amountToString(fixed) },
    });
    return row;
  });
}
