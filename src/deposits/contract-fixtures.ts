import { contractCaseHelpers, type ContractCase } from '../../test/contract-case';
import type { TestApp } from '../../test/harness';
import { signUpMember } from '../../test/harness';
import { sandboxMine, sandboxReorg, sandboxSend } from '../../test/money-helpers';
import { createIntent, drainChainSync, moneyFixture, type MoneyFixture } from './testing';

/**
 * Contract fixtures (test/contract.test.ts) of the money-in routes: payment intents, deposits,
 * transactions and the two deposit resolutions. Each case builds its own integrator and sandbox
 * chain through the public REST surface.
 */
export type { ContractCase };

export function moneyInContractFixtures(getApp: () => TestApp): Record<string, ContractCase[]> {
  const app = () => getApp();
  const { success, failure, operator, random } = contractCaseHelpers(getApp);
  const fixture = (requiredConfirmations = 1) => moneyFixture(app(), { requiredConfirmations });
  const intent = (f: MoneyFixture, body: Record<string, unknown> = {}) => createIntent(app(), f, body);
  const input = (f: MoneyFixture, extra: Record<string, unknown> = {}) => ({
    assetNetworkId: f.catalog.assetNetworkId, amount: '2500000', beneficiaryAccountId: f.beneficiaryAccountId, expiresInSeconds: 900, ...extra,
  });
  /** A deposit of `amount` to a new intent, mined `blocks` deep and synced. */
  async function deposit(amount: bigint, blocks: number, requiredConfirmations = 1) {
    const f = await fixture(requiredConfirmations);
    const pi = await intent(f);
    await sandboxSend(app(), f.apiKeyHeaders, { address: pi.address, amount, assetNetworkId: f.catalog.assetNetworkId });
    if (blocks) await sandboxMine(app(), f.apiKeyHeaders, f.catalog.networkId, blocks);
    await drainChainSync(app());
    const got = await app().rest('GET', `/v1/payment-intents/${pi.id}`, { headers: f.apiKeyHeaders });
    return { f, pi, depositId: got.body.depositIds[0] as string };
  }

  return {
    CreatePaymentIntent: [
      success('API key, address from a wallet', async () => {
        const f = await fixture();
        return { variables: { organizationId: f.organizationId, input: input(f, { walletId: f.walletId, reference: 'order-1' }) }, headers: f.apiKeyHeaders };
      }),
      success('member, with an idempotency key', async () => {
        const f = await fixture();
        return {
          variables: { organizationId: f.organizationId, input: input(f, { applicationId: f.applicationId, environmentId: f.environmentId }), idempotencyKey: 'k-' + random() },
          headers: f.member.headers,
        };
      }),
      failure('zero amount', 'VALIDATION_FAILED', async () => {
        const f = await fixture();
        return { variables: { organizationId: f.organizationId, input: input(f, { amount: '0' }) }, headers: f.apiKeyHeaders };
      }),
      failure('duplicate reference', 'CONFLICT', async () => {
        const f = await fixture();
        await intent(f, { reference: 'dup' });
        return { variables: { organizationId: f.organizationId, input: input(f, { reference: 'dup' }) }, headers: f.apiKeyHeaders };
      }),
      failure('another organization', 'NOT_FOUND', async () => {
        const f = await fixture();
        const other = await signUpMember(app());
        return { variables: { organizationId: other.organizationId, input: input(f) }, headers: f.apiKeyHeaders };
      }),
    ],
    GetPaymentIntent: [
      success('processing, with a deposit', async () => {
        const { f, pi } = await deposit(1_000_000n, 0, 2);
        return { variables: { id: pi.id }, headers: f.apiKeyHeaders };
      }),
      failure('another organization', 'NOT_FOUND', async () => {
        const f = await fixture();
        const pi = await intent(f);
        return { variables: { id: pi.id }, headers: (await signUpMember(app())).headers };
      }),
    ],
    CancelPaymentIntent: [
      success('awaiting payment', async () => {
        const f = await fixture();
        return { variables: { id: (await intent(f)).id, input: { reason: 'customer left' } }, headers: f.apiKeyHeaders };
      }),
      failure('a deposit was detected', 'INVALID_STATE', async () => {
        const { f, pi } = await deposit(1_000n, 0, 2);
        return { variables: { id: pi.id }, headers: f.apiKeyHeaders };
      }),
      failure('unknown', 'NOT_FOUND', async () => ({ variables: { id: random() }, headers: (await fixture()).apiKeyHeaders })),
    ],
    GetDeposit: [
      success('confirmed', async () => {
        const { f, depositId } = await deposit(2_500_000n, 1);
        return { variables: { id: depositId }, headers: f.apiKeyHeaders };
      }),
      failure('another organization', 'NOT_FOUND', async () => {
        const { depositId } = await deposit(2_500_000n, 0);
        return { variables: { id: depositId }, headers: (await signUpMember(app())).headers };
      }),
    ],
    GetTransaction: [
      success('reserved', async () => {
        const { f, pi } = await deposit(1_000_000n, 1);
        return { variables: { id: pi.transactionId }, headers: f.member.headers };
      }),
      failure('unknown', 'NOT_FOUND', async () => ({ variables: { id: random() }, headers: (await fixture()).apiKeyHeaders })),
    ],
    CancelTransaction: [
      success('awaiting funds', async () => {
        const f = await fixture();
        return { variables: { id: (await intent(f)).transactionId, input: { reason: 'order cancelled' } }, headers: f.apiKeyHeaders };
      }),
      failure('reserved', 'INVALID_STATE', async () => {
        const { f, pi } = await deposit(1_000_000n, 1);
        return { variables: { id: pi.transactionId }, headers: f.apiKeyHeaders };
      }),
    ],
    FreezeTransaction: [
      success('member', async () => {
        const f = await fixture();
        return { variables: { id: (await intent(f)).transactionId, input: { reason: 'fraud review' } }, headers: f.member.headers };
      }),
      failure('API key', 'PRINCIPAL_NOT_ALLOWED', async () => {
        const f = await fixture();
        return { variables: { id: (await intent(f)).transactionId, input: { reason: 'x' } }, headers: f.apiKeyHeaders };
      }),
      failure('empty reason', 'VALIDATION_FAILED', async () => {
        const f = await fixture();
        return { variables: { id: (await intent(f)).transactionId, input: { reason: '' } }, headers: f.member.headers };
      }),
    ],
    UnfreezeTransaction: [
      success('frozen by the member', async () => {
        const f = await fixture();
        const pi = await intent(f);
        await app().rest('POST', `/v1/transactions/${pi.transactionId}/freeze`, { body: { reason: 'r' }, headers: f.member.headers });
        return { variables: { id: pi.transactionId }, headers: f.member.headers };
      }),
      failure('not frozen', 'INVALID_STATE', async () => {
        const f = await fixture();
        return { variables: { id: (await intent(f)).transactionId }, headers: f.member.headers };
      }),
    ],
    AdminResolveDepositUnderReview: [
      success('accept a screened deposit', async () => {
        const { depositId } = await deposit(1_000_666n, 1);
        return { variables: { id: depositId, input: { decision: 'ACCEPT', reason: 'known customer' } }, headers: await operator() };
      }),
      failure('not under review', 'INVALID_STATE', async () => {
        const { depositId } = await deposit(1_000_000n, 1);
        return { variables: { id: depositId, input: { decision: 'REJECT', reason: 'x' } }, headers: await operator() };
      }),
      failure('unknown', 'NOT_FOUND', async () => ({ variables: { id: random(), input: { decision: 'ACCEPT', reason: 'x' } }, headers: await operator() })),
    ],
    AdminResolveDepositReorg: [
      success('re-mined at depth', async () => {
        const { f, depositId } = await deposit(1_000_000n, 1);
        await sandboxReorg(app(), f.apiKeyHeaders, f.catalog.networkId, 1, false);
        await drainChainSync(app());
        await sandboxMine(app(), f.apiKeyHeaders, f.catalog.networkId, 1);
        await drainChainSync(app());
        return { variables: { id: depositId, input: { outcome: 'REMINED', reason: 'mined again' } }, headers: await operator() };
      }),
      failure('not frozen', 'INVALID_STATE', async () => {
        const { depositId } = await deposit(1_000_000n, 1);
        return { variables: { id: depositId, input: { outcome: 'GONE', reason: 'x' } }, headers: await operator() };
      }),
    ],
  };
}
