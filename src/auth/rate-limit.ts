import { isIPv4, isIPv6 } from 'node:net';
import { Prisma, type PrismaClient } from '../db/prisma';
import type { Clock } from '../clock';
import { DomainError } from '../errors';

/**
 * Limits credential guessing with counters in PostgreSQL (table AuthThrottle), so every API
 * process shares them. An attempt is counted by one atomic upsert BEFORE it is evaluated (a
 * password verified, a token looked up): of concurrent attempts, only those the counter lets
 * through are evaluated. A success forgives its attempt afterwards.
 *
 * Backoff, not a lock: a key's first `free` attempts go through at once; from then on each
 * attempt allowed sets a wait of base x 2^(n - free) seconds (n: counted attempts), capped at
 * `cap`, before the next one. Attempts refused during a wait are not counted, so they cannot
 * extend it. Counted attempts leak away, one per `leak` seconds of quiet. See docs/decisions.md
 * ("Credential guessing limits").
 */
export interface BackoffPolicy {
  /** Attempts let through without waiting. */
  free: number;
  /** First wait once `free` is reached (seconds); doubles with every further attempt. */
  baseSeconds: number;
  capSeconds: number;
  /** One counted attempt is forgotten per this many seconds. */
  leakSeconds: number;
}

export const limits = {
  /** Login failures per account (email and principal type), from all sources together. */
  accountLogin: { free: 5, baseSeconds: 1, capSeconds: 300, leakSeconds: 900 },
  /** Login failures per source address (any account). */
  sourceLogin: { free: 20, baseSeconds: 1, capSeconds: 900, leakSeconds: 60 },
  /** Password-reset requests per source address (each one counts). */
  sourceReset: { free: 10, baseSeconds: 1, capSeconds: 900, leakSeconds: 60 },
  /** Invalid refresh and reset tokens per source address; a valid token is never limited. */
  sourceBadToken: { free: 20, baseSeconds: 1, capSeconds: 300, leakSeconds: 60 },
  /** Sign-ups per source address (each one counts, before its password is hashed). `free` is SIGNUP_BURST_PER_SOURCE. */
  sourceSignUp: (free: number): BackoffPolicy => ({ free, baseSeconds: 60, capSeconds: 3600, leakSeconds: 360 }),
  /** A source with a successful login of an account in this period passes that account's backoff. */
  trustedSourceDays: 30,
  /** Reset mails per mailbox in a fixed window as long as the reset token lifetime (extra requests send nothing). */
  resetMails: 3,
} as const;

/**
 * The source key of a client address: IPv4 as is, IPv6 by its /64 prefix (one subscriber
 * usually holds a whole /64), IPv4-mapped IPv6 as IPv4.
 */
export function sourceOf(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1]!;
  if (isIPv4(ip) || !isIPv6(ip)) return ip;
  const [head, tail = ''] = ip.toLowerCase().split('::');
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = ip.includes('::') ? [...h, ...Array(8 - h.length - t.length).fill('0'), ...t] : h;
  return (
    groups
      .slice(0, 4)
      .map((g) => g.replace(/^0+(?=.)/, ''))
      .join(':') + '::/64'
  );
}

const decayed = (now: Date, leakSeconds: number) =>
  Prisma.sql`GREATEST(t."count" - floor(extract(epoch FROM (${now}::timestamptz - t."updatedAt")) / ${leakSeconds}::float8)::int, 0)`;
const waitAfter = (n: Prisma.Sql, now: Date, p: BackoffPolicy) =>
  Prisma.sql`CASE WHEN ${n} >= ${p.free}::int THEN ${now}::timestamptz + make_interval(secs => LEAST(${p.capSeconds}::float8, ${p.baseSeconds}::float8 * power(2, LEAST(${n} - ${p.free}::int, 30)))) END`;

export class RateLimiter {
  constructor(
    private db: PrismaClient,
    private clock: Clock,
  ) {}

  /** Counts an attempt of `key` unless it is backed off. Answers whether it may be evaluated. */
  async hit(policy: BackoffPolicy, key: string): Promise<{ allowed: true } | { allowed: false; retryAfterSeconds: number }> {
    const now = this.clock.now();
    const n = Prisma.sql`(${decayed(now, policy.leakSeconds)} + 1)`;
    const blocked = Prisma.sql`COALESCE(t."blockedUntil" > ${now}::timestamptz, false)`;
    const [row] = await this.db.$queryRaw<{ allowed: boolean; blockedUntil: Date | null }[]>`
      INSERT INTO "AuthThrottle" AS t ("key", "count", "updatedAt", "blockedUntil", "allowed")
      VALUES (${key}, 1, ${now}::timestamptz, ${waitAfter(Prisma.sql`1`, now, policy)}, true)
      ON CONFLICT ("key") DO UPDATE SET
        "allowed" = NOT ${blocked},
        "count" = CASE WHEN ${blocked} THEN t."count" ELSE ${n} END,
        "updatedAt" = CASE WHEN ${blocked} THEN t."updatedAt" ELSE ${now}::timestamptz END,
        "blockedUntil" = CASE WHEN ${blocked} THEN t."blockedUntil" ELSE ${waitAfter(n, now, policy)} END
      RETURNING "allowed", "blockedUntil"`;
    if (row!.allowed) return { allowed: true };
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((row!.blockedUntil!.getTime() - now.getTime()) / 1000)) };
  }

  /** hit, throwing RATE_LIMITED (429 with Retry-After) when the key is backed off. */
  async take(policy: BackoffPolicy, key: string): Promise<void> {
    const r = await this.hit(policy, key);
    if (!r.allowed) throw rateLimited(r.retryAfterSeconds);
  }

  /**
   * A successful login: the source's attempt is forgiven (its counter goes down by one, not to
   * zero: a guesser cannot clear its source by logging into an account of its own), the
   * account's counter is cleared unless the login passed its backoff as a trusted source, and the
   * source becomes trusted for the account.
   */
  async loginSucceeded(sourceKey: string, accountKey: string, trustKey: string, clearAccount: boolean): Promise<void> {
    const now = this.clock.now();
    const free = limits.sourceLogin.free;
    await this.db.$executeRaw`
      WITH forgiven AS (
        UPDATE "AuthThrottle" SET "count" = GREATEST("count" - 1, 0),
          "blockedUntil" = CASE WHEN "count" - 1 >= ${free}::int THEN "blockedUntil" END
        WHERE "key" = ${sourceKey}
      ), cleared AS (
        DELETE FROM "AuthThrottle" WHERE "key" = ${accountKey} AND ${clearAccount}::boolean
      )
      INSERT INTO "AuthThrottle" ("key", "count", "updatedAt", "allowed") VALUES (${trustKey}, 0, ${now}::timestamptz, true)
      ON CONFLICT ("key") DO UPDATE SET "updatedAt" = EXCLUDED."updatedAt"`;
  }

  /** Whether `trustKey` saw a successful login within limits.trustedSourceDays. */
  async trusted(trustKey: string): Promise<boolean> {
    const since = new Date(this.clock.now().getTime() - limits.trustedSourceDays * 86_400_000);
    const rows = await this.db.$queryRaw<unknown[]>`SELECT 1 FROM "AuthThrottle" WHERE "key" = ${trustKey} AND "updatedAt" > ${since}::timestamptz`;
    return rows.length > 0;
  }

  /** Forgets every counter of `key` (a password reset clears the account's login backoff). */
  async clear(key: string): Promise<void> {
    await this.db.authThrottle.deleteMany({ where: { key } });
  }

  /**
   * A fixed-window count as a statement to embed (a CTE): it counts one request of `key` and
   * answers `allowed` while the window (starting at its first request) holds at most `limit`.
   */
  windowSql(key: string, limit: number, windowMs: number): Prisma.Sql {
    const now = this.clock.now();
    const start = new Date(now.getTime() - windowMs);
    const fresh = Prisma.sql`t."updatedAt" <= ${start}::timestamptz`;
    return Prisma.sql`
      INSERT INTO "AuthThrottle" AS t ("key", "count", "updatedAt", "allowed") VALUES (${key}, 1, ${now}::timestamptz, true)
      ON CONFLICT ("key") DO UPDATE SET
        "count" = CASE WHEN ${fresh} THEN 1 ELSE t."count" + 1 END,
        "updatedAt" = CASE WHEN ${fresh} THEN ${now}::timestamptz ELSE t."updatedAt" END,
        "allowed" = CASE WHEN ${fresh} THEN true ELSE t."count" + 1 <= ${limit}::int END
      RETURNING "allowed"`;
  }
}

export const rateLimited = (retryAfterSeconds: number) => new DomainError('RATE_LIMITED', 'Too many attempts; try again later.', { retryAfterSeconds });
