import { z } from 'zod';
import type { Context } from '../context';
import type { Db } from '../db/prisma';
import { DomainError } from '../errors';
import { newOpaqueToken, sha256 } from './secrets';
import { signAccessToken, type Audience } from './tokens';
import { verifyPassword } from './passwords';
import { limits, rateLimited, sourceOf } from './rate-limit';
import { audit } from '../audit/audit';
import { recheckSockets } from './socket-sessions';

export type SessionSubject = 'MEMBER' | 'ACCOUNT_HOLDER';

/** The body of a refresh request, for members and account holders alike. */
export const refreshTokenInput = z.object({ refreshToken: z.string().min(1).max(200) });

/** What login, sign-up and refresh return (the spec's TokenResult). */
export interface TokenResult {
  succeeded: true;
  tokenType: 'Bearer';
  accessToken: string;
  accessTokenExpiresAt: Date;
  refreshToken: string;
  refreshTokenExpiresAt: Date;
  memberId: string | null;
  organizationId: string | null;
  accountHolderId: string | null;
}

const audienceOf: Record<SessionSubject, Audience> = { MEMBER: 'member', ACCOUNT_HOLDER: 'account-holder' };

/** Starts a session (a refresh-token family) or continues `familyId`, returning fresh tokens. */
export async function issueTokens(
  tx: Db,
  ctx: Context,
  subject: { type: SessionSubject; id: string; organizationId?: string },
  familyId: string = crypto.randomUUID(),
): Promise<TokenResult> {
  const { config, clock, tokenKeys } = ctx.deps;
  const now = clock.now();
  const refresh = newOpaqueToken(subject.type === 'MEMBER' ? 'mrt' : 'hrt');
  const refreshTokenExpiresAt = new Date(now.getTime() + config.REFRESH_TOKEN_TTL_SECONDS * 1000);
  await tx.refreshToken.create({
    data: { familyId, subjectType: subject.type, subjectId: subject.id, tokenHash: refresh.tokenHash, expiresAt: refreshTokenExpiresAt, createdAt: now },
  });
  const access = await signAccessToken(
    tokenKeys,
    config.JWT_ISSUER,
    { sub: subject.id, aud: audienceOf[subject.type], org: subject.organizationId, sid: familyId },
    now,
    config.ACCESS_TOKEN_TTL_SECONDS,
  );
  return {
    succeeded: true,
    tokenType: 'Bearer',
    accessToken: access.token,
    accessTokenExpiresAt: access.expiresAt,
    refreshToken: refresh.token,
    refreshTokenExpiresAt,
    memberId: subject.type === 'MEMBER' ? subject.id : null,
    organizationId: subject.organizationId ?? null,
    accountHolderId: subject.type === 'ACCOUNT_HOLDER' ? subject.id : null,
  };
}

/**
 * Rotates a refresh token: the presented token is spent and a new one of the same family issued.
 * A spent token presented again means it leaked: the whole family is revoked, so both the thief
 * and the user must log in again (reuse detection, as OAuth 2.0 Security BCP 4.14 describes).
 * Returns null in that case, so the caller commits the revocation before answering 401 (throwing
 * inside the transaction would roll the revocation back).
 */
export async function rotateRefreshToken(
  tx: Db,
  ctx: Context,
  token: string,
  subjectType: SessionSubject,
  organizationOf: (subjectId: string) => Promise<string | undefined>,
): Promise<TokenResult | null> {
  const now = ctx.deps.clock.now();
  const row = await tx.refreshToken.findUnique({ where: { tokenHash: sha256(token) } });
  if (!row || row.subjectType !== subjectType) throw new DomainError('INVALID_REFRESH_TOKEN', 'The refresh token is invalid.');
  // Lock the family's rows so two concurrent refreshes with one token cannot both succeed.
  await tx.$queryRaw`SELECT id FROM "RefreshToken" WHERE "familyId" = ${row.familyId}::uuid FOR UPDATE`;
  const current = await tx.refreshToken.findUniqueOrThrow({ where: { id: row.id } });
  if (current.revokedAt) throw new DomainError('INVALID_REFRESH_TOKEN', 'The session was revoked.');
  if (current.usedAt) {
    await tx.refreshToken.updateMany({
      where: { familyId: row.familyId, revokedAt: null },
      data: { revokedAt: now, revokedReason: 'reuse-detected' },
    });
    return null;
  }
  if (current.expiresAt <= now) throw new DomainError('INVALID_REFRESH_TOKEN', 'The refresh token has expired.');
  await tx.refreshToken.update({ where: { id: row.id }, data: { usedAt: now } });
  return issueTokens(tx, ctx, { type: subjectType, id: row.subjectId, organizationId: await organizationOf(row.subjectId) }, row.familyId);
}

export async function revokeAllSessions(tx: Db, subjectType: SessionSubject, subjectId: string, now: Date, reason: string): Promise<void> {
  await tx.refreshToken.updateMany({ where: { subjectType, subjectId, revokedAt: null }, data: { revokedAt: now, revokedReason: reason } });
}

/**
 * Password login of a member or an account holder, limited before the password is verified
 * (src/auth/rate-limit.ts): the source address first, then the account (email and principal
 * type, known or not). A source where the account logged in successfully within
 * limits.trustedSourceDays passes the account's backoff, so a stranger's guesses do not lock the
 * owner out of their usual places. An unknown email is verified against a dummy hash so timing
 * tells nothing.
 */
export async function passwordLogin(
  ctx: Context,
  subjectType: SessionSubject,
  input: { email: string; password: string },
  find: (email: string) => Promise<{ id: string; passwordHash: string; organizationId?: string } | null>,
): Promise<TokenResult> {
  const limiter = ctx.deps.rateLimiter;
  const source = `login:source:${sourceOf(ctx.clientIp)}`;
  const account = loginAccountKey(subjectType, input.email);
  const trust = `login:trusted:${subjectType}:${input.email}:${sourceOf(ctx.clientIp)}`;
  await limiter.take(limits.sourceLogin, source);
  const accountHit = await limiter.hit(limits.accountLogin, account);
  const trusted = !accountHit.allowed && (await limiter.trusted(trust));
  if (!accountHit.allowed && !trusted) throw rateLimited(accountHit.retryAfterSeconds);
  const subject = await find(input.email);
  if (!(await verifyPassword(subject?.passwordHash ?? null, input.password)) || !subject) throw new DomainError('INVALID_LOGIN');
  await limiter.loginSucceeded(source, account, trust, !trusted);
  return ctx.deps.db.$transaction((tx) => issueTokens(tx, ctx, { type: subjectType, id: subject.id, organizationId: subject.organizationId }));
}

/** The login counter of an account: a password reset clears it. */
export const loginAccountKey = (subjectType: SessionSubject, email: string) => `login:account:${subjectType}:${email}`;

/**
 * Refresh: rotates the token (see rotateRefreshToken). A valid token is never limited; invalid
 * ones count against the source address, which answers 429 instead of 401 once backed off.
 */
export async function refreshSession(
  ctx: Context,
  subjectType: SessionSubject,
  refreshToken: string,
  organizationOf: (tx: Db, subjectId: string) => Promise<string | undefined>,
): Promise<TokenResult> {
  try {
    const result = await ctx.deps.db.$transaction((tx) => rotateRefreshToken(tx, ctx, refreshToken, subjectType, (id) => organizationOf(tx, id)));
    if (!result) throw new DomainError('INVALID_REFRESH_TOKEN', 'The refresh token was already used; the session is revoked.');
    return result;
  } catch (e) {
    if (e instanceof DomainError && e.code === 'INVALID_REFRESH_TOKEN') await badToken(ctx);
    throw e;
  }
}

/** Counts a sign-up of the source address before its password is hashed; throws RATE_LIMITED once it is backed off. */
export async function countSignUp(ctx: Context): Promise<void> {
  await ctx.deps.rateLimiter.take(limits.sourceSignUp(ctx.deps.config.SIGNUP_BURST_PER_SOURCE), `signup:source:${sourceOf(ctx.clientIp)}`);
}

/** Counts an invalid one-time token (refresh, password reset) of the source; throws RATE_LIMITED once it is backed off. */
export async function badToken(ctx: Context): Promise<void> {
  await ctx.deps.rateLimiter.take(limits.sourceBadToken, `token:source:${sourceOf(ctx.clientIp)}`);
}

/**
 * Logout: revokes the session (refresh-token family) of the access token that authenticated the
 * request. Its refresh tokens stop working, and so do its access tokens, at once (authenticate
 * checks the family of every access token).
 */
export async function logout(ctx: Context): Promise<void> {
  const p = ctx.principal;
  if ((p?.type !== 'member' && p?.type !== 'accountHolder') || !p.sessionId) throw new DomainError('UNAUTHENTICATED');
  const now = ctx.deps.clock.now();
  const subject: SessionSubject = p.type === 'member' ? 'MEMBER' : 'ACCOUNT_HOLDER';
  const subjectId = p.type === 'member' ? p.memberId : p.accountHolderId;
  await ctx.deps.db.$transaction(async (tx) => {
    // Every row of the family, spent ones included: the access-token check looks for any revoked row.
    await tx.refreshToken.updateMany({
      where: { familyId: p.sessionId, subjectType: subject, subjectId, revokedAt: null },
      data: { revokedAt: now, revokedReason: 'logout' },
    });
    await audit(tx, ctx, {
      organizationId: p.type === 'member' ? p.organizationId : null,
      entityType: p.type === 'member' ? 'Member' : 'AccountHolder',
      entityId: subjectId,
      action: p.type === 'member' ? 'member.logged_out' : 'account_holder.logged_out',
      after: { sessionId: p.sessionId },
    });
  });
  // This process's sockets of the subject check their credential now (the logged-out session's close
  // with 4401, the subject's other sessions stay); other processes within WS_REAUTH_INTERVAL_MS.
  recheckSockets(ctx.deps, p.type, subjectId);
}
