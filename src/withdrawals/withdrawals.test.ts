import { createHash } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { createApiKey, createOperator, createTestApp, signUpMember, type TestApp } from '../../test/harness';
import { checkLedgerInvariants } from '../../test/ledger-invariants';
import { sandboxDrop, sandboxSend } from '../../test/money-helpers';
import { eventsOf } from '../../test/fixtures/deposits/testing';
import { drainMoneyWork, fundedTransaction } from '../../test/fixtures/settlements/testing';
import { addressOf, bytesToHex, derivePrivateKey, derivePublicKey, generateKeyPair } from '../chains/secp256k1';
import { RESERVE_RETRY_MS, RETRY_BASE_MS, STUCK_AFTER_MS } from './withdrawals';
import { withdrawalTesting, type WithdrawalSetup } from '../../test/fixtures/withdrawals/testing';

/**
 * Withdrawals, their policies and SelfCustody signing, through REST and GraphQL, with the real job
 * handlers (drainMoneyWork runs withdrawal.broadcast; the sweep is run as its job would) and the
 * sandbox chain. Every test ends with the ledger invariants.
 */
let app: TestApp;
let op: { operatorId: string; headers: Record<string, string> };
beforeAll(async () => {
  app = await createTestApp();
  op = await createOperator(app);
});
afterAll(() => app.close());
afterEach(() => checkLedgerInvariants(app.deps.db));

// ------------------------------------------------------------------------------------------------
// Helpers

const DEST = '0x00000000000000000000000000000000000000d1';
const { idOf, setup, sweep, balance, get, withdrawalEvents, mine } = withdrawalTesting(() => app, DEST);
type Setup = WithdrawalSetup;
const request = (s: Setup, amount: bigint, extra: Record<string, unknown> = {}, headers: Record<string, string> = s.f.apiKeyHeaders) =>
  app.rest('POST', `/v1/accounts/${s.accountId}/withdrawals`, {
    headers,
    body: { amount: amount.toString(), assetNetworkId: s.f.catalog.assetNetworkId, withdrawalDestinationId: s.destinationId, ...extra },
  });
async function withdraw(s: Setup, amount: bigint, extra: Record<string, unknown> = {}): Promise<string> {
  const r = await request(s, amount, extra);
  expect(r.status, r.text).toBe(201);
  expect(r.headers.get('location')).toMatch(/^\/v1\/withdrawals\/[0-9a-f-]{36}$/);
  expect(r.body).toEqual({ id: idOf(r) }); // { id } beside Location
  return idOf(r);
}
const configure = async (s: Setup, kind: 'withdrawal' | 'payout', body: Record<string, unknown>) => {
  const r = await app.rest('POST', `/v1/admin/organizations/${s.f.organizationId}/${kind}-policy`, { headers: op.headers, body });
  expect(r.status, r.text).toBe(204);
};

// ------------------------------------------------------------------------------------------------

describe('custodial withdrawals', () => {
  test('request (held at once) -> auto-approved -> broadcast -> confirmed; the hold is posted; idempotent; cancel refused after broadcast', async () => {
    const s = await setup();
    expect(await balance(s)).toEqual({ posted: 1_000_000n, available: 1_000_000n });
    const r = await request(s, 400_000n, {}, { ...s.f.apiKeyHeaders, 'idempotency-key': 'w-1' });
    expect(r.status, r.text).toBe(201);
    const id = idOf(r);
    const again = await request(s, 400_000n, {}, { ...s.f.apiKeyHeaders, 'idempotency-key': 'w-1' });
    expect([again.status, idOf(again)]).toEqual([201, id]);
    expect(await balance(s)).toEqual({ posted: 1_000_000n, available: 600_000n });
    expect(await get(s, id)).toMatchObject({
      status: 'APPROVED',
      amount: '400000',
      custodyMode: 'CUSTODIAL',
      toAddress: DEST,
      approvalReason: null,
      txHash: null,
    });

    await drainMoneyWork(app);
    const b = await get(s, id);
    expect(b).toMatchObject({ status: 'BROADCAST', fromAddress: s.depositAddress, broadcastAttempts: 1 });
    expect(b.txHash).toMatch(/^0x[0-9a-f]{64}$/);
    expect((await app.rest('POST', `/v1/withdrawals/${id}/cancel`, { headers: s.f.apiKeyHeaders })).status).toBe(409);
    expect((await sweep(s)).WAITING).toBe(1);
    await mine(s);
    expect((await sweep(s)).CONFIRMED).toBe(1);
    expect(await get(s, id)).toMatchObject({ status: 'CONFIRMED', txHash: b.txHash });
    expect(await balance(s)).toEqual({ posted: 600_000n, available: 600_000n });
    expect(await withdrawalEvents(s, id)).toEqual(['requested', 'approved', 'broadcast', 'confirmed']);
    const events = (await eventsOf(app, s.f.organizationId)).filter((e) => e.body.WithdrawalId === id);
    expect(events[0]!.body).toEqual({ WithdrawalId: id, AccountId: s.accountId, Amount: '400000', WithdrawalDestinationId: s.destinationId });
    expect(events[1]!.body).toEqual({ WithdrawalId: id, ActorMemberId: null });
    expect(events[2]!.body).toEqual({ WithdrawalId: id, TechnicalReference: b.txHash });
    expect(events[3]!.body).toEqual({ WithdrawalId: id, TechnicalReference: b.txHash });
    // Confirmed once: another sweep changes nothing.
    expect((await sweep(s)).CONFIRMED).toBe(0);
  });

  test('followed at each block: the chain.sync of the block that confirms it moves it to CONFIRMED, without waiting for the sweep', async () => {
    const s = await setup();
    const id = await withdraw(s, 250_000n);
    await drainMoneyWork(app);
    expect((await get(s, id)).status).toBe('BROADCAST');
    await mine(s); // the block sends chain.sync; drainMoneyWork runs it as the job runner does (no sweep)
    await drainMoneyWork(app);
    expect(await get(s, id)).toMatchObject({ status: 'CONFIRMED' });
    expect(await balance(s)).toEqual({ posted: 750_000n, available: 750_000n });
    expect(await withdrawalEvents(s, id)).toEqual(['requested', 'approved', 'broadcast', 'confirmed']);
    expect((await sweep(s)).CONFIRMED).toBe(0);
  });

  test('never spendable twice: a second request over the available balance is refused (409) and holds nothing; bad input 400', async () => {
    const s = await setup(500_000n);
    await withdraw(s, 500_000n);
    const r = await request(s, 1n);
    expect(r.status, r.text).toBe(409);
    expect(await balance(s)).toEqual({ posted: 500_000n, available: 0n });
    for (const [body, field] of [
      [{ amount: '0' }, 'amount'],
      [{ amount: '1.5' }, 'amount'],
      [{ assetNetworkId: 'x' }, 'assetNetworkId'],
      [{ walletId: s.f.walletId }, 'sourceIndex'],
    ] as const) {
      const bad = await request(s, 1n, body as Record<string, unknown>);
      expect([bad.status, bad.body.errors?.[0]?.field], JSON.stringify(body)).toEqual([400, field]);
    }
    await drainMoneyWork(app);
  });

  test('cancel until broadcast: the hold is released, withdrawal.cancelled; again 409', async () => {
    const s = await setup();
    await configure(s, 'withdrawal', { approvalThreshold: '100' });
    const id = await withdraw(s, 300_000n);
    expect((await get(s, id)).status).toBe('PENDING_APPROVAL');
    const c = await app.rest('POST', `/v1/withdrawals/${id}/cancel`, { headers: s.f.member.headers });
    expect([c.status, c.text]).toEqual([204, '']);
    expect(await get(s, id)).toMatchObject({ status: 'CANCELLED' });
    expect(await balance(s)).toEqual({ posted: 1_000_000n, available: 1_000_000n });
    expect((await app.rest('POST', `/v1/withdrawals/${id}/cancel`, { headers: s.f.apiKeyHeaders })).status).toBe(409);
    expect(await withdrawalEvents(s, id)).toEqual(['requested', 'cancelled']);
  });
});

describe('policies', () => {
  test('per-withdrawal and per-period limits refuse with 409 and hold nothing; versions; operators only; validation', async () => {
    const s = await setup();
    await configure(s, 'withdrawal', { perWithdrawalLimit: '300000', periodLimit: '500000', periodSeconds: 3600 });
    expect((await request(s, 300_001n)).status).toBe(409);
    await withdraw(s, 300_000n);
    const over = await request(s, 200_001n);
    expect([over.status, over.body.detail]).toEqual([409, expect.stringContaining('per 3600 s')]);
    await withdraw(s, 200_000n);
    expect(await balance(s)).toEqual({ posted: 1_000_000n, available: 500_000n });
    // The period passes: the limit applies again to what came after.
    app.clock.advance(3601_000);
    await withdraw(s, 100_000n);
    // A new version replaces the limits.
    await configure(s, 'withdrawal', {});
    await withdraw(s, 350_000n);
    const list = await app.gql<any>(
      'query($o: ID!) { withdrawalPolicies(organizationId: $o) { withdrawal { version perWithdrawalLimit periodLimit } payout { version } } }',
      { o: s.f.organizationId },
      op.headers,
    );
    expect(list.data!.withdrawalPolicies.withdrawal).toEqual([
      { version: 1, perWithdrawalLimit: '300000', periodLimit: '500000' },
      { version: 2, perWithdrawalLimit: null, periodLimit: null },
    ]);
    // Operators only; validation.
    expect((await app.rest('POST', `/v1/admin/organizations/${s.f.organizationId}/withdrawal-policy`, { headers: s.f.apiKeyHeaders, body: {} })).status).toBe(
      403,
    );
    const bad = await app.rest('POST', `/v1/admin/organizations/${s.f.organizationId}/withdrawal-policy`, { headers: op.headers, body: { periodLimit: '5' } });
    expect([bad.status, bad.body.errors?.[0]?.field]).toEqual([400, 'periodSeconds']);
    expect((await app.rest('POST', `/v1/admin/organizations/${crypto.randomUUID()}/payout-policy`, { headers: op.headers, body: {} })).status).toBe(404);
    await drainMoneyWork(app);
  });

  test(
    'approval threshold: waits for an operator; approve (operator id in the event) or reject (reason, hold ' + 'released); other principals refused',
    async () => {
      const s = await setup();
      await configure(s, 'withdrawal', { approvalThreshold: '100000' });
      const small = await withdraw(s, 100_000n);
      expect((await get(s, small)).status).toBe('APPROVED');
      const big = await withdraw(s, 200_000n);
      expect(await get(s, big)).toMatchObject({ status: 'PENDING_APPROVAL', approvalReason: expect.stringContaining('approval threshold') });
      for (const headers of [s.f.member.headers, s.f.apiKeyHeaders])
        expect((await app.rest('POST', `/v1/admin/withdrawals/${big}/approve`, { headers })).status).toBe(403);
      const a = await app.rest('POST', `/v1/admin/withdrawals/${big}/approve`, { headers: op.headers });
      expect([a.status, a.text]).toEqual([204, '']);
      expect(await get(s, big)).toMatchObject({ status: 'APPROVED', approvedByOperatorId: op.operatorId });
      expect((await app.rest('POST', `/v1/admin/withdrawals/${big}/approve`, { headers: op.headers })).status).toBe(409);
      const approvedEvent = (await eventsOf(app, s.f.organizationId)).find((e) => e.type === 'withdrawal.approved' && e.body.WithdrawalId === big);
      expect(approvedEvent!.body).toEqual({ WithdrawalId: big, ActorMemberId: op.operatorId });

      const third = await withdraw(s, 300_000n);
      expect(await balance(s)).toEqual({ posted: 1_000_000n, available: 400_000n });
      const noReason = await app.rest('POST', `/v1/admin/withdrawals/${third}/reject`, { headers: op.headers, body: { reason: ' ' } });
      expect(noReason.status).toBe(400);
      const r = await app.gql<any>(
        'mutation($id: ID!) { adminRejectWithdrawal(id: $id, input: { reason: "KYC review failed" }) { status rejectionReason } }',
        { id: third },
        op.headers,
      );
      expect(r.data!.adminRejectWithdrawal).toEqual({ status: 'REJECTED', rejectionReason: 'KYC review failed' });
      expect(await balance(s)).toEqual({ posted: 1_000_000n, available: 700_000n });
      expect(await withdrawalEvents(s, third)).toEqual(['requested', 'rejected']);
      const rejected = (await eventsOf(app, s.f.organizationId)).find((e) => e.type === 'withdrawal.rejected');
      expect(rejected!.body).toEqual({ WithdrawalId: third, Reason: 'KYC review failed' });
      expect((await app.rest('POST', `/v1/admin/withdrawals/${crypto.randomUUID()}/approve`, { headers: op.headers })).status).toBe(404);
      await drainMoneyWork(app);
      expect((await get(s, big)).status).toBe('BROADCAST');
    },
  );

  test('payout policy: destination age and new destinations', async () => {
    const s = await setup();
    await configure(s, 'payout', { minimumDestinationAgeSeconds: 600, requireApprovalForNewDestination: true });
    const young = await request(s, 1000n);
    expect([young.status, young.body.detail]).toEqual([409, expect.stringContaining('allows it from 600 s')]);
    app.clock.advance(601_000);
    const first = await withdraw(s, 1000n);
    expect(await get(s, first)).toMatchObject({ status: 'PENDING_APPROVAL', approvalReason: expect.stringContaining('never used') });
    expect((await app.rest('POST', `/v1/admin/withdrawals/${first}/approve`, { headers: op.headers })).status).toBe(204);
    await drainMoneyWork(app);
    await mine(s);
    await sweep(s);
    expect((await get(s, first)).status).toBe('CONFIRMED');
    const second = await withdraw(s, 1000n);
    expect((await get(s, second)).status).toBe('APPROVED');
    await configure(s, 'payout', { allowedNetworkIds: [s.f.catalog.networkId] });
    await withdraw(s, 1000n);
    await drainMoneyWork(app);
  });
});

describe('signing requests and visibility (issue 26)', () => {
  test("another organization's withdrawal, or an unknown one: 404 (not a 400 that tells it exists)", async () => {
    const s = await setup();
    const id = await withdraw(s, 1000n);
    const other = await signUpMember(app);
    const key = await createApiKey(app, other, 'SANDBOX');
    for (const withdrawalId of [id, crypto.randomUUID()]) {
      const byKey = await app.rest('POST', `/v1/environments/${key.environmentId}/signing-requests`, { headers: key.headers, body: { withdrawalId } });
      expect([byKey.status, byKey.body.code]).toEqual([404, 'NOT_FOUND']);
      const byMember = await app.rest('POST', `/v1/environments/${key.environmentId}/signing-requests`, { headers: other.headers, body: { withdrawalId } });
      expect([byMember.status, byMember.body.code]).toEqual([404, 'NOT_FOUND']);
    }
    await drainMoneyWork(app);
  });
});

describe('destination age on the sandbox clock (issue 26)', () => {
  test('after a sandbox clock advance, a destination registered a moment ago is a moment old: the minimum age holds', async () => {
    const s = await setup();
    const advanced = await app.rest('POST', '/v1/sandbox/clock/advance', { headers: s.f.apiKeyHeaders, body: { seconds: 3 * 3600 } });
    expect(advanced.status, advanced.text).toBe(200);
    await configure(s, 'payout', { minimumDestinationAgeSeconds: 600 });
    const d = await app.rest('POST', `/v1/organizations/${s.f.organizationId}/withdrawal-destinations`, {
      headers: s.f.apiKeyHeaders,
      body: { networkId: s.f.catalog.networkId, address: '0x00000000000000000000000000000000000000a9' },
    });
    expect(d.status, d.text).toBe(201);
    const young = await request(s, 1000n, { withdrawalDestinationId: idOf(d) });
    expect([young.status, young.body.detail]).toEqual([409, expect.stringMatching(/is 0 s old: .*allows it from 600 s/)]);
    // Aged on the same (sandbox) clock: advancing it ages the destination.
    expect((await app.rest('POST', '/v1/sandbox/clock/advance', { headers: s.f.apiKeyHeaders, body: { seconds: 600 } })).status).toBe(200);
    await withdraw(s, 1000n, { withdrawalDestinationId: idOf(d) });
    await drainMoneyWork(app);
  });
});

describe('destination blocked mid-flight', () => {
  test('the block rejects the withdrawals not broadcast yet (DESTINATION_BLOCKED), releasing their holds; new requests 409', async () => {
    const s = await setup();
    await configure(s, 'withdrawal', { approvalThreshold: '100' });
    const id = await withdraw(s, 250_000n);
    expect(await balance(s)).toEqual({ posted: 1_000_000n, available: 750_000n });
    const b = await app.rest('POST', `/v1/admin/withdrawal-destinations/${s.destinationId}/block`, { headers: op.headers, body: { reason: 'sanctions hit' } });
    expect(b.status, b.text).toBe(204);
    expect(await get(s, id)).toMatchObject({ status: 'REJECTED', rejectionReason: expect.stringMatching(/^DESTINATION_BLOCKED: .*sanctions hit/) });
    expect(await balance(s)).toEqual({ posted: 1_000_000n, available: 1_000_000n });
    expect(await withdrawalEvents(s, id)).toEqual(['requested', 'rejected']);
    expect((await request(s, 1n)).status).toBe(409);
  });
  test('the next step re-checks the destination: broadcast and approval of a withdrawal to a destination found BLOCKED reject it', async () => {
    const s = await setup();
    await configure(s, 'withdrawal', { approvalThreshold: '1000' });
    const approved = await withdraw(s, 500n);
    const waiting = await withdraw(s, 5000n);
    // A block the block operation did not reach (as a concurrent one would): the row changed directly.
    await app.deps.db.withdrawalDestination.update({
      where: { id: s.destinationId },
      data: { status: 'BLOCKED', blockedReason: 'late block', blockedAt: app.clock.now(), blockedByOperatorId: op.operatorId },
    });
    await drainMoneyWork(app);
    expect(await get(s, approved)).toMatchObject({ status: 'REJECTED', rejectionReason: expect.stringMatching(/^DESTINATION_BLOCKED/), txHash: null });
    const a = await app.rest('POST', `/v1/admin/withdrawals/${waiting}/approve`, { headers: op.headers });
    expect([a.status, a.body.detail]).toEqual([409, expect.stringContaining('DESTINATION_BLOCKED')]);
    expect((await get(s, waiting)).status).toBe('REJECTED');
    expect(await balance(s)).toEqual({ posted: 1_000_000n, available: 1_000_000n });
    expect(await withdrawalEvents(s, approved)).toEqual(['requested', 'approved', 'rejected']);
    expect(await withdrawalEvents(s, waiting)).toEqual(['requested', 'rejected']);
  });
});

describe('broadcast failures, revert, reconciliation', () => {
  test('refused broadcast -> BROADCAST_FAILED -> retried after the backoff -> broadcast and confirmed', async () => {
    const s = await setup();
    await setup(1_000_000n, s.f); // a second funded address; the account holds 2,000,000
    const id = await withdraw(s, 1_500_000n);
    await drainMoneyWork(app);
    const failed = await get(s, id);
    expect(failed).toMatchObject({ status: 'BROADCAST_FAILED', broadcastAttempts: 1, lastBroadcastError: expect.stringContaining('insufficient funds') });
    expect((await sweep(s)).BROADCAST).toBe(0); // not due yet
    await fundedTransaction(app, 2_000_000n, s.f); // an address that can pay it
    app.clock.advance(RETRY_BASE_MS);
    expect((await sweep(s)).BROADCAST).toBe(1);
    await mine(s);
    await sweep(s);
    expect(await get(s, id)).toMatchObject({ status: 'CONFIRMED', broadcastAttempts: 2 });
    expect(await withdrawalEvents(s, id)).toEqual(['requested', 'approved', 'broadcast_failed', 'broadcast', 'confirmed']);
  });

  test('retries exhausted -> FAILED, hold released', async () => {
    const s = await setup();
    await setup(1_000_000n, s.f);
    const id = await withdraw(s, 1_500_000n);
    await drainMoneyWork(app);
    app.clock.advance(RETRY_BASE_MS);
    await sweep(s);
    app.clock.advance(2 * RETRY_BASE_MS);
    expect((await sweep(s)).FAILED).toBe(1);
    expect(await get(s, id)).toMatchObject({ status: 'FAILED', broadcastAttempts: 3, failureReason: expect.stringContaining('BROADCAST_ATTEMPTS_EXHAUSTED') });
    expect(await balance(s)).toEqual({ posted: 2_000_000n, available: 2_000_000n });
    expect(await withdrawalEvents(s, id)).toEqual(['requested', 'approved', 'broadcast_failed', 'broadcast_failed', 'broadcast_failed', 'failed']);
  });

  test('reverted on the chain -> FAILED, hold released', async () => {
    const s = await setup();
    const id = await withdraw(s, 100_000n);
    await drainMoneyWork(app);
    const { txHash } = await get(s, id);
    // The sandbox's revert flag, set on the broadcast transaction before it is mined.
    await app.deps.db.sandboxTransaction.update({ where: { txHash }, data: { willRevert: true } });
    await mine(s);
    expect((await sweep(s)).FAILED).toBe(1);
    expect(await get(s, id)).toMatchObject({ status: 'FAILED', failureReason: expect.stringMatching(/^REVERTED/) });
    expect(await balance(s)).toEqual({ posted: 1_000_000n, available: 1_000_000n });
    expect(await withdrawalEvents(s, id)).toEqual(['requested', 'approved', 'broadcast', 'failed']);
  });

  test('dropped, or stuck past the deadline -> REQUIRES_RECONCILIATION; the hold stays', async () => {
    const s = await setup();
    const dropped = await withdraw(s, 100_000n);
    await drainMoneyWork(app);
    await sandboxDrop(app, s.f.apiKeyHeaders, (await get(s, dropped)).txHash);
    expect((await sweep(s)).REQUIRES_RECONCILIATION).toBe(1);
    expect(await get(s, dropped)).toMatchObject({ status: 'REQUIRES_RECONCILIATION', failureReason: expect.stringMatching(/^DROPPED/) });
    const stuck = await withdraw(s, 200_000n);
    await drainMoneyWork(app);
    expect((await sweep(s)).WAITING).toBe(1);
    app.clock.advance(STUCK_AFTER_MS);
    expect((await sweep(s)).REQUIRES_RECONCILIATION).toBe(1);
    expect(await balance(s)).toEqual({ posted: 1_000_000n, available: 700_000n });
    expect(await withdrawalEvents(s, stuck)).toEqual(['requested', 'approved', 'broadcast', 'requires_reconciliation']);
  });
});

describe('treasury payouts and the network resource reserve', () => {
  const sweptToHot = (s: Setup) => withdrawalTesting(() => app, DEST).sweptToHot(s, op.headers);
  const reserveBalance = async (s: Setup) => {
    const r = await app.rest('GET', `/v1/admin/network-resource-reserve/${s.f.catalog.assetNetworkId}/balance`, { headers: op.headers });
    expect(r.status, r.text).toBe(200);
    return r.body.balance as string;
  };
  const seed = async (s: Setup, amount: bigint) => {
    const r = await app.rest('POST', '/v1/admin/network-resource-reserve/seed', {
      headers: op.headers,
      body: { assetNetworkId: s.f.catalog.assetNetworkId, amount: amount.toString() },
    });
    expect(r.status, r.text).toBe(200);
  };

  test('paid from the HOT treasury address; the network cost comes from the reserve; a dry reserve queues the withdrawal until topped up', async () => {
    const s = await setup();
    const hot = await sweptToHot(s);
    await seed(s, 30_000n);
    const first = await withdraw(s, 400_000n);
    await drainMoneyWork(app);
    expect(await get(s, first)).toMatchObject({ status: 'BROADCAST', fromAddress: hot.address, broadcastAttempts: 1 });
    // The sandbox network cost: 21,000 (the adapter's estimate; no cost table configured).
    expect(await reserveBalance(s)).toBe('9000');

    // 9,000 left: the next withdrawal waits, APPROVED, without an attempt or a webhook.
    const second = await withdraw(s, 100_000n);
    await drainMoneyWork(app);
    expect(await get(s, second)).toMatchObject({
      status: 'APPROVED',
      broadcastAttempts: 0,
      txHash: null,
      lastBroadcastError: expect.stringMatching(/^RESERVE_EXHAUSTED/),
    });
    expect(await withdrawalEvents(s, second)).toEqual(['requested', 'approved']);
    expect((await sweep(s)).DEFERRED).toBe(0); // not due yet
    app.clock.advance(RESERVE_RETRY_MS);
    expect((await sweep(s)).DEFERRED).toBe(1);
    const deferrals = await app.rest('GET', `/v1/admin/audit-log?entityId=${second}&actionType=withdrawal.broadcast_deferred`, { headers: op.headers });
    expect(deferrals.status, deferrals.text).toBe(200);
    expect(deferrals.body.total).toBe(1); // audited when it starts waiting, not at every retry

    // Topped up: the sweep broadcasts it; both confirm; the ledger moved once each.
    await seed(s, 50_000n);
    app.clock.advance(RESERVE_RETRY_MS);
    expect((await sweep(s)).BROADCAST).toBe(1);
    expect(await get(s, second)).toMatchObject({
      status: 'BROADCAST',
      fromAddress: hot.address,
      broadcastAttempts: 1,
      nextAttemptAt: null,
      lastBroadcastError: null,
    });
    expect(await reserveBalance(s)).toBe('38000');
    await mine(s);
    expect((await sweep(s)).CONFIRMED).toBe(2);
    expect(await balance(s)).toEqual({ posted: 500_000n, available: 500_000n });
    expect(await withdrawalEvents(s, second)).toEqual(['requested', 'approved', 'broadcast', 'confirmed']);
    const sent = await app.deps.db.sandboxTransaction.findMany({ where: { fromAddress: hot.address }, select: { amount: true, status: true } });
    expect(sent.map((t) => [t.amount.toString(), t.status]).sort()).toEqual([
      ['100000', 'MINED'],
      ['400000', 'MINED'],
    ]);
    // One consumption per attempt, named by the withdrawal and the attempt.
    const movements = await app.deps.db.networkResourceReserveMovement.findMany({
      where: { referenceType: 'Withdrawal', referenceId: { in: [`${first}:1`, `${second}:1`] } },
    });
    expect(movements.map((m) => [m.kind, m.amount.toString()])).toEqual([
      ['CONSUME', '21000'],
      ['CONSUME', '21000'],
    ]);
  });

  test('a refused broadcast gives its reserve consumption back; the next attempt consumes again', async () => {
    const s = await setup();
    await setup(1_000_000n, s.f);
    await seed(s, 100_000n);
    const id = await withdraw(s, 1_500_000n); // no single address holds it
    await drainMoneyWork(app);
    expect(await get(s, id)).toMatchObject({
      status: 'BROADCAST_FAILED',
      broadcastAttempts: 1,
      lastBroadcastError: expect.stringContaining('no HOT treasury address'),
    });
    expect(await reserveBalance(s)).toBe('100000');
    const kinds = await app.deps.db.networkResourceReserveMovement.findMany({
      where: { referenceId: `${id}:1` },
      orderBy: { createdAt: 'asc' },
      select: { kind: true },
    });
    expect(kinds.map((k) => k.kind).sort()).toEqual(['CONSUME', 'RELEASE']);
    await withdraw(s, 100_000n); // one an address can pay consumes as usual
    await drainMoneyWork(app);
    expect(await reserveBalance(s)).toBe('79000');
    app.clock.advance(RETRY_BASE_MS);
    expect((await sweep(s)).BROADCAST_FAILED).toBe(1);
    expect(await reserveBalance(s)).toBe('79000');
    expect(await app.deps.db.networkResourceReserveMovement.count({ where: { referenceId: `${id}:2` } })).toBe(2);
    await app.rest('POST', `/v1/withdrawals/${id}/cancel`, { headers: s.f.apiKeyHeaders });
    await mine(s);
    await sweep(s);
  });
});

describe('SelfCustody signing', () => {
  test('signing request: exact payload; a wrong signature is refused and nothing broadcast; the right one broadcasts; confirmed', async () => {
    const s = await setup();
    const root = generateKeyPair();
    const w = await app.rest('POST', `/v1/applications/${s.f.applicationId}/wallets`, {
      headers: s.f.apiKeyHeaders,
      body: { networkId: s.f.catalog.networkId, custodyMode: 'SELF_CUSTODY', publicKey: root.publicKey },
    });
    expect(w.status, w.text).toBe(201);
    const walletId = idOf(w);
    const from = addressOf(derivePublicKey(root.publicKey, 7));
    await sandboxSend(app, s.f.apiKeyHeaders, { address: from, amount: 5_000_000n, assetNetworkId: s.f.catalog.assetNetworkId });
    await mine(s);
    await drainMoneyWork(app);
    const id = await withdraw(s, 300_000n, { walletId, sourceIndex: 7 });
    expect(await get(s, id)).toMatchObject({ status: 'AWAITING_SIGNATURE', custodyMode: 'SELF_CUSTODY', fromAddress: from });
    await drainMoneyWork(app); // no broadcast job for SELF_CUSTODY
    expect((await get(s, id)).status).toBe('AWAITING_SIGNATURE');

    const c = await app.rest('POST', `/v1/environments/${s.f.environmentId}/signing-requests`, { headers: s.f.apiKeyHeaders, body: { withdrawalId: id } });
    expect([c.status, c.text], c.text).toEqual([201, '']);
    expect(c.headers.get('location')).toMatch(/^\/v1\/signing-requests\/[0-9a-f-]{36}$/);
    const srId = idOf(c);
    const again = await app.rest('POST', `/v1/environments/${s.f.environmentId}/signing-requests`, { headers: s.f.apiKeyHeaders, body: { withdrawalId: id } });
    expect(idOf(again)).toBe(srId);
    const sr = (await app.rest('GET', `/v1/signing-requests/${srId}`, { headers: s.f.apiKeyHeaders })).body;
    expect(sr).toMatchObject({
      status: 'PENDING',
      withdrawalId: id,
      payload: {
        networkId: s.f.catalog.networkId,
        assetNetworkId: s.f.catalog.assetNetworkId,
        fromAddress: from,
        toAddress: DEST,
        amount: '300000',
        nonce: id,
      },
    });
    expect(sr.digest).toBe(createHash('sha256').update(sr.canonicalPayload).digest('hex'));
    expect(JSON.parse(sr.canonicalPayload)).toEqual(sr.payload);

    const bytes = new TextEncoder().encode(sr.canonicalPayload);
    const wrong = bytesToHex(secp256k1.sign(bytes, generateKeyPair().privateKey));
    const refused = await app.rest('POST', `/v1/signing-requests/${srId}/signature`, { headers: s.f.apiKeyHeaders, body: { signature: wrong } });
    expect([refused.status, refused.body.errors?.[0]?.field]).toEqual([400, 'signature']);
    expect(await app.deps.db.sandboxTransaction.count({ where: { fromAddress: from } })).toBe(0);
    expect((await get(s, id)).status).toBe('AWAITING_SIGNATURE');
    expect((await app.rest('GET', `/v1/signing-requests/${srId}`, { headers: s.f.apiKeyHeaders })).body.status).toBe('PENDING');

    const right = bytesToHex(secp256k1.sign(bytes, derivePrivateKey(root.privateKey, 7)));
    const ok = await app.rest('POST', `/v1/signing-requests/${srId}/signature`, { headers: s.f.apiKeyHeaders, body: { signature: right } });
    expect([ok.status, ok.text], ok.text).toEqual([204, '']);
    const b = await get(s, id);
    expect(b).toMatchObject({ status: 'BROADCAST', fromAddress: from });
    expect((await app.rest('GET', `/v1/signing-requests/${srId}`, { headers: s.f.apiKeyHeaders })).body).toMatchObject({ status: 'SIGNED', signature: right });
    expect((await app.rest('POST', `/v1/signing-requests/${srId}/signature`, { headers: s.f.apiKeyHeaders, body: { signature: right } })).status).toBe(409);
    await mine(s);
    await sweep(s);
    expect((await get(s, id)).status).toBe('CONFIRMED');
    expect(await withdrawalEvents(s, id)).toEqual(['requested', 'approved', 'broadcast', 'confirmed']);
    expect((await eventsOf(app, s.f.organizationId)).some((e) => e.type.startsWith('signing'))).toBe(false);

    // A custodial withdrawal has no signing request.
    const custodial = await withdraw(s, 1000n);
    expect(
      (await app.rest('POST', `/v1/environments/${s.f.environmentId}/signing-requests`, { headers: s.f.apiKeyHeaders, body: { withdrawalId: custodial } }))
        .status,
    ).toBe(409);
    await drainMoneyWork(app);
  });
});

describe('tenant isolation and GraphQL', () => {
  test("another organization's withdrawal, account or signing request answers 404; GraphQL request and read", async () => {
    const s = await setup();
    const g = await app.gql<any>(
      'mutation($a: ID!, $i: RequestWithdrawalInput!) { requestWithdrawal(accountId: $a, input: $i) { id status amount } }',
      { a: s.accountId, i: { amount: '1234', assetNetworkId: s.f.catalog.assetNetworkId, withdrawalDestinationId: s.destinationId } },
      s.f.member.headers,
    );
    expect(g.errors).toBeUndefined();
    const id = g.data!.requestWithdrawal.id;
    expect(g.data!.requestWithdrawal).toMatchObject({ status: 'APPROVED', amount: '1234' });
    const other = await signUpMember(app);
    expect((await app.rest('GET', `/v1/withdrawals/${id}`, { headers: other.headers })).status).toBe(404);
    expect((await app.rest('POST', `/v1/withdrawals/${id}/cancel`, { headers: other.headers })).status).toBe(404);
    expect((await request(s, 1n, {}, other.headers)).status).toBe(404);
    const q = await app.gql<any>('query($id: ID!) { withdrawal(id: $id) { id } }', { id }, other.headers);
    expect(q.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    // Another organization's destination: 404.
    const o = await setup();
    expect((await request(s, 1n, { withdrawalDestinationId: o.destinationId })).status).toBe(404);
    await drainMoneyWork(app);
  });
});
