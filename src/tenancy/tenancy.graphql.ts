import { z } from 'zod';
import { Kind, type GraphQLResolveInfo, type SelectionSetNode } from 'graphql';
import type { Organization } from '../generated/prisma/client';
import { builder, creationArgs, createdWhere, keysetConnection, NodeRef, registerNode, countedConnection, restListSize, REST_LIST_MAX } from '../builder';
import { logout, refreshTokenInput } from '../auth/sessions';
import { policies } from '../auth/policy';
import { rolePermissions } from '../auth/permissions';
import { DomainError, notFound } from '../errors';
import { assertId } from '../ids';
import { assertOrganization, loadApplication, loadEnvironment, ownOrganization } from './access';
import * as auth from './member-auth';
import * as apps from './applications';
import { addMember, addMemberInput, changeMemberRole, changeRoleInput, removeMember } from './members';

export const MemberRole = builder.enumType('MemberRole', { values: ['OWNER', 'ADMIN', 'DEVELOPER', 'OPERATIONS', 'VIEWER'] as const });
export const EnvironmentType = builder.enumType('EnvironmentType', { values: ['SANDBOX', 'PRODUCTION'] as const });
const ApplicationStatus = builder.enumType('ApplicationStatus', { values: ['ACTIVE', 'SUSPENDED', 'ARCHIVED'] as const });
const ApiKeyStatus = builder.enumType('ApiKeyStatus', {
  description: 'EXPIRING: rotated, still accepted until expiresAt. EXPIRED: rotated and past expiresAt.',
  values: ['ACTIVE', 'EXPIRING', 'EXPIRED', 'REVOKED'] as const,
});

builder.prismaObject('Organization', {
  interfaces: [NodeRef],
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name'),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    members: t.relatedConnection('members', {
      description: 'The members, removed ones excluded, newest first.',
      authScopes: { policy: policies.memberAny },
      cursor: 'id',
      totalCount: true,
      args: creationArgs,
      query: (args) => ({ where: { removedAt: null, ...createdWhere(args) }, orderBy: { id: args.orderBy === 'OLDEST_FIRST' ? 'asc' : 'desc' } }),
    }),
    applications: t.relatedConnection('applications', {
      description: 'The applications, newest first.',
      authScopes: { policy: policies.member('application-manage') },
      cursor: 'id',
      totalCount: true,
      args: { ...creationArgs, status: t.arg({ type: [ApplicationStatus] }) },
      query: (args) => ({
        where: { ...createdWhere(args), ...(args.status?.length ? { status: { in: args.status } } : {}) },
        orderBy: { id: args.orderBy === 'OLDEST_FIRST' ? 'asc' : 'desc' },
      }),
    }),
    environments: t.connection(
      {
        type: Environment,
        description: 'The environments of every application, newest first.',
        authScopes: { policy: policies.member('application-manage') },
        args: { ...creationArgs, type: t.arg({ type: EnvironmentType }) },
        resolve: (org, args, ctx) => {
          const where = { organizationId: org.id, ...createdWhere(args), ...(args.type ? { type: args.type } : {}) };
          return keysetConnection(
            args,
            (q) => ctx.deps.db.environment.findMany({ where: { ...where, ...q.where }, orderBy: q.orderBy, take: q.take }),
            () => ctx.deps.db.environment.count({ where }),
          );
        },
      },
      countedConnection,
    ),
  }),
});

const ownOrg = (ctx: Parameters<typeof assertOrganization>[0], organizationId: string) => {
  assertOrganization(ctx, organizationId, 'Organization');
};
/** Who may read an organization: its members and API keys (their own), operators (any); each of its connections has its own policy. */
const organizationRead = { member: 'any', apiKey: true, operator: true } as const;
registerNode({
  typename: 'Organization',
  policy: organizationRead,
  load: async (ctx, id) => {
    ownOrg(ctx, id);
    return ctx.deps.db.organization.findUnique({ where: { id } });
  },
});
registerNode({
  typename: 'Member',
  policy: policies.memberAny,
  load: async (ctx, id) => {
    const m = await ctx.deps.db.member.findUnique({ where: { id } });
    if (m) ownOrg(ctx, m.organizationId);
    return m;
  },
});
registerNode({ typename: 'Application', policy: policies.member('application-manage'), load: (ctx, id) => loadApplication(ctx, id) });
registerNode({ typename: 'Environment', policy: policies.member('application-manage'), load: (ctx, id) => loadEnvironment(ctx, id) });

builder.prismaObject('Member', {
  interfaces: [NodeRef],
  fields: (t) => ({
    id: t.exposeID('id'),
    organizationId: t.exposeID('organizationId'),
    email: t.exposeString('email'),
    name: t.exposeString('name'),
    role: t.expose('role', { type: MemberRole }),
    permissions: t.stringList({ select: { role: true }, resolve: (m) => [...rolePermissions[m.role]] }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    removedAt: t.expose('removedAt', { type: 'DateTime', nullable: true, description: 'When the organization removed the member (removeMember).' }),
  }),
});

export const Application = builder.prismaObject('Application', {
  interfaces: [NodeRef],
  fields: (t) => ({
    id: t.exposeID('id'),
    organizationId: t.exposeID('organizationId'),
    name: t.exposeString('name'),
    status: t.expose('status', { type: ApplicationStatus }),
    statusReason: t.exposeString('statusReason', { nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    environments: t.connection(
      {
        type: Environment,
        description: 'The environments, newest first (REST ListEnvironments reads it oldest first).',
        ...restListSize,
        args: creationArgs,
        resolve: (app, args, ctx) => {
          const where = { applicationId: app.id, ...createdWhere(args) };
          return keysetConnection(
            args,
            (q) => ctx.deps.db.environment.findMany({ where: { ...where, ...q.where }, orderBy: q.orderBy, take: q.take }),
            () => ctx.deps.db.environment.count({ where }),
            REST_LIST_MAX,
          );
        },
      },
      countedConnection,
    ),
    organization: t.relation('organization'),
  }),
});

const Environment = builder.prismaObject('Environment', {
  interfaces: [NodeRef],
  fields: (t) => ({
    id: t.exposeID('id'),
    organizationId: t.exposeID('organizationId'),
    applicationId: t.exposeID('applicationId'),
    type: t.expose('type', { type: EnvironmentType }),
    name: t.exposeString('name'),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

const ApiKeyMetadata = builder.prismaObject('ApiKey', {
  name: 'ApiKeyMetadata',
  description: 'An API key without its secret. The secret is shown once, by GenerateApiKey or RotateApiKey.',
  fields: (t) => ({
    id: t.exposeID('id'),
    environmentId: t.exposeID('environmentId'),
    applicationId: t.exposeID('applicationId'),
    displayPrefix: t.exposeString('displayPrefix'),
    status: t.field({
      type: ApiKeyStatus,
      select: { status: true, expiresAt: true },
      resolve: (k, _a, ctx) => (k.status === 'REVOKED' ? 'REVOKED' : !k.expiresAt ? 'ACTIVE' : k.expiresAt > ctx.deps.clock.now() ? 'EXPIRING' : 'EXPIRED'),
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    lastUsedAt: t.expose('lastUsedAt', { type: 'DateTime', nullable: true }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime', nullable: true }),
    revokedAt: t.expose('revokedAt', { type: 'DateTime', nullable: true }),
    rotatedFromId: t.exposeID('rotatedFromId', { nullable: true }),
  }),
});

builder.prismaObjectField('Environment', 'apiKeys', (t) =>
  t.connection({
    type: ApiKeyMetadata,
    description: 'Its API keys in every status, newest first (REST ListApiKeys reads it oldest first). Members with api-key-manage.',
    authScopes: { policy: policies.member('api-key-manage') },
    ...restListSize,
    args: creationArgs,
    resolve: (env, args, ctx) =>
      keysetConnection(
        args,
        (q) => ctx.deps.db.apiKey.findMany({ where: { AND: [q.where, { environmentId: env.id }, createdWhere(args)] }, orderBy: q.orderBy, take: q.take }),
        undefined,
        REST_LIST_MAX,
      ),
  }),
);

interface SecretKey {
  id: string;
  apiKey: string;
  displayPrefix: string;
  environmentId: string;
  createdAt: Date;
}
const GenerateApiKeyResult = builder.objectRef<SecretKey>('GenerateApiKeyResult').implement({
  description: 'The new key. apiKey is the secret, returned this once and never again.',
  fields: (t) => ({
    id: t.exposeID('id'),
    apiKey: t.exposeString('apiKey'),
    displayPrefix: t.exposeString('displayPrefix'),
    environmentId: t.exposeID('environmentId'),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});
const RotateApiKeyResult = builder.objectRef<SecretKey & { previousApiKeyId: string; previousKeyExpiresAt: Date }>('RotateApiKeyResult').implement({
  description: 'The replacement key (apiKey shown this once) and when the previous key stops working.',
  fields: (t) => ({
    id: t.exposeID('id'),
    apiKey: t.exposeString('apiKey'),
    displayPrefix: t.exposeString('displayPrefix'),
    environmentId: t.exposeID('environmentId'),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    previousApiKeyId: t.exposeID('previousApiKeyId'),
    previousKeyExpiresAt: t.expose('previousKeyExpiresAt', { type: 'DateTime' }),
  }),
});

export const CreatedResourceResponse = builder.objectRef<{ id: string }>('CreatedResourceResponse').implement({
  fields: (t) => ({ id: t.exposeID('id') }),
});

export const TokenResult = builder.objectRef<auth.TokenResultShape>('TokenResult').implement({
  description: 'Member session tokens. Send accessToken as "Authorization: Bearer <accessToken>".',
  fields: (t) => ({
    succeeded: t.exposeBoolean('succeeded'),
    tokenType: t.exposeString('tokenType'),
    accessToken: t.exposeString('accessToken'),
    accessTokenExpiresAt: t.expose('accessTokenExpiresAt', { type: 'DateTime' }),
    refreshToken: t.exposeString('refreshToken'),
    refreshTokenExpiresAt: t.expose('refreshTokenExpiresAt', { type: 'DateTime' }),
    memberId: t.exposeID('memberId'),
    organizationId: t.exposeID('organizationId'),
  }),
});

const SignUpResponse = builder.objectRef<auth.SignUpResponse>('SignUpResponse').implement({
  fields: (t) => ({
    organizationId: t.exposeID('organizationId'),
    memberId: t.exposeID('memberId'),
    email: t.exposeString('email'),
  }),
});

const SignUpInput = builder.inputType('SignUpInput', {
  fields: (t) => ({
    email: t.string({ required: true }),
    password: t.string({ required: true }),
    name: t.string({ required: true }),
    organizationName: t.string({ required: true }),
  }),
  validate: auth.signUpInput,
});
const LoginInput = builder.inputType('LoginInput', {
  fields: (t) => ({ email: t.string({ required: true }), password: t.string({ required: true }) }),
  validate: auth.loginInput,
});
const RefreshTokenInput = builder.inputType('RefreshTokenInput', {
  fields: (t) => ({ refreshToken: t.string({ required: true }) }),
  validate: refreshTokenInput,
});
export const RequestPasswordResetInput = builder.inputType('RequestPasswordResetInput', {
  fields: (t) => ({ email: t.string({ required: true }) }),
  validate: z.object({ email: auth.email }),
});
export const ResetPasswordInput = builder.inputType('ResetPasswordInput', {
  fields: (t) => ({ token: t.string({ required: true }), newPassword: t.string({ required: true }) }),
  validate: auth.resetPasswordInput,
});
const CreateApplicationInput = builder.inputType('CreateApplicationInput', {
  fields: (t) => ({ name: t.string({ required: true }) }),
  validate: z.object({ name: apps.applicationName }),
});
const SuspendInput = builder.inputType('SuspendInput', {
  fields: (t) => ({ reason: t.string({ required: true }) }),
  validate: z.object({ reason: apps.reason }),
});
const CreateEnvironmentInput = builder.inputType('CreateEnvironmentInput', {
  fields: (t) => ({ type: t.field({ type: EnvironmentType, required: true }), name: t.string() }),
  validate: z.object({ type: z.enum(['SANDBOX', 'PRODUCTION']), name: apps.applicationName.nullish() }),
});
const AddMemberInput = builder.inputType('AddMemberInput', {
  fields: (t) => ({
    email: t.string({ required: true }),
    name: t.string({ required: true }),
    role: t.field({ type: MemberRole, required: true, description: 'Any role but OWNER.' }),
  }),
  validate: addMemberInput,
});
const ChangeMemberRoleInput = builder.inputType('ChangeMemberRoleInput', {
  fields: (t) => ({ role: t.field({ type: MemberRole, required: true, description: 'Only an OWNER appoints or demotes an OWNER.' }) }),
  validate: changeRoleInput,
});
const RotateApiKeyInput = builder.inputType('RotateApiKeyInput', {
  fields: (t) => ({
    expiresInSeconds: t.int({ description: 'Seconds the previous key keeps working (0 to 604800; default 0: revoked at once).' }),
  }),
  validate: apps.rotateInput,
});

/**
 * The fields of Organization that need nothing of its row but its id: its own id and the
 * connections whose resolvers read `org.id` alone (each organization's connection: accounts,
 * withdrawalDestinations...). Add a field here only if its resolver reads no other column.
 */
const ORGANIZATION_ID_FIELDS = new Set([
  '__typename',
  'id',
  'accounts',
  'accountHolders',
  'accountHolderInvitations',
  'paymentIntents',
  'refunds',
  'settlements',
  'transactions',
  'wallets',
  'webhookEndpoints',
  'withdrawalDestinations',
  'withdrawals',
]);

/** Whether the field being resolved selects only fields of `allowed` (fragments followed). */
function selectsOnly(info: GraphQLResolveInfo, allowed: ReadonlySet<string>): boolean {
  const only = (set: SelectionSetNode | undefined): boolean =>
    !!set &&
    set.selections.every((s) =>
      s.kind === Kind.FIELD
        ? allowed.has(s.name.value)
        : s.kind === Kind.INLINE_FRAGMENT
          ? only(s.selectionSet)
          : only(info.fragments[s.name.value]?.selectionSet),
    );
  return info.fieldNodes.every((node) => only(node.selectionSet));
}

builder.queryFields((t) => ({
  viewer: t.prismaField({
    type: 'Member',
    description: 'The member of the session.',
    authScopes: { policy: policies.memberAny },
    resolve: async (query, _p, _a, ctx) => {
      const p = ctx.principal;
      if (p?.type !== 'member') throw notFound('Member');
      return ctx.deps.db.member.findUniqueOrThrow({ ...query, where: { id: p.memberId } });
    },
  }),
  organization: t.prismaField({
    type: 'Organization',
    description:
      "An organization: a member's or an API key's own, any for operators. Its connections carry their own policies (the REST list routes read them).",
    authScopes: { policy: organizationRead },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (query, _p, args, ctx, info) => {
      assertOrganization(ctx, String(args.id), 'Organization');
      // A member's or API key's own organization exists (read with the credential; organizations are
      // never deleted): when nothing of its row but the id is selected (a REST list route: one
      // connection under organization(id)), its row is not read again.
      if (ctx.principal?.type !== 'operator' && selectsOnly(info, ORGANIZATION_ID_FIELDS)) return { id: String(args.id) } as Organization;
      const org = await ctx.deps.db.organization.findUnique({ ...query, where: { id: String(args.id) } });
      if (!org) throw notFound('Organization');
      return org;
    },
  }),
  applications: t.prismaField({
    type: ['Application'],
    authScopes: { policy: policies.member('application-manage') },
    args: { organizationId: t.arg.id({ required: true }) },
    resolve: (query, _p, args, ctx) => {
      assertOrganization(ctx, String(args.organizationId), 'Organization');
      return ctx.deps.db.application.findMany({ ...query, where: { organizationId: String(args.organizationId) }, orderBy: { id: 'asc' } });
    },
  }),
  application: t.prismaField({
    type: 'Application',
    authScopes: { policy: policies.member('application-manage') },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (query, _p, args, ctx) => {
      const where = { id: assertId(String(args.id), 'Application'), ...ownOrganization(ctx, 'Application') };
      const app = await ctx.deps.db.application.findFirst({ ...query, where });
      if (!app) throw notFound('Application');
      return app;
    },
  }),
  environment: t.prismaField({
    type: 'Environment',
    description: 'An environment of an application (its apiKeys connection pages its keys).',
    authScopes: { policy: policies.member('application-manage') },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_query, _p, args, ctx) => loadEnvironment(ctx, String(args.id)),
  }),
}));

builder.mutationFields((t) => ({
  signUp: t.field({
    type: SignUpResponse,
    description: 'Creates an organization and its first member (OWNER). Same idempotencyKey and input: same answer.',
    authScopes: { policy: policies.public },
    args: { input: t.arg({ type: SignUpInput, required: true }), idempotencyKey: t.arg.string() },
    resolve: (_p, args, ctx) => auth.signUp(ctx, args.input as auth.SignUpInput, args.idempotencyKey),
  }),
  login: t.field({
    type: TokenResult,
    authScopes: { policy: policies.public },
    args: { input: t.arg({ type: LoginInput, required: true }) },
    resolve: async (_p, args, ctx) => asMemberTokens(await auth.login(ctx, args.input)),
  }),
  refreshToken: t.field({
    type: TokenResult,
    authScopes: { policy: policies.public },
    args: { input: t.arg({ type: RefreshTokenInput, required: true }) },
    resolve: async (_p, args, ctx) => asMemberTokens(await auth.refresh(ctx, args.input.refreshToken)),
  }),
  requestPasswordReset: t.boolean({
    description: 'Always true, whether or not the email is registered.',
    authScopes: { policy: policies.public },
    args: { input: t.arg({ type: RequestPasswordResetInput, required: true }) },
    resolve: async (_p, args, ctx) => {
      await auth.requestPasswordReset(ctx, args.input.email);
      return true;
    },
  }),
  confirmPasswordReset: t.boolean({
    authScopes: { policy: policies.public },
    args: { input: t.arg({ type: ResetPasswordInput, required: true }) },
    resolve: async (_p, args, ctx) => {
      await auth.confirmPasswordReset(ctx, args.input);
      return true;
    },
  }),
  logout: t.boolean({
    description: 'Ends the session of the access token: its refresh token and every access token of the session stop working at once. Always true.',
    authScopes: { policy: policies.memberAny },
    resolve: async (_p, _a, ctx) => {
      await logout(ctx);
      return true;
    },
  }),
  addMember: t.prismaField({
    type: 'Member',
    description: 'Adds a member; a set-password token is mailed to them (spend it with confirmPasswordReset).',
    authScopes: { policy: policies.member('member-manage') },
    args: { organizationId: t.arg.id({ required: true }), input: t.arg({ type: AddMemberInput, required: true }) },
    resolve: (_q, _p, args, ctx) => addMember(ctx, String(args.organizationId), args.input as never),
  }),
  removeMember: t.prismaField({
    type: 'Member',
    description:
      'Removes a member from the organization: their sessions, access tokens and subscriptions end at once. Only an ' +
      'OWNER removes an OWNER; the last OWNER cannot be removed (409).',
    authScopes: { policy: policies.member('member-manage') },
    args: { organizationId: t.arg.id({ required: true }), id: t.arg.id({ required: true }) },
    resolve: async (query, _p, args, ctx) => {
      const m = await removeMember(ctx, String(args.organizationId), String(args.id));
      return ctx.deps.db.member.findUniqueOrThrow({ ...query, where: { id: m.id } });
    },
  }),
  changeMemberRole: t.prismaField({
    type: 'Member',
    description:
      'Gives a member another role: their sessions, access tokens and subscriptions end at once (they log in again ' +
      'with the new permissions). The same role changes nothing. Only an OWNER appoints or demotes an OWNER; the ' +
      'last OWNER cannot be demoted (409).',
    authScopes: { policy: policies.member('member-manage') },
    args: { organizationId: t.arg.id({ required: true }), id: t.arg.id({ required: true }), input: t.arg({ type: ChangeMemberRoleInput, required: true }) },
    resolve: async (query, _p, args, ctx) => {
      const m = await changeMemberRole(ctx, String(args.organizationId), String(args.id), args.input.role);
      return ctx.deps.db.member.findUniqueOrThrow({ ...query, where: { id: m.id } });
    },
  }),
  createApplication: t.prismaField({
    type: 'Application',
    authScopes: { policy: policies.member('application-manage') },
    args: { organizationId: t.arg.id({ required: true }), input: t.arg({ type: CreateApplicationInput, required: true }) },
    resolve: (_q, _p, args, ctx) => apps.createApplication(ctx, String(args.organizationId), args.input),
  }),
  archiveApplication: t.prismaField({
    type: 'Application',
    description: 'Terminal: revokes every API key of the application.',
    authScopes: { policy: policies.member('application-manage') },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (query, _p, args, ctx) => {
      await apps.changeApplicationStatus(ctx, String(args.id), 'archive');
      return ctx.deps.db.application.findUniqueOrThrow({ ...query, where: { id: String(args.id) } });
    },
  }),
  suspendApplication: t.prismaField({
    type: 'Application',
    description: "Refuses the application's API keys until reactivated.",
    authScopes: { policy: policies.member('application-manage') },
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: SuspendInput, required: true }) },
    resolve: async (query, _p, args, ctx) => {
      await apps.changeApplicationStatus(ctx, String(args.id), 'suspend', args.input.reason);
      return ctx.deps.db.application.findUniqueOrThrow({ ...query, where: { id: String(args.id) } });
    },
  }),
  reactivateApplication: t.prismaField({
    type: 'Application',
    authScopes: { policy: policies.member('application-manage') },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (query, _p, args, ctx) => {
      await apps.changeApplicationStatus(ctx, String(args.id), 'reactivate');
      return ctx.deps.db.application.findUniqueOrThrow({ ...query, where: { id: String(args.id) } });
    },
  }),
  createEnvironment: t.prismaField({
    type: 'Environment',
    authScopes: { policy: policies.member('application-manage') },
    args: { applicationId: t.arg.id({ required: true }), input: t.arg({ type: CreateEnvironmentInput, required: true }) },
    resolve: (_q, _p, args, ctx) => apps.createEnvironment(ctx, String(args.applicationId), args.input),
  }),
  generateApiKey: t.field({
    type: GenerateApiKeyResult,
    authScopes: { policy: policies.member('api-key-manage') },
    args: { environmentId: t.arg.id({ required: true }) },
    resolve: (_p, args, ctx) => apps.generateApiKey(ctx, String(args.environmentId)),
  }),
  rotateApiKey: t.field({
    type: RotateApiKeyResult,
    authScopes: { policy: policies.member('api-key-manage') },
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: RotateApiKeyInput }) },
    resolve: (_p, args, ctx) => apps.rotateApiKey(ctx, String(args.id), args.input ?? {}),
  }),
  revokeApiKey: t.prismaField({
    type: 'ApiKey',
    authScopes: { policy: policies.member('api-key-manage') },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (query, _p, args, ctx) => {
      await apps.revokeApiKey(ctx, String(args.id));
      return ctx.deps.db.apiKey.findUniqueOrThrow({ ...query, where: { id: String(args.id) } });
    },
  }),
}));

function asMemberTokens(r: import('../auth/sessions').TokenResult): auth.TokenResultShape {
  if (!r.memberId || !r.organizationId) throw new DomainError('INTERNAL');
  return { ...r, memberId: r.memberId, organizationId: r.organizationId };
}
