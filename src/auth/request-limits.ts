import type { Config } from '../config';
import type { Clock } from '../clock';
import { poolOf, type PrismaClient } from '../db/prisma';
import { DomainError } from '../errors';
import type { Principal } from './principal';

/**
 * Request rate limits per API key and per member or account-holder session (issue 20; the spec
 * leaves them open: docs/decisions.md "Metrics, traces and rate limits" and "Issue 22 clean-up: the
 * rate limit's shared counter written per lease"). Fixed windows of RATE_LIMIT_WINDOW_SECONDS
 * aligned to the epoch, counted in PostgreSQL (table RequestRateLimit, UNLOGGED), so every API
 * process shares them. A process does not write the counter on every request: it claims a lease of
 * `leaseOf(limit)` requests (limit / 100, at most 50, at least 1) in ONE upsert that adds the lease
 * to the key's count and answers the new count; of the lease, what the count left under the limit is
 * granted, and the process answers its next requests of that key from the grant in memory, claiming
 * again once it is spent (concurrent requests wait for one claim). So the limit is never exceeded
 * over all processes (what is granted never passes it), and a key may be refused early by at most
 * (processes - 1) x (lease - 1) requests in a window (leases other processes hold unspent). Limits
 * under 200 have a lease of 1: one upsert per request, exact. Operators and unauthenticated
 * requests are not limited here (credential guessing has its own backoff: src/auth/rate-limit.ts).
 */
export interface RateLimitState {
  limit: number;
  remaining: number;
  /** Seconds until the window ends. */
  resetSeconds: number;
}

export function limitOf(config: Config, principal: Principal | null): { key: string; limit: number } | null {
  if (!principal) return null;
  if (principal.type === 'apiKey') return config.RATE_LIMIT_API_KEY ? { key: `k:${principal.apiKeyId}`, limit: config.RATE_LIMIT_API_KEY } : null;
  if (principal.type === 'member')
    return config.RATE_LIMIT_SESSION ? { key: `m:${principal.sessionId ?? principal.memberId}`, limit: config.RATE_LIMIT_SESSION } : null;
  if (principal.type === 'accountHolder')
    return config.RATE_LIMIT_SESSION ? { key: `h:${principal.sessionId ?? principal.accountHolderId}`, limit: config.RATE_LIMIT_SESSION } : null;
  return null;
}

/** Requests claimed per upsert for a limit: a hundredth of it, at most 50, at least 1. */
export const leaseOf = (limit: number) => Math.min(50, Math.max(1, Math.floor(limit / 100)));

/** Adds a lease ($3) to the key's count in the window ($2), restarting it in a new window; answers the count. */
const CLAIM_SQL = `
  INSERT INTO "RequestRateLimit" AS t ("key", "windowStart", "count") VALUES ($1, $2::timestamptz, $3::int)
  ON CONFLICT ("key") DO UPDATE SET
    "count" = CASE WHEN t."windowStart" = EXCLUDED."windowStart" THEN t."count" + EXCLUDED."count" ELSE EXCLUDED."count" END,
    "windowStart" = EXCLUDED."windowStart"
  RETURNING "count"`;

/** What this process holds of a key's window: the requests granted and not yet answered, and the shared count at its last claim. */
interface Lease {
  windowStart: number;
  left: number;
  sharedCount: number;
  /** No more this window: the shared count reached the limit (it only grows within a window). */
  exhausted: boolean;
  claiming?: Promise<void>;
}
const leasesOf = new WeakMap<object, Map<string, Lease>>();

/** Counts one request of `principal`; answers its state (null: not limited). Throws nothing but the database's errors. */
export async function countRequest(
  deps: { config: Config; db: PrismaClient; clock: Clock },
  principal: Principal | null,
): Promise<(RateLimitState & { exceeded: boolean }) | null> {
  const which = limitOf(deps.config, principal);
  if (!which) return null;
  const windowMs = deps.config.RATE_LIMIT_WINDOW_SECONDS * 1000;
  const now = deps.clock.now().getTime();
  const start = now - (now % windowMs);
  const resetSeconds = Math.max(1, Math.ceil((start + windowMs - now) / 1000));
  let leases = leasesOf.get(deps.db);
  if (!leases) leasesOf.set(deps.db, (leases = new Map()));
  for (;;) {
    let l = leases.get(which.key);
    if (!l || l.windowStart !== start) {
      if (leases.size >= 1000) for (const [k, v] of leases) if (v.windowStart < start && !v.claiming) leases.delete(k);
      leases.set(which.key, (l = { windowStart: start, left: 0, sharedCount: 0, exhausted: false }));
    }
    if (l.left > 0) {
      l.left--;
      return { limit: which.limit, remaining: Math.max(0, which.limit - l.sharedCount) + l.left, resetSeconds, exceeded: false };
    }
    if (l.exhausted) return { limit: which.limit, remaining: 0, resetSeconds, exceeded: true };
    if (!l.claiming) l.claiming = claim(deps, which, l).finally(() => (l.claiming = undefined));
    await l.claiming;
  }
}

/** One upsert: claims a lease for `l`; grants what the shared count leaves under the limit. */
async function claim(deps: { db: PrismaClient }, which: { key: string; limit: number }, l: Lease): Promise<void> {
  const lease = leaseOf(which.limit);
  const values = [which.key, new Date(l.windowStart), lease];
  // On the pg pool under Prisma when there is one (createPrisma): one round trip, no query engine.
  const pool = poolOf(deps.db);
  const count = Number(
    pool
      ? (await pool.query<{ count: number }>({ name: 'request_rate_limit_lease', text: CLAIM_SQL, values })).rows[0]!.count
      : (await deps.db.$queryRawUnsafe<{ count: number }[]>(CLAIM_SQL, ...values))[0]!.count,
  );
  // Before this claim the others (and this process) had claimed count - lease.
  const granted = Math.max(0, Math.min(lease, which.limit - (count - lease)));
  l.left += granted;
  l.sharedCount = Math.max(l.sharedCount, count - lease + granted);
  if (granted < lease) l.exhausted = true;
}

/** The IETF draft's RateLimit-Limit / -Remaining / -Reset headers (and Retry-After on a 429). */
export function setRateLimitHeaders(headers: Headers, state: RateLimitState, refused: boolean): void {
  headers.set('ratelimit-limit', String(state.limit));
  headers.set('ratelimit-remaining', String(state.remaining));
  headers.set('ratelimit-reset', String(state.resetSeconds));
  if (refused) headers.set('retry-after', String(state.resetSeconds));
}

export const requestRateLimited = (retryAfterSeconds: number) =>
  new DomainError('RATE_LIMITED', 'Too many requests for this credential; try again after the Retry-After delay.', { retryAfterSeconds });
