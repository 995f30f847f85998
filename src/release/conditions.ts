import type { ReleaseCondition, Transaction } from '../generated/prisma/client';

/**
 * When a release condition is met (docs/release-rules.md). Pure: the caller passes "now" (the
 * organization's sandbox clock in a sandbox, src/kernel/service.ts nowFor).
 *
 * - APPROVAL: met once its party approved (approvedAt).
 * - TIME_LOCK: met at releaseAfter.
 * - INSPECTION_PERIOD: met durationSeconds after the transaction was reserved, or after its rule
 *   was set if that came later; never met before the transaction is reserved.
 */
type Cond = Pick<ReleaseCondition, 'kind' | 'approvedAt' | 'releaseAfter' | 'durationSeconds'>;
type Tx = Pick<Transaction, 'reservedAt' | 'releaseRuleSetAt'>;

/** The time at which a time condition is met; null for approvals and for an inspection not started. */
export function conditionDueAt(c: Cond, t: Tx): Date | null {
  if (c.kind === 'TIME_LOCK') return c.releaseAfter;
  if (c.kind === 'INSPECTION_PERIOD') {
    if (!t.reservedAt || c.durationSeconds == null) return null;
    const start = Math.max(t.reservedAt.getTime(), t.releaseRuleSetAt?.getTime() ?? 0);
    return new Date(start + c.durationSeconds * 1000);
  }
  return null;
}

export function conditionMet(c: Cond, t: Tx, now: Date): boolean {
  if (c.kind === 'APPROVAL') return c.approvedAt !== null;
  const due = conditionDueAt(c, t);
  return due !== null && now.getTime() >= due.getTime();
}

/** ALL: every condition met (none: met). ANY: at least one met (none: met). */
export function conditionsMet(mode: 'ALL' | 'ANY', conditions: readonly Cond[], t: Tx, now: Date): boolean {
  if (!conditions.length) return true;
  return mode === 'ALL' ? conditions.every((c) => conditionMet(c, t, now)) : conditions.some((c) => conditionMet(c, t, now));
}

/** The earliest future time at which one of these conditions becomes met by time alone (for scheduling), or null. */
export function nextDueAt(conditions: readonly Cond[], t: Tx, now: Date): Date | null {
  let next: Date | null = null;
  for (const c of conditions) {
    const due = conditionDueAt(c, t);
    if (due && due.getTime() > now.getTime() && (!next || due.getTime() < next.getTime())) next = due;
  }
  return next;
}
