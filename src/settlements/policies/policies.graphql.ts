import { builder } from '../../builder';
import { amountToString, numericToAmount, numericToPercentage, percentageToString } from '../../money';
import { policies } from '../../auth/policy';
import { listPolicies, policyInput, type PolicyInput } from './policies';

/**
 * Shared GraphQL types of the policy core (src/settlements/policies/policies.ts): the scope enum, the
 * PricingPolicy and RefundFeePolicy objects and their configure inputs. The settlements schema
 * (AdminConfigurePricingPolicy) and the refunds schema (AdminConfigureRefundFeePolicy) import them.
 */

export const PolicyScope = builder.enumType('PolicyScope', {
  description:
    'Who a policy applies to. The most specific in force wins: APPLICATION+asset-network > APPLICATION > ' +
    'ORGANIZATION+asset-network > ORGANIZATION > PLATFORM+asset-network > PLATFORM.',
  values: ['PLATFORM', 'ORGANIZATION', 'APPLICATION'] as const,
});

const amount = (v: Parameters<typeof numericToAmount>[0]) => amountToString(numericToAmount(v));

export const PricingPolicy = builder.prismaObject('PricingPolicy', {
  description:
    'A version of the platform fee of settlements for a scope: fee = percentage of the gross (half up) + ' +
    'fixedAmount, at least minimumAmount, at most maximumAmount. Amounts: base units of the asset-network, decimal ' +
    'strings.',
  fields: (t) => ({
    id: t.exposeID('id'),
    scope: t.expose('scope', { type: PolicyScope }),
    organizationId: t.exposeID('organizationId', { nullable: true }),
    applicationId: t.exposeID('applicationId', { nullable: true }),
    assetNetworkId: t.exposeID('assetNetworkId', { nullable: true, description: 'Null: every asset-network (a percentage only).' }),
    version: t.exposeInt('version', { description: 'Per scope key, from 1; each configuration adds one.' }),
    percentage: t.string({ description: 'Percent, up to 6 decimals ("1.5").', resolve: (p) => percentageToString(numericToPercentage(p.percentage)) }),
    fixedAmount: t.string({ resolve: (p) => amount(p.fixedAmount) }),
    minimumAmount: t.string({ resolve: (p) => amount(p.minimumAmount) }),
    maximumAmount: t.string({ nullable: true, description: 'Null: no maximum.', resolve: (p) => (p.maximumAmount === null ? null : amount(p.maximumAmount)) }),
    effectiveFrom: t.expose('effectiveFrom', { type: 'DateTime' }),
    createdByOperatorId: t.exposeID('createdByOperatorId', { nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

export const RefundFeePolicy = builder.prismaObject('RefundFeePolicy', {
  description:
    'A version of the refund fee for a scope (same scoping and arithmetic as PricingPolicy), and whether a refund ' +
    'may take back what was already settled from the beneficiaries. docs/refunds.md.',
  fields: (t) => ({
    id: t.exposeID('id'),
    scope: t.expose('scope', { type: PolicyScope }),
    organizationId: t.exposeID('organizationId', { nullable: true }),
    applicationId: t.exposeID('applicationId', { nullable: true }),
    assetNetworkId: t.exposeID('assetNetworkId', { nullable: true, description: 'Null: every asset-network (a percentage only).' }),
    version: t.exposeInt('version', { description: 'Per scope key, from 1; each configuration adds one.' }),
    percentage: t.string({ description: 'Percent, up to 6 decimals ("1.5").', resolve: (p) => percentageToString(numericToPercentage(p.percentage)) }),
    fixedAmount: t.string({ resolve: (p) => amount(p.fixedAmount) }),
    minimumAmount: t.string({ resolve: (p) => amount(p.minimumAmount) }),
    maximumAmount: t.string({ nullable: true, description: 'Null: no maximum.', resolve: (p) => (p.maximumAmount === null ? null : amount(p.maximumAmount)) }),
    allowReversalAfterSettlement: t.exposeBoolean('allowReversalAfterSettlement', {
      description: 'Whether a refund may exceed the escrow by taking back settled portions from the beneficiaries (RETAINED first, then their balances).',
    }),
    effectiveFrom: t.expose('effectiveFrom', { type: 'DateTime' }),
    createdByOperatorId: t.exposeID('createdByOperatorId', { nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

const scopeFields = (t: Parameters<Parameters<typeof builder.inputType>[1]['fields']>[0]) => ({
  scope: t.field({ type: PolicyScope, required: true }),
  organizationId: t.id({ description: 'ORGANIZATION: required. APPLICATION: optional (must be the application’s). PLATFORM: none.' }),
  applicationId: t.id({ description: 'APPLICATION only.' }),
  assetNetworkId: t.id({ description: 'Narrows the policy to one asset-network; required for fixedAmount, minimumAmount and maximumAmount.' }),
  percentage: t.string({ description: 'Percent, 0 to 100, up to 6 decimals; default "0".' }),
  fixedAmount: t.string({ description: 'Base units; default "0".' }),
  minimumAmount: t.string({ description: 'Base units; default "0".' }),
  maximumAmount: t.string({ description: 'Base units; null: no maximum. At least minimumAmount.' }),
  effectiveFrom: t.field({ type: 'DateTime', description: 'Default now; may be in the future; never in the past (a few seconds of drift are taken as now).' }),
});

const pricingInput = policyInput.refine((v) => v.allowReversalAfterSettlement == null, {
  path: ['allowReversalAfterSettlement'],
  message: 'is a term of refund fee policies only',
});

/** The AdminConfigurePricingPolicyCommand. */
export const ConfigurePricingPolicyInput = builder.inputType('ConfigurePricingPolicyInput', {
  fields: (t) => scopeFields(t),
  validate: pricingInput,
});

/** The AdminConfigureRefundFeePolicyCommand. */
export const ConfigureRefundFeePolicyInput = builder.inputType('ConfigureRefundFeePolicyInput', {
  fields: (t) => ({
    ...scopeFields(t),
    allowReversalAfterSettlement: t.boolean({ description: 'Default false: a refund never exceeds what the escrow holds.' }),
  }),
  validate: policyInput,
});

/** A configure input's GraphQL arguments as the policy core takes them (ids as strings). */
export function toPolicyInput(input: {
  scope: 'PLATFORM' | 'ORGANIZATION' | 'APPLICATION';
  organizationId?: string | number | null;
  applicationId?: string | number | null;
  assetNetworkId?: string | number | null;
  percentage?: string | null;
  fixedAmount?: string | null;
  minimumAmount?: string | null;
  maximumAmount?: string | null;
  effectiveFrom?: Date | null;
  allowReversalAfterSettlement?: boolean | null;
}): PolicyInput {
  const id = (v: string | number | null | undefined) => (v == null ? v : String(v));
  return { ...input, organizationId: id(input.organizationId), applicationId: id(input.applicationId), assetNetworkId: id(input.assetNetworkId) };
}

/** The operator query listing one kind's policy versions (pricingPolicies, refundFeePolicies). */
export function policyListField<K extends 'pricing' | 'refundFee'>(
  t: PothosSchemaTypes.QueryFieldBuilder<typeof builder extends PothosSchemaTypes.SchemaBuilder<infer T> ? T : never, {}>,
  kind: K,
  type: K extends 'pricing' ? typeof PricingPolicy : typeof RefundFeePolicy,
  description: string,
) {
  return t.field({
    type: [type] as never,
    description,
    authScopes: { policy: policies.operator },
    args: {
      scope: t.arg({ type: PolicyScope }),
      organizationId: t.arg.id(),
      applicationId: t.arg.id(),
      assetNetworkId: t.arg.id(),
    },
    resolve: (_p, args, ctx) => listPolicies(ctx.deps.db, kind as never, args) as never,
  });
}
