import { z } from 'zod';
import {
  batchLoad,
  builder,
  createdWhere,
  creationArgs,
  restListSize,
  REST_LIST_MAX,
  groupBy,
  keysetConnection,
  NodeRef,
  registerNode,
  countedConnection,
} from '../builder';
import { balancesOfOwners } from '../ledger/ledger';
import { accountBalancesPolicy, LedgerBalance, LedgerEntry } from '../ledger/ledger.graphql';
import { Application } from '../tenancy/tenancy.graphql';
import { logout, refreshTokenInput } from '../auth/sessions';
import { policies } from '../auth/policy';
import { notFound } from '../errors';
import { EnvironmentType, RequestPasswordResetInput, ResetPasswordInput } from '../tenancy/tenancy.graphql';
import * as holders from './holders';
import * as invitations from './invitations';
import * as accounts from './accounts';
import type { AccountRow } from './accounts';

const AccountStatus = builder.enumType('AccountStatus', {
  description: 'ACTIVE -> FROZEN -> ACTIVE (unfreeze); ACTIVE -> CLOSED (terminal).',
  values: ['ACTIVE', 'FROZEN', 'CLOSED'] as const,
});
const RelationshipStatus = builder.enumType('RelationshipStatus', { values: ['ACTIVE', 'REVOKED'] as const });

export const Account = builder.prismaObject('Account', {
  description: 'A virtual account of an organization (OrganizationAccountResponse and AccountResponse).',
  interfaces: [NodeRef],
  fields: (t) => ({
    id: t.exposeID('id'),
    organizationId: t.exposeID('organizationId'),
    accountHolderId: t.exposeID('accountHolderId', { nullable: true }),
    name: t.exposeString('name'),
    reference: t.exposeString('reference', { nullable: true }),
    mode: t.expose('mode', { type: EnvironmentType }),
    status: t.expose('status', { type: AccountStatus }),
    frozenReason: t.exposeString('frozenReason', { nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
    closedAt: t.expose('closedAt', { type: 'DateTime', nullable: true }),
    authorizedApplicationIds: t.idList({
      description: 'Applications whose API keys may use the account.',
      resolve: async (a, _args, ctx) => {
        const loaded = (a as Partial<AccountRow>).authorizations;
        const rows =
          loaded ??
          (await ctx.deps.db.accountApplicationAuthorization.findMany({
            where: { accountId: a.id },
            select: { applicationId: true },
            orderBy: { createdAt: 'asc' },
          }));
        return rows.map((r) => r.applicationId);
      },
    }),
    holder: t.relation('accountHolder', { nullable: true, description: 'The account holder, when the account has one.' }),
    authorizedApplications: t.field({
      type: [Application],
      nullable: true,
      description: 'The applications whose API keys may use the account (members with application-manage; null for anyone else).',
      authScopes: { policy: policies.member('application-manage') },
      resolve: async (a, _args, ctx) =>
        (await batchLoad(ctx, 'Account.authorizedApplications', a.id, async (ids) => {
          const rows = await ctx.deps.db.accountApplicationAuthorization.findMany({
            where: { accountId: { in: ids } },
            include: { application: true },
            orderBy: { createdAt: 'asc' },
          });
          return new Map([...groupBy(rows, (r) => r.accountId)].map(([k, v]) => [k, v.map((r) => r.application)]));
        })) ?? [],
    }),
    balances: t.field({
      type: [LedgerBalance],
      nullable: true,
      description: 'The balances, one per asset-network (as accountBalances; members with account-read and operators, null for anyone else).',
      authScopes: { policy: accountBalancesPolicy },
      resolve: async (a, _args, ctx) => (await batchLoad(ctx, 'Account.balances', a.id, (ids) => balancesOfOwners(ctx.deps.db, 'CUSTOMER', ids))) ?? [],
    }),
    ledgerEntries: t.connection({
      type: LedgerEntry,
      nullable: true,
      description: "The entries of the account's ledger accounts, newest first (members with account-read and operators).",
      authScopes: { policy: accountBalancesPolicy },
      args: { ...creationArgs, assetNetworkId: t.arg.id() },
      resolve: (a, args, ctx) =>
        keysetConnection(args, (q) =>
          ctx.deps.db.ledgerEntry.findMany({
            where: {
              AND: [
                q.where,
                createdWhere(args),
                { ledgerAccount: { kind: 'CUSTOMER', ownerId: a.id } },
                args.assetNetworkId ? { assetNetworkId: String(args.assetNetworkId) } : {},
              ],
            },
            include: { ledgerTransaction: { select: { nature: true } } },
            orderBy: q.orderBy,
            take: q.take,
          }),
        ),
    }),
  }),
});

registerNode({ typename: 'Account', policy: policies.accountRead, load: (ctx, id) => accounts.loadVisibleAccount(ctx, id) });
registerNode({
  typename: 'AccountHolder',
  policy: { member: 'account-read', apiKey: true, accountHolder: true, operator: true },
  load: (ctx, id) => {
    const p = ctx.principal;
    if (p?.type === 'accountHolder') return p.accountHolderId === id ? ctx.deps.db.accountHolder.findUnique({ where: { id } }) : Promise.resolve(null);
    if (p?.type === 'operator') return ctx.deps.db.accountHolder.findUnique({ where: { id } });
    if (p?.type === 'member' || p?.type === 'apiKey')
      return ctx.deps.db.accountHolder.findFirst({ where: { id, relationships: { some: { organizationId: p.organizationId } } } });
    return Promise.resolve(null);
  },
});

const accountListPolicy = { member: 'account-read', apiKey: true } as const;

builder.prismaObjectField('Organization', 'accounts', (t) =>
  t.connection(
    {
      type: Account,
      nullable: true,
      description:
        "The organization's accounts, newest first (REST ListAccountsByOrganization reads it oldest first); an API key sees those of its mode authorized for its application.",
      authScopes: { policy: accountListPolicy },
      ...restListSize,
      args: { ...creationArgs, status: t.arg({ type: [AccountStatus] }), accountHolderId: t.arg.id() },
      resolve: (org, args, ctx) => {
        const visible = accounts.visibleWhere(ctx);
        const where = {
          AND: [
            visible ?? { id: { in: [] } },
            { organizationId: org.id },
            createdWhere(args),
            args.status?.length ? { status: { in: args.status } } : {},
            args.accountHolderId ? { accountHolderId: String(args.accountHolderId) } : {},
          ],
        };
        return keysetConnection(
          args,
          (q) => ctx.deps.db.account.findMany({ where: { AND: [...where.AND, q.where] }, include: accounts.include, orderBy: q.orderBy, take: q.take }),
          () => ctx.deps.db.account.count({ where }),
          REST_LIST_MAX,
        );
      },
    },
    countedConnection,
  ),
);

builder.prismaObjectField('Organization', 'accountHolders', (t) =>
  t.connection({
    type: AccountHolder,
    nullable: true,
    description: 'The account holders with a relationship with the organization (ACTIVE by default), newest first.',
    authScopes: { policy: policies.member('account-read') },
    args: { ...creationArgs, relationshipStatus: t.arg({ type: RelationshipStatus, description: 'Default ACTIVE.' }) },
    resolve: (org, args, ctx) =>
      keysetConnection(args, (q) =>
        ctx.deps.db.accountHolder.findMany({
          where: {
            AND: [q.where, createdWhere(args), { relationships: { some: { organizationId: org.id, status: args.relationshipStatus ?? 'ACTIVE' } } }],
          },
          orderBy: q.orderBy,
          take: q.take,
        }),
      ),
  }),
);

const AccountHolderInvitationStatus = builder.enumType('AccountHolderInvitationStatus', {
  description: 'PENDING: claimable. CLAIMED: spent. REVOKED: withdrawn by the organization (or with the relationship). EXPIRED: unclaimed past expiresAt.',
  values: ['PENDING', 'CLAIMED', 'REVOKED', 'EXPIRED'] as const,
});

const AccountHolderInvitation = builder.objectRef<invitations.InvitationRow>('AccountHolderInvitation').implement({
  description: 'An invitation of the organization, without its token (shown once, at creation).',
  fields: (t) => ({
    id: t.exposeID('id'),
    organizationId: t.exposeID('organizationId'),
    email: t.exposeString('email'),
    status: t.field({ type: AccountHolderInvitationStatus, resolve: (i, _a, ctx) => invitations.statusOf(i, ctx.deps.clock.now()) }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime' }),
    claimedAt: t.expose('claimedAt', { type: 'DateTime', nullable: true }),
    revokedAt: t.expose('revokedAt', { type: 'DateTime', nullable: true }),
    relationshipId: t.exposeID('relationshipId', { nullable: true, description: 'The relationship the claim created or reactivated.' }),
    createdByType: t.exposeString('createdByType', { description: 'MEMBER or API_KEY.' }),
    createdById: t.exposeID('createdById'),
  }),
});

builder.prismaObjectField('Organization', 'accountHolderInvitations', (t) =>
  t.connection({
    type: AccountHolderInvitation,
    nullable: true,
    description: 'Its account holder invitations in every status (never their tokens), newest first (REST ListAccountHolderInvitations reads it oldest first).',
    authScopes: { policy: policies.member('account-holder-manage') },
    ...restListSize,
    args: creationArgs,
    resolve: (org, args, ctx) =>
      keysetConnection(
        args,
        (q) =>
          ctx.deps.db.accountHolderInvitation.findMany({
            where: { AND: [q.where, { organizationId: org.id }, createdWhere(args)] },
            select: invitations.invitationSelect,
            orderBy: q.orderBy,
            take: q.take,
          }),
        undefined,
        REST_LIST_MAX,
      ),
  }),
);

const Relationship = builder.prismaObject('Relationship', {
  description: "An account holder's relationship with an organization, created by claiming an invitation.",
  fields: (t) => ({
    id: t.exposeID('id'),
    organizationId: t.exposeID('organizationId'),
    accountHolderId: t.exposeID('accountHolderId'),
    status: t.expose('status', { type: RelationshipStatus }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    revokedAt: t.expose('revokedAt', { type: 'DateTime', nullable: true }),
  }),
});

const AccountHolder = builder.prismaObject('AccountHolder', {
  description: 'An end customer (AccountHolderResponse).',
  interfaces: [NodeRef],
  fields: (t) => ({
    id: t.exposeID('id'),
    email: t.exposeString('email'),
    name: t.exposeString('name'),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    relationships: t.relation('relationships', { query: { orderBy: { id: 'asc' } } }),
    accounts: t.field({
      type: [Account],
      description: 'The accounts held, of organizations with an ACTIVE relationship only.',
      resolve: (h, _args, ctx) =>
        ctx.deps.db.account.findMany({
          where: { accountHolderId: h.id, organization: { relationships: { some: { accountHolderId: h.id, status: 'ACTIVE' } } } },
          include: accounts.include,
          orderBy: { id: 'asc' },
        }),
    }),
  }),
});

const AccountHolderTokenResult = builder.objectRef<holders.HolderTokenResult>('AccountHolderTokenResult').implement({
  description: 'Account holder session tokens. Send accessToken as "Authorization: Bearer <accessToken>".',
  fields: (t) => ({
    succeeded: t.exposeBoolean('succeeded'),
    tokenType: t.exposeString('tokenType'),
    accessToken: t.exposeString('accessToken'),
    accessTokenExpiresAt: t.expose('accessTokenExpiresAt', { type: 'DateTime' }),
    refreshToken: t.exposeString('refreshToken'),
    refreshTokenExpiresAt: t.expose('refreshTokenExpiresAt', { type: 'DateTime' }),
    accountHolderId: t.exposeID('accountHolderId'),
  }),
});

const CreateAccountHolderInvitationResult = builder.objectRef<invitations.CreatedInvitation>('CreateAccountHolderInvitationResult').implement({
  description: 'The invitation. token is the secret to hand to the invitee, returned this once and never again.',
  fields: (t) => ({
    invitationId: t.exposeID('invitationId'),
    organizationId: t.exposeID('organizationId'),
    email: t.exposeString('email'),
    token: t.exposeString('token'),
    expiresAt: t.expose('expiresAt', { type: 'DateTime' }),
  }),
});

const ClaimAccountHolderInvitationResult = builder.objectRef<invitations.ClaimResult>('ClaimAccountHolderInvitationResult').implement({
  fields: (t) => ({
    relationshipId: t.exposeID('relationshipId'),
    organizationId: t.exposeID('organizationId'),
    accountHolderId: t.exposeID('accountHolderId'),
  }),
});

const SignUpAndClaimAccountHolderInvitationResult = builder
  .objectRef<invitations.SignUpAndClaimResult>('SignUpAndClaimAccountHolderInvitationResult')
  .implement({
    fields: (t) => ({
      relationshipId: t.exposeID('relationshipId'),
      organizationId: t.exposeID('organizationId'),
      accountHolderId: t.exposeID('accountHolderId'),
      tokens: t.field({ type: AccountHolderTokenResult, resolve: (r) => r.tokens }),
    }),
  });

const CreateAccountHolderInvitationInput = builder.inputType('CreateAccountHolderInvitationInput', {
  fields: (t) => ({
    email: t.string({ required: true }),
    expiresInSeconds: t.int({ description: 'Seconds the invitation can be claimed: 3600 to 2592000 (30 days); default 604800 (7 days).' }),
  }),
  validate: invitations.createInvitationInput,
});
const SignUpAccountHolderInput = builder.inputType('SignUpAccountHolderInput', {
  fields: (t) => ({ email: t.string({ required: true }), password: t.string({ required: true }), name: t.string({ required: true }) }),
  validate: holders.signUpHolderInput,
});
const LoginAccountHolderInput = builder.inputType('LoginAccountHolderInput', {
  fields: (t) => ({ email: t.string({ required: true }), password: t.string({ required: true }) }),
  validate: holders.loginHolderInput,
});
const RefreshAccountHolderTokenInput = builder.inputType('RefreshAccountHolderTokenInput', {
  fields: (t) => ({ refreshToken: t.string({ required: true }) }),
  validate: refreshTokenInput,
});
const ClaimAccountHolderInvitationInput = builder.inputType('ClaimAccountHolderInvitationInput', {
  fields: (t) => ({ token: t.string({ required: true }) }),
  validate: invitations.claimInput,
});
const SignUpAndClaimAccountHolderInvitationInput = builder.inputType('SignUpAndClaimAccountHolderInvitationInput', {
  fields: (t) => ({
    token: t.string({ required: true }),
    email: t.string({ required: true }),
    password: t.string({ required: true }),
    name: t.string({ required: true }),
  }),
  validate: invitations.signUpAndClaimInput,
});
const CreateAccountInput = builder.inputType('CreateAccountInput', {
  fields: (t) => ({
    name: t.string({ required: true }),
    reference: t.string({ description: "The integrator's own reference, unique within the organization." }),
    accountHolderId: t.id({ description: 'An account holder with an ACTIVE relationship with the organization.' }),
    mode: t.field({ type: EnvironmentType, description: "A member's choice (default PRODUCTION); an API key always creates in its own mode." }),
  }),
  validate: accounts.createAccountInput,
});
const AuthorizeApplicationInput = builder.inputType('AuthorizeApplicationInput', {
  fields: (t) => ({ applicationId: t.id({ required: true }) }),
});
const FreezeAccountInput = builder.inputType('FreezeAccountInput', {
  fields: (t) => ({ reason: t.string({ required: true }) }),
  validate: z.object({ reason: accounts.freezeReason }),
});

builder.queryFields((t) => ({
  accountHolderMe: t.prismaField({
    type: 'AccountHolder',
    description: 'The account holder of the session.',
    authScopes: { policy: policies.accountHolder },
    resolve: async (query, _p, _a, ctx) => {
      const p = ctx.principal;
      if (p?.type !== 'accountHolder') throw notFound('Account holder');
      const holder = await ctx.deps.db.accountHolder.findUnique({ ...query, where: { id: p.accountHolderId } });
      if (!holder) throw notFound('Account holder');
      return holder;
    },
  }),
  account: t.field({
    type: Account,
    authScopes: { policy: policies.accountRead },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_p, args, ctx) => accounts.loadVisibleAccount(ctx, String(args.id)),
  }),
}));

builder.mutationFields((t) => ({
  createAccountHolderInvitation: t.field({
    type: CreateAccountHolderInvitationResult,
    authScopes: { policy: policies.memberOrApiKey('account-holder-manage') },
    args: { organizationId: t.arg.id({ required: true }), input: t.arg({ type: CreateAccountHolderInvitationInput, required: true }) },
    resolve: (_p, args, ctx) => invitations.createInvitation(ctx, String(args.organizationId), args.input),
  }),
  revokeAccountHolderInvitation: t.field({
    type: AccountHolderInvitation,
    description: 'Withdraws an unclaimed invitation: its token answers INVALID_TOKEN from now on. 409 when claimed or already revoked.',
    authScopes: { policy: policies.member('account-holder-manage') },
    args: { organizationId: t.arg.id({ required: true }), id: t.arg.id({ required: true }) },
    resolve: (_p, args, ctx) => invitations.revokeInvitation(ctx, String(args.organizationId), String(args.id)),
  }),
  revokeRelationship: t.field({
    type: Relationship,
    description:
      "ACTIVE -> REVOKED: the holder loses access to the organization's accounts, and the organization's unclaimed invitations to the holder are revoked.",
    authScopes: { policy: policies.member('account-holder-manage') },
    args: { organizationId: t.arg.id({ required: true }), id: t.arg.id({ required: true }) },
    resolve: (_p, args, ctx) => invitations.revokeRelationship(ctx, String(args.organizationId), String(args.id)),
  }),
  signUpAccountHolder: t.field({
    type: AccountHolderTokenResult,
    authScopes: { policy: policies.public },
    args: { input: t.arg({ type: SignUpAccountHolderInput, required: true }) },
    resolve: (_p, args, ctx) => holders.signUp(ctx, args.input),
  }),
  loginAccountHolder: t.field({
    type: AccountHolderTokenResult,
    authScopes: { policy: policies.public },
    args: { input: t.arg({ type: LoginAccountHolderInput, required: true }) },
    resolve: (_p, args, ctx) => holders.login(ctx, args.input),
  }),
  refreshAccountHolderToken: t.field({
    type: AccountHolderTokenResult,
    authScopes: { policy: policies.public },
    args: { input: t.arg({ type: RefreshAccountHolderTokenInput, required: true }) },
    resolve: (_p, args, ctx) => holders.refresh(ctx, args.input.refreshToken),
  }),
  logoutAccountHolder: t.boolean({
    description: 'Ends the session of the access token: its refresh token and every access token of the session stop working at once. Always true.',
    authScopes: { policy: policies.accountHolder },
    resolve: async (_p, _a, ctx) => {
      await logout(ctx);
      return true;
    },
  }),
  requestAccountHolderPasswordReset: t.boolean({
    description: 'Mails a reset token when the email belongs to an account holder. Always true, whether or not it does.',
    authScopes: { policy: policies.public },
    args: { input: t.arg({ type: RequestPasswordResetInput, required: true }) },
    resolve: async (_p, args, ctx) => {
      await holders.requestPasswordReset(ctx, args.input.email);
      return true;
    },
  }),
  confirmAccountHolderPasswordReset: t.boolean({
    description: "Sets a new password with a mailed reset token; ends the holder's sessions and older access tokens.",
    authScopes: { policy: policies.public },
    args: { input: t.arg({ type: ResetPasswordInput, required: true }) },
    resolve: async (_p, args, ctx) => {
      await holders.confirmPasswordReset(ctx, args.input);
      return true;
    },
  }),
  claimAccountHolderInvitation: t.field({
    type: ClaimAccountHolderInvitationResult,
    authScopes: { policy: policies.accountHolder },
    args: { input: t.arg({ type: ClaimAccountHolderInvitationInput, required: true }) },
    resolve: (_p, args, ctx) => invitations.claim(ctx, args.input.token),
  }),
  signUpAndClaimAccountHolderInvitation: t.field({
    type: SignUpAndClaimAccountHolderInvitationResult,
    description: 'Signs up and claims the invitation in one transaction.',
    authScopes: { policy: policies.public },
    args: { input: t.arg({ type: SignUpAndClaimAccountHolderInvitationInput, required: true }) },
    resolve: (_p, args, ctx) => invitations.signUpAndClaim(ctx, args.input),
  }),
  createAccount: t.field({
    type: Account,
    description: 'Same idempotencyKey and input: same account; same key with another input: 409.',
    authScopes: { policy: policies.memberOrApiKey('account-manage') },
    args: {
      organizationId: t.arg.id({ required: true }),
      input: t.arg({ type: CreateAccountInput, required: true }),
      idempotencyKey: t.arg.string(),
    },
    resolve: (_p, args, ctx) =>
      accounts.createAccount(
        ctx,
        String(args.organizationId),
        { ...args.input, accountHolderId: args.input.accountHolderId == null ? args.input.accountHolderId : String(args.input.accountHolderId) },
        args.idempotencyKey,
      ),
  }),
  authorizeAccountForApplication: t.field({
    type: Account,
    description: "Lets the application's API keys (of the account's mode) use the account. Authorizing twice changes nothing.",
    authScopes: { policy: policies.member('account-manage') },
    args: {
      organizationId: t.arg.id({ required: true }),
      id: t.arg.id({ required: true }),
      input: t.arg({ type: AuthorizeApplicationInput, required: true }),
    },
    resolve: (_p, args, ctx) => accounts.authorizeApplication(ctx, String(args.organizationId), String(args.id), String(args.input.applicationId)),
  }),
  freezeAccount: t.field({
    type: Account,
    description: 'ACTIVE -> FROZEN, with a reason.',
    authScopes: { policy: policies.member('account-manage') },
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: FreezeAccountInput, required: true }) },
    resolve: (_p, args, ctx) => accounts.changeAccountStatus(ctx, String(args.id), 'freeze', args.input.reason),
  }),
  unfreezeAccount: t.field({
    type: Account,
    description: 'FROZEN -> ACTIVE.',
    authScopes: { policy: policies.member('account-manage') },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_p, args, ctx) => accounts.changeAccountStatus(ctx, String(args.id), 'unfreeze'),
  }),
  closeAccount: t.field({
    type: Account,
    description: 'ACTIVE -> CLOSED, terminal. A frozen account must be unfrozen first.',
    authScopes: { policy: policies.member('account-manage') },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_p, args, ctx) => accounts.changeAccountStatus(ctx, String(args.id), 'close'),
  }),
}));
