import { contractCaseHelpers, type ContractCase } from '../../test/contract-case';
import { createApiKey, signUpMember, type TestApp } from '../../test/harness';
import { setupSandboxCatalog } from '../../test/money-helpers';

/**
 * Contract fixtures (test/contract.test.ts) of the withdrawal destination routes and of the ledger
 * correction routes (AdminRecordLedgerCorrection, AdminGetLedgerCorrection). Each case builds its
 * own organization and sandbox catalog through the public REST surface.
 */
export function withdrawalContractFixtures(getApp: () => TestApp): Record<string, ContractCase[]> {
  const app = () => getApp();
  const { success, failure, operator, random, ok } = contractCaseHelpers(getApp);
  const ADDRESS = '0x00000000000000000000000000000000000000aa';

  async function integrator() {
    const catalog = await setupSandboxCatalog(app());
    const member = await signUpMember(app());
    return { catalog, member };
  }
  async function destination(address = ADDRESS) {
    const x = await integrator();
    const r = await ok(
      app().rest('POST', `/v1/organizations/${x.member.organizationId}/withdrawal-destinations`, { headers: x.member.headers, body: { networkId: x.catalog.networkId, address, label: 'Cold' } }),
      201, 'register destination',
    );
    return { ...x, id: r.headers.get('location')!.split('/').pop()! };
  }
  /** An organization with an account and a correction body moving `amount` from its SUSPENSE to the account. */
  async function correctable(amount = '500') {
    const x = await integrator();
    const acc = await ok(app().rest('POST', `/v1/organizations/${x.member.organizationId}/accounts`, { headers: x.member.headers, body: { name: 'Corrected', mode: 'SANDBOX' } }), 201, 'account');
    const accountId = acc.headers.get('location')!.split('/').pop()!;
    const input = {
      reason: 'reconciliation difference', organizationId: x.member.organizationId,
      lines: [
        { account: { kind: 'SUSPENSE', assetNetworkId: x.catalog.assetNetworkId }, direction: 'DEBIT', amount },
        { account: { kind: 'CUSTOMER', ownerId: accountId, assetNetworkId: x.catalog.assetNetworkId }, direction: 'CREDIT', amount },
      ],
    };
    return { ...x, accountId, input };
  }

  return {
    RegisterWithdrawalDestination: [
      success('member, with a label and an idempotency key', async () => {
        const x = await integrator();
        return { variables: { organizationId: x.member.organizationId, input: { networkId: x.catalog.networkId, address: ADDRESS, label: 'Treasury' }, idempotencyKey: 'k-' + random() }, headers: x.member.headers };
      }),
      success('sandbox API key', async () => {
        const x = await integrator();
        const key = await createApiKey(app(), x.member, 'SANDBOX');
        return { variables: { organizationId: x.member.organizationId, input: { networkId: x.catalog.networkId, address: ADDRESS } }, headers: key.headers };
      }),
      failure('malformed address', 'VALIDATION_FAILED', async () => {
        const x = await integrator();
        return { variables: { organizationId: x.member.organizationId, input: { networkId: x.catalog.networkId, address: '0x12' } }, headers: x.member.headers };
      }),
      failure('another organization', 'NOT_FOUND', async () => {
        const x = await integrator();
        const other = await signUpMember(app());
        return { variables: { organizationId: other.organizationId, input: { networkId: x.catalog.networkId, address: ADDRESS } }, headers: x.member.headers };
      }),
    ],
    GetWithdrawalDestination: [
      success('member', async () => {
        const d = await destination();
        return { variables: { id: d.id }, headers: d.member.headers };
      }),
      success('blocked, read by an operator', async () => {
        const d = await destination();
        const op = await operator();
        await ok(app().rest('POST', `/v1/admin/withdrawal-destinations/${d.id}/block`, { headers: op, body: { reason: 'fraud' } }), 204, 'block');
        return { variables: { id: d.id }, headers: op };
      }),
      failure('another organization', 'NOT_FOUND', async () => ({ variables: { id: (await destination()).id }, headers: (await signUpMember(app())).headers })),
    ],
    ListWithdrawalDestinations: [
      success('two, first page of one', async () => {
        const d = await destination();
        await ok(
          app().rest('POST', `/v1/organizations/${d.member.organizationId}/withdrawal-destinations`, { headers: d.member.headers, body: { networkId: d.catalog.networkId, address: '0x00000000000000000000000000000000000000bb' } }),
          201, 'second destination',
        );
        return { variables: { organizationId: d.member.organizationId, limit: 1 }, headers: d.member.headers };
      }),
      failure('another organization', 'NOT_FOUND', async () => {
        const d = await destination();
        return { variables: { organizationId: d.member.organizationId }, headers: (await signUpMember(app())).headers };
      }),
    ],
    AdminBlockWithdrawalDestination: [
      success('active destination', async () => ({ variables: { id: (await destination()).id, input: { reason: 'sanctions screening hit' } }, headers: await operator() })),
      failure('blocked already', 'INVALID_STATE', async () => {
        const d = await destination();
        const op = await operator();
        await ok(app().rest('POST', `/v1/admin/withdrawal-destinations/${d.id}/block`, { headers: op, body: { reason: 'first' } }), 204, 'block');
        return { variables: { id: d.id, input: { reason: 'second' } }, headers: op };
      }),
      failure('unknown', 'NOT_FOUND', async () => ({ variables: { id: random(), input: { reason: 'x' } }, headers: await operator() })),
    ],
    AdminRecordLedgerCorrection: [
      success('suspense to a customer account', async () => ({ variables: { input: (await correctable()).input }, headers: await operator() })),
      failure('unbalanced', 'VALIDATION_FAILED', async () => {
        const c = await correctable();
        c.input.lines[1]!.amount = '499';
        return { variables: { input: c.input }, headers: await operator() };
      }),
      failure('insufficient funds', 'INVALID_STATE', async () => {
        const c = await correctable();
        c.input.lines[0]!.direction = 'CREDIT';
        c.input.lines[1]!.direction = 'DEBIT';
        return { variables: { input: c.input }, headers: await operator() };
      }),
      failure('a member', 'PRINCIPAL_NOT_ALLOWED', async () => {
        const c = await correctable();
        return { variables: { input: c.input }, headers: c.member.headers };
      }),
    ],
    AdminGetLedgerCorrection: [
      success('recorded', async () => {
        const c = await correctable();
        const op = await operator();
        const r = await ok(app().rest('POST', '/v1/admin/ledger-corrections', { headers: op, body: c.input }), 201, 'correction');
        return { variables: { id: r.headers.get('location')!.split('/').pop()! }, headers: op };
      }),
      failure('unknown', 'NOT_FOUND', async () => ({ variables: { id: random() }, headers: await operator() })),
    ],
  };
}
