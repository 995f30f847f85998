import { z } from 'zod';
import type { Context } from '../context';
import { Prisma } from '../db/prisma';
import { DomainError } from '../errors';
import { audit } from '../audit/audit';
import { monotonicUuidv7 } from '../ids';
import { hashPassword } from './passwords';
import { limits, sourceOf } from './rate-limit';
import { newOpaqueToken, sha256 } from './secrets';
import { badToken, loginAccountKey, revokeAllSessions, type SessionSubject } from './sessions';
import { recheckSockets } from './socket-sessions';

/** How long a mailed reset token is valid; also the window of the per-mailbox mail limit. */
export const RESET_TTL_MS = 30 * 60_000;

/** What differs between a member's and an account holder's reset (identifiers are constants, never input). */
const kinds = {
  MEMBER: {
    table: Prisma.raw('"Member"'),
    column: Prisma.raw('"memberId"'),
    organization: Prisma.raw('x."organizationId"'),
    active: Prisma.raw('AND x."removedAt" IS NULL'),
    prefix: 'prt',
    entityType: 'Member',
    requested: 'member.password_reset_requested',
    reset: 'member.password_reset',
  },
  ACCOUNT_HOLDER: {
    table: Prisma.raw('"AccountHolder"'),
    column: Prisma.raw('"accountHolderId"'),
    organization: Prisma.raw('NULL::uuid'),
    active: Prisma.empty,
    prefix: 'hpt',
    entityType: 'AccountHolder',
    requested: 'account_holder.password_reset_requested',
    reset: 'account_holder.password_reset',
  },
} as const;

/**
 * Mails a single-use reset token when the email belongs to a person of `kind`. The answer is the
 * same whether it does or not, and so is the work done before answering: a token is always
 * generated and hashed, and one statement always runs, which counts the request against the
 * mailbox's limit and, only when the email is known and the limit allows, inserts the token and
 * its audit entry. The mail is handed to the mailer without waiting for it. Requests are limited per
 * source address (429); past `limits.resetMails` mails in a window of the token lifetime, further
 * requests for that mailbox send nothing (still 204), so the tokens already mailed stay valid
 * throughout the window and a stranger's requests never leave the owner without one.
 */
export async function requestReset(ctx: Context, kind: SessionSubject, address: string): Promise<void> {
  const { rateLimiter, clock, db, mailer, log } = ctx.deps;
  await rateLimiter.take(limits.sourceReset, `reset:source:${sourceOf(ctx.clientIp)}`);
  const k = kinds[kind];
  const { token, tokenHash } = newOpaqueToken(k.prefix);
  const now = clock.now();
  const window = rateLimiter.windowSql(`reset:mailbox:${kind}:${address}`, limits.resetMails, RESET_TTL_MS);
  const [row] = await db.$queryRaw<{ sent: number }[]>`
    WITH w AS (${window}),
    s AS (SELECT x."id", ${k.organization} AS "organizationId" FROM ${k.table} x, w WHERE x."email" = ${address} ${k.active} AND w."allowed"),
    t AS (
      INSERT INTO "PasswordResetToken" ("id", ${k.column}, "tokenHash", "expiresAt", "createdAt")
      SELECT ${monotonicUuidv7(now.getTime())}::uuid, s."id", ${tokenHash}, ${new Date(now.getTime() + RESET_TTL_MS)}::timestamptz, ${now}::timestamptz FROM s
      RETURNING 1
    ),
    a AS (
      INSERT INTO "AuditLogEntry" ("id", "occurredAt", "organizationId", "actorType", "actorId", "entityType", "entityId", "action", "requestId")
      SELECT ${monotonicUuidv7(now.getTime())}::uuid, ${now}::timestamptz, s."organizationId", 'SYSTEM'::"PrincipalType", NULL, ${k.entityType}, s."id", ${k.requested}, ${ctx.requestId} FROM s
    )
    SELECT count(*)::int AS "sent" FROM t`;
  if (!row?.sent) return;
  mailer
    .send({
      to: address,
      subject: 'Reset your password',
      text: `Use this token to reset your password within 30 minutes: ${token}`,
      data: { kind: 'password-reset', token },
    })
    .catch((err: unknown) => log.error({ err: { message: (err as Error).message } }, 'password reset mail failed'));
}

/** The rule of every new password (sign-up, reset). */
export const password = z.string().min(12, 'must have at least 12 characters').max(256, 'must have at most 256 characters');

export const resetPasswordInput = z.object({ token: z.string().min(1).max(200), newPassword: password });

/**
 * Spends a reset token of `kind`: sets the password; ends every session and refuses every access
 * token issued before; voids every other outstanding reset or set-password token of the person;
 * clears the account's login backoff. An unknown, spent or expired token counts against the
 * source (as a bad refresh token does) and is refused before the new password is hashed.
 */
export async function confirmReset(ctx: Context, kind: SessionSubject, input: z.infer<typeof resetPasswordInput>): Promise<void> {
  const { db, clock } = ctx.deps;
  const now = clock.now();
  const tokenHash = sha256(input.token);
  const found = await db.passwordResetToken.findUnique({
    where: { tokenHash },
    select: { memberId: true, accountHolderId: true, usedAt: true, expiresAt: true },
  });
  const subjectId = kind === 'MEMBER' ? found?.memberId : found?.accountHolderId;
  if (!found || !subjectId || found.usedAt || found.expiresAt <= now) {
    await badToken(ctx);
    throw new DomainError('INVALID_TOKEN', 'The reset token is invalid, expired or already used.');
  }
  const passwordHash = await hashPassword(input.newPassword);
  const owner = kind === 'MEMBER' ? { memberId: subjectId } : { accountHolderId: subjectId };
  const email = await db.$transaction(async (tx) => {
    // Spend the token atomically: of two concurrent confirmations only one updates the row.
    const spent = await tx.passwordResetToken.updateMany({ where: { tokenHash, usedAt: null, expiresAt: { gt: now } }, data: { usedAt: now } });
    if (spent.count !== 1) throw new DomainError('INVALID_TOKEN', 'The reset token is invalid, expired or already used.');
    await tx.passwordResetToken.updateMany({ where: { ...owner, usedAt: null }, data: { usedAt: now } });
    const data = { passwordHash, credentialsChangedAt: now };
    const person =
      kind === 'MEMBER'
        ? await tx.member.update({ where: { id: subjectId }, data, select: { email: true, organizationId: true } })
        : { ...(await tx.accountHolder.update({ where: { id: subjectId }, data, select: { email: true } })), organizationId: null };
    await revokeAllSessions(tx, kind, subjectId, now, 'password-reset');
    await audit(tx, ctx, { organizationId: person.organizationId, entityType: kinds[kind].entityType, entityId: subjectId, action: kinds[kind].reset });
    return person.email;
  });
  // Every session ended: this process's sockets of the subject close now (others within WS_REAUTH_INTERVAL_MS).
  recheckSockets(ctx.deps, kind === 'MEMBER' ? 'member' : 'accountHolder', subjectId);
  await ctx.deps.rateLimiter.clear(loginAccountKey(kind, email));
}
