import { describe, expect, test } from 'vitest';
import type { TestApp } from '../../../test/harness';
import { sandboxSuite } from '../../../test/money-suite';
import { sandboxMine, sandboxReorg, sandboxSend } from '../../../test/money-helpers';
import { createIntent, moneyDeps, moneyFixture, drainChainSync, type MoneyFixture } from '../../../test/fixtures/deposits/testing';
import { CHAIN_SYNC_QUEUE, type ChainSyncJob } from '../../kernel/queues';
import { runChainSyncJobs } from '../../deposits/deposits.jobs';

/**
 * A mined block that carries nothing for anyone (issue 22, point 1: the withdrawals bench mines a
 * block every 100 ms through REST, most of them empty): the mine is a few raw statements on the
 * pool, and the chain.sync it queues one statement when nothing waits on the network (no deposit
 * open, no transfer to a deposit address since the cursor, no withdrawal to follow), which moves the
 * cursor. Whatever waits still gets its confirmations from empty blocks.
 */
let app: TestApp;
sandboxSuite((a) => (app = a));

const mine = (f: MoneyFixture, blocks = 1) => sandboxMine(app, f.apiKeyHeaders, f.catalog.networkId, blocks);
/** The queued chain.sync jobs, fetched once and worked together by the real handler (as one fetch of the worker), its statements counted. */
async function syncOnce() {
  const boss = app.deps.boss!;
  const jobs = await boss.fetch<ChainSyncJob>(CHAIN_SYNC_QUEUE, { batchSize: 500, ignoreStartAfter: true });
  const r = await app.sqlStatements(() =>
    runChainSyncJobs(
      moneyDeps(app),
      jobs.map((j) => j.data),
    ),
  );
  await boss.complete(
    CHAIN_SYNC_QUEUE,
    jobs.map((j) => j.id),
  );
  return { jobs: jobs.length, ...r };
}
const cursorOf = (networkId: string) => app.deps.db.chainSyncCursor.findUnique({ where: { networkId } });
/** A payment intent paid by a sandbox send, mined once and synced. */
async function paidIntent(requiredConfirmations: number) {
  const f = await moneyFixture(app, { requiredConfirmations });
  const pi = await createIntent(app, f);
  await sandboxSend(app, f.apiKeyHeaders, { address: pi.address, amount: 1_000_000n, assetNetworkId: f.catalog.assetNetworkId });
  await mine(f);
  await drainChainSync(app);
  return { f, pi };
}
const intentOf = async (f: MoneyFixture, id: string) => (await app.rest('GET', `/v1/payment-intents/${id}`, { headers: f.apiKeyHeaders })).body;

describe('an empty block (issue 22)', () => {
  test('the mine is a few statements; its chain.sync, with nothing waiting, one statement that moves the cursor to the tip', async () => {
    const f = await moneyFixture(app, { requiredConfirmations: 2 });
    await mine(f);
    await drainChainSync(app); // the cursor's first sync: the whole path
    const { statements, result } = await app.sqlStatements(() => mine(f));
    // BEGIN, the network lock, the tip, the fork number and mempool, the block, the chain.sync job, the audit entry, COMMIT.
    expect(statements.length, statements.join('\n')).toBeLessThanOrEqual(8);
    const sync = await syncOnce();
    expect(sync.jobs).toBe(1);
    expect(sync.statements, sync.statements.join('\n')).toHaveLength(1);
    expect(sync.result).toMatchObject({ networks: 1, changes: 0, addresses: 0 });
    expect(await cursorOf(f.catalog.networkId)).toMatchObject({ height: result.height });
    // The block is on the chain as any other, with its audit entry.
    expect(await app.deps.db.auditLogEntry.count({ where: { organizationId: f.organizationId, action: 'sandbox.blocks_mined' } })).toBe(2);
  });

  test('a deposit waiting for confirmations gets them from empty blocks; once it is confirmed, the syncs are quiet again', async () => {
    const { f, pi } = await paidIntent(3);
    expect(await intentOf(f, pi.id)).toMatchObject({ status: 'PROCESSING' });
    // Empty blocks: the deposit is open, so each sync takes the whole path and counts its confirmations.
    await mine(f);
    expect((await syncOnce()).statements.length).toBeGreaterThan(1);
    expect(await intentOf(f, pi.id)).toMatchObject({ status: 'PROCESSING' });
    await mine(f);
    expect((await syncOnce()).result.changes).toBeGreaterThan(0);
    expect(await intentOf(f, pi.id)).toMatchObject({ status: 'SUCCEEDED' });
    // Confirmed above the cursor's height once more (a reorganization could still take it): then quiet.
    await mine(f);
    await syncOnce();
    await mine(f);
    const quiet = await syncOnce();
    expect(quiet.statements).toHaveLength(1);
    expect(await intentOf(f, pi.id)).toMatchObject({ status: 'SUCCEEDED' });
  });

  test('a transfer to a deposit address since the cursor is never quiet, in the mempool or in a block no sync has seen', async () => {
    const f = await moneyFixture(app, { requiredConfirmations: 1 });
    await mine(f);
    await drainChainSync(app);
    const send = (address: string) => sandboxSend(app, f.apiKeyHeaders, { address, amount: 1_000_000n, assetNetworkId: f.catalog.assetNetworkId });
    // In the mempool, no deposit recorded yet: the whole path, which detects it.
    const a = await createIntent(app, f);
    await send(a.address);
    const pending = await syncOnce();
    expect(pending.statements.length).toBeGreaterThan(1);
    expect(pending.result.changes).toBeGreaterThan(0);
    await mine(f);
    await syncOnce();
    expect(await intentOf(f, a.id)).toMatchObject({ status: 'SUCCEEDED' });
    // Quiet again once nothing waits (the confirmed deposit below the cursor's height).
    for (let i = 0; i < 2; i++) {
      await mine(f);
      await syncOnce();
    }
    await mine(f);
    expect((await syncOnce()).statements).toHaveLength(1);
    // Sent and mined before any sync ran: no deposit, nothing in the mempool, only the block's transfer.
    const b = await createIntent(app, f);
    await send(b.address);
    await mine(f);
    const mined = await syncOnce();
    expect(mined.jobs).toBe(2);
    expect(mined.statements.length).toBeGreaterThan(1);
    expect(await intentOf(f, b.id)).toMatchObject({ status: 'SUCCEEDED' });
  });

  test('a reorganization behind the cursor is never quiet: the whole path looks at the orphaned blocks', async () => {
    const { f, pi } = await paidIntent(1);
    expect(await intentOf(f, pi.id)).toMatchObject({ status: 'SUCCEEDED' });
    await mine(f, 2);
    await drainChainSync(app);
    const before = await cursorOf(f.catalog.networkId);
    // Orphans the cursor's block (and re-includes the organization's transactions in the new branch).
    await sandboxReorg(app, f.apiKeyHeaders, f.catalog.networkId, 3);
    const sync = await syncOnce();
    expect(sync.statements.length).toBeGreaterThan(1);
    const after = await cursorOf(f.catalog.networkId);
    expect(after!.height).toBeGreaterThan(before!.height);
    expect(after!.blockHash).not.toBe(before!.blockHash);
  });
});
