import type { PgBoss } from 'pg-boss';
import type { Logger } from 'pino';
import { createPublicClient, parseAbiItem, TransactionNotFoundError, webSocket, type Block, type Hex, type Log, type PublicClient } from 'viem';
import type { Db, PrismaClient } from '../../db/prisma';
import { monotonicUuidv7 } from '../../ids';
import { EVM_WATCH_QUEUE, sendChainSync, type EvmWatchJob } from '../../kernel/queues';
import { configuredEvmNetworks, requireEvmSettings } from './config';
import { checkedClientOf } from './client';
import { metrics } from '../../kernel/telemetry';
import { assetNetworksOf, cursorOf, lockEvmNetwork } from './index-store';

/**
 * The watcher of an EVM network (issue 18; docs/chains.md): follows the node block by block from a
 * cursor kept in the database (EvmBlock), and stores the transfers to watched addresses it sees
 * (EvmTransfer) with the blocks, in one transaction that also queues `chain.sync` — as every
 * sandbox chain change does. A reorganization is found by hash: the cursor's block is no longer the
 * node's block at that height, or a new block's parent is not the block before it. The watcher then
 * rewinds to the highest block it holds that the node still has (the common ancestor), marks the
 * transfers of the blocks above ORPHANED (MINED again when the new branch includes them), and
 * follows the new branch. Restart-safe: the cursor, the blocks and the transfers commit together, a
 * step that fails commits nothing, and a step repeated stores the same rows (unique per network,
 * transaction and log).
 */
const TRANSFER = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');
/** Watched addresses per eth_getLogs call (the `to` topic list). */
const TOPIC_CHUNK = 1000;

export interface WatchDeps {
  db: PrismaClient;
  boss: PgBoss | null;
  log?: Logger;
}

export interface StepResult {
  /** Blocks stored by this step (from..to), or null when nothing new. */
  from: number | null;
  to: number | null;
  head: number;
  transfers: number;
  /** The height rewound to, when the step found a reorganization. */
  rewoundTo: number | null;
  /** Orphaned transfers found unknown to the node (now DROPPED). */
  dropped: number;
}

export class DeepReorg extends Error {
  constructor(networkId: string, depth: number) {
    super(
      `EVM network ${networkId}: a reorganization deeper than the blocks kept (finalityDepth ${depth}); the watcher stops until an operator looks (docs/chains.md)`,
    );
    this.name = 'DeepReorg';
  }
}

/** One step: a reorganization check, then at most `blockRange` new blocks. */
export async function watchStep(deps: WatchDeps, networkId: string): Promise<StepResult> {
  const s = requireEvmSettings(networkId);
  const client = await checkedClientOf(networkId);
  const head = Number(await client.getBlockNumber());
  const cursor = await cursorOf(deps.db, networkId);
  const result: StepResult = { from: null, to: null, head, transfers: 0, rewoundTo: null, dropped: 0 };
  if (cursor) {
    const at = cursor.height <= head ? await blockAt(client, cursor.height) : null;
    if (!at || at.hash !== cursor.hash) {
      result.rewoundTo = await rewind(deps, client, networkId, cursor, head, s.finalityDepth);
      return result;
    }
  }
  result.dropped = await settleOrphans(deps, client, networkId);
  const from = cursor ? cursor.height + 1 : Math.min(s.startBlock ?? head, head);
  const to = Math.min(head, from + s.blockRange - 1);
  if (from > to) return result;
  const blocks = await Promise.all(range(from, to).map((n) => client.getBlock({ blockNumber: BigInt(n), includeTransactions: true })));
  // The blocks must chain from the cursor; otherwise the chain moved while we read: the next step sees it.
  for (let i = 0; i < blocks.length; i++) {
    const parent = i === 0 ? cursor?.hash : blocks[i - 1]!.hash;
    if (parent !== undefined && blocks[i]!.parentHash !== parent) return result;
  }
  const hashes = new Map(blocks.map((b) => [Number(b.number), b.hash as string]));
  const watched = new Set((await deps.db.evmWatchedAddress.findMany({ where: { networkId }, select: { address: true } })).map((w) => w.address));
  const { tokens, native } = await assetNetworksOf(deps.db, networkId);
  const found: FoundTransfer[] = [];
  if (watched.size && tokens.size) {
    const list = [...watched] as Hex[];
    for (let i = 0; i < list.length; i += TOPIC_CHUNK) {
      const logs = await client.getLogs({
        address: [...tokens.keys()] as Hex[],
        event: TRANSFER,
        args: { to: list.slice(i, i + TOPIC_CHUNK) },
        fromBlock: BigInt(from),
        toBlock: BigInt(to),
      });
      for (const l of logs as Log<bigint, number, false, typeof TRANSFER>[]) {
        if (l.removed || hashes.get(Number(l.blockNumber)) !== l.blockHash) return result; // the chain moved: next step
        const toAddress = (l.args.to as string).toLowerCase();
        if (!watched.has(toAddress) || !l.args.value) continue;
        found.push({
          assetNetworkId: tokens.get(l.address.toLowerCase())!,
          txHash: l.transactionHash!.toLowerCase(),
          logIndex: l.logIndex!,
          fromAddress: (l.args.from as string).toLowerCase(),
          toAddress,
          amount: l.args.value,
          blockHeight: Number(l.blockNumber),
          blockHash: l.blockHash!,
        });
      }
    }
  }
  if (watched.size && native) {
    const candidates = blocks.flatMap((b) =>
      (b.transactions as Exclude<Block<bigint, true>['transactions'][number], string>[]).filter((t) => t.to && t.value > 0n && watched.has(t.to.toLowerCase())),
    );
    const receipts = await Promise.all(candidates.map((t) => client.getTransactionReceipt({ hash: t.hash })));
    candidates.forEach((t, i) => {
      const r = receipts[i]!;
      if (r.status !== 'success' || r.blockHash !== hashes.get(Number(r.blockNumber))) return; // reverted: no value moved
      found.push({
        assetNetworkId: native,
        txHash: t.hash.toLowerCase(),
        logIndex: -1,
        fromAddress: t.from.toLowerCase(),
        toAddress: t.to!.toLowerCase(),
        amount: t.value,
        blockHeight: Number(t.blockNumber),
        blockHash: t.blockHash!,
      });
    });
  }
  const stored = await deps.db.$transaction(async (tx) => {
    await lockEvmNetwork(tx, networkId);
    const now = await cursorOf(tx, networkId);
    if ((now?.height ?? null) !== (cursor?.height ?? null) || (now?.hash ?? null) !== (cursor?.hash ?? null)) return false; // another watcher stepped
    await tx.evmBlock.createMany({ data: blocks.map((b) => ({ networkId, height: Number(b.number), hash: b.hash!, parentHash: b.parentHash })) });
    await storeTransfers(tx, networkId, found);
    await tx.evmBlock.deleteMany({ where: { networkId, height: { lt: to - s.finalityDepth } } });
    await sendChainSync(tx, deps.boss, networkId);
    return true;
  });
  if (!stored) return result;
  return { ...result, from, to, transfers: found.length };
}

/**
 * The step's transfers in one statement (a block range holds hundreds: one upsert each made the
 * transaction the watcher's bottleneck, docs/benchmarks.md): new ones inserted MINED, ones already
 * held (a repeated step, or ORPHANED / DROPPED and now in a block again) updated to MINED in their block.
 */
async function storeTransfers(tx: Db, networkId: string, found: FoundTransfer[]): Promise<void> {
  if (!found.length) return;
  const rows = [...new Map(found.map((f) => [`${f.txHash}:${f.logIndex}`, f])).values()];
  await tx.$executeRaw`
    INSERT INTO "EvmTransfer" ("id", "networkId", "assetNetworkId", "txHash", "logIndex", "fromAddress", "toAddress", "amount", "status", "blockHeight", "blockHash")
    SELECT t.id, ${networkId}::uuid, t.an, t.tx, t.li, t.fa, t.ta, t.amount, 'MINED', t.bh, t.bhash
    FROM unnest(
      ${rows.map(() => monotonicUuidv7())}::uuid[], ${rows.map((f) => f.assetNetworkId)}::uuid[], ${rows.map((f) => f.txHash)}::text[],
      ${rows.map((f) => f.logIndex)}::int[], ${rows.map((f) => f.fromAddress)}::text[], ${rows.map((f) => f.toAddress)}::text[],
      ${rows.map((f) => f.amount.toString())}::numeric[], ${rows.map((f) => f.blockHeight)}::int[], ${rows.map((f) => f.blockHash)}::text[]
    ) AS t(id, an, tx, li, fa, ta, amount, bh, bhash)
    ON CONFLICT ("networkId", "txHash", "logIndex") DO UPDATE SET
      "assetNetworkId" = EXCLUDED."assetNetworkId", "fromAddress" = EXCLUDED."fromAddress", "toAddress" = EXCLUDED."toAddress",
      "amount" = EXCLUDED."amount", "status" = 'MINED', "blockHeight" = EXCLUDED."blockHeight", "blockHash" = EXCLUDED."blockHash"`;
}

interface FoundTransfer {
  assetNetworkId: string;
  txHash: string;
  logIndex: number;
  fromAddress: string;
  toAddress: string;
  amount: bigint;
  blockHeight: number;
  blockHash: string;
}

/** Steps until the cursor is at the head (or `maxSteps`): what a watch job does. */
export async function watchNetwork(
  deps: WatchDeps,
  networkId: string,
  maxSteps = 50,
): Promise<{ steps: number; head: number; cursor: number | null; transfers: number; reorgs: number }> {
  let transfers = 0;
  let reorgs = 0;
  let last: StepResult | null = null;
  let steps = 0;
  for (; steps < maxSteps; steps++) {
    last = await watchStep(deps, networkId);
    transfers += last.transfers;
    if (last.rewoundTo !== null) {
      reorgs++;
      deps.log?.warn({ networkId, rewoundTo: last.rewoundTo }, 'EVM watcher: reorganization, rewound');
      continue;
    }
    if (last.to === null || last.to >= last.head) break;
  }
  const cursor = await cursorOf(deps.db, networkId);
  if (last && cursor) metrics.chainLag.set({ network: networkId }, Math.max(0, last.head - cursor.height));
  return { steps: steps + 1, head: last?.head ?? 0, cursor: cursor?.height ?? null, transfers, reorgs };
}

async function blockAt(client: PublicClient, height: number): Promise<{ hash: string } | null> {
  try {
    const b = await client.getBlock({ blockNumber: BigInt(height) });
    return { hash: b.hash! };
  } catch {
    return null;
  }
}

/** Rewinds to the common ancestor (the highest stored block the node still has); answers its height. */
async function rewind(
  deps: WatchDeps,
  client: PublicClient,
  networkId: string,
  cursor: { height: number; hash: string },
  head: number,
  depth: number,
): Promise<number> {
  const stored = await deps.db.evmBlock.findMany({ where: { networkId }, orderBy: { height: 'desc' }, select: { height: true, hash: true } });
  let ancestor: number | null = null;
  for (const b of stored) {
    if (b.height > head) continue;
    const at = await blockAt(client, b.height);
    if (at?.hash === b.hash) {
      ancestor = b.height;
      break;
    }
  }
  if (ancestor === null) throw new DeepReorg(networkId, depth);
  await deps.db.$transaction(async (tx) => {
    await lockEvmNetwork(tx, networkId);
    const now = await cursorOf(tx, networkId);
    if (now?.height !== cursor.height || now.hash !== cursor.hash) return; // another watcher did it
    await tx.evmBlock.deleteMany({ where: { networkId, height: { gt: ancestor } } });
    await tx.evmTransfer.updateMany({ where: { networkId, blockHeight: { gt: ancestor } }, data: { status: 'ORPHANED', blockHeight: null, blockHash: null } });
    await sendChainSync(tx, deps.boss, networkId);
  });
  return ancestor;
}

/**
 * Transfers orphaned by a reorganization and not mined again: one the node still has (back in its
 * pool) stays ORPHANED, to be MINED again when a block includes it; one the node no longer knows
 * (dropped from the pool, or replaced by another transaction of its sender) becomes DROPPED, in one
 * transaction with a chain.sync. A DROPPED transfer seen in a block later is MINED again.
 */
async function settleOrphans(deps: WatchDeps, client: PublicClient, networkId: string): Promise<number> {
  const orphans = await deps.db.evmTransfer.findMany({ where: { networkId, status: 'ORPHANED' }, select: { txHash: true }, distinct: ['txHash'], take: 1000 });
  if (!orphans.length) return 0;
  const known = await Promise.all(
    orphans.map((o) =>
      client.getTransaction({ hash: o.txHash as Hex }).then(
        () => true,
        (e: unknown) => (e instanceof TransactionNotFoundError ? false : Promise.reject(e)),
      ),
    ),
  );
  const gone = orphans.filter((_, i) => !known[i]).map((o) => o.txHash);
  if (!gone.length) return 0;
  return deps.db.$transaction(async (tx) => {
    await lockEvmNetwork(tx, networkId);
    const r = await tx.evmTransfer.updateMany({ where: { networkId, status: 'ORPHANED', txHash: { in: gone } }, data: { status: 'DROPPED' } });
    if (r.count) await sendChainSync(tx, deps.boss, networkId);
    return r.count;
  });
}

const range = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => a + i);

// ------------------------------------------------------------------------------------------------
// The job: one live `evm.watch` job per network across processes

/** Queue options: `exclusive` with the network id as singleton key, so one job per network is queued or active at a time, whatever the number of processes. */
export const EVM_WATCH_QUEUE_OPTIONS = { policy: 'exclusive', retryLimit: 0, deleteAfterSeconds: 3600, notify: true } as const;

/** Asks for a watch of the network unless one is queued or running (answers whether a job was created). */
export async function sendEvmWatch(boss: PgBoss, networkId: string): Promise<boolean> {
  return (await boss.send(EVM_WATCH_QUEUE, { networkId } satisfies EvmWatchJob, { singletonKey: networkId })) !== null;
}

/**
 * Each worker process asks for a watch of every configured EVM network every pollIntervalMs (the
 * queue keeps one job per network alive at a time, so N processes make one watcher). A network with
 * a `wsUrl` also asks at each new head its node announces (eth_subscribe newHeads over a websocket),
 * so blocks are followed as they come; polling stays as the safety net (a dropped socket reconnects,
 * and a missed head is caught by the next poll). Stops with the job runner.
 */
export function startEvmWatchTicker(boss: PgBoss, log: Logger): { stop: () => void } {
  const last = new Map<string, number>();
  const ask = (id: string) => {
    last.set(id, Date.now());
    sendEvmWatch(boss, id).catch((err: unknown) => log.error({ err, networkId: id }, 'EVM watcher: could not queue a watch'));
  };
  const subscriptions = new Map<string, { url: string; unwatch: () => void }>();
  const subscribe = (id: string, url: string) => {
    const client = createPublicClient({ transport: webSocket(url, { reconnect: true, keepAlive: true }) });
    const unwatch = client.watchBlockNumber({
      emitMissed: false,
      onBlockNumber: () => ask(id),
      onError: (err) =>
        log.warn(
          { networkId: id, err: { message: err.message.split('\n')[0]!.replace(/wss?:\/\/\S+/g, '<wsUrl>') } },
          'EVM watcher: head subscription error (polling goes on)',
        ),
    });
    subscriptions.set(id, { url, unwatch });
  };
  const timer = setInterval(() => {
    const now = Date.now();
    for (const id of configuredEvmNetworks()) {
      const s = requireEvmSettings(id);
      if (s.wsUrl && subscriptions.get(id)?.url !== s.wsUrl) {
        subscriptions.get(id)?.unwatch();
        subscribe(id, s.wsUrl);
      }
      if (now - (last.get(id) ?? 0) >= s.pollIntervalMs) ask(id);
    }
  }, 50);
  timer.unref();
  return {
    stop: () => {
      clearInterval(timer);
      for (const sub of subscriptions.values()) sub.unwatch();
      subscriptions.clear();
    },
  };
}

/** Whether each configured EVM network's node answers (for /readyz): network id → null when it does, else why not (never its URL). */
export async function evmNodesReadiness(timeoutMs = 2000): Promise<Record<string, string | null>> {
  const out: Record<string, string | null> = {};
  await Promise.all(
    configuredEvmNetworks().map(async (id) => {
      try {
        const client = await Promise.race([
          checkedClientOf(id),
          new Promise<never>((_, no) => setTimeout(() => no(new Error('timed out')), timeoutMs).unref()),
        ]);
        await Promise.race([client.getBlockNumber(), new Promise<never>((_, no) => setTimeout(() => no(new Error('timed out')), timeoutMs).unref())]);
        out[id] = null;
      } catch (e) {
        const m = e as { shortMessage?: string; message?: string };
        out[id] = (m.shortMessage ?? m.message ?? 'unreachable')
          .split('\n')[0]!
          .replace(/https?:\/\/\S+/g, '<rpcUrl>')
          .slice(0, 200);
      }
    }),
  );
  return out;
}
