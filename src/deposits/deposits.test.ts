import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { createOperator, createTestApp, signUpMember, type TestApp } from '../../test/harness';
import { checkLedgerInvariants } from '../../test/ledger-invariants';
import { sandboxAdvanceClock, sandboxDrop, sandboxMine, sandboxReorg, sandboxReplace, sandboxSend } from '../../test/money-helpers';
import { balanceOf, postLedgerTransaction } from '../ledger/ledger';
import { ledgerAccounts } from '../ledger/ledger';
import { syncNetwork } from './sync';
import { runChainSyncJobs } from './deposits.jobs';
import { CHAIN_SYNC_QUEUE, type ChainSyncJob } from '../kernel/queues';
import { createIntent, drainChainSync, eventsOf, moneyDeps, moneyFixture, sweepExpiries, type MoneyFixture } from '../../test/fixtures/deposits/testing';

let app: TestApp;
let operator: { headers: Record<string, string> };
beforeAll(async () => {
  app = await createTestApp();
  operator = await createOperator(app);
});
afterAll(() => app.close());
afterEach(() => checkLedgerInvariants(app.deps.db));

// ---------------------------------------------------------------------------------------------
// Drivers

const send = (f: MoneyFixture, address: string, amount: bigint, extra: { replaceable?: boolean; revert?: boolean; assetNetworkId?: string } = {}) =>
  sandboxSend(app, f.apiKeyHeaders, { address, amount, assetNetworkId: f.catalog.assetNetworkId, ...extra });
const mine = (f: MoneyFixture, blocks = 1) => sandboxMine(app, f.apiKeyHeaders, f.catalog.networkId, blocks);
const sync = () => drainChainSync(app);
const get = async (f: MoneyFixture, path: string) => {
  const r = await app.rest('GET', path, { headers: f.apiKeyHeaders });
  expect(r.status, r.text).toBe(200);
  return r.body;
};
const intentOf = (f: MoneyFixture, id: string) => get(f, `/v1/payment-intents/${id}`);
const txOf = (f: MoneyFixture, id: string) => get(f, `/v1/transactions/${id}`);
const depositOf = (f: MoneyFixture, id: string) => get(f, `/v1/deposits/${id}`);
async function balances(f: MoneyFixture, transactionId: string) {
  const an = f.catalog.assetNetworkId;
  return {
    escrow: (await balanceOf(app.deps.db, ledgerAccounts.escrow({ id: transactionId, organizationId: f.organizationId, assetNetworkId: an }))).posted,
    suspense: (await balanceOf(app.deps.db, ledgerAccounts.suspense(f.organizationId, an))).posted,
    clearing: (await balanceOf(app.deps.db, ledgerAccounts.clearing(an))).posted,
  };
}
/** Events of the organization since `from` (an index into its event list), as "type Field=value…" for the interesting fields. */
async function eventsSince(f: MoneyFixture, from: number) {
  return (await eventsOf(app, f.organizationId))
    .slice(from)
    .map((e) => e.type + (e.body.ConfirmationCount !== undefined ? `(${e.body.ConfirmationCount})` : ''));
}
const eventCount = async (f: MoneyFixture) => (await eventsOf(app, f.organizationId)).length;
const resolveReview = (id: string, decision: 'ACCEPT' | 'REJECT', headers = operator.headers) =>
  app.rest('POST', `/v1/admin/deposits/${id}/resolve-under-review`, { body: { decision, reason: 'checked' }, headers });
const resolveReorg = (id: string, outcome: 'REMINED' | 'GONE', headers = operator.headers) =>
  app.rest('POST', `/v1/admin/deposits/${id}/resolve-reorg`, { body: { outcome, reason: 'chain checked' }, headers });

// ---------------------------------------------------------------------------------------------

describe('the deposit lifecycle', () => {
  test('detected, one deposit.confirming per count, confirmed and credited to escrow; the transaction funded and reserved', async () => {
    const f = await moneyFixture(app, { requiredConfirmations: 3 });
    const pi = await createIntent(app, f, { amount: '1000000' });
    const from = await eventCount(f);
    await send(f, pi.address, 1_000_000n);
    expect(await sync()).toBe(1);
    const detected = await intentOf(f, pi.id);
    expect(detected).toMatchObject({ status: 'PROCESSING', detectedAmount: '1000000', confirmedAmount: '0' });
    const depositId = detected.depositIds[0];
    expect(await depositOf(f, depositId)).toMatchObject({
      status: 'DETECTED',
      confirmations: 0,
      amount: '1000000',
      paymentIntentId: pi.id,
      transactionId: pi.transactionId,
      creditedTo: null,
    });
    for (const n of [1, 2]) {
      await mine(f);
      await sync();
      expect(await depositOf(f, depositId)).toMatchObject({ status: 'CONFIRMING', confirmations: n });
    }
    expect(await balances(f, pi.transactionId)).toEqual({ escrow: 0n, suspense: 0n, clearing: 0n });
    await mine(f);
    await sync();
    // Nothing new: a sync that finds no change writes nothing.
    expect(await sync()).toBe(0);
    expect(await syncNetwork(moneyDeps(app), f.catalog.networkId)).toMatchObject({ changes: 0 });
    await mine(f, 5);
    await sync();

    const d = await depositOf(f, depositId);
    expect(d).toMatchObject({ status: 'CONFIRMED', confirmations: 3, creditedTo: 'ESCROW', late: false });
    expect(d.confirmedAt).toBeTruthy();
    expect(await intentOf(f, pi.id)).toMatchObject({ status: 'SUCCEEDED', detectedAmount: '1000000', confirmedAmount: '1000000', overpaid: false });
    expect(await txOf(f, pi.transactionId)).toMatchObject({ status: 'RESERVED', fundedAmount: '1000000', frozen: false });
    expect(await balances(f, pi.transactionId)).toEqual({ escrow: 1_000_000n, suspense: 0n, clearing: 1_000_000n });
    expect(await eventsSince(f, from)).toEqual([
      'deposit.detected',
      'deposit.confirming(1)',
      'deposit.confirming(2)',
      'deposit.confirmed',
      'transaction.funded',
      'transaction.reserved',
    ]);
    const events = (await eventsOf(app, f.organizationId)).slice(from);
    expect(events[0]!.body).toEqual({ DepositId: depositId, PaymentIntentId: pi.id, Amount: '1000000' });
    expect(events[3]!.body).toEqual({ DepositId: depositId, PaymentIntentId: pi.id, TransactionId: pi.transactionId, Amount: '1000000' });
    expect(events[5]!.body).toEqual({ TransactionId: pi.transactionId, Amount: '1000000' });
    // The posting: one ledger transaction, keyed by the deposit.
    const lt = await app.deps.db.ledgerTransaction.findUniqueOrThrow({
      where: { idempotencyKey: `deposit:${depositId}:confirmed` },
      include: { entries: true },
    });
    expect(lt.nature).toBe('deposit.confirmed');
    expect(lt.entries).toHaveLength(2);
    // GraphQL reads the same deposit.
    const g = await app.gql<{ deposit: { status: string; amount: string } }>(
      `query($id: ID!) { deposit(id: $id) { status amount } }`,
      { id: depositId },
      f.apiKeyHeaders,
    );
    expect(g.data?.deposit).toEqual({ status: 'CONFIRMED', amount: '1000000' });
    const audit = await app.deps.db.auditLogEntry.findMany({ where: { entityId: depositId }, orderBy: [{ occurredAt: 'asc' }, { id: 'asc' }] });
    // (One ManualClock instant for all of them: compared as sets.)
    expect(audit.map((a) => a.action).sort()).toEqual(['deposit.confirmed', 'deposit.confirming', 'deposit.detected']);
    expect(audit.every((a) => a.actorType === 'SYSTEM')).toBe(true);
  });

  test('a transfer first seen deep enough is detected and confirmed in one sync', async () => {
    const f = await moneyFixture(app, { requiredConfirmations: 2 });
    const pi = await createIntent(app, f);
    const from = await eventCount(f);
    await send(f, pi.address, 1_000_000n);
    await mine(f, 2);
    await sync();
    expect(await eventsSince(f, from)).toEqual(['deposit.detected', 'deposit.confirmed', 'transaction.funded', 'transaction.reserved']);
  });

  test('GetDeposit: 404 for another organization, another environment’s key, or an unknown id; members see it', async () => {
    const f = await moneyFixture(app, { requiredConfirmations: 1 });
    const pi = await createIntent(app, f);
    await send(f, pi.address, 1_000_000n);
    await sync();
    const [depositId] = (await intentOf(f, pi.id)).depositIds;
    const other = await signUpMember(app);
    expect((await app.rest('GET', `/v1/deposits/${depositId}`, { headers: other.headers })).status).toBe(404);
    expect((await app.rest('GET', `/v1/deposits/${crypto.randomUUID()}`, { headers: f.apiKeyHeaders })).status).toBe(404);
    expect((await app.rest('GET', `/v1/deposits/nope`, { headers: f.apiKeyHeaders })).status).toBe(404);
    const prodKey = await app.rest('POST', `/v1/applications/${f.applicationId}/environments`, { body: { type: 'PRODUCTION' }, headers: f.member.headers });
    const key = await app.rest('POST', `/v1/environments/${prodKey.body.id}/api-keys`, { headers: f.member.headers });
    expect((await app.rest('GET', `/v1/deposits/${depositId}`, { headers: { 'x-api-key': key.body.apiKey } })).status).toBe(404);
    expect((await app.rest('GET', `/v1/payment-intents/${pi.id}`, { headers: { 'x-api-key': key.body.apiKey } })).status).toBe(404);
    expect((await app.rest('GET', `/v1/deposits/${depositId}`, { headers: f.member.headers })).body.status).toBe('DETECTED');
  });
});

describe('amounts', () => {
  test('partial: underpaid stays PROCESSING, a top-up completes it (two deposits summed)', async () => {
    const f = await moneyFixture(app, { requiredConfirmations: 1 });
    const pi = await createIntent(app, f, { amount: '1000000' });
    const from = await eventCount(f);
    await send(f, pi.address, 600_000n);
    await mine(f);
    await sync();
    expect(await intentOf(f, pi.id)).toMatchObject({ status: 'PROCESSING', detectedAmount: '600000', confirmedAmount: '600000' });
    expect(await txOf(f, pi.transactionId)).toMatchObject({ status: 'AWAITING_FUNDS', fundedAmount: '600000' });
    expect(await balances(f, pi.transactionId)).toEqual({ escrow: 600_000n, suspense: 0n, clearing: 600_000n });
    await send(f, pi.address, 400_000n);
    await sync();
    expect(await intentOf(f, pi.id)).toMatchObject({ status: 'PROCESSING', detectedAmount: '1000000', confirmedAmount: '600000' });
    await mine(f);
    await sync();
    expect(await intentOf(f, pi.id)).toMatchObject({ status: 'SUCCEEDED', confirmedAmount: '1000000', overpaid: false });
    expect(await txOf(f, pi.transactionId)).toMatchObject({ status: 'RESERVED', fundedAmount: '1000000' });
    expect(await balances(f, pi.transactionId)).toEqual({ escrow: 1_000_000n, suspense: 0n, clearing: 1_000_000n });
    expect(await eventsSince(f, from)).toEqual([
      'deposit.detected',
      'deposit.confirmed',
      'deposit.detected',
      'deposit.confirmed',
      'transaction.funded',
      'transaction.reserved',
    ]);
  });

  test('overpaid: the whole deposit is held in escrow, the intent flagged', async () => {
    const f = await moneyFixture(app, { requiredConfirmations: 1 });
    const pi = await createIntent(app, f, { amount: '1000000' });
    await send(f, pi.address, 1_250_000n);
    await mine(f);
    await sync();
    expect(await intentOf(f, pi.id)).toMatchObject({ status: 'SUCCEEDED', confirmedAmount: '1250000', overpaid: true });
    expect(await txOf(f, pi.transactionId)).toMatchObject({ status: 'RESERVED', amount: '1000000', fundedAmount: '1250000' });
    expect(await balances(f, pi.transactionId)).toEqual({ escrow: 1_250_000n, suspense: 0n, clearing: 1_250_000n });
  });

  test('double payment: a second payment after success is held too (transaction.reserved with the new amount)', async () => {
    const f = await moneyFixture(app, { requiredConfirmations: 1 });
    const pi = await createIntent(app, f, { amount: '1000000' });
    await send(f, pi.address, 1_000_000n);
    await mine(f);
    await sync();
    const from = await eventCount(f);
    await send(f, pi.address, 1_000_000n);
    await mine(f);
    await sync();
    expect(await intentOf(f, pi.id)).toMatchObject({ status: 'SUCCEEDED', confirmedAmount: '2000000', overpaid: true, paidLate: false });
    expect(await txOf(f, pi.transactionId)).toMatchObject({ status: 'RESERVED', fundedAmount: '2000000' });
    expect(await eventsSince(f, from)).toEqual(['deposit.detected', 'deposit.confirmed', 'transaction.reserved']);
    expect((await eventsOf(app, f.organizationId)).at(-1)!.body).toEqual({ TransactionId: pi.transactionId, Amount: '2000000' });
    expect(await balances(f, pi.transactionId)).toEqual({ escrow: 2_000_000n, suspense: 0n, clearing: 2_000_000n });
  });

  test('wrong asset and below the minimum: REJECTED at once, never credited, no deposit.detected', async () => {
    const f = await moneyFixture(app, { requiredConfirmations: 1, minimumDeposit: 1000n });
    // A second asset on the same network.
    const a2 = await app.rest('POST', '/v1/platform/assets', {
      headers: f.catalog.operator.headers,
      body: { code: `EUR${Date.now() % 100000}`, name: 'Euro', decimals: 6 },
    });
    const an2 = await app.rest('POST', '/v1/platform/asset-networks', {
      headers: f.catalog.operator.headers,
      body: {
        assetId: a2.headers.get('location')!.split('/').pop(),
        networkId: f.catalog.networkId,
        decimals: 6,
        contractReference: '0x' + 'ab'.repeat(20),
        minimumDeposit: '0',
      },
    });
    expect(an2.status, an2.text).toBe(201);
    const otherAssetNetworkId = an2.headers.get('location')!.split('/').pop()!;
    await app.rest('POST', `/v1/platform/asset-networks/${otherAssetNetworkId}/enable`, { headers: f.catalog.operator.headers });
    const pi = await createIntent(app, f);
    const from = await eventCount(f);
    await send(f, pi.address, 5_000n, { assetNetworkId: otherAssetNetworkId });
    await send(f, pi.address, 999n);
    await mine(f);
    await sync();
    const it = await intentOf(f, pi.id);
    expect(it).toMatchObject({ status: 'AWAITING_PAYMENT', detectedAmount: '0' });
    const ds = await Promise.all(it.depositIds.map((id: string) => depositOf(f, id)));
    expect(ds.map((d) => [d.status, d.reason.split(':')[0], d.assetNetworkId])).toEqual([
      ['REJECTED', 'WRONG_ASSET', otherAssetNetworkId],
      ['REJECTED', 'BELOW_MINIMUM', f.catalog.assetNetworkId],
    ]);
    expect(await eventsSince(f, from)).toEqual(['deposit.rejected', 'deposit.rejected']);
    expect(await balances(f, pi.transactionId)).toEqual({ escrow: 0n, suspense: 0n, clearing: 0n });
  });
});

describe('expiry and late deposits', () => {
  test(
    'a deposit after expiry is late: credited to SUSPENSE with payment_intent.late_deposit_received; the intent ' + 'stays EXPIRED, flagged paidLate',
    async () => {
      const f = await moneyFixture(app, { requiredConfirmations: 1 });
      const pi = await createIntent(app, f, { expiresInSeconds: 600 });
      await sandboxAdvanceClock(app, f.apiKeyHeaders, 601);
      expect(await sweepExpiries(app, f.organizationId)).toBe(1);
      const expired = await intentOf(f, pi.id);
      expect(expired).toMatchObject({ status: 'EXPIRED' });
      expect(await txOf(f, pi.transactionId)).toMatchObject({ status: 'EXPIRED' });
      const from = await eventCount(f);
      await send(f, pi.address, 1_000_000n);
      await sync();
      await mine(f);
      await sync();
      const [depositId] = (await intentOf(f, pi.id)).depositIds;
      expect(await depositOf(f, depositId)).toMatchObject({ status: 'CONFIRMED', late: true, creditedTo: 'SUSPENSE' });
      expect(await intentOf(f, pi.id)).toMatchObject({ status: 'EXPIRED', paidLate: true, confirmedAmount: '0' });
      expect(await txOf(f, pi.transactionId)).toMatchObject({ status: 'EXPIRED', fundedAmount: '0' });
      expect(await balances(f, pi.transactionId)).toEqual({ escrow: 0n, suspense: 1_000_000n, clearing: 1_000_000n });
      expect(await eventsSince(f, from)).toEqual(['deposit.detected', 'deposit.confirmed', 'payment_intent.late_deposit_received']);
      const late = (await eventsOf(app, f.organizationId)).at(-1)!.body;
      expect(late).toMatchObject({
        PaymentIntentId: pi.id,
        TransactionId: pi.transactionId,
        DepositId: depositId,
        Amount: '1000000',
        ExpiredAt: expired.expiredAt,
      });
      expect(new Date(late.ReceivedAt as string).getTime()).toBeGreaterThanOrEqual(new Date(expired.expiredAt).getTime());
    },
  );

  test('a deposit after ExpiresAt but before the sweep: the intent expires first, the deposit is late', async () => {
    const f = await moneyFixture(app, { requiredConfirmations: 1 });
    const pi = await createIntent(app, f, { expiresInSeconds: 600 });
    await sandboxAdvanceClock(app, f.apiKeyHeaders, 700);
    const from = await eventCount(f);
    await send(f, pi.address, 1_000_000n);
    await mine(f);
    await sync();
    expect(await eventsSince(f, from)).toEqual(['payment_intent.expired', 'deposit.detected', 'deposit.confirmed', 'payment_intent.late_deposit_received']);
    expect(await balances(f, pi.transactionId)).toEqual({ escrow: 0n, suspense: 1_000_000n, clearing: 1_000_000n });
  });

  test('a deposit after a cancel is late too', async () => {
    const f = await moneyFixture(app, { requiredConfirmations: 1 });
    const pi = await createIntent(app, f);
    expect((await app.rest('POST', `/v1/payment-intents/${pi.id}/cancel`, { headers: f.apiKeyHeaders })).status).toBe(204);
    await send(f, pi.address, 1_000_000n);
    await mine(f);
    await sync();
    const it = await intentOf(f, pi.id);
    expect(it).toMatchObject({ status: 'CANCELLED', paidLate: true });
    const late = (await eventsOf(app, f.organizationId)).at(-1)!;
    expect(late.type).toBe('payment_intent.late_deposit_received');
    expect(late.body.ExpiredAt).toBe(it.cancelledAt);
    expect(await balances(f, pi.transactionId)).toEqual({ escrow: 0n, suspense: 1_000_000n, clearing: 1_000_000n });
  });

  test('PROCESSING at ExpiresAt keeps waiting for the deposit already seen, which completes it (not late)', async () => {
    const f = await moneyFixture(app, { requiredConfirmations: 2 });
    const pi = await createIntent(app, f, { expiresInSeconds: 600 });
    await send(f, pi.address, 1_000_000n);
    await sync();
    await sandboxAdvanceClock(app, f.apiKeyHeaders, 601);
    expect(await sweepExpiries(app, f.organizationId)).toBe(0);
    expect(await intentOf(f, pi.id)).toMatchObject({ status: 'PROCESSING' });
    await mine(f, 2);
    await sync();
    expect(await intentOf(f, pi.id)).toMatchObject({ status: 'SUCCEEDED', paidLate: false });
    expect(await balances(f, pi.transactionId)).toMatchObject({ escrow: 1_000_000n, suspense: 0n });
  });

  test('expiry of an underpaid intent: its partial funds move from the escrow to SUSPENSE', async () => {
    const f = await moneyFixture(app, { requiredConfirmations: 1 });
    const pi = await createIntent(app, f, { expiresInSeconds: 600, amount: '1000000' });
    await send(f, pi.address, 300_000n);
    await mine(f);
    await sync();
    expect(await balances(f, pi.transactionId)).toEqual({ escrow: 300_000n, suspense: 0n, clearing: 300_000n });
    await sandboxAdvanceClock(app, f.apiKeyHeaders, 601);
    const from = await eventCount(f);
    expect(await sweepExpiries(app)).toBeGreaterThanOrEqual(1);
    expect(await intentOf(f, pi.id)).toMatchObject({ status: 'EXPIRED', confirmedAmount: '300000' });
    expect(await txOf(f, pi.transactionId)).toMatchObject({ status: 'EXPIRED', fundedAmount: '0' });
    expect(await depositOf(f, (await intentOf(f, pi.id)).depositIds[0])).toMatchObject({ creditedTo: 'SUSPENSE', late: false });
    expect(await balances(f, pi.transactionId)).toEqual({ escrow: 0n, suspense: 300_000n, clearing: 300_000n });
    expect(await eventsSince(f, from)).toEqual(['payment_intent.expired']);
  });
});

describe('rejections before confirmation', () => {
  test('dropped: REJECTED, the intent back to AWAITING_PAYMENT', async () => {
    const f = await moneyFixture(app, { requiredConfirmations: 1 });
    const pi = await createIntent(app, f);
    const { txHash } = await send(f, pi.address, 1_000_000n);
    await sync();
    expect(await intentOf(f, pi.id)).toMatchObject({ status: 'PROCESSING' });
    const from = await eventCount(f);
    await sandboxDrop(app, f.apiKeyHeaders, txHash);
    await sync();
    const it = await intentOf(f, pi.id);
    expect(it).toMatchObject({ status: 'AWAITING_PAYMENT', detectedAmount: '0' });
    expect(await depositOf(f, it.depositIds[0])).toMatchObject({ status: 'REJECTED', reason: 'DROPPED' });
    expect(await eventsSince(f, from)).toEqual(['deposit.rejected']);
    expect((await eventsOf(app, f.organizationId)).at(-1)!.body).toEqual({ DepositId: it.depositIds[0], Reason: 'DROPPED' });
  });

  test('replaced: the original REJECTED, the replacement detected on its own and credited', async () => {
    const f = await moneyFixture(app, { requiredConfirmations: 1 });
    const pi = await createIntent(app, f);
    const { txHash } = await send(f, pi.address, 900_000n, { replaceable: true });
    await sync();
    const replacement = await sandboxReplace(app, f.apiKeyHeaders, txHash, 1_000_000n);
    await sync();
    await mine(f);
    await sync();
    const it = await intentOf(f, pi.id);
    const ds = await Promise.all(it.depositIds.map((id: string) => depositOf(f, id)));
    expect(ds.map((d) => [d.txHash, d.status, d.reason])).toEqual([
      [txHash, 'REJECTED', `REPLACED: by ${replacement.txHash}`],
      [replacement.txHash, 'CONFIRMED', null],
    ]);
    expect(it).toMatchObject({ status: 'SUCCEEDED', confirmedAmount: '1000000' });
    expect(await balances(f, pi.transactionId)).toEqual({ escrow: 1_000_000n, suspense: 0n, clearing: 1_000_000n });
  });

  test('reverted on chain: REJECTED, nothing credited', async () => {
    const f = await moneyFixture(app, { requiredConfirmations: 1 });
    const pi = await createIntent(app, f);
    await send(f, pi.address, 1_000_000n, { revert: true });
    await sync();
    await mine(f);
    await sync();
    const it = await intentOf(f, pi.id);
    expect(it.status).toBe('AWAITING_PAYMENT');
    expect(await depositOf(f, it.depositIds[0])).toMatchObject({ status: 'REJECTED', reason: 'REVERTED' });
    expect(await balances(f, pi.transactionId)).toEqual({ escrow: 0n, suspense: 0n, clearing: 0n });
  });
});

describe('under review', () => {
  test('a screened deposit (amount ending in 666) waits for an operator; ACCEPT credits it once deep enough', async () => {
    const f = await moneyFixture(app, { requiredConfirmations: 2 });
    const pi = await createIntent(app, f, { amount: '1000666' });
    const from = await eventCount(f);
    await send(f, pi.address, 1_000_666n);
    await mine(f, 3);
    await sync();
    const [id] = (await intentOf(f, pi.id)).depositIds;
    expect(await depositOf(f, id)).toMatchObject({ status: 'UNDER_REVIEW', confirmations: 3 });
    expect((await depositOf(f, id)).reviewReason).toMatch(/^SCREENING_FLAGGED/);
    expect(await intentOf(f, pi.id)).toMatchObject({ status: 'PROCESSING', confirmedAmount: '0' });
    // Operators only; a member or an API key is refused.
    expect((await resolveReview(id, 'ACCEPT', f.member.headers)).status).toBe(403);
    expect((await resolveReview(id, 'ACCEPT', f.apiKeyHeaders)).status).toBe(403);
    expect(
      (await app.rest('POST', `/v1/admin/deposits/${id}/resolve-under-review`, { body: { decision: 'MAYBE', reason: 'x' }, headers: operator.headers })).status,
    ).toBe(400);
    expect(
      (await app.rest('POST', `/v1/admin/deposits/${id}/resolve-under-review`, { body: { decision: 'ACCEPT', reason: ' ' }, headers: operator.headers }))
        .status,
    ).toBe(400);
    expect((await resolveReview(crypto.randomUUID(), 'ACCEPT')).status).toBe(404);
    expect((await resolveReview(id, 'ACCEPT')).status).toBe(204);
    expect(await depositOf(f, id)).toMatchObject({ status: 'CONFIRMED', creditedTo: 'ESCROW' });
    expect(await intentOf(f, pi.id)).toMatchObject({ status: 'SUCCEEDED' });
    expect(await eventsSince(f, from)).toEqual(['deposit.detected', 'deposit.under_review', 'deposit.confirmed', 'transaction.funded', 'transaction.reserved']);
    // Resolved: a second resolution is a conflict.
    expect((await resolveReview(id, 'REJECT')).status).toBe(409);
    const audit = await app.deps.db.auditLogEntry.findFirstOrThrow({ where: { entityId: id, action: 'deposit.review_accepted' } });
    expect(audit.actorType).toBe('OPERATOR');
    expect(await balances(f, pi.transactionId)).toEqual({ escrow: 1_000_666n, suspense: 0n, clearing: 1_000_666n });
  });

  test('ACCEPT before the required depth: the deposit goes on confirming', async () => {
    const f = await moneyFixture(app, { requiredConfirmations: 3 });
    const pi = await createIntent(app, f, { amount: '666' });
    await send(f, pi.address, 666n);
    await mine(f);
    await sync();
    const [id] = (await intentOf(f, pi.id)).depositIds;
    expect((await resolveReview(id, 'ACCEPT')).status).toBe(204);
    expect(await depositOf(f, id)).toMatchObject({ status: 'CONFIRMING', confirmations: 1 });
    await mine(f, 2);
    await sync();
    expect(await depositOf(f, id)).toMatchObject({ status: 'CONFIRMED' });
  });

  test('REJECT: REJECTED, never credited; the intent back to AWAITING_PAYMENT', async () => {
    const f = await moneyFixture(app, { requiredConfirmations: 1 });
    const pi = await createIntent(app, f);
    await send(f, pi.address, 5_666n);
    await mine(f);
    await sync();
    const [id] = (await intentOf(f, pi.id)).depositIds;
    const from = await eventCount(f);
    expect((await resolveReview(id, 'REJECT')).status).toBe(204);
    expect(await depositOf(f, id)).toMatchObject({ status: 'REJECTED', reason: 'REVIEW_REJECTED: checked' });
    expect(await intentOf(f, pi.id)).toMatchObject({ status: 'AWAITING_PAYMENT', detectedAmount: '0' });
    expect(await eventsSince(f, from)).toEqual(['deposit.rejected']);
    await mine(f, 3);
    await sync();
    expect(await depositOf(f, id)).toMatchObject({ status: 'REJECTED' });
    expect(await balances(f, pi.transactionId)).toEqual({ escrow: 0n, suspense: 0n, clearing: 0n });
  });

  test('a deposit on a DISABLED asset-network is held for review', async () => {
    const f = await moneyFixture(app, { requiredConfirmations: 1 });
    const pi = await createIntent(app, f);
    expect((await app.rest('POST', `/v1/platform/asset-networks/${f.catalog.assetNetworkId}/disable`, { headers: f.catalog.operator.headers })).status).toBe(
      204,
    );
    await send(f, pi.address, 1_000_000n);
    await sync();
    const [id] = (await intentOf(f, pi.id)).depositIds;
    expect(await depositOf(f, id)).toMatchObject({ status: 'UNDER_REVIEW' });
    expect((await depositOf(f, id)).reviewReason).toMatch(/^ASSET_NETWORK_DISABLED/);
  });
});

describe('chain reorganizations', () => {
  test('before confirmation: the deposit goes back to DETECTED (deposit.confirming 0), then confirms when mined again', async () => {
    const f = await moneyFixture(app, { requiredConfirmations: 3 });
    const pi = await createIntent(app, f);
    await send(f, pi.address, 1_000_000n);
    await mine(f, 2);
    await sync();
    const [id] = (await intentOf(f, pi.id)).depositIds;
    expect(await depositOf(f, id)).toMatchObject({ status: 'CONFIRMING', confirmations: 2 });
    const from = await eventCount(f);
    await sandboxReorg(app, f.apiKeyHeaders, f.catalog.networkId, 2, false);
    await sync();
    expect(await depositOf(f, id)).toMatchObject({ status: 'DETECTED', confirmations: 0, blockHash: null });
    expect(await intentOf(f, pi.id)).toMatchObject({ status: 'PROCESSING' });
    await mine(f, 3);
    await sync();
    expect(await depositOf(f, id)).toMatchObject({ status: 'CONFIRMED' });
    expect(await eventsSince(f, from)).toEqual(['deposit.confirming(0)', 'deposit.confirmed', 'transaction.funded', 'transaction.reserved']);
  });

  test('after confirmation: REORG_FROZEN and the transaction frozen; REMINED only once the chain shows it deep again: no second credit', async () => {
    const f = await moneyFixture(app, { requiredConfirmations: 2 });
    const pi = await createIntent(app, f);
    await send(f, pi.address, 1_000_000n);
    await mine(f, 2);
    await sync();
    const [id] = (await intentOf(f, pi.id)).depositIds;
    expect((await resolveReorg(id, 'REMINED')).status).toBe(409); // not frozen
    const from = await eventCount(f);
    await sandboxReorg(app, f.apiKeyHeaders, f.catalog.networkId, 2, false);
    await sync();
    expect(await depositOf(f, id)).toMatchObject({ status: 'REORG_FROZEN', creditedTo: 'ESCROW' });
    const frozen = await txOf(f, pi.transactionId);
    expect(frozen).toMatchObject({ status: 'RESERVED', frozen: true, frozenByDepositId: id, frozenByMemberId: null });
    expect(await intentOf(f, pi.id)).toMatchObject({ status: 'SUCCEEDED' });
    expect(await eventsSince(f, from)).toEqual(['deposit.reorg_frozen', 'transaction.frozen']);
    const frozenEvent = (await eventsOf(app, f.organizationId)).at(-1)!.body;
    expect(frozenEvent).toMatchObject({ TransactionId: pi.transactionId, ActorMemberId: null });
    expect(frozenEvent.Reason).toMatch(/^REORG/);
    // The chain has it in the mempool: neither outcome yet.
    const notYet = await resolveReorg(id, 'REMINED');
    expect(notYet.status).toBe(409);
    expect(notYet.body.detail).toMatch(/ORPHANED/);
    expect((await resolveReorg(id, 'GONE')).status).toBe(409);
    // Mined again, at depth: a member cannot lift the reorg hold; an operator resolves.
    await mine(f, 2);
    await sync();
    expect(await depositOf(f, id)).toMatchObject({ status: 'REORG_FROZEN' });
    expect((await app.rest('POST', `/v1/transactions/${pi.transactionId}/unfreeze`, { headers: f.member.headers })).status).toBe(409);
    const from2 = await eventCount(f);
    expect((await resolveReorg(id, 'REMINED')).status).toBe(204);
    expect(await depositOf(f, id)).toMatchObject({ status: 'CONFIRMED', confirmations: 2 });
    expect(await txOf(f, pi.transactionId)).toMatchObject({ status: 'RESERVED', frozen: false, frozenByDepositId: null, fundedAmount: '1000000' });
    expect(await eventsSince(f, from2)).toEqual(['deposit.confirmed', 'transaction.unfrozen']);
    expect(await balances(f, pi.transactionId)).toEqual({ escrow: 1_000_000n, suspense: 0n, clearing: 1_000_000n });
    expect(await app.deps.db.ledgerTransaction.count({ where: { referenceId: id } })).toBe(1);
  });

  test('after confirmation: GONE only once the chain shows it can never be mined; the credit reversed, the transaction back to AWAITING_FUNDS', async () => {
    const f = await moneyFixture(app, { requiredConfirmations: 1 });
    const pi = await createIntent(app, f);
    const { txHash } = await send(f, pi.address, 1_000_000n);
    await mine(f);
    await sync();
    const [id] = (await intentOf(f, pi.id)).depositIds;
    await sandboxReorg(app, f.apiKeyHeaders, f.catalog.networkId, 1, false);
    await sync();
    expect(await depositOf(f, id)).toMatchObject({ status: 'REORG_FROZEN' });
    expect((await resolveReorg(id, 'GONE')).status).toBe(409);
    await sandboxDrop(app, f.apiKeyHeaders, txHash);
    await sync();
    expect((await resolveReorg(id, 'REMINED')).status).toBe(409);
    expect((await resolveReorg(id, 'GONE', f.member.headers)).status).toBe(403);
    const from = await eventCount(f);
    expect((await resolveReorg(id, 'GONE')).status).toBe(204);
    expect(await depositOf(f, id)).toMatchObject({ status: 'REVERSED', reason: 'REVERSED: chain checked' });
    expect(await txOf(f, pi.transactionId)).toMatchObject({ status: 'AWAITING_FUNDS', fundedAmount: '0', frozen: false, reservedAt: null });
    expect(await intentOf(f, pi.id)).toMatchObject({ status: 'AWAITING_PAYMENT', confirmedAmount: '0', detectedAmount: '0', succeededAt: null });
    expect(await balances(f, pi.transactionId)).toEqual({ escrow: 0n, suspense: 0n, clearing: 0n });
    expect(await eventsSince(f, from)).toEqual(['deposit.rejected', 'transaction.unfrozen']);
    const reversal = await app.deps.db.ledgerTransaction.findUniqueOrThrow({ where: { idempotencyKey: `deposit:${id}:reversed` } });
    expect(reversal.nature).toBe('deposit.reversed');
    expect((await resolveReorg(id, 'GONE')).status).toBe(409);
    // A new payment still completes it.
    await send(f, pi.address, 1_000_000n);
    await mine(f);
    await sync();
    expect(await intentOf(f, pi.id)).toMatchObject({ status: 'SUCCEEDED' });
  });

  test('a member freeze and a reorg hold: both must be lifted', async () => {
    const f = await moneyFixture(app, { requiredConfirmations: 1 });
    const pi = await createIntent(app, f);
    await send(f, pi.address, 1_000_000n);
    await mine(f);
    await sync();
    const [id] = (await intentOf(f, pi.id)).depositIds;
    expect((await app.rest('POST', `/v1/transactions/${pi.transactionId}/freeze`, { body: { reason: 'fraud check' }, headers: f.member.headers })).status).toBe(
      204,
    );
    const from = await eventCount(f);
    await sandboxReorg(app, f.apiKeyHeaders, f.catalog.networkId, 1, false);
    await sync();
    expect(await depositOf(f, id)).toMatchObject({ status: 'REORG_FROZEN' });
    expect(await eventsSince(f, from)).toEqual(['deposit.reorg_frozen']); // already frozen by the member: no second transaction.frozen
    expect(await txOf(f, pi.transactionId)).toMatchObject({ frozen: true, frozenByDepositId: id, frozenReason: 'fraud check' });
    expect((await app.rest('POST', `/v1/transactions/${pi.transactionId}/unfreeze`, { headers: f.member.headers })).status).toBe(204);
    expect(await txOf(f, pi.transactionId)).toMatchObject({ frozen: true, frozenByMemberId: null, frozenByDepositId: id });
    expect((await eventsOf(app, f.organizationId)).at(-1)!.type).toBe('deposit.reorg_frozen'); // still frozen: no transaction.unfrozen yet
    await mine(f);
    await sync();
    expect((await resolveReorg(id, 'REMINED')).status).toBe(204);
    expect((await eventsOf(app, f.organizationId)).at(-1)!.type).toBe('transaction.unfrozen');
    expect(await txOf(f, pi.transactionId)).toMatchObject({ frozen: false, frozenReason: null });
  });
});

describe('sync', () => {
  test('concurrent syncs of one network apply each change once', async () => {
    const f = await moneyFixture(app, { requiredConfirmations: 1 });
    const intents = [];
    for (let i = 0; i < 5; i++) intents.push(await createIntent(app, f));
    for (const pi of intents) await send(f, pi.address, 1_000_000n);
    await mine(f);
    const from = await eventCount(f);
    const results = await Promise.all([1, 2, 3, 4].map(() => syncNetwork(moneyDeps(app), f.catalog.networkId)));
    expect(results.reduce((n, r) => n + r.changes, 0)).toBe(5);
    const types = await eventsSince(f, from);
    expect(types.filter((t) => t === 'deposit.confirmed')).toHaveLength(5);
    expect(types.filter((t) => t === 'transaction.reserved')).toHaveLength(5);
    for (const pi of intents) expect(await balances(f, pi.transactionId)).toMatchObject({ escrow: 1_000_000n });
  });

  test('a sync follows what changed since its cursor, not every address ever allocated (issue 22)', async () => {
    const f = await moneyFixture(app, { requiredConfirmations: 1 });
    const networkId = f.catalog.networkId;
    const intents = [];
    for (let i = 0; i < 3; i++) intents.push(await createIntent(app, f));
    const idle = await createIntent(app, f); // allocated, never paid
    for (const pi of intents) await send(f, pi.address, 1_000_000n);
    await mine(f);
    const sync = () => syncNetwork(moneyDeps(app), networkId);
    expect(await sync()).toMatchObject({ addresses: 3 });
    // The cursor committed with the sync: the tip it followed.
    const tip = await app.deps.db.sandboxBlock.findFirstOrThrow({ where: { networkId, canonical: true }, orderBy: { height: 'desc' } });
    expect(await app.deps.db.chainSyncCursor.findUnique({ where: { networkId } })).toMatchObject({ height: tip.height, blockHash: tip.hash });
    // An empty block: only the cursor's own block is looked at again, then nothing.
    await mine(f);
    expect(await sync()).toMatchObject({ addresses: 3, changes: 0 });
    await mine(f);
    expect(await sync()).toMatchObject({ addresses: 0, changes: 0 });
    // A new transfer to the idle address: that address alone.
    await send(f, idle.address, 2_000_000n);
    expect(await sync()).toMatchObject({ addresses: 1, changes: 1 });
    await mine(f);
    expect(await sync()).toMatchObject({ addresses: 1, changes: 1 });
    for (const pi of [...intents, idle]) expect((await intentOf(f, pi.id)).status).toBe('SUCCEEDED');
  });

  test('a sync of sends alone, no block since its cursor, reconciles only their recipients; a drop or a block, everything (issue 22)', async () => {
    const f = await moneyFixture(app, { requiredConfirmations: 2 });
    const boss = app.deps.boss!;
    // The queued chain.sync jobs run once, together, by the real handler (as one fetch of the worker).
    const syncOnce = async () => {
      const jobs = await boss.fetch<ChainSyncJob>(CHAIN_SYNC_QUEUE, { batchSize: 500, ignoreStartAfter: true });
      const r = await runChainSyncJobs(
        moneyDeps(app),
        jobs.map((j) => j.data),
      );
      await boss.complete(
        CHAIN_SYNC_QUEUE,
        jobs.map((j) => j.id),
      );
      return r;
    };
    const intents = [];
    for (let i = 0; i < 5; i++) intents.push(await createIntent(app, f));
    await sync();
    const sent = [];
    for (const pi of intents.slice(0, 3)) sent.push(await send(f, pi.address, 1_000_000n));
    await sync(); // the cursor's first sync: everything
    for (const pi of intents.slice(0, 3)) expect(await intentOf(f, pi.id)).toMatchObject({ status: 'PROCESSING' });
    // A send, no block: its recipient alone (the three deposits waiting for a block are not read again).
    await send(f, intents[3]!.address, 1_000_000n);
    expect(await syncOnce()).toMatchObject({ addresses: 1, changes: 1 });
    expect(await intentOf(f, intents[3]!.id)).toMatchObject({ status: 'PROCESSING', detectedAmount: '1000000' });
    // A drop and a send in the same fetch: the drop's job names no address, so every open deposit is looked at.
    await sandboxDrop(app, f.apiKeyHeaders, sent[0]!.txHash);
    await send(f, intents[4]!.address, 1_000_000n);
    expect(await syncOnce()).toMatchObject({ addresses: 5, changes: 2 });
    expect(await intentOf(f, intents[0]!.id)).toMatchObject({ status: 'AWAITING_PAYMENT', detectedAmount: '0' });
    expect(await intentOf(f, intents[4]!.id)).toMatchObject({ status: 'PROCESSING' });
    // A block and a send in the same fetch: the block's job names no address either, so everything again
    // (the block's transfers, and the open deposits' new confirmation counts).
    await mine(f);
    await send(f, intents[0]!.address, 1_000_000n);
    expect(await syncOnce()).toMatchObject({ addresses: 5, changes: 5 });
    await mine(f, 2);
    await sync();
    for (const pi of intents) expect(await intentOf(f, pi.id)).toMatchObject({ status: 'SUCCEEDED' });
  });

  test('chunks: addresses beyond one chunk are all reconciled', async () => {
    const f = await moneyFixture(app, { requiredConfirmations: 1 });
    const intents = [];
    for (let i = 0; i < 5; i++) intents.push(await createIntent(app, f));
    for (const pi of intents) await send(f, pi.address, 1_000_000n);
    await mine(f);
    const r = await syncNetwork(moneyDeps(app), f.catalog.networkId, { chunk: 2 });
    expect(r).toMatchObject({ addresses: 5, changes: 5 });
    for (const pi of intents) expect((await intentOf(f, pi.id)).status).toBe('SUCCEEDED');
  });
});

describe('statements per confirmation (issue 22)', () => {
  test('a sync confirming N deposits costs a fixed number of statements per deposit', async () => {
    const f = await moneyFixture(app, { requiredConfirmations: 1 });
    const run = async (n: number) => {
      const intents = [];
      for (let i = 0; i < n; i++) intents.push(await createIntent(app, f));
      await sync();
      for (const pi of intents) await send(f, pi.address, 1_000_000n);
      await mine(f, 1);
      // The sends' own sync jobs are left queued: the statements counted are those of one sync.
      const { statements } = await app.sqlStatements(() => syncNetwork(moneyDeps(app), f.catalog.networkId));
      for (const pi of intents) expect(await intentOf(f, pi.id)).toMatchObject({ status: 'SUCCEEDED' });
      await sync();
      return statements;
    };
    const small = await run(2);
    const large = await run(10);
    const perDeposit = (large.length - small.length) / 8;
    // 17 before the chunk deferred its events and audit entries (issue 22); 10 with them written once
    // per chunk; 0.125 with the confirmations set-based (confirmMany): a chunk's statements no longer grow with its deposits.
    expect(perDeposit).toBeLessThanOrEqual(0.5);
  });

  test('a sandbox send is 4 statements in one transaction; a sync detecting N deposits a fixed number, whatever N', async () => {
    const f = await moneyFixture(app, { requiredConfirmations: 2 });
    const run = async (n: number) => {
      const intents = [];
      for (let i = 0; i < n; i++) intents.push(await createIntent(app, f));
      await sync();
      const sends: string[][] = [];
      for (const pi of intents) sends.push((await app.sqlStatements(() => send(f, pi.address, 1_000_000n))).statements);
      const detect = (await app.sqlStatements(() => syncNetwork(moneyDeps(app), f.catalog.networkId))).statements;
      for (const pi of intents) expect(await intentOf(f, pi.id)).toMatchObject({ status: 'PROCESSING', detectedAmount: '1000000' });
      await mine(f, 1);
      const progress = (await app.sqlStatements(() => syncNetwork(moneyDeps(app), f.catalog.networkId))).statements;
      await mine(f, 1);
      await sync();
      for (const pi of intents) expect(await intentOf(f, pi.id)).toMatchObject({ status: 'SUCCEEDED' });
      return { send: sends.at(-1)!, detect, progress };
    };
    const small = await run(2);
    const large = await run(10);
    // 13 before issue 22 (2 catalog reads, BEGIN, the network lock, the recipient, 2 reads for the bound,
    // the nonce count, the insert, the sync job, the audit entry, the tip, COMMIT); 5 with the bound,
    // nonce, insert and audit entry in one statement; 6 since a send alone is a group of one
    // (chain.sendTransactions: BEGIN, the recipients' locks, their bound read, one insert with nonces
    // and audit entries, the sync job, COMMIT; the same 6 for a group of any size); 5 since the insert
    // checks the bound itself (issue 22, session 10; the read only when an address would pass it); 4
    // since the insert writes the sync job too (session 12; and BEGIN goes with the locks: 3 round trips).
    expect(large.send).toHaveLength(4);
    expect(large.send[0]).toBe('BEGIN');
    // Detection (6.1 statements per deposit before) and each block's progress (1 per deposit) no longer grow with N.
    expect((large.detect.length - small.detect.length) / 8).toBeLessThanOrEqual(0.5);
    expect((large.progress.length - small.progress.length) / 8).toBeLessThanOrEqual(0.5);
  });

  test('a sandbox sync chunk runs straight on the pool, no Prisma model statement in it; a chunk with a deposit for the full path is redone through Prisma (issue 22)', async () => {
    const f = await moneyFixture(app, { requiredConfirmations: 1 });
    const model = (sql: string) => sql.includes('"public".');
    /** The statements of the sync's transactions: from each BEGIN to its COMMIT or ROLLBACK. */
    const inTransactions = (statements: string[]) => {
      const out: string[][] = [];
      for (const sql of statements)
        if (sql === 'BEGIN') out.push([sql]);
        else if (out.length && !['COMMIT', 'ROLLBACK'].includes(out.at(-1)!.at(-1)!)) out.at(-1)!.push(sql);
      return out;
    };
    // Common chunks: three intents paid, detected, then confirmed (each sync one chunk, all on the pool).
    const intents: Awaited<ReturnType<typeof createIntent>>[] = [];
    for (let i = 0; i < 3; i++) intents.push(await createIntent(app, f));
    await sync();
    // The first send, synced as sends alone (its recipient named) while no block came: the reads before
    // the chunk are raw on the pool too, and the mempool's addresses are not read (only the tip).
    await syncNetwork(moneyDeps(app), f.catalog.networkId); // the cursor at the tip
    await send(f, intents[0]!.address, 1_000_000n);
    const alone = (await app.sqlStatements(() => syncNetwork(moneyDeps(app), f.catalog.networkId, { only: [intents[0]!.address] }))).statements;
    expect(alone.filter(model)).toEqual([]);
    expect(alone.filter((sql) => sql.includes('DISTINCT "toAddress"'))).toEqual([]);
    expect(await intentOf(f, intents[0]!.id)).toMatchObject({ status: 'PROCESSING' });
    for (const pi of intents.slice(1)) await send(f, pi.address, 1_000_000n);
    const detectedAll = (await app.sqlStatements(() => syncNetwork(moneyDeps(app), f.catalog.networkId))).statements;
    const detected = inTransactions(detectedAll);
    await mine(f);
    const confirmedAll = (await app.sqlStatements(() => syncNetwork(moneyDeps(app), f.catalog.networkId))).statements;
    const confirmed = inTransactions(confirmedAll);
    // Not one Prisma model statement in the whole sync: its reads before the chunks are raw on the pool as well.
    expect([...detectedAll, ...confirmedAll].filter(model)).toEqual([]);
    for (const chunk of [...detected, ...confirmed]) {
      expect(chunk.at(-1)).toBe('COMMIT');
      expect(chunk.filter(model)).toEqual([]);
    }
    for (const pi of intents) expect(await intentOf(f, pi.id)).toMatchObject({ status: 'SUCCEEDED', confirmedAmount: '1000000' });
    for (const pi of intents) expect(await balances(f, pi.transactionId)).toMatchObject({ escrow: 1_000_000n });
    // A late deposit (its intent cancelled) beside two common ones: the pool's attempt rolls back, Prisma redoes the chunk.
    const more = [];
    for (let i = 0; i < 3; i++) more.push(await createIntent(app, f));
    await sync();
    expect((await app.rest('POST', `/v1/payment-intents/${more[1]!.id}/cancel`, { headers: f.apiKeyHeaders })).status).toBe(204);
    for (const pi of more) await send(f, pi.address, 2_000_000n);
    await mine(f);
    const mixed = inTransactions((await app.sqlStatements(() => syncNetwork(moneyDeps(app), f.catalog.networkId))).statements);
    // (poolTransaction's ROLLBACK is not a statement the hook sees: the first attempt just never commits.)
    expect(mixed).toHaveLength(2);
    expect(mixed[0]!.at(-1)).not.toBe('COMMIT');
    expect(mixed[0]!.filter(model)).toEqual([]);
    expect(mixed[1]!.at(-1)).toBe('COMMIT');
    expect(mixed[1]!.some(model)).toBe(true);
    expect(await intentOf(f, more[0]!.id)).toMatchObject({ status: 'SUCCEEDED', confirmedAmount: '2000000' });
    expect(await intentOf(f, more[2]!.id)).toMatchObject({ status: 'SUCCEEDED', confirmedAmount: '2000000' });
    expect(await intentOf(f, more[1]!.id)).toMatchObject({ status: 'CANCELLED', paidLate: true });
    expect(await balances(f, more[1]!.transactionId)).toMatchObject({ escrow: 0n, suspense: 2_000_000n });
    // Nothing of the rolled-back attempt stayed: each deposit once, each credit once.
    for (const pi of more) expect((await intentOf(f, pi.id)).depositIds).toHaveLength(1);
  });

  test('a credit the ledger refuses fails alone: the chunk is redone address by address, the others confirm, the refused one is isolated', async () => {
    const f = await moneyFixture(app, { requiredConfirmations: 1 });
    const intents = [];
    for (let i = 0; i < 3; i++) intents.push(await createIntent(app, f));
    for (const pi of intents) await send(f, pi.address, 1_000_000n);
    await sync();
    const victim = intents[1]!;
    const [depositId] = (await intentOf(f, victim.id)).depositIds as string[];
    // Another posting already holds the deposit's credit key (other fields): the ledger refuses its
    // credit with IDEMPOTENCY_CONFLICT, inside the chunk's one ledger_post.
    const an = f.catalog.assetNetworkId;
    const escrow = ledgerAccounts.escrow({ id: victim.transactionId, organizationId: f.organizationId, assetNetworkId: an });
    const planted = (key: string, from: 'clearing' | 'escrow') =>
      postLedgerTransaction(app.deps.db, {
        idempotencyKey: key,
        nature: 'test.planted',
        organizationId: f.organizationId,
        referenceType: 'Test',
        referenceId: victim.transactionId,
        metadata: {},
        lines: [
          { account: from === 'clearing' ? ledgerAccounts.clearing(an) : escrow, direction: 'DEBIT', amount: 1n },
          { account: from === 'clearing' ? escrow : ledgerAccounts.clearing(an), direction: 'CREDIT', amount: 1n },
        ],
        postedAt: app.clock.now(),
      });
    await planted(`deposit:${depositId}:confirmed`, 'clearing');
    await mine(f, 1);
    const r = await syncNetwork(moneyDeps(app), f.catalog.networkId);
    expect(r.isolated.map((x) => x.address)).toEqual([victim.address]);
    expect(r.isolated[0]!.error).toMatch(/idempotency|IDEMPOTENCY/i);
    for (const pi of [intents[0]!, intents[2]!]) {
      expect(await intentOf(f, pi.id)).toMatchObject({ status: 'SUCCEEDED', confirmedAmount: '1000000' });
      expect((await balances(f, pi.transactionId)).escrow).toBe(1_000_000n);
    }
    expect(await intentOf(f, victim.id)).toMatchObject({ status: 'PROCESSING', confirmedAmount: '0' });
    expect(await depositOf(f, depositId!)).toMatchObject({ status: 'DETECTED', creditedTo: null });
    // Undo the planted posting, so the ledger invariants checked after each test hold.
    await planted(`test:${depositId}:undo`, 'escrow');
    await app.deps.db.$executeRaw`DELETE FROM pgboss.job WHERE name = 'chain.sync.address'`;
  });
});
