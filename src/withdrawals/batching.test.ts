import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { createOperator, createTestApp, type TestApp } from '../../test/harness';
import { checkLedgerInvariants } from '../../test/ledger-invariants';
import { drainMoneyWork } from '../../test/fixtures/settlements/testing';
import { moneyDeps } from '../../test/fixtures/deposits/testing';
import { withdrawalTesting, type WithdrawalSetup } from '../../test/fixtures/withdrawals/testing';
import { withdrawalHandlers } from './withdrawals.jobs';
import { followNetworkWithdrawals, RESERVE_RETRY_MS } from './withdrawals';
import { WITHDRAWAL_BROADCAST_QUEUE } from '../kernel/queues';

/**
 * Withdrawals at database speed (issue 22): the statements one withdrawal costs at request, at
 * broadcast and at confirmation (load-independent), and the groups the broadcast job and the
 * chain.sync confirmation work in.
 */
let app: TestApp;
let op: { operatorId: string; headers: Record<string, string> };
beforeAll(async () => {
  app = await createTestApp();
  op = await createOperator(app);
});
afterAll(() => app.close());
afterEach(() => checkLedgerInvariants(app.deps.db));

const DEST = '0x00000000000000000000000000000000000000e1';
const { idOf, setup, get, mine, sweptToHot, sweep, balance, withdrawalEvents } = withdrawalTesting(() => app, DEST);
const deps = () => ({ ...moneyDeps(app), sealingKey: app.deps.sealingKey });

async function withdraw(s: WithdrawalSetup, amount: bigint): Promise<string> {
  const r = await app.rest('POST', `/v1/accounts/${s.accountId}/withdrawals`, {
    headers: s.f.apiKeyHeaders,
    body: { amount: amount.toString(), assetNetworkId: s.f.catalog.assetNetworkId, withdrawalDestinationId: s.destinationId },
  });
  expect(r.status, r.text).toBe(201);
  return idOf(r);
}

/** A HOT treasury address holding what the setup's deposit address held (swept, mined), and a seeded reserve. */
async function hotTreasury(s: WithdrawalSetup, reserve = 10n ** 9n): Promise<{ id: string; address: string }> {
  const hot = await sweptToHot(s, op.headers);
  await drainMoneyWork(app);
  const seed = await app.rest('POST', '/v1/admin/network-resource-reserve/seed', {
    headers: op.headers,
    body: { assetNetworkId: s.f.catalog.assetNetworkId, amount: reserve.toString() },
  });
  expect(seed.status, seed.text).toBe(200);
  return hot;
}

/** The queued broadcast jobs, taken off the queue (their withdrawal ids), to run them as the worker does. */
async function takeBroadcastJobs(): Promise<string[]> {
  const jobs = await app.deps.boss!.fetch<{ withdrawalId: string }>(WITHDRAWAL_BROADCAST_QUEUE, { batchSize: 1000, ignoreStartAfter: true });
  for (const j of jobs) await app.deps.boss!.complete(WITHDRAWAL_BROADCAST_QUEUE, j.id);
  return jobs.map((j) => j.data.withdrawalId);
}

describe('statements per withdrawal', () => {
  test('request, broadcast and confirmation: 15 statements per request; a broadcast group and a confirmation group do not grow with their size', async () => {
    const s = await setup(10_000_000n);
    await hotTreasury(s);
    const run = async (n: number) => {
      const request = await app.sqlStatements(async () => {
        const ids: string[] = [];
        for (let i = 0; i < n; i++) ids.push(await withdraw(s, 1_000n + BigInt(i)));
        return ids;
      });
      const ids = request.result;
      const queued = await takeBroadcastJobs();
      expect(queued.sort()).toEqual([...ids].sort());
      const broadcast = await app.sqlStatements(() =>
        withdrawalHandlers[WITHDRAWAL_BROADCAST_QUEUE](
          deps(),
          queued.map((withdrawalId) => ({ data: { withdrawalId } })),
        ),
      );
      for (const id of ids) expect((await get(s, id)).status).toBe('BROADCAST');
      await mine(s);
      const confirmation = await app.sqlStatements(() => followNetworkWithdrawals(deps(), s.f.catalog.networkId));
      for (const id of ids) expect((await get(s, id)).status).toBe('CONFIRMED');
      await drainMoneyWork(app);
      return { request: request.statements.length / n, broadcast: broadcast.statements.length, confirmation: confirmation.statements.length };
    };
    const small = await run(2);
    const large = await run(10);
    const per = {
      request: large.request,
      broadcast: (large.broadcast - small.broadcast) / 8,
      confirmation: (large.confirmation - small.confirmation) / 8,
    };
    // Before issue 22: 17 per request, 44 per broadcast and 13 per confirmation, each withdrawal its own
    // transaction. Now 15 per request; a broadcast group and a block's confirmations cost the same
    // statements (37 and 16) for 2 withdrawals as for 10.
    expect(per.request).toBeLessThanOrEqual(15);
    expect(per.broadcast).toBeLessThanOrEqual(1);
    expect(per.confirmation).toBeLessThanOrEqual(1);
  });
});

describe('broadcast groups', () => {
  test('one group, per-item outcomes: two networks, a reserve that pays for two of three (the third waits alone), an id already broadcast and a bad id skipped; then each confirms once', async () => {
    const s = await setup(10_000_000n);
    const hot = await hotTreasury(s, 42_000n); // the sandbox network cost is 21,000: two broadcasts
    const other = await setup(1_000_000n); // another organization, another network, no HOT address: paid from its deposit address
    const w1 = await withdraw(s, 1_000n);
    const w2 = await withdraw(s, 2_000n);
    const w3 = await withdraw(s, 3_000n);
    const o1 = await withdraw(other, 4_000n);
    const queued = await takeBroadcastJobs();
    expect(queued.sort()).toEqual([w1, w2, w3, o1].sort());
    const results = await withdrawalHandlers[WITHDRAWAL_BROADCAST_QUEUE](
      deps(),
      [w1, 'not-a-uuid', w2, w3, o1].map((withdrawalId) => ({ data: { withdrawalId } })),
    );
    expect(results).toEqual(['BROADCAST', 'SKIPPED', 'BROADCAST', 'DEFERRED', 'BROADCAST']);
    expect(await get(s, w1)).toMatchObject({ status: 'BROADCAST', fromAddress: hot.address, broadcastAttempts: 1 });
    expect(await get(s, w2)).toMatchObject({ status: 'BROADCAST', fromAddress: hot.address, broadcastAttempts: 1 });
    expect(await get(s, w3)).toMatchObject({
      status: 'APPROVED',
      broadcastAttempts: 0,
      txHash: null,
      lastBroadcastError: expect.stringMatching(/^RESERVE_EXHAUSTED/),
    });
    expect(await get(other, o1)).toMatchObject({ status: 'BROADCAST', fromAddress: other.depositAddress, broadcastAttempts: 1 });
    // The two HOT transfers: consecutive nonces (the sandbox's hash covers the nonce), in list order.
    const sent = await app.deps.db.sandboxTransaction.findMany({
      where: { fromAddress: hot.address, toAddress: DEST },
      orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
      select: { txHash: true, amount: true },
    });
    expect(sent.map((t) => t.amount.toString())).toEqual(['1000', '2000']);
    expect(sent.map((t) => t.txHash)).toEqual([(await get(s, w1)).txHash, (await get(s, w2)).txHash]);
    // A job run again (a retried group) changes nothing: each withdrawal is broadcast once.
    expect(await withdrawalHandlers[WITHDRAWAL_BROADCAST_QUEUE](deps(), [{ data: { withdrawalId: w1 } }, { data: { withdrawalId: o1 } }])).toEqual([
      'SKIPPED',
      'SKIPPED',
    ]);

    // Topped up: the waiting one is sent by the sweep's retry, then all confirm at the next block, each hold posted once.
    const seed = await app.rest('POST', '/v1/admin/network-resource-reserve/seed', {
      headers: op.headers,
      body: { assetNetworkId: s.f.catalog.assetNetworkId, amount: '21000' },
    });
    expect(seed.status, seed.text).toBe(200);
    app.clock.advance(RESERVE_RETRY_MS);
    await sweep(s);
    expect(await get(s, w3)).toMatchObject({ status: 'BROADCAST', fromAddress: hot.address, broadcastAttempts: 1 });
    await mine(s);
    await mine(other);
    expect(await followNetworkWithdrawals(deps(), s.f.catalog.networkId)).toEqual({ CONFIRMED: 3 });
    expect(await followNetworkWithdrawals(deps(), other.f.catalog.networkId)).toEqual({ CONFIRMED: 1 });
    expect(await followNetworkWithdrawals(deps(), s.f.catalog.networkId)).toEqual({});
    for (const [x, id] of [
      [s, w1],
      [s, w2],
      [s, w3],
      [other, o1],
    ] as const) {
      expect(await get(x, id)).toMatchObject({ status: 'CONFIRMED' });
      expect(await withdrawalEvents(x, id)).toEqual(['requested', 'approved', 'broadcast', 'confirmed']);
    }
    const ids = [w1, w2, w3, o1];
    expect(await app.deps.db.ledgerTransaction.count({ where: { idempotencyKey: { in: ids.map((id) => `withdrawal:${id}:post`) } } })).toBe(4);
    const consumed = await app.deps.db.networkResourceReserveMovement.findMany({
      where: { referenceType: 'Withdrawal', referenceId: { in: ids.map((id) => `${id}:1`) } },
      select: { kind: true, amount: true },
    });
    expect(consumed.map((m) => [m.kind, m.amount.toString()])).toEqual([
      ['CONSUME', '21000'],
      ['CONSUME', '21000'],
      ['CONSUME', '21000'],
    ]);
    expect(await balance(s)).toEqual({ posted: 10_000_000n - 6_000n, available: 10_000_000n - 6_000n });
    const audits = await app.deps.db.auditLogEntry.count({
      where: { entityId: { in: ids }, action: { in: ['withdrawal.broadcast', 'withdrawal.confirmed'] } },
    });
    expect(audits).toBe(8);
  });

  test('confirmation: a mined withdrawal of a frozen account waits (BROADCAST, hold kept) and confirms once unfrozen, posted once', async () => {
    const s = await setup(1_000_000n);
    const w = await withdraw(s, 10_000n);
    await drainMoneyWork(app);
    expect((await get(s, w)).status).toBe('BROADCAST');
    const freeze = await app.rest('POST', `/v1/accounts/${s.accountId}/freeze`, { headers: s.f.member.headers, body: { reason: 'review' } });
    expect(freeze.status, freeze.text).toBe(204);
    await mine(s);
    expect(await followNetworkWithdrawals(deps(), s.f.catalog.networkId)).toEqual({ WAITING: 1 });
    expect((await get(s, w)).status).toBe('BROADCAST');
    const unfreeze = await app.rest('POST', `/v1/accounts/${s.accountId}/unfreeze`, { headers: s.f.member.headers });
    expect(unfreeze.status, unfreeze.text).toBe(204);
    expect(await followNetworkWithdrawals(deps(), s.f.catalog.networkId)).toEqual({ CONFIRMED: 1 });
    expect(await balance(s)).toEqual({ posted: 990_000n, available: 990_000n });
    expect(await app.deps.db.ledgerTransaction.count({ where: { idempotencyKey: `withdrawal:${w}:post` } })).toBe(1);
  });
});
