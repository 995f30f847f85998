import { policies, type Policy } from '../src/auth/policy';

/**
 * The REST contract: every /v1 route of the spec (and our documented extensions), each mapped
 * onto one named GraphQL operation in rest/operations/<operation>.graphql. The router, the
 * OpenAPI document (GET /v1/openapi.json), the principal matrix and the contract tests are all
 * generated from this table. A route without `operation` is specified but not built yet: it
 * authenticates and authorizes, then answers 501.
 *
 * Mappings are declarative so they can be documented:
 * - variables: GraphQL variable -> 'path.<param>' | 'query.<param>' | 'header.<name>' | 'body'
 * - success.body: dot path into the operation's data that becomes the JSON body
 * - success.location: a template filled from data, e.g. '/v1/accounts/{createAccount.id}'
 * - success.nextCursor: dot path of the next page's cursor, sent as a Link rel="next" header
 */
export type Source = `path.${string}` | `query.${string}` | `header.${string}` | 'body';

export interface Route {
  operationId: string;
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  summary: string;
  tag: string;
  policy: Policy;
  /** Not in the spec: a documented extension of ours. */
  extension?: true;
  operation?: string;
  variables?: Record<string, Source>;
  /** Whether the route takes a JSON body: required, optional, or none (default). */
  body?: 'required' | 'optional';
  success: { status: 200 | 201 | 204; body?: string; location?: string; nextCursor?: string };
  /** Statuses the route documents besides success and the generic ones (400, 401, 403, 429, 500). */
  errors?: number[];
  /** 401 bodies shaped like TokenResult (the spec's Login and RefreshToken). */
  tokenResultOn401?: true;
  /**
   * The spec's schema names (api-v1.md, "Named schemas") for the OpenAPI components of the
   * request body and of the success body (of each item, for a list). Without one, a component
   * takes its GraphQL type's name, and a success body of `{ id }` alone is `CreatedResourceResponse`.
   */
  schemas?: { request?: string; response?: string };
}

const pending = (r: Omit<Route, 'success'> & { success?: Route['success'] }): Route => ({ success: { status: 200 }, ...r });

export const routes: Route[] = [
  // Account holders
  {
    operationId: 'CreateAccountHolderInvitation', operation: 'CreateAccountHolderInvitation', method: 'POST', path: '/v1/organizations/{organizationId}/account-holder-invitations',
    summary: 'Invite an end customer to the organization', tag: 'Account holders', policy: policies.memberOrApiKey('account-holder-manage'),
    body: 'required', variables: { organizationId: 'path.organizationId', input: 'body' },
    success: { status: 201, body: 'createAccountHolderInvitation' }, errors: [404],
    schemas: { request: 'CreateAccountHolderInvitationRequest', response: 'CreateAccountHolderInvitationResult' },
  },
  {
    operationId: 'RevokeRelationship', operation: 'RevokeRelationship', method: 'POST', path: '/v1/organizations/{organizationId}/relationships/{relationshipId}/revoke',
    summary: "End an account holder's relationship with the organization", tag: 'Account holders', policy: policies.member('account-holder-manage'),
    variables: { organizationId: 'path.organizationId', id: 'path.relationshipId' },
    success: { status: 204 }, errors: [404, 409],
  },
  {
    operationId: 'ListAccountHolderInvitations', operation: 'ListAccountHolderInvitations', method: 'GET', path: '/v1/organizations/{organizationId}/account-holder-invitations', extension: true,
    summary: "List the organization's invitations, in every status (never their tokens)", tag: 'Account holders', policy: policies.member('account-holder-manage'),
    variables: { organizationId: 'path.organizationId', limit: 'query.limit', after: 'query.after' },
    success: { status: 200, body: 'accountHolderInvitations.items', nextCursor: 'accountHolderInvitations.nextCursor' }, errors: [404],
  },
  {
    operationId: 'RevokeAccountHolderInvitation', operation: 'RevokeAccountHolderInvitation', method: 'POST', path: '/v1/organizations/{organizationId}/account-holder-invitations/{invitationId}/revoke', extension: true,
    summary: 'Withdraw an unclaimed invitation (its token is refused from then on)', tag: 'Account holders', policy: policies.member('account-holder-manage'),
    variables: { organizationId: 'path.organizationId', id: 'path.invitationId' },
    success: { status: 204 }, errors: [404, 409],
  },
  {
    operationId: 'SignUpAccountHolder', operation: 'SignUpAccountHolder', method: 'POST', path: '/v1/account-holders/signup',
    summary: 'Sign up as an account holder', tag: 'Account holders', policy: policies.public,
    body: 'required', variables: { input: 'body' },
    success: { status: 200, body: 'signUpAccountHolder' }, errors: [409],
    schemas: { request: 'SignUpAccountHolderRequest' },
  },
  {
    operationId: 'LoginAccountHolder', operation: 'LoginAccountHolder', method: 'POST', path: '/v1/account-holders/login',
    summary: 'Log in as an account holder', tag: 'Account holders', policy: policies.public,
    body: 'required', variables: { input: 'body' },
    success: { status: 200, body: 'loginAccountHolder' }, errors: [401],
    schemas: { request: 'LoginAccountHolderRequest' },
  },
  {
    operationId: 'RefreshAccountHolderToken', operation: 'RefreshAccountHolderToken', method: 'POST', path: '/v1/account-holders/refresh', extension: true,
    summary: 'Renew an account holder session (rotates the refresh token)', tag: 'Account holders', policy: policies.public,
    body: 'required', variables: { input: 'body' },
    success: { status: 200, body: 'refreshAccountHolderToken' }, errors: [401],
  },
  {
    operationId: 'LogoutAccountHolder', operation: 'LogoutAccountHolder', method: 'POST', path: '/v1/account-holders/logout', extension: true,
    summary: "End the account holder's session (its refresh and access tokens)", tag: 'Account holders', policy: policies.accountHolder,
    success: { status: 204 },
  },
  {
    operationId: 'RequestAccountHolderPasswordReset', operation: 'RequestAccountHolderPasswordReset', method: 'POST', path: '/v1/account-holders/password-reset/request', extension: true,
    summary: 'Mail an account holder a password reset token', tag: 'Account holders', policy: policies.public,
    body: 'required', variables: { input: 'body' }, success: { status: 204 },
  },
  {
    operationId: 'ConfirmAccountHolderPasswordReset', operation: 'ConfirmAccountHolderPasswordReset', method: 'POST', path: '/v1/account-holders/password-reset/confirm', extension: true,
    summary: 'Set a new account holder password with a reset token', tag: 'Account holders', policy: policies.public,
    body: 'required', variables: { input: 'body' }, success: { status: 204 },
  },
  {
    operationId: 'GetAccountHolderMe', operation: 'GetAccountHolderMe', method: 'GET', path: '/v1/account-holders/me',
    summary: 'The account holder of the session', tag: 'Account holders', policy: policies.accountHolder,
    success: { status: 200, body: 'accountHolderMe' }, errors: [404],
    schemas: { response: 'AccountHolderResponse' },
  },
  {
    operationId: 'ClaimAccountHolderInvitation', operation: 'ClaimAccountHolderInvitation', method: 'POST', path: '/v1/account-holders/invitations/claim',
    summary: 'Claim an invitation as the logged-in account holder', tag: 'Account holders', policy: policies.accountHolder,
    body: 'required', variables: { input: 'body' },
    success: { status: 200, body: 'claimAccountHolderInvitation' }, errors: [409],
    schemas: { request: 'ClaimAccountHolderInvitationRequest', response: 'ClaimAccountHolderInvitationResult' },
  },
  {
    operationId: 'SignUpAndClaimAccountHolderInvitation', operation: 'SignUpAndClaimAccountHolderInvitation', method: 'POST', path: '/v1/account-holders/invitations/signup-and-claim',
    summary: 'Sign up and claim an invitation in one step', tag: 'Account holders', policy: policies.public,
    body: 'required', variables: { input: 'body' },
    success: { status: 200, body: 'signUpAndClaimAccountHolderInvitation' }, errors: [409],
    schemas: { request: 'SignUpAndClaimAccountHolderInvitationRequest', response: 'SignUpAndClaimAccountHolderInvitationResult' },
  },

  // Accounts
  {
    operationId: 'CreateAccount', operation: 'CreateAccount', method: 'POST', path: '/v1/organizations/{organizationId}/accounts',
    summary: 'Create a virtual account', tag: 'Accounts', policy: policies.memberOrApiKey('account-manage'),
    body: 'required',
    variables: { organizationId: 'path.organizationId', input: 'body', idempotencyKey: 'header.idempotency-key' },
    success: { status: 201, location: '/v1/accounts/{createAccount.id}' }, errors: [404, 409],
    schemas: { request: 'CreateAccountRequest' },
  },
  {
    operationId: 'ListAccountsByOrganization', operation: 'ListAccountsByOrganization', method: 'GET', path: '/v1/organizations/{organizationId}/accounts',
    summary: "List the organization's accounts (an API key sees the accounts authorized for its application)", tag: 'Accounts',
    policy: { member: 'account-read', apiKey: true },
    variables: { organizationId: 'path.organizationId', limit: 'query.limit', after: 'query.after' },
    success: { status: 200, body: 'accounts.items', nextCursor: 'accounts.nextCursor' }, errors: [404],
    schemas: { response: 'OrganizationAccountResponse' },
  },
  {
    operationId: 'AuthorizeAccountForApplication', operation: 'AuthorizeAccountForApplication', method: 'POST', path: '/v1/organizations/{organizationId}/accounts/{accountId}/authorize-application',
    summary: "Let an application's API keys use the account", tag: 'Accounts', policy: policies.member('account-manage'),
    body: 'required',
    variables: { organizationId: 'path.organizationId', id: 'path.accountId', input: 'body' }, success: { status: 204 }, errors: [404, 409],
    schemas: { request: 'AuthorizeApplicationRequest' },
  },
  {
    operationId: 'GetAccount', operation: 'GetAccount', method: 'GET', path: '/v1/accounts/{accountId}',
    summary: 'Get an account', tag: 'Accounts', policy: policies.accountRead,
    variables: { id: 'path.accountId' }, success: { status: 200, body: 'account' }, errors: [404],
    schemas: { response: 'AccountResponse' },
  },
  {
    operationId: 'CloseAccount', operation: 'CloseAccount', method: 'DELETE', path: '/v1/accounts/{accountId}',
    summary: 'Close an account (terminal)', tag: 'Accounts', policy: policies.member('account-manage'),
    variables: { id: 'path.accountId' }, success: { status: 204 }, errors: [404, 409],
  },
  {
    operationId: 'FreezeAccount', operation: 'FreezeAccount', method: 'POST', path: '/v1/accounts/{accountId}/freeze',
    summary: 'Freeze an account, with a reason', tag: 'Accounts', policy: policies.member('account-manage'),
    body: 'required', variables: { id: 'path.accountId', input: 'body' }, success: { status: 204 }, errors: [404, 409],
    schemas: { request: 'FreezeAccountRequest' },
  },
  {
    operationId: 'UnfreezeAccount', operation: 'UnfreezeAccount', method: 'POST', path: '/v1/accounts/{accountId}/unfreeze',
    summary: 'Unfreeze an account', tag: 'Accounts', policy: policies.member('account-manage'),
    variables: { id: 'path.accountId' }, success: { status: 204 }, errors: [404, 409],
  },
  {
    operationId: 'GetAccountBalances', operation: 'GetAccountBalances', method: 'GET', path: '/v1/accounts/{accountId}/balances', extension: true,
    summary: "An account's balances per asset-network: posted, pending and available (base units)", tag: 'Accounts', policy: { member: 'account-read', operator: true },
    variables: { accountId: 'path.accountId' }, success: { status: 200, body: 'accountBalances' }, errors: [404],
  },

  // API keys, applications, environments
  {
    operationId: 'CreateApplication', method: 'POST', path: '/v1/organizations/{organizationId}/applications', extension: true,
    summary: 'Create an application', tag: 'Applications', policy: policies.member('application-manage'),
    operation: 'CreateApplication', body: 'required', variables: { organizationId: 'path.organizationId', input: 'body' },
    success: { status: 201, body: 'createApplication', location: '/v1/applications/{createApplication.id}' }, errors: [404],
  },
  {
    operationId: 'ListApplications', method: 'GET', path: '/v1/organizations/{organizationId}/applications', extension: true,
    summary: "List the organization's applications", tag: 'Applications', policy: policies.member('application-manage'),
    operation: 'ListApplications', variables: { organizationId: 'path.organizationId' }, success: { status: 200, body: 'applications' }, errors: [404],
  },
  {
    operationId: 'GetApplication', method: 'GET', path: '/v1/applications/{applicationId}', extension: true,
    summary: 'Get an application', tag: 'Applications', policy: policies.member('application-manage'),
    operation: 'GetApplication', variables: { id: 'path.applicationId' }, success: { status: 200, body: 'application' }, errors: [404],
  },
  {
    operationId: 'GenerateApiKey', method: 'POST', path: '/v1/environments/{environmentId}/api-keys',
    summary: 'Generate an API key (the secret is shown once)', tag: 'API keys', policy: policies.member('api-key-manage'),
    operation: 'GenerateApiKey', variables: { environmentId: 'path.environmentId' }, success: { status: 201, body: 'generateApiKey' }, errors: [404, 409],
    schemas: { response: 'GenerateApiKeyResult' },
  },
  {
    operationId: 'ListApiKeys', method: 'GET', path: '/v1/environments/{environmentId}/api-keys',
    summary: "List an environment's API keys (never their secrets)", tag: 'API keys', policy: policies.member('api-key-manage'),
    operation: 'ListApiKeys', variables: { environmentId: 'path.environmentId', limit: 'query.limit', after: 'query.after' },
    success: { status: 200, body: 'apiKeyPage.items', nextCursor: 'apiKeyPage.nextCursor' }, errors: [404],
    schemas: { response: 'ApiKeyMetadataResponse' },
  },
  {
    operationId: 'RotateApiKey', method: 'POST', path: '/v1/api-keys/{apiKeyId}/rotate',
    summary: 'Replace an API key, optionally keeping the old one for a grace period', tag: 'API keys', policy: policies.member('api-key-manage'),
    operation: 'RotateApiKey', body: 'optional', variables: { id: 'path.apiKeyId', input: 'body' }, success: { status: 200, body: 'rotateApiKey' }, errors: [404, 409],
    schemas: { request: 'RotateApiKeyRequest', response: 'RotateApiKeyResult' },
  },
  {
    operationId: 'RevokeApiKey', method: 'DELETE', path: '/v1/api-keys/{apiKeyId}',
    summary: 'Revoke an API key at once', tag: 'API keys', policy: policies.member('api-key-manage'),
    operation: 'RevokeApiKey', variables: { id: 'path.apiKeyId' }, success: { status: 204 }, errors: [404, 409],
  },
  {
    operationId: 'CreateEnvironment', method: 'POST', path: '/v1/applications/{applicationId}/environments',
    summary: 'Create the sandbox or production environment of an application', tag: 'Applications', policy: policies.member('application-manage'),
    operation: 'CreateEnvironment', body: 'required', variables: { applicationId: 'path.applicationId', input: 'body' },
    success: { status: 201, body: 'createEnvironment' }, errors: [404, 409],
    schemas: { request: 'CreateEnvironmentRequest' },
  },
  {
    operationId: 'ListEnvironments', method: 'GET', path: '/v1/applications/{applicationId}/environments',
    summary: "List an application's environments", tag: 'Applications', policy: policies.member('application-manage'),
    operation: 'ListEnvironments', variables: { applicationId: 'path.applicationId', limit: 'query.limit', after: 'query.after' },
    success: { status: 200, body: 'environmentPage.items', nextCursor: 'environmentPage.nextCursor' }, errors: [404],
    schemas: { response: 'EnvironmentResponse' },
  },
  {
    operationId: 'ArchiveApplication', method: 'POST', path: '/v1/applications/{applicationId}/archive',
    summary: 'Archive an application (terminal; revokes its keys)', tag: 'Applications', policy: policies.member('application-manage'),
    operation: 'ArchiveApplication', variables: { id: 'path.applicationId' }, success: { status: 204 }, errors: [404, 409],
  },
  {
    operationId: 'SuspendApplication', method: 'POST', path: '/v1/applications/{applicationId}/suspend',
    summary: "Suspend an application: its keys are refused until reactivated", tag: 'Applications', policy: policies.member('application-manage'),
    operation: 'SuspendApplication', body: 'required', variables: { id: 'path.applicationId', input: 'body' }, success: { status: 204 }, errors: [404, 409],
    schemas: { request: 'SuspendRequest' },
  },
  {
    operationId: 'ReactivateApplication', method: 'POST', path: '/v1/applications/{applicationId}/reactivate',
    summary: 'Reactivate a suspended application', tag: 'Applications', policy: policies.member('application-manage'),
    operation: 'ReactivateApplication', variables: { id: 'path.applicationId' }, success: { status: 204 }, errors: [404, 409],
  },

  // Members (the spec leaves member endpoints open: extensions)
  {
    operationId: 'RemoveMember', operation: 'RemoveMember', method: 'DELETE', path: '/v1/organizations/{organizationId}/members/{memberId}', extension: true,
    summary: "Remove a member: their sessions, access tokens and subscriptions end at once", tag: 'Members', policy: policies.member('member-manage'),
    variables: { organizationId: 'path.organizationId', id: 'path.memberId' },
    success: { status: 204 }, errors: [404, 409],
  },
  {
    operationId: 'ChangeMemberRole', operation: 'ChangeMemberRole', method: 'PUT', path: '/v1/organizations/{organizationId}/members/{memberId}/role', extension: true,
    summary: "Set a member's role: their sessions, access tokens and subscriptions end at once", tag: 'Members', policy: policies.member('member-manage'),
    body: 'required', variables: { organizationId: 'path.organizationId', id: 'path.memberId', input: 'body' },
    success: { status: 200, body: 'changeMemberRole' }, errors: [404, 409],
  },

  // Member authentication
  {
    operationId: 'Login', method: 'POST', path: '/v1/auth/login', summary: 'Member login', tag: 'Member authentication', policy: policies.public,
    operation: 'Login', body: 'required', variables: { input: 'body' }, success: { status: 200, body: 'login' }, errors: [401], tokenResultOn401: true,
    schemas: { request: 'LoginRequest', response: 'TokenResult' },
  },
  {
    operationId: 'RefreshToken', method: 'POST', path: '/v1/auth/refresh', summary: 'Renew a member session (rotates the refresh token)',
    tag: 'Member authentication', policy: policies.public,
    operation: 'RefreshToken', body: 'required', variables: { input: 'body' }, success: { status: 200, body: 'refreshToken' }, errors: [401], tokenResultOn401: true,
    schemas: { request: 'RefreshTokenRequest', response: 'TokenResult' },
  },
  {
    operationId: 'Logout', method: 'POST', path: '/v1/auth/logout', summary: "End the member's session (its refresh and access tokens)",
    tag: 'Member authentication', policy: policies.memberAny, extension: true,
    operation: 'Logout', success: { status: 204 },
  },
  {
    operationId: 'RequestPasswordReset', method: 'POST', path: '/v1/auth/password-reset/request', summary: 'Mail a password reset token',
    tag: 'Member authentication', policy: policies.public,
    operation: 'RequestPasswordReset', body: 'required', variables: { input: 'body' }, success: { status: 204 },
    schemas: { request: 'RequestPasswordResetRequest' },
  },
  {
    operationId: 'ConfirmPasswordReset', method: 'POST', path: '/v1/auth/password-reset/confirm', summary: 'Set a new password with a reset token',
    tag: 'Member authentication', policy: policies.public,
    operation: 'ConfirmPasswordReset', body: 'required', variables: { input: 'body' }, success: { status: 204 },
    schemas: { request: 'ResetPasswordRequest' },
  },
  {
    operationId: 'SignUp', method: 'POST', path: '/v1/auth/signup', summary: 'Create an organization and its owner',
    tag: 'Member authentication', policy: policies.public,
    operation: 'SignUp', body: 'required', variables: { input: 'body', idempotencyKey: 'header.idempotency-key' },
    success: { status: 201, body: 'signUp' }, errors: [409],
    schemas: { request: 'SignUpRequest', response: 'SignUpResponse' },
  },

  // Asset and network catalog (issue: money in)
  {
    operationId: 'ListAssets', operation: 'ListAssets', method: 'GET', path: '/v1/assets', summary: 'List assets', tag: 'Catalog', policy: policies.catalogRead,
    success: { status: 200, body: 'assets' },
    schemas: { response: 'AssetResponse' },
  },
  {
    operationId: 'GetAsset', operation: 'GetAsset', method: 'GET', path: '/v1/assets/{assetId}', summary: 'Get an asset', tag: 'Catalog', policy: policies.catalogRead,
    variables: { id: 'path.assetId' }, success: { status: 200, body: 'asset' }, errors: [404],
    schemas: { response: 'AssetResponse' },
  },
  {
    operationId: 'ListNetworks', operation: 'ListNetworks', method: 'GET', path: '/v1/networks', summary: 'List networks', tag: 'Catalog', policy: policies.catalogRead,
    success: { status: 200, body: 'networks' },
    schemas: { response: 'NetworkResponse' },
  },
  {
    operationId: 'GetNetwork', operation: 'GetNetwork', method: 'GET', path: '/v1/networks/{networkId}', summary: 'Get a network', tag: 'Catalog', policy: policies.catalogRead,
    variables: { id: 'path.networkId' }, success: { status: 200, body: 'network' }, errors: [404],
    schemas: { response: 'NetworkResponse' },
  },
  {
    operationId: 'ListAssetNetworks', operation: 'ListAssetNetworks', method: 'GET', path: '/v1/asset-networks', summary: 'List asset-networks (filter: status)', tag: 'Catalog',
    policy: policies.catalogRead, variables: { status: 'query.status' }, success: { status: 200, body: 'assetNetworks' },
    schemas: { response: 'AssetNetworkResponse' },
  },
  {
    operationId: 'GetAssetNetwork', operation: 'GetAssetNetwork', method: 'GET', path: '/v1/asset-networks/{assetNetworkId}', summary: 'Get an asset-network', tag: 'Catalog',
    policy: policies.catalogRead, variables: { id: 'path.assetNetworkId' }, success: { status: 200, body: 'assetNetwork' }, errors: [404],
    schemas: { response: 'AssetNetworkResponse' },
  },
  {
    operationId: 'CreateAsset', operation: 'CreateAsset', method: 'POST', path: '/v1/platform/assets', summary: 'Create an asset', tag: 'Platform', policy: policies.operator,
    body: 'required', variables: { input: 'body' }, success: { status: 201, body: 'createAsset', location: '/v1/assets/{createAsset.id}' }, errors: [409],
    schemas: { request: 'CreateAssetRequest' },
  },
  {
    operationId: 'CreateNetwork', operation: 'CreateNetwork', method: 'POST', path: '/v1/platform/networks', summary: 'Create a network', tag: 'Platform', policy: policies.operator,
    body: 'required', variables: { input: 'body' }, success: { status: 201, body: 'createNetwork', location: '/v1/networks/{createNetwork.id}' }, errors: [409],
    schemas: { request: 'CreateNetworkRequest' },
  },
  {
    operationId: 'CreateAssetNetwork', operation: 'CreateAssetNetwork', method: 'POST', path: '/v1/platform/asset-networks', summary: 'Create an asset-network (DISABLED until enabled)',
    tag: 'Platform', policy: policies.operator, body: 'required', variables: { input: 'body' },
    success: { status: 201, body: 'createAssetNetwork', location: '/v1/asset-networks/{createAssetNetwork.id}' }, errors: [409],
    schemas: { request: 'CreateAssetNetworkRequest' },
  },
  {
    operationId: 'EnableAssetNetwork', operation: 'EnableAssetNetwork', method: 'POST', path: '/v1/platform/asset-networks/{assetNetworkId}/enable',
    summary: 'Enable an asset-network (idempotent)', tag: 'Platform', policy: policies.operator,
    variables: { id: 'path.assetNetworkId' }, success: { status: 204 }, errors: [404, 409],
  },
  {
    operationId: 'PauseAssetNetwork', operation: 'PauseAssetNetwork', method: 'POST', path: '/v1/platform/asset-networks/{assetNetworkId}/pause',
    summary: 'Pause an enabled asset-network, with a reason (idempotent; a disabled one: 409)', tag: 'Platform', policy: policies.operator,
    body: 'required', variables: { id: 'path.assetNetworkId', input: 'body' }, success: { status: 204 }, errors: [404, 409],
    schemas: { request: 'PauseAssetNetworkRequest' },
  },
  {
    operationId: 'DisableAssetNetwork', operation: 'DisableAssetNetwork', method: 'POST', path: '/v1/platform/asset-networks/{assetNetworkId}/disable',
    summary: 'Disable an asset-network (idempotent)', tag: 'Platform', policy: policies.operator,
    variables: { id: 'path.assetNetworkId' }, success: { status: 204 }, errors: [404, 409],
  },

  // Deposits
  {
    operationId: 'CreatePaymentIntent', operation: 'CreatePaymentIntent', method: 'POST', path: '/v1/organizations/{organizationId}/payment-intents',
    summary: 'Create a payment intent and its transaction (AWAITING_FUNDS)', tag: 'Deposits', policy: policies.memberOrApiKey('payment-manage'),
    body: 'required', variables: { organizationId: 'path.organizationId', input: 'body', idempotencyKey: 'header.idempotency-key' },
    success: { status: 201, location: '/v1/payment-intents/{createPaymentIntent.id}' }, errors: [404, 409],
    schemas: { request: 'CreatePaymentIntentRequest' },
  },
  {
    operationId: 'GetPaymentIntent', operation: 'GetPaymentIntent', method: 'GET', path: '/v1/payment-intents/{paymentIntentId}',
    summary: 'Get a payment intent', tag: 'Deposits', policy: policies.memberOrApiKey('account-read'),
    variables: { id: 'path.paymentIntentId' }, success: { status: 200, body: 'paymentIntent' }, errors: [404],
    schemas: { response: 'PaymentIntentResponse' },
  },
  {
    operationId: 'CancelPaymentIntent', operation: 'CancelPaymentIntent', method: 'POST', path: '/v1/payment-intents/{paymentIntentId}/cancel', extension: true,
    summary: 'Cancel a payment intent and its transaction, while nothing was detected', tag: 'Deposits', policy: policies.memberOrApiKey('payment-manage'),
    body: 'optional', variables: { id: 'path.paymentIntentId', input: 'body' }, success: { status: 204 }, errors: [404, 409],
  },
  {
    operationId: 'GetDeposit', operation: 'GetDeposit', method: 'GET', path: '/v1/deposits/{depositId}',
    summary: 'Get a deposit', tag: 'Deposits', policy: policies.memberOrApiKey('account-read'),
    variables: { id: 'path.depositId' }, success: { status: 200, body: 'deposit' }, errors: [404],
    schemas: { response: 'DepositResponse' },
  },

  // Transactions (extensions: the spec knows transactions through events only)
  {
    operationId: 'GetTransaction', operation: 'GetTransaction', method: 'GET', path: '/v1/transactions/{transactionId}', extension: true,
    summary: 'Get a transaction', tag: 'Transactions', policy: policies.memberOrApiKey('account-read'),
    variables: { id: 'path.transactionId' }, success: { status: 200, body: 'transaction' }, errors: [404],
  },
  {
    operationId: 'CancelTransaction', operation: 'CancelTransaction', method: 'POST', path: '/v1/transactions/{transactionId}/cancel', extension: true,
    summary: 'Cancel a transaction before funding (cancels its payment intent too)', tag: 'Transactions', policy: policies.memberOrApiKey('payment-manage'),
    body: 'optional', variables: { id: 'path.transactionId', input: 'body' }, success: { status: 204 }, errors: [404, 409],
  },
  {
    operationId: 'FreezeTransaction', operation: 'FreezeTransaction', method: 'POST', path: '/v1/transactions/{transactionId}/freeze', extension: true,
    summary: 'Freeze a transaction, with a reason: it moves no funds until unfrozen', tag: 'Transactions', policy: policies.member('payment-manage'),
    body: 'required', variables: { id: 'path.transactionId', input: 'body' }, success: { status: 204 }, errors: [404, 409],
  },
  {
    operationId: 'UnfreezeTransaction', operation: 'UnfreezeTransaction', method: 'POST', path: '/v1/transactions/{transactionId}/unfreeze', extension: true,
    summary: "Lift a member's freeze of a transaction", tag: 'Transactions', policy: policies.member('payment-manage'),
    variables: { id: 'path.transactionId' }, success: { status: 204 }, errors: [404, 409],
  },

  // Release rules and their templates (extensions: the spec does not show their configuration; docs/release-rules.md)
  {
    operationId: 'GetTransactionReleaseRule', operation: 'GetTransactionReleaseRule', method: 'GET', path: '/v1/transactions/{transactionId}/release-rule', extension: true,
    summary: "A transaction's release rule: milestones with their conditions (due, met, approved) and split rules", tag: 'Release rules', policy: policies.accountRead,
    variables: { transactionId: 'path.transactionId' }, success: { status: 200, body: 'transactionReleaseRule' }, errors: [404],
  },
  {
    operationId: 'SetTransactionReleaseRule', operation: 'SetTransactionReleaseRule', method: 'PUT', path: '/v1/transactions/{transactionId}/release-rule', extension: true,
    summary: 'Set (replace) the release rule of a transaction not yet settled: a template, or milestones and split rules inline', tag: 'Release rules', policy: policies.memberOrApiKey('payment-manage'),
    body: 'required', variables: { transactionId: 'path.transactionId', input: 'body' }, success: { status: 200, body: 'setTransactionReleaseRule' }, errors: [404, 409],
  },
  {
    operationId: 'ApproveRelease', operation: 'ApproveRelease', method: 'POST', path: '/v1/transactions/{transactionId}/release-approvals', extension: true,
    summary: 'Approve the pending release approvals that name the caller (or one, by conditionId); due milestones release at once', tag: 'Release rules',
    policy: { member: 'any', apiKey: true, accountHolder: true },
    body: 'optional', variables: { transactionId: 'path.transactionId', input: 'body' }, success: { status: 200, body: 'approveRelease' }, errors: [404, 409],
  },
  {
    operationId: 'CreateReleaseRuleTemplate', operation: 'CreateReleaseRuleTemplate', method: 'POST', path: '/v1/applications/{applicationId}/release-rule-templates', extension: true,
    summary: 'Create a reusable release rule of the application', tag: 'Release rules', policy: policies.memberOrApiKey('payment-manage'),
    body: 'required', variables: { applicationId: 'path.applicationId', input: 'body' },
    success: { status: 201, body: 'createReleaseRuleTemplate', location: '/v1/release-rule-templates/{createReleaseRuleTemplate.id}' }, errors: [404, 409],
  },
  {
    operationId: 'ListReleaseRuleTemplates', operation: 'ListReleaseRuleTemplates', method: 'GET', path: '/v1/applications/{applicationId}/release-rule-templates', extension: true,
    summary: "The application's release rule templates, oldest first (includeArchived to see archived ones)", tag: 'Release rules', policy: policies.memberOrApiKey('account-read'),
    variables: { applicationId: 'path.applicationId', includeArchived: 'query.includeArchived' }, success: { status: 200, body: 'releaseRuleTemplates' }, errors: [404],
  },
  {
    operationId: 'GetReleaseRuleTemplate', operation: 'GetReleaseRuleTemplate', method: 'GET', path: '/v1/release-rule-templates/{templateId}', extension: true,
    summary: 'Get a release rule template', tag: 'Release rules', policy: policies.memberOrApiKey('account-read'),
    variables: { id: 'path.templateId' }, success: { status: 200, body: 'releaseRuleTemplate' }, errors: [404],
  },
  {
    operationId: 'ArchiveReleaseRuleTemplate', operation: 'ArchiveReleaseRuleTemplate', method: 'POST', path: '/v1/release-rule-templates/{templateId}/archive', extension: true,
    summary: 'Archive a release rule template: it can no longer be applied (idempotent)', tag: 'Release rules', policy: policies.memberOrApiKey('payment-manage'),
    variables: { id: 'path.templateId' }, success: { status: 204 }, errors: [404],
  },

  // Settlements (extensions: the spec knows settlements through events only; docs/settlements.md)
  {
    operationId: 'RequestSettlement', operation: 'RequestSettlement', method: 'POST', path: '/v1/transactions/{transactionId}/settlements', extension: true,
    summary: 'Ask to settle a transaction without release milestones (executed by the settlement job)', tag: 'Settlements', policy: policies.memberOrApiKey('payment-manage'),
    body: 'optional', variables: { transactionId: 'path.transactionId', input: 'body', idempotencyKey: 'header.idempotency-key' },
    success: { status: 201, body: 'requestSettlement', location: '/v1/settlements/{requestSettlement.id}' }, errors: [404, 409],
  },
  {
    operationId: 'ListTransactionSettlements', operation: 'ListTransactionSettlements', method: 'GET', path: '/v1/transactions/{transactionId}/settlements', extension: true,
    summary: "A transaction's settlements with their allocations, oldest first", tag: 'Settlements', policy: policies.memberOrApiKey('account-read'),
    variables: { id: 'path.transactionId' }, success: { status: 200, body: 'transaction.settlements' }, errors: [404],
  },
  {
    operationId: 'GetSettlement', operation: 'GetSettlement', method: 'GET', path: '/v1/settlements/{settlementId}', extension: true,
    summary: 'Get a settlement: fee, allocations (released or retained), state', tag: 'Settlements', policy: { member: 'account-read', apiKey: true, operator: true },
    variables: { id: 'path.settlementId' }, success: { status: 200, body: 'settlement' }, errors: [404],
  },

  // Refunds (extensions: the spec knows refunds through events only; docs/refunds.md)
  {
    operationId: 'RequestRefund', operation: 'RequestRefund', method: 'POST', path: '/v1/transactions/{transactionId}/refunds', extension: true,
    summary: "Ask to refund a funded transaction to the payer's origin (executed or rejected by the refund job)", tag: 'Refunds', policy: policies.memberOrApiKey('payment-manage'),
    body: 'optional', variables: { transactionId: 'path.transactionId', input: 'body', idempotencyKey: 'header.idempotency-key' },
    success: { status: 201, body: 'requestRefund', location: '/v1/refunds/{requestRefund.id}' }, errors: [404, 409],
  },
  {
    operationId: 'ListTransactionRefunds', operation: 'ListTransactionRefunds', method: 'GET', path: '/v1/transactions/{transactionId}/refunds', extension: true,
    summary: "A transaction's refunds, oldest first", tag: 'Refunds', policy: policies.memberOrApiKey('account-read'),
    variables: { id: 'path.transactionId' }, success: { status: 200, body: 'transaction.refunds' }, errors: [404],
  },
  {
    operationId: 'GetRefund', operation: 'GetRefund', method: 'GET', path: '/v1/refunds/{refundId}', extension: true,
    summary: 'Get a refund: amount, fee, net, reversal, state, chain transfer', tag: 'Refunds', policy: { member: 'account-read', apiKey: true, operator: true },
    variables: { id: 'path.refundId' }, success: { status: 200, body: 'refund' }, errors: [404],
  },

  // Withdrawal destinations (extensions besides AdminBlockWithdrawalDestination; docs/withdrawals.md)
  {
    operationId: 'RegisterWithdrawalDestination', operation: 'RegisterWithdrawalDestination', method: 'POST', path: '/v1/organizations/{organizationId}/withdrawal-destinations', extension: true,
    summary: 'Register a withdrawal destination (the same network and address again: the existing one)', tag: 'Withdrawals', policy: policies.memberOrApiKey('payment-manage'),
    body: 'required', variables: { organizationId: 'path.organizationId', input: 'body', idempotencyKey: 'header.idempotency-key' },
    success: { status: 201, body: 'registerWithdrawalDestination', location: '/v1/withdrawal-destinations/{registerWithdrawalDestination.id}' }, errors: [404, 409],
  },
  {
    operationId: 'ListWithdrawalDestinations', operation: 'ListWithdrawalDestinations', method: 'GET', path: '/v1/organizations/{organizationId}/withdrawal-destinations', extension: true,
    summary: "List the organization's withdrawal destinations, oldest first (an API key: those of its environment type)", tag: 'Withdrawals',
    policy: { member: 'account-read', apiKey: true, operator: true },
    variables: { organizationId: 'path.organizationId', limit: 'query.limit', after: 'query.after' },
    success: { status: 200, body: 'withdrawalDestinations.items', nextCursor: 'withdrawalDestinations.nextCursor' }, errors: [404],
  },
  {
    operationId: 'GetWithdrawalDestination', operation: 'GetWithdrawalDestination', method: 'GET', path: '/v1/withdrawal-destinations/{withdrawalDestinationId}', extension: true,
    summary: 'Get a withdrawal destination', tag: 'Withdrawals', policy: { member: 'account-read', apiKey: true, operator: true },
    variables: { id: 'path.withdrawalDestinationId' }, success: { status: 200, body: 'withdrawalDestination' }, errors: [404],
  },

  // Withdrawals (extensions besides the admin operations; docs/withdrawals.md)
  {
    operationId: 'RequestWithdrawal', operation: 'RequestWithdrawal', method: 'POST', path: '/v1/accounts/{accountId}/withdrawals', extension: true,
    summary: 'Request a withdrawal to a withdrawal destination (the amount is held at once)', tag: 'Withdrawals', policy: policies.memberOrApiKey('payment-manage'),
    body: 'required', variables: { accountId: 'path.accountId', input: 'body', idempotencyKey: 'header.idempotency-key' },
    success: { status: 201, body: 'requestWithdrawal', location: '/v1/withdrawals/{requestWithdrawal.id}' }, errors: [404, 409],
  },
  {
    operationId: 'GetWithdrawal', operation: 'GetWithdrawal', method: 'GET', path: '/v1/withdrawals/{withdrawalId}', extension: true,
    summary: 'Get a withdrawal: amount, state, destination, chain transfer', tag: 'Withdrawals', policy: { member: 'account-read', apiKey: true, operator: true },
    variables: { id: 'path.withdrawalId' }, success: { status: 200, body: 'withdrawal' }, errors: [404],
  },
  {
    operationId: 'CancelWithdrawal', operation: 'CancelWithdrawal', method: 'POST', path: '/v1/withdrawals/{withdrawalId}/cancel', extension: true,
    summary: 'Cancel a withdrawal until it is broadcast (the hold is released)', tag: 'Withdrawals', policy: policies.memberOrApiKey('payment-manage'),
    variables: { id: 'path.withdrawalId' }, success: { status: 204 }, errors: [404, 409],
  },

  // Execution and custody
  {
    operationId: 'RegisterWallet', operation: 'RegisterWallet', method: 'POST', path: '/v1/applications/{applicationId}/wallets', summary: 'Register a wallet',
    tag: 'Custody', policy: policies.memberOrApiKey('custody-manage'), body: 'required', variables: { applicationId: 'path.applicationId', input: 'body' },
    success: { status: 201, location: '/v1/wallets/{registerWallet.id}' }, errors: [404, 409],
    schemas: { request: 'RegisterWalletRequest' },
  },
  {
    operationId: 'AllocateDepositAddress', operation: 'AllocateDepositAddress', method: 'POST', path: '/v1/applications/{applicationId}/wallets/deposit-addresses',
    summary: "Allocate a payment intent's deposit address (idempotent per payment intent)", tag: 'Custody', policy: policies.memberOrApiKey('custody-manage'),
    body: 'required', variables: { applicationId: 'path.applicationId', input: 'body' }, success: { status: 200, body: 'allocateDepositAddress' }, errors: [404, 409],
    schemas: { request: 'AllocateDepositAddressRequest', response: 'AllocatedDepositAddressResponse' },
  },
  {
    operationId: 'GetWallet', operation: 'GetWallet', method: 'GET', path: '/v1/wallets/{walletId}', summary: 'Get a wallet (never private material)', tag: 'Custody',
    policy: policies.memberOrApiKey('account-read'), variables: { id: 'path.walletId' }, success: { status: 200, body: 'wallet' }, errors: [404],
    schemas: { response: 'WalletResponse' },
  },
  {
    operationId: 'GetWalletPublicMaterial', operation: 'GetWalletPublicMaterial', method: 'GET', path: '/v1/wallets/{walletId}/public-material',
    summary: "Get a wallet's public key material and derivation scheme", tag: 'Custody', policy: policies.memberOrApiKey('account-read'),
    variables: { id: 'path.walletId' }, success: { status: 200, body: 'walletPublicMaterial' }, errors: [404],
  },
  {
    operationId: 'CreateSigningRequest', operation: 'CreateSigningRequest', method: 'POST', path: '/v1/environments/{environmentId}/signing-requests',
    summary: 'Create a SelfCustody signing request for a withdrawal awaiting its signature (the same withdrawal again: the same request)', tag: 'Custody',
    policy: policies.memberOrApiKey('custody-manage'), body: 'required', variables: { environmentId: 'path.environmentId', input: 'body' },
    success: { status: 201, location: '/v1/signing-requests/{createSigningRequest.id}' }, errors: [404, 409],
    schemas: { request: 'CreateSigningRequestRequest' },
  },
  {
    operationId: 'GetSigningRequest', operation: 'GetSigningRequest', method: 'GET', path: '/v1/signing-requests/{signingRequestId}', extension: true,
    summary: 'Get a signing request: the exact payload to sign, its canonical bytes and digest', tag: 'Custody', policy: { member: 'account-read', apiKey: true, operator: true },
    variables: { id: 'path.signingRequestId' }, success: { status: 200, body: 'signingRequest' }, errors: [404],
  },
  {
    operationId: 'SubmitSigningRequestSignature', operation: 'SubmitSigningRequestSignature', method: 'POST', path: '/v1/signing-requests/{signingRequestId}/signature', extension: true,
    summary: "Submit the integrator's signature: verified with the wallet's public material, then broadcast (a wrong one: 400, nothing broadcast)", tag: 'Custody',
    policy: policies.memberOrApiKey('custody-manage'), body: 'required', variables: { id: 'path.signingRequestId', input: 'body' }, success: { status: 204 }, errors: [404, 409],
  },
  {
    operationId: 'GetNetworkExecutionQuote', operation: 'GetNetworkExecutionQuote', method: 'POST', path: '/v1/environments/{environmentId}/network-execution-quote',
    summary: "Quote the network cost of a WITHDRAWAL or SWEEP of an asset-network: resources, network cost, margin, total (native base units), valid 60 s", tag: 'Custody',
    policy: policies.memberOrApiKey('account-read'), body: 'required', variables: { environmentId: 'path.environmentId', input: 'body' },
    success: { status: 200, body: 'createNetworkExecutionQuote' }, errors: [404, 409],
  },

  // Sandbox chain (extensions; SANDBOX environments only: production answers 404)
  {
    operationId: 'SandboxSendDeposit', operation: 'SandboxSendDeposit', method: 'POST', path: '/v1/sandbox/deposits', extension: true,
    summary: 'Sandbox: a payer sends value to an address (a PENDING transaction)', tag: 'Sandbox', policy: policies.memberOrApiKey('payment-manage'),
    body: 'required', variables: { input: 'body', idempotencyKey: 'header.idempotency-key' }, success: { status: 201, body: 'sandboxSendDeposit' }, errors: [404, 409],
  },
  {
    operationId: 'SandboxMineBlocks', operation: 'SandboxMineBlocks', method: 'POST', path: '/v1/sandbox/networks/{networkId}/mine', extension: true,
    summary: 'Sandbox: mine 1 to 100 blocks', tag: 'Sandbox', policy: policies.memberOrApiKey('payment-manage'),
    body: 'optional', variables: { networkId: 'path.networkId', input: 'body', idempotencyKey: 'header.idempotency-key' }, success: { status: 200, body: 'sandboxMineBlocks' },
    errors: [404, 409],
  },
  {
    operationId: 'SandboxReorg', operation: 'SandboxReorg', method: 'POST', path: '/v1/sandbox/networks/{networkId}/reorg', extension: true,
    summary: 'Sandbox: orphan the last blocks and mine a longer branch', tag: 'Sandbox', policy: policies.memberOrApiKey('payment-manage'),
    body: 'required', variables: { networkId: 'path.networkId', input: 'body', idempotencyKey: 'header.idempotency-key' }, success: { status: 200, body: 'sandboxReorg' },
    errors: [404, 409],
  },
  {
    operationId: 'SandboxDropTransaction', operation: 'SandboxDropTransaction', method: 'POST', path: '/v1/sandbox/transactions/drop', extension: true,
    summary: 'Sandbox: drop a PENDING or ORPHANED transaction (by txHash in the body)', tag: 'Sandbox', policy: policies.memberOrApiKey('payment-manage'),
    body: 'required', variables: { input: 'body', idempotencyKey: 'header.idempotency-key' }, success: { status: 200, body: 'sandboxDropTransaction' }, errors: [404, 409],
  },
  {
    operationId: 'SandboxReplaceTransaction', operation: 'SandboxReplaceTransaction', method: 'POST', path: '/v1/sandbox/transactions/replace', extension: true,
    summary: 'Sandbox: replace a PENDING replaceable transaction (by txHash in the body)', tag: 'Sandbox', policy: policies.memberOrApiKey('payment-manage'),
    body: 'required', variables: { input: 'body', idempotencyKey: 'header.idempotency-key' }, success: { status: 200, body: 'sandboxReplaceTransaction' }, errors: [404, 409],
  },
  {
    operationId: 'SandboxAdvanceClock', operation: 'SandboxAdvanceClock', method: 'POST', path: '/v1/sandbox/clock/advance', extension: true,
    summary: "Sandbox: advance the organization's sandbox clock", tag: 'Sandbox', policy: policies.memberOrApiKey('payment-manage'),
    body: 'required', variables: { input: 'body', idempotencyKey: 'header.idempotency-key' }, success: { status: 200, body: 'sandboxAdvanceClock' }, errors: [404, 409],
  },
  {
    operationId: 'SandboxFastForwardWebhookDelivery', operation: 'SandboxFastForwardWebhookDelivery', method: 'POST', path: '/v1/sandbox/webhook-deliveries/{webhookDeliveryId}/fast-forward', extension: true,
    summary: "Sandbox: a pending delivery's next attempt now, or its remaining attempts at once ({\"attempts\":\"REMAINING\"}): test dead letters and redelivery", tag: 'Sandbox',
    policy: policies.memberOrApiKey('webhook-endpoint-manage'),
    body: 'optional', variables: { id: 'path.webhookDeliveryId', input: 'body', idempotencyKey: 'header.idempotency-key' },
    success: { status: 200, body: 'sandboxFastForwardWebhookDelivery' }, errors: [404, 409],
  },

  // Webhook management
  {
    operationId: 'CreateWebhookEndpoint', operation: 'CreateWebhookEndpoint', method: 'POST', path: '/v1/organizations/{organizationId}/webhook-endpoints/',
    summary: 'Register a webhook endpoint (its secret is in this answer only)', tag: 'Webhooks', policy: policies.member('webhook-endpoint-manage'),
    body: 'required', variables: { organizationId: 'path.organizationId', input: 'body' },
    success: { status: 201, body: 'registerWebhookEndpoint', location: '/v1/webhook-endpoints/{registerWebhookEndpoint.id}' }, errors: [404, 409],
  },
  {
    operationId: 'GetWebhookEndpoint', operation: 'GetWebhookEndpoint', method: 'GET', path: '/v1/webhook-endpoints/{id}',
    summary: 'Get a webhook endpoint (never its secret)', tag: 'Webhooks', policy: policies.member('webhook-endpoint-manage'),
    variables: { id: 'path.id' }, success: { status: 200, body: 'webhookEndpoint' }, errors: [404],
  },
  {
    operationId: 'RotateWebhookEndpointSecret', operation: 'RotateWebhookEndpointSecret', method: 'POST', path: '/v1/webhook-endpoints/{webhookEndpointId}/rotate-secret',
    summary: 'Replace the signing secret at once (the new one is in this answer only)', tag: 'Webhooks', policy: policies.member('webhook-endpoint-manage'),
    variables: { id: 'path.webhookEndpointId' }, success: { status: 200, body: 'rotateWebhookEndpointSecret' }, errors: [404, 409],
  },
  {
    operationId: 'DeactivateWebhookEndpoint', operation: 'DeactivateWebhookEndpoint', method: 'POST', path: '/v1/webhook-endpoints/{webhookEndpointId}/deactivate',
    summary: 'Deactivate a webhook endpoint (pending deliveries are cancelled; idempotent)', tag: 'Webhooks', policy: policies.member('webhook-endpoint-manage'),
    variables: { id: 'path.webhookEndpointId' }, success: { status: 204 }, errors: [404],
  },
  {
    operationId: 'GetWebhookDelivery', operation: 'GetWebhookDelivery', method: 'GET', path: '/v1/webhook-deliveries/{webhookDeliveryId}',
    summary: 'Get a delivery: EventType, status, SequenceNumber, attempts, link to the original (also API keys: the events of their mode)', tag: 'Webhooks', policy: policies.memberOrApiKey('webhook-endpoint-manage'),
    variables: { id: 'path.webhookDeliveryId' }, success: { status: 200, body: 'webhookDelivery' }, errors: [404],
  },
  {
    operationId: 'ListWebhookDeliveries', operation: 'ListWebhookDeliveries', method: 'GET', path: '/v1/webhook-endpoints/{webhookEndpointId}/deliveries',
    summary: "List an endpoint's deliveries, newest first (filter: eventType)", tag: 'Webhooks', policy: policies.member('webhook-endpoint-manage'),
    variables: { endpointId: 'path.webhookEndpointId', eventType: 'query.eventType', limit: 'query.limit', after: 'query.after' },
    success: { status: 200, body: 'webhookDeliveries.items', nextCursor: 'webhookDeliveries.nextCursor' }, errors: [404],
  },
  {
    operationId: 'RedeliverWebhookDelivery', operation: 'RedeliverWebhookDelivery', method: 'POST', path: '/v1/webhook-deliveries/{webhookDeliveryId}/redeliver',
    summary: 'Redeliver a dead-lettered delivery (a new delivery; the original stays dead-letter)', tag: 'Webhooks', policy: policies.member('webhook-endpoint-manage'),
    variables: { id: 'path.webhookDeliveryId' },
    success: { status: 201, body: 'redeliverWebhookDelivery', location: '/v1/webhook-deliveries/{redeliverWebhookDelivery.id}' }, errors: [404, 409],
  },

  // Administration and audit (platform operators)
  {
    operationId: 'AdminResolveDepositUnderReview', operation: 'AdminResolveDepositUnderReview', method: 'POST', path: '/v1/admin/deposits/{depositId}/resolve-under-review',
    summary: 'Accept or reject a deposit held for review', tag: 'Administration', policy: policies.operator,
    body: 'required', variables: { id: 'path.depositId', input: 'body' }, success: { status: 204 }, errors: [404, 409],
    schemas: { request: 'AdminResolveDepositUnderReviewRequest' },
  },
  {
    operationId: 'AdminResolveDepositReorg', operation: 'AdminResolveDepositReorg', method: 'POST', path: '/v1/admin/deposits/{depositId}/resolve-reorg',
    summary: 'Resolve a deposit frozen by a chain reorganization: REMINED or GONE, as the chain shows', tag: 'Administration', policy: policies.operator,
    body: 'required', variables: { id: 'path.depositId', input: 'body' }, success: { status: 204 }, errors: [404, 409],
    schemas: { request: 'AdminResolveDepositReorgRequest' },
  },
  {
    operationId: 'AdminRetrySettlement', operation: 'AdminRetrySettlement', method: 'POST', path: '/v1/admin/settlements/{settlementId}/retry',
    summary: 'Send a FAILED settlement back to PENDING (executed again under the same ledger key: never pays twice)', tag: 'Administration', policy: policies.operator,
    variables: { id: 'path.settlementId' }, success: { status: 204 }, errors: [404, 409],
  },
  {
    operationId: 'AdminConfigurePricingPolicy', operation: 'AdminConfigurePricingPolicy', method: 'POST', path: '/v1/admin/pricing-policy',
    summary: 'Configure the next version of the platform fee of a scope (platform, organization or application; optionally one asset-network)', tag: 'Administration',
    policy: policies.operator, body: 'required', variables: { input: 'body' }, success: { status: 204 },
    schemas: { request: 'AdminConfigurePricingPolicyCommand' },
  },
  {
    operationId: 'AdminRegisterGlobalRevenueAccountExecutionDestination', operation: 'AdminRegisterGlobalRevenueAccountExecutionDestination', method: 'POST',
    path: '/v1/admin/global-revenue-account/execution-destination', summary: "Name where an asset-network's platform revenue is paid out (a new version)", tag: 'Administration',
    policy: policies.operator, body: 'required', variables: { input: 'body' }, success: { status: 204 },
    schemas: { request: 'AdminRegisterGlobalRevenueAccountExecutionDestinationCommand' },
  },
  {
    operationId: 'AdminConfigureRefundFeePolicy', operation: 'AdminConfigureRefundFeePolicy', method: 'POST', path: '/v1/admin/refund-fee-policy',
    summary: 'Configure the next version of the refund fee of a scope (platform, organization or application; optionally one asset-network) and whether refunds may reverse settlements',
    tag: 'Administration', policy: policies.operator, body: 'required', variables: { input: 'body' }, success: { status: 204 },
    schemas: { request: 'AdminConfigureRefundFeePolicyCommand' },
  },
  {
    operationId: 'SearchAuditLog', operation: 'SearchAuditLog', method: 'GET', path: '/v1/admin/audit-log',
    summary: 'Search the audit log, newest first (filters: organizationId, entityType, entityId, actionType; skip 0-100000, take 1-500)', tag: 'Administration',
    policy: policies.operator,
    variables: { organizationId: 'query.organizationId', entityType: 'query.entityType', entityId: 'query.entityId', actionType: 'query.actionType', skip: 'query.skip', take: 'query.take' },
    success: { status: 200, body: 'auditLogEntries' },
  },
  {
    operationId: 'GetAuditLogEntry', operation: 'GetAuditLogEntry', method: 'GET', path: '/v1/admin/audit-log/{auditLogEntryId}',
    summary: 'Get one audit log entry', tag: 'Administration', policy: policies.operator,
    variables: { id: 'path.auditLogEntryId' }, success: { status: 200, body: 'auditLogEntry' }, errors: [404],
    schemas: { response: 'AuditLogEntryResponse' },
  },
  {
    operationId: 'GetPlatformDashboard', operation: 'GetPlatformDashboard', method: 'GET', path: '/v1/admin/dashboard',
    summary: 'Counts and volumes by state, webhook health, ledger counts, reserve levels and open reconciliation divergences', tag: 'Administration',
    policy: policies.operator, success: { status: 200, body: 'platformDashboard' },
  },
  {
    operationId: 'GetStuckOperations', operation: 'GetStuckOperations', method: 'GET', path: '/v1/admin/stuck-operations', extension: true,
    summary: 'Settlements, refunds, withdrawals and deposits idle past their expected time, and deposit addresses whose chain sync keeps failing (CHAIN_SYNC), oldest first, with their age and their job\'s last error (olderThanSeconds 0-2592000, default 300; limit 1-500, default 100)',
    tag: 'Administration', policy: policies.operator,
    variables: { olderThanSeconds: 'query.olderThanSeconds', limit: 'query.limit' }, success: { status: 200, body: 'stuckOperations' },
  },
  {
    operationId: 'SearchLedgerEntriesAdmin', operation: 'SearchLedgerEntriesAdmin', method: 'GET', path: '/v1/admin/ledger-entries',
    summary: "Search ledger entries of every organization, newest first (filters: assetNetworkId, nature, from/to on postedAt; skip 0-100000, take 1-500)",
    tag: 'Administration', policy: policies.operator,
    variables: { assetNetworkId: 'query.assetNetworkId', nature: 'query.nature', from: 'query.from', to: 'query.to', skip: 'query.skip', take: 'query.take' },
    success: { status: 200, body: 'ledgerEntries' },
  },
  {
    operationId: 'AdminBlockWithdrawalDestination', operation: 'AdminBlockWithdrawalDestination', method: 'POST', path: '/v1/admin/withdrawal-destinations/{withdrawalDestinationId}/block',
    summary: 'Block a withdrawal destination, with a reason: it refuses new withdrawals and stops pending ones (terminal)', tag: 'Administration', policy: policies.operator,
    body: 'required', variables: { id: 'path.withdrawalDestinationId', input: 'body' }, success: { status: 204 }, errors: [404, 409],
    schemas: { request: 'AdminBlockWithdrawalDestinationRequest' },
  },
  {
    operationId: 'AdminApproveWithdrawal', operation: 'AdminApproveWithdrawal', method: 'POST', path: '/v1/admin/withdrawals/{withdrawalId}/approve',
    summary: 'Approve a withdrawal waiting for an operator', tag: 'Administration', policy: policies.operator,
    variables: { id: 'path.withdrawalId' }, success: { status: 204 }, errors: [404, 409],
  },
  {
    operationId: 'AdminRejectWithdrawal', operation: 'AdminRejectWithdrawal', method: 'POST', path: '/v1/admin/withdrawals/{withdrawalId}/reject',
    summary: 'Reject a withdrawal before broadcast, with a reason (the hold is released)', tag: 'Administration', policy: policies.operator,
    body: 'required', variables: { id: 'path.withdrawalId', input: 'body' }, success: { status: 204 }, errors: [404, 409],
    schemas: { request: 'AdminRejectWithdrawalRequest' },
  },
  {
    operationId: 'AdminResolveWithdrawalReconciliation', operation: 'AdminResolveWithdrawalReconciliation', method: 'POST', path: '/v1/admin/withdrawals/{withdrawalId}/resolve-reconciliation', extension: true,
    summary: 'Resolve a withdrawal that requires reconciliation: CONFIRMED (a mined transaction of it; the hold is posted) or FAILED (nothing mined or pending; the hold is released), checked against the chain',
    tag: 'Administration', policy: policies.operator,
    body: 'required', variables: { withdrawalId: 'path.withdrawalId', input: 'body' }, success: { status: 204 }, errors: [404, 409],
  },
  {
    operationId: 'AdminConfigureWithdrawalPolicy', operation: 'AdminConfigureWithdrawalPolicy', method: 'POST', path: '/v1/admin/organizations/{organizationId}/withdrawal-policy',
    summary: "Configure the next version of an organization's withdrawal policy (limits, approval threshold)", tag: 'Administration', policy: policies.operator,
    body: 'required', variables: { organizationId: 'path.organizationId', input: 'body' }, success: { status: 204 }, errors: [404],
    schemas: { request: 'AdminConfigureWithdrawalPolicyRequest' },
  },
  {
    operationId: 'AdminConfigurePayoutPolicy', operation: 'AdminConfigurePayoutPolicy', method: 'POST', path: '/v1/admin/organizations/{organizationId}/payout-policy',
    summary: "Configure the next version of an organization's payout policy (destination rules)", tag: 'Administration', policy: policies.operator,
    body: 'required', variables: { organizationId: 'path.organizationId', input: 'body' }, success: { status: 204 }, errors: [404],
    schemas: { request: 'AdminConfigurePayoutPolicyRequest' },
  },
  {
    operationId: 'AdminRecordLedgerCorrection', operation: 'AdminRecordLedgerCorrection', method: 'POST', path: '/v1/admin/ledger-corrections',
    summary: 'Record a balanced correcting ledger transaction with a reason (never an edit of past entries)', tag: 'Administration', policy: policies.operator,
    body: 'required', variables: { input: 'body', idempotencyKey: 'header.idempotency-key' },
    success: { status: 201, body: 'adminRecordLedgerCorrection', location: '/v1/admin/ledger-corrections/{adminRecordLedgerCorrection.id}' }, errors: [409],
    schemas: { request: 'RecordAdministrativeLedgerCorrectionCommand' },
  },
  {
    operationId: 'AdminGetLedgerCorrection', operation: 'AdminGetLedgerCorrection', method: 'GET', path: '/v1/admin/ledger-corrections/{ledgerCorrectionId}', extension: true,
    summary: 'Get a ledger correction: reason, operator, lines, the correcting ledger transaction', tag: 'Administration', policy: policies.operator,
    variables: { id: 'path.ledgerCorrectionId' }, success: { status: 200, body: 'ledgerCorrection' }, errors: [404],
  },
  // Treasury (docs/treasury.md)
  {
    operationId: 'GetTreasuryOverview', operation: 'GetTreasuryOverview', method: 'GET', path: '/v1/admin/treasury-overview',
    summary: 'Per asset-network: customer liabilities (ledger) against the assets held in controlled and deposit addresses (chain), and the difference',
    tag: 'Administration', policy: policies.operator, success: { status: 200, body: 'treasuryOverview' },
  },
  {
    operationId: 'GetTreasuryControlledAddresses', operation: 'GetTreasuryControlledAddresses', method: 'GET', path: '/v1/admin/treasury/{assetNetworkId}/controlled-addresses',
    summary: 'The controlled addresses holding an asset-network, oldest first, with their balances (activeOnly: only active ones)', tag: 'Administration',
    policy: policies.operator, variables: { assetNetworkId: 'path.assetNetworkId', activeOnly: 'query.activeOnly' },
    success: { status: 200, body: 'treasuryControlledAddresses' }, errors: [404],
  },
  {
    operationId: 'GetTreasuryRebalancePlan', operation: 'GetTreasuryRebalancePlan', method: 'GET', path: '/v1/admin/treasury/{assetNetworkId}/rebalance-plan',
    summary: 'Proposed moves between HOT, WARM and COLD addresses under the liquidity policy in force, with the reasoning (read-only)', tag: 'Administration',
    policy: policies.operator, variables: { assetNetworkId: 'path.assetNetworkId' }, success: { status: 200, body: 'treasuryRebalancePlan' }, errors: [404],
  },
  {
    operationId: 'SearchTreasurySweeps', operation: 'SearchTreasurySweeps', method: 'GET', path: '/v1/admin/treasury/sweeps',
    summary: 'Search sweeps, newest first (filter: assetNetworkId; skip 0-100000, take 1-500)', tag: 'Administration', policy: policies.operator,
    variables: { assetNetworkId: 'query.assetNetworkId', skip: 'query.skip', take: 'query.take' }, success: { status: 200, body: 'treasurySweeps' },
  },
  {
    operationId: 'AdminExecuteSandboxSweep', operation: 'AdminExecuteSandboxSweep', method: 'POST', path: '/v1/admin/treasury/sweeps',
    summary: 'Sweep a deposit address to a HOT or WARM controlled address (SANDBOX networks; CUSTODIAL wallets; the ledger does not move)', tag: 'Administration',
    policy: policies.operator, body: 'required', variables: { input: 'body', idempotencyKey: 'header.idempotency-key' },
    success: { status: 201, body: 'adminExecuteSandboxSweep', location: '/v1/admin/treasury/sweeps/{adminExecuteSandboxSweep.id}' }, errors: [404, 409],
    schemas: { request: 'AdminExecuteSandboxSweepCommand' },
  },
  {
    operationId: 'AdminGetTreasurySweep', operation: 'AdminGetTreasurySweep', method: 'GET', path: '/v1/admin/treasury/sweeps/{sweepId}', extension: true,
    summary: 'Get a sweep, with its transfer as the chain shows it now', tag: 'Administration', policy: policies.operator,
    variables: { id: 'path.sweepId' }, success: { status: 200, body: 'treasurySweep' }, errors: [404],
  },
  {
    operationId: 'AdminRegisterControlledAddress', operation: 'AdminRegisterControlledAddress', method: 'POST', path: '/v1/admin/treasury/controlled-addresses',
    summary: 'Register a treasury address: GENERATED (key generated and sealed by the service) or WATCH_ONLY (receive-only), in tier HOT, WARM or COLD',
    tag: 'Administration', policy: policies.operator, body: 'required', variables: { input: 'body' },
    success: { status: 201, body: 'adminRegisterControlledAddress', location: '/v1/admin/treasury/controlled-addresses/{adminRegisterControlledAddress.id}' }, errors: [409],
    schemas: { request: 'AdminRegisterControlledAddressCommand' },
  },
  {
    operationId: 'AdminGetControlledAddress', operation: 'AdminGetControlledAddress', method: 'GET', path: '/v1/admin/treasury/controlled-addresses/{controlledAddressId}',
    extension: true, summary: 'Get a controlled address', tag: 'Administration', policy: policies.operator,
    variables: { id: 'path.controlledAddressId' }, success: { status: 200, body: 'treasuryControlledAddress' }, errors: [404],
  },
  {
    operationId: 'AdminDeactivateControlledAddress', operation: 'AdminDeactivateControlledAddress', method: 'POST',
    path: '/v1/admin/treasury/controlled-addresses/{controlledAddressId}/deactivate', extension: true,
    summary: 'Deactivate a controlled address (idempotent): no sweep, withdrawal or plan uses it any more', tag: 'Administration', policy: policies.operator,
    variables: { id: 'path.controlledAddressId' }, success: { status: 204 }, errors: [404],
  },
  {
    operationId: 'AdminConfigureTreasuryLiquidityPolicy', operation: 'AdminConfigureTreasuryLiquidityPolicy', method: 'POST', path: '/v1/admin/treasury/liquidity-policy',
    summary: "Configure the next version of an asset-network's liquidity targets per tier ({min, target, max} in base units)", tag: 'Administration',
    policy: policies.operator, body: 'required', variables: { input: 'body' }, success: { status: 204 }, errors: [404],
    schemas: { request: 'AdminConfigureTreasuryLiquidityPolicyCommand' },
  },
  // Reconciliation (docs/reconciliation.md)
  {
    operationId: 'AdminExecuteReconciliation', operation: 'AdminExecuteReconciliation', method: 'POST', path: '/v1/admin/reconciliations/execute',
    summary: 'Compare the ledger against the chain per asset-network now and record each divergence', tag: 'Administration', policy: policies.operator,
    success: { status: 201, body: 'adminExecuteReconciliation', location: '/v1/admin/reconciliations/{adminExecuteReconciliation.id}' },
  },
  {
    operationId: 'AdminResolveReconciliationDivergence', operation: 'AdminResolveReconciliationDivergence', method: 'POST', path: '/v1/admin/reconciliations/{reconciliationId}/resolve-divergence',
    summary: 'Resolve an open divergence with a reason: by a ledger correction (CORRECTION) or by accepting the chain (ACCEPT_CHAIN)', tag: 'Administration', policy: policies.operator,
    body: 'required', variables: { reconciliationId: 'path.reconciliationId', input: 'body' }, success: { status: 204 }, errors: [404, 409],
    schemas: { request: 'AdminResolveReconciliationDivergenceRequest' },
  },
  {
    operationId: 'SearchReconciliations', operation: 'SearchReconciliations', method: 'GET', path: '/v1/admin/reconciliations', extension: true,
    summary: 'Reconciliations, newest first (skip 0-100000, take 1-500)', tag: 'Administration', policy: policies.operator,
    variables: { skip: 'query.skip', take: 'query.take' }, success: { status: 200, body: 'reconciliations' },
  },
  {
    operationId: 'GetReconciliation', operation: 'GetReconciliation', method: 'GET', path: '/v1/admin/reconciliations/{reconciliationId}', extension: true,
    summary: 'A reconciliation with its per-asset-network summaries and divergences', tag: 'Administration', policy: policies.operator,
    variables: { id: 'path.reconciliationId' }, success: { status: 200, body: 'reconciliation' }, errors: [404],
  },
  // Network execution costs and resource reserves (docs/network-costs.md)
  {
    operationId: 'AdminConfigureTronResourceCostTable', operation: 'AdminConfigureTronResourceCostTable', method: 'POST', path: '/v1/admin/tron-resource-cost-table',
    summary: "Configure the next version of a TRON network's resource cost table (energy and bandwidth prices in sun; other networks: 400)", tag: 'Administration',
    policy: policies.operator, body: 'required', variables: { input: 'body' }, success: { status: 204 },
    schemas: { request: 'AdminConfigureTronResourceCostTableCommand' },
  },
  {
    operationId: 'AdminConfigureNetworkExecutionMarginPolicy', operation: 'AdminConfigureNetworkExecutionMarginPolicy', method: 'POST', path: '/v1/admin/network-execution-margin-policy',
    summary: 'Configure the next version of the margin on network costs (global: a percentage; one asset-network: percentage + fixed)', tag: 'Administration',
    policy: policies.operator, body: 'required', variables: { input: 'body' }, success: { status: 204 },
    schemas: { request: 'AdminConfigureNetworkExecutionMarginPolicyCommand' },
  },
  {
    operationId: 'AdminSeedNetworkResourceReserve', operation: 'AdminSeedNetworkResourceReserve', method: 'POST', path: '/v1/admin/network-resource-reserve/seed',
    summary: "Add to the network resource reserve of an asset-network's network (created when missing); answers the new balance", tag: 'Administration',
    policy: policies.operator, body: 'required', variables: { input: 'body' }, success: { status: 200, body: 'adminSeedNetworkResourceReserve' },
    schemas: { request: 'AdminSeedNetworkResourceReserveCommand' },
  },
  {
    operationId: 'AdminGetNetworkResourceReserveBalance', operation: 'AdminGetNetworkResourceReserveBalance', method: 'GET', path: '/v1/admin/network-resource-reserve/{assetNetworkId}/balance',
    summary: "The network resource reserve of the asset-network's network: balance, thresholds, replenishment route", tag: 'Administration',
    policy: policies.operator, variables: { assetNetworkId: 'path.assetNetworkId' }, success: { status: 200, body: 'networkResourceReserveBalance' }, errors: [404],
  },
  {
    operationId: 'AdminConfigureResourceReservePolicy', operation: 'AdminConfigureResourceReservePolicy', method: 'POST', path: '/v1/admin/network-resource-reserve/policy',
    summary: "Configure a reserve's low threshold and target balance (below the threshold, the replenish job tops it up)", tag: 'Administration',
    policy: policies.operator, body: 'required', variables: { input: 'body' }, success: { status: 204 },
    schemas: { request: 'AdminConfigureResourceReservePolicyCommand' },
  },
  {
    operationId: 'AdminConfigureReplenishmentRoute', operation: 'AdminConfigureReplenishmentRoute', method: 'POST', path: '/v1/admin/network-resource-reserve/replenishment-route',
    summary: "Configure where a reserve's top-ups come from: SANDBOX_FAUCET (sandbox networks) or EXTERNAL_TOP_UP", tag: 'Administration',
    policy: policies.operator, body: 'required', variables: { input: 'body' }, success: { status: 204 },
    schemas: { request: 'AdminConfigureReplenishmentRouteCommand' },
  },
];
