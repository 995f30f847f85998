import { HUNDRED_PERCENT, splitByPercentages, type Amount, type Percentage } from '../money';

/**
 * The split arithmetic of a settlement (docs/settlements.md, "Split and fee arithmetic"). Pure:
 * no database, no clock. Amounts are integer base units, percentages integer millionths of a
 * percent (src/money.ts); nothing here is ever a float.
 *
 * A settlement's distributable amount D (gross minus the platform fee) is allocated by the
 * transaction's split rules:
 * 1. Fixed rules first, in position order: each takes min(fixedAmount - allocatedAmount, what is
 *    left of D). A fixed amount is paid once over the whole transaction, so a partial settlement
 *    may pay part of it and a later one the rest (allocatedAmount remembers how much).
 * 2. Percentage rules then share what is left, by splitByPercentages: every share floored, the
 *    base units left over given one each to the largest remainders, ties to the earlier position
 *    (the largest-remainder method). The percentages sum to exactly 100, so the shares sum to
 *    exactly what was left.
 * 3. No split rule at all: everything to the transaction's BENEFICIARY participant.
 * Portions of 0 base units are dropped (no allocation row). The portions always sum to exactly D,
 * or allocate() throws SplitRulesInvalid.
 */

export interface SplitRuleInput {
  id: string;
  position: number;
  participantId: string;
  accountId: string;
  /** Exactly one of percentage and fixedAmount is set (a CHECK on SplitRule says so). */
  percentage: Percentage | null;
  fixedAmount: Amount | null;
  /** Fixed rules: allocated by earlier settlements of the transaction. */
  allocatedAmount: Amount;
}

export interface Portion {
  /** Null when there is no split rule (the beneficiary takes everything). */
  splitRuleId: string | null;
  participantId: string;
  accountId: string;
  amount: Amount;
}

export interface Allocation {
  /** In rule position order; amounts > 0; they sum to exactly the distributable amount. */
  portions: Portion[];
  /** Fixed rules whose allocatedAmount grows: rule id -> the new allocatedAmount. */
  fixedAllocated: Map<string, Amount>;
}

/** The split rules cannot cover the distributable amount exactly (percentages not 100, none at all with a remainder). */
export class SplitRulesInvalid extends Error {}

export function allocate(
  distributable: Amount,
  rules: readonly SplitRuleInput[],
  beneficiary: { participantId: string; accountId: string } | null,
): Allocation {
  if (distributable < 0n) throw new RangeError('the distributable amount is never negative');
  const fixedAllocated = new Map<string, Amount>();
  if (!rules.length) {
    if (!beneficiary) throw new SplitRulesInvalid('the transaction has neither split rules nor a beneficiary');
    const portions =
      distributable > 0n ? [{ splitRuleId: null, participantId: beneficiary.participantId, accountId: beneficiary.accountId, amount: distributable }] : [];
    return { portions, fixedAllocated };
  }
  const ordered = [...rules].sort((a, b) => a.position - b.position);
  const amounts = new Map<string, Amount>();
  let left = distributable;
  for (const r of ordered) {
    if (r.fixedAmount === null) continue;
    const due = r.fixedAmount - r.allocatedAmount;
    const take = due <= 0n ? 0n : due < left ? due : left;
    if (take > 0n) {
      amounts.set(r.id, take);
      fixedAllocated.set(r.id, r.allocatedAmount + take);
      left -= take;
    }
  }
  const percentageRules = ordered.filter((r) => r.percentage !== null);
  if (left > 0n) {
    if (!percentageRules.length) throw new SplitRulesInvalid('no percentage rule takes what the fixed amounts leave');
    const total = percentageRules.reduce((s, r) => s + r.percentage!, 0n);
    if (total !== HUNDRED_PERCENT) throw new SplitRulesInvalid('the split percentages do not sum to exactly 100');
    const shares = splitByPercentages(
      left,
      percentageRules.map((r) => r.percentage!),
    );
    percentageRules.forEach((r, i) => amounts.set(r.id, (amounts.get(r.id) ?? 0n) + shares[i]!));
  }
  const portions = ordered
    .filter((r) => (amounts.get(r.id) ?? 0n) > 0n)
    .map((r) => ({ splitRuleId: r.id, participantId: r.participantId, accountId: r.accountId, amount: amounts.get(r.id)! }));
  const sum = portions.reduce((s, p) => s + p.amount, 0n);
  if (sum !== distributable) throw new SplitRulesInvalid(`the portions sum to ${sum}, not ${distributable}`);
  return { portions, fixedAllocated };
}
