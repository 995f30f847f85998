import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createPrisma, type PrismaClient } from '../src/db/prisma';
import { sandboxMine, sandboxSend } from './money-helpers';
import { createIntent, moneyFixture } from './fixtures/deposits/testing';
import { cloneTemplateDatabase, pollUntil, serviceEnv, startService, type ServiceProcess } from './process-harness';

/**
 * Issue 22, session 17: mempool detection at a cadence in a burst of sandbox sends, through the
 * process as `npm start` runs it (JOBS on; no block producer, the blocks mined through REST). After a
 * chain.sync of sends alone the worker pauses (SANDBOX_DETECTION_PAUSE_MS, 30 s here, 250 ms by
 * default) before it fetches again: the sends made meanwhile wait, and are detected together by one
 * sync; a block's job, once it waits in the queue, ends the pause, and that sync detects and confirms them.
 */
let svc: ServiceProcess;
let db: PrismaClient;
const PAUSE_MS = 30_000;

beforeAll(async () => {
  const databaseUrl = await cloneTemplateDatabase('cad');
  db = createPrisma(databaseUrl, 2);
  svc = await startService({ databaseUrl, env: await serviceEnv({ SANDBOX_BLOCK_INTERVAL_MS: '0', SANDBOX_DETECTION_PAUSE_MS: String(PAUSE_MS) }) });
});
afterAll(async () => {
  await svc?.stop();
  await db?.$disconnect();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('npm start: detection of a burst of sandbox sends', () => {
  test('the sends made during the pause wait for one sync; a block ends the pause and its sync detects and confirms them', async () => {
    const app = { rest: svc.rest, deps: { db } };
    const f = await moneyFixture(app, { requiredConfirmations: 1 });
    const { catalog } = f;
    const intents: { id: string; address: string }[] = [];
    for (let i = 0; i < 4; i++) intents.push(await createIntent(app, f));
    const statusOf = async (id: string) => (await svc.rest('GET', `/v1/payment-intents/${id}`, { headers: f.apiKeyHeaders })).body.status as string;
    const send = (address: string) => sandboxSend(app, f.apiKeyHeaders, { address, amount: 1_000_000n, assetNetworkId: catalog.assetNetworkId });
    const [first, ...burst] = intents;

    // A send to an address that is no deposit's: its sync detects nothing, and starts no pause.
    await send(`0x${'ab'.repeat(20)}`);
    await pollUntil(
      'the sync of a send to no deposit address',
      async () =>
        (
          await db.$queryRaw<
            { n: number }[]
          >`SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'chain.sync' AND data->>'networkId' = ${catalog.networkId} AND state = 'completed'`
        )[0]!.n,
      (n) => n === 1,
      15_000,
    );
    // The first send is detected at once (well before a pause of 30 s would end); its sync, of sends
    // alone, detected a deposit: the pause starts.
    await send(first!.address);
    await pollUntil(
      'the first send detected',
      () => statusOf(first!.id),
      (s) => s === 'PROCESSING',
      15_000,
    );
    // The burst: three sends, each its own send group and chain.sync job, 150 ms apart.
    for (const x of burst) {
      await send(x.address);
      await sleep(150);
    }
    await sleep(1_000);
    // Paused: none of them is detected yet, and their jobs are still waiting to be fetched.
    for (const x of burst) expect(await statusOf(x.id)).toBe('AWAITING_PAYMENT');
    const waiting = await db.$queryRaw<{ state: string; addresses: string[] }[]>`
      SELECT state::text, ARRAY(SELECT jsonb_array_elements_text(data->'addresses')) AS addresses
        FROM pgboss.job WHERE name = 'chain.sync' AND data->>'networkId' = ${catalog.networkId} AND data ? 'addresses' AND state = 'created'`;
    expect(waiting.flatMap((j) => j.addresses).sort()).toEqual(burst.map((x) => x.address).sort());

    // A block (its job in the queue) ends the pause: well before its 30 s, every intent is detected and
    // confirmed (one confirmation), and the burst's jobs were fetched together with the block's.
    await sandboxMine(app, f.apiKeyHeaders, catalog.networkId);
    for (const x of intents)
      await pollUntil(
        `intent ${x.id} SUCCEEDED`,
        () => statusOf(x.id),
        (s) => s === 'SUCCEEDED',
        PAUSE_MS / 2,
      );
    // The burst's three jobs and the block's: one fetch (one started_on), after the first sends'.
    const fetched = await db.$queryRaw<{ startedOn: Date; jobs: number; block: number }[]>`
      SELECT started_on AS "startedOn", count(*)::int AS jobs, count(*) FILTER (WHERE NOT data ? 'addresses')::int AS block FROM pgboss.job
       WHERE name = 'chain.sync' AND data->>'networkId' = ${catalog.networkId} AND NOT coalesce(data->'addresses' ?| ${[first!.address, `0x${'ab'.repeat(20)}`]}::text[], false)
       GROUP BY started_on`;
    expect(fetched).toEqual([{ startedOn: expect.any(Date), jobs: 4, block: 1 }]);
    const credited = await db.deposit.findMany({ where: { paymentIntentId: { in: intents.map((x) => x.id) } }, select: { status: true, creditedTo: true } });
    expect(credited).toEqual(intents.map(() => ({ status: 'CONFIRMED', creditedTo: 'ESCROW' })));
  }, 60_000);

  test('SIGTERM during a pause: the handler returns at once, its jobs complete, none is handed back', async () => {
    // A service of its own (SHUTDOWN_TIMEOUT_MS 5 s, well under the pause): no block since its start.
    const own = await startService({
      databaseUrl: await cloneTemplateDatabase('cad'),
      env: await serviceEnv({ SANDBOX_BLOCK_INTERVAL_MS: '0', SANDBOX_DETECTION_PAUSE_MS: String(PAUSE_MS), SHUTDOWN_TIMEOUT_MS: '5000' }),
    });
    const ownDb = createPrisma(own.databaseUrl, 2);
    try {
      const app = { rest: own.rest, deps: { db: ownDb } };
      const f = await moneyFixture(app, { requiredConfirmations: 1 });
      const { catalog } = f;
      const intent = await createIntent(app, f);
      await sandboxSend(app, f.apiKeyHeaders, { address: intent.address, amount: 1_000_000n, assetNetworkId: catalog.assetNetworkId });
      await pollUntil(
        'the send detected',
        async () => (await own.rest('GET', `/v1/payment-intents/${intent.id}`, { headers: f.apiKeyHeaders })).body.status,
        (s) => s === 'PROCESSING',
        15_000,
      );
      // The sync is done and its handler pauses, holding its job (active) until the pause ends.
      const jobs = () =>
        ownDb.$queryRaw<{ state: string }[]>`SELECT state::text FROM pgboss.job WHERE name = 'chain.sync' AND data->>'networkId' = ${catalog.networkId}`;
      expect((await jobs()).map((j) => j.state)).toEqual(['active']);
      expect(await own.stop(15_000)).toEqual({ code: 0, signal: null });
      // Stopped before its shutdown timeout would hand the job back (retry): completed.
      expect((await jobs()).map((j) => j.state)).toEqual(['completed']);
      expect(own.logs().some((l) => String(l.msg).includes('handed back'))).toBe(false);
    } finally {
      await own.stop().catch(() => {});
      await ownDb.$disconnect();
    }
  }, 60_000);
});
