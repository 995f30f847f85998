import { numericToAmount, amountToNumeric, MAX_STORED_SUM } from '../money';
import { DomainError } from '../errors';
import type { Db, RawDb } from '../db/prisma';
import type { Deposit, PaymentIntent, Transaction } from '../generated/prisma/client';
import { ledgerAccounts, postLedgerTransaction, type PostInput } from '../ledger/ledger';
import type { AuditInput } from '../audit/audit';
import { auditAll, auditAs, type Actor } from '../audit/audit';
import { emit } from '../webhooks/outbox';
import { type MoneyDeps } from '../kernel/service';
import { CREDITED_DEPOSIT, isCovered, LIVE_DEPOSIT, UNDECIDED_DEPOSIT } from './rules';
import { sendReleaseEvaluations } from '../kernel/queues';

/**
 * The funding side of money in: where a confirmed deposit's value goes in the ledger, and the
 * state machine of a payment intent and its transaction, derived from the intent's deposits.
 *
 * Every function runs inside the caller's database transaction, after the caller locked the
 * Transaction row (lockTransactionRow): the state change, its ledger postings, its events and its
 * audit entries commit together or not at all.
 *
 * Ledger shape (base units of the deposit's asset-network):
 * - deposit confirmed:        DEBIT CHAIN_CLEARING / CREDIT ESCROW(transaction)   (late: CREDIT SUSPENSE(organization))
 * - deposit reversed (GONE):  DEBIT <where it was credited> / CREDIT CHAIN_CLEARING
 * - intent expired partially: DEBIT ESCROW(transaction) / CREDIT SUSPENSE(organization)
 * Each posting's idempotency key is derived from the record it belongs to, so a retried job or a
 * re-run sync never posts twice.
 */

export type LedgerKind = 'ESCROW' | 'SUSPENSE';

function creditAccount(kind: LedgerKind, d: Pick<Deposit, 'organizationId' | 'assetNetworkId' | 'transactionId'>) {
  if (kind === 'ESCROW') {
    if (!d.transactionId) throw new Error('an escrow credit needs the deposit’s transaction');
    return ledgerAccounts.escrow({ id: d.transactionId, organizationId: d.organizationId, assetNetworkId: d.assetNetworkId });
  }
  return ledgerAccounts.suspense(d.organizationId, d.assetNetworkId);
}

/** A confirmed deposit's credit: DEBIT CHAIN_CLEARING, CREDIT ESCROW or SUSPENSE, keyed by the deposit (once per deposit, ever). */
export function depositCreditPosting(deps: MoneyDeps, d: Deposit, to: LedgerKind): PostInput {
  const amount = numericToAmount(d.amount);
  return {
    idempotencyKey: `deposit:${d.id}:confirmed`,
    nature: to === 'ESCROW' ? 'deposit.confirmed' : 'deposit.confirmed.suspense',
    organizationId: d.organizationId,
    referenceType: 'Deposit',
    referenceId: d.id,
    metadata: { txHash: d.txHash, networkId: d.networkId, paymentIntentId: d.paymentIntentId, transactionId: d.transactionId },
    lines: [
      { account: ledgerAccounts.clearing(d.assetNetworkId), direction: 'DEBIT', amount },
      { account: creditAccount(to, d), direction: 'CREDIT', amount },
    ],
    postedAt: deps.clock.now(),
  };
}

/** Posts a confirmed deposit's credit (depositCreditPosting). */
export async function postDepositCredit(tx: Db, deps: MoneyDeps, d: Deposit, to: LedgerKind): Promise<void> {
  await postLedgerTransaction(tx, depositCreditPosting(deps, d, to));
}

/** Reverses a credited deposit that the chain no longer has: DEBIT where it sits now, CREDIT CHAIN_CLEARING. */
export async function postDepositReversal(tx: Db, deps: MoneyDeps, d: Deposit): Promise<void> {
  if (!d.creditedTo || (d.creditedTo !== 'ESCROW' && d.creditedTo !== 'SUSPENSE')) throw new Error(`deposit ${d.id} was never credited`);
  const amount = numericToAmount(d.amount);
  await postLedgerTransaction(tx, {
    idempotencyKey: `deposit:${d.id}:reversed`,
    nature: 'deposit.reversed',
    organizationId: d.organizationId,
    referenceType: 'Deposit',
    referenceId: d.id,
    metadata: { txHash: d.txHash, networkId: d.networkId, from: d.creditedTo },
    lines: [
      { account: creditAccount(d.creditedTo, d), direction: 'DEBIT', amount },
      { account: ledgerAccounts.clearing(d.assetNetworkId), direction: 'CREDIT', amount },
    ],
    postedAt: deps.clock.now(),
  });
}

export type IntentWithTransaction = PaymentIntent & { transaction: Transaction };

async function loadIntent(tx: Db, intentId: string): Promise<IntentWithTransaction> {
  return tx.paymentIntent.findUniqueOrThrow({ where: { id: intentId }, include: { transaction: true } });
}

/** Sums of an intent's own (not late) deposits by stage. */
export interface DepositSums {
  detected: bigint;
  credited: bigint;
  live: number;
  undecided: number;
}

/** Adds one group (status, sum, count) of an intent's deposits to its sums. */
export function addToSums(sums: DepositSums, status: string, sum: bigint, count: number): void {
  if ((LIVE_DEPOSIT as readonly string[]).includes(status)) {
    sums.detected += sum;
    sums.live += count;
  }
  if ((CREDITED_DEPOSIT as readonly string[]).includes(status)) sums.credited += sum;
  if ((UNDECIDED_DEPOSIT as readonly string[]).includes(status)) sums.undecided += count;
}

export const noSums = (): DepositSums => ({ detected: 0n, credited: 0n, live: 0, undecided: 0 });

/** The sums of several intents' own (not late) deposits, in one statement. */
export async function depositSumsOf(tx: RawDb, intentIds: string[]): Promise<Map<string, DepositSums>> {
  const out = new Map(intentIds.map((id) => [id, noSums()]));
  if (!intentIds.length) return out;
  // Raw (issue 22): read by every sync chunk, also on a connection of poolTransaction (no Prisma model there).
  const groups = await tx.$queryRaw<{ id: string; status: string; sum: string; n: number }[]>`
    SELECT "paymentIntentId"::text AS "id", "status"::text AS "status", SUM("amount")::text AS "sum", COUNT(*)::int AS "n"
      FROM "Deposit" WHERE "paymentIntentId" = ANY(${intentIds}::uuid[]) AND NOT "late" GROUP BY 1, 2`;
  for (const g of groups) addToSums(out.get(g.id)!, g.status, BigInt(g.sum), g.n);
  return out;
}

async function depositSums(tx: Db, intentId: string): Promise<DepositSums> {
  return (await depositSumsOf(tx, [intentId])).get(intentId)!;
}

/** What evaluating an intent decides (decideIntent): the rows' changes, events, audit entries, and whether it expires now. */
export interface IntentDecision {
  /** Changed columns of the transaction (null: unchanged), and of the intent. */
  transactionData: Record<string, unknown> | null;
  intentData: Record<string, unknown> | null;
  /** The transaction and intent as they are once the changes are written. */
  transaction: Transaction;
  intent: PaymentIntent;
  events: { type: 'transaction.funded' | 'transaction.reserved'; fields: { TransactionId: string; Amount?: bigint } }[];
  /** A release evaluation job for the transaction (it became RESERVED). */
  release: boolean;
  audits: AuditInput[];
  /** Due and nothing undecided: expires now (expireIntent, after the writes). */
  expire: boolean;
}

/** Refuses sums beyond NUMERIC(78,0) before anything is written (409; in chain.sync the deposit fails alone and is retried, docs/decisions.md issue 26). */
export function assertStorableSums(intentId: string, sums: DepositSums): void {
  if (sums.detected > MAX_STORED_SUM || sums.credited > MAX_STORED_SUM)
    throw new DomainError(
      'INVALID_STATE',
      `AMOUNT_OUT_OF_RANGE: the deposits of payment intent ${intentId} would sum to more than ${MAX_STORED_SUM} base units.`,
    );
}

/**
 * The payment intent state machine, decided in memory from the intent, its transaction and the sums
 * of its deposits (docs/money-in.md); the intent must be open (not EXPIRED nor CANCELLED):
 * - credited (CONFIRMED + REORG_FROZEN) covers the amount → SUCCEEDED, and the transaction
 *   AWAITING_FUNDS → FUNDED → RESERVED (transaction.funded, transaction.reserved Amount);
 * - else a live deposit exists → PROCESSING; else → AWAITING_PAYMENT;
 * - not SUCCEEDED, ExpiresAt passed and no deposit undecided → EXPIRED (partial funds to SUSPENSE).
 * A SUCCEEDED intent whose credit was reversed goes back. Shared by evaluateIntent (one intent) and
 * the set-based confirmation of a sync chunk (src/deposits/sync.ts), so both apply the same rules.
 */
export function decideIntent(intent: IntentWithTransaction, sums: DepositSums, now: Date): IntentDecision {
  assertStorableSums(intent.id, sums);
  const t = intent.transaction;
  const amount = numericToAmount(intent.amount);
  const covered = isCovered(sums.credited, amount);
  const status: PaymentIntent['status'] = covered ? 'SUCCEEDED' : sums.live > 0 ? 'PROCESSING' : 'AWAITING_PAYMENT';
  const expire = status !== 'SUCCEEDED' && now.getTime() >= intent.expiresAt.getTime() && sums.undecided === 0;
  const audits: AuditInput[] = [];
  const events: IntentDecision['events'] = [];
  let release = false;
  const org = t.organizationId;

  // The transaction follows the credited sum.
  const previousFunded = numericToAmount(t.fundedAmount);
  let tStatus = t.status;
  const tData: Record<string, unknown> = {};
  if (sums.credited !== previousFunded) tData.fundedAmount = amountToNumeric(sums.credited);
  if (covered && t.status === 'AWAITING_FUNDS') {
    tStatus = 'RESERVED';
    Object.assign(tData, { status: 'RESERVED', fundedAt: now, reservedAt: now });
  } else if (!covered && (t.status === 'FUNDED' || t.status === 'RESERVED')) {
    tStatus = 'AWAITING_FUNDS';
    Object.assign(tData, { status: 'AWAITING_FUNDS', fundedAt: null, reservedAt: null });
  }
  const changed = Object.keys(tData).length > 0;
  if (changed) {
    if (tStatus !== t.status && tStatus === 'RESERVED') {
      // FUNDED and RESERVED in one step: the funds are held in its escrow from the moment they cover it.
      events.push(
        { type: 'transaction.funded', fields: { TransactionId: t.id } },
        { type: 'transaction.reserved', fields: { TransactionId: t.id, Amount: sums.credited } },
      );
      // Reserved: its release rule may release now (docs/release-rules.md).
      release = true;
      audits.push(
        {
          organizationId: org,
          entityType: 'Transaction',
          entityId: t.id,
          action: 'transaction.funded',
          before: { status: t.status },
          after: { status: 'FUNDED', fundedAmount: amountToNumeric(sums.credited) },
        },
        {
          organizationId: org,
          entityType: 'Transaction',
          entityId: t.id,
          action: 'transaction.reserved',
          before: { status: 'FUNDED' },
          after: { status: 'RESERVED', reservedAmount: amountToNumeric(sums.credited) },
        },
      );
    } else if (tStatus !== t.status) {
      audits.push({
        organizationId: org,
        entityType: 'Transaction',
        entityId: t.id,
        action: 'transaction.funding_reversed',
        before: { status: t.status, fundedAmount: amountToNumeric(previousFunded) },
        after: { status: tStatus, fundedAmount: amountToNumeric(sums.credited) },
      });
    } else if (tStatus === 'RESERVED' && sums.credited > previousFunded) {
      // More funds arrived for a reserved transaction (an overpayment, a second payment): all held.
      events.push({ type: 'transaction.reserved', fields: { TransactionId: t.id, Amount: sums.credited } });
      audits.push({
        organizationId: org,
        entityType: 'Transaction',
        entityId: t.id,
        action: 'transaction.reserved',
        before: { reservedAmount: amountToNumeric(previousFunded) },
        after: { reservedAmount: amountToNumeric(sums.credited) },
      });
    }
  }

  const overpaid = sums.credited > amount;
  const intentData: Record<string, unknown> = {};
  if (numericToAmount(intent.detectedAmount) !== sums.detected) intentData.detectedAmount = amountToNumeric(sums.detected);
  if (numericToAmount(intent.confirmedAmount) !== sums.credited) intentData.confirmedAmount = amountToNumeric(sums.credited);
  if (intent.overpaid !== overpaid) intentData.overpaid = overpaid;
  if (status !== intent.status) {
    intentData.status = status;
    intentData.succeededAt = status === 'SUCCEEDED' ? now : null;
    audits.push({
      organizationId: org,
      entityType: 'PaymentIntent',
      entityId: intent.id,
      action: `payment_intent.${status.toLowerCase()}`,
      before: { status: intent.status },
      after: { status, detectedAmount: amountToNumeric(sums.detected), confirmedAmount: amountToNumeric(sums.credited) },
    });
  }
  const hasIntentData = Object.keys(intentData).length > 0;
  return {
    transactionData: changed ? tData : null,
    intentData: hasIntentData ? intentData : null,
    transaction: changed ? ({ ...t, ...tData } as Transaction) : t,
    intent: hasIntentData ? ({ ...intent, ...intentData } as PaymentIntent) : intent,
    events,
    release,
    audits,
    expire,
  };
}

/**
 * The payment intent state machine for one intent (decideIntent), read and written here: its sums
 * read, the decision's writes made, its events emitted and audit entries written, then the expiry.
 * EXPIRED and CANCELLED are terminal. Derived, so evaluating twice changes nothing.
 */
export async function evaluateIntent(
  tx: Db,
  deps: MoneyDeps,
  actor: Actor,
  intentId: string,
  now: Date,
  loaded?: IntentWithTransaction,
): Promise<IntentWithTransaction> {
  const intent = loaded ?? (await loadIntent(tx, intentId));
  if (intent.status === 'EXPIRED' || intent.status === 'CANCELLED') return intent;
  const d = decideIntent(intent, await depositSums(tx, intentId), now);
  const org = intent.transaction.organizationId;
  let transaction = intent.transaction;
  if (d.transactionData) transaction = await tx.transaction.update({ where: { id: transaction.id }, data: d.transactionData });
  for (const e of d.events) await emit(tx, deps, org, e.type, e.fields as never);
  if (d.release) await sendReleaseEvaluations(tx, deps.boss, [transaction.id]);
  let updated: PaymentIntent = intent;
  if (d.intentData) updated = await tx.paymentIntent.update({ where: { id: intent.id }, data: d.intentData });
  await auditAll(tx, deps, actor, d.audits);
  if (d.expire) return expireIntent(tx, deps, actor, intent.id, now);
  return { ...updated, transaction };
}

/**
 * AWAITING_PAYMENT or PROCESSING → EXPIRED, with its transaction → EXPIRED. The intent's
 * confirmed deposits (an underpayment) move from the transaction's ESCROW to the organization's
 * SUSPENSE: an expired transaction holds nothing; the funds wait there for a decision.
 */
async function expireIntent(tx: Db, deps: MoneyDeps, actor: Actor, intentId: string, now: Date): Promise<IntentWithTransaction> {
  const intent = await loadIntent(tx, intentId);
  const t = intent.transaction;
  const held = numericToAmount(t.fundedAmount);
  if (held > 0n) {
    await postLedgerTransaction(tx, {
      idempotencyKey: `payment-intent:${intent.id}:expired`,
      nature: 'payment_intent.expired.escrow_to_suspense',
      organizationId: t.organizationId,
      referenceType: 'PaymentIntent',
      referenceId: intent.id,
      metadata: { transactionId: t.id },
      lines: [
        { account: ledgerAccounts.escrow(t), direction: 'DEBIT', amount: held },
        { account: ledgerAccounts.suspense(t.organizationId, t.assetNetworkId), direction: 'CREDIT', amount: held },
      ],
      postedAt: deps.clock.now(),
    });
    await tx.deposit.updateMany({ where: { paymentIntentId: intent.id, creditedTo: 'ESCROW' }, data: { creditedTo: 'SUSPENSE' } });
  }
  await tx.paymentIntent.update({ where: { id: intent.id }, data: { status: 'EXPIRED', expiredAt: now } });
  await tx.transaction.update({ where: { id: t.id }, data: { status: 'EXPIRED', fundedAmount: '0', fundedAt: null, reservedAt: null } });
  await emit(tx, deps, intent.organizationId, 'payment_intent.expired', { PaymentIntentId: intent.id });
  await auditAll(tx, deps, actor, [
    {
      organizationId: intent.organizationId,
      entityType: 'PaymentIntent',
      entityId: intent.id,
      action: 'payment_intent.expired',
      before: { status: intent.status },
      after: { status: 'EXPIRED', movedToSuspense: amountToNumeric(held) },
    },
    {
      organizationId: t.organizationId,
      entityType: 'Transaction',
      entityId: t.id,
      action: 'transaction.expired',
      before: { status: t.status, fundedAmount: amountToNumeric(held) },
      after: { status: 'EXPIRED', fundedAmount: '0' },
    },
  ]);
  return loadIntent(tx, intentId);
}

/**
 * Freezes a transaction because one of its escrow-credited deposits is in doubt (a reorg). The
 * flag is shared with member freezes: `frozen` = frozen by a member OR by a deposit.
 */
export async function freezeForDeposit(tx: Db, deps: MoneyDeps, actor: Actor, transactionId: string, depositId: string): Promise<void> {
  const t = await tx.transaction.findUniqueOrThrow({ where: { id: transactionId } });
  if (t.frozenByDepositId) return; // already held by another deposit in doubt
  const reason = `REORG: deposit ${depositId} was orphaned by a chain reorganization`;
  await tx.transaction.update({
    where: { id: t.id },
    data: { frozen: true, frozenByDepositId: depositId, ...(t.frozen ? {} : { frozenReason: reason }) },
  });
  if (!t.frozen)
    // Not a member's freeze: ActorMemberId is null (docs/money-in.md).
    await emit(tx, deps, t.organizationId, 'transaction.frozen', { TransactionId: t.id, Reason: reason, ActorMemberId: null as unknown as string });
  await auditAs(tx, deps, actor, {
    organizationId: t.organizationId,
    entityType: 'Transaction',
    entityId: t.id,
    action: 'transaction.frozen',
    before: { frozen: t.frozen },
    after: { frozen: true, frozenByDepositId: depositId, reason },
  });
}

/**
 * Releases a deposit's hold on its transaction once the deposit is resolved: another deposit
 * still in doubt takes over; with none left, and no member freeze, the transaction is unfrozen.
 */
export async function releaseDepositFreeze(tx: Db, deps: MoneyDeps, actor: Actor, transactionId: string, depositId: string): Promise<void> {
  const t = await tx.transaction.findUniqueOrThrow({ where: { id: transactionId } });
  if (t.frozenByDepositId !== depositId) return;
  const next = await tx.deposit.findFirst({
    where: { transactionId, status: 'REORG_FROZEN', creditedTo: 'ESCROW', id: { not: depositId } },
    orderBy: { id: 'asc' },
    select: { id: true },
  });
  const byMember = t.frozenByMemberId !== null;
  const frozen = byMember || next !== null;
  await tx.transaction.update({
    where: { id: t.id },
    data: {
      frozenByDepositId: next?.id ?? null,
      frozen,
      ...(frozen ? (byMember ? {} : { frozenReason: `REORG: deposit ${next!.id} was orphaned by a chain reorganization` }) : { frozenReason: null }),
    },
  });
  if (!frozen) await emit(tx, deps, t.organizationId, 'transaction.unfrozen', { TransactionId: t.id, ActorMemberId: null as unknown as string });
  await auditAs(tx, deps, actor, {
    organizationId: t.organizationId,
    entityType: 'Transaction',
    entityId: t.id,
    action: frozen ? 'transaction.deposit_hold_released' : 'transaction.unfrozen',
    before: { frozen: t.frozen, frozenByDepositId: depositId },
    after: { frozen, frozenByDepositId: next?.id ?? null },
  });
}
