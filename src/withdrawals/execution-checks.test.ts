import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { createOperator, createTestApp, type TestApp } from '../../test/harness';
import { checkLedgerInvariants } from '../../test/ledger-invariants';
import { sandboxSend } from '../../test/money-helpers';
import { drainMoneyWork, fundedTransaction } from '../../test/fixtures/settlements/testing';
import { addressOf, bytesToHex, derivePrivateKey, derivePublicKey, generateKeyPair, hexToBytes } from '../chains/secp256k1';
import { RESERVE_RETRY_MS, RETRY_BASE_MS, sweepWithdrawals } from './withdrawals';
import { withdrawalTesting, type WithdrawalSetup } from '../../test/fixtures/withdrawals/testing';

/**
 * Issue 25: the rules a withdrawal is checked against at request are checked again at every step
 * that moves it on (approval, broadcast job, retry by the sweep, SelfCustody signature, and the
 * confirmation): the account (FROZEN: the withdrawal waits, the hold in place; CLOSED: rejected),
 * the asset-network (not ENABLED: waits). SelfCustody signatures: every bad one is a 4xx and
 * nothing is broadcast. Every test ends with the ledger invariants.
 */
let app: TestApp;
let op: { operatorId: string; headers: Record<string, string> };
beforeAll(async () => {
  app = await createTestApp();
  op = await createOperator(app);
});
afterAll(() => app.close());
afterEach(() => checkLedgerInvariants(app.deps.db));

const DEST = '0x00000000000000000000000000000000000000e5';
const { idOf, setup, sweep, balance, get, withdrawalEvents, mine } = withdrawalTesting(() => app, DEST);
type Setup = WithdrawalSetup;

async function withdraw(s: Setup, amount: bigint, extra: Record<string, unknown> = {}): Promise<string> {
  const r = await app.rest('POST', `/v1/accounts/${s.accountId}/withdrawals`, {
    headers: s.f.apiKeyHeaders,
    body: { amount: amount.toString(), assetNetworkId: s.f.catalog.assetNetworkId, withdrawalDestinationId: s.destinationId, ...extra },
  });
  expect(r.status, r.text).toBe(201);
  return idOf(r);
}
const threshold = async (s: Setup, approvalThreshold: string) => {
  const r = await app.rest('POST', `/v1/admin/organizations/${s.f.organizationId}/withdrawal-policy`, { headers: op.headers, body: { approvalThreshold } });
  expect(r.status, r.text).toBe(204);
};
const freeze = async (s: Setup) => {
  const r = await app.rest('POST', `/v1/accounts/${s.accountId}/freeze`, { headers: s.f.member.headers, body: { reason: 'fraud investigation' } });
  expect(r.status, r.text).toBe(204);
};
const unfreeze = async (s: Setup) => {
  const r = await app.rest('POST', `/v1/accounts/${s.accountId}/unfreeze`, { headers: s.f.member.headers });
  expect(r.status, r.text).toBe(204);
};
const assetNetwork = async (s: Setup, move: 'pause' | 'disable' | 'enable') => {
  const r = await app.rest('POST', `/v1/platform/asset-networks/${s.f.catalog.assetNetworkId}/${move}`, {
    headers: op.headers,
    ...(move === 'pause' ? { body: { reason: 'chain incident' } } : {}),
  });
  expect(r.status, r.text).toBe(204);
};
const approve = (id: string) => app.rest('POST', `/v1/admin/withdrawals/${id}/approve`, { headers: op.headers });
/** Transfers the chain holds to the destination (nothing broadcast = none). */
const sentToDestination = () => app.deps.db.sandboxTransaction.count({ where: { toAddress: DEST } });

describe('a frozen account pays nothing out', () => {
  test('approval of a withdrawal of a FROZEN account: 409, it stays PENDING_APPROVAL with its hold; approved once unfrozen', async () => {
    const s = await setup();
    const sent = await sentToDestination();
    await threshold(s, '100');
    const id = await withdraw(s, 300_000n);
    await freeze(s);
    const a = await approve(id);
    expect([a.status, a.body.detail]).toEqual([409, expect.stringMatching(/ACCOUNT_FROZEN/)]);
    expect(await get(s, id)).toMatchObject({ status: 'PENDING_APPROVAL', approvedAt: null });
    expect(await balance(s)).toEqual({ posted: 1_000_000n, available: 700_000n });
    await drainMoneyWork(app);
    expect(await sentToDestination()).toBe(sent);

    await unfreeze(s);
    expect((await approve(id)).status).toBe(204);
    await drainMoneyWork(app);
    expect((await get(s, id)).status).toBe('BROADCAST');
    await mine(s);
    await sweep(s);
    expect((await get(s, id)).status).toBe('CONFIRMED');
    expect(await withdrawalEvents(s, id)).toEqual(['requested', 'approved', 'broadcast', 'confirmed']);
  });

  test('the broadcast job finding the account FROZEN defers (APPROVED, ACCOUNT_FROZEN, nothing broadcast); the sweep sends it once unfrozen', async () => {
    const s = await setup();
    const sent = await sentToDestination();
    const id = await withdraw(s, 300_000n);
    await freeze(s);
    await drainMoneyWork(app);
    expect(await get(s, id)).toMatchObject({
      status: 'APPROVED',
      broadcastAttempts: 0,
      txHash: null,
      lastBroadcastError: expect.stringMatching(/^ACCOUNT_FROZEN/),
    });
    expect(await sentToDestination()).toBe(sent);
    app.clock.advance(RESERVE_RETRY_MS);
    expect((await sweep(s)).DEFERRED).toBe(1); // still frozen: waits again
    expect(await sentToDestination()).toBe(sent);
    expect(await balance(s)).toEqual({ posted: 1_000_000n, available: 700_000n });

    await unfreeze(s);
    app.clock.advance(RESERVE_RETRY_MS);
    expect((await sweep(s)).BROADCAST).toBe(1);
    expect(await get(s, id)).toMatchObject({ status: 'BROADCAST', broadcastAttempts: 1, lastBroadcastError: null });
    await mine(s);
    await sweep(s);
    expect(await balance(s)).toEqual({ posted: 700_000n, available: 700_000n });
    expect(await withdrawalEvents(s, id)).toEqual(['requested', 'approved', 'broadcast', 'confirmed']);
  });

  test('a retry (BROADCAST_FAILED) finding the account FROZEN waits without counting an attempt', async () => {
    const s = await setup();
    const sent = await sentToDestination();
    await setup(1_000_000n, s.f); // a second funded address: the account holds 2,000,000, no address 1,500,000
    const id = await withdraw(s, 1_500_000n);
    await drainMoneyWork(app);
    expect(await get(s, id)).toMatchObject({ status: 'BROADCAST_FAILED', broadcastAttempts: 1 });
    await fundedTransaction(app, 2_000_000n, s.f); // now an address could pay it
    await freeze(s);
    app.clock.advance(RETRY_BASE_MS);
    expect((await sweep(s)).DEFERRED).toBe(1);
    expect(await get(s, id)).toMatchObject({
      status: 'BROADCAST_FAILED',
      broadcastAttempts: 1,
      txHash: null,
      lastBroadcastError: expect.stringMatching(/^ACCOUNT_FROZEN/),
    });
    expect(await sentToDestination()).toBe(sent);
    await unfreeze(s);
    app.clock.advance(RESERVE_RETRY_MS);
    expect((await sweep(s)).BROADCAST).toBe(1);
    expect(await get(s, id)).toMatchObject({ status: 'BROADCAST', broadcastAttempts: 2 });
    await mine(s);
    await sweep(s);
  });

  test('frozen after the broadcast: the coins left already; the confirmation waits for the unfreeze and the sweep keeps working', async () => {
    const s = await setup();
    const id = await withdraw(s, 300_000n);
    const other = await setup();
    const otherId = await withdraw(other, 100_000n);
    await drainMoneyWork(app);
    await freeze(s);
    await mine(s);
    await mine(other);
    const { deps } = app;
    const counts = await sweepWithdrawals({ db: deps.db, clock: deps.clock, boss: deps.boss, sealingKey: deps.sealingKey });
    expect(counts.CONFIRMED).toBeGreaterThanOrEqual(1);
    expect((await get(other, otherId)).status).toBe('CONFIRMED');
    expect(await get(s, id)).toMatchObject({ status: 'BROADCAST' });
    expect(await balance(s)).toEqual({ posted: 1_000_000n, available: 700_000n });
    await unfreeze(s);
    expect((await sweep(s)).CONFIRMED).toBe(1);
    expect(await balance(s)).toEqual({ posted: 700_000n, available: 700_000n });
  });

  test('a CLOSED account (a close the close check did not reach): the broadcast rejects the withdrawal, hold voided, nothing broadcast', async () => {
    const s = await setup();
    const sent = await sentToDestination();
    const id = await withdraw(s, 300_000n);
    await app.deps.db.account.update({ where: { id: s.accountId }, data: { status: 'CLOSED', closedAt: app.clock.now() } });
    await drainMoneyWork(app);
    expect(await get(s, id)).toMatchObject({ status: 'REJECTED', rejectionReason: expect.stringMatching(/^ACCOUNT_CLOSED/), txHash: null });
    expect(await sentToDestination()).toBe(sent);
    expect(await balance(s)).toEqual({ posted: 1_000_000n, available: 1_000_000n });
    expect(await withdrawalEvents(s, id)).toEqual(['requested', 'approved', 'rejected']);
  });
});

describe('asset-network status', () => {
  test('a new withdrawal on a PAUSED or DISABLED asset-network is refused (409), nothing held', async () => {
    const s = await setup();
    for (const move of ['pause', 'disable'] as const) {
      await assetNetwork(s, move);
      const r = await app.rest('POST', `/v1/accounts/${s.accountId}/withdrawals`, {
        headers: s.f.apiKeyHeaders,
        body: { amount: '1000', assetNetworkId: s.f.catalog.assetNetworkId, withdrawalDestinationId: s.destinationId },
      });
      expect([r.status, r.body.detail]).toEqual([409, expect.stringMatching(move === 'pause' ? /PAUSED/ : /DISABLED/)]);
      expect(await balance(s)).toEqual({ posted: 1_000_000n, available: 1_000_000n });
    }
    await assetNetwork(s, 'enable');
  });

  test('approval and broadcast wait while the asset-network is PAUSED or DISABLED; sent once it is ENABLED again', async () => {
    const s = await setup();
    const sent = await sentToDestination();
    await threshold(s, '100000');
    const waiting = await withdraw(s, 200_000n);
    const approved = await withdraw(s, 50_000n);
    await assetNetwork(s, 'pause');
    const a = await approve(waiting);
    expect([a.status, a.body.detail]).toEqual([409, expect.stringMatching(/ASSET_NETWORK_PAUSED/)]);
    expect((await get(s, waiting)).status).toBe('PENDING_APPROVAL');
    await drainMoneyWork(app);
    expect(await get(s, approved)).toMatchObject({ status: 'APPROVED', txHash: null, lastBroadcastError: expect.stringMatching(/^ASSET_NETWORK_PAUSED/) });
    await assetNetwork(s, 'disable');
    app.clock.advance(RESERVE_RETRY_MS);
    expect((await sweep(s)).DEFERRED).toBe(1);
    expect(await get(s, approved)).toMatchObject({ status: 'APPROVED', lastBroadcastError: expect.stringMatching(/^ASSET_NETWORK_DISABLED/) });
    expect(await sentToDestination()).toBe(sent);
    expect(await balance(s)).toEqual({ posted: 1_000_000n, available: 750_000n });

    await assetNetwork(s, 'enable');
    expect((await approve(waiting)).status).toBe(204);
    app.clock.advance(RESERVE_RETRY_MS);
    await drainMoneyWork(app);
    await sweep(s);
    expect((await get(s, approved)).status).toBe('BROADCAST');
    expect((await get(s, waiting)).status).toBe('BROADCAST');
    await mine(s);
    expect((await sweep(s)).CONFIRMED).toBe(2);
  });
});

// ------------------------------------------------------------------------------------------------
// SelfCustody

/** A SELF_CUSTODY wallet, its address at index 7 funded on the chain, and a withdrawal from it waiting for a signature. */
async function selfCustody(s: Setup, amount = 300_000n) {
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
  const request = async (amt = amount) => {
    const id = await withdraw(s, amt, { walletId, sourceIndex: 7 });
    const c = await app.rest('POST', `/v1/environments/${s.f.environmentId}/signing-requests`, { headers: s.f.apiKeyHeaders, body: { withdrawalId: id } });
    expect(c.status, c.text).toBe(201);
    const srId = idOf(c);
    const sr = (await app.rest('GET', `/v1/signing-requests/${srId}`, { headers: s.f.apiKeyHeaders })).body as { canonicalPayload: string };
    return { id, srId, canonical: sr.canonicalPayload, bytes: new TextEncoder().encode(sr.canonicalPayload) };
  };
  const key = derivePrivateKey(root.privateKey, 7);
  const sign = (bytes: Uint8Array, k: Uint8Array = key) => bytesToHex(secp256k1.sign(bytes, k));
  const submit = (srId: string, signature: string) =>
    app.rest('POST', `/v1/signing-requests/${srId}/signature`, { headers: s.f.apiKeyHeaders, body: { signature } });
  const broadcastFrom = () => app.deps.db.sandboxTransaction.count({ where: { fromAddress: from } });
  return { request, sign, submit, broadcastFrom, key };
}

describe('SelfCustody', () => {
  test('a signature submitted after a freeze is refused (409), nothing broadcast, the request stays PENDING; accepted once unfrozen', async () => {
    const s = await setup();
    const sc = await selfCustody(s);
    const r = await sc.request();
    await freeze(s);
    const refused = await sc.submit(r.srId, sc.sign(r.bytes));
    expect([refused.status, refused.body.detail]).toEqual([409, expect.stringMatching(/ACCOUNT_FROZEN/)]);
    expect(await sc.broadcastFrom()).toBe(0);
    expect((await get(s, r.id)).status).toBe('AWAITING_SIGNATURE');
    expect((await app.rest('GET', `/v1/signing-requests/${r.srId}`, { headers: s.f.apiKeyHeaders })).body.status).toBe('PENDING');
    await unfreeze(s);
    expect((await sc.submit(r.srId, sc.sign(r.bytes))).status).toBe(204);
    expect((await get(s, r.id)).status).toBe('BROADCAST');
    await mine(s);
    await sweep(s);
    expect((await get(s, r.id)).status).toBe('CONFIRMED');
  });

  test('a signature while the asset-network is PAUSED: 409, nothing broadcast', async () => {
    const s = await setup();
    const sc = await selfCustody(s);
    const r = await sc.request();
    await assetNetwork(s, 'pause');
    const refused = await sc.submit(r.srId, sc.sign(r.bytes));
    expect([refused.status, refused.body.detail]).toEqual([409, expect.stringMatching(/ASSET_NETWORK_PAUSED/)]);
    expect(await sc.broadcastFrom()).toBe(0);
    await assetNetwork(s, 'enable');
    expect((await sc.submit(r.srId, sc.sign(r.bytes))).status).toBe(204);
    await mine(s);
    await sweep(s);
  });

  test('refused with a 400 and nothing broadcast: another payload, a replayed signature, another key, a high-S signature; then the right one', async () => {
    const s = await setup();
    const sc = await selfCustody(s);
    // A first withdrawal, signed and broadcast: its signature is the one replayed below.
    const first = await sc.request(300_000n);
    const firstSignature = sc.sign(first.bytes);
    expect((await sc.submit(first.srId, firstSignature)).status).toBe(204);
    const r = await sc.request(300_000n); // the same figures: only the nonce (the withdrawal id) differs
    const before = await sc.broadcastFrom();
    const N = secp256k1.Point.Fn.ORDER;
    const right = sc.sign(r.bytes);
    const highS = right.slice(0, 64) + (N - BigInt('0x' + right.slice(64))).toString(16).padStart(64, '0');
    expect(secp256k1.verify(hexToBytes(highS), r.bytes, secp256k1.getPublicKey(sc.key), { lowS: false })).toBe(true); // a valid signature, but high-S
    const otherPayload = new TextEncoder().encode(JSON.stringify({ ...JSON.parse(r.canonical), amount: '4000000' }));
    const cases: [string, string][] = [
      ['another payload (amount changed)', sc.sign(otherPayload)],
      ['the signature of another withdrawal (replayed)', firstSignature],
      ['another key', sc.sign(r.bytes, generateKeyPair().privateKey)],
      ['high-S', highS],
    ];
    for (const [what, signature] of cases) {
      const res = await sc.submit(r.srId, signature);
      expect([res.status, res.body.errors?.[0]?.field, res.body.detail], what).toEqual([400, 'signature', expect.stringContaining('does not verify')]);
      expect(await sc.broadcastFrom(), what).toBe(before);
      expect((await get(s, r.id)).status, what).toBe('AWAITING_SIGNATURE');
    }
    // The accepted signature replayed on its own request: 409, nothing more broadcast.
    const replay = await sc.submit(first.srId, firstSignature);
    expect(replay.status).toBe(409);
    expect(await sc.broadcastFrom()).toBe(before);
    expect((await sc.submit(r.srId, right)).status).toBe(204);
    expect(await sc.broadcastFrom()).toBe(before + 1);
    await mine(s);
    await sweep(s);
    expect((await get(s, r.id)).status).toBe('CONFIRMED');
    expect((await get(s, first.id)).status).toBe('CONFIRMED');
  });
});
