import { contractCaseHelpers, type ContractCase } from '../../test/contract-case';
import type { TestApp } from '../../test/harness';
import { sandboxDrop } from '../../test/money-helpers';
import { drainMoneyWork, fundedTransaction } from '../settlements/testing';
import { sweepWithdrawals } from './withdrawals';

/**
 * Contract fixtures (test/contract.test.ts) of AdminResolveWithdrawalReconciliation. Each case builds
 * its own integrator, funded account, destination and broadcast withdrawal through the public REST
 * surface; `dropped` drops its transaction on the sandbox chain and runs the sweep, so it waits in
 * REQUIRES_RECONCILIATION.
 */
export function withdrawalResolutionContractFixtures(getApp: () => TestApp): Record<string, ContractCase[]> {
  const app = () => getApp();
  const { success, failure, operator, random, ok } = contractCaseHelpers(getApp);
  const idOf = (r: { headers: Headers }) => r.headers.get('location')!.split('/').pop()!;

  /** A custodial withdrawal of 1000, broadcast. */
  async function broadcast() {
    const { f, transactionId } = await fundedTransaction(app(), 1_000_000n);
    await ok(app().rest('POST', `/v1/transactions/${transactionId}/settlements`, { headers: f.apiKeyHeaders }), 201, 'settlement');
    await drainMoneyWork(app());
    const d = await ok(
      app().rest('POST', `/v1/organizations/${f.organizationId}/withdrawal-destinations`, { headers: f.apiKeyHeaders, body: { networkId: f.catalog.networkId, address: '0x00000000000000000000000000000000000000d4' } }),
      201, 'destination',
    );
    const r = await ok(
      app().rest('POST', `/v1/accounts/${f.beneficiaryAccountId}/withdrawals`, { headers: f.apiKeyHeaders, body: { amount: '1000', assetNetworkId: f.catalog.assetNetworkId, withdrawalDestinationId: idOf(d) } }),
      201, 'withdrawal',
    );
    await drainMoneyWork(app());
    const id = idOf(r);
    const w = await ok(app().rest('GET', `/v1/withdrawals/${id}`, { headers: f.apiKeyHeaders }), 200, 'get withdrawal');
    if (w.body.status !== 'BROADCAST') throw new Error(`fixture withdrawal: ${w.body.status}`);
    return { f, id, txHash: w.body.txHash as string };
  }
  /** A withdrawal in REQUIRES_RECONCILIATION (its transaction dropped). */
  async function dropped() {
    const w = await broadcast();
    await sandboxDrop(app(), w.f.apiKeyHeaders, w.txHash);
    const d = app().deps;
    await sweepWithdrawals({ db: d.db, clock: d.clock, boss: d.boss, sealingKey: d.sealingKey }, { organizationId: w.f.organizationId });
    return w;
  }

  return {
    AdminResolveWithdrawalReconciliation: [
      success('dropped: FAILED', async () => ({ variables: { withdrawalId: (await dropped()).id, input: { outcome: 'FAILED', reason: 'dropped from the mempool' } }, headers: await operator() })),
      failure('dropped: CONFIRMED refused by the chain', 'INVALID_STATE', async () => ({
        variables: { withdrawalId: (await dropped()).id, input: { outcome: 'CONFIRMED', reason: 'x' } }, headers: await operator(),
      })),
      failure('still BROADCAST', 'INVALID_STATE', async () => ({ variables: { withdrawalId: (await broadcast()).id, input: { outcome: 'FAILED', reason: 'x' } }, headers: await operator() })),
      failure('unknown outcome', 'VALIDATION_FAILED', async () => ({ variables: { withdrawalId: random(), input: { outcome: 'MAYBE', reason: 'x' } }, headers: await operator() })),
      failure('empty reason', 'VALIDATION_FAILED', async () => ({ variables: { withdrawalId: random(), input: { outcome: 'FAILED', reason: ' ' } }, headers: await operator() })),
      failure('unknown withdrawal', 'NOT_FOUND', async () => ({ variables: { withdrawalId: random(), input: { outcome: 'FAILED', reason: 'x' } }, headers: await operator() })),
      failure('a member', 'PRINCIPAL_NOT_ALLOWED', async () => {
        const w = await dropped();
        return { variables: { withdrawalId: w.id, input: { outcome: 'FAILED', reason: 'x' } }, headers: w.f.member.headers };
      }),
    ],
  };
}
