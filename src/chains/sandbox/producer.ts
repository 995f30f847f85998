import type { PgBoss } from 'pg-boss';
import type { Logger } from 'pino';
import type { PrismaClient } from '../../db/prisma';
import type { Clock } from '../../clock';
import { lockNetwork, mineBlocks } from './chain';
import { workEach } from '../../../jobs/work';

/**
 * Block production: about one block per SANDBOX network every SANDBOX_BLOCK_INTERVAL_MS, so sandbox
 * deposits confirm on their own as on a real chain. A timer in each worker process sends a
 * `sandbox.produce-blocks` job (throttled by pg-boss to one per interval across processes); its
 * handler mines a block on every SANDBOX network whose last produced block is at least 80% of an
 * interval old (SandboxNetworkState.lastBlockAt, checked under the network's lock, so several
 * workers never mine twice for one interval). Blocks are mined even when the mempool is empty:
 * confirmations need them. Each block sends `chain.sync` in its transaction, like every sandbox change.
 */
export const SANDBOX_BLOCKS_QUEUE = 'sandbox.produce-blocks';

export interface ProducerDeps {
  db: PrismaClient;
  clock: Clock;
  log: Logger;
  boss: PgBoss | null;
  intervalMs: number;
}

/** One round: a block on each SANDBOX network that is due, each in its own transaction (a failing network is logged and skipped). Answers the networks mined. Safe to run twice. */
export async function produceSandboxBlocks(deps: ProducerDeps): Promise<{ networkId: string; height: number }[]> {
  const networks = await deps.db.network.findMany({ where: { kind: 'SANDBOX' }, select: { id: true }, orderBy: { id: 'asc' } });
  const mined: { networkId: string; height: number }[] = [];
  const failed: string[] = [];
  for (const { id } of networks) {
    // One network's failure never stops the others (issue 26): logged at error, its block is tried
    // again next round (its transaction rolled back, lastBlockAt with it).
    try {
      const r = await deps.db.$transaction(async (tx) => {
        await lockNetwork(tx, id);
        const now = deps.clock.now();
        const state = await tx.sandboxNetworkState.findUnique({ where: { networkId: id } });
        if (state?.lastBlockAt && now.getTime() - state.lastBlockAt.getTime() < deps.intervalMs * 0.8) return null;
        await tx.sandboxNetworkState.upsert({ where: { networkId: id }, create: { networkId: id, lastBlockAt: now }, update: { lastBlockAt: now } });
        return mineBlocks(tx, deps, id, 1);
      });
      if (r) mined.push({ networkId: id, height: r.height });
    } catch (err) {
      failed.push(id);
      deps.log.error({ err, networkId: id }, 'sandbox block production failed for a network; the other networks go on');
    }
  }
  if (mined.length) deps.log.debug({ mined }, 'sandbox blocks produced');
  return mined;
}

/** Starts block production in a worker process (no-op when the interval is 0). Stops with the job runner. */
export async function startBlockProduction(boss: PgBoss, deps: Omit<ProducerDeps, 'boss'>): Promise<{ stop: () => void }> {
  const interval = deps.intervalMs;
  if (interval <= 0) return { stop: () => {} };
  await workEach(boss, deps.log, SANDBOX_BLOCKS_QUEUE, {}, async () => {
    await produceSandboxBlocks({ ...deps, boss });
  });
  const tick = () => {
    boss
      .send(SANDBOX_BLOCKS_QUEUE, {}, { singletonKey: 'tick', singletonSeconds: Math.max(1, Math.floor(interval / 1000)) })
      .catch((err: unknown) => deps.log.error({ err }, 'sandbox block production: could not queue a round'));
  };
  const timer = setInterval(tick, interval);
  timer.unref();
  tick();
  const stop = () => clearInterval(timer);
  boss.once('stopped', stop);
  return { stop };
}
