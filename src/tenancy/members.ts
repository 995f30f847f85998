import { z } from 'zod';
import type { Context } from '../context';
import { DomainError } from '../errors';
import { audit } from '../audit/audit';
import { hashPassword } from '../auth/passwords';
import { randomToken } from '../auth/secrets';
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
    const taken = await tx.member.findUnique({ where: { email: input.email }, select: { id: true } });
    if (taken) throw new DomainError('EMAIL_TAKEN', 'A member with this email already exists.');
    const created = await tx.member.create({
      data: { organizationId, email: input.email, name: input.name, role: input.role, passwordHash, credentialsChangedAt: ctx.deps.clock.now() },
    });
    await audit(tx, ctx, { organizationId, entityType: 'Member', entityId: created.id, action: 'member.added', after: { email: created.email, role: created.role } });
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
