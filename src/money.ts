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
  return BigInt(text);
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
