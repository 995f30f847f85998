import { describe, expect, test } from 'vitest';
import { moneySuite } from '../../test/money-suite';
import { drainMoneyWork, fundedTransaction } from '../../test/fixtures/settlements/testing';

/**
 * Issue 25, point 4: settlement execution, the release of retained portions and refund execution
 * re-check at execution what may have changed since the request: a freeze of a beneficiary account
 * racing the settlement job (the portion is retained, never released into a frozen account), and
 * the asset-network's status for a refund (a transfer on the chain, as a withdrawal). The existing
 * rules (transaction frozen, portion of a frozen or closed account retained, reversal from a frozen
 * beneficiary rejected) are covered in settlements.test.ts and refunds.test.ts.
 */
const suite = moneySuite();

const idOf = (r: { headers: Headers }) => r.headers.get('location')!.split('/').pop()!;
const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

describe('settlements and retained portions', () => {
  test('a freeze in flight while the settlement job runs: the portion is RETAINED (ACCOUNT_FROZEN), not credited to the frozen account', async () => {
    const { f, transactionId } = await fundedTransaction(suite.app, 400_000n);
    const s = await suite.app.rest('POST', `/v1/transactions/${transactionId}/settlements`, { headers: f.apiKeyHeaders });
    expect(s.status, s.text).toBe(201);
    let work: Promise<number> | undefined;
    // The freeze's status change holds the account's ledger lock until it commits; the job runs meanwhile.
    await suite.app.deps.db.$transaction(async (tx) => {
      await tx.account.update({ where: { id: f.beneficiaryAccountId }, data: { status: 'FROZEN', frozenReason: 'fraud investigation' } });
      work = drainMoneyWork(suite.app);
      await sleep(500);
    });
    await work;
    const got = (await suite.app.rest('GET', `/v1/settlements/${idOf(s)}`, { headers: f.apiKeyHeaders })).body;
    expect(got).toMatchObject({ status: 'EXECUTED', allocations: [{ accountId: f.beneficiaryAccountId, status: 'RETAINED', amount: '400000' }] });
    const balances = await suite.app.rest('GET', `/v1/accounts/${f.beneficiaryAccountId}/balances`, { headers: f.member.headers });
    expect(balances.status, balances.text).toBe(200);
    expect(JSON.stringify(balances.body)).not.toContain('400000');
    // Unfrozen: released by the job.
    expect((await suite.app.rest('POST', `/v1/accounts/${f.beneficiaryAccountId}/unfreeze`, { headers: f.member.headers })).status).toBe(204);
    await drainMoneyWork(suite.app);
    const after = (await suite.app.rest('GET', `/v1/settlements/${idOf(s)}`, { headers: f.apiKeyHeaders })).body;
    expect(after.allocations[0]).toMatchObject({ status: 'RELEASED' });
  });
});

describe('refunds', () => {
  test('executed only on an ENABLED asset-network: a refund executed while it is PAUSED is REJECTED (ASSET_NETWORK_UNAVAILABLE), nothing moved', async () => {
    const { f, transactionId } = await fundedTransaction(suite.app, 500_000n);
    const r1 = await suite.app.rest('POST', `/v1/transactions/${transactionId}/refunds`, { headers: f.apiKeyHeaders, body: { amount: '100000' } });
    expect(r1.status, r1.text).toBe(201);
    expect(
      (
        await suite.app.rest('POST', `/v1/platform/asset-networks/${f.catalog.assetNetworkId}/pause`, {
          headers: suite.op.headers,
          body: { reason: 'chain incident' },
        })
      ).status,
    ).toBe(204);
    await drainMoneyWork(suite.app);
    const got = (await suite.app.rest('GET', `/v1/refunds/${idOf(r1)}`, { headers: f.apiKeyHeaders })).body;
    expect(got).toMatchObject({ status: 'REJECTED', rejectionReason: expect.stringMatching(/^ASSET_NETWORK_UNAVAILABLE: .*PAUSED/), txHash: null });
    const t = await suite.app.gql<any>('query($id: ID!) { transaction(id: $id) { refundedAmount escrowAmount } }', { id: transactionId }, f.apiKeyHeaders);
    expect(t.data!.transaction).toEqual({ refundedAmount: '0', escrowAmount: '500000' });

    expect((await suite.app.rest('POST', `/v1/platform/asset-networks/${f.catalog.assetNetworkId}/enable`, { headers: suite.op.headers })).status).toBe(204);
    const r2 = await suite.app.rest('POST', `/v1/transactions/${transactionId}/refunds`, { headers: f.apiKeyHeaders, body: { amount: '100000' } });
    await drainMoneyWork(suite.app);
    expect((await suite.app.rest('GET', `/v1/refunds/${idOf(r2)}`, { headers: f.apiKeyHeaders })).body).toMatchObject({ status: 'EXECUTED' });
  });
});
