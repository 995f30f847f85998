import { randomBytes } from 'node:crypto';
import { notFound } from './errors';

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isUuid = (value: unknown): value is string => typeof value === 'string' && uuidPattern.test(value);

/**
 * Ids arrive as free strings from GraphQL; PostgreSQL refuses a malformed uuid (Prisma throws,
 * which would answer 500). A malformed id names no resource: 404, as an unknown one.
 */
export function assertId(value: unknown, what: string): string {
  if (!isUuid(value)) throw notFound(what);
  return value.toLowerCase();
}

/** Whether a Prisma error is a unique-constraint violation (P2002). */
export function isUniqueViolation(e: unknown): boolean {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'P2002';
}

/**
 * 16 random bytes for an id: a view into a block drawn 4 KiB at a time (as crypto.randomUUID does),
 * not a call into OpenSSL and a new buffer per id. Each view is used once, by its caller only.
 */
const RANDOM_BLOCK = 4096;
let randomBlock = Buffer.alloc(0);
let randomAt = RANDOM_BLOCK;
function random16(): Buffer {
  if (randomAt + 16 > randomBlock.length) {
    randomBlock = randomBytes(RANDOM_BLOCK);
    randomAt = 0;
  }
  randomAt += 16;
  return randomBlock.subarray(randomAt - 16, randomAt);
}

/** A UUIDv7 (RFC 9562): 48-bit Unix milliseconds, version 7, variant 10, 74 random bits. For ids needed before the insert. */
export function uuidv7(now: number = Date.now()): string {
  const b = random16();
  b.writeUIntBE(now, 0, 6);
  b[6] = 0x70 | (b[6]! & 0x0f);
  b[8] = 0x80 | (b[8]! & 0x3f);
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/**
 * A UUIDv7 of `now` that sorts after `prev` (the greatest id of rows whose order matters, read by
 * the caller under a lock that serializes their creation): across processes and within one clock
 * millisecond, where uuidv7's random bits would order two rows at random. When uuidv7(now) does not
 * sort after `prev` (same millisecond, or this process's clock behind), it is `prev` + 1 in its 62
 * random rand_b bits (their overflow, 2^-62: the next millisecond of `prev`).
 */
export function uuidv7After(prev: string | null, now: number = Date.now()): string {
  const id = uuidv7(now);
  if (prev === null || id > prev.toLowerCase()) return id;
  let n = BigInt('0x' + prev.toLowerCase().replace(/-/g, ''));
  const randB = (1n << 62n) - 1n;
  n = (n & randB) !== randB ? n + 1n : (((n >> 80n) + 1n) << 80n) | (0x7n << 76n) | (0x2n << 62n);
  const h = n.toString(16).padStart(32, '0');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

let lastMs = 0;
let counter = 0;
/**
 * A UUIDv7 that sorts after every earlier one this process made (RFC 9562 method 1: a 12-bit
 * counter in rand_a; an earlier or equal time reuses the last one). For rows whose order matters
 * among equal timestamps, such as audit entries written at the same clock tick.
 */
export function monotonicUuidv7(now: number = Date.now()): string {
  if (now > lastMs) {
    lastMs = now;
    counter = 0;
  } else if (++counter > 0xfff) {
    lastMs += 1;
    counter = 0;
  }
  const b = random16();
  b.writeUIntBE(lastMs, 0, 6);
  b[6] = 0x70 | (counter >> 8);
  b[7] = counter & 0xff;
  b[8] = 0x80 | (b[8]! & 0x3f);
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
