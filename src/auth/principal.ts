import type { EnvironmentType, MemberRole } from '../generated/prisma/enums';
import type { Permission } from './permissions';

/** The four principals of the spec. Exactly one authenticates a request, or none. */
export type Principal =
  // sessionId: the refresh-token family of the access token (logout revokes it).
  | { type: 'member'; memberId: string; organizationId: string; role: MemberRole; permissions: ReadonlySet<Permission>; sessionId?: string }
  | { type: 'apiKey'; apiKeyId: string; organizationId: string; applicationId: string; environmentId: string; mode: EnvironmentType }
  | { type: 'accountHolder'; accountHolderId: string; sessionId?: string }
  | { type: 'operator'; operatorId: string };

export type PrincipalKind = Principal['type'];
