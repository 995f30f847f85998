import { z } from 'zod';
import type { Context } from '../context';
import type { Db } from '../db/prisma';
import { DomainError, fieldError, invalidState, notFound } from '../errors';
import { audit, auditAll } from '../audit/audit';
import { actorOf } from '../audit/audit';
import { hashPassword } from '../auth/passwords';
import { countSignUp, issueTokens } from '../auth/sessions';
import { newOpaqueToken, sha256 } from '../auth/secrets';
import { email } from '../tenancy/member-auth';
import { assertOrganization } from '../tenancy/access';
import { assertId, isUniqueViolation, isUuid } from '../ids';
import type { Prisma } from '../generated/prisma/client';
import { asHolderTokens, createHolder, signUpHolderInput, type HolderTokenResult } from './holders';

const HOUR = 3600;
export const DEFAULT_INVITATION_TTL_SECONDS = 7 * 24 * HOUR;

export const createInvitationInput = z.object({
  email,
  /** Seconds the invitation stays claimable: 1 hour to 30 days, default 7 days. */
  expiresInSeconds: z
    .number()
    .int()
    .min(HOUR)
    .max(30 * 24 * HOUR)
    .nullish(),
});
export const claimInput = z.object({ token: z.string().min(1).max(200) });
export const signUpAndClaimInput = signUpHolderInput.extend({ token: z.string().min(1).max(200) });

export interface CreatedInvitation {
  invitationId: string;
  organizationId: string;
  email: string;
  token: string;
  expiresAt: Date;
}

/** Invites an end customer by email. The token is returned this once; only its SHA-256 is stored. */
export async function createInvitation(ctx: Context, organizationIdArg: string, input: z.infer<typeof createInvitationInput>): Promise<CreatedInvitation> {
  const organizationId = assertId(organizationIdArg, 'Organization');
  assertOrganization(ctx, organizationId, 'Organization');
  const { actorType, actorId } = actorOf(ctx.principal);
  if ((actorType !== 'MEMBER' && actorType !== 'API_KEY') || !actorId) throw new DomainError('PRINCIPAL_NOT_ALLOWED');
  const now = ctx.deps.clock.now();
  const expiresAt = new Date(now.getTime() + (input.expiresInSeconds ?? DEFAULT_INVITATION_TTL_SECONDS) * 1000);
  const { token, tokenHash } = newOpaqueToken('inv');
  const row = await ctx.deps.db.$transaction(async (tx) => {
    const inv = await tx.accountHolderInvitation.create({
      data: { organizationId, email: input.email, tokenHash, expiresAt, createdAt: now, createdByType: actorType, createdById: actorId },
    });
    await audit(tx, ctx, {
      organizationId,
      entityType: 'AccountHolderInvitation',
      entityId: inv.id,
      action: 'account_holder_invitation.created',
      after: { email: inv.email, expiresAt: expiresAt.toISOString() },
    });
    return inv;
  });
  return { invitationId: row.id, organizationId, email: row.email, token, expiresAt };
}

export interface ClaimResult {
  relationshipId: string;
  organizationId: string;
  accountHolderId: string;
}

/**
 * Spends an invitation for `holder` inside `tx`: the invitation must be unused, unexpired and
 * addressed to the holder's email. Creates the relationship, or reactivates a revoked one.
 */
async function claimIn(tx: Db, ctx: Context, token: string, holder: { id: string; email: string }): Promise<ClaimResult> {
  const now = ctx.deps.clock.now();
  const tokenHash = sha256(token);
  const inv = await tx.accountHolderInvitation.findUnique({ where: { tokenHash } });
  if (!inv || inv.claimedAt || inv.revokedAt || inv.expiresAt <= now)
    throw new DomainError('INVALID_TOKEN', 'The invitation token is invalid, expired or already used.');
  if (inv.email.toLowerCase() !== holder.email.toLowerCase())
    throw new DomainError('CONFLICT', "The invitation was issued for another email address than the account holder's.");
  // Spend it atomically: of two concurrent claims only one updates the row; a revocation
  // (of the invitation or of the relationship) that committed first leaves nothing to spend.
  const spent = await tx.accountHolderInvitation.updateMany({
    where: { id: inv.id, claimedAt: null, revokedAt: null, expiresAt: { gt: now } },
    data: { claimedAt: now },
  });
  if (spent.count !== 1) throw new DomainError('INVALID_TOKEN', 'The invitation token is invalid, expired or already used.');

  const key = { organizationId_accountHolderId: { organizationId: inv.organizationId, accountHolderId: holder.id } };
  const before = await tx.relationship.findUnique({ where: key });
  const rel = await tx.relationship.upsert({
    where: key,
    create: { organizationId: inv.organizationId, accountHolderId: holder.id, createdAt: now },
    update: { status: 'ACTIVE', revokedAt: null },
  });
  await tx.accountHolderInvitation.update({ where: { id: inv.id }, data: { relationshipId: rel.id } });
  await audit(tx, ctx, {
    organizationId: inv.organizationId,
    entityType: 'AccountHolderInvitation',
    entityId: inv.id,
    action: 'account_holder_invitation.claimed',
    after: { accountHolderId: holder.id, relationshipId: rel.id },
  });
  if (before?.status !== 'ACTIVE')
    await audit(tx, ctx, {
      organizationId: inv.organizationId,
      entityType: 'Relationship',
      entityId: rel.id,
      action: before ? 'relationship.reactivated' : 'relationship.created',
      before: before ? { status: before.status } : null,
      after: { status: 'ACTIVE', accountHolderId: holder.id },
    });
  return { relationshipId: rel.id, organizationId: inv.organizationId, accountHolderId: holder.id };
}

/** Claims an invitation as the logged-in account holder. */
export async function claim(ctx: Context, token: string): Promise<ClaimResult> {
  const p = ctx.principal;
  if (p?.type !== 'accountHolder') throw new DomainError('PRINCIPAL_NOT_ALLOWED', 'This operation requires an account holder session.');
  return withUniqueRetry(() =>
    ctx.deps.db.$transaction(async (tx) => {
      const holder = await tx.accountHolder.findUnique({ where: { id: p.accountHolderId }, select: { id: true, email: true } });
      if (!holder) throw notFound('Account holder');
      return claimIn(tx, ctx, token, holder);
    }),
  );
}

export type SignUpAndClaimResult = ClaimResult & { tokens: HolderTokenResult };

/** Sign-up and claim in one transaction: either both happen or neither does. */
export async function signUpAndClaim(ctx: Context, input: z.infer<typeof signUpAndClaimInput>): Promise<SignUpAndClaimResult> {
  await countSignUp(ctx);
  const passwordHash = await hashPassword(input.password);
  try {
    return await ctx.deps.db.$transaction(async (tx) => {
      const { holder, ctx: asHolder } = await createHolder(tx, ctx, input, passwordHash);
      const claimed = await claimIn(tx, asHolder, input.token, holder);
      const tokens = asHolderTokens(await issueTokens(tx, ctx, { type: 'ACCOUNT_HOLDER', id: holder.id }));
      return { ...claimed, tokens };
    });
  } catch (e) {
    if (isUniqueViolation(e)) throw new DomainError('EMAIL_TAKEN', 'An account holder with this email already exists.');
    throw e;
  }
}

/** A relationship created concurrently by another claim: retry once, the upsert then updates it. */
async function withUniqueRetry<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (isUniqueViolation(e)) return fn();
    throw e;
  }
}

/**
 * Ends a relationship: ACTIVE -> REVOKED. The holder loses access to the organization's
 * accounts at once; the accounts stay with the organization. Every unclaimed invitation of the
 * organization to the holder's email is voided with it, so only an invitation issued after the
 * revocation reactivates the relationship. The invitations are voided before the relationship is
 * updated: a concurrent claim locks the invitation, then the relationship, in the same order.
 */
export async function revokeRelationship(ctx: Context, organizationIdArg: string, idArg: string) {
  const organizationId = assertId(organizationIdArg, 'Organization');
  assertOrganization(ctx, organizationId, 'Organization');
  const id = assertId(idArg, 'Relationship');
  const rel = await ctx.deps.db.relationship.findUnique({ where: { id }, include: { accountHolder: { select: { email: true } } } });
  if (!rel || rel.organizationId !== organizationId) throw notFound('Relationship');
  const now = ctx.deps.clock.now();
  return ctx.deps.db.$transaction(async (tx) => {
    const voided = await tx.accountHolderInvitation.updateManyAndReturn({
      where: { organizationId, email: { equals: rel.accountHolder.email, mode: 'insensitive' }, claimedAt: null, revokedAt: null },
      data: { revokedAt: now },
      select: { id: true },
    });
    const changed = await tx.relationship.updateMany({ where: { id, status: 'ACTIVE' }, data: { status: 'REVOKED', revokedAt: now } });
    if (changed.count !== 1) throw invalidState('The relationship is already revoked.');
    await auditAll(tx, ctx.deps, ctx, [
      {
        organizationId,
        entityType: 'Relationship',
        entityId: id,
        action: 'relationship.revoked',
        before: { status: 'ACTIVE' },
        after: { status: 'REVOKED', accountHolderId: rel.accountHolderId, voidedInvitationIds: voided.map((v) => v.id) },
      },
      ...voided.map((v) => ({
        organizationId,
        entityType: 'AccountHolderInvitation',
        entityId: v.id,
        action: 'account_holder_invitation.revoked',
        after: { reason: 'relationship-revoked', relationshipId: id },
      })),
    ]);
    return tx.relationship.findUniqueOrThrow({ where: { id } });
  });
}

export type InvitationStatus = 'PENDING' | 'CLAIMED' | 'REVOKED' | 'EXPIRED';

/** What a list shows of an invitation: never its token (only the hash is stored, and not shown either). */
export const invitationSelect = {
  id: true,
  organizationId: true,
  email: true,
  createdAt: true,
  expiresAt: true,
  claimedAt: true,
  revokedAt: true,
  relationshipId: true,
  createdByType: true,
  createdById: true,
} as const;
export type InvitationRow = Prisma.AccountHolderInvitationGetPayload<{ select: typeof invitationSelect }>;

export const statusOf = (i: InvitationRow, now: Date): InvitationStatus =>
  i.claimedAt ? 'CLAIMED' : i.revokedAt ? 'REVOKED' : i.expiresAt <= now ? 'EXPIRED' : 'PENDING';

/**
 * Withdraws an unclaimed invitation: its token answers INVALID_TOKEN from now on, as a used one.
 * A claimed or already revoked invitation answers 409; an expired one can still be revoked.
 */
export async function revokeInvitation(ctx: Context, organizationIdArg: string, idArg: string): Promise<InvitationRow> {
  const organizationId = assertId(organizationIdArg, 'Organization');
  assertOrganization(ctx, organizationId, 'Organization');
  const id = assertId(idArg, 'Invitation');
  const now = ctx.deps.clock.now();
  return ctx.deps.db.$transaction(async (tx) => {
    const inv = await tx.accountHolderInvitation.findUnique({ where: { id }, select: invitationSelect });
    if (!inv || inv.organizationId !== organizationId) throw notFound('Invitation');
    // Conditional: of a revocation and a concurrent claim, only one changes the row.
    const changed = await tx.accountHolderInvitation.updateMany({ where: { id, claimedAt: null, revokedAt: null }, data: { revokedAt: now } });
    if (changed.count !== 1) throw invalidState(`The invitation is already ${inv.revokedAt ? 'revoked' : 'claimed'}.`);
    await audit(tx, ctx, {
      organizationId,
      entityType: 'AccountHolderInvitation',
      entityId: id,
      action: 'account_holder_invitation.revoked',
      before: { status: statusOf(inv, now) },
      after: { status: 'REVOKED' },
    });
    return tx.accountHolderInvitation.findUniqueOrThrow({ where: { id }, select: invitationSelect });
  });
}
