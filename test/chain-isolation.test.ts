import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { randomBytes } from 'node:crypto';
import { createPrisma, type PrismaClient } from '../src/db/prisma';
import { tip } from '../src/chains/sandbox/chain';
import { plantSandboxTransfer } from './sandbox-plant';
import { setupIntegrator, setupSandboxCatalog, sandboxSend } from './money-helpers';
import { cloneTemplateDatabase, ERROR_LEVEL, pollUntil, serviceEnv, startService, type LogLine, type ServiceProcess } from './process-harness';

/**
 * Issue 26, point 1, through the process as `npm start` runs it (JOBS on, the sandbox block producer
 * every 300 ms): nothing here calls a job function. Two sandbox networks of two organizations, A and
 * B. On A, one deposit address is poisoned (an operator's mistake written straight into the sandbox
 * chain: two transfers of 6·10^77 in a block A already mined, beyond any amount); then A's block
 * production itself is poisoned (two pending transfers whose sum no balance can hold). Meanwhile B
 * produces blocks and confirms its deposits, A's healthy address (same sync chunk) confirms, no
 * chain.sync job fails, and the poisoned address is retried alone and listed as stuck (CHAIN_SYNC)
 * on REST, GraphQL and /readyz.
 */
let svc: ServiceProcess;
let db: PrismaClient;

beforeAll(async () => {
  const databaseUrl = await cloneTemplateDatabase('iso');
  db = createPrisma(databaseUrl, 2);
  // The smallest stuck threshold the configuration takes, for /readyz's count.
  svc = await startService({ databaseUrl, env: await serviceEnv({ STUCK_AFTER_SECONDS: '10' }) });
});
afterAll(async () => {
  await svc?.stop();
  await db?.$disconnect();
});

const DEADLINE = 30_000;
const BEYOND = 6n * 10n ** 77n; // above 2^256 - 1; two of them overflow NUMERIC(78,0)
const idOf = (r: { headers: Headers }) => r.headers.get('location')!.split('/').pop()!;
type Integrator = Awaited<ReturnType<typeof setupIntegrator>>;
type Catalog = Awaited<ReturnType<typeof setupSandboxCatalog>>;
type Stuck = {
  kind: string;
  id: string;
  organizationId: string;
  status: string;
  ageSeconds: number;
  jobState: string | null;
  lastError: string | null;
  networkId: string | null;
  address: string | null;
};

/** A payment intent of 1,000,000 base units (with a beneficiary account of its own), read back. */
async function intent(f: Integrator, c: Catalog): Promise<{ id: string; address: string; depositAddressId: string }> {
  const acc = await svc.rest('POST', `/v1/organizations/${f.organizationId}/accounts`, { body: { name: 'Seller' }, headers: f.apiKeyHeaders });
  expect(acc.status, acc.text).toBe(201);
  const pi = await svc.rest('POST', `/v1/organizations/${f.organizationId}/payment-intents`, {
    headers: f.apiKeyHeaders,
    body: { assetNetworkId: c.assetNetworkId, amount: '1000000', beneficiaryAccountId: idOf(acc), walletId: f.walletId },
  });
  expect(pi.status, pi.text).toBe(201);
  return (await svc.rest('GET', `/v1/payment-intents/${idOf(pi)}`, { headers: f.apiKeyHeaders })).body as {
    id: string;
    address: string;
    depositAddressId: string;
  };
}

const succeeded = (f: Integrator, id: string) =>
  pollUntil(
    `intent ${id} SUCCEEDED`,
    async () => (await svc.rest('GET', `/v1/payment-intents/${id}`, { headers: f.apiKeyHeaders })).body,
    (b) => b.status === 'SUCCEEDED',
    DEADLINE,
  );

/** A transfer planted on network `c` (test/sandbox-plant.ts): in its tip block, or pending from the organization's faucet. */
const plant = (c: Catalog, address: string, amount: bigint, at: 'tip' | { faucetOf: string }) =>
  plantSandboxTransfer(db, { networkId: c.networkId, assetNetworkId: c.assetNetworkId, address }, amount, at === 'tip' ? 'tip' : null, at === 'tip' ? {} : at);

describe('npm start: one sandbox network poisoned', () => {
  test(
    'the other network produces blocks and confirms deposits; the healthy address of the poisoned network ' +
      'confirms; the poisoned address is retried alone and listed as stuck; no chain.sync job fails',
    async () => {
      const app = { rest: svc.rest, deps: { db } };
      const catA = await setupSandboxCatalog(app, { requiredConfirmations: 2 });
      const catB = await setupSandboxCatalog(app, { requiredConfirmations: 2 });
      const fa = await setupIntegrator(app, catA);
      const fb = await setupIntegrator(app, catB);
      const op = catA.operator.headers;
      const healthyA = await intent(fa, catA);
      const brokenA = await intent(fa, catA);
      const intentB = await intent(fb, catB);

      // 1. One address of A poisoned, in a block A already mined (the producer goes on mining A).
      await pollUntil(
        'A mined a block',
        () => tip(db, catA.networkId),
        (x) => x.hash !== null && x.height >= 1,
        DEADLINE,
      );
      await plant(catA, brokenA.address, BEYOND, 'tip');
      await plant(catA, brokenA.address, BEYOND, 'tip');
      await sandboxSend(app, fa.apiKeyHeaders, { address: healthyA.address, amount: 1_000_000n, assetNetworkId: catA.assetNetworkId });
      await sandboxSend(app, fb.apiKeyHeaders, { address: intentB.address, amount: 1_000_000n, assetNetworkId: catB.assetNetworkId });
      // The healthy address of the same network (and sync chunk) confirms, and so does B.
      expect(await succeeded(fa, healthyA.id)).toMatchObject({ status: 'SUCCEEDED', confirmedAmount: '1000000' });
      expect(await succeeded(fb, intentB.id)).toMatchObject({ status: 'SUCCEEDED', confirmedAmount: '1000000' });

      // The poisoned address: isolated (logged at error), retried alone by its own job, listed as stuck with its error.
      const isolatedLine = await svc.waitForLog(
        (l) => l.level >= ERROR_LEVEL && l.depositAddressId === brokenA.depositAddressId && String(l.msg).startsWith('chain.sync: deposit address'),
        DEADLINE,
      );
      expect(isolatedLine).toMatchObject({
        networkId: catA.networkId,
        address: brokenA.address,
        error: expect.stringMatching(/2\^256 - 1|AMOUNT_OUT_OF_RANGE/),
      });
      const listed = await pollUntil(
        'the poisoned address listed with its error',
        async () => {
          const r = await svc.rest('GET', '/v1/admin/stuck-operations?olderThanSeconds=0', { headers: op });
          expect(r.status, r.text).toBe(200);
          return (r.body as Stuck[]).filter((s) => s.kind === 'CHAIN_SYNC');
        },
        (rows) => rows.some((s) => s.lastError !== null),
        DEADLINE,
        250,
      );
      expect(listed).toEqual([
        expect.objectContaining({
          kind: 'CHAIN_SYNC',
          id: brokenA.depositAddressId,
          organizationId: fa.organizationId,
          status: 'FAILING',
          networkId: catA.networkId,
          address: brokenA.address,
          jobState: expect.stringMatching(/^(retry|active|created)$/),
          lastError: expect.stringMatching(/2\^256 - 1|AMOUNT_OUT_OF_RANGE/),
        }),
      ]);
      const gql = await svc.rest('POST', '/graphql', {
        headers: op,
        body: { query: '{ stuckOperations(olderThanSeconds: 0) { kind id networkId address status } }' },
      });
      expect(gql.status, gql.text).toBe(200);
      expect((gql.body.data as { stuckOperations: Stuck[] }).stuckOperations).toContainEqual({
        kind: 'CHAIN_SYNC',
        id: brokenA.depositAddressId,
        networkId: catA.networkId,
        address: brokenA.address,
        status: 'FAILING',
      });
      // Never two live retry jobs for the address, whatever the number of blocks since.
      const live = await db.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'chain.sync.address' AND data->>'depositAddressId' = ${brokenA.depositAddressId} AND state IN ('created', 'retry', 'active')`;
      expect(live[0]!.n).toBe(1);
      // The poisoned intent is readable and unchanged.
      const broken = await svc.rest('GET', `/v1/payment-intents/${brokenA.id}`, { headers: fa.apiKeyHeaders });
      expect(broken.status).toBe(200);
      expect(broken.body).toMatchObject({ status: 'AWAITING_PAYMENT', confirmedAmount: '0' });

      // 2. A's block production poisoned too: two pending transfers no balance can hold.
      const victim = '0x' + randomBytes(20).toString('hex');
      await plant(catA, victim, BEYOND, { faucetOf: fa.organizationId });
      await plant(catA, victim, BEYOND, { faucetOf: fa.organizationId });
      await svc.waitForLog(
        (l) => l.level >= ERROR_LEVEL && l.networkId === catA.networkId && String(l.msg).startsWith('sandbox block production failed'),
        DEADLINE,
      );
      const heightA = (await tip(db, catA.networkId)).height;
      const heightB = (await tip(db, catB.networkId)).height;
      // B goes on: it produces blocks and confirms a new deposit.
      const intentB2 = await intent(fb, catB);
      await sandboxSend(app, fb.apiKeyHeaders, { address: intentB2.address, amount: 1_000_000n, assetNetworkId: catB.assetNetworkId });
      expect(await succeeded(fb, intentB2.id)).toMatchObject({ status: 'SUCCEEDED', confirmedAmount: '1000000' });
      expect((await tip(db, catB.networkId)).height).toBeGreaterThan(heightB + 1);
      expect((await tip(db, catA.networkId)).height).toBe(heightA);

      // /readyz counts the stuck address once it is older than STUCK_AFTER_SECONDS (10 s; the count is cached 10 s).
      await pollUntil(
        'readyz counts it',
        async () => (await svc.rest('GET', '/readyz')).body,
        (b) => Number(b.stuckOperations) >= 1,
        30_000,
        500,
      );

      // No chain.sync job failed (neither network's); the only error lines are the poisoned address's and A's production.
      const failed = await db.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'chain.sync' AND state IN ('failed', 'retry')`;
      expect(failed[0]!.n).toBe(0);
      const errors = svc.logs().filter((l: LogLine) => l.level >= ERROR_LEVEL);
      const expected = (l: LogLine) =>
        (l.networkId === catA.networkId && String(l.msg).startsWith('sandbox block production failed')) ||
        (l.depositAddressId === brokenA.depositAddressId && String(l.msg).startsWith('chain.sync: deposit address')) ||
        (l.queue === 'chain.sync.address' && String(l.msg).startsWith('job failed: chain.sync.address')) ||
        (l.kind === 'CHAIN_SYNC' && l.id === brokenA.depositAddressId && String(l.msg).startsWith('stuck operation'));
      expect(errors.filter((l) => !expected(l))).toEqual([]);
    },
    90_000,
  );
});
