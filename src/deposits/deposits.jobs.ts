import type { PgBoss } from 'pg-boss';
import type { Logger } from 'pino';
import type { Clock } from '../clock';
import type { Config } from '../config';
import { poolRawDb, type Db, type PrismaClient } from '../db/prisma';
import {
  CHAIN_SYNC_ADDRESS_QUEUE,
  CHAIN_SYNC_ADDRESS_QUEUE_OPTIONS,
  CHAIN_SYNC_QUEUE,
  pauseAfterSendsAlone,
  type ChainSyncAddressJob,
  type ChainSyncJob,
} from '../kernel/queues';
import { quietSandboxSync, syncAddress, syncNetwork } from './sync';
import { followNetworkWithdrawals } from '../withdrawals/withdrawals';
import { dataOf, workBatch, workEach, ensureQueue } from '../kernel/work';
import { EXPIRE_QUEUE, EXPIRE_SWEEP_QUEUE, type ExpirySweepJob } from '../kernel/queues';
import { expireDuePaymentIntents, expireIfDue, type ExpireJob } from './payment-intents';
import type { MoneyDeps } from '../kernel/service';
import { isUuid } from '../ids';

/**
 * Money-in jobs (registered by jobs/index.ts, through src/kernel/work.ts):
 * - `chain.sync` {networkId}: follows a chain that changed: deposit detection (syncNetwork), then
 *   the network's BROADCAST withdrawals (followNetworkWithdrawals), so both move at the block that
 *   gives them their confirmations. Jobs of a batch are coalesced per network: one sync sees every
 *   change committed before it started.
 * - `chain.sync.address` {networkId, depositAddressId}: an address that failed alone during a sync,
 *   retried alone with backoff (syncAddress) and left out of the network's syncs while it lives.
 * - `payment-intent.expire` {paymentIntentId}: sent with the intent, due at its ExpiresAt.
 * - `payment-intent.expire-sweep` {organizationId?}: every minute, and on demand (sendExpirySweep,
 *   e.g. after a sandbox clock advance): expires every due intent.
 * Every handler is idempotent and re-checks state and clock.
 */
export interface MoneyJobDeps {
  db: PrismaClient;
  clock: Clock;
  log: Logger;
  config: Pick<Config, 'SANDBOX_DETECTION_PAUSE_MS'>;
}

export async function registerMoneyInJobs(boss: PgBoss, deps: MoneyJobDeps, work: boolean): Promise<void> {
  await ensureQueue(boss, EXPIRE_QUEUE, { retryLimit: 10, retryDelay: 5, retryBackoff: true, deleteAfterSeconds: 3600 });
  await ensureQueue(boss, EXPIRE_SWEEP_QUEUE, { retryLimit: 3, retryDelay: 10, deleteAfterSeconds: 3600 });
  // Created by jobs/index.ts as well (src/kernel/queues.ts); creating twice changes nothing.
  await ensureQueue(boss, CHAIN_SYNC_QUEUE, { retryLimit: 20, retryDelay: 2, retryBackoff: true, retryDelayMax: 300, deleteAfterSeconds: 3600, notify: true });
  await ensureQueue(boss, CHAIN_SYNC_ADDRESS_QUEUE, CHAIN_SYNC_ADDRESS_QUEUE_OPTIONS);
  if (!work) return;
  const moneyDeps = { db: deps.db, clock: deps.clock, boss };
  // A network's failure (ChainSyncFailure names each) is logged at error by workBatch, then retried;
  // a failing address is logged here and retried alone by chain.sync.address.
  // One fetch takes the whole backlog (up to 500 jobs: a burst of sends queues one each) and runs one
  // sync per network for all of them: every job fetched committed before the sync reads the chain.
  // After a batch of sends alone (transfers in the mempool), a pause before the next fetch
  // (SANDBOX_DETECTION_PAUSE_MS, pauseAfterSendsAlone; issue 22): a burst of sends is detected by one
  // sync, not one per send group; a job of a block or any other change of a chain, once it waits in
  // the queue, ends it.
  const pause = deps.config.SANDBOX_DETECTION_PAUSE_MS;
  const queueReads = poolRawDb(deps.db) ?? deps.db;
  await workBatch<ChainSyncJob>(boss, deps.log, CHAIN_SYNC_QUEUE, { batchSize: 500 }, async (jobs) => {
    const r = await runChainSyncJobs(
      moneyDeps,
      jobs.map((j) => j.data),
    );
    logIsolated(deps.log, r.isolated);
    if (r.changes) deps.log.debug({ networks: r.networks, changes: r.changes }, 'chain sync');
    // Only after a sync that detected something: one that found nothing (sends to addresses that are no
    // deposit's, a withdrawal's broadcast) has nothing to gather.
    if (pause > 0 && r.changes > 0 && jobs.every((j) => sendsAlone(j.data))) await pauseAfterSendsAlone(queueReads, pause);
  });
  await workEach<ChainSyncAddressJob>(boss, deps.log, CHAIN_SYNC_ADDRESS_QUEUE, { batchSize: 10 }, async (job) => {
    const r = await syncAddress(moneyDeps, dataOf(job));
    if (job.retryCount) deps.log.info({ ...dataOf(job), retryCount: job.retryCount, changes: r.changes }, 'chain.sync.address: the address reconciled');
  });
  await workEach<ExpireJob>(boss, deps.log, EXPIRE_QUEUE, { batchSize: 20 }, async (job) => {
    await expireIfDue(moneyDeps, dataOf(job).paymentIntentId);
  });
  await boss.schedule(EXPIRE_SWEEP_QUEUE, '* * * * *');
  await workEach<ExpirySweepJob>(boss, deps.log, EXPIRE_SWEEP_QUEUE, {}, async ({ data }) => {
    const n = await runExpirySweepJob(moneyDeps, data);
    if (n) deps.log.info({ expired: n }, 'payment intents expired');
  });
}

/**
 * A chain.sync batch some network of which failed, after every other network was synced and
 * committed: the jobs fail (pg-boss retries them with backoff and lists them as failed once their
 * retries are spent), and the error names each failing network. A failing deposit address does not
 * fail the batch: it is isolated (SyncResult.isolated, its own `chain.sync.address` job).
 */
export class ChainSyncFailure extends Error {
  constructor(
    readonly failures: { networkId: string; error: string }[],
    readonly changes: number,
  ) {
    super(`chain.sync: ${failures.map((f) => `network ${f.networkId}: ${f.error}`).join('; ')}`);
    this.name = 'ChainSyncFailure';
  }
}

export interface ChainSyncRun {
  networks: number;
  changes: number;
  /** Deposit addresses reconciled (summed over the networks' syncs). */
  addresses: number;
  /** Deposit addresses that failed alone, each handed to its own retry job (logged at error by the worker). */
  isolated: { networkId: string; depositAddressId: string; address: string; error: string }[];
}

/**
 * The chain.sync handler: per network named in the batch (coalesced), deposit detection, then the
 * network's BROADCAST withdrawals followed (confirmed, failed or sent to reconciliation), each step
 * on its own. One network's failure never stops the others: they are all synced, then the failures
 * are thrown together (ChainSyncFailure). One address's failure stops nothing (see syncNetwork).
 */
export async function runChainSyncJobs(deps: MoneyDeps, jobs: (ChainSyncJob | null | undefined)[]): Promise<ChainSyncRun> {
  const networks = new Set(jobs.map((j) => j?.networkId).filter((id): id is string => typeof id === 'string' && isUuid(id)));
  let changes = 0;
  let addresses = 0;
  const isolated: ChainSyncRun['isolated'] = [];
  const failures: ChainSyncFailure['failures'] = [];
  const step = async (networkId: string, run: () => Promise<number>) => {
    try {
      changes += await run();
    } catch (e) {
      failures.push({ networkId, error: e instanceof Error ? e.message : String(e) });
    }
  };
  for (const networkId of networks) {
    // Nothing waits on a SANDBOX network (issue 22: most mined blocks): one statement moves the cursor and says so, and
    // whether withdrawals are to be followed.
    const quiet = await quietSandboxSync(deps, networkId).catch(() => null);
    if (!quiet?.quiet)
      await step(networkId, async () => {
        // Sends alone (every job of the network names its recipients): those addresses may be all that changed.
        const of = jobs.filter((j) => j?.networkId === networkId);
        const only = of.every(sendsAlone) ? [...new Set(of.flatMap((j) => j!.addresses!))] : undefined;
        const r = await syncNetwork(deps, networkId, { only });
        addresses += r.addresses;
        for (const f of r.isolated) isolated.push({ networkId, ...f });
        return r.changes;
      });
    if (quiet?.broadcasting !== false)
      await step(networkId, async () => {
        const followed = await followNetworkWithdrawals(deps, networkId);
        return (followed.CONFIRMED ?? 0) + (followed.FAILED ?? 0) + (followed.REQUIRES_RECONCILIATION ?? 0);
      });
  }
  if (failures.length) throw new ChainSyncFailure(failures, changes);
  return { networks: networks.size, changes, addresses, isolated };
}

/** A job of sends alone: it names the recipients of the transfers a send (a group) added, and nothing else changed. */
const sendsAlone = (j: ChainSyncJob | null | undefined): boolean => Array.isArray(j?.addresses) && j.addresses.every((a) => typeof a === 'string');

/** Logs each isolated address at error: the address is reported once per failing sync that found it. */
export function logIsolated(log: Pick<Logger, 'error'>, isolated: ChainSyncRun['isolated']): void {
  for (const f of isolated)
    log.error(
      { networkId: f.networkId, depositAddressId: f.depositAddressId, address: f.address, error: f.error },
      `chain.sync: deposit address ${f.depositAddressId} failed; retried alone (${CHAIN_SYNC_ADDRESS_QUEUE}), the others synced`,
    );
}

/** The expiry sweep handler. Scheduled sweeps carry no data; on-demand ones may name an organization. */
export function runExpirySweepJob(deps: MoneyDeps, data: ExpirySweepJob | null | undefined): Promise<number> {
  const organizationId = data?.organizationId;
  return expireDuePaymentIntents(deps, organizationId ? { organizationId } : {});
}
