import { contractCaseHelpers, type ContractCase } from '../../test/contract-case';
import type { TestApp } from '../../test/harness';
import { createApiKey, signUpMember } from '../../test/harness';
import { setupSandboxCatalog } from '../../test/money-helpers';
import { type MoneyFixture } from '../deposits/testing';
import { drainMoneyWork, fundedTransaction } from './testing';

/**
 * Contract fixtures (test/contract.test.ts) of the settlement routes: requesting and reading
 * settlements, the operator's retry, pricing policies and the revenue destination. Each case builds
 * its own integrator, sandbox chain and funded transaction through the public REST surface.
 */
export type { ContractCase };

export function settlementContractFixtures(getApp: () => TestApp): Record<string, ContractCase[]> {
  const app = () => getApp();
  const { success, failure, operator, random, ok } = contractCaseHelpers(getApp);

  const funded = (amount?: bigint) => fundedTransaction(app(), amount);
  async function request(f: MoneyFixture, transactionId: string, body?: Record<string, unknown>) {
    const r = await ok(app().rest('POST', `/v1/transactions/${transactionId}/settlements`, { headers: f.apiKeyHeaders, ...(body ? { body } : {}) }), 201, 'request settlement');
    return r.headers.get('location')!.split('/').pop()!;
  }
  /** An EXECUTED settlement of part of the escrow, with a platform fee. */
  async function executed() {
    const { f, transactionId } = await funded();
    await ok(
      app().rest('POST', '/v1/admin/pricing-policy', { headers: f.catalog.operator.headers, body: { scope: 'PLATFORM', assetNetworkId: f.catalog.assetNetworkId, percentage: '1.25' } }),
      204, 'pricing policy',
    );
    const settlementId = await request(f, transactionId, { amount: '400000' });
    await drainMoneyWork(app());
    return { f, transactionId, settlementId };
  }
  /** A FAILED settlement: the transaction was frozen between the request and the execution, then unfrozen. */
  async function failed() {
    const { f, transactionId } = await funded();
    const settlementId = await request(f, transactionId);
    await ok(app().rest('POST', `/v1/transactions/${transactionId}/freeze`, { headers: f.member.headers, body: { reason: 'contract' } }), 204, 'freeze');
    await drainMoneyWork(app());
    await ok(app().rest('POST', `/v1/transactions/${transactionId}/unfreeze`, { headers: f.member.headers }), 204, 'unfreeze');
    return { f, transactionId, settlementId };
  }

  return {
    RequestSettlement: [
      success('API key, part of the escrow', async () => {
        const { f, transactionId } = await funded();
        return { variables: { transactionId, input: { amount: '250000' } }, headers: f.apiKeyHeaders };
      }),
      success('member, everything, with an idempotency key', async () => {
        const { f, transactionId } = await funded();
        return { variables: { transactionId, idempotencyKey: 'k-' + random() }, headers: f.member.headers };
      }),
      failure('more than the escrow holds', 'INVALID_STATE', async () => {
        const { f, transactionId } = await funded();
        return { variables: { transactionId, input: { amount: '1000001' } }, headers: f.apiKeyHeaders };
      }),
      failure('zero amount', 'VALIDATION_FAILED', async () => {
        const { f, transactionId } = await funded();
        return { variables: { transactionId, input: { amount: '0' } }, headers: f.apiKeyHeaders };
      }),
      failure('another organization', 'NOT_FOUND', async () => {
        const { transactionId } = await funded();
        return { variables: { transactionId }, headers: (await signUpMember(app())).headers };
      }),
    ],
    ListTransactionSettlements: [
      success('an executed settlement', async () => {
        const { f, transactionId } = await executed();
        return { variables: { id: transactionId }, headers: f.apiKeyHeaders };
      }),
      failure('unknown transaction', 'NOT_FOUND', async () => ({ variables: { id: random() }, headers: (await signUpMember(app())).headers })),
    ],
    GetSettlement: [
      success('executed, with a fee', async () => {
        const { f, settlementId } = await executed();
        return { variables: { id: settlementId }, headers: f.member.headers };
      }),
      success('operator', async () => {
        const { settlementId } = await executed();
        return { variables: { id: settlementId }, headers: await operator() };
      }),
      failure('another organization', 'NOT_FOUND', async () => {
        const { settlementId } = await executed();
        return { variables: { id: settlementId }, headers: (await signUpMember(app())).headers };
      }),
    ],
    AdminRetrySettlement: [
      success('a failed settlement', async () => {
        const { settlementId } = await failed();
        return { variables: { id: settlementId }, headers: await operator() };
      }),
      failure('an executed settlement', 'INVALID_STATE', async () => {
        const { settlementId } = await executed();
        return { variables: { id: settlementId }, headers: await operator() };
      }),
      failure('unknown', 'NOT_FOUND', async () => ({ variables: { id: random() }, headers: await operator() })),
      failure('member', 'PRINCIPAL_NOT_ALLOWED', async () => ({ variables: { id: random() }, headers: (await signUpMember(app())).headers })),
    ],
    AdminConfigurePricingPolicy: [
      success('organization scope, one asset-network', async () => {
        const [catalog, m] = [await setupSandboxCatalog(app()), await signUpMember(app())];
        return {
          variables: { input: { scope: 'ORGANIZATION', organizationId: m.organizationId, assetNetworkId: catalog.assetNetworkId, percentage: '2', minimumAmount: '100', maximumAmount: '5000' } },
          headers: catalog.operator.headers,
        };
      }),
      failure('a fixed amount for every asset-network', 'VALIDATION_FAILED', async () => ({
        variables: { input: { scope: 'PLATFORM', fixedAmount: '10' } },
        headers: await operator(),
      })),
      failure('API key', 'PRINCIPAL_NOT_ALLOWED', async () => {
        const m = await signUpMember(app());
        return { variables: { input: { scope: 'PLATFORM', percentage: '1' } }, headers: (await createApiKey(app(), m)).headers };
      }),
    ],
    AdminRegisterGlobalRevenueAccountExecutionDestination: [
      success('a sandbox address', async () => {
        const catalog = await setupSandboxCatalog(app());
        return { variables: { input: { assetNetworkId: catalog.assetNetworkId, address: '0x' + 'ab'.repeat(20), label: 'Treasury' } }, headers: catalog.operator.headers };
      }),
      failure('not an address of the network', 'VALIDATION_FAILED', async () => {
        const catalog = await setupSandboxCatalog(app());
        return { variables: { input: { assetNetworkId: catalog.assetNetworkId, address: 'bc1qnotevm' } }, headers: catalog.operator.headers };
      }),
      failure('unknown asset-network', 'VALIDATION_FAILED', async () => ({ variables: { input: { assetNetworkId: random(), address: '0x' + 'ab'.repeat(20) } }, headers: await operator() })),
    ],
  };
}
