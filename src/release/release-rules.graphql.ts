import { builder } from '../builder';
import { policies, type Policy } from '../auth/policy';
import type { ReleaseRuleTemplate as TemplateRow } from '../generated/prisma/client';
import * as rules from './release-rules';
import * as templates from './templates';
import type { ConditionView, MilestoneView, ReleaseRuleView, SplitView } from './release-rules';
import type { TemplateCondition, TemplateDefinition } from './templates';

/**
 * GraphQL of conditional release rules and their templates (docs/release-rules.md): the
 * `releaseRule` field of Transaction, its REST extensions' root fields, approvals and templates.
 */

const ReleaseConditionKind = builder.enumType('ReleaseConditionKind', {
  description:
    'APPROVAL: a named party approves. TIME_LOCK: not before releaseAfter. INSPECTION_PERIOD: durationSeconds ' +
    'after the transaction was reserved, or after the rule was set if later.',
  values: ['APPROVAL', 'TIME_LOCK', 'INSPECTION_PERIOD'] as const,
});
const ReleaseConditionMode = builder.enumType('ReleaseConditionMode', {
  description: 'ALL: every condition must be met. ANY: one suffices (e.g. the buyer approves, or the inspection period ends). No condition: met at once.',
  values: ['ALL', 'ANY'] as const,
});
const ReleaseApprovalParty = builder.enumType('ReleaseApprovalParty', {
  description:
    'Who approves: MEMBER (memberId), ACCOUNT_HOLDER (accountHolderId, the holder of a participant account), ' +
    "INTEGRATOR (an API key of the transaction's application and environment).",
  values: ['MEMBER', 'ACCOUNT_HOLDER', 'INTEGRATOR'] as const,
});
const ReleaseApprovalPartyInput = builder.enumType('ReleaseApprovalPartyInput', {
  description: 'As ReleaseApprovalParty, plus PAYER and BENEFICIARY: the account holder of that participant account (400 when it has none).',
  values: ['MEMBER', 'ACCOUNT_HOLDER', 'INTEGRATOR', 'PAYER', 'BENEFICIARY'] as const,
});
const ReleaseTemplateParty = builder.enumType('ReleaseTemplateParty', {
  description: "A template's approving party: by role (PAYER, BENEFICIARY: the holder of that participant account; INTEGRATOR) or a named MEMBER.",
  values: ['PAYER', 'BENEFICIARY', 'INTEGRATOR', 'MEMBER'] as const,
});
const ReleaseTemplateSplitRole = builder.enumType('ReleaseTemplateSplitRole', {
  description: "A template's split account by role: BENEFICIARY, the transaction's beneficiary account.",
  values: ['BENEFICIARY'] as const,
});
const ReleaseMilestoneStatus = builder.enumType('ReleaseMilestoneStatus', {
  description: 'PENDING -> RELEASED (its conditions were met: its settlement was requested) or CANCELLED (the escrow emptied before it released).',
  values: ['PENDING', 'RELEASED', 'CANCELLED'] as const,
});

const ReleaseCondition = builder.objectRef<ConditionView>('ReleaseCondition').implement({
  description: 'A condition of a milestone, or a hold condition of a split rule. Times are the environment’s (a sandbox: its sandbox clock).',
  fields: (t) => ({
    id: t.exposeID('id'),
    kind: t.field({ type: ReleaseConditionKind, resolve: (c) => c.kind }),
    party: t.field({ type: ReleaseApprovalParty, nullable: true, resolve: (c) => c.party }),
    memberId: t.exposeID('memberId', { nullable: true }),
    accountHolderId: t.exposeID('accountHolderId', { nullable: true }),
    releaseAfter: t.expose('releaseAfter', { type: 'DateTime', nullable: true }),
    durationSeconds: t.exposeInt('durationSeconds', { nullable: true }),
    dueAt: t.expose('dueAt', {
      type: 'DateTime',
      nullable: true,
      description: 'When a time condition is met (an inspection period: null until the transaction is reserved).',
    }),
    met: t.exposeBoolean('met', { description: 'Met now: approved, or its time has come.' }),
    approvedAt: t.expose('approvedAt', { type: 'DateTime', nullable: true }),
    approvedByType: t.exposeString('approvedByType', { nullable: true, description: 'MEMBER, API_KEY or ACCOUNT_HOLDER.' }),
    approvedById: t.exposeID('approvedById', { nullable: true }),
  }),
});

const ReleaseMilestone = builder.objectRef<MilestoneView>('ReleaseMilestone').implement({
  description: 'A tranche of the transaction, released (its settlement requested) when its conditions are met. Amounts: base units, decimal strings.',
  fields: (t) => ({
    id: t.exposeID('id'),
    position: t.exposeInt('position', { description: '1, 2, …: the order milestones are evaluated in.' }),
    name: t.exposeString('name', { nullable: true }),
    amount: t.exposeString('amount', { description: 'Its share of the transaction amount. The last milestone to release settles everything left in escrow.' }),
    mode: t.field({ type: ReleaseConditionMode, resolve: (m) => m.mode }),
    status: t.field({ type: ReleaseMilestoneStatus, resolve: (m) => m.status }),
    settlementId: t.exposeID('settlementId', { nullable: true, description: 'The settlement its release requested.' }),
    releasedAt: t.expose('releasedAt', { type: 'DateTime', nullable: true }),
    conditions: t.field({ type: [ReleaseCondition], resolve: (m) => m.conditions }),
  }),
});

const SplitRule = builder.objectRef<SplitView>('SplitRule').implement({
  description:
    'A beneficiary of each settlement: fixed amounts are paid first (once over the transaction), percentages share ' +
    'the rest. Its hold conditions retain its portions until met.',
  fields: (t) => ({
    id: t.exposeID('id'),
    position: t.exposeInt('position'),
    accountId: t.exposeID('accountId'),
    participantId: t.exposeID('participantId', { description: 'Its TransactionParticipant (role SPLIT_RECIPIENT unless it is the beneficiary or payer).' }),
    percentage: t.exposeString('percentage', { nullable: true, description: 'Percent of what the fixed amounts leave, up to 6 decimals ("12.5").' }),
    fixedAmount: t.exposeString('fixedAmount', { nullable: true }),
    allocatedAmount: t.exposeString('allocatedAmount', { description: 'A fixed rule: what settlements have allocated to it so far.' }),
    holdConditions: t.field({ type: [ReleaseCondition], resolve: (s) => s.holdConditions }),
  }),
});

export const ReleaseRule = builder.objectRef<ReleaseRuleView>('ReleaseRule').implement({
  description:
    'A transaction’s conditional release rule: milestones (tranches released as their conditions are met) and ' +
    'split rules (who receives each settlement). No milestones: the transaction settles only on request. No split ' +
    'rules: everything to the beneficiary.',
  fields: (t) => ({
    transactionId: t.exposeID('transactionId'),
    setAt: t.expose('setAt', { type: 'DateTime', nullable: true, description: 'When the rule was last set (null: never).' }),
    templateId: t.exposeID('templateId', { nullable: true, description: 'The template it was set from.' }),
    milestones: t.field({ type: [ReleaseMilestone], resolve: (r) => r.milestones }),
    splits: t.field({ type: [SplitRule], resolve: (r) => r.splits }),
  }),
});

const ReleaseRuleTemplateCondition = builder.objectRef<TemplateCondition>('ReleaseRuleTemplateCondition').implement({
  fields: (t) => ({
    kind: t.field({ type: ReleaseConditionKind, resolve: (c) => c.kind }),
    party: t.field({ type: ReleaseTemplateParty, nullable: true, resolve: (c) => c.party }),
    memberId: t.exposeID('memberId', { nullable: true }),
    delaySeconds: t.exposeInt('delaySeconds', { nullable: true, description: 'TIME_LOCK: releaseAfter = when the rule is set + this.' }),
    durationSeconds: t.exposeInt('durationSeconds', { nullable: true }),
  }),
});
const ReleaseRuleTemplateMilestone = builder.objectRef<TemplateDefinition['milestones'][number]>('ReleaseRuleTemplateMilestone').implement({
  fields: (t) => ({
    name: t.exposeString('name', { nullable: true }),
    percentage: t.exposeString('percentage', { description: 'Of the transaction amount (split exactly: the amounts add up).' }),
    mode: t.field({ type: ReleaseConditionMode, resolve: (m) => m.mode }),
    conditions: t.field({ type: [ReleaseRuleTemplateCondition], resolve: (m) => m.conditions }),
  }),
});
const ReleaseRuleTemplateSplit = builder.objectRef<TemplateDefinition['splits'][number]>('ReleaseRuleTemplateSplit').implement({
  fields: (t) => ({
    accountId: t.exposeID('accountId', { nullable: true }),
    role: t.field({ type: ReleaseTemplateSplitRole, nullable: true, resolve: (s) => s.role }),
    percentage: t.exposeString('percentage', { nullable: true }),
    fixedAmount: t.exposeString('fixedAmount', { nullable: true }),
    holdConditions: t.field({ type: [ReleaseRuleTemplateCondition], resolve: (s) => s.holdConditions }),
  }),
});

const ReleaseRuleTemplate = builder.objectRef<TemplateRow>('ReleaseRuleTemplate').implement({
  description: 'A reusable release rule of an application: milestones by percentage, relative times, parties by role.',
  fields: (t) => ({
    id: t.exposeID('id'),
    organizationId: t.exposeID('organizationId'),
    applicationId: t.exposeID('applicationId'),
    name: t.exposeString('name'),
    description: t.exposeString('description', { nullable: true }),
    milestones: t.field({ type: [ReleaseRuleTemplateMilestone], resolve: (x) => templates.definitionOf(x).milestones }),
    splits: t.field({ type: [ReleaseRuleTemplateSplit], resolve: (x) => templates.definitionOf(x).splits }),
    archived: t.boolean({ resolve: (x) => x.archivedAt !== null }),
    archivedAt: t.expose('archivedAt', { type: 'DateTime', nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
  }),
});

// Inputs. Their shape is validated by the zod schemas of the field (or of CreatePaymentIntentInput).

const ReleaseConditionInput = builder.inputType('ReleaseConditionInput', {
  description:
    'APPROVAL: party (+ memberId for MEMBER, accountHolderId for ACCOUNT_HOLDER). TIME_LOCK: releaseAfter (in the future). INSPECTION_PERIOD: durationSeconds.',
  fields: (t) => ({
    kind: t.field({ type: ReleaseConditionKind, required: true }),
    party: t.field({ type: ReleaseApprovalPartyInput }),
    memberId: t.id({ description: 'A member of the organization.' }),
    accountHolderId: t.id({ description: "The account holder of one of the transaction's participant accounts (split accounts included)." }),
    releaseAfter: t.field({ type: 'DateTime' }),
    durationSeconds: t.int({ description: '1 to 31622400 (366 days).' }),
  }),
});
const ReleaseMilestoneInput = builder.inputType('ReleaseMilestoneInput', {
  description: 'An amount (base units), or a percentage of the transaction amount: every milestone the same way. Amounts add up to the transaction amount.',
  fields: (t) => ({
    name: t.string(),
    amount: t.string(),
    percentage: t.string({ description: 'Up to 6 decimals; the milestones’ percentages add up to 100.' }),
    mode: t.field({ type: ReleaseConditionMode, description: 'Default ALL.' }),
    conditions: t.field({ type: [ReleaseConditionInput], description: 'At most 10; none: released as soon as the transaction is reserved.' }),
  }),
});
const SplitRuleInput = builder.inputType('SplitRuleInput', {
  description: 'An account (of the organization, the transaction’s mode, not closed) and its share: percentage or fixedAmount. Percentages add up to 100.',
  fields: (t) => ({
    accountId: t.id({ required: true }),
    percentage: t.string(),
    fixedAmount: t.string(),
    holdConditions: t.field({ type: [ReleaseConditionInput], description: 'APPROVAL or TIME_LOCK: its portions are retained until all are met.' }),
  }),
});
export const ReleaseRuleInput = builder.inputType('ReleaseRuleInput', {
  description: 'A template of the transaction’s application (templateId), or the rule inline (milestones, splits). Nothing: no rule.',
  fields: (t) => ({
    templateId: t.id(),
    milestones: t.field({ type: [ReleaseMilestoneInput], description: 'At most 50.' }),
    splits: t.field({ type: [SplitRuleInput], description: 'At most 20.' }),
  }),
});
const ApproveReleaseInput = builder.inputType('ApproveReleaseInput', {
  fields: (t) => ({ conditionId: t.id({ description: 'Approve only this condition (default: every pending approval naming the caller).' }) }),
});

const ReleaseRuleTemplateConditionInput = builder.inputType('ReleaseRuleTemplateConditionInput', {
  fields: (t) => ({
    kind: t.field({ type: ReleaseConditionKind, required: true }),
    party: t.field({ type: ReleaseTemplateParty }),
    memberId: t.id(),
    delaySeconds: t.int({ description: 'TIME_LOCK: seconds after the rule is set.' }),
    durationSeconds: t.int({ description: 'INSPECTION_PERIOD.' }),
  }),
});
const ReleaseRuleTemplateMilestoneInput = builder.inputType('ReleaseRuleTemplateMilestoneInput', {
  fields: (t) => ({
    name: t.string(),
    percentage: t.string({ required: true }),
    mode: t.field({ type: ReleaseConditionMode }),
    conditions: t.field({ type: [ReleaseRuleTemplateConditionInput] }),
  }),
});
const ReleaseRuleTemplateSplitInput = builder.inputType('ReleaseRuleTemplateSplitInput', {
  fields: (t) => ({
    accountId: t.id(),
    role: t.field({ type: ReleaseTemplateSplitRole }),
    percentage: t.string(),
    fixedAmount: t.string(),
    holdConditions: t.field({ type: [ReleaseRuleTemplateConditionInput] }),
  }),
});
const CreateReleaseRuleTemplateInput = builder.inputType('CreateReleaseRuleTemplateInput', {
  fields: (t) => ({
    name: t.string({ required: true, description: 'Unique within the application.' }),
    description: t.string(),
    milestones: t.field({ type: [ReleaseRuleTemplateMilestoneInput], description: 'Percentages add up to 100.' }),
    splits: t.field({ type: [ReleaseRuleTemplateSplitInput] }),
  }),
  validate: templates.createTemplateInput,
});

// Fields

const readRule: Policy = policies.accountRead;
const manage = policies.memberOrApiKey('payment-manage');
const approve: Policy = { member: 'any', apiKey: true, accountHolder: true };
const readTemplates = policies.memberOrApiKey('account-read');

builder.queryFields((t) => ({
  transactionReleaseRule: t.field({
    type: ReleaseRule,
    description: 'A transaction’s release rule: members (account-read), API keys of its environment, and account holders it names or whose account takes part.',
    authScopes: { policy: readRule },
    args: { transactionId: t.arg.id({ required: true }) },
    resolve: (_p, args, ctx) => rules.getReleaseRule(ctx, String(args.transactionId)),
  }),
  releaseRuleTemplate: t.field({
    type: ReleaseRuleTemplate,
    authScopes: { policy: readTemplates },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_p, args, ctx) => templates.loadTemplate(ctx, String(args.id)),
  }),
  releaseRuleTemplates: t.field({
    type: [ReleaseRuleTemplate],
    description: 'The application’s templates, oldest first (an API key: its own application’s).',
    authScopes: { policy: readTemplates },
    args: { applicationId: t.arg.id({ required: true }), includeArchived: t.arg.boolean({ description: 'Default false.' }) },
    resolve: (_p, args, ctx) => templates.listTemplates(ctx, String(args.applicationId), args.includeArchived ?? false),
  }),
}));

builder.mutationFields((t) => ({
  setTransactionReleaseRule: t.field({
    type: ReleaseRule,
    description:
      'Sets (replaces) the release rule of an AWAITING_FUNDS or RESERVED transaction with no settlement yet (409 ' +
      'otherwise); a RESERVED one is evaluated at once.',
    authScopes: { policy: manage },
    args: {
      transactionId: t.arg.id({ required: true }),
      input: t.arg({ type: ReleaseRuleInput, required: true, validate: rules.releaseRuleInput }),
    },
    resolve: (_p, args, ctx) => rules.setTransactionReleaseRule(ctx, String(args.transactionId), args.input as rules.ReleaseRuleInput),
  }),
  approveRelease: t.field({
    type: ReleaseRule,
    description:
      'Approves the pending APPROVAL conditions that name the caller (a member; an API key: INTEGRATOR; an account ' +
      'holder), or only conditionId; 409 when none waits. Milestones whose conditions are now met release at once ' +
      '(not while frozen).',
    authScopes: { policy: approve },
    args: { transactionId: t.arg.id({ required: true }), input: t.arg({ type: ApproveReleaseInput }) },
    resolve: (_p, args, ctx) => rules.approveRelease(ctx, String(args.transactionId), args.input?.conditionId ?? null),
  }),
  createReleaseRuleTemplate: t.field({
    type: ReleaseRuleTemplate,
    description: 'A reusable release rule of the application (names unique per application: 409).',
    authScopes: { policy: manage },
    args: { applicationId: t.arg.id({ required: true }), input: t.arg({ type: CreateReleaseRuleTemplateInput, required: true }) },
    resolve: (_p, args, ctx) => templates.createTemplate(ctx, String(args.applicationId), args.input as templates.CreateTemplateInput),
  }),
  archiveReleaseRuleTemplate: t.field({
    type: ReleaseRuleTemplate,
    description: 'Archives a template: it can no longer be applied. Idempotent.',
    authScopes: { policy: manage },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_p, args, ctx) => templates.archiveTemplate(ctx, String(args.id)),
  }),
}));
