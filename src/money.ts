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
