import { Prisma, type Db } from '../db/prisma';
import type { Transaction } from '../generated/prisma/client';
import { amountToNumeric, numericToAmount, type Amount } from '../money';

/**
 * A transaction's escrow, shared by release rules, settlements and refunds (docs/settlements.md).
 *
 * escrow = funded - settled - (refunded - reversed): what its ESCROW ledger account holds. Every
 * function here runs in the caller's database transaction, after the caller locked the Transaction
 * row (lockTransactionRow in src/kernel/service.ts), so settlements, refunds, freezes and deposit
 * changes of one transaction happen one at a time. The ledger refuses to take an ESCROW account
 * below zero as well (ledger_post), and a CHECK on Transaction says the same of the stored totals.
 */

type Numeric = Parameters<typeof numericToAmount>[0];
type Totals = Record<'fundedAmount' | 'settledAmount' | 'refundedAmount' | 'reversedAmount', Numeric>;

export function escrowOf(t: Totals): Amount {
  return numericToAmount(t.fundedAmount) - numericToAmount(t.settledAmount) - numericToAmount(t.refundedAmount) + numericToAmount(t.reversedAmount);
}

/** Why a transaction may not move funds out of its escrow now (release, settle, refund), or null. */
export type ReleaseBlocker = 'NOT_RESERVED' | 'TRANSACTION_FROZEN' | 'DEPOSIT_UNDER_REVIEW';

export async function releaseBlocker(tx: Db, t: Pick<Transaction, 'id' | 'status' | 'frozen'>): Promise<ReleaseBlocker | null> {
  if (t.status !== 'RESERVED') return 'NOT_RESERVED';
  if (t.frozen) return 'TRANSACTION_FROZEN';
  const review = await tx.deposit.findFirst({ where: { transactionId: t.id, status: { in: ['UNDER_REVIEW', 'REORG_FROZEN'] } }, select: { id: true } });
  return review ? 'DEPOSIT_UNDER_REVIEW' : null;
}

export const BLOCKER_MESSAGES: Record<ReleaseBlocker, string> = {
  NOT_RESERVED: 'The transaction holds no funds in escrow (it is not RESERVED).',
  TRANSACTION_FROZEN: 'The transaction is frozen: it moves no funds until unfrozen.',
  DEPOSIT_UNDER_REVIEW: 'A deposit of the transaction is under review or in doubt after a reorganization.',
};

/**
 * Records what an executed settlement or refund took out of the escrow, in the caller's
 * transaction: the totals, and when the escrow is empty the terminal status (SETTLED when anything
 * was settled, else REFUNDED), its time, and the cancellation of milestones that can no longer
 * release. Answers whether the escrow is now empty (the IsTotal of transaction.settled/refunded).
 */
export async function recordEscrowOutcome(
  tx: Db,
  t: Transaction,
  delta: { settled?: Amount; refunded?: Amount; reversed?: Amount },
  now: Date,
): Promise<{ transaction: Transaction; isTotal: boolean }> {
  const { data, isTotal } = escrowOutcome(t, delta, now);
  if (data.status) await tx.releaseMilestone.updateMany({ where: { transactionId: t.id, status: 'PENDING' }, data: { status: 'CANCELLED' } });
  const transaction = await tx.transaction.update({ where: { id: t.id }, data });
  return { transaction, isTotal };
}

/**
 * What recordEscrowOutcome writes, computed without the database: the new totals (and times), the
 * terminal status when the escrow is now empty (`status` set: the transaction's PENDING milestones
 * are to be cancelled), and the transaction as it will be. Settlements executed in a group
 * (src/settlements/settlements.ts) apply it in memory and write every transaction of the group in
 * one statement.
 */
export function escrowOutcome(
  t: Transaction,
  delta: { settled?: Amount; refunded?: Amount; reversed?: Amount },
  now: Date,
): {
  data: { settledAmount: string; refundedAmount: string; reversedAmount: string; settledAt?: Date; refundedAt?: Date; status?: 'SETTLED' | 'REFUNDED' };
  isTotal: boolean;
  after: Transaction;
} {
  const settled = numericToAmount(t.settledAmount) + (delta.settled ?? 0n);
  const refunded = numericToAmount(t.refundedAmount) + (delta.refunded ?? 0n);
  const reversed = numericToAmount(t.reversedAmount) + (delta.reversed ?? 0n);
  const remaining = escrowOf({ fundedAmount: t.fundedAmount, settledAmount: settled, refundedAmount: refunded, reversedAmount: reversed });
  if (remaining < 0n) throw new Error(`transaction ${t.id}: escrow would go negative (${remaining})`);
  const isTotal = remaining === 0n;
  const data: ReturnType<typeof escrowOutcome>['data'] = {
    settledAmount: amountToNumeric(settled),
    refundedAmount: amountToNumeric(refunded),
    reversedAmount: amountToNumeric(reversed),
  };
  if (delta.settled) data.settledAt = now;
  if (delta.refunded) data.refundedAt = now;
  if (isTotal && t.status === 'RESERVED') data.status = settled > 0n ? 'SETTLED' : 'REFUNDED';
  const after: Transaction = {
    ...t,
    ...data,
    settledAmount: new Prisma.Decimal(data.settledAmount),
    refundedAmount: new Prisma.Decimal(data.refundedAmount),
    reversedAmount: new Prisma.Decimal(data.reversedAmount),
  };
  return { data, isTotal, after };
}
