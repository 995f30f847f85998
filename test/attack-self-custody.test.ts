import { createHash } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sandboxSend } from './money-helpers';
import { eventsOf } from './fixtures/deposits/testing';
import { drainMoneyWork } from './fixtures/settlements/testing';
import { app, auditOf, balanceOf, idOf, op, remember, secrets, useAttackApp, wt } from './attack-kit';
import type { WithdrawalSetup } from './fixtures/withdrawals/testing';
import { addressOf, bytesToHex, derivePrivateKey, derivePublicKey, generateKeyPair } from '../src/chains/secp256k1';

/**
 * Attacks on SelfCustody (signed) withdrawals from outside (session 7): the integrator signs the
 * signing request's canonical payload with its own key and submits r||s. Tampered, foreign,
 * replayed, malformed, late and concurrent signatures, and a key revoked or rotated between the
 * request and the signature: each refused with a clear 4xx and nothing changed (balances, holds,
 * request and withdrawal states, audit entries, events, the chain); the valid one goes through once.
 * Written from docs/withdrawals.md ("Signing (SelfCustody)") and the spec, before reading the code.
 */
useAttackApp();

const N = secp256k1.Point.CURVE().n;
const hex64 = (n: bigint) => n.toString(16).padStart(64, '0');
/** The canonical JSON of a flat payload as docs/withdrawals.md describes it: keys sorted, no spaces. */
const canonical = (p: Record<string, unknown>) => JSON.stringify(Object.fromEntries(Object.entries(p).sort(([a], [b]) => (a < b ? -1 : 1))));
const sign = (text: string, key: Uint8Array) => bytesToHex(secp256k1.sign(new TextEncoder().encode(text), key));

interface Signed {
  s: WithdrawalSetup;
  root: { privateKey: Uint8Array; publicKey: string };
  walletId: string;
  from: string;
  withdrawalId: string;
  srId: string;
  sr: { canonicalPayload: string; payload: Record<string, unknown>; digest: string; status: string };
  /** The source key (m/<index> under the root): the one a valid signature is made with. */
  key: Uint8Array;
}

/** A SelfCustody wallet of `s`'s organization, its source address funded on the chain. */
async function selfCustodyWallet(s: WithdrawalSetup, index: number) {
  const root = generateKeyPair();
  const w = await app.rest('POST', `/v1/applications/${s.f.applicationId}/wallets`, {
    headers: s.f.apiKeyHeaders,
    body: { networkId: s.f.catalog.networkId, custodyMode: 'SELF_CUSTODY', publicKey: root.publicKey },
  });
  expect(w.status, w.text).toBe(201);
  const from = addressOf(derivePublicKey(root.publicKey, index));
  await sandboxSend(app, s.f.apiKeyHeaders, { address: from, amount: 10_000_000n, assetNetworkId: s.f.catalog.assetNetworkId });
  await wt.mine(s);
  await drainMoneyWork(app);
  return { root, walletId: idOf(w), from, index };
}

/** A SelfCustody withdrawal of `amount` AWAITING_SIGNATURE and its signing request. */
async function signedWithdrawal(
  s: WithdrawalSetup,
  wallet: Awaited<ReturnType<typeof selfCustodyWallet>>,
  amount: bigint,
  headers = s.f.apiKeyHeaders,
): Promise<Signed> {
  const r = await app.rest('POST', `/v1/accounts/${s.accountId}/withdrawals`, {
    headers,
    body: {
      amount: amount.toString(),
      assetNetworkId: s.f.catalog.assetNetworkId,
      withdrawalDestinationId: s.destinationId,
      walletId: wallet.walletId,
      sourceIndex: wallet.index,
    },
  });
  expect(r.status, r.text).toBe(201);
  const withdrawalId = idOf(r);
  expect((await wt.get(s, withdrawalId)).status).toBe('AWAITING_SIGNATURE');
  const c = await app.rest('POST', `/v1/environments/${s.f.environmentId}/signing-requests`, { headers, body: { withdrawalId } });
  expect(c.status, c.text).toBe(201);
  const srId = idOf(c);
  const sr = (await app.rest('GET', `/v1/signing-requests/${srId}`, { headers })).body;
  expect(sr.status).toBe('PENDING');
  // The canonical form we rebuild is the service's: the tampered payloads below differ only where we change them.
  expect(canonical(sr.payload)).toBe(sr.canonicalPayload);
  expect(sr.digest).toBe(createHash('sha256').update(sr.canonicalPayload).digest('hex'));
  return {
    s,
    root: wallet.root,
    walletId: wallet.walletId,
    from: wallet.from,
    withdrawalId,
    srId,
    sr,
    key: derivePrivateKey(wallet.root.privateKey, wallet.index),
  };
}

/** Everything a refused signature must leave as it was. */
async function snapshot(x: Signed) {
  // Read by the organization's member: the API keys may be the revoked or suspended ones.
  const w = (await app.rest('GET', `/v1/withdrawals/${x.withdrawalId}`, { headers: x.s.f.member.headers })).body;
  const sr = (await app.rest('GET', `/v1/signing-requests/${x.srId}`, { headers: x.s.f.member.headers })).body;
  expect([w.id, sr.id]).toEqual([x.withdrawalId, x.srId]);
  return {
    balance: await balanceOf(x.s),
    withdrawal: { status: w.status, txHash: w.txHash ?? null },
    request: { status: sr.status, signature: sr.signature ?? null },
    events: (await eventsOf(app, x.s.f.organizationId)).length,
    audit: (await auditOf(x.withdrawalId)).length + (await auditOf(x.srId)).length,
    chain: await app.deps.db.sandboxTransaction.count({ where: { fromAddress: x.from } }),
    holds: await app.deps.db.$queryRawUnsafe<{ n: bigint }[]>(
      `SELECT count(*)::bigint AS n FROM "LedgerTransaction" WHERE "idempotencyKey" LIKE $1`,
      `withdrawal:${x.withdrawalId}:%`,
    ),
  };
}

const submit = (srId: string, signature: unknown, headers: Record<string, string>, extra: Record<string, string> = {}) =>
  app.rest('POST', `/v1/signing-requests/${srId}/signature`, { headers: { ...headers, ...extra }, body: { signature } });

/** A refusal: 4xx (never 5xx), with field errors on `signature` when 400, the body naming a cause. */
function expectRefused(r: { status: number; text: string; body: any }, status: number, label: string) {
  expect([r.status, label], `${label}: ${r.text}`).toEqual([status, label]);
  if (status === 400)
    expect(
      r.body.errors?.map((e: { field: string }) => e.field),
      label,
    ).toContain('signature');
  for (const s of secrets) expect(r.text.includes(s), `${label}: a credential in the answer`).toBe(false);
}

/** The one valid signature goes through: 204, the request SIGNED, the withdrawal BROADCAST, one transfer on the chain, one broadcast event. */
async function expectBroadcastOnce(x: Signed, signature: string, onChain = 1) {
  expect((await wt.get(x.s, x.withdrawalId)).status).toBe('BROADCAST');
  const sr = (await app.rest('GET', `/v1/signing-requests/${x.srId}`, { headers: x.s.f.apiKeyHeaders })).body;
  expect(sr).toMatchObject({ status: 'SIGNED', signature });
  expect(await app.deps.db.sandboxTransaction.count({ where: { fromAddress: x.from } })).toBe(onChain);
  expect(await wt.withdrawalEvents(x.s, x.withdrawalId)).toEqual(['requested', 'approved', 'broadcast']);
}

describe('SelfCustody signatures under attack', () => {
  test('tampered, foreign, other-payload and malformed signatures: 400 on signature, nothing changed; then the valid one broadcasts once and a replay is 409', async () => {
    const s = await wt.setup(2_000_000n);
    remember(s.f);
    const other = await wt.setup(1_000_000n);
    remember(other.f);
    const wallet = await selfCustodyWallet(s, 3);
    const otherWallet = await selfCustodyWallet(other, 3);
    const x = await signedWithdrawal(s, wallet, 300_000n);
    const y = await signedWithdrawal(s, wallet, 300_000n); // a second withdrawal of the same source
    const foreign = await signedWithdrawal(other, otherWallet, 300_000n);
    const before = await snapshot(x);
    expect(before.balance.posted - before.balance.available).toBe(600_000n); // both holds

    const valid = sign(x.sr.canonicalPayload, x.key);
    const p = x.sr.payload;
    const tamper = (change: Record<string, unknown>) => sign(canonical({ ...p, ...change }), x.key);
    const validBytes = Buffer.from(valid, 'hex');
    const r = BigInt(`0x${valid.slice(0, 64)}`);
    const sv = BigInt(`0x${valid.slice(64)}`);
    const flipped = Buffer.from(validBytes);
    flipped[40] = flipped[40]! ^ 0x01;

    const bad400: [string, unknown][] = [
      ['one bit flipped in s', flipped.toString('hex')],
      ['r and s swapped', valid.slice(64) + valid.slice(0, 64)],
      ['high-S twin of the valid signature', hex64(r) + hex64(N - sv)],
      ['r = 0', hex64(0n) + hex64(sv)],
      ['s = 0', hex64(r) + hex64(0n)],
      ['r = n', hex64(N) + hex64(sv)],
      ['s = n', hex64(r) + hex64(N)],
      ['all ff', 'f'.repeat(128)],
      ['all zeros', '0'.repeat(128)],
      ['another amount', tamper({ amount: '300001' })],
      ['a bigger amount', tamper({ amount: '9000000' })],
      ['another destination', tamper({ toAddress: '0x00000000000000000000000000000000000000aa' })],
      ['another network', tamper({ networkId: other.f.catalog.networkId, assetNetworkId: other.f.catalog.assetNetworkId })],
      ['another nonce (replay of another withdrawal)', tamper({ nonce: y.withdrawalId })],
      ["the other withdrawal's own valid signature", sign(y.sr.canonicalPayload, y.key)],
      ["another organization's key over this payload", sign(x.sr.canonicalPayload, foreign.key)],
      ["another organization's valid signature of its own withdrawal", sign(foreign.sr.canonicalPayload, foreign.key)],
      ['the root key instead of the derived one', sign(x.sr.canonicalPayload, x.root.privateKey)],
      ['a sibling index key', sign(x.sr.canonicalPayload, derivePrivateKey(x.root.privateKey, 4))],
      ['the digest signed instead of the payload', bytesToHex(secp256k1.sign(Buffer.from(x.sr.digest, 'hex'), x.key))],
      ['a DER signature', bytesToHex(secp256k1.sign(new TextEncoder().encode(x.sr.canonicalPayload), x.key, { format: 'der' }))],
      ['a recovered signature (65 bytes)', bytesToHex(secp256k1.sign(new TextEncoder().encode(x.sr.canonicalPayload), x.key, { format: 'recovered' }))],
      ['127 digits', valid.slice(0, 127)],
      ['129 digits', `${valid}0`],
      ['130 digits', `${valid}00`],
      ['empty', ''],
      ['not hex', `${valid.slice(0, 126)}zz`],
      ['0x prefix', `0x${valid}`],
      ['NUL inside', `${valid.slice(0, 64)}\u0000${valid.slice(64)}`],
      ['NUL at the end', `${valid}\u0000`],
      ['base64', validBytes.toString('base64')],
      ['full-width digits', valid.replace(/0/g, '\uFF10')],
      ['a number', 12345],
      ['null', null],
      ['an array', [valid]],
      ['an object', { r: valid.slice(0, 64), s: valid.slice(64) }],
      ['huge', 'a'.repeat(200_000)],
    ];
    const answers = await Promise.all(bad400.map(([, sig]) => submit(x.srId, sig, s.f.apiKeyHeaders)));
    for (const [i, [label]] of bad400.entries()) expectRefused(answers[i]!, 400, label);
    // An unknown field beside a valid signature, a missing one: 400, nothing executes.
    const extraField = await app.rest('POST', `/v1/signing-requests/${x.srId}/signature`, {
      headers: s.f.apiKeyHeaders,
      body: { signature: valid, amount: '1' },
    });
    expect(extraField.status, extraField.text).toBe(400);
    const missing = await app.rest('POST', `/v1/signing-requests/${x.srId}/signature`, { headers: s.f.apiKeyHeaders, body: {} });
    expect(missing.status, missing.text).toBe(400);
    // Another organization's caller with the valid signature: 404 (it cannot see the request).
    expectRefused(await submit(x.srId, valid, other.f.apiKeyHeaders), 404, "another organization's key");
    expectRefused(await submit(x.srId, valid, other.f.member.headers), 404, "another organization's member");
    // No credential, a made-up key: 401.
    expect((await submit(x.srId, valid, {})).status).toBe(401);
    expect((await submit(x.srId, valid, { 'x-api-key': 'sk_sandbox_not_a_key' })).status).toBe(401);
    // A valid signature on the wrong request (the signature of x on y's request): 400.
    expectRefused(await submit(y.srId, valid, s.f.apiKeyHeaders), 400, "x's signature on y's request");
    expect(await snapshot(x)).toEqual(before);
    expect((await snapshot(y)).request.status).toBe('PENDING');

    // The valid one: uppercase hex with surrounding spaces is the same signature (documented lenience), once.
    const ok = await submit(x.srId, valid, s.f.apiKeyHeaders, { 'idempotency-key': 'sig-1' });
    expect([ok.status, ok.text]).toEqual([204, '']);
    await expectBroadcastOnce(x, valid);
    const afterOk = await snapshot(x);
    expect(afterOk.balance).toEqual(before.balance); // the hold stays until CONFIRMED
    // Replays: the same key, another key, no key, the member, an uppercase spelling: 409, nothing more.
    for (const [label, sig, headers, extra] of [
      ['same Idempotency-Key', valid, s.f.apiKeyHeaders, { 'idempotency-key': 'sig-1' }],
      ['another Idempotency-Key', valid, s.f.apiKeyHeaders, { 'idempotency-key': 'sig-2' }],
      ['no Idempotency-Key', valid, s.f.apiKeyHeaders, {}],
      ['the member', valid, s.f.member.headers, {}],
      ['uppercase', valid.toUpperCase(), s.f.apiKeyHeaders, {}],
    ] as const) {
      const again = await submit(x.srId, sig, headers, extra);
      expectRefused(again, 409, `replay: ${label}`);
    }
    expect(await snapshot(x)).toEqual(afterOk);
    await expectBroadcastOnce(x, valid);

    // The replayed signature of x cannot move y (its own request stays PENDING, its hold stays).
    const yValid = sign(y.sr.canonicalPayload, y.key);
    expect((await submit(y.srId, ` ${yValid.toUpperCase()} `, s.f.apiKeyHeaders)).status).toBe(204);
    await expectBroadcastOnce(y, yValid, 2); // x's and y's transfers from the one source
    // Confirmed: each hold posted once; the account lost exactly the two amounts.
    await wt.mine(s);
    await wt.sweep(s);
    await drainMoneyWork(app);
    expect((await wt.get(s, x.withdrawalId)).status).toBe('CONFIRMED');
    expect((await wt.get(s, y.withdrawalId)).status).toBe('CONFIRMED');
    expect(await balanceOf(s)).toEqual({ posted: before.balance.posted - 600_000n, available: before.balance.posted - 600_000n });
    // The foreign withdrawal was never touched.
    expect((await snapshot(foreign)).request.status).toBe('PENDING');
    expect((await wt.get(other, foreign.withdrawalId)).status).toBe('AWAITING_SIGNATURE');
    await app.rest('POST', `/v1/withdrawals/${foreign.withdrawalId}/cancel`, { headers: other.f.apiKeyHeaders });
  }, 60_000);

  test('16 concurrent submissions of one valid signature (REST and GraphQL, two keys): exactly one 204, the rest 409, one transfer, one event', async () => {
    const s = await wt.setup(1_000_000n);
    remember(s.f);
    const wallet = await selfCustodyWallet(s, 1);
    const x = await signedWithdrawal(s, wallet, 250_000n);
    const valid = sign(x.sr.canonicalPayload, x.key);
    const gql = (headers: Record<string, string>) =>
      app
        .gql<any>(
          'mutation($id: ID!, $i: SubmitSigningRequestSignatureInput!) { submitSigningRequestSignature(id: $id, input: $i) { id status } }',
          { id: x.srId, i: { signature: valid } },
          headers,
        )
        .then((g) => (g.errors ? (g.errors[0]!.extensions?.code as string) : 'OK'));
    const answers = await Promise.all([
      ...Array.from({ length: 12 }, (_, i) =>
        submit(x.srId, valid, i % 2 ? s.f.member.headers : s.f.apiKeyHeaders, { 'idempotency-key': `k-${i % 3}` }).then((r) => r.status),
      ),
      ...Array.from({ length: 4 }, () => gql(s.f.apiKeyHeaders)),
    ]);
    const wins = answers.filter((a) => a === 204 || a === 'OK');
    expect(wins, JSON.stringify(answers)).toHaveLength(1);
    expect(
      answers.filter((a) => a !== 204 && a !== 'OK').every((a) => a === 409 || a === 'INVALID_STATE'),
      JSON.stringify(answers),
    ).toBe(true);
    await expectBroadcastOnce(x, valid);
    const audit = (await auditOf(x.withdrawalId)).filter((e) => (e as { action?: string }).action === 'withdrawal.broadcast');
    expect(audit).toHaveLength(1);
    await wt.mine(s);
    await wt.sweep(s);
    expect((await wt.get(s, x.withdrawalId)).status).toBe('CONFIRMED');
  }, 40_000);

  test('a signature after the withdrawal was cancelled, rejected by an operator or its destination blocked: 409, nothing broadcast, the hold voided once', async () => {
    const s = await wt.setup(1_000_000n);
    remember(s.f);
    const wallet = await selfCustodyWallet(s, 2);
    const start = await balanceOf(s);
    const [a, b, c] = [await signedWithdrawal(s, wallet, 100_000n), await signedWithdrawal(s, wallet, 100_000n), await signedWithdrawal(s, wallet, 100_000n)];
    expect((await app.rest('POST', `/v1/withdrawals/${a.withdrawalId}/cancel`, { headers: s.f.apiKeyHeaders })).status).toBe(204);
    expect((await app.rest('POST', `/v1/admin/withdrawals/${b.withdrawalId}/reject`, { headers: op.headers, body: { reason: 'attack' } })).status).toBe(204);
    const aSig = sign(a.sr.canonicalPayload, a.key);
    const bSig = sign(b.sr.canonicalPayload, b.key);
    const before = [await snapshot(a), await snapshot(b)];
    expect(before.map((x) => [x.withdrawal.status, x.request.status])).toEqual([
      ['CANCELLED', 'CLOSED'],
      ['REJECTED', 'CLOSED'],
    ]);
    expectRefused(await submit(a.srId, aSig, s.f.apiKeyHeaders), 409, 'after cancel');
    expectRefused(await submit(b.srId, bSig, s.f.apiKeyHeaders), 409, 'after reject');
    // A new signing request for a cancelled withdrawal: refused too.
    expect(
      (await app.rest('POST', `/v1/environments/${s.f.environmentId}/signing-requests`, { headers: s.f.apiKeyHeaders, body: { withdrawalId: a.withdrawalId } }))
        .status,
    ).toBe(409);
    expect([await snapshot(a), await snapshot(b)]).toEqual(before);

    // Cancel and signature racing: exactly one wins; either the transfer is on the chain and the
    // withdrawal BROADCAST (the cancel 409), or it is CANCELLED with nothing on the chain.
    const cSig = sign(c.sr.canonicalPayload, c.key);
    const [sub, can] = await Promise.all([
      submit(c.srId, cSig, s.f.apiKeyHeaders),
      app.rest('POST', `/v1/withdrawals/${c.withdrawalId}/cancel`, { headers: s.f.apiKeyHeaders }),
    ]);
    const cState = await snapshot(c);
    if (sub.status === 204) {
      expect(can.status, can.text).toBe(409);
      expect([cState.withdrawal.status, cState.chain]).toEqual(['BROADCAST', 1]);
    } else {
      expect([sub.status, can.status]).toEqual([409, 204]);
      expect([cState.withdrawal.status, cState.request.status, cState.chain]).toEqual(['CANCELLED', 'CLOSED', 0]);
    }

    // A destination blocked after the signing request: the signature is refused and the withdrawal rejected.
    const d = await signedWithdrawal(s, wallet, 100_000n);
    // The chain's transfers from the wallet's address before: c's, when its signature won the race above (same address).
    const chainBefore = (await snapshot(d)).chain;
    expect(chainBefore).toBe(cState.withdrawal.status === 'BROADCAST' ? 1 : 0);
    const block = await app.rest('POST', `/v1/admin/withdrawal-destinations/${s.destinationId}/block`, { headers: op.headers, body: { reason: 'sanctioned' } });
    expect(block.status, block.text).toBe(204);
    expectRefused(await submit(d.srId, sign(d.sr.canonicalPayload, d.key), s.f.apiKeyHeaders), 409, 'destination blocked');
    const dState = await snapshot(d);
    expect([dState.withdrawal.status, dState.chain]).toEqual(['REJECTED', chainBefore]);
    // Exactly the holds of what is not closed remain; the voided ones were voided once.
    await wt.mine(s);
    await wt.sweep(s);
    const end = await balanceOf(s);
    const spent = cState.withdrawal.status === 'BROADCAST' ? 100_000n : 0n;
    expect(end).toEqual({ posted: start.posted - spent, available: start.available - spent });
    for (const x of [a, b, d]) expect(await wt.withdrawalEvents(s, x.withdrawalId)).toHaveLength(3); // requested, approved, cancelled/rejected
  }, 40_000);

  test('an API key revoked, rotated or its application suspended between the signing request and the signature: 401/403, nothing changed; a valid credential then signs once', async () => {
    const s = await wt.setup(1_000_000n);
    remember(s.f);
    const wallet = await selfCustodyWallet(s, 5);
    const mk = async () => {
      const k = await app.rest('POST', `/v1/environments/${s.f.environmentId}/api-keys`, { headers: s.f.member.headers });
      expect(k.status, k.text).toBe(201);
      secrets.add(k.body.apiKey);
      return { id: k.body.id as string, headers: { 'x-api-key': k.body.apiKey as string } };
    };
    const revoked = await mk();
    const rotated = await mk();
    const x = await signedWithdrawal(s, wallet, 100_000n, revoked.headers);
    const y = await signedWithdrawal(s, wallet, 100_000n, rotated.headers);
    const before = [await snapshot(x), await snapshot(y)];
    expect((await app.rest('DELETE', `/v1/api-keys/${revoked.id}`, { headers: s.f.member.headers })).status).toBe(204);
    const rot = await app.rest('POST', `/v1/api-keys/${rotated.id}/rotate`, { headers: s.f.member.headers, body: {} });
    expect(rot.status, rot.text).toBe(200);
    secrets.add(rot.body.apiKey);
    const xSig = sign(x.sr.canonicalPayload, x.key);
    const ySig = sign(y.sr.canonicalPayload, y.key);
    const refusedX = await submit(x.srId, xSig, revoked.headers);
    const refusedY = await submit(y.srId, ySig, rotated.headers);
    expect([refusedX.status, refusedY.status], `${refusedX.text} ${refusedY.text}`).toEqual([401, 401]);
    for (const r of [refusedX, refusedY]) for (const sec of secrets) expect(r.text.includes(sec)).toBe(false);
    // GraphQL with the revoked key: refused too.
    const g = await app.gql<any>(
      'mutation($id: ID!, $i: SubmitSigningRequestSignatureInput!) { submitSigningRequestSignature(id: $id, input: $i) { id } }',
      { id: x.srId, i: { signature: xSig } },
      revoked.headers,
    );
    expect(g.errors?.[0]?.extensions?.code).toBe('INVALID_CREDENTIAL');
    expect([await snapshot(x), await snapshot(y)]).toEqual(before);

    // The application suspended: every key of it is refused (403 APPLICATION_INACTIVE), nothing changes.
    const susp = await app.rest('POST', `/v1/applications/${s.f.applicationId}/suspend`, { headers: s.f.member.headers, body: { reason: 'attack' } });
    expect(susp.status, susp.text).toBe(204);
    const inactive = await submit(x.srId, xSig, s.f.apiKeyHeaders);
    expect([inactive.status, inactive.body?.code], inactive.text).toEqual([403, 'APPLICATION_INACTIVE']);
    expect([await snapshot(x), await snapshot(y)]).toEqual(before);
    expect((await app.rest('POST', `/v1/applications/${s.f.applicationId}/reactivate`, { headers: s.f.member.headers })).status).toBe(204);

    // The rotated key's successor and the original key sign, once each.
    expect((await submit(y.srId, ySig, { 'x-api-key': rot.body.apiKey })).status).toBe(204);
    expect((await submit(x.srId, xSig, s.f.apiKeyHeaders)).status).toBe(204);
    await expectBroadcastOnce(x, xSig, 2);
    await expectBroadcastOnce(y, ySig, 2);
    await wt.mine(s);
    await wt.sweep(s);
  }, 40_000);
});
