import { z } from 'zod';
import type { Context } from '../context';
import type { Db } from '../db/prisma';
import { DomainError } from '../errors';
import { newOpaqueToken, sha256 } from './secrets';
import { signAccessToken, type Audience } from './tokens';
import { verifyPassword } from './passwords';

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
 * Password login of a member or an account holder. Failed attempts are limited per subject type,
 * email and client address; an unknown email is verified against a dummy hash so timing tells
 * nothing.
 */
export async function passwordLogin(
  ctx: Context,
  subjectType: SessionSubject,
  input: { email: string; password: string },
  find: (email: string) => Promise<{ id: string; passwordHash: string; organizationId?: string } | null>,
): Promise<TokenResult> {
  const limitKey = `login:${subjectType}:${input.email}:${ctx.clientIp}`;
  ctx.deps.rateLimiter.check(limitKey);
  const subject = await find(input.email);
  if (!(await verifyPassword(subject?.passwordHash ?? null, input.password)) || !subject) {
    ctx.deps.rateLimiter.fail(limitKey);
    throw new DomainError('INVALID_LOGIN');
  }
  ctx.deps.rateLimiter.reset(limitKey);
  return ctx.deps.db.$transaction((tx) => issueTokens(tx, ctx, { type: subjectType, id: subject.id, organizationId: subject.organizationId }));
}

/** Refresh: rotates the token (see rotateRefreshToken); failures are rate limited per client address. */
export async function refreshSession(
  ctx: Context,
  subjectType: SessionSubject,
  refreshToken: string,
  organizationOf: (tx: Db, subjectId: string) => Promise<string | undefined>,
): Promise<TokenResult> {
  const limitKey = `refresh:${ctx.clientIp}`;
  ctx.deps.rateLimiter.check(limitKey);
  try {
    const result = await ctx.deps.db.$transaction((tx) => rotateRefreshToken(tx, ctx, refreshToken, subjectType, (id) => organizationOf(tx, id)));
    if (!result) throw new DomainError('INVALID_REFRESH_TOKEN', 'The refresh token was already used; the session is revoked.');
    return result;
  } catch (e) {
    if (e instanceof DomainError && e.code === 'INVALID_REFRESH_TOKEN') ctx.deps.rateLimiter.fail(limitKey);
    throw e;
  }
}
