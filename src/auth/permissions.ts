import type { MemberRole } from '../generated/prisma/enums';

/** Member permissions. Roles grant fixed sets; the table is published in docs/authorization.md. */
export const permissions = [
  'member-manage',
  'application-manage',
  'api-key-manage',
  'account-read',
  'account-manage',
  'account-holder-manage',
  'webhook-endpoint-manage',
  'payment-manage',
  'custody-manage',
] as const;
export type Permission = (typeof permissions)[number];

export const rolePermissions: Record<MemberRole, readonly Permission[]> = {
  OWNER: permissions,
  ADMIN: permissions,
  DEVELOPER: ['application-manage', 'api-key-manage', 'account-read', 'webhook-endpoint-manage', 'custody-manage'],
  OPERATIONS: ['account-read', 'account-manage', 'account-holder-manage', 'payment-manage'],
  VIEWER: ['account-read'],
};
