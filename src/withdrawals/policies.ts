import { z } from 'zod';
import type { Context } from '../context';
import type { PayoutPolicy, WithdrawalPolicy } from '../generated/prisma/client';
import { fieldError, notFound, parseInput } from '../errors';
import { assertId, isUuid } from '../ids';
import { amountToNumeric, positiveAmountText, amountText } from '../money';
import { auditAs } from '../audit/audit';
import { requestActor, TX_OPTIONS } from '../kernel/service';

/**
 * Withdrawal and payout policies (docs/withdrawals.md "Policies"): operator-only, versioned per
 * organization (a configuration writes the next version; the latest is in force). A withdrawal
 * policy may name an asset-network: for that asset-network its latest version wins over the
 * organization-wide one. No policy in force: no limit, nothing waits for an operator, every
 * network and every destination age allowed.
 */

const parse = parseInput;

export const withdrawalPolicyInput = z
  .object({
    perWithdrawalLimit: positiveAmountText.nullish(),
    periodLimit: positiveAmountText.nullish(),
    periodSeconds: z
      .number()
      .int('must be an integer')
      .min(1)
      .max(366 * 86_400)
      .nullish(),
    approvalThreshold: amountText.nullish(),
    assetNetworkId: z.string().refine(isUuid, 'must be an asset-network id (uuid)').nullish(),
  })
  .strict()
  .superRefine((v, c) => {
    if ((v.periodLimit == null) !== (v.periodSeconds == null))
      c.addIssue({ code: 'custom', path: [v.periodLimit == null ? 'periodLimit' : 'periodSeconds'], message: 'periodLimit and periodSeconds go together' });
  });

export const payoutPolicyInput = z
  .object({
    allowedNetworkIds: z.array(z.string().refine(isUuid, 'must be network ids (uuid)')).max(100).nullish(),
    minimumDestinationAgeSeconds: z
      .number()
      .int('must be an integer')
      .min(0)
      .max(366 * 86_400)
      .nullish(),
    requireApprovalForNewDestination: z.boolean().nullish(),
  })
  .strict();

async function organizationOf(ctx: Context, idArg: unknown): Promise<string> {
  const id = assertId(idArg, 'Organization');
  if (ctx.principal?.type !== 'operator') throw notFound('Organization');
  const org = await ctx.deps.db.organization.findUnique({ where: { id }, select: { id: true } });
  if (!org) throw notFound('Organization');
  return org.id;
}

/** AdminConfigureWithdrawalPolicy: the next version for (organization, asset-network or none). */
export async function configureWithdrawalPolicy(ctx: Context, organizationIdArg: unknown, input: unknown): Promise<WithdrawalPolicy> {
  const organizationId = await organizationOf(ctx, organizationIdArg);
  const data = parse(withdrawalPolicyInput, input);
  const p = ctx.principal;
  if (p?.type !== 'operator') throw notFound('Organization');
  const assetNetworkId = data.assetNetworkId?.toLowerCase() ?? null;
  if (assetNetworkId && !(await ctx.deps.db.assetNetwork.findUnique({ where: { id: assetNetworkId }, select: { id: true } })))
    throw fieldError('assetNetworkId', 'is not an asset-network of the catalog');
  return ctx.deps.db.$transaction(async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${`withdrawal-policy ${organizationId} ${assetNetworkId ?? '-'}`}, 0))`;
    const last = await tx.withdrawalPolicy.findFirst({ where: { organizationId, assetNetworkId }, orderBy: { version: 'desc' }, select: { version: true } });
    const row = await tx.withdrawalPolicy.create({
      data: {
        organizationId,
        assetNetworkId,
        version: (last?.version ?? 0) + 1,
        perWithdrawalLimit: data.perWithdrawalLimit ?? null,
        periodLimit: data.periodLimit ?? null,
        periodSeconds: data.periodSeconds ?? null,
        approvalThreshold: data.approvalThreshold ?? null,
        operatorId: p.operatorId,
        createdAt: ctx.deps.clock.now(),
      },
    });
    await auditAs(tx, ctx.deps, requestActor(ctx), {
      organizationId,
      entityType: 'WithdrawalPolicy',
      entityId: row.id,
      action: 'withdrawal_policy.configured',
      after: { version: row.version, assetNetworkId, ...data },
    });
    return row;
  }, TX_OPTIONS);
}

/** AdminConfigurePayoutPolicy: the next version of the organization's destination rules. */
export async function configurePayoutPolicy(ctx: Context, organizationIdArg: unknown, input: unknown): Promise<PayoutPolicy> {
  const organizationId = await organizationOf(ctx, organizationIdArg);
  const data = parse(payoutPolicyInput, input);
  const p = ctx.principal;
  if (p?.type !== 'operator') throw notFound('Organization');
  const networkIds = [...new Set((data.allowedNetworkIds ?? []).map((n) => n.toLowerCase()))];
  if (networkIds.length) {
    const found = await ctx.deps.db.network.count({ where: { id: { in: networkIds } } });
    if (found !== networkIds.length) throw fieldError('allowedNetworkIds', 'must be networks of the catalog');
  }
  return ctx.deps.db.$transaction(async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${`payout-policy ${organizationId}`}, 0))`;
    const last = await tx.payoutPolicy.findFirst({ where: { organizationId }, orderBy: { version: 'desc' }, select: { version: true } });
    const row = await tx.payoutPolicy.create({
      data: {
        organizationId,
        version: (last?.version ?? 0) + 1,
        allowedNetworkIds: networkIds,
        minimumDestinationAgeSeconds: data.minimumDestinationAgeSeconds ?? 0,
        requireApprovalForNewDestination: data.requireApprovalForNewDestination ?? false,
        operatorId: p.operatorId,
        createdAt: ctx.deps.clock.now(),
      },
    });
    await auditAs(tx, ctx.deps, requestActor(ctx), {
      organizationId,
      entityType: 'PayoutPolicy',
      entityId: row.id,
      action: 'payout_policy.configured',
      after: {
        version: row.version,
        allowedNetworkIds: networkIds,
        minimumDestinationAgeSeconds: row.minimumDestinationAgeSeconds,
        requireApprovalForNewDestination: row.requireApprovalForNewDestination,
      },
    });
    return row;
  }, TX_OPTIONS);
}

/** The policies in force (an asset-network's own latest withdrawal policy, else the organization-wide one; the latest payout policy) are read by the request groups: src/withdrawals/requests.ts. */
export { amountToNumeric };

/** Operators' listing (GraphQL): every version of an organization's policies, oldest first. */
export async function listPolicies(ctx: Context, organizationIdArg: unknown) {
  const organizationId = await organizationOf(ctx, organizationIdArg);
  const [withdrawal, payout] = await Promise.all([
    ctx.deps.db.withdrawalPolicy.findMany({ where: { organizationId }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] }),
    ctx.deps.db.payoutPolicy.findMany({ where: { organizationId }, orderBy: { version: 'asc' } }),
  ]);
  return { withdrawal, payout };
}
