import { z } from 'zod';
/**
 * Money in one place. Amounts are integer base units of an asset (bigint in TypeScript,
 * NUMERIC(78,0) in PostgreSQL) and travel as decimal strings of those base units; never a float.
 */
export type Amount = bigint;

/** The wire form of an amount: its base units as a decimal string ("1500000"). */
export function amountToString(amount: Amount): string {
  if (typeof amount !== 'bigint') throw new TypeError('amounts are bigint base units');
  return amount.toString(10);
}

/** Parses the wire form; refuses anything but an optional minus and digits. */
export function parseAmount(text: string): Amount {
  if (!/^-?(0|[1-9]\d{0,77})$/.test(text)) throw new RangeError(`not an integer amount in base units: ${text}`);
  const amount = BigInt(text);
  if (amount > MAX_AMOUNT || -amount > MAX_AMOUNT) throw new RangeError(`an amount is ${AMOUNT_RANGE} base units: ${text}`);
  return amount;
}

/** A NUMERIC(78,0) column as Prisma returns it (a Decimal), or a string/number/bigint, as base units. */
export function numericToAmount(value: { toFixed(dp: number): string } | string | number | bigint): Amount {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'string') return BigInt(value);
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new RangeError(`not a safe integer amount: ${value}`);
    return BigInt(value);
  }
  return BigInt(value.toFixed(0));
}

/** Base units as the string Prisma writes into a NUMERIC column. */
export const amountToNumeric = (value: Amount): string => value.toString(10);

/**
 * Percentages (fees, split shares) are exact decimals with up to 6 fractional digits, carried as
 * integer millionths of a percent ("12.5" = 12_500_000n; 100% = 100_000_000n) and stored as
 * NUMERIC(9,6). Never a float.
 */
export type Percentage = bigint;
export const PERCENT_SCALE = 1_000_000n;
export const HUNDRED_PERCENT: Percentage = 100n * PERCENT_SCALE;

/** Parses "12.5", "0.000001" or "100"; refuses anything outside 0..100 or with more than 6 decimals. */
export function parsePercentage(text: string): Percentage {
  const m = /^(0|[1-9]\d{0,2})(?:\.(\d{1,6}))?$/.exec(text);
  if (!m) throw new RangeError(`not a percentage with up to 6 decimals: ${text}`);
  const value = BigInt(m[1]!) * PERCENT_SCALE + BigInt((m[2] ?? '').padEnd(6, '0') || '0');
  if (value > HUNDRED_PERCENT) throw new RangeError(`a percentage is at most 100: ${text}`);
  return value;
}

/** The wire form: the shortest exact decimal ("12.5", "100", "0.000001"). */
export function percentageToString(value: Percentage): string {
  const whole = value / PERCENT_SCALE;
  const frac = (value % PERCENT_SCALE).toString().padStart(6, '0').replace(/0+$/, '');
  return frac ? `${whole}.${frac}` : `${whole}`;
}

/** A NUMERIC(9,6) column (a Prisma Decimal) or its string, as a Percentage. */
export function numericToPercentage(value: { toFixed(dp: number): string } | string): Percentage {
  return parsePercentage(typeof value === 'string' ? value : value.toFixed(6).replace(/\.?0+$/, '') || '0');
}

/** A Percentage as the string Prisma writes into a NUMERIC(9,6) column. */
export const percentageToNumeric = (value: Percentage): string => percentageToString(value);

/**
 * `percentage` of `amount`, rounded to a base unit: 'floor' (toward zero) or 'halfUp' (half a unit
 * and more rounds up). Amounts here are never negative.
 */
export function percentOf(amount: Amount, percentage: Percentage, rounding: 'floor' | 'halfUp'): Amount {
  if (amount < 0n || percentage < 0n) throw new RangeError('percentOf takes non-negative values');
  const num = amount * percentage;
  const q = num / HUNDRED_PERCENT;
  if (rounding === 'floor') return q;
  return (num % HUNDRED_PERCENT) * 2n >= HUNDRED_PERCENT ? q + 1n : q;
}

/**
 * Splits `total` by percentages that sum to exactly 100%, exactly: each share is floored, then the
 * base units left over go one each to the shares with the largest remainders (ties: the earlier
 * position first) — the largest-remainder (Hamilton) method. Deterministic; the shares sum to total.
 */
export function splitByPercentages(total: Amount, percentages: readonly Percentage[]): Amount[] {
  if (total < 0n) throw new RangeError('cannot split a negative amount');
  if (percentages.reduce((a, b) => a + b, 0n) !== HUNDRED_PERCENT) throw new RangeError('split percentages must sum to exactly 100');
  const shares = percentages.map((p) => (total * p) / HUNDRED_PERCENT);
  const remainders = percentages.map((p, i) => ({ i, r: (total * p) % HUNDRED_PERCENT }));
  let left = total - shares.reduce((a, b) => a + b, 0n);
  remainders.sort((a, b) => (a.r === b.r ? a.i - b.i : a.r > b.r ? -1 : 1));
  for (const { i } of remainders) {
    if (left === 0n) break;
    shares[i]! += 1n;
    left -= 1n;
  }
  return shares;
}

/**
 * The largest amount anything carries: 2^256 − 1 base units, what a chain can represent (an EVM
 * uint256; every supported chain's amounts are narrower). Every amount a caller sends, every amount
 * the ledger posts and every sandbox transfer is at most this; the catalog declares no per-asset
 * supply, so this is the supply bound of every asset (docs/decisions.md, issue 26).
 */
export const MAX_AMOUNT: Amount = 2n ** 256n - 1n;
/**
 * What a NUMERIC(78,0) column holds: the bound of the sums stored (ledger totals, an intent's
 * detected and confirmed amounts, a sandbox address balance). A sum beyond it is refused before it
 * is written (409), never left to PostgreSQL's numeric overflow (22003).
 */
export const MAX_STORED_SUM: Amount = 10n ** 78n - 1n;
const AMOUNT_RANGE = `at most 2^256 - 1 (${MAX_AMOUNT})`;

/** True when `amount` is a valid amount: 0 ≤ amount ≤ MAX_AMOUNT. */
export const amountInRange = (amount: Amount): boolean => amount >= 0n && amount <= MAX_AMOUNT;

/** Wire forms for request validation (zod): base units as decimal strings, and percentages. */
export const amountText = z
  .string()
  .regex(/^(0|[1-9]\d{0,77})$/, 'must be a non-negative whole number of base units, as a decimal string')
  .refine((v) => !/^\d+$/.test(v) || BigInt(v) <= MAX_AMOUNT, `must be ${AMOUNT_RANGE}`);
export const positiveAmountText = z
  .string()
  .regex(/^[1-9]\d{0,77}$/, 'must be a positive whole number of base units, as a decimal string')
  .refine((v) => !/^\d+$/.test(v) || BigInt(v) <= MAX_AMOUNT, `must be ${AMOUNT_RANGE}`);
export const percentageText = z.string().refine((v) => {
  try {
    parsePercentage(v);
    return true;
  } catch {
    return false;
  }
}, 'must be a decimal percentage from 0 to 100 with at most 6 decimals, e.g. "1.5"');
