import { z } from 'zod';
import type { Context } from '../context';
import { DomainError } from '../errors';
import { audit } from '../audit/audit';
import { idempotent } from '../idempotency';
import { hashPassword } from '../auth/passwords';
import { countSignUp, passwordLogin, refreshSession, type TokenResult } from '../auth/sessions';
import { confirmReset, password, requestReset, resetPasswordInput } from '../auth/password-reset';
import { newOpaqueToken } from '../auth/secrets';

export const email = z.string().trim().toLowerCase().email('must be an email address').max(254);
export { password };
export const displayName = z.string().trim().min(1, 'must not be empty').max(200);

export const signUpInput = z.object({ email, password, name: displayName, organizationName: displayName });
export type SignUpInput = z.infer<typeof signUpInput>;

export type TokenResultShape = TokenResult & { memberId: string; organizationId: string };

export interface SignUpResponse {
  organizationId: string;
  memberId: string;
  email: string;
}

/** Member sign-up: a new organization with its first member, the OWNER. */
export async function signUp(ctx: Context, input: SignUpInput, idempotencyKey: string | null | undefined): Promise<SignUpResponse> {
  await countSignUp(ctx);
  const passwordHash = await hashPassword(input.password);
  const { db } = ctx.deps;
  return db.$transaction(async (tx) =>
    idempotent(tx, ctx, { scope: 'signup', key: idempotencyKey, request: input }, async () => {
      const taken = await tx.member.findFirst({ where: { email: input.email, removedAt: null }, select: { id: true } });
      if (taken) throw new DomainError('EMAIL_TAKEN', 'A member with this email already exists.');
      const org = await tx.organization.create({ data: { name: input.organizationName } });
      const member = await tx.member.create({
        data: { organizationId: org.id, email: input.email, name: input.name, passwordHash, role: 'OWNER', credentialsChangedAt: ctx.deps.clock.now() },
      });
      const signedUp = {
        ...ctx,
        principal: { type: 'member' as const, memberId: member.id, organizationId: org.id, role: member.role, permissions: new Set<never>() },
      };
      await audit(tx, signedUp, {
        organizationId: org.id,
        entityType: 'Organization',
        entityId: org.id,
        action: 'organization.created',
        after: { name: org.name },
      });
      await audit(tx, signedUp, {
        organizationId: org.id,
        entityType: 'Member',
        entityId: member.id,
        action: 'member.signed_up',
        after: { email: member.email, role: member.role },
      });
      return { organizationId: org.id, memberId: member.id, email: member.email };
    }),
  );
}

export const loginInput = z.object({ email, password: z.string().min(1).max(256) });

export function login(ctx: Context, input: z.infer<typeof loginInput>): Promise<TokenResult> {
  return passwordLogin(ctx, 'MEMBER', input, (address) => ctx.deps.db.member.findFirst({ where: { email: address, removedAt: null } }));
}

export function refresh(ctx: Context, refreshToken: string): Promise<TokenResult> {
  return refreshSession(
    ctx,
    'MEMBER',
    refreshToken,
    async (tx, id) => (await tx.member.findUnique({ where: { id }, select: { organizationId: true } }))?.organizationId,
  );
}

export const SET_PASSWORD_TTL_MS = 72 * 3600_000;

/** Mails a reset token when the email belongs to a member; the same answer and work either way (src/auth/password-reset.ts). */
export const requestPasswordReset = (ctx: Context, address: string) => requestReset(ctx, 'MEMBER', address);

/** Creates a password token (reset or first password of an added member) with its audit entry. */
export async function createPasswordToken(ctx: Context, memberId: string, organizationId: string, ttlMs: number, action: string): Promise<string> {
  const { token, tokenHash } = newOpaqueToken('prt');
  const now = ctx.deps.clock.now();
  await ctx.deps.db.$transaction(async (tx) => {
    await tx.passwordResetToken.create({ data: { memberId, tokenHash, expiresAt: new Date(now.getTime() + ttlMs), createdAt: now } });
    await audit(tx, ctx, { organizationId, entityType: 'Member', entityId: memberId, action });
  });
  return token;
}

export { resetPasswordInput };

/** Spends a reset or set-password token: sets the password, and ends every session and access token of the member. */
export const confirmPasswordReset = (ctx: Context, input: z.infer<typeof resetPasswordInput>) => confirmReset(ctx, 'MEMBER', input);
