import { createHash } from 'node:crypto';
import { fromPrisma } from 'pg-boss';
import type { Db, RawDb } from '../db/prisma';
import type { Account, ReleaseCondition, Transaction } from '../generated/prisma/client';
import { LedgerError, lockAccountsForMove, postLedgerTransaction } from '../ledger/ledger';
import { amountToNumeric, numericToAmount } from '../money';
import { auditAll } from '../audit/audit';
import { emit } from '../webhooks/outbox';
import { lockTransactionRow, systemActor, TX_OPTIONS, type MoneyDeps } from '../kernel/service';
import { nowFor } from '../chains/sandbox/clock';
import type { AuditInput } from '../audit/audit';
import { conditionsMet, nextDueAt } from '../release/conditions';
import { RETAINED_RELEASE_QUEUE, type RetainedReleaseJob } from '../kernel/queues';

/**
 * Retained split portions (docs/settlements.md, "Retained portions"). A settlement credits a
 * portion to its account's CUSTOMER balance, or, when the account may not receive it now, to a
 * RETAINED ledger account of its own (ownerId = the allocation id) with the reason:
 *
 * | reason                 | cause                                                                       | clears when                                   |
 * | ---------------------- | --------------------------------------------------------------------------- | --------------------------------------------- |
 * | ACCOUNT_CLOSED         | the account is CLOSED                                                       | never (closing is terminal)                   |
 * | ACCOUNT_FROZEN         | the account is FROZEN                                                       | the account is unfrozen                       |
 * | ACCOUNT_NOT_AUTHORIZED | the account is not authorized for the transaction's application             | AuthorizeAccountForApplication                |
 * | HOLD_CONDITION_NOT_MET | a hold condition of the split rule is not met (ALL of them must be)         | the approval is given / the time passes       |
 *
 * The first cause in this order is the reason. releaseRetained re-checks the causes and releases
 * what cleared: one ledger transaction per allocation (key settlement-allocation:<id>:released,
 * DEBIT RETAINED, CREDIT CUSTOMER, the allocation's amount minus what refunds reversed from it),
 * status RELEASED, settlement.split_portion_released, audit, in one database transaction with the
 * Transaction row locked. It is run by the settlement.release-retained job: after an unfreeze or an
 * authorization of the account, after an approval of a hold condition, at the due time of a time
 * hold, after a sandbox clock advance, and every minute as a sweep.
 */

export type RetainReason = 'ACCOUNT_CLOSED' | 'ACCOUNT_FROZEN' | 'ACCOUNT_NOT_AUTHORIZED' | 'HOLD_CONDITION_NOT_MET';
export const RETAIN_REASONS: readonly RetainReason[] = ['ACCOUNT_CLOSED', 'ACCOUNT_FROZEN', 'ACCOUNT_NOT_AUTHORIZED', 'HOLD_CONDITION_NOT_MET'];

export type HoldCondition = Pick<ReleaseCondition, 'kind' | 'approvedAt' | 'releaseAfter' | 'durationSeconds'>;
type TxTimes = Pick<Transaction, 'applicationId' | 'reservedAt' | 'releaseRuleSetAt'>;

export const ledgerRetained = (a: { id: string; organizationId: string }, assetNetworkId: string) =>
  ({ kind: 'RETAINED', ownerId: a.id, organizationId: a.organizationId, assetNetworkId }) as const;
export const ledgerCustomer = (accountId: string, organizationId: string, assetNetworkId: string) =>
  ({ kind: 'CUSTOMER', ownerId: accountId, organizationId, assetNetworkId }) as const;

/**
 * Why each portion must be retained now (null: it may be released), for the transaction's
 * application, at the environment's `now`, under the accounts' ledger locks (held to the commit).
 * One query for the accounts and their authorizations.
 */
export async function retainReasons(
  tx: Db,
  t: TxTimes,
  portions: readonly { accountId: string; holdConditions: readonly HoldCondition[] }[],
  now: Date,
): Promise<(RetainReason | null)[]> {
  if (!portions.length) return [];
  const states = await lockedAccountStates(
    tx,
    portions.map((p) => p.accountId),
    [t.applicationId],
  );
  return retainReasonsOf(states, t, portions, now);
}

/** An account as retainReasonsOf sees it: its status and the applications (of those asked) it is authorized for. */
export interface AccountState {
  status: string;
  applications: ReadonlySet<string>;
}

/**
 * The accounts' states, read under their ledger locks (held to the commit), in two statements for
 * any number of accounts: the ledger locks first, so a freeze or close in flight has committed
 * before the status is read, and one that comes later waits for this commit (the credit to a
 * frozen account is accepted by the ledger, so only this read keeps the portion retained).
 * `applicationIds`: the applications whose authorizations matter (a settlement group spans several).
 */
export async function lockedAccountStates(tx: RawDb, accountIds: readonly string[], applicationIds: readonly string[]): Promise<Map<string, AccountState>> {
  const ids = [...new Set(accountIds)];
  if (!ids.length) return new Map();
  await lockAccountsForMove(tx, ids);
  // Raw (issue 22): the settlement groups read it on a pool transaction.
  const accounts = await tx.$queryRaw<{ id: string; status: Account['status']; applications: string[] }[]>`
    SELECT a."id"::text AS "id", a."status"::text AS "status",
           ARRAY(SELECT z."applicationId"::text FROM "AccountApplicationAuthorization" z
                  WHERE z."accountId" = a."id" AND z."applicationId" = ANY(${[...new Set(applicationIds)]}::uuid[])) AS "applications"
      FROM "Account" a WHERE a."id" = ANY(${ids}::uuid[])`;
  return new Map(accounts.map((a) => [a.id, { status: a.status, applications: new Set(a.applications) }]));
}

/** retainReasons on states already read (lockedAccountStates): no statement. */
export function retainReasonsOf(
  states: ReadonlyMap<string, AccountState>,
  t: TxTimes,
  portions: readonly { accountId: string; holdConditions: readonly HoldCondition[] }[],
  now: Date,
): (RetainReason | null)[] {
  return portions.map((p) => {
    const a = states.get(p.accountId);
    if (!a || a.status === 'CLOSED') return 'ACCOUNT_CLOSED';
    if (a.status === 'FROZEN') return 'ACCOUNT_FROZEN';
    if (!a.applications.has(t.applicationId)) return 'ACCOUNT_NOT_AUTHORIZED';
    if (!conditionsMet('ALL', p.holdConditions, t, now)) return 'HOLD_CONDITION_NOT_MET';
    return null;
  });
}

/**
 * Queues a re-check of the transaction's retained portions when the earliest time hold among
 * `conditions` falls due. Due times are on the environment's clock (`envNow`); the job runs by the
 * real clock, so the delay is carried over (a sandbox clock advanced later is caught by the sweep
 * the advance queues).
 */
export async function scheduleHoldRecheck(
  tx: RawDb,
  deps: MoneyDeps,
  t: Pick<Transaction, 'id' | 'reservedAt' | 'releaseRuleSetAt'>,
  conditions: readonly HoldCondition[],
  envNow: Date,
): Promise<void> {
  if (!deps.boss) return;
  const due = nextDueAt(conditions, t, envNow);
  if (!due) return;
  const startAfter = new Date(deps.clock.now().getTime() + (due.getTime() - envNow.getTime()));
  // One job per (transaction, due time): a re-check that runs early and finds the hold still
  // unmet asks for the same job again, which pg-boss ignores (the sweep covers what is left).
  const id = jobId(`retained-recheck:${t.id}:${due.toISOString()}`);
  await deps.boss.send(RETAINED_RELEASE_QUEUE, { transactionId: t.id } satisfies RetainedReleaseJob, { db: fromPrisma(tx as never), startAfter, id });
}

/** A UUID (version 8, RFC 9562) derived from `text`: a deterministic job id. */
function jobId(text: string): string {
  const h = createHash('sha256').update(text).digest();
  h[6] = 0x80 | (h[6]! & 0x0f);
  h[8] = 0x80 | (h[8]! & 0x3f);
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

/** What a release run did. */
export interface ReleaseOutcome {
  checked: number;
  released: number;
  /**
   * Transactions whose release the ledger refused with AMOUNT_OUT_OF_RANGE (an account's credits
   * would pass NUMERIC(78,0)): their portions stay RETAINED, nothing of them moved, and the run goes
   * on with the others (a refusal that every later run meets again must not stop them).
   */
  outOfRange: string[];
}

/**
 * Re-checks the RETAINED allocations in scope (an account's, a transaction's, an organization's;
 * none: all) and releases those whose cause cleared. One database transaction per settlement
 * transaction, its row locked: nothing moves while the transaction is frozen (the allocations stay
 * retained and are checked again later). Idempotent: a released allocation is skipped; the ledger
 * key makes a repeated posting a replay.
 */
export async function releaseRetained(deps: MoneyDeps, scope: RetainedReleaseJob = {}): Promise<ReleaseOutcome> {
  const where = {
    status: 'RETAINED' as const,
    ...(scope.accountId ? { accountId: scope.accountId } : {}),
    ...(scope.transactionId ? { transactionId: scope.transactionId } : {}),
    ...(scope.organizationId ? { organizationId: scope.organizationId } : {}),
  };
  const out: ReleaseOutcome = { checked: 0, released: 0, outOfRange: [] };
  let after: string | undefined;
  for (;;) {
    // Transactions with retained portions, 200 at a time, in id order.
    const batch = await deps.db.settlementAllocation.findMany({
      where: { ...where, ...(after ? { transactionId: { gt: after } } : {}) },
      distinct: ['transactionId'],
      orderBy: { transactionId: 'asc' },
      select: { transactionId: true },
      take: 200,
    });
    if (!batch.length) return out;
    for (const { transactionId } of batch) {
      let r: { checked: number; released: number };
      try {
        r = await deps.db.$transaction((tx) => releaseForTransaction(tx, deps, transactionId, scope), TX_OPTIONS);
      } catch (e) {
        if (!(e instanceof LedgerError && e.reason === 'AMOUNT_OUT_OF_RANGE')) throw e;
        out.outOfRange.push(transactionId);
        continue;
      }
      out.checked += r.checked;
      out.released += r.released;
    }
    after = batch[batch.length - 1]!.transactionId;
    if (batch.length < 200) return out;
  }
}

async function releaseForTransaction(
  tx: Db,
  deps: MoneyDeps,
  transactionId: string,
  scope: RetainedReleaseJob,
): Promise<{ checked: number; released: number }> {
  await lockTransactionRow(tx, transactionId);
  const t = await tx.transaction.findUniqueOrThrow({ where: { id: transactionId } });
  if (t.frozen) return { checked: 0, released: 0 };
  const allocations = await tx.settlementAllocation.findMany({
    where: { transactionId, status: 'RETAINED', ...(scope.accountId ? { accountId: scope.accountId } : {}) },
    orderBy: { id: 'asc' },
  });
  if (!allocations.length) return { checked: 0, released: 0 };
  const ruleIds = allocations.map((a) => a.splitRuleId).filter((id): id is string => id !== null);
  const conditions = ruleIds.length ? await tx.releaseCondition.findMany({ where: { splitRuleId: { in: ruleIds } } }) : [];
  const holdOf = (ruleId: string | null) => (ruleId ? conditions.filter((c) => c.splitRuleId === ruleId) : []);
  const now = await nowFor(tx, deps.clock, t.organizationId, t.environmentType);
  const reasons = await retainReasons(
    tx,
    t,
    allocations.map((a) => ({ accountId: a.accountId, holdConditions: holdOf(a.splitRuleId) })),
    now,
  );
  const audits: AuditInput[] = [];
  let released = 0;
  const stillHeld: typeof conditions = [];
  for (const [i, a] of allocations.entries()) {
    const reason = reasons[i]!;
    if (reason) {
      if (reason === 'HOLD_CONDITION_NOT_MET') stillHeld.push(...holdOf(a.splitRuleId));
      if (reason !== a.retainReason) {
        // The cause changed (e.g. unfrozen, but not authorized): the reason says the current one.
        await tx.settlementAllocation.update({ where: { id: a.id }, data: { retainReason: reason } });
        audits.push({
          organizationId: a.organizationId,
          entityType: 'SettlementAllocation',
          entityId: a.id,
          action: 'settlement.split_portion_retain_reason_changed',
          before: { retainReason: a.retainReason },
          after: { retainReason: reason },
        });
      }
      continue;
    }
    const amount = numericToAmount(a.amount) - numericToAmount(a.reversedAmount);
    let ledgerTransactionId: string | null = null;
    if (amount > 0n) {
      const r = await postLedgerTransaction(tx, {
        idempotencyKey: `settlement-allocation:${a.id}:released`,
        nature: 'settlement.split_portion_released',
        organizationId: a.organizationId,
        referenceType: 'SettlementAllocation',
        referenceId: a.id,
        metadata: { settlementId: a.settlementId, transactionId, accountId: a.accountId, retainReason: a.retainReason },
        lines: [
          { account: ledgerRetained(a, t.assetNetworkId), direction: 'DEBIT', amount },
          { account: ledgerCustomer(a.accountId, a.organizationId, t.assetNetworkId), direction: 'CREDIT', amount },
        ],
        postedAt: deps.clock.now(),
      });
      ledgerTransactionId = r.ledgerTransactionId;
    }
    // retainReason is cleared: a CHECK ties it to the RETAINED status.
    await tx.settlementAllocation.update({ where: { id: a.id }, data: { status: 'RELEASED', retainReason: null, releasedAt: now } });
    // A portion that refunds took back entirely has nothing left to release: no event (nothing reaches the account).
    if (amount > 0n)
      await emit(tx, deps, a.organizationId, 'settlement.split_portion_released', {
        SettlementId: a.settlementId,
        AllocationId: a.id,
        AccountId: a.accountId,
        Amount: amount,
      });
    audits.push({
      organizationId: a.organizationId,
      entityType: 'SettlementAllocation',
      entityId: a.id,
      action: 'settlement.split_portion_released',
      before: { status: 'RETAINED', retainReason: a.retainReason },
      after: { status: 'RELEASED', amount: amountToNumeric(amount), ledgerTransactionId },
    });
    released++;
  }
  await auditAll(tx, deps, systemActor(), audits);
  if (stillHeld.length) await scheduleHoldRecheck(tx, deps, t, stillHeld, now);
  return { checked: allocations.length, released };
}
