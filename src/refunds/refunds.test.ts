import { randomUUID } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { createApiKey, signUpMember } from '../../test/harness';
import { moneySuite } from '../../test/money-suite';
import { sandboxAdvanceClock, sandboxMine, sandboxSend } from '../../test/money-helpers';
import { createIntent, eventsOf, moneyFixture, type MoneyFixture } from '../../test/fixtures/deposits/testing';
import { drainMoneyWork } from '../../test/fixtures/settlements/testing';
import { adapterFor, networkRef } from '../chains/adapter';
import { addressOf, generateKeyPair, signTransfer } from '../chains/secp256k1';
import { balanceOf as chainBalanceOf, payerAddress } from '../chains/sandbox/chain';
import { balanceOf as ledgerBalanceOf, createHold, voidHold, type LedgerAccountKind } from '../ledger/ledger';
import { computeFee } from '../settlements/policies/policies';

/**
 * Refunds and the refund fee policy, through REST and GraphQL, with the real job handlers
 * (drainMoneyWork) and the sandbox chain. Every test ends with the ledger invariants.
 */
const suite = moneySuite();

// ------------------------------------------------------------------------------------------------
// Helpers

const fixture = (requiredConfirmations = 1) => moneyFixture(suite.app, { requiredConfirmations });
const idOf = (r: { headers: Headers }) => r.headers.get('location')!.split('/').pop()!;
const TX = 'query($id: ID!) { transaction(id: $id) { id status fundedAmount settledAmount refundedAmount reversedAmount escrowAmount frozen updatedAt } }';
/** The transaction with its totals (GraphQL: the REST GetTransaction shows no totals). */
const txOf = async (f: MoneyFixture, id: string) => {
  const g = await suite.app.gql<{ transaction: Record<string, any> }>(TX, { id }, f.apiKeyHeaders);
  expect(g.errors).toBeUndefined();
  return g.data!.transaction;
};
const refundOf = async (f: MoneyFixture, id: string) => {
  const r = await suite.app.rest('GET', `/v1/refunds/${id}`, { headers: f.apiKeyHeaders });
  expect(r.status, r.text).toBe(200);
  return r.body;
};
const post = (f: MoneyFixture, transactionId: string, body?: Record<string, unknown>, headers: Record<string, string> = f.apiKeyHeaders) =>
  suite.app.rest('POST', `/v1/transactions/${transactionId}/refunds`, { headers, ...(body ? { body } : {}) });
async function ask(f: MoneyFixture, transactionId: string, body?: Record<string, unknown>) {
  const r = await post(f, transactionId, body);
  expect(r.status, r.text).toBe(201);
  return idOf(r);
}
/** Requests a refund and runs the work; answers the refund as GET /v1/refunds/{id} shows it. */
async function refund(f: MoneyFixture, transactionId: string, body?: Record<string, unknown>) {
  const id = await ask(f, transactionId, body);
  await drainMoneyWork(suite.app);
  return refundOf(f, id);
}
async function configure(body: Record<string, unknown>): Promise<string> {
  const r = await suite.app.rest('POST', '/v1/admin/refund-fee-policy', { headers: suite.op.headers, body });
  expect(r.status, r.text).toBe(204);
  const rows = await suite.app.deps.db.refundFeePolicy.findMany({ orderBy: { id: 'desc' }, take: 1 });
  return rows[0]!.id;
}

interface Payer {
  address: string;
  publicKey: string;
  privateKey: Uint8Array;
}
/** A payer with its own key and 10,000,000 mined base units (not the organization's faucet, whose balance always reads 0). */
async function payerWithFunds(f: MoneyFixture): Promise<Payer> {
  const k = generateKeyPair();
  const payer = { ...k, address: addressOf(k.publicKey) };
  await sandboxSend(suite.app, f.apiKeyHeaders, { address: payer.address, amount: 10_000_000n, assetNetworkId: f.catalog.assetNetworkId });
  await sandboxMine(suite.app, f.apiKeyHeaders, f.catalog.networkId, 1);
  return payer;
}
/** The payer signs a transfer and the sandbox adapter broadcasts it, as a wallet would. */
async function payFrom(f: MoneyFixture, payer: Payer, toAddress: string, amount: bigint) {
  const network = await suite.app.deps.db.network.findUniqueOrThrow({ where: { id: f.catalog.networkId } });
  const signed = signTransfer(
    {
      networkId: network.id,
      assetNetworkId: f.catalog.assetNetworkId,
      fromAddress: payer.address,
      fromPublicKey: payer.publicKey,
      toAddress,
      amount: amount.toString(),
      nonce: randomUUID(),
    },
    payer.privateKey,
  );
  await adapterFor('SANDBOX', suite.app.deps.db, { clock: suite.app.deps.clock, boss: suite.app.deps.boss }).broadcast(networkRef(network), signed, null);
}
const onChain = (f: MoneyFixture, address: string) => chainBalanceOf(suite.app.deps.db, f.catalog.networkId, f.catalog.assetNetworkId, address);

/** A funded (RESERVED) transaction of `amount`, paid by the faucet or `from`, mined unless told otherwise. */
async function fund(f: MoneyFixture, amount = 1_000_000n, opts: { from?: Payer; mine?: boolean; intent?: Record<string, unknown> } = {}) {
  const pi = await createIntent(suite.app, f, { amount: amount.toString(), ...opts.intent });
  if (opts.from) await payFrom(f, opts.from, pi.address, amount);
  else await sandboxSend(suite.app, f.apiKeyHeaders, { address: pi.address, amount, assetNetworkId: f.catalog.assetNetworkId });
  if (opts.mine ?? true) await sandboxMine(suite.app, f.apiKeyHeaders, f.catalog.networkId, 1);
  await drainMoneyWork(suite.app);
  const t = await txOf(f, pi.transactionId);
  expect(t.status).toBe('RESERVED');
  return { pi, transactionId: pi.transactionId as string };
}

const system = async (kind: LedgerAccountKind, assetNetworkId: string) =>
  (await ledgerBalanceOf(suite.app.deps.db, { kind, ownerId: null, organizationId: null, assetNetworkId })).posted;
const customer = (f: MoneyFixture, accountId = f.beneficiaryAccountId) =>
  ledgerBalanceOf(suite.app.deps.db, { kind: 'CUSTOMER', ownerId: accountId, organizationId: f.organizationId, assetNetworkId: f.catalog.assetNetworkId });
/** The organization's refund events and transaction.refunded, in order. */
const refundEvents = async (f: MoneyFixture) =>
  (await eventsOf(suite.app, f.organizationId)).filter((e) => e.type.startsWith('refund.') || e.type === 'transaction.refunded');

const REQUEST = `mutation($t: ID!, $input: RequestRefundInput, $k: String) {
  requestRefund(transactionId: $t, input: $input, idempotencyKey: $k) { id status requestedAmount toAddress transactionId }
}`;

// ------------------------------------------------------------------------------------------------

describe('fee arithmetic (computeFee)', () => {
  const terms = (percentage: string, extra: Partial<{ fixedAmount: string; minimumAmount: string; maximumAmount: string | null }> = {}) => ({
    percentage,
    fixedAmount: '0',
    minimumAmount: '0',
    maximumAmount: null,
    ...extra,
  });
  test('percentage half up, plus fixed, then the minimum, then the maximum; no policy: 0', () => {
    expect(computeFee(1_000n, null)).toEqual({ fee: 0n, percentage: 0n });
    expect(computeFee(100n, terms('2.5')).fee).toBe(3n);
    expect(computeFee(100n, terms('2.4')).fee).toBe(2n);
    expect(computeFee(1n, terms('49.999999')).fee).toBe(0n);
    expect(computeFee(1n, terms('50')).fee).toBe(1n);
    expect(computeFee(10n ** 30n, terms('0.000001')).fee).toBe(10n ** 22n);
    expect(computeFee(100_000n, terms('10', { fixedAmount: '1000', minimumAmount: '50000', maximumAmount: '70000' })).fee).toBe(50_000n);
    expect(computeFee(600_000n, terms('10', { fixedAmount: '1000', minimumAmount: '50000', maximumAmount: '70000' })).fee).toBe(61_000n);
    expect(computeFee(1_000_000n, terms('10', { fixedAmount: '1000', minimumAmount: '50000', maximumAmount: '70000' })).fee).toBe(70_000n);
    expect(computeFee(5n, terms('0', { fixedAmount: '7' })).fee).toBe(7n);
    expect(computeFee(5n, terms('12.5')).percentage).toBe(12_500_000n);
  });
});

describe('refunds', () => {
  test('a total refund: REFUNDED, IsTotal, the payer receives the net on the chain, the fee is platform revenue', async () => {
    const f = await fixture();
    const an = f.catalog.assetNetworkId;
    const payer = await payerWithFunds(f);
    const policyId = await configure({ scope: 'PLATFORM', assetNetworkId: an, percentage: '1.5' });
    const { pi, transactionId } = await fund(f, 1_000_000n, { from: payer });
    const before = await onChain(f, payer.address);
    expect(before).toBe(9_000_000n);

    const r = await post(f, transactionId, { reason: 'order cancelled' });
    expect(r.status, r.text).toBe(201);
    const id = idOf(r);
    expect(r.headers.get('location')).toBe(`/v1/refunds/${id}`);
    expect(r.body).toEqual({ id }); // { id } beside Location
    expect(await refundOf(f, id)).toMatchObject({
      id,
      status: 'PENDING',
      transactionId,
      organizationId: f.organizationId,
      applicationId: f.applicationId,
      environmentId: f.environmentId,
      environmentType: 'SANDBOX',
      assetNetworkId: an,
      requestedAmount: null,
      reason: 'order cancelled',
      toAddress: payer.address,
      amount: null,
      executedAt: null,
    });

    await drainMoneyWork(suite.app);
    const done = await refundOf(f, id);
    expect(done).toMatchObject({
      status: 'EXECUTED',
      amount: '1000000',
      feeAmount: '15000',
      netAmount: '985000',
      reversedAmount: '0',
      isTotal: true,
      refundFeePolicyId: policyId,
      fromAddress: pi.address,
      toAddress: payer.address,
      rejectionReason: null,
      rejectedAt: null,
    });
    expect(done.txHash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(await txOf(f, transactionId)).toMatchObject({
      status: 'REFUNDED',
      fundedAmount: '1000000',
      refundedAmount: '1000000',
      reversedAmount: '0',
      escrowAmount: '0',
    });

    // On the chain: the transfer leaves the deposit address for the payer, signed with the address's key.
    const transfer = await suite.app.deps.db.sandboxTransaction.findUniqueOrThrow({ where: { txHash: done.txHash } });
    expect(transfer).toMatchObject({ fromAddress: pi.address, toAddress: payer.address, status: 'PENDING' });
    expect(transfer.amount.toFixed()).toBe('985000');
    await sandboxMine(suite.app, f.apiKeyHeaders, f.catalog.networkId, 1);
    expect(await onChain(f, payer.address)).toBe(before + 985_000n);
    expect(await onChain(f, pi.address)).toBe(15_000n);

    // In the ledger: the net went back to the chain, the fee is revenue.
    expect(await system('CHAIN_CLEARING', an)).toBe(15_000n);
    expect(await system('PLATFORM_REVENUE', an)).toBe(15_000n);
    const entry = await suite.app.deps.db.ledgerTransaction.findUniqueOrThrow({ where: { idempotencyKey: `refund:${id}` } });
    expect(entry).toMatchObject({ nature: 'refund.executed', referenceType: 'Refund', referenceId: id });

    expect(await refundEvents(f)).toEqual([
      { type: 'refund.executed', body: { RefundId: id, TransactionId: transactionId, Amount: '1000000', ExecutedAt: done.executedAt } },
      { type: 'transaction.refunded', body: { TransactionId: transactionId, RefundId: id, IsTotal: true } },
    ]);
    const audit = await suite.app.deps.db.auditLogEntry.findMany({ where: { entityId: id }, orderBy: { id: 'asc' } });
    expect(audit.map((a) => [a.action, a.actorType])).toEqual([
      ['refund.requested', 'API_KEY'],
      ['refund.executed', 'SYSTEM'],
    ]);

    // A job delivered again changes nothing.
    const { executeRefund } = await import('./refunds');
    expect(
      await executeRefund({ db: suite.app.deps.db, clock: suite.app.deps.clock, boss: suite.app.deps.boss, sealingKey: suite.app.deps.sealingKey }, id),
    ).toEqual({
      status: 'SKIPPED',
    });
  });

  test('partial refunds: two, then the rest (REST and GraphQL); only the last is total', async () => {
    const f = await fixture();
    const { pi, transactionId } = await fund(f);
    const a = await refund(f, transactionId, { amount: '300000' });
    expect(a).toMatchObject({ status: 'EXECUTED', amount: '300000', feeAmount: '0', netAmount: '300000', isTotal: false });
    expect(await txOf(f, transactionId)).toMatchObject({ status: 'RESERVED', refundedAmount: '300000', escrowAmount: '700000' });

    const g = await suite.app.gql<{ requestRefund: { id: string; status: string; requestedAmount: string } }>(
      REQUEST,
      { t: transactionId, input: { amount: '200000', reason: 'one item back' } },
      f.member.headers,
    );
    expect(g.errors).toBeUndefined();
    expect(g.data!.requestRefund).toMatchObject({ status: 'PENDING', requestedAmount: '200000', transactionId, toAddress: payerAddress(f.organizationId) });
    await drainMoneyWork(suite.app);
    expect(await refundOf(f, g.data!.requestRefund.id)).toMatchObject({ status: 'EXECUTED', amount: '200000', isTotal: false, reason: 'one item back' });

    const c = await refund(f, transactionId);
    expect(c).toMatchObject({ status: 'EXECUTED', requestedAmount: null, amount: '500000', isTotal: true });
    expect(await txOf(f, transactionId)).toMatchObject({ status: 'REFUNDED', refundedAmount: '1000000', escrowAmount: '0' });
    expect((await refundEvents(f)).filter((e) => e.type === 'transaction.refunded').map((e) => e.body.IsTotal)).toEqual([false, false, true]);

    const list = await suite.app.rest('GET', `/v1/transactions/${transactionId}/refunds`, { headers: f.member.headers });
    expect(list.status).toBe(200);
    expect(list.body.map((x: { id: string }) => x.id)).toEqual([a.id, g.data!.requestRefund.id, c.id]);
    const viaGql = await suite.app.gql<{ transaction: { refunds: { id: string; amount: string }[] } }>(
      'query($id: ID!) { transaction(id: $id) { refunds { id amount } } }',
      { id: transactionId },
      f.apiKeyHeaders,
    );
    expect(viaGql.data!.transaction.refunds.map((x) => x.amount)).toEqual(['300000', '200000', '500000']);
    await sandboxMine(suite.app, f.apiKeyHeaders, f.catalog.networkId, 1);
    expect(await onChain(f, pi.address)).toBe(0n);
  });

  test('the fee: percentage + fixed, at least the minimum, at most the maximum; a fee not below the amount is rejected', async () => {
    const f = await fixture();
    const an = f.catalog.assetNetworkId;
    await configure({
      scope: 'APPLICATION',
      applicationId: f.applicationId,
      assetNetworkId: an,
      percentage: '10',
      fixedAmount: '1000',
      minimumAmount: '50000',
      maximumAmount: '70000',
    });
    const { transactionId } = await fund(f, 2_000_000n);
    expect(await refund(f, transactionId, { amount: '100000' })).toMatchObject({ status: 'EXECUTED', feeAmount: '50000', netAmount: '50000' });
    expect(await refund(f, transactionId, { amount: '1000000' })).toMatchObject({ status: 'EXECUTED', feeAmount: '70000', netAmount: '930000' });
    expect(await refund(f, transactionId, { amount: '600000' })).toMatchObject({ status: 'EXECUTED', feeAmount: '61000', netAmount: '539000' });
    expect(await system('PLATFORM_REVENUE', an)).toBe(181_000n);

    const before = await txOf(f, transactionId);
    expect(before.escrowAmount).toBe('300000');
    for (const amount of ['40000', '50000']) {
      const r = await refund(f, transactionId, { amount });
      expect(r.status).toBe('REJECTED');
      expect(r.rejectionReason).toMatch(/^FEE_EXCEEDS_AMOUNT: /);
    }
    expect(await txOf(f, transactionId)).toEqual({ ...before, updatedAt: expect.any(String) });
    expect(await system('PLATFORM_REVENUE', an)).toBe(181_000n);
    expect((await refundEvents(f)).filter((e) => e.type === 'refund.rejected').map((e) => (e.body.Reason as string).split(':')[0])).toEqual([
      'FEE_EXCEEDS_AMOUNT',
      'FEE_EXCEEDS_AMOUNT',
    ]);
  });
});

describe('rejections at execution: refund.rejected with the reason, nothing moves', () => {
  async function expectRejected(f: MoneyFixture, transactionId: string, id: string, code: string) {
    const before = await txOf(f, transactionId);
    await drainMoneyWork(suite.app);
    const r = await refundOf(f, id);
    expect(r).toMatchObject({ status: 'REJECTED', amount: null, txHash: null, executedAt: null, isTotal: null });
    expect(r.rejectionReason).toMatch(new RegExp(`^${code}: `));
    expect(r.rejectedAt).toEqual(expect.any(String));
    const events = await refundEvents(f);
    expect(events.filter((e) => e.body.RefundId === id)).toEqual([
      { type: 'refund.rejected', body: { RefundId: id, TransactionId: transactionId, Reason: r.rejectionReason } },
    ]);
    const after = await txOf(f, transactionId);
    expect(after).toMatchObject({
      status: before.status,
      refundedAmount: before.refundedAmount,
      reversedAmount: before.reversedAmount,
      escrowAmount: before.escrowAmount,
    });
    expect(await suite.app.deps.db.ledgerTransaction.count({ where: { idempotencyKey: `refund:${id}` } })).toBe(0);
    return r;
  }

  test('AMOUNT_EXCEEDS_REFUNDABLE without a policy allowing reversal; NOTHING_TO_REFUND once the escrow is empty', async () => {
    const f = await fixture();
    const { transactionId } = await fund(f);
    await expectRejected(f, transactionId, await ask(f, transactionId, { amount: '1000001' }), 'AMOUNT_EXCEEDS_REFUNDABLE');
    expect((await refund(f, transactionId)).status).toBe('EXECUTED');
    const second = await ask(f, transactionId);
    const r = await expectRejected(f, transactionId, second, 'NOTHING_TO_REFUND');
    const g = await suite.app.gql<{ refund: { status: string; rejectionReason: string } }>(
      'query($id: ID!) { refund(id: $id) { status rejectionReason } }',
      { id: second },
      f.member.headers,
    );
    expect(g.data!.refund).toEqual({ status: 'REJECTED', rejectionReason: r.rejectionReason });
  });

  test('TRANSACTION_FROZEN while a member holds it; executed once unfrozen', async () => {
    const f = await fixture();
    const { transactionId } = await fund(f);
    const frz = await suite.app.rest('POST', `/v1/transactions/${transactionId}/freeze`, { headers: f.member.headers, body: { reason: 'dispute' } });
    expect(frz.status).toBe(204);
    await expectRejected(f, transactionId, await ask(f, transactionId, { amount: '100000' }), 'TRANSACTION_FROZEN');
    expect((await suite.app.rest('POST', `/v1/transactions/${transactionId}/unfreeze`, { headers: f.member.headers })).status).toBe(204);
    expect((await refund(f, transactionId, { amount: '100000' })).status).toBe('EXECUTED');
  });

  test('DEPOSIT_UNDER_REVIEW while a deposit of the transaction is held for review', async () => {
    const f = await fixture();
    const { pi, transactionId } = await fund(f);
    await sandboxSend(suite.app, f.apiKeyHeaders, { address: pi.address, amount: 1_666n, assetNetworkId: f.catalog.assetNetworkId });
    await sandboxMine(suite.app, f.apiKeyHeaders, f.catalog.networkId, 1);
    await drainMoneyWork(suite.app);
    expect(await suite.app.deps.db.deposit.count({ where: { transactionId, status: 'UNDER_REVIEW' } })).toBe(1);
    await expectRejected(f, transactionId, await ask(f, transactionId), 'DEPOSIT_UNDER_REVIEW');
  });

  test('SELF_CUSTODY_SIGNING_REQUIRED when the deposit address is of a self-custody wallet', async () => {
    const f = await fixture();
    const w = await suite.app.rest('POST', `/v1/applications/${f.applicationId}/wallets`, {
      headers: f.apiKeyHeaders,
      body: { networkId: f.catalog.networkId, custodyMode: 'SELF_CUSTODY', publicKey: generateKeyPair().publicKey },
    });
    expect(w.status, w.text).toBe(201);
    const { transactionId } = await fund(f, 1_000_000n, { intent: { walletId: idOf(w) } });
    await expectRejected(f, transactionId, await ask(f, transactionId), 'SELF_CUSTODY_SIGNING_REQUIRED');
  });

  test(
    'CONTROLLED_BALANCE_INSUFFICIENT when no controlled address can spend it (the deposit is not mined yet): the ' + 'ledger posting is rolled back',
    async () => {
      const f = await fixture(0);
      const an = f.catalog.assetNetworkId;
      const { pi, transactionId } = await fund(f, 1_000_000n, { mine: false });
      const clearing = await system('CHAIN_CLEARING', an);
      const id = await ask(f, transactionId, { amount: '400000' });
      const r = await expectRejected(f, transactionId, id, 'CONTROLLED_BALANCE_INSUFFICIENT');
      expect(r.rejectionReason).toContain('insufficient funds');
      expect(await system('CHAIN_CLEARING', an)).toBe(clearing);
      expect(await suite.app.deps.db.sandboxTransaction.count({ where: { fromAddress: pi.address } })).toBe(0);
      // Once the deposit is mined the same refund goes through.
      await sandboxMine(suite.app, f.apiKeyHeaders, f.catalog.networkId, 1);
      expect(await refund(f, transactionId, { amount: '400000' })).toMatchObject({ status: 'EXECUTED', netAmount: '400000' });
    },
  );

  test("the intent's deposit address emptied by another customer's withdrawal: another deposit address of the organization pays the refund", async () => {
    // Issue 15: the coins at the intent's address paid a withdrawal of another account of the same
    // organization; the organization still holds the amount on chain at another deposit address.
    const f = await fixture();
    const an = f.catalog.assetNetworkId;
    const payer = await payerWithFunds(f);
    const a = await fund(f, 1_000_000n, { from: payer });
    const b = await fund(f, 1_000_000n);
    // B settles to the beneficiary, who withdraws it: no HOT address, so the organization's oldest
    // deposit address sends it, which is A's.
    const s = await suite.app.rest('POST', `/v1/transactions/${b.transactionId}/settlements`, { headers: f.apiKeyHeaders });
    expect(s.status, s.text).toBe(201);
    await drainMoneyWork(suite.app);
    const dest = await suite.app.rest('POST', `/v1/organizations/${f.organizationId}/withdrawal-destinations`, {
      headers: f.apiKeyHeaders,
      body: { networkId: f.catalog.networkId, address: '0x00000000000000000000000000000000000000e5' },
    });
    expect(dest.status, dest.text).toBe(201);
    const w = await suite.app.rest('POST', `/v1/accounts/${f.beneficiaryAccountId}/withdrawals`, {
      headers: f.apiKeyHeaders,
      body: { amount: '1000000', assetNetworkId: an, withdrawalDestinationId: idOf(dest) },
    });
    expect(w.status, w.text).toBe(201);
    await drainMoneyWork(suite.app);
    const withdrawal = (await suite.app.rest('GET', `/v1/withdrawals/${idOf(w)}`, { headers: f.apiKeyHeaders })).body;
    expect(withdrawal).toMatchObject({ status: 'BROADCAST', fromAddress: a.pi.address });
    await sandboxMine(suite.app, f.apiKeyHeaders, f.catalog.networkId, 1);
    expect(await onChain(f, a.pi.address)).toBe(0n);
    expect(await onChain(f, b.pi.address)).toBe(1_000_000n);

    // A full refund of A: paid from B's address (the intent's own holds nothing, no HOT address).
    const done = await refund(f, a.transactionId);
    expect(done).toMatchObject({ status: 'EXECUTED', amount: '1000000', netAmount: '1000000', fromAddress: b.pi.address, toAddress: payer.address });
    await sandboxMine(suite.app, f.apiKeyHeaders, f.catalog.networkId, 1);
    expect(await onChain(f, b.pi.address)).toBe(0n);
    expect(await onChain(f, payer.address)).toBe(10_000_000n);
    expect(await txOf(f, a.transactionId)).toMatchObject({ status: 'REFUNDED', escrowAmount: '0' });
  });

  test('after a sweep of the deposit address to the treasury, a HOT treasury address pays the refund', async () => {
    const f = await fixture();
    const an = f.catalog.assetNetworkId;
    const payer = await payerWithFunds(f);
    const { pi, transactionId } = await fund(f, 1_000_000n, { from: payer });
    const reg = await suite.app.rest('POST', '/v1/admin/treasury/controlled-addresses', {
      headers: suite.op.headers,
      body: { assetNetworkIds: [an], tier: 'HOT', control: 'GENERATED', label: 'hot' },
    });
    expect(reg.status, reg.text).toBe(201);
    const hot = (await suite.app.rest('GET', reg.headers.get('location')!, { headers: suite.op.headers })).body as { id: string; address: string };
    const from = await suite.app.deps.db.depositAddress.findFirstOrThrow({ where: { address: pi.address }, select: { id: true } });
    const sw = await suite.app.rest('POST', '/v1/admin/treasury/sweeps', {
      headers: suite.op.headers,
      body: { assetNetworkId: an, fromDepositAddressId: from.id, toControlledAddressId: hot.id },
    });
    expect(sw.status, sw.text).toBe(201);
    await sandboxMine(suite.app, f.apiKeyHeaders, f.catalog.networkId, 1);
    expect(await onChain(f, pi.address)).toBe(0n);

    const done = await refund(f, transactionId, { amount: '300000' });
    expect(done).toMatchObject({ status: 'EXECUTED', netAmount: '300000', fromAddress: hot.address, toAddress: payer.address });
    const transfer = await suite.app.deps.db.sandboxTransaction.findUniqueOrThrow({ where: { txHash: done.txHash } });
    expect(transfer).toMatchObject({ fromAddress: hot.address, toAddress: payer.address });
    await sandboxMine(suite.app, f.apiKeyHeaders, f.catalog.networkId, 1);
    expect(await onChain(f, hot.address)).toBe(700_000n);
    expect(await onChain(f, payer.address)).toBe(9_300_000n);
    expect(await txOf(f, transactionId)).toMatchObject({ refundedAmount: '300000', escrowAmount: '700000' });
  });
});

describe('requests: validation, states, principals, tenants, idempotency', () => {
  test('a bad amount, an unknown field or a toAddress that is not the origin: 400, nothing created', async () => {
    const f = await fixture();
    const { transactionId } = await fund(f);
    for (const [body, field] of [
      [{ amount: '0' }, 'amount'],
      [{ amount: '1.5' }, 'amount'],
      [{ amount: '-5' }, 'amount'],
      [{ toAddress: '0x' + '1'.repeat(40) }, 'toAddress'],
      [{ reason: '' }, 'reason'],
    ] as const) {
      const r = await post(f, transactionId, body as Record<string, unknown>);
      expect([r.status, r.body.code], JSON.stringify(body)).toEqual([400, 'VALIDATION_FAILED']);
      expect(
        r.body.errors?.map((e: { field: string }) => e.field),
        JSON.stringify(body) + r.text,
      ).toEqual([field]);
    }
    expect((await post(f, transactionId, { colour: 'red' })).status).toBe(400);
    expect((await post(f, transactionId, { amount: 100 })).status).toBe(400); // not a string: GraphQL coercion
    expect(await suite.app.deps.db.refund.count({ where: { transactionId } })).toBe(0);
    // The origin named explicitly (any case) is accepted.
    const ok = await post(f, transactionId, { toAddress: payerAddress(f.organizationId).toUpperCase().replace('0X', '0x'), amount: '1' });
    expect(ok.status, ok.text).toBe(201);
  });

  test('never funded (awaiting funds, cancelled): 409; unknown transaction: 404', async () => {
    const f = await fixture();
    const pi = await createIntent(suite.app, f);
    const r = await post(f, pi.transactionId);
    expect([r.status, r.body.code]).toEqual([409, 'INVALID_STATE']);
    expect((await suite.app.rest('POST', `/v1/transactions/${pi.transactionId}/cancel`, { headers: f.apiKeyHeaders })).status).toBe(204);
    expect((await post(f, pi.transactionId)).status).toBe(409);
    expect((await post(f, randomUUID())).status).toBe(404);
    expect((await post(f, 'not-a-uuid')).status).toBe(404);
  });

  test('several payer origins: toAddress must name one of them', async () => {
    const f = await fixture();
    const payer = await payerWithFunds(f);
    const pi = await createIntent(suite.app, f, { amount: '1000000' });
    await payFrom(f, payer, pi.address, 400_000n);
    await sandboxSend(suite.app, f.apiKeyHeaders, { address: pi.address, amount: 600_000n, assetNetworkId: f.catalog.assetNetworkId });
    await sandboxMine(suite.app, f.apiKeyHeaders, f.catalog.networkId, 1);
    await drainMoneyWork(suite.app);
    expect((await txOf(f, pi.transactionId)).status).toBe('RESERVED');
    const r = await post(f, pi.transactionId);
    expect([r.status, r.body.errors?.[0]?.field]).toEqual([400, 'toAddress']);
    const done = await refund(f, pi.transactionId, { amount: '400000', toAddress: payer.address });
    expect(done).toMatchObject({ status: 'EXECUTED', toAddress: payer.address, netAmount: '400000' });
    await sandboxMine(suite.app, f.apiKeyHeaders, f.catalog.networkId, 1);
    expect(await onChain(f, payer.address)).toBe(10_000_000n - 400_000n + 400_000n);
  });

  test('tenants and principals: another organization or environment 404; operators read but do not request', async () => {
    const f = await fixture();
    const { transactionId } = await fund(f);
    const id = await ask(f, transactionId, { amount: '1000' });
    const other = await signUpMember(suite.app);
    expect((await post(f, transactionId, {}, other.headers)).status).toBe(404);
    expect((await suite.app.rest('GET', `/v1/refunds/${id}`, { headers: other.headers })).status).toBe(404);
    expect((await suite.app.rest('GET', `/v1/transactions/${transactionId}/refunds`, { headers: other.headers })).status).toBe(404);
    const production = await createApiKey(suite.app, f.member, 'PRODUCTION');
    expect((await post(f, transactionId, {}, production.headers)).status).toBe(404);
    expect((await suite.app.rest('GET', `/v1/refunds/${id}`, { headers: production.headers })).status).toBe(404);
    const g = await suite.app.gql(REQUEST, { t: transactionId }, other.headers);
    expect(g.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');

    expect((await suite.app.rest('GET', `/v1/refunds/${id}`, { headers: suite.op.headers })).body).toMatchObject({ id, transactionId });
    const byOperator = await post(f, transactionId, {}, suite.op.headers);
    expect([byOperator.status, byOperator.body.code]).toEqual([403, 'PRINCIPAL_NOT_ALLOWED']);
    expect((await suite.app.rest('POST', `/v1/transactions/${transactionId}/refunds`)).status).toBe(401);
    expect((await suite.app.rest('GET', `/v1/refunds/${randomUUID()}`, { headers: f.apiKeyHeaders })).status).toBe(404);
    await drainMoneyWork(suite.app);
  });

  test('Idempotency-Key: the same request answers the same refund; another request with the key is 409', async () => {
    const f = await fixture();
    const { transactionId } = await fund(f);
    const key = 'refund-' + randomUUID();
    const send = (body: Record<string, unknown>) =>
      suite.app.rest('POST', `/v1/transactions/${transactionId}/refunds`, { headers: { ...f.apiKeyHeaders, 'idempotency-key': key }, body });
    const a = await send({ amount: '250000' });
    const b = await send({ amount: '250000' });
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(b.headers.get('location')).toBe(a.headers.get('location'));
    const g = await suite.app.gql<{ requestRefund: { id: string } }>(REQUEST, { t: transactionId, input: { amount: '250000' }, k: key }, f.apiKeyHeaders);
    expect(g.data!.requestRefund.id).toBe(idOf(a));
    const c = await send({ amount: '250001' });
    expect([c.status, c.body.code]).toEqual([409, 'IDEMPOTENCY_KEY_REUSED']);
    expect(await suite.app.deps.db.refund.count({ where: { transactionId } })).toBe(1);
    await drainMoneyWork(suite.app);
    expect((await txOf(f, transactionId)).refundedAmount).toBe('250000');
  });
});

describe('AdminConfigureRefundFeePolicy and the policy in force', () => {
  test('operators only; invalid commands answer 400 with the field and create nothing', async () => {
    const f = await fixture();
    const body = { scope: 'ORGANIZATION', organizationId: f.organizationId, percentage: '1' };
    expect((await suite.app.rest('POST', '/v1/admin/refund-fee-policy', { headers: f.member.headers, body })).status).toBe(403);
    expect((await suite.app.rest('POST', '/v1/admin/refund-fee-policy', { headers: f.apiKeyHeaders, body })).status).toBe(403);
    expect((await suite.app.rest('POST', '/v1/admin/refund-fee-policy', { body })).status).toBe(401);
    const before = await suite.app.deps.db.refundFeePolicy.count();
    const past = new Date(suite.app.clock.now().getTime() - 60_000).toISOString();
    const other = await signUpMember(suite.app);
    for (const [input, field] of [
      [{ scope: 'PLATFORM', fixedAmount: '10' }, 'fixedAmount'],
      [{ scope: 'PLATFORM', maximumAmount: '10' }, 'maximumAmount'],
      [{ scope: 'PLATFORM', assetNetworkId: f.catalog.assetNetworkId, minimumAmount: '10', maximumAmount: '9' }, 'maximumAmount'],
      [{ scope: 'PLATFORM', organizationId: f.organizationId }, 'organizationId'],
      [{ scope: 'ORGANIZATION' }, 'organizationId'],
      [{ scope: 'ORGANIZATION', organizationId: randomUUID() }, 'organizationId'],
      [{ scope: 'APPLICATION', applicationId: f.applicationId, organizationId: other.organizationId }, 'organizationId'],
      [{ scope: 'APPLICATION', applicationId: randomUUID() }, 'applicationId'],
      [{ scope: 'PLATFORM', assetNetworkId: randomUUID() }, 'assetNetworkId'],
      [{ scope: 'PLATFORM', percentage: '100.5' }, 'percentage'],
      [{ scope: 'PLATFORM', percentage: '1.1234567' }, 'percentage'],
      [{ scope: 'PLATFORM', effectiveFrom: past }, 'effectiveFrom'],
      [{ scope: 'GALAXY' }, '(input)'],
    ] as const) {
      const r = await suite.app.rest('POST', '/v1/admin/refund-fee-policy', { headers: suite.op.headers, body: input });
      expect(r.status, JSON.stringify(input) + r.text).toBe(400);
      if (field !== '(input)')
        expect(
          r.body.errors.map((e: { field: string }) => e.field),
          JSON.stringify(input),
        ).toContain(field);
    }
    expect(await suite.app.deps.db.refundFeePolicy.count()).toBe(before);

    // Through GraphQL: the new version, audited with the operator.
    const m = `mutation($input: ConfigureRefundFeePolicyInput!) { adminConfigureRefundFeePolicy(input: $input) {
      id scope organizationId applicationId assetNetworkId version percentage fixedAmount minimumAmount maximumAmount allowReversalAfterSettlement effectiveFrom } }`;
    const g1 = await suite.app.gql<{ adminConfigureRefundFeePolicy: Record<string, unknown> }>(m, { input: body }, suite.op.headers);
    const g2 = await suite.app.gql<{ adminConfigureRefundFeePolicy: Record<string, unknown> }>(
      m,
      { input: { ...body, percentage: '2.25', allowReversalAfterSettlement: true } },
      suite.op.headers,
    );
    expect(g1.data!.adminConfigureRefundFeePolicy).toMatchObject({
      scope: 'ORGANIZATION',
      organizationId: f.organizationId,
      applicationId: null,
      assetNetworkId: null,
      version: 1,
      percentage: '1',
      fixedAmount: '0',
      minimumAmount: '0',
      maximumAmount: null,
      allowReversalAfterSettlement: false,
      effectiveFrom: suite.app.clock.now().toISOString(),
    });
    expect(g2.data!.adminConfigureRefundFeePolicy).toMatchObject({ version: 2, percentage: '2.25', allowReversalAfterSettlement: true });
    const [entry] = await suite.app.deps.db.auditLogEntry.findMany({ where: { entityId: g2.data!.adminConfigureRefundFeePolicy.id as string } });
    expect(entry).toMatchObject({ action: 'refund_fee_policy.configured', actorType: 'OPERATOR', organizationId: f.organizationId });
    const q = await suite.app.gql<{ refundFeePolicies: { version: number }[] }>(
      'query($o: ID) { refundFeePolicies(organizationId: $o) { version } }',
      { o: f.organizationId },
      suite.op.headers,
    );
    expect(q.data!.refundFeePolicies.map((p) => p.version)).toEqual([1, 2]);
    const denied = await suite.app.gql('query { refundFeePolicies { id } }', {}, f.member.headers);
    expect(denied.errors?.[0]?.extensions?.code).toBe('PRINCIPAL_NOT_ALLOWED');
  });

  test('the most specific scope in force wins; within a scope the newest version; future versions wait for their time', async () => {
    const f = await fixture();
    const an = f.catalog.assetNetworkId;
    const { transactionId } = await fund(f);
    const fee = async () => {
      const r = await refund(f, transactionId, { amount: '100000' });
      expect(r.status).toBe('EXECUTED');
      return [r.feeAmount, r.refundFeePolicyId];
    };
    expect(await fee()).toEqual(['0', null]);
    const platformAn = await configure({ scope: 'PLATFORM', assetNetworkId: an, percentage: '1' });
    expect(await fee()).toEqual(['1000', platformAn]);
    // Another organization's policy changes nothing here.
    const stranger = await signUpMember(suite.app);
    await configure({ scope: 'ORGANIZATION', organizationId: stranger.organizationId, percentage: '50' });
    expect(await fee()).toEqual(['1000', platformAn]);
    const org = await configure({ scope: 'ORGANIZATION', organizationId: f.organizationId, percentage: '2' });
    expect(await fee()).toEqual(['2000', org]);
    const orgAn = await configure({ scope: 'ORGANIZATION', organizationId: f.organizationId, assetNetworkId: an, percentage: '3' });
    expect(await fee()).toEqual(['3000', orgAn]);
    // An application policy effective in 10 minutes: not yet.
    const later = new Date(suite.app.clock.now().getTime() + 600_000).toISOString();
    const appLater = await configure({ scope: 'APPLICATION', applicationId: f.applicationId, percentage: '4', effectiveFrom: later });
    expect(await fee()).toEqual(['3000', orgAn]);
    // The sandbox's clock reaches it (sandbox rules read the organization's sandbox clock).
    await sandboxAdvanceClock(suite.app, f.apiKeyHeaders, 601);
    expect(await fee()).toEqual(['4000', appLater]);
    const appAn1 = await configure({ scope: 'APPLICATION', applicationId: f.applicationId, assetNetworkId: an, percentage: '5' });
    expect(await fee()).toEqual(['5000', appAn1]);
    const appAn2 = await configure({ scope: 'APPLICATION', applicationId: f.applicationId, assetNetworkId: an, percentage: '0.5' });
    expect(await fee()).toEqual(['500', appAn2]);
    expect((await suite.app.deps.db.refundFeePolicy.findUniqueOrThrow({ where: { id: appAn2 } })).version).toBe(2);
    expect(await system('PLATFORM_REVENUE', an)).toBe(1000n + 1000n + 2000n + 3000n + 3000n + 4000n + 5000n + 500n);
  });

  test('a platform-wide policy applies to every organization without a more specific one (and a new version replaces it)', async () => {
    const f = await fixture();
    const { transactionId } = await fund(f);
    const wide = await configure({ scope: 'PLATFORM', percentage: '7' });
    expect(await refund(f, transactionId, { amount: '100000' })).toMatchObject({ feeAmount: '7000', refundFeePolicyId: wide });
    const neutral = await configure({ scope: 'PLATFORM', percentage: '0' });
    expect(await refund(f, transactionId, { amount: '100000' })).toMatchObject({ feeAmount: '0', refundFeePolicyId: neutral });
  });
});

describe('refunds after settlement (reversal from the beneficiaries)', () => {
  async function settle(f: MoneyFixture, transactionId: string, amount?: bigint) {
    const r = await suite.app.rest('POST', `/v1/transactions/${transactionId}/settlements`, {
      headers: f.apiKeyHeaders,
      ...(amount ? { body: { amount: amount.toString() } } : {}),
    });
    expect(r.status, r.text).toBe(201);
    await drainMoneyWork(suite.app);
    const s = await suite.app.rest('GET', `/v1/settlements/${idOf(r)}`, { headers: f.apiKeyHeaders });
    expect(s.body.status, JSON.stringify(s.body)).toBe('EXECUTED');
    return s.body as { id: string; allocations: { id: string; status: string; amount: string; reversedAmount: string }[] };
  }
  const allocation = (id: string) => suite.app.deps.db.settlementAllocation.findUniqueOrThrow({ where: { id } });
  const retainedBalance = async (f: MoneyFixture, allocationId: string) =>
    (
      await ledgerBalanceOf(suite.app.deps.db, {
        kind: 'RETAINED',
        ownerId: allocationId,
        organizationId: f.organizationId,
        assetNetworkId: f.catalog.assetNetworkId,
      })
    ).posted;

  test('refused without the policy; with it, RETAINED portions first, then released ones, newest settlement first', async () => {
    const f = await fixture();
    const { pi, transactionId } = await fund(f);
    const s1 = await settle(f, transactionId, 400_000n);
    expect(s1.allocations).toMatchObject([{ status: 'RELEASED', amount: '400000' }]);
    expect(
      (await suite.app.rest('POST', `/v1/accounts/${f.beneficiaryAccountId}/freeze`, { headers: f.member.headers, body: { reason: 'KYC refresh' } })).status,
    ).toBe(204);
    suite.app.clock.advance(1000);
    const s2 = await settle(f, transactionId, 300_000n);
    expect(s2.allocations).toMatchObject([{ status: 'RETAINED', amount: '300000' }]);
    expect((await txOf(f, transactionId)).escrowAmount).toBe('300000');

    // Beyond the escrow without a policy allowing reversal: rejected.
    const refused = await refund(f, transactionId, { amount: '500000' });
    expect(refused.rejectionReason).toMatch(/^AMOUNT_EXCEEDS_REFUNDABLE: .*does not allow a reversal/);
    await configure({ scope: 'ORGANIZATION', organizationId: f.organizationId, allowReversalAfterSettlement: true });
    // Beyond escrow + what the settlements still hold: rejected.
    expect((await refund(f, transactionId, { amount: '1000001' })).rejectionReason).toMatch(/^AMOUNT_EXCEEDS_REFUNDABLE: /);

    // 300,000 from the escrow, 200,000 from the RETAINED portion (the frozen account is not touched).
    const a = await refund(f, transactionId, { amount: '500000' });
    expect(a).toMatchObject({ status: 'EXECUTED', amount: '500000', reversedAmount: '200000', feeAmount: '0', isTotal: true });
    expect((await allocation(s2.allocations[0]!.id)).reversedAmount.toFixed()).toBe('200000');
    expect((await allocation(s1.allocations[0]!.id)).reversedAmount.toFixed()).toBe('0');
    expect(await retainedBalance(f, s2.allocations[0]!.id)).toBe(100_000n);
    expect((await customer(f)).posted).toBe(400_000n);
    expect(await txOf(f, transactionId)).toMatchObject({
      status: 'SETTLED',
      settledAmount: '700000',
      refundedAmount: '500000',
      reversedAmount: '200000',
      escrowAmount: '0',
    });

    // Next: 100,000 RETAINED, then 200,000 of the released portion, whose account is frozen: rejected, nothing moved.
    const b = await refund(f, transactionId, { amount: '300000' });
    expect(b.rejectionReason).toMatch(/^BENEFICIARY_ACCOUNT_UNAVAILABLE: /);
    expect((await allocation(s2.allocations[0]!.id)).reversedAmount.toFixed()).toBe('200000');
    expect(await retainedBalance(f, s2.allocations[0]!.id)).toBe(100_000n);

    // Unfrozen: the beneficiary gives back 300,000 in all (what was retained first, then its balance).
    expect((await suite.app.rest('POST', `/v1/accounts/${f.beneficiaryAccountId}/unfreeze`, { headers: f.member.headers })).status).toBe(204);
    await drainMoneyWork(suite.app);
    const c = await refund(f, transactionId, { amount: '300000' });
    expect(c).toMatchObject({ status: 'EXECUTED', reversedAmount: '300000', isTotal: true });
    expect((await allocation(s2.allocations[0]!.id)).reversedAmount.toFixed()).toBe('300000');
    expect((await allocation(s1.allocations[0]!.id)).reversedAmount.toFixed()).toBe('200000');
    expect((await customer(f)).posted).toBe(200_000n);
    expect(await retainedBalance(f, s2.allocations[0]!.id)).toBe(0n);
    expect(await txOf(f, transactionId)).toMatchObject({ status: 'SETTLED', refundedAmount: '800000', reversedAmount: '500000', escrowAmount: '0' });
    const refunded = (await refundEvents(f)).filter((e) => e.type === 'transaction.refunded');
    expect(refunded.map((e) => e.body)).toEqual([
      { TransactionId: transactionId, RefundId: a.id, IsTotal: true },
      { TransactionId: transactionId, RefundId: c.id, IsTotal: true },
    ]);
    await sandboxMine(suite.app, f.apiKeyHeaders, f.catalog.networkId, 1);
    expect(await onChain(f, pi.address)).toBe(200_000n);
  });

  test('BENEFICIARY_BALANCE_INSUFFICIENT when the beneficiary has already spent (or holds) what would be taken back', async () => {
    const f = await fixture();
    const an = f.catalog.assetNetworkId;
    const { transactionId } = await fund(f);
    const s = await settle(f, transactionId);
    expect(s.allocations).toMatchObject([{ status: 'RELEASED', amount: '1000000' }]);
    expect((await txOf(f, transactionId)).status).toBe('SETTLED');
    await configure({ scope: 'APPLICATION', applicationId: f.applicationId, assetNetworkId: an, allowReversalAfterSettlement: true, percentage: '1' });
    // A pending withdrawal of 600,000 holds part of the beneficiary's balance.
    const hold = await createHold(suite.app.deps.db, {
      idempotencyKey: `test-hold:${randomUUID()}`,
      nature: 'test.withdrawal',
      organizationId: f.organizationId,
      debit: { kind: 'CUSTOMER', ownerId: f.beneficiaryAccountId, organizationId: f.organizationId, assetNetworkId: an },
      credit: { kind: 'SUSPENSE', ownerId: f.organizationId, organizationId: f.organizationId, assetNetworkId: an },
      amount: 600_000n,
      postedAt: suite.app.clock.now(),
    });
    expect((await customer(f)).available).toBe(400_000n);
    const revenue = await system('PLATFORM_REVENUE', an);
    const r = await refund(f, transactionId, { amount: '500000' });
    expect(r.status).toBe('REJECTED');
    expect(r.rejectionReason).toMatch(/^BENEFICIARY_BALANCE_INSUFFICIENT: /);
    expect((await allocation(s.allocations[0]!.id)).reversedAmount.toFixed()).toBe('0');
    expect(await customer(f)).toMatchObject({ posted: 1_000_000n, available: 400_000n });
    expect(await system('PLATFORM_REVENUE', an)).toBe(revenue);
    expect((await refundEvents(f)).map((e) => e.type)).toEqual(['refund.rejected']);

    await voidHold(suite.app.deps.db, {
      holdId: hold.holdId,
      idempotencyKey: `test-hold-void:${hold.holdId}`,
      nature: 'test.withdrawal.void',
      postedAt: suite.app.clock.now(),
    });
    const ok = await refund(f, transactionId, { amount: '500000' });
    expect(ok).toMatchObject({ status: 'EXECUTED', reversedAmount: '500000', feeAmount: '5000', netAmount: '495000', isTotal: true });
    expect((await customer(f)).posted).toBe(500_000n);
    expect(await txOf(f, transactionId)).toMatchObject({ status: 'SETTLED', refundedAmount: '500000', reversedAmount: '500000', escrowAmount: '0' });
  });
});
