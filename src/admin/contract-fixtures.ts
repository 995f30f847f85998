import { contractCaseHelpers, type ContractCase } from '../../test/contract-case';
import type { TestApp } from '../../test/harness';
import { createApiKey, signUpMember } from '../../test/harness';
import { fundedTransaction } from '../settlements/testing';

/**
 * Contract fixtures (test/contract.test.ts) of the operator search and dashboard routes: every
 * success case is read by a platform operator; data is created through the public REST surface.
 */
export function adminContractFixtures(getApp: () => TestApp): Record<string, ContractCase[]> {
  const app = () => getApp();
  const { success, failure, operator, random, ok } = contractCaseHelpers(getApp);

  /** A member's organization with two accounts (two account.created audit entries). */
  async function organizationWithAccounts() {
    const m = await signUpMember(app());
    for (const name of ['First', 'Second'])
      await ok(app().rest('POST', `/v1/organizations/${m.organizationId}/accounts`, { body: { name, mode: 'SANDBOX' }, headers: m.headers }), 201, 'account');
    return m;
  }

  return {
    SearchAuditLog: [
      success("one organization's account creations", async () => {
        const m = await organizationWithAccounts();
        return { variables: { organizationId: m.organizationId, entityType: 'Account', actionType: 'account.created' }, headers: await operator() };
      }),
      success('second page of one', async () => {
        const m = await organizationWithAccounts();
        return { variables: { organizationId: m.organizationId, skip: 1, take: 1 }, headers: await operator() };
      }),
      failure('take above 500', 'VALIDATION_FAILED', async () => ({ variables: { take: 501 }, headers: await operator() })),
      failure('malformed entityId', 'VALIDATION_FAILED', async () => ({ variables: { entityId: 'nope' }, headers: await operator() })),
      failure('member', 'PRINCIPAL_NOT_ALLOWED', async () => ({ variables: {}, headers: (await signUpMember(app())).headers })),
    ],
    GetAuditLogEntry: [
      success('an account creation', async () => {
        const m = await organizationWithAccounts();
        const headers = await operator();
        const page = await ok(app().rest('GET', `/v1/admin/audit-log?organizationId=${m.organizationId}&take=1`, { headers }), 200, 'search');
        return { variables: { id: page.body.items[0].id }, headers };
      }),
      failure('unknown', 'NOT_FOUND', async () => ({ variables: { id: random() }, headers: await operator() })),
      failure('API key', 'PRINCIPAL_NOT_ALLOWED', async () => {
        const m = await signUpMember(app());
        return { variables: { id: random() }, headers: (await createApiKey(app(), m)).headers };
      }),
    ],
    GetStuckOperations: [
      // Nothing is idle for 30 days in a test database: a deterministic (empty) answer on both surfaces.
      success('operator, idle for 30 days', async () => ({ variables: { olderThanSeconds: 2_592_000, limit: 10 }, headers: await operator() })),
      failure('limit 0', 'VALIDATION_FAILED', async () => ({ variables: { limit: 0 }, headers: await operator() })),
      failure('no credential', 'UNAUTHENTICATED', async () => ({ variables: {}, headers: {} })),
    ],
    GetPlatformDashboard: [
      success('operator', async () => {
        await organizationWithAccounts();
        return { variables: {}, headers: await operator() };
      }),
      failure('no credential', 'UNAUTHENTICATED', async () => ({ variables: {}, headers: {} })),
    ],
    SearchLedgerEntriesAdmin: [
      success("a funded transaction's asset-network", async () => {
        const { f } = await fundedTransaction(app());
        return { variables: { assetNetworkId: f.catalog.assetNetworkId }, headers: await operator() };
      }),
      success('deposit confirmations in a window, one per page', async () => {
        const { f } = await fundedTransaction(app());
        const now = app().clock.now().getTime();
        return {
          variables: {
            assetNetworkId: f.catalog.assetNetworkId, nature: 'deposit.confirmed', from: new Date(now - 3_600_000).toISOString(),
            to: new Date(now + 3_600_000).toISOString(), take: 1,
          },
          headers: await operator(),
        };
      }),
      failure('from after to', 'VALIDATION_FAILED', async () => ({
        variables: { from: '2026-02-01T00:00:00.000Z', to: '2026-01-01T00:00:00.000Z' },
        headers: await operator(),
      })),
      failure('skip above 100000', 'VALIDATION_FAILED', async () => ({ variables: { skip: 100_001 }, headers: await operator() })),
    ],
  };
}
