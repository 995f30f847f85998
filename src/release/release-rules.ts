import { createHash, randomBytes } from 'node:crypto';
import { z } from 'zod';
import { fromPrisma } from 'pg-boss';
import type { Context } from '../context';
import type { Db } from '../db/prisma';
import type { Prisma, ReleaseCondition, Transaction } from '../generated/prisma/client';
import { invalidState, notFound, type FieldError } from '../errors';
import { assertId, isUuid } from '../ids';
import { actorOf } from '../audit/audit';
import { type Principal } from '../auth/principal';
import {
  amountToNumeric,
  amountToString,
  numericToAmount,
  numericToPercentage,
  parsePercentage,
  percentageToNumeric,
  percentageToString,
  splitByPercentages,
  positiveAmountText,
  type Amount,
  type Percentage,
} from '../money';
import { auditAll, auditAs, type Actor } from '../audit/audit';
import { lockTransactionRow, requestActor, systemActor, TX_OPTIONS, type MoneyDeps } from '../kernel/service';
import { nowFor } from '../chains/sandbox/clock';
import { escrowOf, releaseBlocker } from './escrow';
import { conditionDueAt, conditionMet, conditionsMet, nextDueAt } from './conditions';
import { RELEASE_EVALUATE_QUEUE, sendRetainedRelease, type ReleaseEvaluateJob } from '../kernel/queues';
import {
  conditionKinds,
  conditionModes,
  conditionShapeIssues,
  definitionOf,
  MAX_CONDITIONS,
  MAX_MILESTONES,
  MAX_SPLITS,
  nameText,
  sharePercentageText,
  report,
  seconds,
  splitSetIssues,
  sumsToHundred,
  validationFailed,
} from './templates';

/**
 * How a due milestone becomes a settlement. Settlements sit above release rules in the declared
 * order (.dependency-cruiser.cjs), so src/settlements/settlements.ts hands its
 * `requestSettlementInTx` in when it loads (every process that evaluates rules loads it: the GraphQL
 * schema and the job runner both import it).
 */
/** What settlements hand in (src/settlements/settlements.ts `requestSettlementInTx`): a settlement requested inside `tx`. */
export type SettlementRequester = (
  tx: Db,
  deps: MoneyDeps,
  actor: Actor,
  input: { transaction: Transaction; milestoneId?: string | null; amount?: bigint | null },
) => Promise<{ id: string }>;
let requestSettlement: SettlementRequester | null = null;
export function setSettlementRequester(f: SettlementRequester): void {
  requestSettlement = f;
}
function settlementRequester(): SettlementRequester {
  if (!requestSettlement) throw new Error('release rules need src/settlements/settlements.ts loaded (setSettlementRequester)');
  return requestSettlement;
}

/**
 * Conditional release rules (docs/release-rules.md). A transaction's rule is ordered MILESTONES
 * (tranches whose amounts add up to the transaction amount, each released when its conditions are
 * met: ALL of them, or ANY) plus optional SPLIT rules (who receives each settlement, executed by
 * src/settlements/settlements.ts). Conditions: APPROVAL by a named party (a member, an account
 * holder of a participant account, the integrator's backend), TIME_LOCK (an absolute time),
 * INSPECTION_PERIOD (a duration from when the transaction was reserved, or the rule set if later).
 *
 * A rule is validated when set and evaluated (evaluateRelease) by the release jobs, by approvals,
 * when it is set on a reserved transaction, and by the sweep. A frozen transaction, one with a
 * deposit under review, and one not RESERVED never release (releaseBlocker). Times are the
 * environment's (a sandbox: its organization's sandbox clock, nowFor).
 */

// ---------------------------------------------------------------------------------------------
// Input

const partyInput = z.enum(['MEMBER', 'ACCOUNT_HOLDER', 'INTEGRATOR', 'PAYER', 'BENEFICIARY']);
const conditionInput = (hold: boolean) =>
  z
    .object({
      kind: z.enum(conditionKinds),
      party: partyInput.nullish(),
      memberId: z.string().nullish(),
      accountHolderId: z.string().nullish(),
      releaseAfter: z.date().nullish(),
      durationSeconds: seconds.nullish(),
    })
    .superRefine((c, ctx) => report(ctx, conditionShapeIssues(c, c.kind, 'releaseAfter', { hold })));
export type ConditionInput = z.infer<ReturnType<typeof conditionInput>>;

const milestoneInput = z
  .object({
    name: nameText.nullish(),
    amount: positiveAmountText.nullish(),
    percentage: sharePercentageText.nullish(),
    mode: z.enum(conditionModes).nullish(),
    conditions: z.array(conditionInput(false)).max(MAX_CONDITIONS, `at most ${MAX_CONDITIONS} conditions`).nullish(),
  })
  .superRefine((m, ctx) => {
    if ((m.amount == null) === (m.percentage == null)) ctx.addIssue({ code: 'custom', path: ['amount'], message: 'give amount or percentage, exactly one' });
  });

const splitInput = z
  .object({
    accountId: z.string(),
    percentage: sharePercentageText.nullish(),
    fixedAmount: positiveAmountText.nullish(),
    holdConditions: z.array(conditionInput(true)).max(MAX_CONDITIONS, `at most ${MAX_CONDITIONS} conditions`).nullish(),
  })
  .superRefine((s, ctx) => {
    if ((s.percentage == null) === (s.fixedAmount == null))
      ctx.addIssue({ code: 'custom', path: ['percentage'], message: 'give percentage or fixedAmount, exactly one' });
  });

/** A rule as set: a template's id, or the inline definition (none of the three: no rule). */
export const releaseRuleInput = z
  .object({
    templateId: z.string().nullish(),
    milestones: z.array(milestoneInput).max(MAX_MILESTONES, `at most ${MAX_MILESTONES} milestones`).nullish(),
    splits: z.array(splitInput).max(MAX_SPLITS, `at most ${MAX_SPLITS} split rules`).nullish(),
  })
  .superRefine((r, ctx) => {
    const milestones = r.milestones ?? [];
    const splits = r.splits ?? [];
    if (r.templateId != null && (r.milestones != null || r.splits != null))
      ctx.addIssue({ code: 'custom', path: ['templateId'], message: 'give templateId or an inline rule (milestones, splits), not both' });
    const byAmount = milestones.filter((m) => m.amount != null).length;
    if (byAmount && byAmount < milestones.length)
      ctx.addIssue({ code: 'custom', path: ['milestones'], message: 'give every milestone an amount, or every milestone a percentage: not a mix' });
    const percentages = milestones.map((m) => m.percentage).filter((p): p is string => p != null);
    if (!byAmount && percentages.length && percentages.every((p) => sharePercentageText.safeParse(p).success) && !sumsToHundred(percentages))
      ctx.addIssue({ code: 'custom', path: ['milestones'], message: 'milestone percentages must add up to exactly 100' });
    report(ctx, splitSetIssues(splits.map((s) => ({ key: s.accountId.toLowerCase(), percentage: s.percentage ?? null, keyField: 'accountId' }))));
  });
export type ReleaseRuleInput = z.infer<typeof releaseRuleInput>;

// ---------------------------------------------------------------------------------------------
// Resolution: the input (inline or a template) checked against the transaction and the database.

type Party = 'MEMBER' | 'ACCOUNT_HOLDER' | 'INTEGRATOR';
interface Resolved {
  kind: ReleaseCondition['kind'];
  party: Party | null;
  memberId: string | null;
  accountHolderId: string | null;
  releaseAfter: Date | null;
  durationSeconds: number | null;
}
interface ResolvedRule {
  templateId: string | null;
  milestones: { name: string | null; amount: Amount; mode: 'ALL' | 'ANY'; conditions: Resolved[] }[];
  splits: { accountId: string; percentage: Percentage | null; fixedAmount: Amount | null; holdConditions: Resolved[] }[];
}

/** A condition in a common shape for resolving: inline conditions, and template ones with their time made absolute. */
interface Draft {
  kind: ReleaseCondition['kind'];
  party: Party | 'PAYER' | 'BENEFICIARY' | null;
  memberId: string | null;
  accountHolderId: string | null;
  releaseAfter: Date | null;
  durationSeconds: number | null;
  /** Reports an error about its field `name` (a field of the input, or of the template: then on templateId, the template's path in the message). */
  fail: (name: string, message: string) => void;
  /** A template's TIME_LOCK is in the future by construction. */
  fromTemplate: boolean;
}

type TransactionWithParticipants = Transaction & { participants: { id: string; accountId: string; role: 'BENEFICIARY' | 'PAYER' | 'SPLIT_RECIPIENT' }[] };

/**
 * Resolves and validates a rule for a transaction; throws one 400 with every field error, or 409
 * for an archived template. `field` maps an input path ("milestones.0.amount") to the name the
 * caller's input uses (e.g. "releaseRule.milestones.0.amount" in CreatePaymentIntent).
 */
async function resolveRule(
  tx: Db,
  t: TransactionWithParticipants,
  input: ReleaseRuleInput,
  opts: { now: Date; field: (path: string) => string },
): Promise<ResolvedRule> {
  const errors: FieldError[] = [];
  const fail = (field: string, message: string) => errors.push({ field, message });
  const amount = numericToAmount(t.amount);
  let templateId: string | null = null;
  type Fail = (name: string, message: string) => void;
  let milestoneDrafts: { name: string | null; amount: Amount | null; percentage: Percentage | null; mode: 'ALL' | 'ANY'; conditions: Draft[]; fail: Fail }[];
  let splitDrafts: {
    accountId: string | null;
    role: 'BENEFICIARY' | null;
    percentage: Percentage | null;
    fixedAmount: Amount | null;
    holdConditions: Draft[];
    fail: Fail;
  }[];
  const inputAt =
    (where: string): Fail =>
    (name, message) =>
      fail(opts.field(`${where}.${name}`), message);
  /** An error about the rule as a whole (its milestones, its splits). */
  const top: Fail = (name, message) =>
    input.templateId != null ? fail(opts.field('templateId'), `the template's ${name}: ${message}`) : fail(opts.field(name), message);

  if (input.templateId != null) {
    const templateField = opts.field('templateId');
    const template = isUuid(input.templateId) ? await tx.releaseRuleTemplate.findUnique({ where: { id: input.templateId.toLowerCase() } }) : null;
    if (!template || template.applicationId !== t.applicationId)
      throw validationFailed([{ field: templateField, message: "must be a release rule template of the transaction's application" }]);
    if (template.archivedAt) throw invalidState('The release rule template is archived: it can no longer be applied.');
    templateId = template.id;
    const d = definitionOf(template);
    const at =
      (where: string): Fail =>
      (name, message) =>
        fail(templateField, `the template's ${where}.${name}: ${message}`);
    const fromTemplate = (c: (typeof d.milestones)[number]['conditions'][number], where: string): Draft => ({
      kind: c.kind,
      party: c.party,
      memberId: c.memberId,
      accountHolderId: null,
      releaseAfter: c.kind === 'TIME_LOCK' ? new Date(opts.now.getTime() + (c.delaySeconds ?? 0) * 1000) : null,
      durationSeconds: c.durationSeconds,
      fail: at(where),
      fromTemplate: true,
    });
    milestoneDrafts = d.milestones.map((m, i) => ({
      name: m.name,
      amount: null,
      percentage: parsePercentage(m.percentage),
      mode: m.mode,
      conditions: m.conditions.map((c, j) => fromTemplate(c, `milestones.${i}.conditions.${j}`)),
      fail: at(`milestones.${i}`),
    }));
    splitDrafts = d.splits.map((s, i) => ({
      accountId: s.accountId,
      role: s.role,
      percentage: s.percentage != null ? parsePercentage(s.percentage) : null,
      fixedAmount: s.fixedAmount != null ? BigInt(s.fixedAmount) : null,
      holdConditions: s.holdConditions.map((c, j) => fromTemplate(c, `splits.${i}.holdConditions.${j}`)),
      fail: at(`splits.${i}`),
    }));
  } else {
    const inline = (c: ConditionInput, where: string): Draft => ({
      kind: c.kind,
      party: c.party ?? null,
      memberId: c.memberId ?? null,
      accountHolderId: c.accountHolderId ?? null,
      releaseAfter: c.releaseAfter ?? null,
      durationSeconds: c.durationSeconds ?? null,
      fail: inputAt(where),
      fromTemplate: false,
    });
    milestoneDrafts = (input.milestones ?? []).map((m, i) => ({
      name: m.name ?? null,
      amount: m.amount != null ? BigInt(m.amount) : null,
      percentage: m.percentage != null ? parsePercentage(m.percentage) : null,
      mode: m.mode ?? 'ALL',
      conditions: (m.conditions ?? []).map((c, j) => inline(c, `milestones.${i}.conditions.${j}`)),
      fail: inputAt(`milestones.${i}`),
    }));
    splitDrafts = (input.splits ?? []).map((s, i) => ({
      accountId: s.accountId,
      role: null,
      percentage: s.percentage != null ? parsePercentage(s.percentage) : null,
      fixedAmount: s.fixedAmount != null ? BigInt(s.fixedAmount) : null,
      holdConditions: (s.holdConditions ?? []).map((c, j) => inline(c, `splits.${i}.holdConditions.${j}`)),
      fail: inputAt(`splits.${i}`),
    }));
  }

  // Milestone amounts: given, or percentages of the transaction amount split exactly.
  let amounts: Amount[];
  if (milestoneDrafts.length && milestoneDrafts.every((m) => m.percentage !== null)) {
    amounts = splitByPercentages(
      amount,
      milestoneDrafts.map((m) => m.percentage!),
    );
    amounts.forEach((a, i) => a === 0n && milestoneDrafts[i]!.fail('percentage', `is less than one base unit of the transaction amount (${amount})`));
  } else {
    amounts = milestoneDrafts.map((m) => m.amount ?? 0n);
    const sum = amounts.reduce((a, b) => a + b, 0n);
    if (milestoneDrafts.length && sum !== amount)
      top('milestones', `milestone amounts must add up to the transaction amount ${amount} (they add up to ${sum})`);
  }

  // Split accounts: of the organization, the transaction's mode, not closed, each once.
  const beneficiary = t.participants.find((p) => p.role === 'BENEFICIARY');
  const payer = t.participants.find((p) => p.role === 'PAYER');
  const splitAccountIds = splitDrafts.map((s) => (s.role === 'BENEFICIARY' ? (beneficiary?.accountId ?? null) : (s.accountId?.toLowerCase() ?? null)));
  const accountRows = await tx.account.findMany({
    where: {
      organizationId: t.organizationId,
      id: { in: [...splitAccountIds, ...t.participants.map((p) => p.accountId)].filter((id): id is string => id !== null && isUuid(id)) },
    },
    select: { id: true, mode: true, status: true, accountHolderId: true },
  });
  const accounts = new Map(accountRows.map((a) => [a.id, a]));
  const seen = new Set<string>();
  splitDrafts.forEach((s, i) => {
    const id = splitAccountIds[i];
    const field = s.role ? 'role' : 'accountId';
    const a = id ? accounts.get(id) : undefined;
    if (!a) return s.fail(field, 'must be an account of the organization');
    if (a.mode !== t.environmentType) s.fail(field, `must be a ${t.environmentType} account (the mode of the transaction's environment)`);
    if (a.status === 'CLOSED') s.fail(field, 'is a closed account');
    if (seen.has(a.id)) s.fail(field, 'names an account another split rule names already');
    seen.add(a.id);
  });
  const fixedSum = splitDrafts.reduce((a, s) => a + (s.fixedAmount ?? 0n), 0n);
  if (fixedSum > amount) top('splits', `fixed amounts add up to ${fixedSum}, more than the transaction amount ${amount}`);

  // Parties. Participant accounts: the transaction's own and the split accounts of this rule.
  const participantAccounts = new Set([...t.participants.filter((p) => p.role !== 'SPLIT_RECIPIENT').map((p) => p.accountId), ...seen]);
  const holders = new Set([...participantAccounts].map((id) => accounts.get(id)?.accountHolderId).filter((h): h is string => !!h));
  const drafts = [...milestoneDrafts.flatMap((m) => m.conditions), ...splitDrafts.flatMap((s) => s.holdConditions)];
  const memberIds = drafts
    .map((c) => c.memberId)
    .filter((id): id is string => id !== null && isUuid(id))
    .map((id) => id.toLowerCase());
  const members = new Set(
    (await tx.member.findMany({ where: { organizationId: t.organizationId, id: { in: memberIds }, removedAt: null }, select: { id: true } })).map((m) => m.id),
  );
  const resolve = (c: Draft): Resolved => {
    const r: Resolved = { kind: c.kind, party: null, memberId: null, accountHolderId: null, releaseAfter: null, durationSeconds: null };
    if (c.kind === 'APPROVAL') {
      if (c.party === 'MEMBER') {
        r.party = 'MEMBER';
        r.memberId = c.memberId?.toLowerCase() ?? null;
        if (!r.memberId || !members.has(r.memberId)) c.fail('memberId', 'must be a member of the organization');
      } else if (c.party === 'ACCOUNT_HOLDER') {
        r.party = 'ACCOUNT_HOLDER';
        r.accountHolderId = c.accountHolderId?.toLowerCase() ?? null;
        if (!r.accountHolderId || !holders.has(r.accountHolderId))
          c.fail('accountHolderId', "must be the account holder of one of the transaction's participant accounts");
      } else if (c.party === 'PAYER' || c.party === 'BENEFICIARY') {
        r.party = 'ACCOUNT_HOLDER';
        const p = c.party === 'PAYER' ? payer : beneficiary;
        const holder = p ? accounts.get(p.accountId)?.accountHolderId : null;
        if (!p) c.fail('party', `the transaction has no ${c.party.toLowerCase()} account`);
        else if (!holder) c.fail('party', `the ${c.party.toLowerCase()} account has no account holder to approve`);
        r.accountHolderId = holder ?? null;
      } else r.party = 'INTEGRATOR';
    } else if (c.kind === 'TIME_LOCK') {
      r.releaseAfter = c.releaseAfter;
      if (!c.fromTemplate && c.releaseAfter && c.releaseAfter.getTime() <= opts.now.getTime())
        c.fail('releaseAfter', `must be in the future (the environment's time is ${opts.now.toISOString()})`);
    } else r.durationSeconds = c.durationSeconds;
    return r;
  };
  const rule: ResolvedRule = {
    templateId,
    milestones: milestoneDrafts.map((m, i) => ({ name: m.name, amount: amounts[i]!, mode: m.mode, conditions: m.conditions.map(resolve) })),
    splits: splitDrafts.map((s, i) => ({
      accountId: accounts.get(splitAccountIds[i]!)?.id ?? '',
      percentage: s.percentage,
      fixedAmount: s.fixedAmount,
      holdConditions: s.holdConditions.map(resolve),
    })),
  };
  if (errors.length) throw validationFailed(errors);
  return rule;
}

/** UUIDv7s in order within one call (RFC 9562 method 1: a 12-bit counter in rand_a), so ids sort as the input. */
function idSequence(ms: number): () => string {
  let seq = 0;
  return () => {
    const b = randomBytes(16);
    b.writeUIntBE(ms, 0, 6);
    b[6] = 0x70 | ((seq >> 8) & 0x0f);
    b[7] = seq & 0xff;
    b[8] = 0x80 | (b[8]! & 0x3f);
    seq++;
    const h = b.toString('hex');
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  };
}

/**
 * Sets (replaces) a transaction's release rule in the caller's transaction, after the caller
 * locked the Transaction row and checked that the rule may change. The previous rule's conditions,
 * milestones, split rules and split-only participants go; releaseRuleSetAt = now (the
 * environment's). Writes the audit entry; emits no event (the catalog has none for it).
 */
export async function applyReleaseRuleInTx(
  tx: Db,
  deps: MoneyDeps,
  actor: Actor,
  transactionId: string,
  input: ReleaseRuleInput,
  opts: { now: Date; field?: (path: string) => string },
): Promise<void> {
  const t = await tx.transaction.findUniqueOrThrow({ where: { id: transactionId }, include: { participants: true } });
  const rule = await resolveRule(tx, t, input, { now: opts.now, field: opts.field ?? ((p) => p) });
  const organizationId = t.organizationId;
  await tx.releaseCondition.deleteMany({ where: { transactionId } });
  await tx.releaseMilestone.deleteMany({ where: { transactionId } });
  await tx.splitRule.deleteMany({ where: { transactionId } });
  await tx.transactionParticipant.deleteMany({ where: { transactionId, role: 'SPLIT_RECIPIENT' } });

  const createdAt = deps.clock.now();
  const nextId = idSequence(createdAt.getTime());
  const participantOf = new Map(t.participants.filter((p) => p.role !== 'SPLIT_RECIPIENT').map((p) => [p.accountId, p.id]));
  const newParticipants: { id: string; transactionId: string; accountId: string; role: 'SPLIT_RECIPIENT' }[] = [];
  for (const s of rule.splits)
    if (!participantOf.has(s.accountId)) {
      const id = nextId();
      participantOf.set(s.accountId, id);
      newParticipants.push({ id, transactionId, accountId: s.accountId, role: 'SPLIT_RECIPIENT' });
    }
  if (newParticipants.length) await tx.transactionParticipant.createMany({ data: newParticipants });

  const conditions: Prisma.ReleaseConditionCreateManyInput[] = [];
  const conditionRow = (c: Resolved, owner: { milestoneId?: string; splitRuleId?: string }): Prisma.ReleaseConditionCreateManyInput => ({
    id: nextId(),
    transactionId,
    organizationId,
    ...owner,
    kind: c.kind,
    party: c.party,
    memberId: c.memberId,
    accountHolderId: c.accountHolderId,
    releaseAfter: c.releaseAfter,
    durationSeconds: c.durationSeconds,
    createdAt,
  });
  const splits = rule.splits.map((s, i) => {
    const id = nextId();
    conditions.push(...s.holdConditions.map((c) => conditionRow(c, { splitRuleId: id })));
    return {
      id,
      transactionId,
      organizationId,
      position: i + 1,
      participantId: participantOf.get(s.accountId)!,
      accountId: s.accountId,
      percentage: s.percentage !== null ? percentageToNumeric(s.percentage) : null,
      fixedAmount: s.fixedAmount !== null ? amountToNumeric(s.fixedAmount) : null,
      createdAt,
    };
  });
  const milestones = rule.milestones.map((m, i) => {
    const id = nextId();
    conditions.push(...m.conditions.map((c) => conditionRow(c, { milestoneId: id })));
    return { id, transactionId, organizationId, position: i + 1, name: m.name, amount: amountToNumeric(m.amount), mode: m.mode, createdAt };
  });
  if (splits.length) await tx.splitRule.createMany({ data: splits });
  if (milestones.length) await tx.releaseMilestone.createMany({ data: milestones });
  if (conditions.length) await tx.releaseCondition.createMany({ data: conditions });
  await tx.transaction.update({ where: { id: transactionId }, data: { releaseRuleSetAt: opts.now, releaseRuleTemplateId: rule.templateId } });

  const summary = (c: Resolved) => ({
    kind: c.kind,
    party: c.party,
    memberId: c.memberId,
    accountHolderId: c.accountHolderId,
    releaseAfter: c.releaseAfter?.toISOString() ?? null,
    durationSeconds: c.durationSeconds,
  });
  await auditAs(tx, deps, actor, {
    organizationId,
    entityType: 'Transaction',
    entityId: transactionId,
    action: 'transaction.release_rule_set',
    before: t.releaseRuleSetAt ? { releaseRuleSetAt: t.releaseRuleSetAt.toISOString(), templateId: t.releaseRuleTemplateId } : null,
    after: {
      templateId: rule.templateId,
      releaseRuleSetAt: opts.now.toISOString(),
      milestones: rule.milestones.map((m, i) => ({
        position: i + 1,
        name: m.name,
        amount: amountToNumeric(m.amount),
        mode: m.mode,
        conditions: m.conditions.map(summary),
      })),
      splits: rule.splits.map((s, i) => ({
        position: i + 1,
        accountId: s.accountId,
        percentage: s.percentage !== null ? percentageToString(s.percentage) : null,
        fixedAmount: s.fixedAmount !== null ? amountToNumeric(s.fixedAmount) : null,
        holdConditions: s.holdConditions.map(summary),
      })),
    },
  });
}

// ---------------------------------------------------------------------------------------------
// Who sees a transaction's rule

/**
 * The transaction, if the principal may see its release rule: a member of its organization, an
 * API key of its environment, or an account holder (with an active relationship with the
 * organization) that the rule names or that holds one of its participant accounts. Else 404.
 */
export async function loadRuleTransaction(ctx: Context, idArg: unknown, db: Db = ctx.deps.db): Promise<Transaction> {
  const id = assertId(idArg, 'Transaction');
  const t = await db.transaction.findUnique({ where: { id } });
  if (!t || !(await maySee(db, ctx.principal, t))) throw notFound('Transaction');
  return t;
}

async function maySee(db: Db, p: Principal | null, t: Transaction): Promise<boolean> {
  switch (p?.type) {
    case 'member':
      return p.organizationId === t.organizationId;
    case 'apiKey':
      return p.organizationId === t.organizationId && p.environmentId === t.environmentId;
    case 'accountHolder': {
      const rel = await db.relationship.findUnique({
        where: { organizationId_accountHolderId: { organizationId: t.organizationId, accountHolderId: p.accountHolderId } },
        select: { status: true },
      });
      if (rel?.status !== 'ACTIVE') return false;
      if (await db.releaseCondition.findFirst({ where: { transactionId: t.id, accountHolderId: p.accountHolderId }, select: { id: true } })) return true;
      const participants = await db.transactionParticipant.findMany({ where: { transactionId: t.id }, select: { accountId: true } });
      return !!(await db.account.findFirst({
        where: { id: { in: participants.map((x) => x.accountId) }, accountHolderId: p.accountHolderId },
        select: { id: true },
      }));
    }
    default:
      return false;
  }
}

// ---------------------------------------------------------------------------------------------
// Reads

/** A stored condition: what was resolved at set time, plus its id, due time, state and approval. */
export interface ConditionView extends Resolved {
  id: string;
  dueAt: Date | null;
  met: boolean;
  approvedAt: Date | null;
  approvedByType: string | null;
  approvedById: string | null;
}
export interface MilestoneView {
  id: string;
  position: number;
  name: string | null;
  amount: string;
  mode: 'ALL' | 'ANY';
  status: 'PENDING' | 'RELEASED' | 'CANCELLED';
  settlementId: string | null;
  releasedAt: Date | null;
  conditions: ConditionView[];
}
export interface SplitView {
  id: string;
  position: number;
  accountId: string;
  participantId: string;
  percentage: string | null;
  fixedAmount: string | null;
  allocatedAmount: string;
  holdConditions: ConditionView[];
}
export interface ReleaseRuleView {
  transactionId: string;
  setAt: Date | null;
  templateId: string | null;
  milestones: MilestoneView[];
  splits: SplitView[];
}

/** The transaction's rule as read: each condition with when it is due and whether it is met now (the environment's now). */
export async function releaseRuleOf(db: Db, clock: MoneyDeps['clock'], t: Transaction): Promise<ReleaseRuleView> {
  const [milestones, splits, now] = await Promise.all([
    db.releaseMilestone.findMany({ where: { transactionId: t.id }, orderBy: { position: 'asc' }, include: { conditions: { orderBy: { id: 'asc' } } } }),
    db.splitRule.findMany({ where: { transactionId: t.id }, orderBy: { position: 'asc' }, include: { holdConditions: { orderBy: { id: 'asc' } } } }),
    nowFor(db, clock, t.organizationId, t.environmentType),
  ]);
  const condition = (c: ReleaseCondition): ConditionView => ({
    id: c.id,
    kind: c.kind,
    party: c.party,
    memberId: c.memberId,
    accountHolderId: c.accountHolderId,
    releaseAfter: c.releaseAfter,
    durationSeconds: c.durationSeconds,
    dueAt: conditionDueAt(c, t),
    met: conditionMet(c, t, now),
    approvedAt: c.approvedAt,
    approvedByType: c.approvedByType,
    approvedById: c.approvedById,
  });
  return {
    transactionId: t.id,
    setAt: t.releaseRuleSetAt,
    templateId: t.releaseRuleTemplateId,
    milestones: milestones.map((m) => ({
      id: m.id,
      position: m.position,
      name: m.name,
      amount: amountToString(numericToAmount(m.amount)),
      mode: m.mode,
      status: m.status,
      settlementId: m.settlementId,
      releasedAt: m.releasedAt,
      conditions: m.conditions.map(condition),
    })),
    splits: splits.map((s) => ({
      id: s.id,
      position: s.position,
      accountId: s.accountId,
      participantId: s.participantId,
      percentage: s.percentage !== null ? percentageToString(numericToPercentage(s.percentage)) : null,
      fixedAmount: s.fixedAmount !== null ? amountToString(numericToAmount(s.fixedAmount)) : null,
      allocatedAmount: amountToString(numericToAmount(s.allocatedAmount)),
      holdConditions: s.holdConditions.map(condition),
    })),
  };
}

export async function getReleaseRule(ctx: Context, transactionIdArg: unknown): Promise<ReleaseRuleView> {
  const t = await loadRuleTransaction(ctx, transactionIdArg);
  return releaseRuleOf(ctx.deps.db, ctx.deps.clock, t);
}

// ---------------------------------------------------------------------------------------------
// Commands

const RULE_STATUSES: readonly Transaction['status'][] = ['AWAITING_FUNDS', 'RESERVED'];

/**
 * Refuses a rule change unless the transaction is AWAITING_FUNDS or RESERVED and nothing was
 * settled or asked to be (no Settlement row). Call with the Transaction row locked.
 */
async function assertRuleMayChange(tx: Db, t: Transaction): Promise<void> {
  if (!RULE_STATUSES.includes(t.status))
    throw invalidState(`A transaction in status ${t.status} cannot take a release rule (AWAITING_FUNDS or RESERVED only).`);
  if (await tx.settlement.findFirst({ where: { transactionId: t.id }, select: { id: true } }))
    throw invalidState('A settlement of the transaction was already requested: its release rule can no longer change.');
}

/** setTransactionReleaseRule / PUT /v1/transactions/{id}/release-rule: replaces the rule; evaluates it at once when the transaction is RESERVED. */
export async function setTransactionReleaseRule(ctx: Context, transactionIdArg: unknown, input: ReleaseRuleInput): Promise<ReleaseRuleView> {
  const t = await loadRuleTransaction(ctx, transactionIdArg);
  if (ctx.principal?.type !== 'member' && ctx.principal?.type !== 'apiKey') throw notFound('Transaction');
  const actor = requestActor(ctx);
  await ctx.deps.db.$transaction(async (tx) => {
    await lockTransactionRow(tx, t.id);
    const cur = await tx.transaction.findUniqueOrThrow({ where: { id: t.id } });
    await assertRuleMayChange(tx, cur);
    const now = await nowFor(tx, ctx.deps.clock, cur.organizationId, cur.environmentType);
    await applyReleaseRuleInTx(tx, ctx.deps, actor, cur.id, input, { now });
    if (cur.status === 'RESERVED') await evaluateRelease(tx, ctx.deps, actor, cur.id, now);
  }, TX_OPTIONS);
  return getReleaseRule(ctx, t.id);
}

/**
 * approveRelease / POST /v1/transactions/{id}/release-approvals: approves every pending APPROVAL
 * condition that names the caller (or only `conditionId`): a member the conditions naming it, an
 * API key of the transaction's application and environment the INTEGRATOR conditions, an account
 * holder the conditions naming it. 409 when there is none. Recorded even while the transaction is
 * frozen (it releases once unfrozen); then the rule is evaluated in the same database transaction.
 */
export async function approveRelease(ctx: Context, transactionIdArg: unknown, conditionIdArg: unknown): Promise<ReleaseRuleView> {
  const t = await loadRuleTransaction(ctx, transactionIdArg);
  const p = ctx.principal;
  let who: Prisma.ReleaseConditionWhereInput;
  if (p?.type === 'member') who = { party: 'MEMBER', memberId: p.memberId };
  else if (p?.type === 'apiKey') who = { party: 'INTEGRATOR' };
  else if (p?.type === 'accountHolder') who = { party: 'ACCOUNT_HOLDER', accountHolderId: p.accountHolderId };
  else throw notFound('Transaction');
  const conditionId = conditionIdArg == null ? null : assertId(conditionIdArg, 'Release condition');
  const actor = requestActor(ctx);
  const { actorType, actorId } = actorOf(p);
  await ctx.deps.db.$transaction(async (tx) => {
    await lockTransactionRow(tx, t.id);
    const cur = await tx.transaction.findUniqueOrThrow({ where: { id: t.id } });
    if (cur.status === 'CANCELLED' || cur.status === 'EXPIRED') throw invalidState(`The transaction is ${cur.status}: there is nothing to release.`);
    if (conditionId && !(await tx.releaseCondition.findFirst({ where: { id: conditionId, transactionId: t.id }, select: { id: true } })))
      throw notFound('Release condition');
    const pending = await tx.releaseCondition.findMany({
      where: {
        transactionId: t.id,
        kind: 'APPROVAL',
        approvedAt: null,
        ...who,
        ...(conditionId ? { id: conditionId } : {}),
        OR: [{ milestone: { status: 'PENDING' } }, { splitRuleId: { not: null } }],
      },
      orderBy: { id: 'asc' },
    });
    if (!pending.length)
      throw invalidState(
        conditionId
          ? 'That condition is not an approval waiting for you (another party approves it, it was approved already, or its milestone is no longer pending).'
          : 'No approval of this transaction is waiting for you.',
      );
    const now = await nowFor(tx, ctx.deps.clock, cur.organizationId, cur.environmentType);
    await tx.releaseCondition.updateMany({
      where: { id: { in: pending.map((c) => c.id) } },
      data: { approvedAt: now, approvedByType: actorType, approvedById: actorId },
    });
    await auditAs(tx, ctx.deps, actor, {
      organizationId: cur.organizationId,
      entityType: 'Transaction',
      entityId: t.id,
      action: 'transaction.release_approved',
      after: {
        conditionIds: pending.map((c) => c.id),
        milestoneIds: [...new Set(pending.map((c) => c.milestoneId).filter(Boolean))],
        splitRuleIds: [...new Set(pending.map((c) => c.splitRuleId).filter(Boolean))],
        approvedAt: now.toISOString(),
      },
    });
    await evaluateRelease(tx, ctx.deps, actor, t.id, now);
    if (pending.some((c) => c.splitRuleId !== null)) await sendRetainedRelease(tx, ctx.deps.boss, { transactionId: t.id });
  }, TX_OPTIONS);
  return getReleaseRule(ctx, t.id);
}

// ---------------------------------------------------------------------------------------------
// Evaluation

/** A deterministic job id per transaction and due time: sending the same scheduled evaluation twice queues it once. */
function scheduledJobId(transactionId: string, dueAt: Date): string {
  const h = createHash('sha256').update(`${RELEASE_EVALUATE_QUEUE} ${transactionId} ${dueAt.toISOString()}`).digest();
  h[6] = 0x80 | (h[6]! & 0x0f);
  h[8] = 0x80 | (h[8]! & 0x3f);
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

/**
 * Schedules the evaluation due at `dueAt` (the environment's time), in the caller's transaction,
 * mapped to the real clock as payment intents' expiry is. A sandbox clock advanced later is caught
 * by the sweep it triggers; a job that runs early finds nothing due.
 */
async function scheduleEvaluation(tx: Db, deps: MoneyDeps, transactionId: string, dueAt: Date, now: Date): Promise<void> {
  if (!deps.boss) return;
  const startAfter = new Date(deps.clock.now().getTime() + Math.max(0, dueAt.getTime() - now.getTime()));
  await deps.boss.send(RELEASE_EVALUATE_QUEUE, { transactionId } satisfies ReleaseEvaluateJob, {
    db: fromPrisma(tx as never),
    id: scheduledJobId(transactionId, dueAt),
    startAfter,
  });
}

/**
 * Evaluates a transaction's rule (locks its Transaction row first): unless releaseBlocker says
 * no, every PENDING milestone whose conditions are met, in position order, is RELEASED and its
 * settlement requested: its amount, capped by what the escrow holds beyond what open (PENDING or
 * FAILED) settlements already ask. The last pending milestone asks for everything left in the
 * escrow at execution (null) when no other settlement of the transaction is open; else for all the
 * escrow holds beyond the open ones (a null settlement executed before an earlier explicit one would
 * leave that one nothing). Then the next time-based evaluation is scheduled. Safe to run at any
 * time, twice, or concurrently.
 */
export async function evaluateRelease(tx: Db, deps: MoneyDeps, actor: Actor, transactionId: string, nowArg?: Date): Promise<{ released: string[] }> {
  await lockTransactionRow(tx, transactionId);
  const t = await tx.transaction.findUnique({ where: { id: transactionId } });
  if (!t) return { released: [] };
  if (await releaseBlocker(tx, t)) return { released: [] };
  const pending = await tx.releaseMilestone.findMany({
    where: { transactionId, status: 'PENDING' },
    orderBy: { position: 'asc' },
    include: { conditions: true },
  });
  if (!pending.length) return { released: [] };
  const now = nowArg ?? (await nowFor(tx, deps.clock, t.organizationId, t.environmentType));

  // What the escrow holds beyond what requested settlements (PENDING, or FAILED and retryable) already ask.
  const open = await tx.settlement.findMany({ where: { transactionId, status: { in: ['PENDING', 'FAILED'] } }, select: { requestedAmount: true } });
  let available = open.some((s) => s.requestedAmount === null) ? 0n : escrowOf(t) - open.reduce((a, s) => a + numericToAmount(s.requestedAmount!), 0n);

  let left = pending.length;
  let openCount = open.length;
  const released: { id: string; position: number; amount: Amount | null; settlementId: string }[] = [];
  for (const m of pending) {
    if (!conditionsMet(m.mode, m.conditions, t, now)) continue;
    let amount: Amount | null = null;
    if (left > 1 || openCount > 0) {
      // Not the last, or others still open: an explicit amount, so the order settlements execute in cannot matter.
      const share = left > 1 ? numericToAmount(m.amount) : available;
      amount = share < available ? share : available;
      // Nothing to ask for now: the escrow is spoken for. It stays PENDING (cancelled when the escrow empties).
      if (amount <= 0n) break;
      available -= amount;
    }
    openCount++;
    const s = await settlementRequester()(tx, deps, actor, { transaction: t, milestoneId: m.id, amount });
    await tx.releaseMilestone.update({ where: { id: m.id }, data: { status: 'RELEASED', releasedAt: now, settlementId: s.id } });
    released.push({ id: m.id, position: m.position, amount, settlementId: s.id });
    left--;
  }
  await auditAll(
    tx,
    deps,
    actor,
    released.map((r) => ({
      organizationId: t.organizationId,
      entityType: 'Transaction',
      entityId: t.id,
      action: 'transaction.milestone_released',
      before: { milestoneId: r.id, status: 'PENDING' },
      after: {
        milestoneId: r.id,
        position: r.position,
        status: 'RELEASED',
        settlementId: r.settlementId,
        requestedAmount: r.amount === null ? null : amountToNumeric(r.amount),
      },
    })),
  );

  const releasedIds = new Set(released.map((r) => r.id));
  const due = nextDueAt(
    pending.filter((m) => !releasedIds.has(m.id)).flatMap((m) => m.conditions),
    t,
    now,
  );
  if (due) await scheduleEvaluation(tx, deps, t.id, due, now);
  return { released: released.map((r) => r.id) };
}

/** Evaluates one transaction in its own database transaction (the release.evaluate job). */
export function evaluateReleaseNow(deps: MoneyDeps, transactionId: string, actor: Actor = systemActor('job:release.evaluate')) {
  return deps.db.$transaction((tx) => evaluateRelease(tx, deps, actor, transactionId), TX_OPTIONS);
}

/**
 * The sweep: every RESERVED, unfrozen transaction with PENDING milestones (of one organization)
 * is evaluated, each in its own database transaction. Runs every minute and after a sandbox clock
 * advance. Answers how many milestones it released.
 */
export async function runReleaseSweep(deps: MoneyDeps, opts: { organizationId?: string; batch?: number } = {}): Promise<number> {
  const batch = opts.batch ?? 500;
  const org = opts.organizationId && isUuid(opts.organizationId) ? opts.organizationId : null;
  const actor = systemActor('job:release.sweep');
  let after = '00000000-0000-0000-0000-000000000000';
  let released = 0;
  for (;;) {
    // Driven by the partial index of PENDING milestones (migration 20261121220100_release_rules).
    const rows = await deps.db.$queryRaw<{ id: string }[]>`
      SELECT DISTINCT m."transactionId" AS "id" FROM "ReleaseMilestone" m
      JOIN "Transaction" t ON t."id" = m."transactionId"
      WHERE m."status" = 'PENDING' AND m."transactionId" > ${after}::uuid
        AND (${org}::uuid IS NULL OR m."organizationId" = ${org}::uuid)
        AND t."status" = 'RESERVED' AND NOT t."frozen"
      ORDER BY 1 LIMIT ${batch}`;
    for (const { id } of rows) released += (await evaluateReleaseNow(deps, id, actor)).released.length;
    if (rows.length < batch) return released;
    after = rows[rows.length - 1]!.id;
  }
}
