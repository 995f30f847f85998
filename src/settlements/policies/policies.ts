import { z } from 'zod';
import type { Context } from '../../context';
import type { Db, RawDb } from '../../db/prisma';
import type { PricingPolicy, RefundFeePolicy } from '../../generated/prisma/client';
import type { PolicyScope } from '../../generated/prisma/enums';
import { fieldError } from '../../errors';
import { isUuid } from '../../ids';
import { audit } from '../../audit/audit';
import { denial, policies } from '../../auth/policy';
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
  amountText,
  percentageText,
} from '../../money';

/**
 * The policy core shared by settlements (platform fee: PricingPolicy) and refunds (refund fee:
 * RefundFeePolicy). See docs/settlements.md and docs/refunds.md.
 *
 * Scopes: PLATFORM; ORGANIZATION (organizationId); APPLICATION (organizationId + applicationId);
 * each optionally narrowed to one asset-network. A scope key is (scope, organizationId,
 * applicationId, assetNetworkId). Configuring a key never updates a row: it inserts the next
 * version (previous + 1, under an advisory lock on the key) with its effectiveFrom (default now,
 * may be in the future; a time in the past by up to EFFECTIVE_FROM_TOLERANCE_MS is taken as now,
 * further in the past is 400: a policy never applies retroactively).
 *
 * In force for { organizationId, applicationId, assetNetworkId, at }: among the rows of the keys
 * that match (application rows of that application, organization rows of that organization,
 * platform rows; asset-network equal or null) whose effectiveFrom <= at, the most specific key wins:
 *   APPLICATION+asset-network > APPLICATION > ORGANIZATION+asset-network > ORGANIZATION
 *   > PLATFORM+asset-network > PLATFORM,
 * and within that key the highest version in force. (A newer version with an earlier effectiveFrom
 * supersedes an older version scheduled later: versions are ordered by when they were configured.)
 *
 * Fees: fee = percentOf(amount, percentage, 'halfUp') + fixedAmount, then at least minimumAmount,
 * then at most maximumAmount. Fixed, minimum and maximum are base units of one asset-network, so
 * a policy with any of them names its assetNetworkId (400 otherwise; a CHECK says the same).
 */

export type PolicyKind = 'pricing' | 'refundFee';

/** A time in the past by at most this much is taken as "now" (client clocks drift); more is refused. */
export const EFFECTIVE_FROM_TOLERANCE_MS = 5_000;

/** The command of AdminConfigurePricingPolicy and AdminConfigureRefundFeePolicy (the latter also takes allowReversalAfterSettlement). */
export const policyInput = z
  .object({
    scope: z.enum(['PLATFORM', 'ORGANIZATION', 'APPLICATION']),
    organizationId: z.string().nullish(),
    applicationId: z.string().nullish(),
    assetNetworkId: z.string().nullish(),
    percentage: percentageText.nullish(),
    fixedAmount: amountText.nullish(),
    minimumAmount: amountText.nullish(),
    maximumAmount: amountText.nullish(),
    effectiveFrom: z.date().nullish(),
    allowReversalAfterSettlement: z.boolean().nullish(),
  })
  .superRefine((v, ctx) => {
    const issue = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });
    if (v.scope === 'PLATFORM') {
      if (v.organizationId) issue('organizationId', 'a PLATFORM policy names no organization');
      if (v.applicationId) issue('applicationId', 'a PLATFORM policy names no application');
    } else if (v.scope === 'ORGANIZATION') {
      if (!v.organizationId) issue('organizationId', 'an ORGANIZATION policy names its organization');
      if (v.applicationId) issue('applicationId', 'an ORGANIZATION policy names no application (use scope APPLICATION)');
    } else if (!v.applicationId) issue('applicationId', 'an APPLICATION policy names its application');
    if (!v.assetNetworkId)
      for (const f of ['fixedAmount', 'minimumAmount', 'maximumAmount'] as const)
        if (v[f] != null && (f === 'maximumAmount' || v[f] !== '0'))
          issue(f, 'is in base units of one asset-network: name the assetNetworkId (a policy for every asset-network is a percentage only)');
    if (
      v.minimumAmount != null &&
      v.maximumAmount != null &&
      /^\d+$/.test(v.minimumAmount) &&
      /^\d+$/.test(v.maximumAmount) &&
      BigInt(v.maximumAmount) < BigInt(v.minimumAmount)
    )
      issue('maximumAmount', 'must be at least minimumAmount');
  });

export type PolicyInput = z.infer<typeof policyInput>;

export interface FeeTerms {
  percentage: { toFixed(dp: number): string } | string;
  fixedAmount: Parameters<typeof numericToAmount>[0];
  minimumAmount: Parameters<typeof numericToAmount>[0];
  maximumAmount: Parameters<typeof numericToAmount>[0] | null;
}

/**
 * The fee of `amount` under a policy (none: 0): percentOf(amount, percentage, 'halfUp') + fixed,
 * then at least the minimum, then at most the maximum. The caller refuses a fee above the amount.
 */
export function computeFee(amount: bigint, policy: FeeTerms | null): { fee: bigint; percentage: Percentage } {
  if (!policy) return { fee: 0n, percentage: 0n };
  const pct = numericToPercentage(policy.percentage);
  let fee = percentOf(amount, pct, 'halfUp') + numericToAmount(policy.fixedAmount);
  const min = numericToAmount(policy.minimumAmount);
  if (fee < min) fee = min;
  if (policy.maximumAmount !== null && policy.maximumAmount !== undefined) {
    const max = numericToAmount(policy.maximumAmount);
    if (fee > max) fee = max;
  }
  return { fee, percentage: pct };
}

export interface PolicyQuery {
  organizationId: string;
  applicationId: string;
  assetNetworkId: string;
  at: Date;
}

/** Specificity rank of a row for the query (higher wins). */
function rank(row: { scope: PolicyScope; assetNetworkId: string | null }): number {
  const base = row.scope === 'APPLICATION' ? 4 : row.scope === 'ORGANIZATION' ? 2 : 0;
  return base + (row.assetNetworkId ? 1 : 0);
}

function candidatesWhere(q: PolicyQuery) {
  return {
    effectiveFrom: { lte: q.at },
    OR: [{ assetNetworkId: q.assetNetworkId }, { assetNetworkId: null }],
    AND: [
      {
        OR: [
          { scope: 'APPLICATION' as const, organizationId: q.organizationId, applicationId: q.applicationId },
          { scope: 'ORGANIZATION' as const, organizationId: q.organizationId },
          { scope: 'PLATFORM' as const },
        ],
      },
    ],
  };
}

function pick<T extends { scope: PolicyScope; assetNetworkId: string | null; version: number }>(rows: T[]): T | null {
  let best: T | null = null;
  for (const r of rows) {
    if (!best || rank(r) > rank(best) || (rank(r) === rank(best) && r.version > best.version)) best = r;
  }
  return best;
}

/** The pricing policy (platform fee of settlements) in force, or null (no fee). */
export async function pricingPolicyInForce(tx: Db, q: PolicyQuery): Promise<PricingPolicy | null> {
  return pick(await tx.pricingPolicy.findMany({ where: candidatesWhere(q) }));
}

/**
 * The pricing policies that may apply to the query's scope at any time (every effectiveFrom), for a
 * caller that asks at several times (a group of settlements): pricingPolicyAt picks the one in
 * force at a time, as pricingPolicyInForce does.
 */
export function pricingPolicyCandidates(tx: RawDb, q: Omit<PolicyQuery, 'at'>): Promise<PricingPolicy[]> {
  // Raw (issue 22): the settlement groups read it on a pool transaction; candidatesWhere's scopes, every effectiveFrom.
  return tx.$queryRaw<PricingPolicy[]>`
    SELECT * FROM "PricingPolicy"
     WHERE ("assetNetworkId" = ${q.assetNetworkId}::uuid OR "assetNetworkId" IS NULL)
       AND (("scope" = 'APPLICATION' AND "organizationId" = ${q.organizationId}::uuid AND "applicationId" = ${q.applicationId}::uuid)
         OR ("scope" = 'ORGANIZATION' AND "organizationId" = ${q.organizationId}::uuid)
         OR "scope" = 'PLATFORM')`;
}
export const pricingPolicyAt = (candidates: readonly PricingPolicy[], at: Date): PricingPolicy | null =>
  pick(candidates.filter((p) => p.effectiveFrom.getTime() <= at.getTime()));

/** The refund fee policy in force, or null (no fee; no reversal after settlement). */
export async function refundFeePolicyInForce(tx: Db, q: PolicyQuery): Promise<RefundFeePolicy | null> {
  return pick(await tx.refundFeePolicy.findMany({ where: candidatesWhere(q) }));
}

/** The wire form of a policy's terms (audit entries, API answers). */
export function policyTerms(p: PricingPolicy | RefundFeePolicy) {
  return {
    scope: p.scope,
    organizationId: p.organizationId,
    applicationId: p.applicationId,
    assetNetworkId: p.assetNetworkId,
    version: p.version,
    percentage: percentageToString(numericToPercentage(p.percentage)),
    fixedAmount: amountToString(numericToAmount(p.fixedAmount)),
    minimumAmount: amountToString(numericToAmount(p.minimumAmount)),
    maximumAmount: p.maximumAmount === null ? null : amountToString(numericToAmount(p.maximumAmount)),
    effectiveFrom: p.effectiveFrom.toISOString(),
    ...('allowReversalAfterSettlement' in p ? { allowReversalAfterSettlement: p.allowReversalAfterSettlement } : {}),
  };
}

/**
 * Configures the next version of a scope key (operators only). Validates the command (the zod
 * schema again, so REST, GraphQL and direct callers get the same 400s), that the organization,
 * application (of that organization) and asset-network exist, and writes the row and its audit
 * entry in one transaction.
 */
export async function configurePolicy(ctx: Context, kind: 'pricing', input: PolicyInput): Promise<PricingPolicy>;
export async function configurePolicy(ctx: Context, kind: 'refundFee', input: PolicyInput): Promise<RefundFeePolicy>;
export async function configurePolicy(ctx: Context, kind: PolicyKind, input: PolicyInput): Promise<PricingPolicy | RefundFeePolicy>;
export async function configurePolicy(ctx: Context, kind: PolicyKind, rawInput: PolicyInput): Promise<PricingPolicy | RefundFeePolicy> {
  const principal = ctx.principal;
  if (principal?.type !== 'operator' || ctx.credentialError) throw denial(policies.operator, principal, ctx.credentialError);
  const parsed = policyInput.safeParse(rawInput);
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    throw fieldError(i.path.map(String).join('.') || '(input)', i.message, i.code);
  }
  const input = parsed.data;
  if (kind === 'pricing' && input.allowReversalAfterSettlement != null)
    throw fieldError('allowReversalAfterSettlement', 'is a term of refund fee policies only');
  const db = ctx.deps.db;

  let organizationId: string | null = null;
  let applicationId: string | null = null;
  if (input.scope === 'APPLICATION') {
    const app = isUuid(input.applicationId)
      ? await db.application.findUnique({ where: { id: input.applicationId.toLowerCase() }, select: { id: true, organizationId: true } })
      : null;
    if (!app) throw fieldError('applicationId', 'must be the id of an application');
    if (input.organizationId && input.organizationId.toLowerCase() !== app.organizationId)
      throw fieldError('organizationId', 'must be the organization of the application (or be left out)');
    organizationId = app.organizationId;
    applicationId = app.id;
  } else if (input.scope === 'ORGANIZATION') {
    const org = isUuid(input.organizationId)
      ? await db.organization.findUnique({ where: { id: input.organizationId.toLowerCase() }, select: { id: true } })
      : null;
    if (!org) throw fieldError('organizationId', 'must be the id of an organization');
    organizationId = org.id;
  }
  let assetNetworkId: string | null = null;
  if (input.assetNetworkId) {
    const an = isUuid(input.assetNetworkId)
      ? await db.assetNetwork.findUnique({ where: { id: input.assetNetworkId.toLowerCase() }, select: { id: true } })
      : null;
    if (!an) throw fieldError('assetNetworkId', 'must be the id of an asset-network of the catalog');
    assetNetworkId = an.id;
  }

  const now = ctx.deps.clock.now();
  let effectiveFrom = input.effectiveFrom ?? now;
  if (effectiveFrom.getTime() < now.getTime() - EFFECTIVE_FROM_TOLERANCE_MS)
    throw fieldError('effectiveFrom', 'must not be in the past (a policy never applies retroactively); leave it out for now');
  if (effectiveFrom < now) effectiveFrom = now;

  const pct: Percentage = parsePercentage(input.percentage ?? '0');
  const fixed: Amount = parseAmount(input.fixedAmount ?? '0');
  const min: Amount = parseAmount(input.minimumAmount ?? '0');
  const max: Amount | null = input.maximumAmount == null ? null : parseAmount(input.maximumAmount);
  const operatorId = principal.operatorId;
  const lockKey = `policy:${kind}:${input.scope}:${organizationId ?? '-'}:${applicationId ?? '-'}:${assetNetworkId ?? '-'}`;

  return db.$transaction(async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${lockKey}, 0))`;
    const key = { scope: input.scope, organizationId, applicationId, assetNetworkId };
    const data = {
      ...key,
      percentage: percentageToNumeric(pct),
      fixedAmount: amountToNumeric(fixed),
      minimumAmount: amountToNumeric(min),
      maximumAmount: max === null ? null : amountToNumeric(max),
      effectiveFrom,
      createdByOperatorId: operatorId,
      createdAt: now,
    };
    let row: PricingPolicy | RefundFeePolicy;
    if (kind === 'pricing') {
      const last = await tx.pricingPolicy.findFirst({ where: key, orderBy: { version: 'desc' }, select: { version: true } });
      row = await tx.pricingPolicy.create({ data: { ...data, version: (last?.version ?? 0) + 1 } });
    } else {
      const last = await tx.refundFeePolicy.findFirst({ where: key, orderBy: { version: 'desc' }, select: { version: true } });
      row = await tx.refundFeePolicy.create({
        data: { ...data, version: (last?.version ?? 0) + 1, allowReversalAfterSettlement: input.allowReversalAfterSettlement ?? false },
      });
    }
    await audit(tx, ctx, {
      organizationId,
      entityType: kind === 'pricing' ? 'PricingPolicy' : 'RefundFeePolicy',
      entityId: row.id,
      action: kind === 'pricing' ? 'pricing_policy.configured' : 'refund_fee_policy.configured',
      after: policyTerms(row),
    });
    return row;
  });
}

export interface PolicyFilter {
  scope?: PolicyScope | null;
  organizationId?: string | number | null;
  applicationId?: string | number | null;
  assetNetworkId?: string | number | null;
}

/** Every version of one kind's policies (operators), oldest first, narrowed by the filter; a malformed id is a 400. */
export async function listPolicies(db: Db, kind: 'pricing', filter: PolicyFilter): Promise<PricingPolicy[]>;
export async function listPolicies(db: Db, kind: 'refundFee', filter: PolicyFilter): Promise<RefundFeePolicy[]>;
export async function listPolicies(db: Db, kind: PolicyKind, filter: PolicyFilter): Promise<(PricingPolicy | RefundFeePolicy)[]> {
  const where: { scope?: PolicyScope; organizationId?: string; applicationId?: string; assetNetworkId?: string } = {};
  if (filter.scope) where.scope = filter.scope;
  for (const k of ['organizationId', 'applicationId', 'assetNetworkId'] as const) {
    const v = filter[k];
    if (v == null) continue;
    if (!isUuid(String(v))) throw fieldError(k, 'must be a uuid');
    where[k] = String(v).toLowerCase();
  }
  return kind === 'pricing' ? db.pricingPolicy.findMany({ where, orderBy: { id: 'asc' } }) : db.refundFeePolicy.findMany({ where, orderBy: { id: 'asc' } });
}
