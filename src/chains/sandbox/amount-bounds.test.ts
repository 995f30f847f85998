import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import pino from 'pino';
import { randomBytes } from 'node:crypto';
import { createOperator, createTestApp, type TestApp } from '../../../test/harness';
import { sandboxMine, sandboxSend } from '../../../test/money-helpers';
import { plantSandboxTransfer } from '../../../test/sandbox-plant';
import { createIntent, moneyDeps, moneyFixture, type MoneyFixture } from '../../../test/fixtures/deposits/testing';
import { runChainSyncJobs, type ChainSyncRun } from '../../deposits/deposits.jobs';
import { NetworkSyncFailure, syncAddress, syncNetwork } from '../../deposits/sync';
import { CHAIN_SYNC_ADDRESS_QUEUE, CHAIN_SYNC_QUEUE, type ChainSyncAddressJob, type ChainSyncJob } from '../../kernel/queues';
import { produceSandboxBlocks } from './producer';
import { sendTransactions, tip } from './chain';

/**
 * Issue 26, point 1: every amount is at most 2^256 - 1 base units; sums that grow (a sandbox address
 * balance, ledger totals) are refused before they overflow (409, never 500); and one sandbox network's
 * failure never stops block production or deposit detection on another, nor one address the others.
 */

const MAX = 2n ** 256n - 1n;
const SEVENTY_EIGHT_DIGITS = '9' + '0'.repeat(77);

let app: TestApp;
let op: Record<string, string>;
beforeAll(async () => {
  app = await createTestApp();
  op = (await createOperator(app)).headers;
});
afterAll(() => app.close());

/** The chain.sync jobs queued naming this recipient. */
const syncJobsNaming = async (to: string) =>
  Number(
    (await app.deps.db.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM pgboss.job WHERE name = ${CHAIN_SYNC_QUEUE} AND data->'addresses' ? ${to}`)[0]!.n,
  );

let seq = 0;
const address = () => '0x' + (++seq).toString(16).padStart(40, 'b');

describe('amount bounds', () => {
  test(
    'sandbox deposits: 78 digits and 2^256 answer 400 on amount; 2^256 - 1 is accepted; the address then takes ' +
      'nothing more (409), and mining never overflows',
    async () => {
      const f = await moneyFixture(app);
      const h = f.apiKeyHeaders;
      const an = f.catalog.assetNetworkId;
      const to = address();
      for (const amount of [SEVENTY_EIGHT_DIGITS, (MAX + 1n).toString()]) {
        const r = await app.rest('POST', '/v1/sandbox/deposits', { headers: h, body: { address: to, amount, assetNetworkId: an } });
        expect(r.status, r.text).toBe(400);
        expect(r.body.errors).toEqual([{ field: 'amount', message: expect.stringMatching(/2\^256 - 1/), code: expect.any(String) }]);
      }
      await sandboxSend(app, h, { address: to, amount: MAX, assetNetworkId: an });
      // Pending counts: a second transfer to the address would let one block overflow its balance.
      const second = await app.rest('POST', '/v1/sandbox/deposits', { headers: h, body: { address: to, amount: '1', assetNetworkId: an } });
      expect(second.status, second.text).toBe(409);
      expect(second.body.detail).toMatch(/would hold more than 2\^256 - 1/);
      expect((await app.rest('POST', `/v1/sandbox/networks/${f.catalog.networkId}/mine`, { headers: h, body: { blocks: 1 } })).status).toBe(200);
      const after = await app.rest('POST', '/v1/sandbox/deposits', { headers: h, body: { address: to, amount: '1', assetNetworkId: an } });
      expect(after.status).toBe(409);
      const b = await app.gql<{ sandboxBalance: { balance: string } }>(
        'query($a: ID!, $x: String!) { sandboxBalance(assetNetworkId: $a, address: $x) { balance } }',
        { a: an, x: to },
        h,
      );
      expect(b.data!.sandboxBalance.balance).toBe(MAX.toString());
      // The refused sends queued no chain.sync job (the insert's statement writes it only with the
      // transfers it wrote): the one naming the address is the accepted send's.
      expect(await syncJobsNaming(to)).toBe(1);
      // A group where one item is refused: the others are sent with one job naming only their recipients.
      const fresh = address();
      const item = (toAddress: string, amount: bigint) =>
        ({ assetNetworkId: an, fromAddress: address(), toAddress, amount, replaceable: false, revert: false, senderOrganizationId: null }) as const;
      const sent = await app.deps.db.$transaction((tx) =>
        sendTransactions(tx, { clock: app.clock, boss: app.deps.boss }, f.catalog.networkId, [item(to, 1n), item(fresh, 5n)]),
      );
      expect(sent[0]).toBeInstanceOf(Error);
      expect(sent[1]).toMatchObject({ toAddress: fresh, status: 'PENDING' });
      expect(await syncJobsNaming(to)).toBe(1);
      expect(await syncJobsNaming(fresh)).toBe(1);
      // Two of the deposits to one payment intent: both refused at the door now.
      const intent = await createIntent(app, f);
      const r = await app.rest('POST', '/v1/sandbox/deposits', {
        headers: h,
        body: { address: intent.address, amount: SEVENTY_EIGHT_DIGITS, assetNetworkId: an },
      });
      expect(r.status).toBe(400);
    },
  );

  test(
    'ledger corrections: a line over 2^256 - 1 answers 400; a total the ledger cannot hold answers 409 ' +
      'AMOUNT_OUT_OF_RANGE with nothing posted; reconciliation still runs',
    async () => {
      const f = await moneyFixture(app);
      const an = f.catalog.assetNetworkId;
      const correction = (amount: string) =>
        app.rest('POST', '/v1/admin/ledger-corrections', {
          headers: op,
          body: {
            reason: 'bounds',
            lines: [
              { account: { kind: 'CHAIN_CLEARING', assetNetworkId: an }, direction: 'DEBIT', amount },
              { account: { kind: 'FEES', assetNetworkId: an }, direction: 'CREDIT', amount },
            ],
          },
        });
      const tooBig = await correction(SEVENTY_EIGHT_DIGITS);
      expect(tooBig.status).toBe(400);
      expect(tooBig.body.errors).toEqual([{ field: 'lines.0.amount', message: expect.stringMatching(/2\^256 - 1/), code: expect.any(String) }]);
      // Eight of the largest amount fit NUMERIC(78,0) totals; the ninth does not.
      for (let i = 0; i < 8; i++) expect((await correction(MAX.toString())).status).toBe(201);
      const ninth = await correction(MAX.toString());
      expect(ninth.status, ninth.text).toBe(409);
      expect(ninth.body.detail).toMatch(/AMOUNT_OUT_OF_RANGE/);
      expect(await app.deps.db.ledgerCorrection.count({ where: { reason: 'bounds' } })).toBe(8);
      const run = await app.rest('POST', '/v1/admin/reconciliations/execute', { headers: op });
      expect(run.status, run.text).toBeLessThan(300);
    },
  );
});

/** Every queued chain.sync job, run once as the job runner runs a batch (it throws when a network failed). */
async function syncBatch(): Promise<ChainSyncRun> {
  const boss = app.deps.boss!;
  const jobs = await boss.fetch<ChainSyncJob>(CHAIN_SYNC_QUEUE, { batchSize: 500, ignoreStartAfter: true });
  try {
    return await runChainSyncJobs(
      moneyDeps(app),
      jobs.map((j) => j.data),
    );
  } finally {
    if (jobs.length)
      await boss.complete(
        CHAIN_SYNC_QUEUE,
        jobs.map((j) => j.id),
      );
  }
}

/** The address's queued chain.sync.address job, run once as the job runner runs it: completed, or failed into retry. */
async function runAddressJob(depositAddressId: string): Promise<Error | null> {
  const boss = app.deps.boss!;
  const [job] = (await boss.fetch<ChainSyncAddressJob>(CHAIN_SYNC_ADDRESS_QUEUE, { batchSize: 100, ignoreStartAfter: true })).filter(
    (j) => j.data.depositAddressId === depositAddressId,
  );
  if (!job) throw new Error(`no runnable chain.sync.address job for ${depositAddressId}`);
  try {
    await syncAddress(moneyDeps(app), job.data);
    await boss.complete(CHAIN_SYNC_ADDRESS_QUEUE, job.id);
    return null;
  } catch (e) {
    await boss.fail(CHAIN_SYNC_ADDRESS_QUEUE, job.id, { message: (e as Error).message });
    return e as Error;
  }
}

type Stuck = {
  kind: string;
  id: string;
  organizationId: string;
  status: string;
  since: string;
  jobState: string | null;
  lastError: string | null;
  networkId: string | null;
  address: string | null;
};
const stuckChainSyncs = async () => {
  const r = await app.rest('GET', '/v1/admin/stuck-operations?olderThanSeconds=0&limit=500', { headers: op });
  expect(r.status, r.text).toBe(200);
  return (r.body as Stuck[]).filter((s) => s.kind === 'CHAIN_SYNC');
};

const intentOf = async (f: MoneyFixture, id: string) =>
  (await app.rest('GET', `/v1/payment-intents/${id}`, { headers: f.apiKeyHeaders })).body as { status: string; confirmedAmount: string };

/** A transfer planted on the network (test/sandbox-plant.ts): mined in `block`, or pending; `faucetOf`: from that organization's faucet. */
const plant = (networkId: string, assetNetworkId: string, address: string, amount: bigint, block: { hash: string; height: number } | null, faucetOf?: string) =>
  plantSandboxTransfer(app.deps.db, { networkId, assetNetworkId, address }, amount, block, { faucetOf, now: app.clock.now() });

describe('failure isolation', () => {
  test(
    'a poisoned sandbox network: the producer logs it and mines the others; chain.sync confirms the others (and ' +
      'the healthy addresses of the poisoned network) and isolates the failing one: retried alone by its own job, ' +
      'listed as stuck (CHAIN_SYNC) until it reconciles',
    async () => {
      const INTERVAL = 5_000;
      // Network A (first in the producer's loop) is poisoned; network B belongs to another organization.
      const a = await moneyFixture(app, { requiredConfirmations: 1 });
      const b = await moneyFixture(app, { requiredConfirmations: 2 });
      expect(a.catalog.networkId < b.catalog.networkId).toBe(true);

      // On A: a healthy intent paid and mined, and an intent whose address an operator credited twice with
      // 6·10^77 (beyond any amount) in a block written by hand: both addresses in one sync chunk.
      const healthyA = await createIntent(app, a);
      const brokenA = await createIntent(app, a);
      await sandboxSend(app, a.apiKeyHeaders, { address: healthyA.address, amount: 1_000_000n, assetNetworkId: a.catalog.assetNetworkId });
      await sandboxMine(app, a.apiKeyHeaders, a.catalog.networkId);
      const t = await tip(app.deps.db, a.catalog.networkId);
      const block = { hash: '0x' + randomBytes(32).toString('hex'), height: t.height + 1 };
      await app.deps.db.sandboxBlock.create({
        data: { networkId: a.catalog.networkId, height: block.height, hash: block.hash, parentHash: t.hash, canonical: true, minedAt: app.clock.now() },
      });
      await plant(a.catalog.networkId, a.catalog.assetNetworkId, brokenA.address, 6n * 10n ** 77n, block);
      await plant(a.catalog.networkId, a.catalog.assetNetworkId, brokenA.address, 6n * 10n ** 77n, block);
      // ...and two pending transfers whose sum overflows their recipient's balance: A can mine no block.
      const victim = address();
      await plant(a.catalog.networkId, a.catalog.assetNetworkId, victim, 6n * 10n ** 77n, null, a.organizationId);
      await plant(a.catalog.networkId, a.catalog.assetNetworkId, victim, 6n * 10n ** 77n, null, a.organizationId);
      const mineA = await app.rest('POST', `/v1/sandbox/networks/${a.catalog.networkId}/mine`, { headers: a.apiKeyHeaders, body: { blocks: 1 } });
      expect(mineA.status, mineA.text).toBe(409);
      const heightA = (await tip(app.deps.db, a.catalog.networkId)).height;

      // On B: another organization's deposit, confirmed by produced blocks only.
      const intentB = await createIntent(app, b);
      await sandboxSend(app, b.apiKeyHeaders, { address: intentB.address, amount: 1_000_000n, assetNetworkId: b.catalog.assetNetworkId });

      const logged: { msg: string; networkId?: string; level: number }[] = [];
      const log = pino({ level: 'error' }, { write: (line: string) => void logged.push(JSON.parse(line)) });
      const producerDeps = { db: app.deps.db, clock: app.clock, log, boss: app.deps.boss, intervalMs: INTERVAL };
      for (let round = 0; round < 2; round++) {
        app.clock.advance(INTERVAL);
        const mined = await produceSandboxBlocks(producerDeps);
        expect(mined.map((m) => m.networkId)).toContain(b.catalog.networkId);
        expect(mined.map((m) => m.networkId)).not.toContain(a.catalog.networkId);
      }
      expect(logged.filter((l) => l.networkId === a.catalog.networkId && l.level >= 50)).toHaveLength(2);
      expect((await tip(app.deps.db, a.catalog.networkId)).height).toBe(heightA);
      expect((await tip(app.deps.db, b.catalog.networkId)).height).toBeGreaterThanOrEqual(2);

      // One chain.sync batch naming A and B: it succeeds; the failing address is isolated (its own job), everything else is synced.
      const run = await syncBatch();
      const brokenAddressRow = await app.deps.db.depositAddress.findFirstOrThrow({ where: { address: brokenA.address } });
      expect(run.isolated).toEqual([
        {
          networkId: a.catalog.networkId,
          depositAddressId: brokenAddressRow.id,
          address: brokenA.address,
          error: expect.stringMatching(/2\^256 - 1|AMOUNT_OUT_OF_RANGE/),
        },
      ]);
      expect(await intentOf(b, intentB.id)).toMatchObject({ status: 'SUCCEEDED', confirmedAmount: '1000000' });
      expect(await intentOf(a, healthyA.id)).toMatchObject({ status: 'SUCCEEDED', confirmedAmount: '1000000' });
      // The failing intent is readable (no 500) and unchanged.
      const broken = await app.rest('GET', `/v1/payment-intents/${brokenA.id}`, { headers: a.apiKeyHeaders });
      expect(broken.status).toBe(200);
      expect(broken.body).toMatchObject({ status: 'AWAITING_PAYMENT', confirmedAmount: '0' });

      // Listed as stuck (kind CHAIN_SYNC), with its network, address and organization.
      const listed = (await stuckChainSyncs()).filter((s) => s.id === brokenAddressRow.id);
      expect(listed).toEqual([
        expect.objectContaining({
          kind: 'CHAIN_SYNC',
          status: 'FAILING',
          organizationId: a.organizationId,
          networkId: a.catalog.networkId,
          address: brokenA.address,
          jobState: 'created',
        }),
      ]);
      // The next syncs leave it to its job: no second job, nothing isolated again, nothing thrown.
      await app.rest('POST', `/v1/sandbox/networks/${b.catalog.networkId}/mine`, { headers: b.apiKeyHeaders, body: { blocks: 1 } });
      await app.deps.boss!.send(CHAIN_SYNC_QUEUE, { networkId: a.catalog.networkId });
      expect((await syncBatch()).isolated).toEqual([]);
      expect(await app.deps.boss!.findJobs(CHAIN_SYNC_ADDRESS_QUEUE, { data: { depositAddressId: brokenAddressRow.id } })).toHaveLength(1);

      // Its job retried alone: it fails (retry, with the error listed)...
      expect((await runAddressJob(brokenAddressRow.id))?.message).toMatch(/2\^256 - 1|AMOUNT_OUT_OF_RANGE/);
      expect((await stuckChainSyncs()).find((s) => s.id === brokenAddressRow.id)).toMatchObject({
        jobState: 'retry',
        lastError: expect.stringMatching(/2\^256 - 1|AMOUNT_OUT_OF_RANGE/),
      });
      // ...until the operator removes the impossible transfers: it reconciles, completes, and leaves the list.
      await app.deps.db.sandboxTransaction.deleteMany({ where: { networkId: a.catalog.networkId, toAddress: brokenA.address, blockHash: block.hash } });
      expect(await runAddressJob(brokenAddressRow.id)).toBeNull();
      expect((await stuckChainSyncs()).find((s) => s.id === brokenAddressRow.id)).toBeUndefined();
    },
  );
  test(
    'an address whose retries are spent: the next sync tries it with the others and isolates it again; once it ' +
      'reconciles, one more job of its own completes and takes it off the stuck list',
    async () => {
      const a = await moneyFixture(app, { requiredConfirmations: 1 });
      const brokenA = await createIntent(app, a);
      const healthyA = await createIntent(app, a);
      const brokenId = (await app.deps.db.depositAddress.findFirstOrThrow({ where: { address: brokenA.address } })).id;
      await sandboxMine(app, a.apiKeyHeaders, a.catalog.networkId);
      const t = await tip(app.deps.db, a.catalog.networkId);
      const block = { hash: t.hash!, height: t.height };
      await plant(a.catalog.networkId, a.catalog.assetNetworkId, brokenA.address, 6n * 10n ** 77n, block);
      await plant(a.catalog.networkId, a.catalog.assetNetworkId, brokenA.address, 6n * 10n ** 77n, block);
      // Listed since the sync that isolated it, on the service clock (never the database's: how long the run took does not matter).
      const isolatedAt = app.clock.now().toISOString();
      expect((await syncBatch()).isolated.map((f) => f.depositAddressId)).toEqual([brokenId]);
      const spend = () =>
        app.deps.db
          .$executeRaw`UPDATE pgboss.job SET retry_limit = 0 WHERE name = ${CHAIN_SYNC_ADDRESS_QUEUE} AND data->>'depositAddressId' = ${brokenId} AND state IN ('created', 'retry')`;
      await spend();
      expect(await runAddressJob(brokenId)).not.toBeNull();
      expect((await stuckChainSyncs()).find((s) => s.id === brokenId)).toMatchObject({
        jobState: 'failed',
        since: isolatedAt,
        lastError: expect.stringMatching(/2\^256 - 1|AMOUNT_OUT_OF_RANGE/),
      });

      // Its retries spent, the next sync tries it again (with a healthy deposit of the same chunk): isolated again, a new job.
      await sandboxSend(app, a.apiKeyHeaders, { address: healthyA.address, amount: 1_000_000n, assetNetworkId: a.catalog.assetNetworkId });
      await sandboxMine(app, a.apiKeyHeaders, a.catalog.networkId);
      expect((await syncBatch()).isolated.map((f) => f.depositAddressId)).toEqual([brokenId]);
      expect(await intentOf(a, healthyA.id)).toMatchObject({ status: 'SUCCEEDED' });
      expect((await app.deps.boss!.findJobs(CHAIN_SYNC_ADDRESS_QUEUE, { data: { depositAddressId: brokenId } })).map((j) => j.state).sort()).toEqual([
        'created',
        'failed',
      ]);
      expect((await stuckChainSyncs()).find((s) => s.id === brokenId)).toMatchObject({ jobState: 'created' });

      // Spent again; then the operator removes the impossible transfers: the next sync reconciles it and sends one more job, which completes.
      await spend();
      expect(await runAddressJob(brokenId)).not.toBeNull();
      await app.deps.db.sandboxTransaction.deleteMany({ where: { networkId: a.catalog.networkId, toAddress: brokenA.address, blockHash: block.hash } });
      await app.deps.boss!.send(CHAIN_SYNC_QUEUE, { networkId: a.catalog.networkId });
      expect((await syncBatch()).isolated).toEqual([]);
      expect(await runAddressJob(brokenId)).toBeNull();
      expect((await stuckChainSyncs()).find((s) => s.id === brokenId)).toBeUndefined();
    },
  );

  test(
    'a chunk none of whose addresses reconciles even alone is a network failure: nothing isolated, the later ' + 'chunks still synced, the sync throws',
    async () => {
      const a = await moneyFixture(app, { requiredConfirmations: 1 });
      const broken = [await createIntent(app, a), await createIntent(app, a)];
      const healthy = await createIntent(app, a);
      await sandboxSend(app, a.apiKeyHeaders, { address: healthy.address, amount: 1_000_000n, assetNetworkId: a.catalog.assetNetworkId });
      await sandboxMine(app, a.apiKeyHeaders, a.catalog.networkId);
      const t = await tip(app.deps.db, a.catalog.networkId);
      for (const b of broken)
        for (let i = 0; i < 2; i++) await plant(a.catalog.networkId, a.catalog.assetNetworkId, b.address, 6n * 10n ** 77n, { hash: t.hash!, height: t.height });
      // Addresses are paged in id order (created order): the two broken ones fill the first chunk of two.
      await expect(syncNetwork(moneyDeps(app), a.catalog.networkId, { chunk: 2 })).rejects.toThrow(NetworkSyncFailure);
      expect(await intentOf(a, healthy.id)).toMatchObject({ status: 'SUCCEEDED' });
      const ids = (await app.deps.db.depositAddress.findMany({ where: { address: { in: broken.map((b) => b.address) } } })).map((r) => r.id);
      for (const id of ids) expect(await app.deps.boss!.findJobs(CHAIN_SYNC_ADDRESS_QUEUE, { data: { depositAddressId: id } })).toEqual([]);
    },
  );
});
