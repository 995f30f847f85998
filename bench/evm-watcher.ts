// npm run bench:evm — the EVM watcher (issue 18, point 7), two measurements (BENCH_EVM_MODE):
//
// `follow` (default): anvil producing a block a second (--block-time 1), each with
// BENCH_EVM_TRANSFERS (20) ERC-20 transfers to watched addresses out of BENCH_EVM_WATCHED (10,000),
// for BENCH_EVM_BLOCKS (120) blocks: how far the cursor trails the head, and the process's memory.
//
// `memory` (npm run bench:evm:memory): the same traffic mined as fast as the node allows (anvil
// --no-mining, each block's 20 transfers sent as one JSON-RPC batch of eth_sendTransaction from
// anvil's unlocked account, then anvil_mine), for BENCH_EVM_BLOCKS (10,000) blocks, the miner never
// more than BENCH_EVM_AHEAD (200) blocks ahead of the watcher's cursor (the watcher's steady state is
// measured, not a backlog), the watcher's block range the default 100 (BENCH_EVM_BLOCK_RANGE; 20 in
// `follow`). Resident set size and the JS heap (after a full GC) sampled every 500
// blocks the cursor passes; the target: RSS at the end ≤ 1.2x RSS after the first 1,000 blocks.
//
// The service runs in this process as src/main.ts runs it (job runner on: the evm.watch ticker and
// job, chain.sync), on its own embedded PostgreSQL (.data/bench-evm, BENCH_EVM_PG_PORT 54381).
import { mkdirSync, writeFileSync } from 'node:fs';
import { encodeFunctionData, erc20Abi, type Hex } from 'viem';
import { loadConfig } from '../src/config';
import { startEmbeddedPostgres } from '../src/db/embedded';
import { applyMigrations } from '../src/db/migrate';
import { SERVICE_ROLE } from '../src/db/roles';
import { createLogger } from '../src/app';
import { createDeps } from '../src/compose';
import { stopJobs } from '../jobs/index';
import type { PrismaClient } from '../src/db/prisma';
import { configureEvmNetworks, evmNetworksSchema } from '../src/chains/evm/config';
import { cursorOf } from '../src/chains/evm/index-store';
import { deployTestToken, startAnvil, type EvmNode } from '../test/evm-node';
import { env, sleep } from './setup';

const MEMORY = process.env.BENCH_EVM_MODE === 'memory';
const BLOCKS = env('BENCH_EVM_BLOCKS', MEMORY ? 10_000 : 120);
const PER_BLOCK = env('BENCH_EVM_TRANSFERS', 20);
const WATCHED = env('BENCH_EVM_WATCHED', 10_000);
const AHEAD = env('BENCH_EVM_AHEAD', 200);
const WARMUP = 10;
const DATA_DIR = process.env.BENCH_EVM_DATA_DIR ?? '.data/bench-evm';
const say = (m: string) => console.error(`[bench:evm] ${m}`);
// With --expose-gc (npm run bench:evm passes it): live heap after a full collection, beside the resident size.
const gc = (globalThis as { gc?: () => void }).gc;
const MiB = (n: number) => Math.round(n / 2 ** 20);
const memory = () => {
  gc?.();
  const m = process.memoryUsage();
  return { rss: m.rss, heap: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers };
};

const node = await startAnvil(MEMORY ? {} : { blockTime: 1 });
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
    evmNetworksSchema.parse({
      [network.id]: {
        rpcUrl: node.rpcUrl,
        chainId: node.chainId,
        pollIntervalMs: 250,
        blockRange: env('BENCH_EVM_BLOCK_RANGE', MEMORY ? 100 : 20),
        tokens: { [an.id]: token },
      },
    }),
  );
  const watched = Array.from({ length: WATCHED }, (_, i) => `0x${(BigInt(i + 1) * 0x9e3779b97f4a7c15n).toString(16).padStart(40, '0').slice(-40)}`);
  for (let i = 0; i < watched.length; i += 1000)
    await deps.db.evmWatchedAddress.createMany({
      data: watched.slice(i, i + 1000).map((address) => ({ networkId: network.id, address })),
      skipDuplicates: true,
    });
  say(`anvil at ${node.rpcUrl}, ${WATCHED} watched addresses, ${PER_BLOCK} transfers a block, ${BLOCKS} blocks (${MEMORY ? 'memory' : 'follow'})`);
  const result = MEMORY ? await memoryRun(deps.db, network.id, watched, token) : await followRun(deps.db, network.id, watched, token);
  mkdirSync(DATA_DIR, { recursive: true });
  writeFileSync(`${DATA_DIR}/results${MEMORY ? '-memory' : ''}.json`, JSON.stringify(result, null, 2));
  console.log(JSON.stringify(result, null, 2));
} finally {
  for (const c of cleanup) await c().catch((e: unknown) => say(`cleanup: ${String(e)}`));
}

/** One block a second from anvil; PER_BLOCK transfers sent in each block's second; the cursor's lag sampled every 200 ms. */
async function followRun(db: PrismaClient, networkId: string, watched: string[], token: Hex) {
  const from = node.accounts[0]!;
  let nonce = await node.public.getTransactionCount({ address: from.address, blockTag: 'pending' });
  const start = Number(await node.public.getBlockNumber());
  let sent = 0;
  const lags: number[] = [];
  let afterWarmup: ReturnType<typeof memory> | null = null;
  let maxLag = 0;
  let lastBlock = start;
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
    const cursor = (await cursorOf(db, networkId))?.height ?? start;
    const lag = Math.max(0, Number(await node.public.getBlockNumber()) - cursor);
    if (head - start > WARMUP) {
      lags.push(lag);
      maxLag = Math.max(maxLag, lag);
      afterWarmup ??= memory();
    }
    await sleep(200);
  }
  // The last transfers mined, the watcher caught up.
  await sleep(3000);
  const end = memory();
  const cursor = (await cursorOf(db, networkId))?.height ?? start;
  const head = Number(await node.public.getBlockNumber());
  const indexed = await db.evmTransfer.count({ where: { networkId } });
  const mined = Number(await node.public.getTransactionCount({ address: from.address, blockTag: 'latest' })) - (nonce - sent);
  return {
    mode: 'follow',
    blocks: lastBlock - start,
    transfersPerBlock: PER_BLOCK,
    watched: WATCHED,
    transfersSent: sent,
    transfersMined: mined,
    transfersIndexed: indexed,
    lagMax: maxLag,
    lagMean: Number((lags.reduce((a, b) => a + b, 0) / Math.max(1, lags.length)).toFixed(2)),
    finalLag: head - cursor,
    rssAfterWarmupMiB: MiB(afterWarmup!.rss),
    rssEndMiB: MiB(end.rss),
    rssRatio: Number((end.rss / afterWarmup!.rss).toFixed(3)),
    heapAfterWarmupMiB: MiB(afterWarmup!.heap),
    heapEndMiB: MiB(end.heap),
    heapRatio: Number((end.heap / afterWarmup!.heap).toFixed(3)),
  };
}

/** JSON-RPC batch straight to the node (no client state in the measuring loop); throws on an error answer. */
async function rpcBatch(n: EvmNode, calls: { method: string; params: unknown[] }[]): Promise<unknown[]> {
  const res = await fetch(n.rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(calls.map((c, id) => ({ jsonrpc: '2.0', id, ...c }))),
  });
  const out = (await res.json()) as { id: number; result?: unknown; error?: { message: string } }[];
  return out
    .sort((a, b) => a.id - b.id)
    .map((x) => {
      if (x.error) throw new Error(`${calls[x.id]!.method}: ${x.error.message}`);
      return x.result;
    });
}

/** Blocks mined as fast as anvil allows, PER_BLOCK transfers each, the miner at most AHEAD blocks before the cursor; memory sampled every 500 blocks. */
async function memoryRun(db: PrismaClient, networkId: string, watched: string[], token: Hex) {
  const from = node.accounts[0]!.address;
  const start = Number(await node.public.getBlockNumber());
  const cursorAt = async () => (await cursorOf(db, networkId))?.height ?? start;
  let sent = 0;
  const samples: { blocks: number; rssMiB: number; heapMiB: number; externalMiB: number; lag: number; seconds: number }[] = [];
  let nextSample = 500;
  let at1000: ReturnType<typeof memory> | null = null;
  const t0 = performance.now();
  const sample = async (cursor: number, head: number) => {
    while (cursor - start >= nextSample) {
      const m = memory();
      if (nextSample === 1000) at1000 = m;
      samples.push({
        blocks: nextSample,
        rssMiB: MiB(m.rss),
        heapMiB: MiB(m.heap),
        externalMiB: MiB(m.external),
        lag: head - cursor,
        seconds: Math.round((performance.now() - t0) / 1000),
      });
      say(
        `cursor +${cursor - start} (head +${head - start}): rss ${MiB(m.rss)} MiB, heap ${MiB(m.heap)} MiB, ${Math.round((performance.now() - t0) / 1000)} s`,
      );
      nextSample += 500;
    }
  };
  let mined = 0;
  let cursor = start;
  while (mined < BLOCKS) {
    if (mined - (cursor - start) >= AHEAD) {
      await sleep(20);
      cursor = await cursorAt();
      await sample(cursor, start + mined);
      continue;
    }
    await rpcBatch(
      node,
      Array.from({ length: PER_BLOCK }, () => ({
        method: 'eth_sendTransaction',
        params: [
          {
            from,
            to: token,
            gas: '0x186a0',
            data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [watched[(sent++ * 7919) % WATCHED] as Hex, 1n] }),
          },
        ],
      })),
    );
    await rpcBatch(node, [{ method: 'anvil_mine', params: ['0x1'] }]);
    mined++;
    if (mined % 20 === 0) {
      cursor = await cursorAt();
      await sample(cursor, start + mined);
    }
  }
  while ((cursor = await cursorAt()) < start + mined) await sleep(50);
  await sample(cursor, start + mined);
  const end = memory();
  const indexed = await db.evmTransfer.count({ where: { networkId } });
  const first = at1000 ?? end;
  return {
    mode: 'memory',
    blocks: mined,
    transfersPerBlock: PER_BLOCK,
    watched: WATCHED,
    transfersSent: sent,
    transfersIndexed: indexed,
    seconds: Math.round((performance.now() - t0) / 1000),
    blocksPerSecond: Number((mined / ((performance.now() - t0) / 1000)).toFixed(1)),
    rssAfter1000MiB: MiB(first.rss),
    rssEndMiB: MiB(end.rss),
    rssRatio: Number((end.rss / first.rss).toFixed(3)),
    heapAfter1000MiB: MiB(first.heap),
    heapEndMiB: MiB(end.heap),
    heapRatio: Number((end.heap / first.heap).toFixed(3)),
    samples,
  };
}
