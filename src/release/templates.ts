import { z } from 'zod';
import type { Context } from '../context';
import type { Db } from '../db/prisma';
import type { ReleaseRuleTemplate } from '../generated/prisma/client';
import { DomainError, notFound, type FieldError } from '../errors';
import { audit } from '../audit/audit';
import { assertId, isUniqueViolation, isUuid } from '../ids';
import { HUNDRED_PERCENT, parsePercentage, percentageToString, positiveAmountText } from '../money';

/**
 * Release rule templates (docs/release-rules.md): reusable release rules of an application.
 * A template says everything relatively, so it fits any transaction of its application:
 * milestones by percentage of the transaction amount, times as delays from when the rule is set,
 * parties by role (PAYER, BENEFICIARY, INTEGRATOR) or a named member, split accounts by id or by
 * role (BENEFICIARY). It is validated when created (names unique per application) and resolved
 * against the transaction when applied (src/release/release-rules.ts); archived templates
 * cannot be applied.
 *
 * This module also holds the zod pieces the inline rules share.
 */

/** Longest time lock delay, inspection period and template delay: one year. */
export const MAX_SECONDS = 366 * 86_400;
export const MAX_MILESTONES = 50;
export const MAX_CONDITIONS = 10;
export const MAX_SPLITS = 20;

export const conditionKinds = ['APPROVAL', 'TIME_LOCK', 'INSPECTION_PERIOD'] as const;
export const conditionModes = ['ALL', 'ANY'] as const;

/** A split or milestone share: above 0 (percentageText of src/money.ts also admits 0). */
export const sharePercentageText = z.string().refine((s) => {
  try {
    return parsePercentage(s) > 0n;
  } catch {
    return false;
  }
}, 'must be a percentage greater than 0 and at most 100, with up to 6 decimals ("12.5")');
export const seconds = z
  .number()
  .int('must be a whole number of seconds')
  .min(1, 'must be at least 1 second')
  .max(MAX_SECONDS, `must be at most ${MAX_SECONDS} seconds (366 days)`);
export const nameText = z.string().trim().min(1, 'must not be empty').max(200);

type Issue = { path: (string | number)[]; message: string };
/** Adds issues to a zod refinement context. */
export function report(ctx: z.RefinementCtx, issues: Issue[]): void {
  for (const i of issues) ctx.addIssue({ code: 'custom', path: i.path, message: i.message });
}

/** The fields a condition of `kind` must have and must not have (the input's shape, checked before any lookup). */
export function conditionShapeIssues(
  c: Record<string, unknown>,
  kind: (typeof conditionKinds)[number],
  time: 'releaseAfter' | 'delaySeconds',
  opts: { hold?: boolean } = {},
): Issue[] {
  const issues: Issue[] = [];
  const present = (k: string) => c[k] !== undefined && c[k] !== null;
  const forbid = (...keys: string[]) => {
    for (const k of keys) if (present(k)) issues.push({ path: [k], message: `is not a field of a ${kind} condition` });
  };
  if (opts.hold && kind === 'INSPECTION_PERIOD')
    issues.push({ path: ['kind'], message: 'a split hold condition is APPROVAL or TIME_LOCK (an inspection period counts only for milestones)' });
  if (kind === 'APPROVAL') {
    if (!present('party')) issues.push({ path: ['party'], message: 'is required for an APPROVAL condition' });
    if (c.party === 'MEMBER' && !present('memberId')) issues.push({ path: ['memberId'], message: 'is required when the party is MEMBER' });
    if (c.party !== 'MEMBER' && present('memberId')) issues.push({ path: ['memberId'], message: 'is only for the party MEMBER' });
    if ('accountHolderId' in c || time === 'releaseAfter') {
      if (c.party === 'ACCOUNT_HOLDER' && !present('accountHolderId'))
        issues.push({ path: ['accountHolderId'], message: 'is required when the party is ACCOUNT_HOLDER' });
      if (c.party !== 'ACCOUNT_HOLDER' && present('accountHolderId'))
        issues.push({ path: ['accountHolderId'], message: 'is only for the party ACCOUNT_HOLDER' });
    }
    forbid(time, 'durationSeconds');
  } else if (kind === 'TIME_LOCK') {
    if (!present(time)) issues.push({ path: [time], message: 'is required for a TIME_LOCK condition' });
    forbid('party', 'memberId', 'accountHolderId', 'durationSeconds');
  } else {
    if (!present('durationSeconds')) issues.push({ path: ['durationSeconds'], message: 'is required for an INSPECTION_PERIOD condition' });
    forbid('party', 'memberId', 'accountHolderId', time);
  }
  return issues;
}

/** Percentages that must add up to exactly 100 (already valid one by one). */
export function sumsToHundred(values: string[]): boolean {
  return values.reduce((a, v) => a + parsePercentage(v), 0n) === HUNDRED_PERCENT;
}

const templateParty = z.enum(['PAYER', 'BENEFICIARY', 'INTEGRATOR', 'MEMBER']);
const templateCondition = (hold: boolean) =>
  z
    .object({
      kind: z.enum(conditionKinds),
      party: templateParty.nullish(),
      memberId: z.string().nullish(),
      delaySeconds: seconds.nullish(),
      durationSeconds: seconds.nullish(),
    })
    .superRefine((c, ctx) => report(ctx, conditionShapeIssues(c, c.kind, 'delaySeconds', { hold })));

const templateMilestone = z.object({
  name: nameText.nullish(),
  percentage: sharePercentageText,
  mode: z.enum(conditionModes).nullish(),
  conditions: z.array(templateCondition(false)).max(MAX_CONDITIONS, `at most ${MAX_CONDITIONS} conditions`).nullish(),
});

const templateSplit = z
  .object({
    accountId: z.string().nullish(),
    role: z.enum(['BENEFICIARY']).nullish(),
    percentage: sharePercentageText.nullish(),
    fixedAmount: positiveAmountText.nullish(),
    holdConditions: z.array(templateCondition(true)).max(MAX_CONDITIONS, `at most ${MAX_CONDITIONS} conditions`).nullish(),
  })
  .superRefine((s, ctx) => {
    if ((s.accountId == null) === (s.role == null)) ctx.addIssue({ code: 'custom', path: ['accountId'], message: 'give accountId or role, exactly one' });
    if ((s.percentage == null) === (s.fixedAmount == null))
      ctx.addIssue({ code: 'custom', path: ['percentage'], message: 'give percentage or fixedAmount, exactly one' });
  });

export const createTemplateInput = z
  .object({
    name: nameText,
    description: z.string().trim().max(1000).nullish(),
    milestones: z.array(templateMilestone).max(MAX_MILESTONES, `at most ${MAX_MILESTONES} milestones`).nullish(),
    splits: z.array(templateSplit).max(MAX_SPLITS, `at most ${MAX_SPLITS} split rules`).nullish(),
  })
  .superRefine((t, ctx) => {
    const milestones = t.milestones ?? [];
    const splits = t.splits ?? [];
    if (!milestones.length && !splits.length)
      ctx.addIssue({ code: 'custom', path: ['milestones'], message: 'a template needs milestones, split rules, or both' });
    if (
      milestones.length &&
      milestones.every((m) => sharePercentageText.safeParse(m.percentage).success) &&
      !sumsToHundred(milestones.map((m) => m.percentage))
    )
      ctx.addIssue({ code: 'custom', path: ['milestones'], message: 'milestone percentages must add up to exactly 100' });
    report(
      ctx,
      splitSetIssues(
        splits.map((s) => ({ key: s.accountId ?? `role:${s.role}`, percentage: s.percentage ?? null, keyField: s.accountId != null ? 'accountId' : 'role' })),
      ),
    );
  });
export type CreateTemplateInput = z.infer<typeof createTemplateInput>;

/** Set-level rules of split rules: at least one percentage rule, percentages add up to 100, no account twice. */
export function splitSetIssues(splits: { key: string; percentage: string | null; keyField: string }[]): Issue[] {
  if (!splits.length) return [];
  const issues: Issue[] = [];
  const percentages = splits.map((s) => s.percentage).filter((p): p is string => p !== null);
  if (!percentages.length)
    issues.push({ path: ['splits'], message: 'at least one split rule must have a percentage (the percentages share what the fixed amounts leave)' });
  else if (percentages.every((p) => sharePercentageText.safeParse(p).success) && !sumsToHundred(percentages))
    issues.push({ path: ['splits'], message: 'split percentages must add up to exactly 100' });
  const seen = new Set<string>();
  splits.forEach((s, i) => {
    if (seen.has(s.key)) issues.push({ path: ['splits', i, s.keyField], message: 'names an account another split rule names already' });
    seen.add(s.key);
  });
  return issues;
}

/** A template's stored definition (ReleaseRuleTemplate.definition), normalized. */
export interface TemplateCondition {
  kind: (typeof conditionKinds)[number];
  party: 'PAYER' | 'BENEFICIARY' | 'INTEGRATOR' | 'MEMBER' | null;
  memberId: string | null;
  delaySeconds: number | null;
  durationSeconds: number | null;
}
export interface TemplateDefinition {
  milestones: { name: string | null; percentage: string; mode: 'ALL' | 'ANY'; conditions: TemplateCondition[] }[];
  splits: {
    accountId: string | null;
    role: 'BENEFICIARY' | null;
    percentage: string | null;
    fixedAmount: string | null;
    holdConditions: TemplateCondition[];
  }[];
}

type InCondition = {
  kind: TemplateCondition['kind'];
  party?: TemplateCondition['party'] | null;
  memberId?: string | null;
  delaySeconds?: number | null;
  durationSeconds?: number | null;
};
const normCondition = (c: InCondition): TemplateCondition => ({
  kind: c.kind,
  party: c.party ?? null,
  memberId: c.memberId?.toLowerCase() ?? null,
  delaySeconds: c.delaySeconds ?? null,
  durationSeconds: c.durationSeconds ?? null,
});

export function normalizeDefinition(input: CreateTemplateInput): TemplateDefinition {
  return {
    milestones: (input.milestones ?? []).map((m) => ({
      name: m.name ?? null,
      percentage: percentageToString(parsePercentage(m.percentage)),
      mode: m.mode ?? 'ALL',
      conditions: (m.conditions ?? []).map(normCondition),
    })),
    splits: (input.splits ?? []).map((s) => ({
      accountId: s.accountId?.toLowerCase() ?? null,
      role: s.role ?? null,
      percentage: s.percentage != null ? percentageToString(parsePercentage(s.percentage)) : null,
      fixedAmount: s.fixedAmount ?? null,
      holdConditions: (s.holdConditions ?? []).map(normCondition),
    })),
  };
}

export const definitionOf = (t: Pick<ReleaseRuleTemplate, 'definition'>): TemplateDefinition => t.definition as unknown as TemplateDefinition;

/** Checks a definition's references against the organization: members exist, accounts exist and are not closed. */
async function referenceErrors(db: Db, organizationId: string, d: TemplateDefinition): Promise<FieldError[]> {
  const errors: FieldError[] = [];
  const memberRefs: { id: string; field: string }[] = [];
  d.milestones.forEach((m, i) =>
    m.conditions.forEach((c, j) => c.memberId && memberRefs.push({ id: c.memberId, field: `milestones.${i}.conditions.${j}.memberId` })),
  );
  d.splits.forEach((s, i) =>
    s.holdConditions.forEach((c, j) => c.memberId && memberRefs.push({ id: c.memberId, field: `splits.${i}.holdConditions.${j}.memberId` })),
  );
  const memberIds = memberRefs.map((r) => r.id).filter(isUuid);
  const members = new Set(
    (await db.member.findMany({ where: { id: { in: memberIds }, organizationId, removedAt: null }, select: { id: true } })).map((m) => m.id),
  );
  for (const r of memberRefs) if (!members.has(r.id)) errors.push({ field: r.field, message: 'must be a member of the organization' });
  const accountIds = d.splits.map((s) => s.accountId).filter((id): id is string => id !== null && isUuid(id));
  const accounts = new Map(
    (await db.account.findMany({ where: { id: { in: accountIds }, organizationId }, select: { id: true, status: true } })).map((a) => [a.id, a.status]),
  );
  d.splits.forEach((s, i) => {
    if (s.accountId === null) return;
    const status = accounts.get(s.accountId);
    if (!status) errors.push({ field: `splits.${i}.accountId`, message: 'must be an account of the organization' });
    else if (status === 'CLOSED') errors.push({ field: `splits.${i}.accountId`, message: 'is a closed account' });
  });
  return errors;
}

export function validationFailed(errors: FieldError[]): DomainError {
  return new DomainError('VALIDATION_FAILED', errors.map((e) => `${e.field}: ${e.message}`).join('; '), { fieldErrors: errors });
}

/** The application the principal may manage templates of: a member's organization, an API key's own application. */
async function loadTemplateApplication(ctx: Context, idArg: unknown) {
  const id = assertId(idArg, 'Application');
  const app = await ctx.deps.db.application.findUnique({ where: { id } });
  const p = ctx.principal;
  const visible =
    app &&
    ((p?.type === 'member' && p.organizationId === app.organizationId) ||
      (p?.type === 'apiKey' && p.organizationId === app.organizationId && p.applicationId === app.id));
  if (!visible) throw notFound('Application');
  return app;
}

export async function loadTemplate(ctx: Context, idArg: unknown, db: Db = ctx.deps.db): Promise<ReleaseRuleTemplate> {
  const id = assertId(idArg, 'Release rule template');
  const t = await db.releaseRuleTemplate.findUnique({ where: { id } });
  const p = ctx.principal;
  const visible =
    t &&
    ((p?.type === 'member' && p.organizationId === t.organizationId) ||
      (p?.type === 'apiKey' && p.organizationId === t.organizationId && p.applicationId === t.applicationId));
  if (!visible) throw notFound('Release rule template');
  return t;
}

/** Creates a template of the application (names unique per application: 409). */
export async function createTemplate(ctx: Context, applicationIdArg: unknown, input: CreateTemplateInput): Promise<ReleaseRuleTemplate> {
  const app = await loadTemplateApplication(ctx, applicationIdArg);
  const definition = normalizeDefinition(input);
  const errors = await referenceErrors(ctx.deps.db, app.organizationId, definition);
  if (errors.length) throw validationFailed(errors);
  const conflict = () => new DomainError('CONFLICT', `The application already has a release rule template named "${input.name}".`);
  try {
    return await ctx.deps.db.$transaction(async (tx) => {
      if (await tx.releaseRuleTemplate.findUnique({ where: { applicationId_name: { applicationId: app.id, name: input.name } }, select: { id: true } }))
        throw conflict();
      const now = ctx.deps.clock.now();
      const t = await tx.releaseRuleTemplate.create({
        data: {
          organizationId: app.organizationId,
          applicationId: app.id,
          name: input.name,
          description: input.description ?? null,
          definition: definition as never,
          createdAt: now,
          updatedAt: now,
        },
      });
      await audit(tx, ctx, {
        organizationId: app.organizationId,
        entityType: 'ReleaseRuleTemplate',
        entityId: t.id,
        action: 'release_rule_template.created',
        after: { applicationId: app.id, name: t.name, definition: definition as never },
      });
      return t;
    });
  } catch (e) {
    if (isUniqueViolation(e)) throw conflict();
    throw e;
  }
}

/** The application's templates, oldest first (archived ones only when asked). */
export async function listTemplates(ctx: Context, applicationIdArg: unknown, includeArchived: boolean): Promise<ReleaseRuleTemplate[]> {
  const app = await loadTemplateApplication(ctx, applicationIdArg);
  return ctx.deps.db.releaseRuleTemplate.findMany({
    where: { applicationId: app.id, ...(includeArchived ? {} : { archivedAt: null }) },
    orderBy: { id: 'asc' },
    take: 1000,
  });
}

/** Archives a template: it can no longer be applied (rules already set from it stay). Archiving twice changes nothing. */
export async function archiveTemplate(ctx: Context, idArg: unknown): Promise<ReleaseRuleTemplate> {
  const t = await loadTemplate(ctx, idArg);
  if (t.archivedAt) return t;
  return ctx.deps.db.$transaction(async (tx) => {
    const now = ctx.deps.clock.now();
    const res = await tx.releaseRuleTemplate.updateMany({ where: { id: t.id, archivedAt: null }, data: { archivedAt: now, updatedAt: now } });
    if (res.count)
      await audit(tx, ctx, {
        organizationId: t.organizationId,
        entityType: 'ReleaseRuleTemplate',
        entityId: t.id,
        action: 'release_rule_template.archived',
        before: { archivedAt: null },
        after: { archivedAt: now.toISOString() },
      });
    return tx.releaseRuleTemplate.findUniqueOrThrow({ where: { id: t.id } });
  });
}
