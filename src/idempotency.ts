import { createHash } from 'node:crypto';
import { DomainError } from './errors';
import type { Context } from './context';
import type { Db } from './db/prisma';

const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;
/** How long a record answers its key. */
export const IDEMPOTENCY_RETENTION_MS = 24 * 3600_000;

/** Canonical JSON (sorted keys) so the same request always hashes the same. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(value ?? null);
}

/** A key that is not 1 to 255 printable ASCII characters: 400. */
export function checkIdempotencyKey(key: string): void {
  if (!KEY_PATTERN.test(key))
    throw new DomainError('VALIDATION_FAILED', 'Idempotency-Key must be 1 to 255 printable ASCII characters.', {
      fieldErrors: [{ field: 'idempotencyKey', message: 'must be 1 to 255 printable ASCII characters' }],
    });
}

/** The hash a record keeps of its request: the same request (canonical JSON) always hashes the same. */
export const idempotencyRequestHash = (request: unknown): string => createHash('sha256').update(canonical(request)).digest('hex');

/** A replayed key used with another request: 409. */
export const idempotencyKeyReused = () => new DomainError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used with a different request.');

/**
 * Runs `fn` in `tx` at most once per (scope, key). Concurrent requests with the same key wait on
 * a transaction-scoped advisory lock, then read the stored outcome: the same key and request get
 * the same answer; the same key with another request is refused (409). Only successes are stored:
 * a request that failed may be retried with its key. Records are kept 24 hours.
 */
export async function idempotent<T>(
  tx: Db,
  ctx: Context,
  opts: { scope: string; key: string | null | undefined; request: unknown },
  fn: () => Promise<T>,
): Promise<T> {
  if (opts.key === null || opts.key === undefined) return fn();
  checkIdempotencyKey(opts.key);
  const requestHash = idempotencyRequestHash(opts.request);
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${opts.scope + ' ' + opts.key}, 0))`;
  const now = ctx.deps.clock.now();
  const existing = await tx.idempotencyRecord.findUnique({ where: { scope_key: { scope: opts.scope, key: opts.key } } });
  if (existing && existing.expiresAt > now) {
    if (existing.requestHash !== requestHash) throw idempotencyKeyReused();
    return existing.response as T;
  }
  const result = await fn();
  const data = { requestHash, response: result as never, createdAt: now, expiresAt: new Date(now.getTime() + IDEMPOTENCY_RETENTION_MS) };
  await tx.idempotencyRecord.upsert({
    where: { scope_key: { scope: opts.scope, key: opts.key } },
    create: { scope: opts.scope, key: opts.key, ...data },
    update: data,
  });
  return result;
}
