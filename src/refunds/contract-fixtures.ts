import { contractCaseHelpers, type ContractCase } from '../../test/contract-case';
import type { TestApp } from '../../test/harness';
import { signUpMember } from '../../test/harness';
import { createIntent, moneyFixture, type MoneyFixture } from '../deposits/testing';
import { drainMoneyWork, fundedTransaction } from '../settlements/testing';

/**
 * Contract fixtures (test/contract.test.ts) of the refund routes and AdminConfigureRefundFeePolicy.
 * Each case builds its own integrator, sandbox chain and funded transaction through the public REST
 * surface. No case configures a platform-wide policy (it would reach every other fixture).
 */
export type { ContractCase };

export function refundContractFixtures(getApp: () => TestApp): Record<string, ContractCase[]> {
  const app = () => getApp();
  const { success, failure, operator, random, ok } = contractCaseHelpers(getApp);

  const funded = (amount?: bigint) => fundedTransaction(app(), amount);
  /** A refund of `body`, executed (or rejected) by the refund job. */
  async function refunded(f: MoneyFixture, transactionId: string, body: Record<string, unknown>) {
    const r = await ok(app().rest('POST', `/v1/transactions/${transactionId}/refunds`, { headers: f.apiKeyHeaders, body }), 201, 'request refund');
    await drainMoneyWork(app());
    return r.headers.get('location')!.split('/').pop()!;
  }

  return {
    RequestRefund: [
      success('API key, part of the escrow, with a reason', async () => {
        const { f, transactionId } = await funded();
        return { variables: { transactionId, input: { amount: '400000', reason: 'item returned' } }, headers: f.apiKeyHeaders };
      }),
      success('member, everything, with an idempotency key', async () => {
        const { f, transactionId } = await funded();
        return { variables: { transactionId, idempotencyKey: 'k-' + random() }, headers: f.member.headers };
      }),
      failure('zero amount', 'VALIDATION_FAILED', async () => {
        const { f, transactionId } = await funded();
        return { variables: { transactionId, input: { amount: '0' } }, headers: f.apiKeyHeaders };
      }),
      failure('never funded', 'INVALID_STATE', async () => {
        const f = await moneyFixture(app(), { requiredConfirmations: 1 });
        return { variables: { transactionId: (await createIntent(app(), f)).transactionId }, headers: f.apiKeyHeaders };
      }),
      failure('another organization', 'NOT_FOUND', async () => {
        const { transactionId } = await funded();
        return { variables: { transactionId }, headers: (await signUpMember(app())).headers };
      }),
    ],
    GetRefund: [
      success('executed', async () => {
        const { f, transactionId } = await funded();
        return { variables: { id: await refunded(f, transactionId, { amount: '250000' }) }, headers: f.apiKeyHeaders };
      }),
      success('rejected, read by an operator', async () => {
        const { f, transactionId } = await funded();
        return { variables: { id: await refunded(f, transactionId, { amount: '2000000' }) }, headers: await operator() };
      }),
      failure('another organization', 'NOT_FOUND', async () => {
        const { f, transactionId } = await funded();
        const id = await refunded(f, transactionId, { amount: '1000' });
        return { variables: { id }, headers: (await signUpMember(app())).headers };
      }),
      failure('unknown', 'NOT_FOUND', async () => ({ variables: { id: random() }, headers: (await funded()).f.apiKeyHeaders })),
    ],
    ListTransactionRefunds: [
      success('two refunds', async () => {
        const { f, transactionId } = await funded();
        await refunded(f, transactionId, { amount: '100000' });
        await refunded(f, transactionId, { amount: '2000000' });
        return { variables: { id: transactionId }, headers: f.member.headers };
      }),
      failure('unknown transaction', 'NOT_FOUND', async () => ({ variables: { id: random() }, headers: (await funded()).f.apiKeyHeaders })),
    ],
    AdminConfigureRefundFeePolicy: [
      success('an organization, allowing reversal after settlement', async () => {
        const m = await signUpMember(app());
        return { variables: { input: { scope: 'ORGANIZATION', organizationId: m.organizationId, percentage: '1.5', allowReversalAfterSettlement: true } }, headers: await operator() };
      }),
      success('an application on one asset-network, with amounts', async () => {
        const f = await moneyFixture(app(), { requiredConfirmations: 1 });
        return {
          variables: {
            input: {
              scope: 'APPLICATION', applicationId: f.applicationId, assetNetworkId: f.catalog.assetNetworkId,
              percentage: '2', fixedAmount: '100', minimumAmount: '500', maximumAmount: '10000',
            },
          },
          headers: await operator(),
        };
      }),
      failure('amounts without an asset-network', 'VALIDATION_FAILED', async () => {
        const m = await signUpMember(app());
        return { variables: { input: { scope: 'ORGANIZATION', organizationId: m.organizationId, fixedAmount: '100' } }, headers: await operator() };
      }),
      failure('a member', 'PRINCIPAL_NOT_ALLOWED', async () => {
        const m = await signUpMember(app());
        return { variables: { input: { scope: 'ORGANIZATION', organizationId: m.organizationId, percentage: '1' } }, headers: m.headers };
      }),
    ],
  };
}
