import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { createOperator, createTestApp, type TestApp } from '../../test/harness';
import { checkLedgerInvariants } from '../../test/ledger-invariants';
import { sandboxSend } from '../../test/money-helpers';
import { drainMoneyWork } from '../../test/fixtures/settlements/testing';
import { addressOf, bytesToHex, derivePrivateKey, derivePublicKey, generateKeyPair } from '../chains/secp256k1';
import { broadcastWithdrawal } from './withdrawals';
import { withdrawalTesting, type WithdrawalSetup } from '../../test/fixtures/withdrawals/testing';

/**
 * Issue 26, point 2: blocking a destination races approval, signature submission and the broadcast
 * job. One lock order everywhere (destination, then withdrawal, then ledger) and a retry of a
 * deadlocked or serialization-failed transaction: never a 500, the block always succeeds, and once it
 * answered 204 nothing more is paid to the destination (whatever raced it either went out before the
 * block committed, or is REJECTED with nothing sent).
 *
 * Issue 22: requests are written in groups (src/withdrawals/requests.ts) in the same order: the
 * group's destinations share-locked (id order), then the idempotency and period advisory locks, then
 * the ledger (the accounts' locks, the balance rows in id order). A block racing a group of requests
 * to its destination: the requests written before the block committed are REJECTED by it, the others
 * answer 409; never a 500, nothing paid.
 */
let app: TestApp;
let op: { headers: Record<string, string> };
beforeAll(async () => {
  app = await createTestApp();
  op = await createOperator(app);
});
afterAll(() => app.close());
afterEach(() => checkLedgerInvariants(app.deps.db));

const ROUNDS = 20;
const { idOf, setup, get } = withdrawalTesting(() => app, '0x00000000000000000000000000000000000000f1');

let seq = 0;
async function destination(s: WithdrawalSetup): Promise<{ id: string; address: string }> {
  const address = '0x' + (++seq).toString(16).padStart(40, 'd');
  const r = await app.rest('POST', `/v1/organizations/${s.f.organizationId}/withdrawal-destinations`, {
    headers: s.f.apiKeyHeaders,
    body: { networkId: s.f.catalog.networkId, address },
  });
  expect(r.status, r.text).toBe(201);
  return { id: idOf(r), address };
}
async function withdraw(s: WithdrawalSetup, destinationId: string, extra: Record<string, unknown> = {}): Promise<string> {
  const r = await app.rest('POST', `/v1/accounts/${s.accountId}/withdrawals`, {
    headers: s.f.apiKeyHeaders,
    body: { amount: '1000', assetNetworkId: s.f.catalog.assetNetworkId, withdrawalDestinationId: destinationId, ...extra },
  });
  expect(r.status, r.text).toBe(201);
  return idOf(r);
}
const block = (destinationId: string) =>
  app.rest('POST', `/v1/admin/withdrawal-destinations/${destinationId}/block`, { headers: op.headers, body: { reason: 'sanctions list' } });
const paidTo = (address: string) => app.deps.db.sandboxTransaction.count({ where: { toAddress: address } });
const destinationStatus = async (id: string) => (await app.deps.db.withdrawalDestination.findUniqueOrThrow({ where: { id } })).status;
const deps = () => ({ db: app.deps.db, clock: app.deps.clock, boss: app.deps.boss, sealingKey: app.deps.sealingKey });

/** After the race: the block held, and a payout exists only if the racer reported it went out first. */
async function afterRace(s: WithdrawalSetup, d: { id: string; address: string }, withdrawalId: string, racerPaid: boolean) {
  expect(await destinationStatus(d.id)).toBe('BLOCKED');
  // Whatever is left queued runs now, after the block: nothing more goes out.
  await drainMoneyWork(app);
  expect(await broadcastWithdrawal(deps(), withdrawalId)).toBe('SKIPPED');
  const w = await get(s, withdrawalId);
  if (racerPaid) {
    expect(w.status).toBe('BROADCAST');
    expect(await paidTo(d.address)).toBe(1);
  } else {
    expect(w).toMatchObject({ status: 'REJECTED', txHash: null, rejectionReason: expect.stringMatching(/DESTINATION_BLOCKED/) });
    expect(await paidTo(d.address)).toBe(0);
  }
}

describe('blocking a destination races the steps that pay it', () => {
  test(`block vs approve, ${ROUNDS} rounds: never a 500, the block always holds, nothing is paid`, async () => {
    const s = await setup(100_000_000n);
    const p = await app.rest('POST', `/v1/admin/organizations/${s.f.organizationId}/withdrawal-policy`, {
      headers: op.headers,
      body: { approvalThreshold: '100' },
    });
    expect(p.status, p.text).toBe(204);
    for (let round = 0; round < ROUNDS; round++) {
      const d = await destination(s);
      const id = await withdraw(s, d.id);
      expect((await get(s, id)).status).toBe('PENDING_APPROVAL');
      const [a, b] = await Promise.all([app.rest('POST', `/v1/admin/withdrawals/${id}/approve`, { headers: op.headers }), block(d.id)]);
      expect(b.status, `round ${round}: block ${b.text}`).toBe(204);
      expect([204, 409], `round ${round}: approve ${a.text}`).toContain(a.status);
      // Approved first or not, the block rejected it before any broadcast job could run.
      await afterRace(s, d, id, false);
    }
  });

  test(`block vs signature submission, ${ROUNDS} rounds: never a 500; paid only when the signature went first`, async () => {
    const s = await setup(1_000_000n);
    const root = generateKeyPair();
    const wallet = await app.rest('POST', `/v1/applications/${s.f.applicationId}/wallets`, {
      headers: s.f.apiKeyHeaders,
      body: { networkId: s.f.catalog.networkId, custodyMode: 'SELF_CUSTODY', publicKey: root.publicKey },
    });
    expect(wallet.status, wallet.text).toBe(201);
    const from = addressOf(derivePublicKey(root.publicKey, 3));
    await sandboxSend(app, s.f.apiKeyHeaders, { address: from, amount: 10_000_000n, assetNetworkId: s.f.catalog.assetNetworkId });
    await app.rest('POST', `/v1/sandbox/networks/${s.f.catalog.networkId}/mine`, { headers: s.f.apiKeyHeaders, body: { blocks: 1 } });
    await drainMoneyWork(app);
    const key = derivePrivateKey(root.privateKey, 3);
    for (let round = 0; round < ROUNDS; round++) {
      const d = await destination(s);
      const id = await withdraw(s, d.id, { walletId: idOf(wallet), sourceIndex: 3 });
      const c = await app.rest('POST', `/v1/environments/${s.f.environmentId}/signing-requests`, { headers: s.f.apiKeyHeaders, body: { withdrawalId: id } });
      expect(c.status, c.text).toBe(201);
      const sr = (await app.rest('GET', `/v1/signing-requests/${idOf(c)}`, { headers: s.f.apiKeyHeaders })).body as { canonicalPayload: string };
      const signature = bytesToHex(secp256k1.sign(new TextEncoder().encode(sr.canonicalPayload), key));
      const [sig, b] = await Promise.all([
        app.rest('POST', `/v1/signing-requests/${idOf(c)}/signature`, { headers: s.f.apiKeyHeaders, body: { signature } }),
        block(d.id),
      ]);
      expect(b.status, `round ${round}: block ${b.text}`).toBe(204);
      expect([204, 409], `round ${round}: signature ${sig.text}`).toContain(sig.status);
      await afterRace(s, d, id, sig.status === 204);
    }
  });

  test(`block vs a group of requests to the destination, ${ROUNDS} rounds: never a 500; each request written before the block is REJECTED by it, each after refused 409`, async () => {
    const s = await setup(100_000_000n);
    for (let round = 0; round < ROUNDS; round++) {
      const d = await destination(s);
      const asks = Array.from({ length: 6 }, () =>
        app.rest('POST', `/v1/accounts/${s.accountId}/withdrawals`, {
          headers: s.f.apiKeyHeaders,
          body: { amount: '1000', assetNetworkId: s.f.catalog.assetNetworkId, withdrawalDestinationId: d.id },
        }),
      );
      const [b, ...answers] = await Promise.all([block(d.id), ...asks]);
      expect(b.status, `round ${round}: block ${b.text}`).toBe(204);
      for (const r of answers) {
        expect([201, 409], `round ${round}: request ${r.text}`).toContain(r.status);
        if (r.status === 409) expect(r.body).toMatchObject({ detail: expect.stringMatching(/blocked/) });
      }
      await drainMoneyWork(app);
      for (const r of answers.filter((x) => x.status === 201))
        expect(await get(s, idOf(r))).toMatchObject({ status: 'REJECTED', txHash: null, rejectionReason: expect.stringMatching(/DESTINATION_BLOCKED/) });
      expect(await paidTo(d.address)).toBe(0);
    }
  });

  test(`block vs the broadcast job, ${ROUNDS} rounds: never an error; paid only when the job went first`, async () => {
    const s = await setup(100_000_000n);
    for (let round = 0; round < ROUNDS; round++) {
      const d = await destination(s);
      const id = await withdraw(s, d.id);
      expect((await get(s, id)).status).toBe('APPROVED');
      const [job, b] = await Promise.all([broadcastWithdrawal(deps(), id), block(d.id)]);
      expect(b.status, `round ${round}: block ${b.text}`).toBe(204);
      expect(['BROADCAST', 'SKIPPED', 'REJECTED']).toContain(job);
      await afterRace(s, d, id, job === 'BROADCAST');
    }
  });
});
