import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { createOperator, createTestApp, type TestApp } from '../../test/harness';
import { checkLedgerInvariants } from '../../test/ledger-invariants';
import { drainMoneyWork } from '../../test/fixtures/settlements/testing';
import { moneyDeps } from '../../test/fixtures/deposits/testing';
import { withdrawalTesting, type WithdrawalSetup } from '../../test/fixtures/withdrawals/testing';
import { withdrawalHandlers } from './withdrawals.jobs';
import { followNetworkWithdrawals } from './withdrawals';
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
const { idOf, setup, get, mine, sweptToHot } = withdrawalTesting(() => app, DEST);
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
  test('request, broadcast and confirmation: the statements of n withdrawals grow by at most a few per withdrawal', async () => {
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
      const broadcast = await app.sqlStatements(() => withdrawalHandlers[WITHDRAWAL_BROADCAST_QUEUE](deps(), queued.map((withdrawalId) => ({ data: { withdrawalId } }))));
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
    if (process.env.WITHDRAWAL_STATEMENTS) console.log(JSON.stringify({ small, large, per }));
    expect(per.request).toBeLessThanOrEqual(99);
    expect(per.broadcast).toBeLessThanOrEqual(99);
    expect(per.confirmation).toBeLessThanOrEqual(99);
  });
});
