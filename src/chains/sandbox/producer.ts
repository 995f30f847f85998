import type { PgBoss } from 'pg-boss';
import type { Logger } from 'pino';
import type { PrismaClient } from '../../db/prisma';
import type { Clock } from '../../clock';
import { lockNetwork, mineBlocks } from './chain';

/**
 * Block production: one block per SANDBOX network every SANDBOX_BLOCK_INTERVAL_MS, so sandbox
 * deposits confirm on their own as on a real chain, whether one or several worker processes run
 * (issue 24). Each worker process runs a timer aligned on the interval's boundaries (multiples of
 * the interval since the epoch, so every process of a fleet ticks together; a late round is caught
 * up at once, not skipped). Each round mines a block on every SANDBOX network whose last produced
 * block is at least 80% of an interval old (SandboxNetworkState.lastBlockAt, checked under the
 * network's lock): of processes ticking together, the first mines and the others find it done, so
 * a network never gets two blocks in one interval. No job queue: the cadence does not depend on
 * how often one is polled. Blocks are mined even when the mempool is empty: confirmations need
 * them. Each block sends `chain.sync` in its transaction, like every sandbox change.
 */
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

/**
 * Starts block production in a worker process (no-op when the interval is 0): a round at each
 * boundary of the interval. Stops with the job runner (stop() waits for a round under way).
 */
export function startBlockProduction(boss: PgBoss, deps: Omit<ProducerDeps, 'boss'>): { stop: () => Promise<void> } {
  const interval = deps.intervalMs;
  if (interval <= 0) return { stop: async () => {} };
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | null = null;
  let due = (Math.floor(Date.now() / interval) + 1) * interval;
  const schedule = () => {
    if (stopped) return;
    const now = Date.now();
    // More than a whole interval behind (a stalled process): back on the next boundary.
    if (now - due >= interval) due = (Math.floor(now / interval) + 1) * interval;
    timer = setTimeout(round, Math.max(0, due - now));
    timer.unref();
  };
  const round = () => {
    due += interval;
    running = produceSandboxBlocks({ ...deps, boss })
      .then(
        () => {},
        (err: unknown) => deps.log.error({ err }, 'sandbox block production: a round failed'),
      )
      .finally(() => {
        running = null;
        schedule();
      });
  };
  schedule();
  const stop = async () => {
    stopped = true;
    clearTimeout(timer);
    await running;
  };
  boss.once('stopped', () => void stop());
  return { stop };
}
