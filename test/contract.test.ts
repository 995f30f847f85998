import { readFileSync } from 'node:fs';
import type { ContractCase } from './contract-case';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { routes, type Route } from '../rest/routes';
import { nextCursorOf, pick, successBody } from '../rest/adapter';
import { statusOf } from '../src/errors';
import { deadLetteredDelivery, emit, emitTransactionCreated, registerEndpoint, webhookEnv } from './webhook-helpers';
import { bearer, createApiKey, createTestApp, PASSWORD, signUpMember, uniqueEmail, type RestResult, type TestApp } from './harness';
import { chainContractFixtures } from './contract-fixtures-chain';
import { moneyInContractFixtures } from './fixtures/deposits/contract-fixtures';
import { releaseContractFixtures } from './fixtures/release/contract-fixtures';
import { settlementContractFixtures } from './fixtures/settlements/contract-fixtures';
import { refundContractFixtures } from './fixtures/refunds/contract-fixtures';
import { adminContractFixtures } from './fixtures/admin/contract-fixtures';
import { reconciliationContractFixtures } from './fixtures/treasury/reconciliation-contract-fixtures';
import { withdrawalContractFixtures } from './fixtures/withdrawals/contract-fixtures';
import { withdrawalFlowContractFixtures } from './fixtures/withdrawals/withdrawal-contract-fixtures';
import { withdrawalResolutionContractFixtures } from './fixtures/withdrawals/resolution-contract-fixtures';
import { networkCostContractFixtures } from './fixtures/treasury/costs-contract-fixtures';
import { treasuryContractFixtures } from './fixtures/treasury/treasury-contract-fixtures';
import { webhookSandboxContractFixtures } from './fixtures/webhooks/contract-fixtures';

/**
 * The REST contract, generated from rest/routes.ts: for every route with an operation, the REST
 * answer must equal the GraphQL answer of rest/operations/<operation>.graphql run with the same
 * variables and credential. Each operation needs fixtures below; a route without one fails.
 *
 * Queries run REST and GraphQL on one fixture and compare exactly. Mutations run on two fixtures
 * built the same way (REST on one, GraphQL on the other) and compare after generated values
 * (ids, tokens, secrets, timestamps, e-mail addresses) are replaced by placeholders.
 */

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp({ env: webhookEnv });
});
afterAll(() => app.close());

type Headers = Record<string, string>;
/** A case: the outcome it is built for (a success, or the error code both sides must answer) and its setup. */
type Case = ContractCase;
type Setup = Awaited<ReturnType<Case['setup']>>;

// ---------------------------------------------------------------------------------------------
// Fixture helpers (all through the public REST surface).

type Member = Awaited<ReturnType<typeof signUpMember>>;
const member = () => signUpMember(app);

async function ok(r: Promise<RestResult>, status: number, what: string): Promise<RestResult> {
  const res = await r;
  if (res.status !== status) throw new Error(`fixture ${what}: ${res.status} ${res.text}`);
  return res;
}
const newApplication = async (m: Member) =>
  (await ok(app.rest('POST', `/v1/organizations/${m.organizationId}/applications`, { body: { name: 'Contract app' }, headers: m.headers }), 201, 'application'))
    .body.id as string;
const suspend = (m: Member, id: string) =>
  ok(app.rest('POST', `/v1/applications/${id}/suspend`, { body: { reason: 'contract' }, headers: m.headers }), 204, 'suspend');
const archive = (m: Member, id: string) => ok(app.rest('POST', `/v1/applications/${id}/archive`, { headers: m.headers }), 204, 'archive');
const revoke = (m: Member, id: string) => ok(app.rest('DELETE', `/v1/api-keys/${id}`, { headers: m.headers }), 204, 'revoke');

async function holder(email = uniqueEmail('holder')) {
  const r = await ok(app.rest('POST', '/v1/account-holders/signup', { body: { email, password: PASSWORD, name: 'Holder' } }), 200, 'account holder sign-up');
  return { email, accountHolderId: r.body.accountHolderId as string, tokens: r.body, headers: bearer(r.body.accessToken) };
}
async function invitation(m: Member, email = uniqueEmail('invitee')) {
  const r = await ok(
    app.rest('POST', `/v1/organizations/${m.organizationId}/account-holder-invitations`, { body: { email }, headers: m.headers }),
    201,
    'invitation',
  );
  return { email, token: r.body.token as string, invitationId: r.body.invitationId as string };
}
async function relationship(m: Member) {
  const h = await holder();
  const inv = await invitation(m, h.email);
  const c = await ok(app.rest('POST', '/v1/account-holders/invitations/claim', { body: { token: inv.token }, headers: h.headers }), 200, 'claim');
  return { holder: h, relationshipId: c.body.relationshipId as string };
}
async function account(m: Member, input: Record<string, unknown> = {}) {
  const r = await ok(
    app.rest('POST', `/v1/organizations/${m.organizationId}/accounts`, { body: { name: 'Contract account', mode: 'SANDBOX', ...input }, headers: m.headers }),
    201,
    'account',
  );
  return r.headers.get('location')!.split('/').pop()!;
}
/** A member added to m's organization with `role` (GraphQL addMember: members have no REST add route). */
async function addedMember(m: Member, role: string): Promise<string> {
  const r = await app.gql<{ addMember: { id: string } }>(
    'mutation($org: ID!, $input: AddMemberInput!) { addMember(organizationId: $org, input: $input) { id } }',
    { org: m.organizationId, input: { email: uniqueEmail('added'), name: 'Added', role } },
    m.headers,
  );
  if (!r.data) throw new Error(`fixture addMember: ${JSON.stringify(r.errors)}`);
  return r.data.addMember.id;
}
const freeze = (m: Member, id: string) =>
  ok(app.rest('POST', `/v1/accounts/${id}/freeze`, { body: { reason: 'contract' }, headers: m.headers }), 204, 'freeze');

const random = () => crypto.randomUUID();
const HOOK_URL = 'http://127.0.0.1:9/hooks';
const success = (name: string, setup: Case['setup']): Case => ({ name, expect: 'success', setup });
const failure = (name: string, code: string, setup: Case['setup']): Case => ({ name, expect: { code }, setup });

// ---------------------------------------------------------------------------------------------
// Fixtures, by route operationId.

const fixtures: Record<string, Case[]> = {
  // Catalog, custody and the sandbox chain (issue 4)
  ...chainContractFixtures(() => app),
  ...moneyInContractFixtures(() => app),
  ...releaseContractFixtures(() => app),
  ...settlementContractFixtures(() => app),
  ...refundContractFixtures(() => app),
  ...adminContractFixtures(() => app),
  ...reconciliationContractFixtures(() => app),
  ...withdrawalContractFixtures(() => app),
  ...withdrawalFlowContractFixtures(() => app),
  ...withdrawalResolutionContractFixtures(() => app),
  ...networkCostContractFixtures(() => app),
  ...treasuryContractFixtures(() => app),
  ...webhookSandboxContractFixtures(() => app),

  // Member authentication
  SignUp: [
    success('new organization', async () => ({
      variables: { input: { email: uniqueEmail('su'), password: PASSWORD, name: 'N', organizationName: 'O' } },
      headers: {},
    })),
    success('with an idempotency key', async () => ({
      variables: { input: { email: uniqueEmail('su'), password: PASSWORD, name: 'N', organizationName: 'O' }, idempotencyKey: 'k-' + random() },
      headers: {},
    })),
    failure('email taken', 'EMAIL_TAKEN', async () => {
      const m = await member();
      return { variables: { input: { email: m.email, password: PASSWORD, name: 'N', organizationName: 'O' } }, headers: {} };
    }),
    failure('short password', 'VALIDATION_FAILED', async () => ({
      variables: { input: { email: uniqueEmail(), password: 'short', name: 'N', organizationName: 'O' } },
      headers: {},
    })),
  ],
  Login: [
    success('right password', async () => ({ variables: { input: { email: (await member()).email, password: PASSWORD } }, headers: {} })),
    failure('wrong password', 'INVALID_LOGIN', async () => ({
      variables: { input: { email: (await member()).email, password: 'wrong wrong wrong' } },
      headers: {},
    })),
    failure('not an email', 'VALIDATION_FAILED', async () => ({ variables: { input: { email: 'nope', password: 'x' } }, headers: {} })),
  ],
  RefreshToken: [
    success('fresh token', async () => ({ variables: { input: { refreshToken: (await member()).tokens.refreshToken } }, headers: {} })),
    failure('unknown token', 'INVALID_REFRESH_TOKEN', async () => ({ variables: { input: { refreshToken: 'mrt_' + 'z'.repeat(43) } }, headers: {} })),
  ],
  RequestPasswordReset: [
    success('known email', async () => ({ variables: { input: { email: (await member()).email } }, headers: {} })),
    success('unknown email', async () => ({ variables: { input: { email: uniqueEmail('ghost') } }, headers: {} })),
    failure('not an email', 'VALIDATION_FAILED', async () => ({ variables: { input: { email: 'nope' } }, headers: {} })),
  ],
  Logout: [
    success('own session', async () => ({ variables: {}, headers: (await member()).headers })),
    failure('account holder session', 'PRINCIPAL_NOT_ALLOWED', async () => ({ variables: {}, headers: (await holder()).headers })),
  ],
  ConfirmPasswordReset: [
    success('mailed token', async () => {
      const m = await member();
      await ok(app.rest('POST', '/v1/auth/password-reset/request', { body: { email: m.email } }), 204, 'reset request');
      return { variables: { input: { token: app.mailer.last(m.email)!.data!.token, newPassword: 'another long passphrase' } }, headers: {} };
    }),
    failure('unknown token', 'INVALID_TOKEN', async () => ({
      variables: { input: { token: 'prt_' + 'q'.repeat(43), newPassword: 'another long passphrase' } },
      headers: {},
    })),
  ],

  // Applications, environments, API keys
  CreateApplication: [
    success('own organization', async () => {
      const m = await member();
      return { variables: { organizationId: m.organizationId, input: { name: 'Backend' } }, headers: m.headers };
    }),
    failure('empty name', 'VALIDATION_FAILED', async () => {
      const m = await member();
      return { variables: { organizationId: m.organizationId, input: { name: '' } }, headers: m.headers };
    }),
    failure('other organization', 'NOT_FOUND', async () => {
      const [m, other] = [await member(), await member()];
      return { variables: { organizationId: other.organizationId, input: { name: 'x' } }, headers: m.headers };
    }),
    failure('no credential', 'UNAUTHENTICATED', async () => ({ variables: { organizationId: random(), input: { name: 'x' } }, headers: {} })),
  ],
  ListApplications: [
    success('two applications', async () => {
      const m = await member();
      await newApplication(m);
      await newApplication(m);
      return { variables: { organizationId: m.organizationId }, headers: m.headers };
    }),
    failure('unknown organization', 'NOT_FOUND', async () => ({ variables: { organizationId: random() }, headers: (await member()).headers })),
    failure('api key', 'PRINCIPAL_NOT_ALLOWED', async () => {
      const m = await member();
      return { variables: { organizationId: m.organizationId }, headers: (await createApiKey(app, m)).headers };
    }),
  ],
  GetApplication: [
    success('suspended application', async () => {
      const m = await member();
      const id = await newApplication(m);
      await suspend(m, id);
      return { variables: { id }, headers: m.headers };
    }),
    failure('unknown', 'NOT_FOUND', async () => ({ variables: { id: random() }, headers: (await member()).headers })),
    failure('invalid credential', 'INVALID_CREDENTIAL', async () => ({ variables: { id: random() }, headers: bearer('garbage') })),
  ],
  CreateEnvironment: [
    success('sandbox', async () => {
      const m = await member();
      return { variables: { applicationId: await newApplication(m), input: { type: 'SANDBOX', name: 'Test' } }, headers: m.headers };
    }),
    failure('second sandbox', 'CONFLICT', async () => {
      const m = await member();
      const k = await createApiKey(app, m);
      return { variables: { applicationId: k.applicationId, input: { type: 'SANDBOX' } }, headers: m.headers };
    }),
    failure('unknown type', 'VALIDATION_FAILED', async () => {
      const m = await member();
      return { variables: { applicationId: await newApplication(m), input: { type: 'STAGING' } }, headers: m.headers };
    }),
  ],
  ListEnvironments: [
    success('two environments', async () => {
      const m = await member();
      const k = await createApiKey(app, m);
      await ok(app.rest('POST', `/v1/applications/${k.applicationId}/environments`, { body: { type: 'PRODUCTION' }, headers: m.headers }), 201, 'environment');
      return { variables: { applicationId: k.applicationId }, headers: m.headers };
    }),
    failure('unknown', 'NOT_FOUND', async () => ({ variables: { applicationId: random() }, headers: (await member()).headers })),
  ],
  GenerateApiKey: [
    success('production', async () => {
      const m = await member();
      const k = await createApiKey(app, m, 'PRODUCTION');
      return { variables: { environmentId: k.environmentId }, headers: m.headers };
    }),
    failure('suspended application', 'INVALID_STATE', async () => {
      const m = await member();
      const k = await createApiKey(app, m);
      await suspend(m, k.applicationId);
      return { variables: { environmentId: k.environmentId }, headers: m.headers };
    }),
    failure('unknown environment', 'NOT_FOUND', async () => ({ variables: { environmentId: random() }, headers: (await member()).headers })),
  ],
  ListApiKeys: [
    success('active and revoked keys', async () => {
      const m = await member();
      const k = await createApiKey(app, m);
      await ok(app.rest('POST', `/v1/environments/${k.environmentId}/api-keys`, { headers: m.headers }), 201, 'key');
      await revoke(m, k.apiKeyId);
      return { variables: { environmentId: k.environmentId }, headers: m.headers };
    }),
    failure('unknown environment', 'NOT_FOUND', async () => ({ variables: { environmentId: random() }, headers: (await member()).headers })),
  ],
  RotateApiKey: [
    success('with a grace period', async () => {
      const m = await member();
      const k = await createApiKey(app, m);
      return { variables: { id: k.apiKeyId, input: { expiresInSeconds: 60 } }, headers: m.headers };
    }),
    success('without input', async () => {
      const m = await member();
      return { variables: { id: (await createApiKey(app, m)).apiKeyId }, headers: m.headers };
    }),
    failure('revoked key', 'INVALID_STATE', async () => {
      const m = await member();
      const k = await createApiKey(app, m);
      await revoke(m, k.apiKeyId);
      return { variables: { id: k.apiKeyId }, headers: m.headers };
    }),
    failure('negative grace', 'VALIDATION_FAILED', async () => {
      const m = await member();
      return { variables: { id: (await createApiKey(app, m)).apiKeyId, input: { expiresInSeconds: -5 } }, headers: m.headers };
    }),
  ],
  RevokeApiKey: [
    success('active key', async () => {
      const m = await member();
      return { variables: { id: (await createApiKey(app, m)).apiKeyId }, headers: m.headers };
    }),
    failure('already revoked', 'INVALID_STATE', async () => {
      const m = await member();
      const k = await createApiKey(app, m);
      await revoke(m, k.apiKeyId);
      return { variables: { id: k.apiKeyId }, headers: m.headers };
    }),
    failure('unknown', 'NOT_FOUND', async () => ({ variables: { id: random() }, headers: (await member()).headers })),
  ],
  SuspendApplication: [
    success('active application', async () => {
      const m = await member();
      return { variables: { id: await newApplication(m), input: { reason: 'Contract' } }, headers: m.headers };
    }),
    failure('empty reason', 'VALIDATION_FAILED', async () => {
      const m = await member();
      return { variables: { id: await newApplication(m), input: { reason: ' ' } }, headers: m.headers };
    }),
    failure('archived', 'INVALID_STATE', async () => {
      const m = await member();
      const id = await newApplication(m);
      await archive(m, id);
      return { variables: { id, input: { reason: 'x' } }, headers: m.headers };
    }),
  ],
  ReactivateApplication: [
    success('suspended application', async () => {
      const m = await member();
      const id = await newApplication(m);
      await suspend(m, id);
      return { variables: { id }, headers: m.headers };
    }),
    failure('active application', 'INVALID_STATE', async () => {
      const m = await member();
      return { variables: { id: await newApplication(m) }, headers: m.headers };
    }),
  ],
  ArchiveApplication: [
    success('application with a key', async () => {
      const m = await member();
      return { variables: { id: (await createApiKey(app, m)).applicationId }, headers: m.headers };
    }),
    failure('already archived', 'INVALID_STATE', async () => {
      const m = await member();
      const id = await newApplication(m);
      await archive(m, id);
      return { variables: { id }, headers: m.headers };
    }),
  ],

  // Members
  RemoveMember: [
    success('a developer', async () => {
      const m = await member();
      return { variables: { organizationId: m.organizationId, id: await addedMember(m, 'DEVELOPER') }, headers: m.headers };
    }),
    failure('the last owner', 'INVALID_STATE', async () => {
      const m = await member();
      return { variables: { organizationId: m.organizationId, id: m.memberId }, headers: m.headers };
    }),
    failure('unknown member', 'NOT_FOUND', async () => {
      const m = await member();
      return { variables: { organizationId: m.organizationId, id: random() }, headers: m.headers };
    }),
  ],
  ChangeMemberRole: [
    success('developer to viewer', async () => {
      const m = await member();
      return { variables: { organizationId: m.organizationId, id: await addedMember(m, 'DEVELOPER'), input: { role: 'VIEWER' } }, headers: m.headers };
    }),
    failure('the last owner demoted', 'INVALID_STATE', async () => {
      const m = await member();
      return { variables: { organizationId: m.organizationId, id: m.memberId, input: { role: 'ADMIN' } }, headers: m.headers };
    }),
    failure('not a role', 'VALIDATION_FAILED', async () => {
      const m = await member();
      return { variables: { organizationId: m.organizationId, id: await addedMember(m, 'DEVELOPER'), input: { role: 'KING' } }, headers: m.headers };
    }),
  ],

  // Account holders
  CreateAccountHolderInvitation: [
    success('by a member', async () => {
      const m = await member();
      return { variables: { organizationId: m.organizationId, input: { email: uniqueEmail('inv') } }, headers: m.headers };
    }),
    failure('not an email', 'VALIDATION_FAILED', async () => {
      const m = await member();
      return { variables: { organizationId: m.organizationId, input: { email: 'nope' } }, headers: m.headers };
    }),
  ],
  ListAccountHolderInvitations: [
    success('claimed, revoked and pending', async () => {
      const m = await member();
      await relationship(m);
      const revoked = await invitation(m);
      await ok(
        app.rest('POST', `/v1/organizations/${m.organizationId}/account-holder-invitations/${revoked.invitationId}/revoke`, { headers: m.headers }),
        204,
        'revoke invitation',
      );
      await invitation(m);
      return { variables: { organizationId: m.organizationId }, headers: m.headers };
    }),
    success('first page of one', async () => {
      const m = await member();
      await invitation(m);
      await invitation(m);
      return { variables: { organizationId: m.organizationId, first: 1 }, headers: m.headers };
    }),
    failure('unknown organization', 'NOT_FOUND', async () => ({ variables: { organizationId: random() }, headers: (await member()).headers })),
  ],
  RevokeAccountHolderInvitation: [
    success('pending invitation', async () => {
      const m = await member();
      return { variables: { organizationId: m.organizationId, id: (await invitation(m)).invitationId }, headers: m.headers };
    }),
    failure('claimed invitation', 'INVALID_STATE', async () => {
      const m = await member();
      await relationship(m);
      const claimed = await app.deps.db.accountHolderInvitation.findFirstOrThrow({ where: { organizationId: m.organizationId } });
      return { variables: { organizationId: m.organizationId, id: claimed.id }, headers: m.headers };
    }),
    failure('unknown invitation', 'NOT_FOUND', async () => {
      const m = await member();
      return { variables: { organizationId: m.organizationId, id: random() }, headers: m.headers };
    }),
  ],
  RevokeRelationship: [
    success('active relationship', async () => {
      const m = await member();
      const r = await relationship(m);
      return { variables: { organizationId: m.organizationId, id: r.relationshipId }, headers: m.headers };
    }),
    failure('unknown relationship', 'NOT_FOUND', async () => {
      const m = await member();
      return { variables: { organizationId: m.organizationId, id: random() }, headers: m.headers };
    }),
  ],
  SignUpAccountHolder: [
    success('new holder', async () => ({ variables: { input: { email: uniqueEmail('h'), password: PASSWORD, name: 'H' } }, headers: {} })),
    failure('email taken', 'EMAIL_TAKEN', async () => ({
      variables: { input: { email: (await holder()).email, password: PASSWORD, name: 'H' } },
      headers: {},
    })),
  ],
  LoginAccountHolder: [
    success('right password', async () => ({ variables: { input: { email: (await holder()).email, password: PASSWORD } }, headers: {} })),
    failure('wrong password', 'INVALID_LOGIN', async () => ({
      variables: { input: { email: (await holder()).email, password: 'wrong wrong wrong' } },
      headers: {},
    })),
  ],
  RefreshAccountHolderToken: [
    success('fresh token', async () => ({ variables: { input: { refreshToken: (await holder()).tokens.refreshToken } }, headers: {} })),
    failure('unknown token', 'INVALID_REFRESH_TOKEN', async () => ({ variables: { input: { refreshToken: 'hrt_' + 'z'.repeat(43) } }, headers: {} })),
  ],
  LogoutAccountHolder: [
    success('own session', async () => ({ variables: {}, headers: (await holder()).headers })),
    failure('member session', 'PRINCIPAL_NOT_ALLOWED', async () => ({ variables: {}, headers: (await member()).headers })),
  ],
  RequestAccountHolderPasswordReset: [
    success('known email', async () => ({ variables: { input: { email: (await holder()).email } }, headers: {} })),
    success('unknown email', async () => ({ variables: { input: { email: uniqueEmail('ghost') } }, headers: {} })),
    failure('not an email', 'VALIDATION_FAILED', async () => ({ variables: { input: { email: 'nope' } }, headers: {} })),
  ],
  ConfirmAccountHolderPasswordReset: [
    success('mailed token', async () => {
      const h = await holder();
      await ok(app.rest('POST', '/v1/account-holders/password-reset/request', { body: { email: h.email } }), 204, 'reset request');
      return { variables: { input: { token: app.mailer.last(h.email)!.data!.token, newPassword: 'another long passphrase' } }, headers: {} };
    }),
    failure('unknown token', 'INVALID_TOKEN', async () => ({
      variables: { input: { token: 'hpt_' + 'q'.repeat(43), newPassword: 'another long passphrase' } },
      headers: {},
    })),
  ],
  GetAccountHolderMe: [
    success('with a relationship', async () => {
      const m = await member();
      const r = await relationship(m);
      return { variables: {}, headers: r.holder.headers };
    }),
    failure('member session', 'PRINCIPAL_NOT_ALLOWED', async () => ({ variables: {}, headers: (await member()).headers })),
  ],
  ClaimAccountHolderInvitation: [
    success('own invitation', async () => {
      const m = await member();
      const h = await holder();
      const inv = await invitation(m, h.email);
      return { variables: { input: { token: inv.token } }, headers: h.headers };
    }),
    failure('unknown token', 'INVALID_TOKEN', async () => ({ variables: { input: { token: 'inv_' + 'w'.repeat(43) } }, headers: (await holder()).headers })),
  ],
  SignUpAndClaimAccountHolderInvitation: [
    success('invited email', async () => {
      const m = await member();
      const inv = await invitation(m);
      return { variables: { input: { token: inv.token, email: inv.email, password: PASSWORD, name: 'H' } }, headers: {} };
    }),
    failure('unknown token', 'INVALID_TOKEN', async () => ({
      variables: { input: { token: 'inv_' + 'w'.repeat(43), email: uniqueEmail(), password: PASSWORD, name: 'H' } },
      headers: {},
    })),
  ],

  // Accounts
  CreateAccount: [
    success('sandbox account', async () => {
      const m = await member();
      return { variables: { organizationId: m.organizationId, input: { name: 'Main', mode: 'SANDBOX' } }, headers: m.headers };
    }),
    failure('empty name', 'VALIDATION_FAILED', async () => {
      const m = await member();
      return { variables: { organizationId: m.organizationId, input: { name: '' } }, headers: m.headers };
    }),
  ],
  ListAccountsByOrganization: [
    success('two accounts', async () => {
      const m = await member();
      await account(m, { reference: 'a' });
      await account(m, { reference: 'b' });
      return { variables: { organizationId: m.organizationId }, headers: m.headers };
    }),
    success('first page of one', async () => {
      const m = await member();
      await account(m, { reference: 'a' });
      await account(m, { reference: 'b' });
      return { variables: { organizationId: m.organizationId, first: 1 }, headers: m.headers };
    }),
    failure('unknown organization', 'NOT_FOUND', async () => ({ variables: { organizationId: random() }, headers: (await member()).headers })),
  ],
  AuthorizeAccountForApplication: [
    success('own application', async () => {
      const m = await member();
      const id = await account(m);
      return { variables: { organizationId: m.organizationId, id, input: { applicationId: await newApplication(m) } }, headers: m.headers };
    }),
    failure('unknown account', 'NOT_FOUND', async () => {
      const m = await member();
      return { variables: { organizationId: m.organizationId, id: random(), input: { applicationId: await newApplication(m) } }, headers: m.headers };
    }),
  ],
  GetAccount: [
    success('own account', async () => {
      const m = await member();
      return { variables: { id: await account(m) }, headers: m.headers };
    }),
    failure('unknown', 'NOT_FOUND', async () => ({ variables: { id: random() }, headers: (await member()).headers })),
  ],
  FreezeAccount: [
    success('active account', async () => {
      const m = await member();
      return { variables: { id: await account(m), input: { reason: 'Contract' } }, headers: m.headers };
    }),
    failure('already frozen', 'INVALID_STATE', async () => {
      const m = await member();
      const id = await account(m);
      await freeze(m, id);
      return { variables: { id, input: { reason: 'again' } }, headers: m.headers };
    }),
  ],
  UnfreezeAccount: [
    success('frozen account', async () => {
      const m = await member();
      const id = await account(m);
      await freeze(m, id);
      return { variables: { id }, headers: m.headers };
    }),
    failure('active account', 'INVALID_STATE', async () => {
      const m = await member();
      return { variables: { id: await account(m) }, headers: m.headers };
    }),
  ],
  CloseAccount: [
    success('active account', async () => {
      const m = await member();
      return { variables: { id: await account(m) }, headers: m.headers };
    }),
    failure('unknown', 'NOT_FOUND', async () => ({ variables: { id: random() }, headers: (await member()).headers })),
  ],
  GetAccountBalances: [
    success('own account (no balance yet)', async () => {
      const m = await member();
      return { variables: { accountId: await account(m) }, headers: m.headers };
    }),
    failure('other organization', 'NOT_FOUND', async () => ({ variables: { accountId: await account(await member()) }, headers: (await member()).headers })),
  ],

  // Webhooks (deliveries go nowhere: port 9 on 127.0.0.1 refuses)
  CreateWebhookEndpoint: [
    success('receiver on 127.0.0.1', async () => {
      const m = await member();
      return { variables: { organizationId: m.organizationId, input: { url: HOOK_URL } }, headers: m.headers };
    }),
    failure('not a URL', 'VALIDATION_FAILED', async () => {
      const m = await member();
      return { variables: { organizationId: m.organizationId, input: { url: 'not a url' } }, headers: m.headers };
    }),
  ],
  GetWebhookEndpoint: [
    success('own endpoint', async () => {
      const m = await member();
      return { variables: { id: (await registerEndpoint(app, m, HOOK_URL)).id }, headers: m.headers };
    }),
    failure('unknown', 'NOT_FOUND', async () => ({ variables: { id: random() }, headers: (await member()).headers })),
  ],
  RotateWebhookEndpointSecret: [
    success('active endpoint', async () => {
      const m = await member();
      return { variables: { id: (await registerEndpoint(app, m, HOOK_URL)).id }, headers: m.headers };
    }),
    failure('deactivated endpoint', 'INVALID_STATE', async () => {
      const m = await member();
      const { id } = await registerEndpoint(app, m, HOOK_URL);
      await ok(app.rest('POST', `/v1/webhook-endpoints/${id}/deactivate`, { headers: m.headers }), 204, 'deactivate');
      return { variables: { id }, headers: m.headers };
    }),
  ],
  DeactivateWebhookEndpoint: [
    success('active endpoint', async () => {
      const m = await member();
      return { variables: { id: (await registerEndpoint(app, m, HOOK_URL)).id }, headers: m.headers };
    }),
    failure('unknown', 'NOT_FOUND', async () => ({ variables: { id: random() }, headers: (await member()).headers })),
  ],
  GetWebhookDelivery: [
    success('pending delivery', async () => {
      const m = await member();
      await registerEndpoint(app, m, HOOK_URL);
      const { deliveries } = await emitTransactionCreated(app, m.organizationId);
      return { variables: { id: deliveries[0]!.id }, headers: m.headers };
    }),
    failure('unknown', 'NOT_FOUND', async () => ({ variables: { id: random() }, headers: (await member()).headers })),
  ],
  ListWebhookDeliveries: [
    success('two deliveries', async () => {
      const m = await member();
      const { id } = await registerEndpoint(app, m, HOOK_URL);
      await emitTransactionCreated(app, m.organizationId);
      await emit(app, m.organizationId, 'withdrawal.cancelled', { WithdrawalId: random() });
      return { variables: { endpointId: id }, headers: m.headers };
    }),
    success('filtered by eventType, one per page', async () => {
      const m = await member();
      const { id } = await registerEndpoint(app, m, HOOK_URL);
      await emitTransactionCreated(app, m.organizationId);
      await emitTransactionCreated(app, m.organizationId);
      await emit(app, m.organizationId, 'withdrawal.cancelled', { WithdrawalId: random() });
      return { variables: { endpointId: id, eventType: 'transaction.created', first: 1 }, headers: m.headers };
    }),
    failure('unknown event type', 'VALIDATION_FAILED', async () => {
      const m = await member();
      const { id } = await registerEndpoint(app, m, HOOK_URL);
      return { variables: { endpointId: id, eventType: 'transaction.exploded' }, headers: m.headers };
    }),
  ],
  RedeliverWebhookDelivery: [
    success('dead-lettered delivery', async () => {
      const m = await member();
      return { variables: { id: (await deadLetteredDelivery(app, m)).deliveryId }, headers: m.headers };
    }),
    failure('pending delivery', 'INVALID_STATE', async () => {
      const m = await member();
      await registerEndpoint(app, m, HOOK_URL);
      const { deliveries } = await emitTransactionCreated(app, m.organizationId);
      return { variables: { id: deliveries[0]!.id }, headers: m.headers };
    }),
  ],
};

// ---------------------------------------------------------------------------------------------
// The generator.

/** The REST request of a route for GraphQL variables, by the route's declarative mapping. */
function restRequest(route: Route, s: Setup): { path: string; body?: unknown; headers: Headers } {
  const headers: Headers = { ...s.headers };
  const query = new URLSearchParams();
  let path = route.path;
  let body: unknown;
  for (const [name, source] of Object.entries(route.variables ?? {})) {
    const value = s.variables[name];
    if (value === undefined) continue;
    if (source === 'body') body = value;
    else {
      const [kind, key] = [source.slice(0, source.indexOf('.')), source.slice(source.indexOf('.') + 1)];
      if (kind === 'path') path = path.replace(`{${key}}`, encodeURIComponent(String(value)));
      else if (kind === 'query') for (const v of Array.isArray(value) ? value : [value]) query.append(key, String(v));
      else if (kind === 'header') headers[key] = String(value);
    }
  }
  for (const name of Object.keys(s.variables))
    if (!(route.variables && name in route.variables)) throw new Error(`${route.operationId}: variable ${name} has no REST source`);
  if (/\{\w+\}/.test(path)) throw new Error(`${route.operationId}: path parameters left unfilled in ${path}`);
  return { path: query.size ? `${path}?${query}` : path, body, headers };
}

const patterns: [RegExp, (m: string) => string][] = [
  [/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, () => '<uuid>'],
  [/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/, () => '<time>'],
  [/^[\w-]+\.[\w-]+\.[\w-]+$/, () => '<jwt>'],
  [/^sk_(test|live)_[0-9A-Za-z]+$/, (s) => s.slice(0, 8) + (s.length > 20 ? '<secret>' : '<prefix>')],
  [/^[a-z]{2,5}_[0-9A-Za-z]{20,}$/, (s) => s.slice(0, s.indexOf('_')) + '_<token>'],
  [/^[^@\s]+@[^@\s]+$/, () => '<email>'],
  [/^(0x)?[0-9a-f]{40,}$/, () => '<hex>'], // chain addresses, keys and hashes
];
/** Replaces generated values (ids, times, tokens, secrets, addresses) by placeholders, in strings and Location paths. */
function normalize(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalize);
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, normalize(v)]));
  if (typeof value !== 'string') return value;
  if (value.startsWith('/'))
    return value
      .split('/')
      .map((p) => normalize(p))
      .join('/');
  for (const [re, f] of patterns) if (re.test(value)) return f(value);
  return value;
}

function fill(template: string, data: unknown): string {
  return template.replace(/\{([\w.]+)\}/g, (_m, p: string) => String(pick(data, p)));
}

async function runGraphql(route: Route, s: Setup, clientIp: string) {
  const document = readFileSync(resolve(import.meta.dirname, '../rest/operations', `${route.operation}.graphql`), 'utf8');
  return app.gql<Record<string, unknown>>(document, s.variables, s.headers, clientIp);
}

/** Each case calls from its own address, so the credential-guessing limits of one never refuse another's. */
let cases = 0;
const caseIp = () => `10.${(++cases >> 8) & 255}.${cases & 255}.1`;

const withOperation = routes.filter((r) => r.operation);
const isQuery = (route: Route) => /^\s*query\b/.test(readFileSync(resolve(import.meta.dirname, '../rest/operations', `${route.operation}.graphql`), 'utf8'));

test('routes with operations exist (the generator has something to check)', () => {
  expect(withOperation.length).toBeGreaterThan(10);
});

test('no fixture is left for an operation the route table does not have', () => {
  const known = new Set(withOperation.map((r) => r.operationId));
  expect(Object.keys(fixtures).filter((k) => !known.has(k) && !routes.some((r) => r.operationId === k))).toEqual([]);
});

describe.each(withOperation.map((r) => [`${r.operationId} ${r.method} ${r.path}`, r] as const))('%s', (_label, route) => {
  test('has contract fixtures with a success and an error case', () => {
    const cases = fixtures[route.operationId];
    expect(cases, `add fixtures for ${route.operationId} to test/contract.test.ts`).toBeDefined();
    expect(
      cases!.some((c) => c.expect === 'success'),
      'a success case',
    ).toBe(true);
    expect(
      cases!.some((c) => c.expect !== 'success'),
      'an error case',
    ).toBe(true);
  });

  const cases = fixtures[route.operationId] ?? [];
  test.each(cases.map((c) => [c.name, c] as const))('REST equals GraphQL: %s', async (_name, c) => {
    const query = isQuery(route);
    const restSetup = await c.setup();
    const gqlSetup = query ? restSetup : await c.setup();
    const req = restRequest(route, restSetup);
    const clientIp = caseIp();
    const rest = await app.rest(route.method, req.path, { headers: req.headers, clientIp, ...(req.body !== undefined ? { body: req.body } : {}) });
    const gql = await runGraphql(route, gqlSetup, clientIp);
    const why = `REST ${rest.status} ${rest.text}\nGraphQL ${JSON.stringify(gql)}`;
    const same = (v: unknown) => (query ? v : normalize(v));

    if (gql.errors?.length) {
      const code = gql.errors[0]!.extensions?.code;
      expect(rest.status, why).toBe(statusOf(code));
      expect(rest.body?.code, why).toBe(code);
      const tokenResult = route.tokenResultOn401 && rest.status === 401; // the spec's TokenResult media type
      expect(rest.headers.get('content-type'), why).toMatch(tokenResult ? /^application\/json/ : /^application\/problem\+json/);
    } else {
      expect(rest.status, why).toBe(route.success.status);
      if (route.success.body !== undefined && route.success.status !== 204) expect(same(rest.body), why).toEqual(same(successBody(route, gql.data)));
      else expect(rest.text, why).toBe('');
      if (route.success.location) expect(same(rest.headers.get('location')), why).toBe(same(fill(route.success.location, gql.data)));
      if (route.success.page === 'list') {
        const cursor = nextCursorOf(route, gql.data);
        if (typeof cursor === 'string') expect(rest.headers.get('link'), why).toContain(`after=${encodeURIComponent(cursor)}`);
        else expect(rest.headers.get('link'), why).toBeNull();
      }
    }
    // The case's own expectation: both sides reached the outcome it was built for.
    if (c.expect === 'success') expect(gql.errors, why).toBeUndefined();
    else expect(gql.errors?.[0]?.extensions?.code, why).toBe(c.expect.code);
  });
});
