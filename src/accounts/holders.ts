import { z } from 'zod';
import type { Context } from '../context';
import type { Db } from '../db/prisma';
import { DomainError } from '../errors';
import { audit } from '../audit/audit';
import { hashPassword } from '../auth/passwords';
import { countSignUp, issueTokens, passwordLogin, refreshSession, type TokenResult } from '../auth/sessions';
import { confirmReset, requestReset, type resetPasswordInput } from '../auth/password-reset';
import { displayName, email, password } from '../tenancy/member-auth';
import { isUniqueViolation } from '../ids';

/**
 * Account holders: end customers with their own identity, independent of any organization.
 * They reach an organization's accounts only through an ACTIVE relationship, created by claiming
 * one of its invitations (src/accounts/invitations.ts).
 */

export const signUpHolderInput = z.object({ email, password, name: displayName });
export type SignUpHolderInput = z.infer<typeof signUpHolderInput>;
export const loginHolderInput = z.object({ email, password: z.string().min(1).max(256) });

export type HolderTokenResult = TokenResult & { accountHolderId: string };

export function asHolderTokens(r: TokenResult): HolderTokenResult {
  if (!r.accountHolderId) throw new DomainError('INTERNAL');
  return { ...r, accountHolderId: r.accountHolderId };
}

/** Creates the holder row and its audit entry in `tx` (the caller owns the transaction). */
export async function createHolder(tx: Db, ctx: Context, input: SignUpHolderInput, passwordHash: string) {
  const taken = await tx.accountHolder.findUnique({ where: { email: input.email }, select: { id: true } });
  if (taken) throw new DomainError('EMAIL_TAKEN', 'An account holder with this email already exists.');
  const now = ctx.deps.clock.now();
  const holder = await tx.accountHolder.create({
    data: { email: input.email, name: input.name, passwordHash, credentialsChangedAt: now, createdAt: now },
  });
  const asHolder: Context = { ...ctx, principal: { type: 'accountHolder', accountHolderId: holder.id } };
  await audit(tx, asHolder, {
    organizationId: null,
    entityType: 'AccountHolder',
    entityId: holder.id,
    action: 'account_holder.signed_up',
    after: { email: holder.email },
  });
  return { holder, ctx: asHolder };
}

/** Sign-up: a new account holder, logged in at once. */
export async function signUp(ctx: Context, input: SignUpHolderInput): Promise<HolderTokenResult> {
  await countSignUp(ctx);
  const passwordHash = await hashPassword(input.password);
  try {
    return await ctx.deps.db.$transaction(async (tx) => {
      const { holder } = await createHolder(tx, ctx, input, passwordHash);
      return asHolderTokens(await issueTokens(tx, ctx, { type: 'ACCOUNT_HOLDER', id: holder.id }));
    });
  } catch (e) {
    // Two concurrent sign-ups with one email: the unique index decides, the loser gets 409.
    if (isUniqueViolation(e)) throw new DomainError('EMAIL_TAKEN', 'An account holder with this email already exists.');
    throw e;
  }
}

export async function login(ctx: Context, input: z.infer<typeof loginHolderInput>): Promise<HolderTokenResult> {
  return asHolderTokens(await passwordLogin(ctx, 'ACCOUNT_HOLDER', input, (address) => ctx.deps.db.accountHolder.findUnique({ where: { email: address } })));
}

/** Rotates the refresh token; a spent token presented again revokes the whole session family. */
export async function refresh(ctx: Context, refreshToken: string): Promise<HolderTokenResult> {
  return asHolderTokens(await refreshSession(ctx, 'ACCOUNT_HOLDER', refreshToken, async () => undefined));
}

/** Mails a reset token when the email belongs to an account holder; the same answer and work either way. */
export const requestPasswordReset = (ctx: Context, address: string) => requestReset(ctx, 'ACCOUNT_HOLDER', address);

/** Spends an account holder's reset token: new password, every session and older access token ended. */
export const confirmPasswordReset = (ctx: Context, input: z.infer<typeof resetPasswordInput>) => confirmReset(ctx, 'ACCOUNT_HOLDER', input);
