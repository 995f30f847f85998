import { describe, expect, test } from 'vitest';
import { moneyFixture, eventsOf, type MoneyFixture } from './fixtures/deposits/testing';
import { drainMoneyWork, drainQueue, fundedTransaction } from './fixtures/settlements/testing';
import { RETAINED_RELEASE_QUEUE } from '../src/kernel/queues';
import { app, BAD_AMOUNTS, idOf, op, remember, TWO_256, useAttackApp } from './attack-kit';

/**
 * Ledger overflow inside a settlement group, from outside (session 7). A line is at most 2^256 − 1
 * and a balance row's running totals at most NUMERIC(78,0) (10^78 − 1, docs/ledger.md): an operator's
 * corrections bring a beneficiary's credits, or an asset-network's platform revenue, to a few base
 * units below that bound; then settlements of several organizations are executed by the job in one
 * group. Only the settlement whose posting would overflow is refused, with its own reason; the
 * others execute; balances, events and the ledger invariants are exact; no 500, no job left to retry.
 */
useAttackApp();

const NUMERIC_MAX = 10n ** 78n - 1n;
const MAX_LINE = TWO_256 - 1n;

/** Operator corrections crediting `credit` (a CUSTOMER of the organization, or the asset-network's PLATFORM_REVENUE) until its credits are `headroom` below NUMERIC(78,0)'s bound; the debits go to the organization's SUSPENSE. */
async function inflate(f: MoneyFixture, credit: { kind: 'CUSTOMER'; ownerId: string } | { kind: 'PLATFORM_REVENUE' }, already: bigint, headroom: bigint) {
  let left = NUMERIC_MAX - already - headroom;
  const an = f.catalog.assetNetworkId;
  while (left > 0n) {
    const amount = left > MAX_LINE ? MAX_LINE : left;
    const r = await app.rest('POST', '/v1/admin/ledger-corrections', {
      headers: op.headers,
      body: {
        reason: 'overflow attack: bring the credits near the bound',
        organizationId: f.organizationId,
        lines: [
          { account: { ...credit, assetNetworkId: an }, direction: 'CREDIT', amount: amount.toString() },
          { account: { kind: 'SUSPENSE', assetNetworkId: an }, direction: 'DEBIT', amount: amount.toString() },
        ],
      },
    });
    expect(r.status, r.text).toBe(201);
    left -= amount;
  }
}

const settle = (f: MoneyFixture, transactionId: string, amount?: string) =>
  app.rest('POST', `/v1/transactions/${transactionId}/settlements`, { headers: f.apiKeyHeaders, body: amount === undefined ? {} : { amount } });
const settlement = async (f: MoneyFixture, id: string) => {
  const r = await app.rest('GET', `/v1/settlements/${id}`, { headers: f.apiKeyHeaders });
  expect(r.status, r.text).toBe(200);
  return r.body as { status: string; failureReason?: string | null; grossAmount?: string; platformFeeAmount?: string };
};
const balances = async (f: MoneyFixture, accountId = f.beneficiaryAccountId) => {
  const r = await app.rest('GET', `/v1/accounts/${accountId}/balances`, { headers: f.member.headers });
  expect(r.status, r.text).toBe(200);
  const row = (r.body as { assetNetworkId: string; posted: string; available: string }[]).find((x) => x.assetNetworkId === f.catalog.assetNetworkId);
  return { posted: BigInt(row?.posted ?? 0), available: BigInt(row?.available ?? 0) };
};

describe('overflow inside a settlement group', () => {
  test('a beneficiary and a platform revenue one step from NUMERIC(78,0): only their settlements fail (own reason), the others in the same group execute; exact balances, no retry', async () => {
    // A: its beneficiary's credits 500 below the bound. B: a normal organization. C: its asset-network's platform revenue 10 below the bound, with a fee.
    const [fa, fb, fc] = (await Promise.all([0, 1, 2].map(() => moneyFixture(app, { requiredConfirmations: 1 })))) as [
      MoneyFixture,
      MoneyFixture,
      MoneyFixture,
    ];
    for (const f of [fa, fb, fc]) remember(f);
    const ta = await fundedTransaction(app, 1_000_000n, fa);
    const tb1 = await fundedTransaction(app, 1_000_000n, fb);
    const tb2 = await fundedTransaction(app, 2_000_000n, fb);
    const tc = await fundedTransaction(app, 1_000_000n, fc);
    const tcFree = await fundedTransaction(app, 1_000_000n, fc);
    await inflate(fa, { kind: 'CUSTOMER', ownerId: fa.beneficiaryAccountId }, 0n, 500n);
    await inflate(fc, { kind: 'PLATFORM_REVENUE' }, 0n, 10n);
    const policy = await app.rest('POST', '/v1/admin/pricing-policy', {
      headers: op.headers,
      body: { scope: 'ORGANIZATION', organizationId: fc.organizationId, assetNetworkId: fc.catalog.assetNetworkId, percentage: '1' },
    });
    expect(policy.status, policy.text).toBe(204);
    const aBefore = await balances(fa);
    expect(aBefore.posted).toBe(NUMERIC_MAX - 500n);
    const bBefore = await balances(fb);
    const cBefore = await balances(fc);

    // Hostile amounts first: 400 on the amount, nothing requested.
    for (const [label, v] of BAD_AMOUNTS) {
      if (v === null) continue; // null means "everything left" for this route
      const r = await app.rest('POST', `/v1/transactions/${tb1.transactionId}/settlements`, { headers: fb.apiKeyHeaders, body: { amount: v } });
      expect([r.status, label], r.text).toEqual([400, label]);
    }
    for (const big of [MAX_LINE, NUMERIC_MAX, TWO_256 * 2n]) {
      const r = await settle(fb, tb1.transactionId, big.toString());
      expect(r.status, r.text).toBeGreaterThanOrEqual(400);
      expect(r.status, r.text).toBeLessThan(500);
    }

    // All requested, then executed by the job as one group (drainMoneyWork runs the fetched batch together).
    // (B's partial settlement of tb1 first: its "everything left" one is requested after it.)
    const first = await settle(fb, tb1.transactionId, '400000');
    const reqs = [
      first,
      ...(await Promise.all([
        settle(fa, ta.transactionId),
        settle(fb, tb2.transactionId),
        settle(fc, tc.transactionId, '999999'),
        settle(fb, tb1.transactionId),
      ])),
    ];
    for (const r of reqs) expect(r.status, r.text).toBe(201);
    const [sb1, sa, sb2, sc, sb1rest] = reqs.map(idOf) as [string, string, string, string, string];
    await drainMoneyWork(app); // throws if a job's group answered an error (a job left to retry)

    // The overflowing ones: FAILED with a reason naming the bound; nothing moved.
    const a = await settlement(fa, sa);
    expect(a.status, JSON.stringify(a)).toBe('FAILED');
    expect(a.failureReason).toMatch(/AMOUNT_OUT_OF_RANGE|overflow|NUMERIC|out of range/i);
    const c = await settlement(fc, sc);
    expect(c.status, JSON.stringify(c)).toBe('FAILED');
    expect(c.failureReason).toMatch(/AMOUNT_OUT_OF_RANGE|overflow|NUMERIC|out of range/i);
    expect(await balances(fa)).toEqual(aBefore);
    expect(await balances(fc)).toEqual(cBefore);
    // The others executed exactly.
    for (const id of [sb1, sb2, sb1rest]) expect((await settlement(fb, id)).status).toBe('EXECUTED');
    expect(await balances(fb)).toEqual({ posted: bBefore.posted + 3_000_000n, available: bBefore.available + 3_000_000n });
    // Events: executed for B's three, failed for A's and C's; nothing executed for A and C.
    const evA = await eventsOf(app, fa.organizationId);
    expect(evA.filter((e) => e.body.SettlementId === sa).map((e) => e.type)).toEqual(['settlement.failed']);
    const evC = await eventsOf(app, fc.organizationId);
    expect(evC.filter((e) => e.body.SettlementId === sc).map((e) => e.type)).toEqual(['settlement.failed']);
    const evB = await eventsOf(app, fb.organizationId);
    for (const id of [sb1, sb2, sb1rest]) expect(evB.filter((e) => e.type === 'settlement.executed' && e.body.SettlementId === id)).toHaveLength(1);

    // A settlement without a fee on C's asset-network still executes (the revenue row is not touched).
    const free = await settle(fc, tcFree.transactionId, '1');
    expect(free.status, free.text).toBe(201);
    await drainMoneyWork(app);
    // 1% of 1 rounds half up to 0: nothing for the revenue.
    expect((await settlement(fc, idOf(free))).status).toBe('EXECUTED');

    // An operator's retry of the overflowing settlement fails the same way, once more; still nothing moved.
    const retry = await app.rest('POST', `/v1/admin/settlements/${sa}/retry`, { headers: op.headers });
    expect(retry.status, retry.text).toBe(204);
    await drainMoneyWork(app);
    expect((await settlement(fa, sa)).status).toBe('FAILED');
    expect(await balances(fa)).toEqual(aBefore);
    // What fits still executes: a settlement of the 500 base units of headroom, then 1 more fails.
    const ta2 = await fundedTransaction(app, 1_000n, fa);
    const fit = await settle(fa, ta2.transactionId, '500');
    expect(fit.status, fit.text).toBe(201);
    await drainMoneyWork(app);
    expect((await settlement(fa, idOf(fit))).status).toBe('EXECUTED');
    expect((await balances(fa)).posted).toBe(NUMERIC_MAX);
    const over = await settle(fa, ta2.transactionId, '1');
    expect(over.status, over.text).toBe(201);
    await drainMoneyWork(app);
    expect((await settlement(fa, idOf(over))).status).toBe('FAILED');
    expect((await balances(fa)).posted).toBe(NUMERIC_MAX);
  }, 60_000);

  test('a retained portion whose release would overflow its account: the release sweep skips it (it stays RETAINED, nothing moves) and still releases the portions after it; no job error', async () => {
    const [fa, fb] = (await Promise.all([0, 1].map(() => moneyFixture(app, { requiredConfirmations: 1 })))) as [MoneyFixture, MoneyFixture];
    for (const f of [fa, fb]) remember(f);
    await inflate(fa, { kind: 'CUSTOMER', ownerId: fa.beneficiaryAccountId }, 0n, 500n);
    const freeze = (f: MoneyFixture) =>
      app.rest('POST', `/v1/accounts/${f.beneficiaryAccountId}/freeze`, { headers: f.member.headers, body: { reason: 'attack' } });
    const unfreeze = (f: MoneyFixture) => app.rest('POST', `/v1/accounts/${f.beneficiaryAccountId}/unfreeze`, { headers: f.member.headers });
    // A's transaction first (its id sorts first: the sweep walks transactions in id order), then B's.
    const ta = await fundedTransaction(app, 1_000_000n, fa);
    const tb = await fundedTransaction(app, 1_000_000n, fb);
    for (const f of [fa, fb]) expect((await freeze(f)).status).toBe(204);
    const sa = idOf(await settle(fa, ta.transactionId));
    const sb = idOf(await settle(fb, tb.transactionId));
    await drainMoneyWork(app);
    for (const [f, id] of [
      [fa, sa],
      [fb, sb],
    ] as const)
      expect((await settlement(f, id)).status).toBe('EXECUTED');
    const aBefore = await balances(fa);
    const bBefore = await balances(fb);
    for (const f of [fa, fb]) expect((await unfreeze(f)).status).toBe(204);
    // The unfreezes' own release jobs are lost (taken off the queue unrun): the minute sweep (no scope) must release B's portion.
    const boss = app.deps.boss!;
    for (
      let jobs = await boss.fetch(RETAINED_RELEASE_QUEUE, { batchSize: 100 });
      jobs.length;
      jobs = await boss.fetch(RETAINED_RELEASE_QUEUE, { batchSize: 100 })
    )
      await boss.complete(
        RETAINED_RELEASE_QUEUE,
        jobs.map((j) => j.id),
      );
    await boss.send(RETAINED_RELEASE_QUEUE, {});
    await drainQueue(app, RETAINED_RELEASE_QUEUE); // throws if the sweep's job failed (it would be retried, and fail, every minute)
    expect(await balances(fb)).toEqual({ posted: bBefore.posted + 1_000_000n, available: bBefore.available + 1_000_000n });
    expect(await balances(fa)).toEqual(aBefore);
    const evA = await eventsOf(app, fa.organizationId);
    expect(evA.filter((e) => e.type === 'settlement.split_portion_released' && e.body.SettlementId === sa)).toEqual([]);
    const evB = await eventsOf(app, fb.organizationId);
    expect(evB.filter((e) => e.type === 'settlement.split_portion_released' && e.body.SettlementId === sb)).toHaveLength(1);
    // A's scoped job (its account unfrozen again later) answers without an error too, and moves nothing.
    await boss.send(RETAINED_RELEASE_QUEUE, { accountId: fa.beneficiaryAccountId });
    await drainQueue(app, RETAINED_RELEASE_QUEUE);
    expect(await balances(fa)).toEqual(aBefore);
  }, 40_000);

  test('pricing terms at the bound: a fixed fee of 2^256 - 1 fails only its settlement (FEE_EXCEEDS_GROSS) in a group beside a normal one; terms beyond 2^256 - 1 are 400', async () => {
    const [fd, fe] = (await Promise.all([0, 1].map(() => moneyFixture(app, { requiredConfirmations: 1 })))) as [MoneyFixture, MoneyFixture];
    for (const f of [fd, fe]) remember(f);
    const policy = (body: Record<string, unknown>) =>
      app.rest('POST', '/v1/admin/pricing-policy', {
        headers: op.headers,
        body: { scope: 'ORGANIZATION', organizationId: fd.organizationId, assetNetworkId: fd.catalog.assetNetworkId, ...body },
      });
    for (const body of [
      { fixedAmount: TWO_256.toString() },
      { minimumAmount: NUMERIC_MAX.toString() },
      { maximumAmount: (TWO_256 * 4n).toString() },
      { percentage: '100.0000001' },
      { percentage: '1e2' },
      { fixedAmount: '-1' },
    ]) {
      const r = await policy(body);
      expect([r.status, JSON.stringify(body)], r.text).toEqual([400, JSON.stringify(body)]);
    }
    const ok = await policy({ percentage: '100', fixedAmount: MAX_LINE.toString(), maximumAmount: MAX_LINE.toString() });
    expect(ok.status, ok.text).toBe(204);
    const td = await fundedTransaction(app, 1_000_000n, fd);
    const te = await fundedTransaction(app, 1_000_000n, fe);
    const dBefore = await balances(fd);
    const eBefore = await balances(fe);
    const [rd, re] = await Promise.all([settle(fd, td.transactionId), settle(fe, te.transactionId)]);
    expect([rd.status, re.status]).toEqual([201, 201]);
    await drainMoneyWork(app);
    const d = await settlement(fd, idOf(rd));
    expect([d.status, d.failureReason?.split(':')[0]]).toEqual(['FAILED', 'FEE_EXCEEDS_GROSS']);
    expect((await settlement(fe, idOf(re))).status).toBe('EXECUTED');
    expect(await balances(fd)).toEqual(dBefore);
    expect((await balances(fe)).posted).toBe(eBefore.posted + 1_000_000n);
  }, 40_000);
});
