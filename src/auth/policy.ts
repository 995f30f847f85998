import { DomainError } from '../errors';
import type { Permission } from './permissions';
import type { Principal, PrincipalKind } from './principal';

/**
 * Who may run an operation: any one of the listed principals (a member with the named
 * permission). The same policy object guards the GraphQL field (scope-auth) and its REST route,
 * so the two can never disagree; rest/routes.ts and the principal-matrix test read it.
 */
export interface Policy {
  public?: true;
  member?: Permission | 'any';
  apiKey?: true;
  accountHolder?: true;
  operator?: true;
}

export const policies = {
  public: { public: true },
  memberAny: { member: 'any' },
  member: (p: Permission): Policy => ({ member: p }),
  memberOrApiKey: (p: Permission): Policy => ({ member: p, apiKey: true }),
  /** An organization's members with the permission, and platform operators (every organization). */
  memberOrOperator: (p: Permission): Policy => ({ member: p, operator: true }),
  accountRead: { member: 'account-read', apiKey: true, accountHolder: true },
  accountHolder: { accountHolder: true },
  operator: { operator: true },
  catalogRead: { member: 'any', apiKey: true, accountHolder: true, operator: true },
} satisfies Record<string, Policy | ((p: Permission) => Policy)>;

export function principalsOf(policy: Policy): PrincipalKind[] {
  const out: PrincipalKind[] = [];
  if (policy.member) out.push('member');
  if (policy.apiKey) out.push('apiKey');
  if (policy.accountHolder) out.push('accountHolder');
  if (policy.operator) out.push('operator');
  return out;
}

export function allows(policy: Policy, principal: Principal | null): boolean {
  if (policy.public) return true;
  if (!principal) return false;
  switch (principal.type) {
    case 'member':
      return policy.member === 'any' || (policy.member !== undefined && principal.permissions.has(policy.member));
    case 'apiKey':
      return policy.apiKey === true;
    case 'accountHolder':
      return policy.accountHolder === true;
    case 'operator':
      return policy.operator === true;
  }
}

/**
 * Why a principal may not run an operation, as the error to answer. Authentication comes first:
 * a presented but invalid credential answers 401 before anything else is looked at.
 */
export function denial(policy: Policy, principal: Principal | null, credentialError: DomainError | null): DomainError {
  if (credentialError) return credentialError;
  if (!principal) return new DomainError('UNAUTHENTICATED', `This operation requires ${describe(policy)}.`);
  if (principal.type === 'member' && policy.member) return new DomainError('PERMISSION_DENIED', `This operation requires the ${policy.member} permission.`);
  return new DomainError('PRINCIPAL_NOT_ALLOWED', `This operation requires ${describe(policy)}; the request was authenticated as ${label[principal.type]}.`);
}

const label: Record<PrincipalKind, string> = {
  member: 'a member session',
  apiKey: 'an application API key',
  accountHolder: 'an account holder session',
  operator: 'a platform operator',
};

function describe(policy: Policy): string {
  const kinds = principalsOf(policy).map((k) => label[k]);
  return kinds.length ? kinds.join(' or ') : 'no credential';
}

/** Fails unless the policy allows the principal. */
export function authorize(policy: Policy, principal: Principal | null, credentialError: DomainError | null): void {
  if (!allows(policy, principal) || (credentialError && !policy.public)) throw denial(policy, principal, credentialError);
}

/** The operator running the request (its id), or the policy's refusal: for services that act as an operator. */
export function requireOperator(principal: Principal | null, credentialError: DomainError | null): string {
  if (principal?.type !== 'operator' || credentialError) throw denial(policies.operator, principal, credentialError);
  return principal.operatorId;
}
