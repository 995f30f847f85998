// npm run bench:evm — the EVM watcher following a chain that produces a block a second, each with
// BENCH_EVM_TRANSFERS (20) ERC-20 transfers to watched addresses out of BENCH_EVM_WATCHED (10,000),
// for BENCH_EVM_BLOCKS (120) blocks: how far the cursor trails the head, and the process's resident
// memory after the warm-up and at the end. The service runs in this process as src/main.ts runs it
// (job runner on: the evm.watch ticker and job, chain.sync), on its own embedded PostgreSQL
// (.data/bench-evm, BENCH_EVM_PG_PORT 54381); the chain is anvil (--block-time 1). Issue 18, point 7.
import { mkdirSync, writeFileSync } from 'node:fs';
import { encodeFunctionData, erc20Abi, type Hex } from 'viem';
import { loadConfig } from '../src/config';
import { startEmbeddedPostgres } from '../src/db/embedded';
import { applyMigrations } from '../src/db/migrate';
import { SERVICE_ROLE } from '../src/db/roles';
import { createLogger } from '../src/app';
import { createDeps } from '../src/compose';
import { stopJobs } from '../jobs/index';
import { configureEvmNetworks, evmNetworksSchema } from '../src/chains/evm/config';
import { cursorOf } from '../src/chains/evm/index-store';
import { deployTestToken, startAnvil } from '../test/evm-node';
import { env, sleep } from './setup';

const BLOCKS = env('BENCH_EVM_BLOCKS', 120);
const PER_BLOCK = env('BENCH_EVM_TRANSFERS', 20);
const WATCHED = env('BENCH_EVM_WATCHED', 10_000);
const WARMUP = 10;
const DATA_DIR = process.env.BENCH_EVM_DATA_DIR ?? '.data/bench-evm';
const say = (m: string) => console.error(`[bench:evm] ${m}`);

const node = await startAnvil({ blockTime: 1 });
const pg = await startEmbeddedPostgres({ dataDir: DATA_DIR, port: env('BENCH_EVM_PG_PORT', 54381), database: `ftis_bench_evm_${Date.now()}` });
const cleanup: (() => Promise<unknown>)[] = [() => node.stop(), () => pg.stop()];
try {
  const token = await deployTestToken(node, node.accounts[0]!);
  await applyMigrations(pg.ownerUrl, { serviceRole: SERVICE_ROLE });
  const config = loadConfig({ NODE_ENV: 'production', LOG_LEVEL: 'silent', JOBS: 'on', DATA_DIR, SANDBOX_BLOCK_INTERVAL_MS: '0' });
  const deps = await createDeps(config, pg.serviceUrl, createLogger('silent'));
  cleanup.unshift(
    async () => stopJobs(deps.boss!, { graceful: true, timeout: 10_000 }),
    () => deps.db.$disconnect(),
  );
  const tag = Date.now().toString(36);
  const asset = await deps.db.asset.create({ data: { code: `B${tag}`.toUpperCase(), name: 'Bench USD', decimals: 6 } });
  const network = await deps.db.network.create({
    data: { name: `Bench ${tag}`, kind: 'EVM', environmentType: 'PRODUCTION', blockTimeSeconds: 1, requiredConfirmations: 2 },
  });
  const an = await deps.db.assetNetwork.create({
    data: { assetId: asset.id, networkId: network.id, decimals: 6, contractReference: token, minimumDeposit: 0, status: 'ENABLED' },
  });
  configureEvmNetworks(
    evmNetworksSchema.parse({ [network.id]: { rpcUrl: node.rpcUrl, chainId: node.chainId, pollIntervalMs: 250, blockRange: 20, tokens: { [an.id]: token } } }),
  );
  const watched = Array.from({ length: WATCHED }, (_, i) => `0x${(BigInt(i + 1) * 0x9e3779b97f4a7c15n).toString(16).padStart(40, '0').slice(-40)}`);
  for (let i = 0; i < watched.length; i += 1000)
    await deps.db.evmWatchedAddress.createMany({
      data: watched.slice(i, i + 1000).map((address) => ({ networkId: network.id, address })),
      skipDuplicates: true,
    });
  say(`anvil at ${node.rpcUrl}, ${WATCHED} watched addresses, ${PER_BLOCK} transfers a block, ${BLOCKS} blocks`);

  const from = node.accounts[0]!;
  let nonce = await node.public.getTransactionCount({ address: from.address, blockTag: 'pending' });
  const start = Number(await node.public.getBlockNumber());
  let sent = 0;
  const lags: number[] = [];
  let rssAfterWarmup = 0;
  let heapAfterWarmup = 0;
  // With --expose-gc (npm run bench:evm passes it): live heap after a full collection, beside the resident size.
  const gc = (globalThis as { gc?: () => void }).gc;
  let maxLag = 0;
  let lastBlock = start;
  // One block a second from anvil; PER_BLOCK transfers sent in each block's second.
  while (lastBlock - start < BLOCKS) {
    const head = Number(await node.public.getBlockNumber());
    if (head > lastBlock) {
      lastBlock = head;
      // Signed here (fixed fees well above anvil's), sent together: the block's 20 transfers in well under a second.
      const raws = await Promise.all(
        Array.from({ length: PER_BLOCK }, () => {
          const to = watched[(sent++ * 7919) % WATCHED] as Hex;
          return from.signTransaction({
            type: 'eip1559',
            chainId: node.chainId,
            nonce: nonce++,
            to: token,
            gas: 100_000n,
            maxFeePerGas: 50_000_000_000n,
            maxPriorityFeePerGas: 1_000_000_000n,
            data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, 1n] }),
          });
        }),
      );
      await Promise.all(raws.map((serializedTransaction) => node.public.sendRawTransaction({ serializedTransaction })));
    }
    const cursor = (await cursorOf(deps.db, network.id))?.height ?? start;
    const lag = Math.max(0, Number(await node.public.getBlockNumber()) - cursor);
    if (head - start > WARMUP) {
      lags.push(lag);
      maxLag = Math.max(maxLag, lag);
      if (!rssAfterWarmup) {
        gc?.();
        rssAfterWarmup = process.memoryUsage().rss;
        heapAfterWarmup = process.memoryUsage().heapUsed;
      }
    }
    await sleep(200);
  }
  // The last transfers mined, the watcher caught up.
  await sleep(3000);
  gc?.();
  const rssEnd = process.memoryUsage().rss;
  const heapEnd = process.memoryUsage().heapUsed;
  const cursor = (await cursorOf(deps.db, network.id))?.height ?? start;
  const head = Number(await node.public.getBlockNumber());
  const indexed = await deps.db.evmTransfer.count({ where: { networkId: network.id } });
  const mined = Number(await node.public.getTransactionCount({ address: from.address, blockTag: 'latest' })) - (nonce - sent);
  const result = {
    blocks: lastBlock - start,
    transfersPerBlock: PER_BLOCK,
    watched: WATCHED,
    transfersSent: sent,
    transfersMined: mined,
    transfersIndexed: indexed,
    lagMax: maxLag,
    lagMean: Number((lags.reduce((a, b) => a + b, 0) / Math.max(1, lags.length)).toFixed(2)),
    finalLag: head - cursor,
    rssAfterWarmupMiB: Math.round(rssAfterWarmup / 2 ** 20),
    rssEndMiB: Math.round(rssEnd / 2 ** 20),
    rssRatio: Number((rssEnd / rssAfterWarmup).toFixed(3)),
    heapAfterWarmupMiB: Math.round(heapAfterWarmup / 2 ** 20),
    heapEndMiB: Math.round(heapEnd / 2 ** 20),
    heapRatio: Number((heapEnd / heapAfterWarmup).toFixed(3)),
  };
  mkdirSync(DATA_DIR, { recursive: true });
  writeFileSync(`${DATA_DIR}/results.json`, JSON.stringify(result, null, 2));
  console.log(JSON.stringify(result, null, 2));
} finally {
  for (const c of cleanup) await c().catch((e: unknown) => say(`cleanup: ${String(e)}`));
}
