import { z } from 'zod';
import type { Context } from '../context';
import { DomainError, invalidState, notFound } from '../errors';
import { audit } from '../audit/audit';
import { hashPassword } from '../auth/passwords';
import { randomToken } from '../auth/secrets';
import { rolePermissions } from '../auth/permissions';
import { revokeAllSessions } from '../auth/sessions';
import { recheckSockets } from '../auth/socket-sessions';
import { assertId } from '../ids';
import { assertOrganization } from './access';
import { createPasswordToken, displayName, email, SET_PASSWORD_TTL_MS } from './member-auth';
import type { MemberRole } from '../generated/prisma/enums';

export const addMemberInput = z.object({ email, name: displayName, role: z.enum(['ADMIN', 'DEVELOPER', 'OPERATIONS', 'VIEWER']) });

/**
 * Adds a member to the organization. The member gets no password: a set-password token (72 hours,
 * single use) is mailed, spent through ConfirmPasswordReset. OWNER is only granted at sign-up.
 */
export async function addMember(ctx: Context, organizationId: string, input: { email: string; name: string; role: MemberRole }) {
  assertOrganization(ctx, organizationId, 'Organization');
  // An unusable password until the member sets one (random, never shown).
  const passwordHash = await hashPassword(randomToken(40));
  const member = await ctx.deps.db.$transaction(async (tx) => {
    const taken = await tx.member.findFirst({ where: { email: input.email, removedAt: null }, select: { id: true } });
    if (taken) throw new DomainError('EMAIL_TAKEN', 'A member with this email already exists.');
    const created = await tx.member.create({
      data: { organizationId, email: input.email, name: input.name, role: input.role, passwordHash, credentialsChangedAt: ctx.deps.clock.now() },
    });
    await audit(tx, ctx, {
      organizationId,
      entityType: 'Member',
      entityId: created.id,
      action: 'member.added',
      after: { email: created.email, role: created.role },
    });
    return created;
  });
  const token = await createPasswordToken(ctx, member.id, organizationId, SET_PASSWORD_TTL_MS, 'member.set_password_issued');
  await ctx.deps.mailer.send({
    to: member.email,
    subject: 'You were added to an organization',
    text: `Set your password within 72 hours with this token: ${token}`,
    data: { kind: 'set-password', token },
  });
  return member;
}

export const changeRoleInput = z.object({ role: z.enum(['OWNER', 'ADMIN', 'DEVELOPER', 'OPERATIONS', 'VIEWER']) });

/**
 * Removes a member (they leave the organization) or changes their role. Both end every session of
 * the member at once: refresh tokens, access tokens (their sessions are revoked, and a removed
 * member no longer authenticates) and, through the socket checks, open subscriptions.
 *
 * Rules: an OWNER is removed, demoted or appointed only by an OWNER; the organization's last OWNER
 * can be neither removed nor demoted (409). The organization row is locked for the change, so two
 * owners demoting (or removing) each other at once are serialized and the second one sees one
 * owner left; the actor is read again under that lock, so a member removed or demoted by the first
 * change cannot make the second. Setting the role a member already has changes nothing.
 */
export function removeMember(ctx: Context, organizationId: string, memberId: string) {
  return changeMember(ctx, organizationId, memberId, { remove: true });
}

export function changeMemberRole(ctx: Context, organizationId: string, memberId: string, role: MemberRole) {
  return changeMember(ctx, organizationId, memberId, { role });
}

async function changeMember(ctx: Context, organizationIdArg: string, memberIdArg: string, change: { remove: true } | { role: MemberRole }) {
  const organizationId = assertId(organizationIdArg, 'Organization');
  assertOrganization(ctx, organizationId, 'Organization');
  const memberId = assertId(memberIdArg, 'Member');
  const p = ctx.principal;
  if (p?.type !== 'member') throw new DomainError('PRINCIPAL_NOT_ALLOWED', 'This operation requires a member session.');
  const now = ctx.deps.clock.now();
  const result = await ctx.deps.db.$transaction(async (tx) => {
    await tx.$queryRaw`SELECT "id" FROM "Organization" WHERE "id" = ${organizationId}::uuid FOR UPDATE`;
    const actor = await tx.member.findFirst({ where: { id: p.memberId, organizationId, removedAt: null }, select: { role: true } });
    if (!actor) throw new DomainError('INVALID_CREDENTIAL', 'The access token is no longer valid.');
    if (!rolePermissions[actor.role].includes('member-manage'))
      throw new DomainError('PERMISSION_DENIED', 'This operation requires the member-manage permission.');
    const target = await tx.member.findFirst({ where: { id: memberId, organizationId, removedAt: null } });
    if (!target) throw notFound('Member');
    const role = 'role' in change ? change.role : null;
    if (role === target.role) return { member: target, changed: false };
    if ((target.role === 'OWNER' || role === 'OWNER') && actor.role !== 'OWNER')
      throw new DomainError('PERMISSION_DENIED', 'Only an owner can remove, demote or appoint an owner.');
    if (target.role === 'OWNER' && (await tx.member.count({ where: { organizationId, role: 'OWNER', removedAt: null } })) <= 1)
      throw invalidState(`The organization's last owner cannot be ${role ? 'demoted' : 'removed'}.`);
    const member = await tx.member.update({ where: { id: memberId }, data: role ? { role } : { removedAt: now } });
    await revokeAllSessions(tx, 'MEMBER', memberId, now, role ? 'role-changed' : 'member-removed');
    if (!role) await tx.passwordResetToken.updateMany({ where: { memberId, usedAt: null }, data: { usedAt: now } });
    await audit(tx, ctx, {
      organizationId,
      entityType: 'Member',
      entityId: memberId,
      action: role ? 'member.role_changed' : 'member.removed',
      before: role ? { role: target.role } : { email: target.email, name: target.name, role: target.role },
      after: role ? { role } : { removedAt: now.toISOString() },
    });
    return { member, changed: true };
  });
  // This process's sockets of the member check their credential now; other processes within WS_REAUTH_INTERVAL_MS.
  if (result.changed) recheckSockets(ctx.deps, 'member', memberId);
  return result.member;
}
