import { z } from 'zod';
import type { Context } from '../context';
import { Prisma, type Db, type RawDb } from '../db/prisma';
import type { PricingPolicy, ReleaseCondition, Settlement, SettlementAllocation, SplitRule, Transaction } from '../generated/prisma/client';
import { DomainError, invalidState, notFound } from '../errors';
import { assertId, isUuid, uuidv7, uuidv7After } from '../ids';
import { idempotent } from '../idempotency';
import { postInStatement, type LedgerError, type PostInput, type PostingLine } from '../ledger/ledger';
import {
  amountToNumeric,
  amountToString,
  numericToAmount,
  numericToPercentage,
  percentageToNumeric,
  percentageToString,
  type Amount,
  positiveAmountText,
} from '../money';
import type { AuditInput } from '../audit/audit';
import { auditAll, auditAs, type Actor } from '../audit/audit';
import { emitEvents } from '../webhooks/outbox';
import { webhookEvent, type EventFields, type EventType, type WebhookEventData } from '../webhooks/events';
import { lockTransactionRow, retryingRawTransaction, requestActor, systemActor, TX_OPTIONS, type MoneyDeps } from '../kernel/service';
import { runIsolatingErrors } from '../kernel/work';
import { ledgerAccounts } from '../ledger/ledger';
import { visibleMoneyWhere } from '../deposits/payment-intents';
import { loadTransaction } from '../transactions/transactions';
import { allocate, SplitRulesInvalid, type SplitRuleInput } from './allocation';
import { BLOCKER_MESSAGES, escrowOf, escrowOutcome, releaseBlocker, type ReleaseBlocker } from '../release/escrow';
import { computeFee, pricingPolicyAt, pricingPolicyCandidates } from './policies/policies';
import { sendSettlementExecution } from '../kernel/queues';
import {
  ledgerCustomer,
  ledgerRetained,
  lockedAccountStates,
  retainReasonsOf,
  scheduleHoldRecheck,
  type AccountState,
  type HoldCondition,
  type RetainReason,
} from './retained';
import { setSettlementRequester } from '../release/release-rules';

/**
 * Settlements (docs/settlements.md): money leaves a transaction's escrow, pays the platform fee
 * and is split between beneficiary accounts, in one ledger transaction.
 *
 * Lifecycle: PENDING (requested: by a release rule's milestone, or directly) -> EXECUTED by the
 * settlement.execute job, or FAILED with a reason (nothing moved); FAILED -> PENDING again by an
 * operator's AdminRetrySettlement. The job posts under the key settlement:<id>, so however often a
 * settlement is executed or retried it pays at most once.
 */

/**
 * A settlement with its allocations, oldest (= split position) first. The allocations are read by
 * a query of their own, never through `include`: a relation loaded by a join travels as JSON, where
 * a NUMERIC(78,0) becomes a JSON number (a double), and amounts above 2^53 would lose digits.
 */
export type SettlementRow = Settlement & { allocations: SettlementAllocation[] };

export async function withAllocations(db: Db, rows: Settlement[]): Promise<SettlementRow[]> {
  if (!rows.length) return [];
  const allocations = await db.settlementAllocation.findMany({ where: { settlementId: { in: rows.map((r) => r.id) } }, orderBy: { id: 'asc' } });
  return rows.map((r) => ({ ...r, allocations: allocations.filter((a) => a.settlementId === r.id) }));
}

/** Why an attempt failed (the code starting settlement.failed's Reason and failureReason). */
export type FailureCode =
  | 'NOT_RESERVED'
  | 'TRANSACTION_FROZEN'
  | 'DEPOSIT_UNDER_REVIEW'
  | 'NOTHING_TO_SETTLE'
  | 'INSUFFICIENT_ESCROW'
  | 'FEE_EXCEEDS_GROSS'
  | 'SPLIT_RULES_INVALID'
  | 'AMOUNT_OUT_OF_RANGE';

// ------------------------------------------------------------------------------------------------
// Reads

export async function loadSettlement(ctx: Context, idArg: unknown, db: Db = ctx.deps.db): Promise<SettlementRow> {
  const id = assertId(idArg, 'Settlement');
  const visible = visibleMoneyWhere(ctx);
  if (!visible) throw notFound('Settlement');
  const row = await db.settlement.findFirst({ where: { id, ...visible } });
  if (!row) throw notFound('Settlement');
  return (await withAllocations(db, [row]))[0]!;
}

// ------------------------------------------------------------------------------------------------
// Request

/**
 * Creates a PENDING settlement of the transaction and queues its execution, with its audit entry,
 * in the caller's database transaction. The caller holds the Transaction row lock (release rules
 * call this when a milestone's conditions are met; requestSettlement for a direct request).
 * amount: what to settle (gross, fee included); null: everything left in escrow when it executes.
 */
export async function requestSettlementInTx(
  tx: Db,
  deps: MoneyDeps,
  actor: Actor,
  input: { transaction: Transaction; milestoneId?: string | null; amount?: bigint | null },
): Promise<{ id: string }> {
  const t = input.transaction;
  const amount = input.amount ?? null;
  if (amount !== null && amount <= 0n) throw new RangeError('a settlement asks for a positive amount');
  const now = deps.clock.now();
  // Request order is (createdAt, milestone position, id) (readGroup): two requests of one clock
  // millisecond must not be ordered by uuidv7's random bits, so the id sorts after every earlier
  // settlement of the transaction (read under its row lock, which serializes the requests).
  const [last] = await tx.$queryRaw<{ id: string }[]>`
    SELECT "id"::text AS "id" FROM "Settlement" WHERE "transactionId" = ${t.id}::uuid ORDER BY "id" DESC LIMIT 1`;
  const id = uuidv7After(last?.id ?? null, now.getTime());
  await tx.settlement.create({
    data: {
      id,
      organizationId: t.organizationId,
      applicationId: t.applicationId,
      environmentId: t.environmentId,
      environmentType: t.environmentType,
      transactionId: t.id,
      assetNetworkId: t.assetNetworkId,
      milestoneId: input.milestoneId ?? null,
      requestedAmount: amount === null ? null : amountToNumeric(amount),
      createdAt: now,
    },
  });
  await auditAs(tx, deps, actor, {
    organizationId: t.organizationId,
    entityType: 'Settlement',
    entityId: id,
    action: 'settlement.requested',
    after: {
      status: 'PENDING',
      transactionId: t.id,
      milestoneId: input.milestoneId ?? null,
      requestedAmount: amount === null ? null : amountToNumeric(amount),
    },
  });
  await sendSettlementExecution(tx, deps.boss, id);
  return { id };
}

export const requestSettlementInput = z.object({ amount: positiveAmountText.nullish() }).strict();
export type RequestSettlementInput = z.infer<typeof requestSettlementInput>;

/**
 * A direct settlement request (members with payment-manage, API keys of the transaction's
 * environment): 409 when the transaction has release milestones (its rule releases the funds),
 * when it may not release now (releaseBlocker), or when the amount exceeds what its escrow holds
 * beyond what pending settlements already ask; no amount asks for everything left at execution
 * (or, while other settlements are pending, for exactly what they leave).
 */
export async function requestSettlement(
  ctx: Context,
  transactionIdArg: unknown,
  input: RequestSettlementInput | null | undefined,
  idempotencyKey: string | null | undefined,
): Promise<SettlementRow> {
  const t0 = await loadTransaction(ctx, transactionIdArg);
  const amount = input?.amount == null ? null : BigInt(input.amount);
  const p = ctx.principal;
  const who = p?.type === 'apiKey' ? `app:${p.applicationId}` : p?.type === 'member' ? `member:${p.memberId}` : 'other';
  const created = await ctx.deps.db.$transaction(
    (tx) =>
      idempotent(
        tx,
        ctx,
        { scope: `requestSettlement:${t0.id}:${who}`, key: idempotencyKey, request: { transactionId: t0.id, amount: input?.amount ?? null } },
        async () => {
          await lockTransactionRow(tx, t0.id);
          const t = await tx.transaction.findUniqueOrThrow({ where: { id: t0.id } });
          if (await tx.releaseMilestone.count({ where: { transactionId: t.id } }))
            throw invalidState('The transaction has a release rule with milestones: the rule releases its funds (docs/release-rules.md).');
          const blocker = await releaseBlocker(tx, t);
          if (blocker) throw invalidState(BLOCKER_MESSAGES[blocker]);
          const pending = await tx.settlement.findMany({ where: { transactionId: t.id, status: 'PENDING' }, select: { requestedAmount: true } });
          if (pending.some((s) => s.requestedAmount === null))
            throw invalidState('A pending settlement of the transaction already asks for everything left in its escrow.');
          const available = escrowOf(t) - pending.reduce((sum, s) => sum + numericToAmount(s.requestedAmount!), 0n);
          if (amount === null ? available <= 0n : amount > available)
            throw invalidState(
              `The escrow holds ${amountToString(available > 0n ? available : 0n)} beyond what pending settlements ask${amount === null ? '' : `: ${amountToString(amount)} cannot be settled`}.`,
            );
          // No amount, while others are pending: ask for exactly what they leave, so the order the
          // settlements execute in cannot matter (a null one executed first would leave them nothing).
          const ask = amount === null && pending.length ? available : amount;
          return requestSettlementInTx(tx, ctx.deps, requestActor(ctx), { transaction: t, amount: ask });
        },
      ),
    TX_OPTIONS,
  );
  return loadSettlement(ctx, created.id);
}

// ------------------------------------------------------------------------------------------------
// Execution (the settlement.execute job)

export type ExecutionOutcome = { status: 'EXECUTED'; isTotal: boolean } | { status: 'FAILED'; reason: FailureCode } | { status: 'SKIPPED' };

const FAILURE_MESSAGES: Record<FailureCode, string> = {
  ...BLOCKER_MESSAGES,
  NOTHING_TO_SETTLE: 'The escrow holds nothing to settle.',
  INSUFFICIENT_ESCROW: 'The amount asked exceeds what the escrow holds.',
  FEE_EXCEEDS_GROSS: 'The platform fee of the pricing policy in force exceeds the amount settled.',
  SPLIT_RULES_INVALID: 'The split rules do not allocate exactly the distributable amount.',
  AMOUNT_OUT_OF_RANGE: 'A ledger total of an account it credits would exceed what the ledger holds (10^78 - 1 base units): nothing was posted.',
};

/**
 * A group of settlements runs in three phases, in one database transaction (group commit,
 * docs/decisions.md "Money paths at database speed"):
 * 1. **Reads** (readGroup): after the group's Transaction rows are locked, everything its settlements
 *    read is read for the whole group in a fixed number of statements, whatever the group's size.
 * 2. **Rules** (executeOne): each job's settlement is decided in memory, in job order, on the state
 *    the settlements before it in the group left (the transaction's totals and status, the fixed
 *    split rules' allocated amounts, which settlement of the transaction is next).
 * 3. **Writes** (writeGroup): every row the group changes is written set-based, one statement per
 *    table, the ledger postings in one ledger_post call last.
 */
interface GroupReads {
  /** Per transaction, its PENDING settlements in request order (createdAt, milestone position, id): a job takes the first. */
  pending: Map<string, Settlement[]>;
  /** The group's transactions, as the settlements executed so far in the group left them. */
  transactions: Map<string, Transaction>;
  /** Transactions with a deposit under review or in doubt (releaseBlocker). */
  underReview: Set<string>;
  /** Per transaction, its split rules by position (allocatedAmount as the group left it). */
  rules: Map<string, GroupRule[]>;
  /** Per transaction without split rules, its BENEFICIARY participant. */
  beneficiaries: Map<string, { id: string; accountId: string }>;
  /** The accounts the group's portions go to, read under their ledger locks (retainReasons). */
  accounts: Map<string, AccountState>;
  /** The sandbox clock's offset per organization (ms). */
  offsets: Map<string, number>;
  /** Pricing-policy candidates per (organization, application, asset-network): the one in force is picked at each settlement's now. */
  policies: Map<string, PricingPolicy[]>;
}
type GroupRule = SplitRuleInput & { holdConditions: HoldCondition[] };

/** What the group's settlements write together at its end (writeGroup). */
interface GroupWrites {
  events: { organizationId: string; event: WebhookEventData }[];
  audits: AuditInput[];
  failed: { settlementId: string; attempts: number; reason: string; failedAt: Date }[];
  allocations: {
    id: string;
    settlementId: string;
    transactionId: string;
    organizationId: string;
    splitRuleId: string | null;
    participantId: string;
    accountId: string;
    amount: string;
    status: 'RETAINED' | 'RELEASED';
    retainReason: string | null;
    releasedAt: Date | null;
    createdAt: Date;
  }[];
  /** Fixed split rules' allocatedAmount as the group leaves it. */
  ruleAllocated: Map<string, bigint>;
  /** Transactions whose totals the group changed (their new state: GroupReads.transactions). */
  changed: Set<string>;
  /** Transactions whose escrow the group emptied: their PENDING milestones are cancelled. */
  emptied: Set<string>;
  executed: { settlementId: string; posting: PostInput; state: ExecutedState }[];
}
interface ExecutedState {
  attempts: number;
  gross: bigint;
  fee: bigint;
  distributable: bigint;
  pricingPolicyId: string | null;
  feePercentage: string | null;
  isTotal: boolean;
  executedAt: Date;
}

/** A batch rolled back because one of its postings was refused: its settlements run one by one. */
class GroupRefused extends Error {
  constructor(
    message: string,
    readonly refusal: { cause: LedgerError; settlementId: string },
  ) {
    super(message, { cause: refusal.cause });
  }
}

/**
 * A refusal the ledger answers the same at every attempt (a total beyond NUMERIC(78,0)): alone, it
 * is the settlement's FAILED outcome (AMOUNT_OUT_OF_RANGE), not an error its job would retry forever.
 */
const isFinalRefusal = (e: unknown): e is GroupRefused => e instanceof GroupRefused && e.refusal.cause.reason === 'AMOUNT_OUT_OF_RANGE';

/**
 * Executes a PENDING settlement — the transaction's oldest pending one, so that settlements of a
 * transaction execute in request order (anything else: nothing happens, so a repeated job is harmless),
 * under the Transaction row lock, in one database transaction: the fee from the pricing policy in
 * force, the split, one ledger transaction (key settlement:<id>), the allocations, the escrow
 * totals, the settlement's state, the events and the audit entries. A business refusal records
 * FAILED with its reason and moves nothing; an unexpected error (database) throws, and the job is
 * retried.
 */
export async function executeSettlement(deps: MoneyDeps, settlementId: string): Promise<ExecutionOutcome> {
  const [r] = await executeSettlementGroup(deps, [settlementId], { isolateOnError: false });
  if (r instanceof Error) throw r;
  return r!;
}

/**
 * Executes the settlements of `settlementIds` (each as executeSettlement does) in ONE database
 * transaction: one commit, the group's reads made once for all of them and its writes set-based
 * (GroupReads, GroupWrites). The Transaction rows are locked first, all at once in id order, so two
 * groups never wait for each other in a cycle. Each settlement answers on its own: a business refusal
 * is its own FAILED outcome inside the group; when anything else goes wrong (a database error, a
 * posting the ledger refuses, a deadlock) the group's transaction rolls back whole and, with
 * `isolateOnError` (the default), each settlement runs again alone in a transaction of its own, so
 * one bad settlement fails alone (its error in its place of the answer) and never takes the others
 * with it.
 */
export async function executeSettlementGroup(
  deps: MoneyDeps,
  settlementIds: readonly string[],
  opts: { isolateOnError?: boolean } = {},
): Promise<(ExecutionOutcome | Error)[]> {
  const run = async (group: readonly string[]) => {
    try {
      return await executeGroupRetrying(deps, group);
    } catch (e) {
      // Alone, a posting refused for good: run again, recording that settlement FAILED with the ledger's reason.
      if (group.length === 1 && isFinalRefusal(e)) return executeGroupRetrying(deps, group, new Map([[e.refusal.settlementId, e.refusal.cause]]));
      throw e;
    }
  };
  return runIsolatingErrors(settlementIds, run, {
    ...opts,
    errorOf: (e) => (e instanceof GroupRefused ? e.refusal.cause : e),
  });
}

/**
 * One group's transaction (executeGroupIn), run again whole after a deadlock or a serialization
 * failure (retryingRawTransaction: its ledger posting has no savepoint to retry under,
 * postInStatement). Raw statements only, straight on the pool (issue 22, session 13: through
 * Prisma's interactive transaction its runtime was a third of the main thread's time in a burst).
 */
function executeGroupRetrying(deps: MoneyDeps, settlementIds: readonly string[], refused?: ReadonlyMap<string, LedgerError>): Promise<ExecutionOutcome[]> {
  return retryingRawTransaction(deps.db, (tx) => executeGroupIn(tx, deps, settlementIds, refused));
}

async function executeGroupIn(
  tx: RawDb,
  deps: MoneyDeps,
  settlementIds: readonly string[],
  refused?: ReadonlyMap<string, LedgerError>,
): Promise<ExecutionOutcome[]> {
  const ids = settlementIds.map((id) => (isUuid(id) ? id : null));
  const valid = ids.filter((id): id is string => id !== null);
  // The Transaction rows of every settlement, locked at once, in id order.
  const heads = valid.length
    ? await tx.$queryRaw<{ id: string; transactionId: string }[]>`
        SELECT s."id"::text AS "id", s."transactionId"::text AS "transactionId"
          FROM "Settlement" s WHERE s."id" = ANY(${valid}::uuid[])`
    : [];
  const transactionIds = [...new Set(heads.map((h) => h.transactionId))].sort();
  if (!transactionIds.length) return ids.map(() => ({ status: 'SKIPPED' as const }));
  await tx.$queryRaw`SELECT 1 FROM "Transaction" WHERE "id" = ANY(${transactionIds}::uuid[]) ORDER BY "id" FOR UPDATE`;
  const headOf = new Map(heads.map((h) => [h.id, h.transactionId]));
  const reads = await readGroup(tx, transactionIds);
  const writes: GroupWrites = {
    events: [],
    audits: [],
    failed: [],
    allocations: [],
    ruleAllocated: new Map(),
    changed: new Set(),
    emptied: new Set(),
    executed: [],
  };
  const out: ExecutionOutcome[] = [];
  for (const id of ids) {
    const transactionId = id === null ? undefined : headOf.get(id);
    out.push(transactionId === undefined ? { status: 'SKIPPED' } : await executeOne(tx, deps, reads, writes, transactionId, refused));
  }
  await writeGroup(tx, deps, reads, writes);
  return out;
}

/**
 * Everything the group's settlements read, for all of them at once, after the Transaction rows are
 * locked (so nothing of these transactions changes until the commit): about ten statements for a
 * group of any size (one more per pricing scope when the group spans several).
 */
async function readGroup(tx: RawDb, transactionIds: string[]): Promise<GroupReads> {
  // Pending settlements in request order (by time, then milestone position): fixed split amounts
  // and rounding remainders then land the same way however the workers are scheduled.
  const order = await tx.$queryRaw<{ id: string }[]>`
      SELECT s."id"::text AS "id" FROM "Settlement" s LEFT JOIN "ReleaseMilestone" m ON m."id" = s."milestoneId"
       WHERE s."transactionId" = ANY(${transactionIds}::uuid[]) AND s."status" = 'PENDING'
       ORDER BY s."createdAt", m."position" NULLS LAST, s."id"`;
  const reads: GroupReads = {
    pending: new Map(),
    transactions: new Map(),
    underReview: new Set(),
    rules: new Map(),
    beneficiaries: new Map(),
    accounts: new Map(),
    offsets: new Map(),
    policies: new Map(),
  };
  if (!order.length) return reads;
  // Raw reads (issue 22): the models' columns and types, on a pool transaction as on Prisma's.
  const rows = new Map(
    (await tx.$queryRaw<Settlement[]>`SELECT * FROM "Settlement" WHERE "id" = ANY(${order.map((o) => o.id)}::uuid[])`).map((s) => [s.id, s]),
  );
  for (const { id } of order) {
    const s = rows.get(id)!;
    const list = reads.pending.get(s.transactionId);
    if (list) list.push(s);
    else reads.pending.set(s.transactionId, [s]);
  }
  const active = [...reads.pending.keys()];
  for (const t of await tx.$queryRaw<Transaction[]>`SELECT * FROM "Transaction" WHERE "id" = ANY(${active}::uuid[])`) reads.transactions.set(t.id, t);
  const txs = [...reads.transactions.values()];
  for (const d of await tx.$queryRaw<{ transactionId: string }[]>`
      SELECT DISTINCT "transactionId"::text AS "transactionId" FROM "Deposit"
       WHERE "transactionId" = ANY(${active}::uuid[]) AND "status" IN ('UNDER_REVIEW', 'REORG_FROZEN')`)
    reads.underReview.add(d.transactionId);
  const splitRules = await tx.$queryRaw<SplitRule[]>`
    SELECT * FROM "SplitRule" WHERE "transactionId" = ANY(${active}::uuid[]) ORDER BY "transactionId", "position"`;
  const holdConditions = new Map<string, ReleaseCondition[]>();
  if (splitRules.length)
    for (const c of await tx.$queryRaw<ReleaseCondition[]>`
        SELECT * FROM "ReleaseCondition" WHERE "splitRuleId" = ANY(${splitRules.map((r) => r.id)}::uuid[]) ORDER BY "id"`) {
      const list = holdConditions.get(c.splitRuleId!);
      if (list) list.push(c);
      else holdConditions.set(c.splitRuleId!, [c]);
    }
  for (const r of splitRules) {
    const rule: GroupRule = { ...splitRuleInput(r), holdConditions: holdConditions.get(r.id) ?? [] };
    const list = reads.rules.get(r.transactionId);
    if (list) list.push(rule);
    else reads.rules.set(r.transactionId, [rule]);
  }
  const withoutRules = active.filter((id) => !reads.rules.has(id));
  if (withoutRules.length)
    for (const b of await tx.$queryRaw<{ id: string; accountId: string; transactionId: string }[]>`
        SELECT "id"::text AS "id", "accountId"::text AS "accountId", "transactionId"::text AS "transactionId" FROM "TransactionParticipant"
         WHERE "transactionId" = ANY(${withoutRules}::uuid[]) AND "role" = 'BENEFICIARY' ORDER BY "id"`)
      if (!reads.beneficiaries.has(b.transactionId)) reads.beneficiaries.set(b.transactionId, { id: b.id, accountId: b.accountId });
  const sandboxOrgs = [...new Set(txs.filter((t) => t.environmentType === 'SANDBOX').map((t) => t.organizationId))];
  if (sandboxOrgs.length)
    for (const c of await tx.$queryRaw<{ organizationId: string; offsetMs: bigint | number | string }[]>`
        SELECT "organizationId"::text AS "organizationId", "offsetMs" FROM "SandboxClock" WHERE "organizationId" = ANY(${sandboxOrgs}::uuid[])`)
      reads.offsets.set(c.organizationId, Number(c.offsetMs));
  for (const t of txs) {
    const key = policyKey(t);
    if (!reads.policies.has(key))
      reads.policies.set(
        key,
        await pricingPolicyCandidates(tx, { organizationId: t.organizationId, applicationId: t.applicationId, assetNetworkId: t.assetNetworkId }),
      );
  }
  // The accounts every portion of the group may go to, under their ledger locks (held to the commit).
  reads.accounts = await lockedAccountStates(
    tx,
    [...[...reads.rules.values()].flat().map((r) => r.accountId), ...[...reads.beneficiaries.values()].map((b) => b.accountId)],
    txs.map((t) => t.applicationId),
  );
  return reads;
}

const policyKey = (t: Pick<Transaction, 'organizationId' | 'applicationId' | 'assetNetworkId'>) => `${t.organizationId}:${t.applicationId}:${t.assetNetworkId}`;

/** The group's rows, ledger postings and states, set-based: one statement per table. */
async function writeGroup(tx: RawDb, deps: MoneyDeps, r: GroupReads, w: GroupWrites): Promise<void> {
  const n = (v: bigint) => amountToNumeric(v);
  if (w.failed.length) {
    const f = w.failed;
    await tx.$executeRaw`
      UPDATE "Settlement" s SET "status" = 'FAILED', "attempts" = v."attempts", "failureReason" = v."reason", "failedAt" = v."at", "updatedAt" = now()
        FROM unnest(${f.map((x) => x.settlementId)}::uuid[], ${f.map((x) => x.attempts)}::int[], ${f.map((x) => x.reason)}::text[],
                    ${f.map((x) => x.failedAt)}::timestamptz[]) AS v("id", "attempts", "reason", "at")
       WHERE s."id" = v."id"`;
  }
  if (w.allocations.length) {
    const a = w.allocations;
    await tx.$executeRaw`
      INSERT INTO "SettlementAllocation" ("id", "settlementId", "transactionId", "organizationId", "splitRuleId", "participantId", "accountId", "amount",
                                          "status", "retainReason", "releasedAt", "createdAt", "updatedAt")
      SELECT v.*, now() FROM unnest(${a.map((x) => x.id)}::uuid[], ${a.map((x) => x.settlementId)}::uuid[], ${a.map((x) => x.transactionId)}::uuid[],
                                    ${a.map((x) => x.organizationId)}::uuid[], ${a.map((x) => x.splitRuleId)}::uuid[], ${a.map((x) => x.participantId)}::uuid[],
                                    ${a.map((x) => x.accountId)}::uuid[], ${a.map((x) => x.amount)}::numeric[],
                                    ${a.map((x) => x.status)}::"SettlementAllocationStatus"[], ${a.map((x) => x.retainReason)}::text[],
                                    ${a.map((x) => x.releasedAt)}::timestamptz[], ${a.map((x) => x.createdAt)}::timestamptz[]) AS v`;
  }
  if (w.ruleAllocated.size) {
    const rules = [...w.ruleAllocated];
    await tx.$executeRaw`
      UPDATE "SplitRule" r SET "allocatedAmount" = v."allocated"
        FROM unnest(${rules.map(([id]) => id)}::uuid[], ${rules.map(([, a]) => n(a))}::numeric[]) AS v("id", "allocated")
       WHERE r."id" = v."id"`;
  }
  if (w.changed.size) {
    const ts = [...w.changed].map((id) => r.transactions.get(id)!);
    await tx.$executeRaw`
      UPDATE "Transaction" t SET "settledAmount" = v."settled", "settledAt" = v."at", "status" = v."status"::"TransactionStatus", "updatedAt" = now()
        FROM unnest(${ts.map((t) => t.id)}::uuid[], ${ts.map((t) => n(numericToAmount(t.settledAmount)))}::numeric[],
                    ${ts.map((t) => t.settledAt)}::timestamptz[], ${ts.map((t) => t.status)}::text[]) AS v("id", "settled", "at", "status")
       WHERE t."id" = v."id"`;
  }
  if (w.emptied.size)
    await tx.$executeRaw`
      UPDATE "ReleaseMilestone" SET "status" = 'CANCELLED' WHERE "transactionId" = ANY(${[...w.emptied]}::uuid[]) AND "status" = 'PENDING'`;
  await emitEvents(tx, deps, w.events);
  await auditAll(tx, deps, systemActor(), w.audits);
  if (!w.executed.length) return;
  // The ledger last, with the EXECUTED states in the same statement (postInStatement):
  // every settlement of the asset-network credits the same PLATFORM_REVENUE row (and often the same
  // accounts), whose row locks are held from here to the commit, so nothing else is sent between
  // the posting and the commit (the state needs the posting's ledger transaction id: the schema's
  // check requires it of an EXECUTED settlement).
  const x = w.executed;
  const posted = await postInStatement(
    tx,
    x.map((e) => ({ post: e.posting })),
    Prisma.sql`"executed" AS (
    UPDATE "Settlement" s SET "status" = 'EXECUTED', "attempts" = v."attempts", "grossAmount" = v."gross", "feeAmount" = v."fee",
           "distributableAmount" = v."distributable", "pricingPolicyId" = v."policy", "feePercentage" = v."pct", "isTotal" = v."isTotal",
           "executedAt" = v."at", "ledgerTransactionId" = lr."id", "failureReason" = NULL, "failedAt" = NULL, "updatedAt" = now()
      FROM unnest(${x.map((e) => e.settlementId)}::uuid[], ${x.map((e) => e.state.attempts)}::int[], ${x.map((e) => n(e.state.gross))}::numeric[],
                  ${x.map((e) => n(e.state.fee))}::numeric[], ${x.map((e) => n(e.state.distributable))}::numeric[],
                  ${x.map((e) => e.state.pricingPolicyId)}::uuid[], ${x.map((e) => e.state.feePercentage)}::numeric[],
                  ${x.map((e) => e.state.isTotal)}::boolean[], ${x.map((e) => e.state.executedAt)}::timestamptz[])
           WITH ORDINALITY AS v("id", "attempts", "gross", "fee", "distributable", "policy", "pct", "isTotal", "at", "ord")
      JOIN ledger_results lr ON lr."ord" = v."ord" AND lr."s" <> 'error'
     WHERE s."id" = v."id")`,
  ).catch((e: unknown) => {
    // A total beyond NUMERIC(78,0) fails the whole statement: alone, it is this settlement's refusal.
    if (x.length === 1 && e instanceof Error && (e as LedgerError).reason === 'AMOUNT_OUT_OF_RANGE')
      throw new GroupRefused('a settlement posting was refused', { cause: e as LedgerError, settlementId: x[0]!.settlementId });
    throw e;
  });
  // A refused posting: the group rolls back whole (the states written beside the others with it).
  const i = posted.findIndex((r) => r instanceof Error);
  if (i >= 0) throw new GroupRefused('a settlement posting was refused', { cause: posted[i] as LedgerError, settlementId: x[i]!.settlementId });
}

/**
 * One job's settlement of the transaction `transactionId` (its row locked): the oldest one still
 * pending — not only when the job's own settlement is PENDING: its job may come after another job
 * executed it in its place, and then it executes the next one waiting. Decided in memory on the
 * group's reads as the settlements before it left them; its rows go to `w`. No statement, except a
 * hold re-check job when a portion waits for a time hold.
 */
async function executeOne(
  tx: RawDb,
  deps: MoneyDeps,
  r: GroupReads,
  w: GroupWrites,
  transactionId: string,
  refused?: ReadonlyMap<string, LedgerError>,
): Promise<ExecutionOutcome> {
  const s = r.pending.get(transactionId)?.shift();
  if (!s) return { status: 'SKIPPED' as const };
  const t = r.transactions.get(transactionId)!;
  const now = t.environmentType === 'SANDBOX' ? new Date(deps.clock.now().getTime() + (r.offsets.get(t.organizationId) ?? 0)) : deps.clock.now();
  const fail = (code: FailureCode, detail?: string) => failSettlement(w, s, code, detail ?? FAILURE_MESSAGES[code], now);
  // releaseBlocker's rules, on the group's reads.
  const blocker: ReleaseBlocker | null =
    t.status !== 'RESERVED' ? 'NOT_RESERVED' : t.frozen ? 'TRANSACTION_FROZEN' : r.underReview.has(t.id) ? 'DEPOSIT_UNDER_REVIEW' : null;
  if (blocker) return fail(blocker);
  // Its posting was refused for good when it ran alone a moment ago (executeSettlementGroup): FAILED, nothing moves.
  if (refused?.has(s.id)) return fail('AMOUNT_OUT_OF_RANGE');
  const escrow = escrowOf(t);
  const gross = s.requestedAmount === null ? escrow : numericToAmount(s.requestedAmount);
  if (gross === 0n) return fail('NOTHING_TO_SETTLE');
  if (gross > escrow) return fail('INSUFFICIENT_ESCROW', `The amount asked (${gross}) exceeds what the escrow holds (${escrow}).`);

  const policy = pricingPolicyAt(r.policies.get(policyKey(t)) ?? [], now);
  const { fee, percentage } = computeFee(gross, policy);
  if (fee > gross) return fail('FEE_EXCEEDS_GROSS', `The platform fee (${fee}) of pricing policy ${policy!.id} exceeds the amount settled (${gross}).`);
  const distributable = gross - fee;

  const rules = r.rules.get(t.id) ?? [];
  const beneficiary = rules.length ? null : (r.beneficiaries.get(t.id) ?? null);
  let split;
  try {
    split = allocate(distributable, rules, beneficiary && { participantId: beneficiary.id, accountId: beneficiary.accountId });
  } catch (e) {
    if (e instanceof SplitRulesInvalid) return fail('SPLIT_RULES_INVALID', `${FAILURE_MESSAGES.SPLIT_RULES_INVALID} ${e.message}.`);
    throw e;
  }
  const holdOf = (ruleId: string | null): HoldCondition[] => (ruleId ? (rules.find((x) => x.id === ruleId)?.holdConditions ?? []) : []);
  const reasons = retainReasonsOf(
    r.accounts,
    t,
    split.portions.map((p) => ({ accountId: p.accountId, holdConditions: holdOf(p.splitRuleId) })),
    now,
  );
  const ids = sequentialIds(split.portions.length, deps.clock.now());
  const allocations = split.portions.map((p, i) => ({ id: ids[i]!, ...p, reason: reasons[i] as RetainReason | null }));
  for (const a of allocations)
    w.allocations.push({
      id: a.id,
      settlementId: s.id,
      transactionId: t.id,
      organizationId: t.organizationId,
      splitRuleId: a.splitRuleId,
      participantId: a.participantId,
      accountId: a.accountId,
      amount: amountToNumeric(a.amount),
      status: a.reason ? 'RETAINED' : 'RELEASED',
      retainReason: a.reason,
      releasedAt: a.reason ? null : now,
      createdAt: now,
    });
  // The group's later settlements of this transaction see what this one allocated and settled.
  if (split.fixedAllocated.size)
    r.rules.set(
      t.id,
      rules.map((rule) => {
        const allocated = split.fixedAllocated.get(rule.id);
        if (allocated === undefined) return rule;
        w.ruleAllocated.set(rule.id, allocated);
        return { ...rule, allocatedAmount: allocated };
      }),
    );
  const { isTotal, after, data } = escrowOutcome(t, { settled: gross }, now);
  r.transactions.set(t.id, after);
  w.changed.add(t.id);
  if (data.status) w.emptied.add(t.id);
  const org = t.organizationId;
  if (policy)
    ev(w, org, 'settlement.fee_applied', {
      SettlementId: s.id,
      PricingPolicyId: policy.id,
      FeeAmount: fee,
      FeePercentageApplied: percentageToString(percentage),
    });
  for (const a of allocations) {
    if (a.reason)
      ev(w, org, 'settlement.split_portion_retained', {
        SettlementId: s.id,
        AllocationId: a.id,
        ParticipantId: a.participantId,
        AccountId: a.accountId,
        Amount: a.amount,
        Reason: a.reason,
      });
    else ev(w, org, 'settlement.split_portion_released', { SettlementId: s.id, AllocationId: a.id, AccountId: a.accountId, Amount: a.amount });
  }
  ev(w, org, 'settlement.executed', {
    SettlementId: s.id,
    TransactionId: t.id,
    AssetNetworkId: t.assetNetworkId,
    GrossAmount: gross,
    DistributableAmount: distributable,
    PlatformFeeAmount: fee,
    ExecutedAt: now,
  });
  ev(w, org, 'transaction.settled', { TransactionId: t.id, SettlementId: s.id, IsTotal: isTotal });

  w.audits.push(
    {
      organizationId: org,
      entityType: 'Settlement',
      entityId: s.id,
      action: 'settlement.executed',
      before: { status: 'PENDING' },
      after: {
        status: 'EXECUTED',
        grossAmount: amountToNumeric(gross),
        feeAmount: amountToNumeric(fee),
        distributableAmount: amountToNumeric(distributable),
        pricingPolicyId: policy?.id ?? null,
        feePercentage: policy ? percentageToString(percentage) : null,
        isTotal,
        ledgerKey: `settlement:${s.id}`,
        allocations: allocations.map((a) => ({
          id: a.id,
          accountId: a.accountId,
          amount: amountToNumeric(a.amount),
          status: a.reason ? 'RETAINED' : 'RELEASED',
          retainReason: a.reason,
        })),
      },
    },
    {
      organizationId: org,
      entityType: 'Transaction',
      entityId: t.id,
      action: 'transaction.settled',
      before: { status: t.status, settledAmount: amountToNumeric(numericToAmount(t.settledAmount)) },
      after: { status: after.status, settledAmount: amountToNumeric(numericToAmount(after.settledAmount)), settlementId: s.id, isTotal },
    },
  );
  const held = allocations.filter((a) => a.reason === 'HOLD_CONDITION_NOT_MET').flatMap((a) => holdOf(a.splitRuleId));
  if (held.length) await scheduleHoldRecheck(tx, deps, t, held, now);

  const lines: PostingLine[] = [{ account: ledgerAccounts.escrow(t), direction: 'DEBIT', amount: gross }];
  if (fee > 0n)
    lines.push({
      account: { kind: 'PLATFORM_REVENUE', ownerId: null, organizationId: null, assetNetworkId: t.assetNetworkId },
      direction: 'CREDIT',
      amount: fee,
    });
  for (const a of allocations)
    lines.push({
      account: a.reason
        ? ledgerRetained({ id: a.id, organizationId: t.organizationId }, t.assetNetworkId)
        : ledgerCustomer(a.accountId, t.organizationId, t.assetNetworkId),
      direction: 'CREDIT',
      amount: a.amount,
    });
  w.executed.push({
    settlementId: s.id,
    posting: {
      idempotencyKey: `settlement:${s.id}`,
      nature: 'settlement.executed',
      organizationId: t.organizationId,
      referenceType: 'Settlement',
      referenceId: s.id,
      metadata: { transactionId: t.id, feeAmount: amountToString(fee), pricingPolicyId: policy?.id ?? null },
      lines,
      postedAt: deps.clock.now(),
    },
    state: {
      attempts: s.attempts + 1,
      gross,
      fee,
      distributable,
      pricingPolicyId: policy?.id ?? null,
      feePercentage: policy ? percentageToNumeric(percentage) : null,
      isTotal,
      executedAt: now,
    },
  });
  return { status: 'EXECUTED' as const, isTotal };
}

/** Queues a catalog event of the group (written by writeGroup, in order). */
function ev<T extends EventType>(w: GroupWrites, organizationId: string, type: T, fields: EventFields[T]): void {
  w.events.push({ organizationId, event: webhookEvent(type, fields) });
}

/**
 * UUIDv7s that sort in the order asked for (allocations are listed by id = split rule position):
 * one random UUIDv7, its 12-bit rand_a field replaced by 0, 1, 2, ... (at most 4,096).
 */
function sequentialIds(n: number, now: Date): string[] {
  const base = uuidv7(now.getTime());
  return Array.from({ length: n }, (_x, i) => `${base.slice(0, 15)}${i.toString(16).padStart(3, '0')}${base.slice(18)}`);
}

function splitRuleInput(r: {
  id: string;
  position: number;
  participantId: string;
  accountId: string;
  percentage: { toFixed(dp: number): string } | null;
  fixedAmount: { toFixed(dp: number): string } | null;
  allocatedAmount: { toFixed(dp: number): string };
}): SplitRuleInput {
  return {
    id: r.id,
    position: r.position,
    participantId: r.participantId,
    accountId: r.accountId,
    percentage: r.percentage === null ? null : numericToPercentage(r.percentage),
    fixedAmount: r.fixedAmount === null ? null : numericToAmount(r.fixedAmount),
    allocatedAmount: numericToAmount(r.allocatedAmount),
  };
}

function failSettlement(w: GroupWrites, s: Settlement, code: FailureCode, detail: string, now: Date): ExecutionOutcome {
  const reason = `${code}: ${detail}`;
  w.failed.push({ settlementId: s.id, attempts: s.attempts + 1, reason, failedAt: now });
  ev(w, s.organizationId, 'settlement.failed', { SettlementId: s.id, TransactionId: s.transactionId, Reason: reason, FailedAt: now });
  w.audits.push({
    organizationId: s.organizationId,
    entityType: 'Settlement',
    entityId: s.id,
    action: 'settlement.failed',
    before: { status: 'PENDING', attempts: s.attempts },
    after: { status: 'FAILED', attempts: s.attempts + 1, failureReason: reason },
  });
  return { status: 'FAILED', reason: code };
}

// ------------------------------------------------------------------------------------------------
// AdminRetrySettlement

/**
 * An operator sends a FAILED settlement back to PENDING and queues its execution again: the same
 * settlement, so the same ledger key (settlement:<id>): a retry can never pay twice. 409 unless
 * FAILED; 404 for an unknown id. failureReason and failedAt keep the last failure until it executes.
 */
export async function retrySettlement(ctx: Context, idArg: unknown): Promise<SettlementRow> {
  const id = assertId(idArg, 'Settlement');
  if (ctx.principal?.type !== 'operator') throw notFound('Settlement');
  await ctx.deps.db.$transaction(async (tx) => {
    const head = await tx.settlement.findUnique({ where: { id }, select: { transactionId: true } });
    if (!head) throw notFound('Settlement');
    await lockTransactionRow(tx, head.transactionId);
    const s = await tx.settlement.findUniqueOrThrow({ where: { id } });
    if (s.status !== 'FAILED') throw new DomainError('INVALID_STATE', `Only a FAILED settlement can be retried; this one is ${s.status}.`);
    await tx.settlement.update({ where: { id }, data: { status: 'PENDING' } });
    await auditAs(tx, ctx.deps, requestActor(ctx), {
      organizationId: s.organizationId,
      entityType: 'Settlement',
      entityId: id,
      action: 'settlement.retry_requested',
      before: { status: 'FAILED', failureReason: s.failureReason, attempts: s.attempts },
      after: { status: 'PENDING' },
    });
    await sendSettlementExecution(tx, ctx.deps.boss, id);
  }, TX_OPTIONS);
  return loadSettlement(ctx, id);
}

setSettlementRequester(requestSettlementInTx);
