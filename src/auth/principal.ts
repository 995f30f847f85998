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

/** The actor recorded in audit entries. */
export function actorOf(p: Principal | null): { actorType: 'MEMBER' | 'API_KEY' | 'ACCOUNT_HOLDER' | 'OPERATOR' | 'SYSTEM'; actorId: string | null } {
  switch (p?.type) {
    case 'member':
      return { actorType: 'MEMBER', actorId: p.memberId };
    case 'apiKey':
      return { actorType: 'API_KEY', actorId: p.apiKeyId };
    case 'accountHolder':
      return { actorType: 'ACCOUNT_HOLDER', actorId: p.accountHolderId };
    case 'operator':
      return { actorType: 'OPERATOR', actorId: p.operatorId };
    default:
      return { actorType: 'SYSTEM', actorId: null };
  }
}
