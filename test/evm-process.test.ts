import { afterAll, expect, test } from 'vitest';
import { PgBoss } from 'pg-boss';
import { erc20Abi, type Hex } from 'viem';
import { createPrisma } from '../src/db/prisma';
import { JOB_SCHEMA } from '../src/db/roles';
import { createApiKey, createOperator, signUpMember } from './harness';
import { deployTestToken, startAnvil, type EvmNode } from './evm-node';
import { cloneTemplateDatabase, pollUntil, serviceEnv, startService, type ServiceProcess } from './process-harness';

/**
 * Issue 18 point 3, as `npm start` runs it: two service processes on one database, each a worker
 * (JOBS=on) configured with the same EVM network, follow a real node (anvil) by themselves: the
 * `evm.watch` job (at most one active per network across the processes), then `chain.sync`, credit
 * a payment; one process killed (SIGKILL) mid-way, the other goes on.
 */
const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

test('two worker processes follow an EVM network with one watcher, credit a token payment, and survive one of them crashing; a worker without the settings fails the chain.sync (retried) instead of completing it', async () => {
  const node: EvmNode = await startAnvil();
  cleanups.push(() => node.stop());
  const token = await deployTestToken(node, node.accounts[0]!);
  const url = await cloneTemplateDatabase('evm');
  const db = createPrisma(url, 2);
  cleanups.push(() => db.$disconnect());
  const operator = (await createOperator({ deps: { db } })).headers;

  // The catalog, created through a first process (without EVM settings), stopped before the configured ones start.
  const first = await startService({ databaseUrl: url, env: await serviceEnv() });
  const post = async (path: string, body: unknown) => {
    const r = await first.rest('POST', path, { headers: operator, body });
    expect(r.status, r.text).toBeLessThan(300);
    return r.headers.get('location')?.split('/').pop() ?? r.body?.id;
  };
  const assetId = await post('/v1/platform/assets', { code: `TUSD${Date.now() % 100000}`, name: 'Test USD', decimals: 6 });
  const networkId = await post('/v1/platform/networks', {
    name: `Anvil ${Date.now()}`,
    kind: 'EVM',
    environmentType: 'PRODUCTION',
    blockTimeSeconds: 1,
    requiredConfirmations: 2,
  });
  const tokenAn = await post('/v1/platform/asset-networks', { assetId, networkId, decimals: 6, contractReference: token, minimumDeposit: '1' });
  await post(`/v1/platform/asset-networks/${tokenAn}/enable`, {});
  // A worker without the network's settings never completes its chain.sync as if the chain showed
  // nothing: the job fails (logged at error, naming the setting to add) and is retried, until a
  // worker that has the settings takes it (below).
  const sender = new PgBoss({ connectionString: url, schema: JOB_SCHEMA, supervise: false, schedule: false, max: 1 });
  await sender.start();
  let syncJob: string | null;
  try {
    syncJob = await sender.send('chain.sync', { networkId }, { retryLimit: 20, retryDelay: 1 });
  } finally {
    await sender.stop({ graceful: false });
  }
  const failed = await first.waitForLog((l) => l.jobId === syncJob && l.queue === 'chain.sync', 30_000);
  expect(failed).toMatchObject({ level: 50, retriesExhausted: false });
  expect((failed.err as { message: string }).message).toMatch(new RegExp(`${networkId}.*EVM_NETWORKS`));
  const jobState = async () =>
    (await db.$queryRawUnsafe<{ state: string }[]>(`SELECT state::text AS state FROM "${JOB_SCHEMA}".job WHERE id = $1::uuid`, syncJob))[0]?.state;
  expect(await jobState()).not.toBe('completed');
  await first.stop();

  const env = await serviceEnv({
    EVM_NETWORKS: JSON.stringify({ [networkId]: { rpcUrl: node.rpcUrl, chainId: node.chainId, pollIntervalMs: 200, tokens: { [tokenAn]: token } } }),
  });
  const procs: ServiceProcess[] = [];
  for (let i = 0; i < 2; i++) {
    const p = await startService({ databaseUrl: url, env });
    cleanups.push(() => p.stop());
    procs.push(p);
  }
  const [a, b] = procs as [ServiceProcess, ServiceProcess];
  // Sample the watch jobs while the test runs: never two active for the network.
  let maxActive = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const [row] = await db.$queryRawUnsafe<{ n: bigint }[]>(
        `SELECT count(*) AS n FROM "${JOB_SCHEMA}".job WHERE name = 'evm.watch' AND state = 'active' AND data->>'networkId' = $1`,
        networkId,
      );
      maxActive = Math.max(maxActive, Number(row!.n));
      await new Promise((r) => setTimeout(r, 25));
    }
  })();
  await pollUntil(
    'the watcher has a cursor',
    () => db.evmBlock.count({ where: { networkId } }),
    (n) => n > 0,
    30_000,
  );

  const pay = async (svc: ServiceProcess, amount: bigint) => {
    const member = await signUpMember(svc);
    const key = await createApiKey(svc, member, 'PRODUCTION');
    const wallet = await svc.rest('POST', `/v1/applications/${key.applicationId}/wallets`, {
      headers: key.headers,
      body: { networkId, custodyMode: 'CUSTODIAL' },
    });
    const acc = await svc.rest('POST', `/v1/organizations/${member.organizationId}/accounts`, { headers: key.headers, body: { name: 'Seller' } });
    const pi = await svc.rest('POST', `/v1/organizations/${member.organizationId}/payment-intents`, {
      headers: key.headers,
      body: {
        assetNetworkId: tokenAn,
        amount: amount.toString(),
        beneficiaryAccountId: acc.headers.get('location')!.split('/').pop(),
        walletId: wallet.headers.get('location')!.split('/').pop(),
        expiresInSeconds: 3600,
      },
    });
    expect(pi.status, pi.text).toBe(201);
    const path = pi.headers.get('location')!;
    const address = (await svc.rest('GET', path, { headers: key.headers })).body.address as Hex;
    await node.wallet(node.accounts[0]!).writeContract({
      address: token,
      abi: erc20Abi,
      functionName: 'transfer',
      args: [address, amount],
      account: node.accounts[0]!,
      chain: node.public.chain,
    });
    await node.mine(2);
    return pollUntil(
      'the intent succeeds',
      async () => (await svc.rest('GET', path, { headers: key.headers })).body.status as string,
      (s) => s === 'SUCCEEDED',
      60_000,
    );
  };

  // The chain.sync the unconfigured worker failed is completed by a configured one.
  await pollUntil('the failed chain.sync is taken by a configured worker', jobState, (state) => state === 'completed', 60_000);
  expect(await pay(a, 1_000_000n)).toBe('SUCCEEDED');
  await a.kill(); // a crash: b takes over the watch (the exclusive job of a dead worker expires, a new one is queued)
  expect(await pay(b, 2_000_000n)).toBe('SUCCEEDED');
  sampling = false;
  await sampler;
  expect(maxActive).toBeLessThanOrEqual(1);
  // Nothing lost or duplicated: every block the watcher holds chains onto the one before.
  const blocks = await db.evmBlock.findMany({ where: { networkId }, orderBy: { height: 'asc' } });
  for (let i = 1; i < blocks.length; i++) expect([blocks[i]!.height, blocks[i]!.parentHash]).toEqual([blocks[i - 1]!.height + 1, blocks[i - 1]!.hash]);
  expect(await db.evmTransfer.count({ where: { networkId } })).toBe(2);
  expect(b.logs().filter((l) => l.level >= 50)).toEqual([]);
}, 180_000);
