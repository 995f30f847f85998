import type { Config } from '../config';
import type { Clock } from '../clock';
import { poolOf, type PrismaClient } from '../db/prisma';
import { DomainError } from '../errors';
import type { Principal } from './principal';

/**
 * Request rate limits per API key and per member or account-holder session (issue 20; the spec
 * leaves them open: docs/decisions.md "Metrics, traces and rate limits"). Fixed windows of
 * RATE_LIMIT_WINDOW_SECONDS aligned to the epoch, counted in PostgreSQL (table RequestRateLimit,
 * UNLOGGED) by ONE upsert per request, so every API process shares them: the row of the key is
 * reset when its window is over, else incremented, and the statement answers the count. Operators
 * and unauthenticated requests are not limited here (credential guessing has its own backoff:
 * src/auth/rate-limit.ts).
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

const COUNT_SQL = `
  INSERT INTO "RequestRateLimit" AS t ("key", "windowStart", "count") VALUES ($1, $2::timestamptz, 1)
  ON CONFLICT ("key") DO UPDATE SET
    "count" = CASE WHEN t."windowStart" = EXCLUDED."windowStart" THEN t."count" + 1 ELSE 1 END,
    "windowStart" = EXCLUDED."windowStart"
  RETURNING "count"`;

/** Counts one request of `principal`; answers its state (null: not limited). Throws nothing. */
export async function countRequest(
  deps: { config: Config; db: PrismaClient; clock: Clock },
  principal: Principal | null,
): Promise<(RateLimitState & { exceeded: boolean }) | null> {
  const which = limitOf(deps.config, principal);
  if (!which) return null;
  const windowMs = deps.config.RATE_LIMIT_WINDOW_SECONDS * 1000;
  const now = deps.clock.now().getTime();
  const start = new Date(now - (now % windowMs));
  // On the pg pool under Prisma when there is one (createPrisma): one round trip, no query engine.
  const pool = poolOf(deps.db);
  const count = pool
    ? (await pool.query<{ count: number }>({ name: 'request_rate_limit', text: COUNT_SQL, values: [which.key, start] })).rows[0]!.count
    : (await deps.db.$queryRawUnsafe<{ count: number }[]>(COUNT_SQL, which.key, start))[0]!.count;
  const resetSeconds = Math.max(1, Math.ceil((start.getTime() + windowMs - now) / 1000));
  return { limit: which.limit, remaining: Math.max(0, which.limit - count), resetSeconds, exceeded: count > which.limit };
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
