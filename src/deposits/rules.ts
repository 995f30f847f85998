/**
 * The money-in rules in one place (docs/money-in.md explains each).
 */

/**
 * Underpayment tolerance, in base units: a payment intent SUCCEEDS when its confirmed deposits
 * reach `amount - UNDERPAYMENT_TOLERANCE`. Zero: the exact amount (BTCPay's default). On-chain
 * amounts are exact (no card fees, no FX), so a short payment is a real shortfall: the intent stays
 * PROCESSING for a top-up until it expires, and then the partial funds go to SUSPENSE. A per-intent
 * tolerance is a column and this one function.
 */
export const UNDERPAYMENT_TOLERANCE = 0n;
export const isCovered = (credited: bigint, amount: bigint): boolean => credited >= amount - UNDERPAYMENT_TOLERANCE;

/** Payment intent lifetime: expiresInSeconds bounds and default. */
export const EXPIRES_IN_SECONDS = { min: 60, max: 30 * 24 * 3600, default: 3600 } as const;

/** Deposit reasons (stable codes, also the `Reason` of deposit.rejected and deposit.under_review). */
export const reasons = {
  wrongAsset: 'WRONG_ASSET',
  belowMinimum: 'BELOW_MINIMUM',
  dropped: 'DROPPED',
  replaced: 'REPLACED',
  reverted: 'REVERTED',
  reviewRejected: 'REVIEW_REJECTED',
  screeningFlagged: 'SCREENING_FLAGGED',
  assetNetworkDisabled: 'ASSET_NETWORK_DISABLED',
} as const;

/**
 * Sandbox screening (Conduit-style magic values): a deposit whose amount in base units ends in 666
 * is held UNDER_REVIEW, so an integrator can try both review outcomes. Production screening (a
 * provider's verdict) plugs in here.
 */
export function screeningVerdict(networkKind: string, transfer: { amount: bigint; fromAddress: string }): string | null {
  if (networkKind === 'SANDBOX' && transfer.amount.toString().endsWith('666'))
    return `${reasons.screeningFlagged}: sandbox rule, an amount ending in 666 base units is held for review`;
  return null;
}

/** Statuses of a deposit that count toward its intent (detected and not rejected or reversed). */
export const LIVE_DEPOSIT = ['DETECTED', 'CONFIRMING', 'CONFIRMED', 'UNDER_REVIEW', 'REORG_FROZEN'] as const;
/** Statuses whose amount is credited in the ledger. */
export const CREDITED_DEPOSIT = ['CONFIRMED', 'REORG_FROZEN'] as const;
/** Statuses still waiting for the chain or an operator: an intent with one of them does not expire yet. */
export const UNDECIDED_DEPOSIT = ['DETECTED', 'CONFIRMING', 'UNDER_REVIEW', 'REORG_FROZEN'] as const;
