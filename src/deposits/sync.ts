import { numericToAmount, amountToNumeric } from '../money';
import { Prisma, pipelined, poolQuery, poolRawDb, poolTransaction, type Db, type RawDb } from '../db/prisma';
import { JOB_SCHEMA } from '../db/roles';
import type { AssetNetwork, Deposit, DepositStatus, Network, PaymentIntent, Transaction } from '../generated/prisma/client';
import { adapterFor, assertChainReadable, hasAdapter, networkRef, type ChainCursor, type ObservedTransfer } from '../chains/adapter';
import {
  addressJobStates,
  CHAIN_SYNC_ADDRESS_QUEUE,
  isLiveJobState,
  sendAddressSync,
  sendReleaseEvaluations,
  type ChainSyncAddressJob,
} from '../kernel/queues';
import { auditAll, auditAs, deferAudits, type Actor } from '../audit/audit';
import { deferEvents, emit } from '../webhooks/outbox';
import { lockNetwork, lockTransactionRow, TX_OPTIONS, type MoneyDeps } from '../kernel/service';
import { nowFor } from '../chains/sandbox/clock';
import { tip as sandboxChainTip } from '../chains/sandbox/chain';
import {
  decideIntent,
  depositCreditPosting,
  depositSumsOf,
  evaluateIntent,
  freezeForDeposit,
  postDepositCredit,
  type IntentDecision,
  type IntentWithTransaction,
  type LedgerKind,
} from './funding';
import { LedgerError, postLedgerTransactions } from '../ledger/ledger';
import { reasons, screeningVerdict } from './rules';
import { isUuid, monotonicUuidv7 } from '../ids';

/**
 * Deposit detection: the `chain.sync` job handler. It asks the network's adapter what changed since
 * the network's cursor (ChainSyncCursor: the height it followed), joins that to the deposit
 * addresses by (network, address), adds the open deposits, and reconciles each transfer to those
 * addresses with its Deposit row (unique per network and transaction hash): its work follows what
 * happened on the chain, not how many addresses were ever allocated (issue 22). Every change commits in one database transaction with its events, ledger
 * postings and audit entries.
 *
 * Safe to run twice or concurrently: a network's sync runs under a transaction-scoped advisory lock
 * (the chain is read after the lock is taken, so a later sync never applies an older view), and
 * every step compares the chain with the record: nothing changed, nothing written. Addresses are
 * reconciled in chunks (CHUNK per database transaction), each chunk under the lock. An address that
 * fails alone is retried by its own `chain.sync.address` job (src/kernel/queues.ts) and left out
 * of the chunks while that job lives.
 */
export const SYNC_CHUNK = 500;
const SYNC_ACTOR: Actor = { principal: null, requestId: 'job:chain.sync' };

export interface SyncResult {
  /** Addresses reconciled (those retried by their own job are left to it). */
  addresses: number;
  observed: number;
  changes: number;
  /**
   * Addresses whose reconciliation failed alone (each in its own transaction, after their chunk
   * failed): handed to their own `chain.sync.address` job (retried with backoff, listed as stuck), so
   * the network's sync does not fail because of them.
   */
  isolated: { depositAddressId: string; address: string; error: string }[];
}

type AddressRow = { id: string; address: string; assetNetworkId: string; paymentIntentId: string | null; organizationId: string };
export type NetworkRow = Network & { assetNetworks: AssetNetwork[] };
const ADDRESS_SELECT = { id: true, address: true, assetNetworkId: true, paymentIntentId: true, organizationId: true } as const;
/** ADDRESS_SELECT as raw columns (uuids as text, as Prisma answers them). */
const ADDRESS_COLUMNS = Prisma.raw(`"id"::text, "address", "assetNetworkId"::text, "paymentIntentId"::text, "organizationId"::text`);

/**
 * A chunk none of whose addresses could be reconciled, even alone: the network (its adapter, the
 * database) is failing, not an address. The network's chain.sync fails and is retried whole, rather
 * than isolating every address.
 */
export class NetworkSyncFailure extends Error {
  constructor(
    readonly networkId: string,
    readonly addresses: number,
    cause: string,
  ) {
    super(`every address of a chunk failed (${addresses}): ${cause}`);
    this.name = 'NetworkSyncFailure';
  }
}

const messageOf = (e: unknown) => (e instanceof Error ? e.message : String(e));

/**
 * `only`: the addresses the jobs of this sync name, when every one of them came from sends (their
 * recipients: chain.sendTransactions). While the chain's tip is still the one the cursor followed, no
 * block came and nothing was dropped, replaced or reorganized (each of those sends a job without
 * addresses, and the sync of that job looks at everything), so only those addresses' transfers are
 * new: they alone are reconciled, not every open deposit again (issue 22: in a burst of sends each
 * sync re-read every deposit still waiting for its block). Otherwise, and without `only`, as always.
 */
export async function syncNetwork(deps: MoneyDeps, networkId: string, opts: { chunk?: number; only?: string[] } = {}): Promise<SyncResult> {
  // The reads before the chunks straight on the pool (issue 22: through Prisma's query engine they
  // were most of a sync's CPU outside its chunks), raw statements with the models' columns and types.
  const reads: RawDb = poolRawDb(deps.db) ?? deps.db;
  const network = await readNetwork(reads, networkId);
  const result: SyncResult = { addresses: 0, observed: 0, changes: 0, isolated: [] };
  if (!network) return result;
  // A process without this EVM network's settings cannot read its chain: the job fails (retried with
  // backoff, listed as failed once spent; another worker configured for it takes it) rather than
  // completing as if the chain had shown nothing (issue 18).
  assertChainReadable(network);
  if (!hasAdapter(network.kind)) return result;
  const chunk = opts.chunk ?? SYNC_CHUNK;
  // Addresses that failed before (issue 26): a live job of theirs retries them alone; one whose last
  // job failed (retries spent) or was cancelled is tried here again with the others.
  const jobStates = await addressJobStates(reads, networkId);
  // The SANDBOX adapter reads its chain raw (the same pool); the EVM adapter reads its index through Prisma's models.
  const chainReads = network.kind === 'SANDBOX' ? (reads as Db) : deps.db;
  const { tip, addresses: work } = await changedAddresses(reads, chainReads, network, jobStates, opts.only);
  const apply = (r: { observed: number; changes: number }) => {
    result.observed += r.observed;
    result.changes += r.changes;
  };
  let networkFailure: NetworkSyncFailure | undefined;
  // The cursor commits with the last chunk (or alone when nothing was to be reconciled, or after a
  // last chunk reconciled address by address): a crash before it only makes the next sync redo
  // what this one did, which changes nothing (every step compares the chain with the record).
  let cursorWritten = false;
  const advance = async (tx: Db) => {
    cursorWritten = true;
    await writeCursor(tx, networkId, tip);
  };
  const addresses = work.filter((a) => !isLiveJobState(jobStates.get(a.id)));
  for (let i = 0; i < addresses.length; i += chunk) {
    const page = addresses.slice(i, i + chunk);
    const last = i + chunk >= addresses.length;
    result.addresses += page.length;
    const healthy: AddressRow[] = [];
    try {
      const work = async (tx: Db, fast: boolean) => {
        const r = await syncChunk(tx, deps, network, page, fast);
        if (last && !networkFailure) await advance(tx);
        return r;
      };
      // A SANDBOX network's chain is read raw (its adapter's transfersTo and tip): its chunks try the pool first.
      const pooled = network.kind === 'SANDBOX' ? await onPool(deps, (raw) => work(raw, true)) : null;
      apply(pooled ?? (await deps.db.$transaction((tx) => work(tx, false), TX_OPTIONS)));
      healthy.push(...page);
    } catch {
      cursorWritten = false;
      // One address's failure never stops the others of its chunk (issue 26): each alone, in its own
      // transaction; a failing one is handed to its own retry job and listed as stuck while it fails.
      const failed: SyncResult['isolated'] = [];
      for (const a of page) {
        try {
          apply(await deps.db.$transaction((tx) => syncChunk(tx, deps, network, [a]), TX_OPTIONS));
          healthy.push(a);
        } catch (e) {
          failed.push({ depositAddressId: a.id, address: a.address, error: messageOf(e) });
        }
      }
      if (failed.length > 1 && !healthy.length) {
        // Not one address: the network. The other chunks still run; the network's sync then fails.
        networkFailure ??= new NetworkSyncFailure(networkId, failed.length, failed[0]!.error);
        failed.length = 0;
      }
      for (const f of failed) {
        if (!deps.boss) throw new Error(`deposit address ${f.depositAddressId}: ${f.error} (no job runner to retry it alone)`);
        await sendAddressSync(deps.boss, { networkId, depositAddressId: f.depositAddressId, sentAt: deps.clock.now().toISOString() });
        result.isolated.push(f);
      }
    }
    // An address whose retries were spent and that now reconciled: one more job of its own, which
    // completes (a no-op) and so takes it off the stuck list.
    for (const a of healthy)
      if (deps.boss && jobStates.get(a.id) === 'failed')
        await sendAddressSync(deps.boss, { networkId, depositAddressId: a.id, sentAt: deps.clock.now().toISOString() });
  }
  if (networkFailure) throw networkFailure;
  // An isolated address is left to its own job (and, once its retries are spent, to every later sync:
  // changedAddresses adds it), so the cursor moves on.
  if (!cursorWritten) await deps.db.$transaction((tx) => advance(tx), TX_OPTIONS);
  return result;
}

/**
 * A SANDBOX network's chain.sync when nothing waits on it (issue 22: the bench mines a block every
 * 100 ms, most of which touch no deposit), in one autocommitted statement on the pool: when the
 * network has a cursor on a canonical block (or none yet), no transfer since the cursor (in a block
 * from its height, or in the mempool) reaches a deposit address of the network, no deposit is open
 * (DETECTED, CONFIRMING, UNDER_REVIEW) or CONFIRMED from the cursor's height, and no address's own
 * retry job failed for good, syncNetwork would reconcile nothing and only move the cursor to the tip:
 * the statement moves it (never back: writeCursor's rule) and answers `quiet`. These are
 * changedAddresses' rules, checked as a whole in one snapshot; anything else (`quiet` false, no
 * cursor yet, an EVM network, a client without our pool): syncNetwork as always. `broadcasting`: the
 * network has BROADCAST withdrawals to follow (null when not asked).
 */
export async function quietSandboxSync(deps: Pick<MoneyDeps, 'db'>, networkId: string): Promise<{ quiet: boolean; broadcasting: boolean } | null> {
  if (!isUuid(networkId)) return null;
  const r = await poolQuery<{ quiet: boolean; broadcasting: boolean }>(deps.db, quietSyncSql(networkId.toLowerCase()), []);
  return r ? r.rows[0]! : null;
}
/**
 * The statement of one network, its values written in (the network's id, a checked uuid, and
 * constants), so that it has no parameters (issue 22, session 10): a prepared statement without
 * parameters is planned once per connection and its plan kept, where one with parameters was planned
 * again at every call (a custom plan: ~0.6 ms of PostgreSQL's CPU warm, ~2.4 ms on a new connection,
 * against ~0.2 ms to run it; once per network per block). One text per network (named once each).
 *
 * Its one plan must stay right whatever the history and the statistics it was made with (issue 22,
 * point 2, session 11: written as joins, the planner hashed every deposit address of the network to
 * look up the transfers since the cursor, 38 ms at 10^5 addresses, and in one diagnostic run the plan
 * a pool connection had kept ran for minutes on the grown history). So each check is its own
 * correlated probe (`OFFSET 0`: PostgreSQL turns neither into a join, each runs with the cursor's
 * height in hand) that walks an index in its order (`ORDER BY` an index column: a scan of the table
 * would need a sort before its first row, so the index wins even where the statistics expect many
 * rows): the transfers from the cursor's height ((networkId, blockHeight)), the mempool's
 * ((networkId, status)), each probing its recipient on (networkId, address); the open deposits (by
 * status) and those confirmed from the cursor's height ((networkId, status, blockHeight)). The work follows what
 * changed since the cursor, never the addresses or deposits that ever were (bench/history.ts proves
 * the plan with EXPLAIN on the grown history).
 */
export const quietSyncSql = (networkId: string) => {
  const recipientWatched = `EXISTS (SELECT 1 FROM "DepositAddress" a WHERE a."networkId" = '${networkId}'::uuid AND a."address" = t."toAddress" OFFSET 0)`;
  return `
  WITH c AS (SELECT "height", "blockHash" FROM "ChainSyncCursor" WHERE "networkId" = '${networkId}'::uuid),
  q AS (
    SELECT 1 FROM "Network" n, c
     WHERE n."id" = '${networkId}'::uuid AND n."kind" = 'SANDBOX'
       AND (c."blockHash" IS NULL OR EXISTS (SELECT 1 FROM "SandboxBlock" b WHERE b."hash" = c."blockHash" AND b."canonical"))
       AND NOT EXISTS (
         SELECT 1 FROM "SandboxTransaction" t
          WHERE t."networkId" = '${networkId}'::uuid AND t."blockHeight" >= c."height" AND ${recipientWatched}
          ORDER BY t."blockHeight" OFFSET 0)
       AND NOT EXISTS (
         SELECT 1 FROM "SandboxTransaction" t
          WHERE t."networkId" = '${networkId}'::uuid AND t."status" IN ('PENDING', 'ORPHANED') AND ${recipientWatched}
          ORDER BY t."status" OFFSET 0)
       AND NOT EXISTS (
         SELECT 1 FROM "Deposit" d
          WHERE d."networkId" = '${networkId}'::uuid AND d."status" IN (${OPEN_DEPOSIT.map((x) => `'${x}'`).join(', ')})
          ORDER BY d."status" OFFSET 0)
       AND NOT EXISTS (
         SELECT 1 FROM "Deposit" d
          WHERE d."networkId" = '${networkId}'::uuid AND d."status" = 'CONFIRMED' AND d."blockHeight" >= c."height"
          ORDER BY d."blockHeight" OFFSET 0)
       AND NOT EXISTS (SELECT 1 FROM "${JOB_SCHEMA}".job j WHERE j."name" = '${CHAIN_SYNC_ADDRESS_QUEUE}' AND j."state" = 'failed' AND j."data"->>'networkId' = '${networkId}')
  ),
  tip AS (SELECT "height", "hash" FROM "SandboxBlock" WHERE "networkId" = '${networkId}'::uuid AND "canonical" ORDER BY "height" DESC LIMIT 1),
  w AS (
    INSERT INTO "ChainSyncCursor" ("networkId", "height", "blockHash", "updatedAt")
    SELECT '${networkId}'::uuid, COALESCE(tip."height", 0), tip."hash", now() FROM q LEFT JOIN tip ON true
    ON CONFLICT ("networkId") DO UPDATE SET "height" = EXCLUDED."height", "blockHash" = EXCLUDED."blockHash", "updatedAt" = now()
     WHERE "ChainSyncCursor"."height" <= EXCLUDED."height"
  )
  SELECT EXISTS (SELECT 1 FROM q) AS "quiet",
         EXISTS (SELECT 1 FROM "Withdrawal" x WHERE x."status" = 'BROADCAST' AND x."networkId" = '${networkId}'::uuid) AS "broadcasting"`;
};

/**
 * A chunk that needs a path the pool's connection does not run (a deposit reconciled alone:
 * late, rejected, dropped, reorganized, under review, an intent due or closed...): thrown before
 * anything is kept (its transaction rolls back), and the chunk is redone through Prisma.
 */
class NeedsPrisma extends Error {}

/**
 * A sync chunk straight on the pg pool (issue 22: the common chunk, every deposit detected,
 * progressed or confirmed set-based, is all raw statements; Prisma's interactive transaction and
 * query engine cost more CPU than they do): `fn` gets a RawDb over the transaction's connection,
 * typed as Db for the shared helpers, which only send raw statements on this path (a model call
 * would throw: the tests run it). Null when the client has no pool of ours, or when the chunk needs
 * the full path (NeedsPrisma): the caller then runs it through Prisma. The same timeout as TX_OPTIONS.
 * SANDBOX networks only: the EVM adapter reads its index through Prisma's models.
 */
async function onPool<T>(deps: MoneyDeps, fn: (tx: Db) => Promise<T>): Promise<T | null> {
  try {
    return await (poolTransaction(deps.db, (_query, raw) => fn(raw as unknown as Db), { timeoutMs: TX_OPTIONS.timeout }) ?? null);
  } catch (e) {
    if (e instanceof NeedsPrisma) return null;
    throw e;
  }
}

/** Deposits whose state the chain may still move without a new transfer: waiting for confirmations, or under review. */
const OPEN_DEPOSIT: DepositStatus[] = ['DETECTED', 'CONFIRMING', 'UNDER_REVIEW'];
/** A transaction that takes a deposit's credit in its ESCROW (confirm()). */
const OPEN_TRANSACTION: string[] = ['AWAITING_FUNDS', 'FUNDED', 'RESERVED'];
/** Addresses looked up per statement when joining the chain's changed addresses to deposit addresses. */
const JOIN_BATCH = 5_000;

/**
 * What a sync reconciles (issue 22): never every address ever allocated on the network, but the
 * deposit addresses that the chain's changes since the network's cursor touch (the adapter's
 * changedSince: transfers in blocks from the cursor's height, or from a reorganization's fork point,
 * and transfers in no block), joined by (network, address); the addresses of the network's open
 * deposits (confirmations to count, drops, replacements and reverts to notice); those of deposits
 * confirmed above the fork point (a reorganization may have taken them away); and the addresses whose
 * own retry job failed for good (tried again by every sync, as before). In id order.
 */
async function changedAddresses(
  db: RawDb,
  chainDb: Db,
  network: NetworkRow,
  jobStates: Map<string, string>,
  only?: string[],
): Promise<{ tip: ChainCursor; addresses: AddressRow[] }> {
  const [cursor] = await db.$queryRaw<{ height: number; blockHash: string | null }[]>`
    SELECT "height", "blockHash" FROM "ChainSyncCursor" WHERE "networkId" = ${network.id}::uuid`;
  const seen = cursor ? { height: cursor.height, hash: cursor.blockHash } : null;
  // Sends alone (syncNetwork's `only`) on a sandbox chain whose tip is still the block the cursor
  // followed: their recipients are what changed, and the tip is all this sync needs of the chain
  // (issue 22: not the addresses of every transfer still in the mempool, read again by each sync of a burst).
  const sandboxTip = only !== undefined && seen !== null && network.kind === 'SANDBOX' ? await sandboxChainTip(db as Db, network.id) : null;
  const changes =
    sandboxTip && sandboxTip.height === seen!.height && sandboxTip.hash === seen!.hash
      ? { tip: sandboxTip, from: seen!.height, addresses: [] as string[] }
      : await adapterFor(network.kind, chainDb).changedSince(networkRef(network), seen);
  // Sends alone and no block since the cursor (syncNetwork's `only`): their recipients are what changed.
  const sendsOnly = only !== undefined && seen !== null && changes.tip.height === seen.height && changes.tip.hash === seen.hash;
  const changed = sendsOnly ? only : changes.addresses;
  const byId = new Map<string, AddressRow>();
  for (let i = 0; i < changed.length; i += JOIN_BATCH)
    for (const a of await db.$queryRaw<AddressRow[]>`
      SELECT ${ADDRESS_COLUMNS} FROM "DepositAddress" WHERE "networkId" = ${network.id}::uuid AND "address" = ANY(${changed.slice(i, i + JOIN_BATCH)}::text[])`)
      byId.set(a.id, a);
  const deposits = sendsOnly
    ? []
    : await db.$queryRaw<{ depositAddressId: string }[]>`
        SELECT "depositAddressId"::text FROM "Deposit"
         WHERE "networkId" = ${network.id}::uuid
           AND ("status" = ANY(${OPEN_DEPOSIT}::"DepositStatus"[]) OR ("status" = 'CONFIRMED' AND "blockHeight" >= ${changes.from}))`;
  const failed = [...jobStates].filter(([, state]) => state === 'failed').map(([id]) => id);
  const more = [...new Set([...deposits.map((d) => d.depositAddressId), ...failed.filter(isUuid)])].filter((id) => !byId.has(id));
  for (let i = 0; i < more.length; i += JOIN_BATCH)
    for (const a of await db.$queryRaw<AddressRow[]>`
      SELECT ${ADDRESS_COLUMNS} FROM "DepositAddress" WHERE "networkId" = ${network.id}::uuid AND "id" = ANY(${more.slice(i, i + JOIN_BATCH)}::uuid[])`)
      byId.set(a.id, a);
  return { tip: changes.tip, addresses: [...byId.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)) };
}

/** A network with its asset-networks, the models' columns and types, in raw statements (a RawDb on the pool or Prisma's client). */
async function readNetwork(db: RawDb, networkId: string): Promise<NetworkRow | null> {
  if (!isUuid(networkId)) return null;
  const [network] = await db.$queryRaw<Network[]>`SELECT * FROM "Network" WHERE "id" = ${networkId}::uuid`;
  if (!network) return null;
  const assetNetworks = await db.$queryRaw<AssetNetwork[]>`SELECT * FROM "AssetNetwork" WHERE "networkId" = ${networkId}::uuid ORDER BY "id"`;
  return { ...network, assetNetworks };
}

/** Moves the network's cursor to `tip`, never back below a later sync's (concurrent syncs). */
async function writeCursor(tx: Db, networkId: string, tip: ChainCursor): Promise<void> {
  await tx.$executeRaw`
    INSERT INTO "ChainSyncCursor" ("networkId", "height", "blockHash", "updatedAt") VALUES (${networkId}::uuid, ${tip.height}, ${tip.hash}, now())
    ON CONFLICT ("networkId") DO UPDATE SET "height" = EXCLUDED."height", "blockHash" = EXCLUDED."blockHash", "updatedAt" = now()
     WHERE "ChainSyncCursor"."height" <= EXCLUDED."height"`;
}

/**
 * The `chain.sync.address` job handler: one address reconciled alone, in its own transaction, under
 * the network's lock (everything re-checked against the chain, as every sync). Throws while it fails
 * (pg-boss retries it with backoff); an address or network gone since (or ids that are none) is nothing to do.
 */
export async function syncAddress(deps: MoneyDeps, job: ChainSyncAddressJob): Promise<{ observed: number; changes: number }> {
  if (!isUuid(job.networkId) || !isUuid(job.depositAddressId)) return { observed: 0, changes: 0 };
  const network = await deps.db.network.findUnique({ where: { id: job.networkId }, include: { assetNetworks: true } });
  if (!network || !hasAdapter(network.kind)) return { observed: 0, changes: 0 };
  const address = await deps.db.depositAddress.findFirst({ where: { id: job.depositAddressId, networkId: job.networkId }, select: ADDRESS_SELECT });
  if (!address) return { observed: 0, changes: 0 };
  return deps.db.$transaction((tx) => syncChunk(tx, deps, network, [address]), TX_OPTIONS);
}

/** Environment clocks, read once per organization per chunk. */
function clocks(tx: Db, deps: MoneyDeps) {
  const cache = new Map<string, Promise<Date>>();
  return (organizationId: string, environmentType: 'SANDBOX' | 'PRODUCTION') => {
    const key = `${organizationId} ${environmentType}`;
    if (!cache.has(key)) cache.set(key, nowFor(tx, deps.clock, organizationId, environmentType));
    return cache.get(key)!;
  };
}

/**
 * Reconciles a chunk of addresses in the caller's database transaction (one commit for all of its
 * deposits: group commit). The events and audit entries of the whole chunk are queued and written
 * with one statement each at its end (deferEvents, deferAudits; issue 22).
 */
function syncChunk(tx: Db, deps: MoneyDeps, network: NetworkRow, addresses: AddressRow[], fast = false) {
  return deferEvents(tx, deps, () => deferAudits(tx, () => reconcileChunk(tx, deps, network, addresses, fast)));
}

/**
 * `fast`: `tx` is a connection of poolTransaction (onPool), which runs raw statements only: the
 * reads are raw, and a chunk with a deposit for the full path throws NeedsPrisma before it writes.
 */
async function reconcileChunk(tx: Db, deps: MoneyDeps, network: NetworkRow, addresses: AddressRow[], fast = false) {
  await lockNetwork(tx, network.id);
  const ref = networkRef(network);
  const observed = await adapterFor(network.kind, tx).transfersTo(
    ref,
    addresses.map((a) => a.address),
  );
  const byAddress = new Map(addresses.map((a) => [a.address, a]));
  // Raw reads (issue 22): the model's columns and types, without Prisma's query engine on the pool's connection.
  const deposits = await tx.$queryRaw<Deposit[]>`
    SELECT * FROM "Deposit" WHERE "networkId" = ${network.id}::uuid AND "depositAddressId" = ANY(${addresses.map((a) => a.id)}::uuid[])`;
  const byHash = new Map(deposits.map((d) => [d.txHash, d]));
  const env = new Map<string, { environmentType: 'SANDBOX' | 'PRODUCTION'; transactionId: string }>();
  const intentIds = [...new Set(addresses.map((a) => a.paymentIntentId).filter((x): x is string => x !== null))];
  if (intentIds.length)
    for (const i of await tx.$queryRaw<{ id: string; environmentType: 'SANDBOX' | 'PRODUCTION'; transactionId: string }[]>`
      SELECT "id"::text, "environmentType"::text, "transactionId"::text FROM "PaymentIntent" WHERE "id" = ANY(${intentIds}::uuid[])`)
      env.set(i.id, { environmentType: i.environmentType, transactionId: i.transactionId });
  const s = { ...scope(tx, deps, network, env), fast };
  const byId = new Map(addresses.map((a) => [a.id, a]));
  const observedHashes = new Set(observed.filter((o) => byAddress.has(o.toAddress)).map((o) => o.txHash));
  const unseen = deposits.filter((d) => !observedHashes.has(d.txHash));
  // How many transfers of the chunk touch each intent (an address without one: the address). An
  // intent touched once whose deposit reaches its depth is confirmed with the others, set-based
  // (confirmMany); anything else one transfer at a time, as always.
  const touchKey = (a: AddressRow) => a.paymentIntentId ?? a.id;
  const touches = new Map<string, number>();
  const touch = (a: AddressRow) => touches.set(touchKey(a), (touches.get(touchKey(a)) ?? 0) + 1);
  for (const o of observed) if (byAddress.has(o.toAddress)) touch(byAddress.get(o.toAddress)!);
  for (const d of unseen) touch(byId.get(d.depositAddressId)!);
  const confirmations: Confirmation[] = [];
  const detections: Detection[] = [];
  const progressions: Progression[] = [];
  let changes = 0;
  for (const o of observed) {
    const address = byAddress.get(o.toAddress);
    if (!address) continue;
    const d = byHash.get(o.txHash) ?? null;
    const once = touches.get(touchKey(address)) === 1;
    const confirmation = once && d ? batchable(s, d, o) : null;
    const detection = once && !d ? detectable(s, address, o) : null;
    const progression = once && d && !confirmation ? progressable(s, d, o) : null;
    if (confirmation) confirmations.push(confirmation);
    else if (detection) detections.push(detection);
    else if (progression) progressions.push(progression);
    else if (fast) {
      if (needsReconcile(s, d, o)) throw new NeedsPrisma();
    } else if (await reconcile(s, address, d, o)) changes++;
  }
  if (fast && unseen.some((d) => needsReconcile(s, d, null))) throw new NeedsPrisma();
  // Deposits the chain no longer reports (a real node forgets dropped transactions).
  for (const d of unseen) if (await reconcile(s, byId.get(d.depositAddressId)!, d, null)) changes++;
  if (progressions.length) changes += await progressMany(s, progressions);
  if (detections.length) changes += await detectMany(s, detections);
  if (confirmations.length) changes += await confirmMany(s, confirmations);
  return { observed: observed.length, changes };
}

/** What reconciling needs in one database transaction (also used by the admin resolutions). */
export function scope(tx: Db, deps: MoneyDeps, network: NetworkRow, env: SyncScope['env']): SyncScope {
  return { tx, deps, network, assetNetworks: new Map(network.assetNetworks.map((a) => [a.id, a])), env, now: clocks(tx, deps) };
}

export interface SyncScope {
  tx: Db;
  /** On the pool's connection (onPool): a deposit for the full path throws NeedsPrisma. */
  fast?: boolean;
  deps: MoneyDeps;
  network: NetworkRow;
  assetNetworks: Map<string, AssetNetwork>;
  env: Map<string, { environmentType: 'SANDBOX' | 'PRODUCTION'; transactionId: string }>;
  now: (organizationId: string, environmentType: 'SANDBOX' | 'PRODUCTION') => Promise<Date>;
}

/** What the chain says about a transfer, in deposit terms. */
function chainView(o: ObservedTransfer | null, required: number) {
  if (!o || o.status === 'DROPPED') return { gone: reasons.dropped } as const;
  if (o.status === 'REPLACED') return { gone: `${reasons.replaced}: by ${o.replacedByTxHash ?? 'another transaction'}` } as const;
  if (o.status === 'REVERTED') return { gone: reasons.reverted } as const;
  const confirmations = o.status === 'MINED' ? o.confirmations : 0;
  const block = o.status === 'MINED' ? { blockHash: o.blockHash, blockHeight: o.blockHeight } : { blockHash: null, blockHeight: null };
  return { gone: null, confirmations, deep: confirmations >= required, ...block } as const;
}

/**
 * Whether reconcile() would change anything for this transfer and deposit, decided as it decides,
 * without writing: on the pool's connection (onPool) a chunk where it would is redone through
 * Prisma; one where it would not (a deposit confirmed deep and unmoved, a rejected one) stays fast.
 */
function needsReconcile(s: SyncScope, d: Deposit | null, o: ObservedTransfer | null): boolean {
  const view = chainView(o, s.network.requiredConfirmations);
  if (!d) return view.gone === null && o !== null;
  switch (d.status) {
    case 'DETECTED':
    case 'CONFIRMING': {
      if (view.gone !== null || view.deep) return true;
      const status = view.confirmations > 0 ? 'CONFIRMING' : 'DETECTED';
      return d.status !== status || d.confirmations !== view.confirmations || d.blockHash !== view.blockHash;
    }
    case 'UNDER_REVIEW':
      return view.gone !== null || d.confirmations !== view.confirmations || d.blockHash !== view.blockHash;
    case 'CONFIRMED':
      return !(view.gone === null && view.deep) || d.blockHash !== view.blockHash;
    case 'REJECTED':
      return (d.reason === reasons.dropped && view.gone === null) || (d.reason === reasons.reverted && o?.status === 'MINED');
    default:
      return false;
  }
}

/** Reconciles one transfer with its deposit; answers whether anything changed. */
async function reconcile(s: SyncScope, address: AddressRow, d: Deposit | null, o: ObservedTransfer | null): Promise<boolean> {
  const required = s.network.requiredConfirmations;
  const view = chainView(o, required);
  if (!d) {
    // Never seen, and it moved no value: nothing to record.
    if (view.gone !== null || !o) return false;
    await detect(s, address, o);
    return true;
  }
  switch (d.status) {
    case 'DETECTED':
    case 'CONFIRMING': {
      if (view.gone !== null) return reject(s, d, view.gone).then(() => true);
      if (view.deep) return confirm(s, d, view).then(() => true);
      return progress(s, d, view);
    }
    case 'UNDER_REVIEW': {
      if (view.gone !== null) return reject(s, d, view.gone).then(() => true);
      return track(s, d, view);
    }
    case 'CONFIRMED': {
      if (view.gone === null && view.deep) return track(s, d, view);
      await reorgFreeze(s, d, view.gone === null ? view : { confirmations: 0, blockHash: null, blockHeight: null });
      return true;
    }
    case 'REJECTED': {
      // A dropped transaction broadcast again (same hash), or a reverted one orphaned by a
      // reorganization and then mined successfully, is a deposit again.
      const again = (d.reason === reasons.dropped && view.gone === null) || (d.reason === reasons.reverted && o?.status === 'MINED');
      if (again && o) {
        await detect(s, address, o, d);
        return true;
      }
      return false;
    }
    default:
      // REORG_FROZEN waits for AdminResolveDepositReorg; REVERSED is final.
      return false;
  }
}

async function depositEvents(s: SyncScope, d: Deposit, ...kinds: ('detected' | 'confirmed')[]) {
  for (const kind of kinds) {
    if (!d.paymentIntentId) continue; // an address without an intent: its events carry no PaymentIntentId (docs/money-in.md)
    if (kind === 'detected')
      await emit(s.tx, s.deps, d.organizationId, 'deposit.detected', {
        DepositId: d.id,
        PaymentIntentId: d.paymentIntentId,
        Amount: numericToAmount(d.amount),
      });
    else
      await emit(s.tx, s.deps, d.organizationId, 'deposit.confirmed', {
        DepositId: d.id,
        PaymentIntentId: d.paymentIntentId,
        TransactionId: d.transactionId!,
        Amount: numericToAmount(d.amount),
      });
  }
}

const audit = (
  s: SyncScope,
  d: Pick<Deposit, 'id' | 'organizationId'>,
  action: string,
  before: Record<string, unknown> | null,
  after: Record<string, unknown>,
) => auditAs(s.tx, s.deps, SYNC_ACTOR, { organizationId: d.organizationId, entityType: 'Deposit', entityId: d.id, action, before, after });

async function intentNow(s: SyncScope, d: Pick<Deposit, 'organizationId' | 'paymentIntentId'>): Promise<Date> {
  const e = d.paymentIntentId ? s.env.get(d.paymentIntentId) : undefined;
  return s.now(d.organizationId, e?.environmentType ?? (s.network.environmentType as 'SANDBOX' | 'PRODUCTION'));
}

/**
 * What a new transfer is as a deposit: wrong asset or below the minimum → REJECTED; screening or a
 * DISABLED asset-network → UNDER_REVIEW; otherwise DETECTED, or CONFIRMING when first seen already
 * in a block (but not yet deep).
 */
function classify(s: SyncScope, address: AddressRow, o: ObservedTransfer) {
  const an = s.assetNetworks.get(address.assetNetworkId);
  let status: DepositStatus = 'DETECTED';
  let reason: string | null = null;
  let reviewReason: string | null = null;
  if (o.assetNetworkId !== address.assetNetworkId) {
    status = 'REJECTED';
    reason = `${reasons.wrongAsset}: the address takes asset-network ${address.assetNetworkId}`;
  } else if (an && o.amount < numericToAmount(an.minimumDeposit)) {
    status = 'REJECTED';
    reason = `${reasons.belowMinimum}: the minimum deposit is ${numericToAmount(an.minimumDeposit)}`;
  } else {
    const verdict = screeningVerdict(s.network.kind, o);
    if (verdict) reviewReason = verdict;
    else if (an?.status === 'DISABLED') reviewReason = `${reasons.assetNetworkDisabled}: the asset-network was disabled`;
    if (reviewReason) status = 'UNDER_REVIEW';
  }
  const view = chainView(o, s.network.requiredConfirmations);
  // Counted from the chain: a transfer first seen already in a block starts CONFIRMING.
  if (status === 'DETECTED' && view.gone === null && !view.deep && view.confirmations > 0) status = 'CONFIRMING';
  return { status, reason, reviewReason, view };
}

/**
 * A new transfer (or a dropped one seen again): wrong asset or below the minimum → REJECTED;
 * screening or a DISABLED asset-network → UNDER_REVIEW; otherwise DETECTED, then as deep as the
 * chain says. After its intent expired or was cancelled, the deposit is late.
 */
async function detect(s: SyncScope, address: AddressRow, o: ObservedTransfer, existing?: Deposit): Promise<void> {
  const { tx, deps } = s;
  const intentId = address.paymentIntentId;
  const e = intentId ? s.env.get(intentId) : undefined;
  const now = await s.now(address.organizationId, e?.environmentType ?? (s.network.environmentType as 'SANDBOX' | 'PRODUCTION'));
  let late = false;
  let intent: IntentWithTransaction | null = null;
  if (e && intentId) {
    await lockTransactionRow(tx, e.transactionId);
    intent = await tx.paymentIntent.findUniqueOrThrow({ where: { id: intentId }, include: { transaction: true } });
    // Materializes an expiry that is due, so a deposit after ExpiresAt is late even before the sweep ran.
    if ((intent.status === 'AWAITING_PAYMENT' || intent.status === 'PROCESSING') && now >= intent.expiresAt)
      intent = await evaluateIntent(tx, deps, SYNC_ACTOR, intentId, now, intent);
    late = intent.status === 'EXPIRED' || intent.status === 'CANCELLED';
  }
  const { status, reason, reviewReason, view } = classify(s, address, o);
  const mined = o.status === 'MINED';
  const data = {
    status,
    reason,
    reviewReason,
    late,
    confirmations: mined ? o.confirmations : 0,
    blockHash: mined ? o.blockHash : null,
    blockHeight: mined ? o.blockHeight : null,
    detectedAt: now,
  };
  const d = existing
    ? await tx.deposit.update({ where: { id: existing.id }, data: { ...data, resolvedAt: null, creditedTo: null } })
    : await tx.deposit.create({
        data: {
          ...data,
          organizationId: address.organizationId,
          paymentIntentId: intentId,
          transactionId: e?.transactionId ?? null,
          depositAddressId: address.id,
          networkId: s.network.id,
          assetNetworkId: o.assetNetworkId,
          address: address.address,
          txHash: o.txHash,
          amount: amountToNumeric(o.amount),
        },
      });
  await audit(s, d, existing ? 'deposit.redetected' : 'deposit.detected', existing ? { status: existing.status, reason: existing.reason } : null, {
    status,
    txHash: d.txHash,
    amount: amountToNumeric(o.amount),
    late,
    ...(reason ? { reason } : {}),
    ...(reviewReason ? { reviewReason } : {}),
  });
  if (status === 'REJECTED') {
    await emit(tx, deps, d.organizationId, 'deposit.rejected', { DepositId: d.id, Reason: reason! });
    return;
  }
  await depositEvents(s, d, 'detected');
  if (status === 'UNDER_REVIEW') await emit(tx, deps, d.organizationId, 'deposit.under_review', { DepositId: d.id, Reason: reviewReason! });
  else if (status === 'CONFIRMING') await emit(tx, deps, d.organizationId, 'deposit.confirming', { DepositId: d.id, ConfirmationCount: d.confirmations });
  else if (view.gone === null && view.deep) return confirm(s, d, view, SYNC_ACTOR, intent ?? undefined);
  if (intentId && !late) await evaluateIntent(tx, deps, SYNC_ACTOR, intentId, now, intent ?? undefined);
}

type ChainPosition = { confirmations: number; blockHash: string | null; blockHeight: number | null };

/** The confirmation count changed below the required depth: one deposit.confirming per change. */
async function progress(s: SyncScope, d: Deposit, view: ChainPosition): Promise<boolean> {
  const status: DepositStatus = view.confirmations > 0 ? 'CONFIRMING' : 'DETECTED';
  if (d.status === status && d.confirmations === view.confirmations && d.blockHash === view.blockHash) return false;
  await s.tx.deposit.update({
    where: { id: d.id },
    data: { status, confirmations: view.confirmations, blockHash: view.blockHash, blockHeight: view.blockHeight },
  });
  await progressed(s, { d, status, view });
  return true;
}

/** What progress() emits and audits for one deposit whose row moved. */
async function progressed(s: SyncScope, { d, status, view }: Progression): Promise<void> {
  if (d.confirmations !== view.confirmations)
    await emit(s.tx, s.deps, d.organizationId, 'deposit.confirming', { DepositId: d.id, ConfirmationCount: view.confirmations });
  if (d.status !== status) await audit(s, d, `deposit.${status.toLowerCase()}`, { status: d.status }, { status, confirmations: view.confirmations });
}

/** A DETECTED or CONFIRMING deposit whose position on the chain moved, still short of its depth (progress(), set-based by progressMany). */
interface Progression {
  d: Deposit;
  status: 'DETECTED' | 'CONFIRMING';
  view: ChainPosition;
}

function progressable(s: SyncScope, d: Deposit, o: ObservedTransfer): Progression | null {
  if (d.status !== 'DETECTED' && d.status !== 'CONFIRMING') return null;
  const view = chainView(o, s.network.requiredConfirmations);
  if (view.gone !== null || view.deep) return null;
  const status = view.confirmations > 0 ? 'CONFIRMING' : 'DETECTED';
  if (d.status === status && d.confirmations === view.confirmations && d.blockHash === view.blockHash) return null;
  return { d, status, view: { confirmations: view.confirmations, blockHash: view.blockHash, blockHeight: view.blockHeight } };
}

/** Every deposit of the chunk that moved on the chain short of its depth (each block moves them all): one UPDATE, then progress()'s events and audit entries per deposit. */
async function progressMany(s: SyncScope, items: Progression[]): Promise<number> {
  await s.tx.$executeRaw`
    UPDATE "Deposit" AS d SET "status" = u.status::"DepositStatus", "confirmations" = u.confirmations, "blockHash" = u.hash,
           "blockHeight" = u.height, "updatedAt" = ${new Date()}
      FROM unnest(${items.map((i) => i.d.id)}::uuid[], ${items.map((i) => i.status)}::text[], ${items.map((i) => i.view.confirmations)}::int[],
                  ${items.map((i) => i.view.blockHash)}::text[], ${items.map((i) => i.view.blockHeight)}::int[]) AS u(id, status, confirmations, hash, height)
     WHERE d."id" = u.id`;
  for (const i of items) await progressed(s, i);
  return items.length;
}

/** Silent bookkeeping (no event): a deposit under review, or a confirmed one re-mined in another deep block. */
async function track(
  s: SyncScope,
  d: Deposit,
  view: { gone: string | null; confirmations?: number; blockHash?: string | null; blockHeight?: number | null },
): Promise<boolean> {
  if (view.gone !== null) return false;
  const confirmations = d.status === 'CONFIRMED' ? d.confirmations : view.confirmations!;
  if (d.confirmations === confirmations && d.blockHash === view.blockHash) return false;
  await s.tx.deposit.update({ where: { id: d.id }, data: { confirmations, blockHash: view.blockHash ?? null, blockHeight: view.blockHeight ?? null } });
  return true;
}

/**
 * The required depth is reached: CONFIRMED, credited through the ledger (DEBIT CHAIN_CLEARING,
 * CREDIT the transaction's ESCROW; a late deposit, or one without an open transaction, CREDIT the
 * organization's SUSPENSE), deposit.confirmed, and the intent evaluated (funding the transaction
 * once covered). A late deposit also emits payment_intent.late_deposit_received.
 */
export async function confirm(
  s: SyncScope,
  d: Deposit,
  view: { confirmations: number; blockHash: string | null; blockHeight: number | null },
  actor: Actor = SYNC_ACTOR,
  loaded?: IntentWithTransaction,
): Promise<void> {
  const { tx, deps } = s;
  const now = await intentNow(s, d);
  let to: 'ESCROW' | 'SUSPENSE' = 'SUSPENSE';
  let intent: IntentWithTransaction | null = null;
  if (d.paymentIntentId && d.transactionId) {
    // With `loaded`, the caller holds the row lock already and read the intent under it.
    if (!loaded) await lockTransactionRow(tx, d.transactionId);
    intent = loaded ?? (await tx.paymentIntent.findUniqueOrThrow({ where: { id: d.paymentIntentId }, include: { transaction: true } }));
    const open = intent.transaction.status === 'AWAITING_FUNDS' || intent.transaction.status === 'FUNDED' || intent.transaction.status === 'RESERVED';
    if (!d.late && open) to = 'ESCROW';
  }
  const late = d.late || (intent !== null && to === 'SUSPENSE');
  const confirmed = await tx.deposit.update({
    where: { id: d.id },
    data: {
      status: 'CONFIRMED',
      confirmations: view.confirmations,
      blockHash: view.blockHash,
      blockHeight: view.blockHeight,
      confirmedAt: now,
      creditedTo: to,
      late,
    },
  });
  await postDepositCredit(tx, deps, confirmed, to);
  await auditAs(tx, deps, actor, confirmedAudit(d, to, view.confirmations, late));
  await depositEvents(s, confirmed, 'confirmed');
  if (intent && late) {
    if (!intent.paidLate) await tx.paymentIntent.update({ where: { id: intent.id }, data: { paidLate: true } });
    await emit(tx, deps, d.organizationId, 'payment_intent.late_deposit_received', {
      PaymentIntentId: intent.id,
      TransactionId: intent.transactionId,
      DepositId: d.id,
      Amount: numericToAmount(d.amount),
      ExpiredAt: intent.expiredAt ?? intent.cancelledAt ?? intent.expiresAt,
      ReceivedAt: d.detectedAt,
    });
  } else if (intent) await evaluateIntent(tx, deps, actor, intent.id, now, intent);
}

/** The audit entry of a deposit's confirmation. */
const confirmedAudit = (d: Deposit, to: LedgerKind, confirmations: number, late: boolean) => ({
  organizationId: d.organizationId,
  entityType: 'Deposit',
  entityId: d.id,
  action: 'deposit.confirmed',
  before: { status: d.status },
  after: { status: 'CONFIRMED', creditedTo: to, amount: amountToNumeric(numericToAmount(d.amount)), confirmations, late },
});

/** A deposit of the chunk reaching its depth, confirmed with the chunk's others (confirmMany). */
interface Confirmation {
  d: Deposit;
  view: { confirmations: number; blockHash: string | null; blockHeight: number | null };
}

/**
 * A transfer whose deposit (DETECTED or CONFIRMING, of an intent, not late) reaches its depth now:
 * the common confirmation, taken set-based by confirmMany. Anything else (null) is reconciled alone.
 */
function batchable(s: SyncScope, d: Deposit, o: ObservedTransfer): Confirmation | null {
  if (d.status !== 'DETECTED' && d.status !== 'CONFIRMING') return null;
  if (!d.paymentIntentId || !d.transactionId || d.late) return null;
  const view = chainView(o, s.network.requiredConfirmations);
  if (view.gone !== null || !view.deep) return null;
  return { d, view: { confirmations: view.confirmations, blockHash: view.blockHash, blockHeight: view.blockHeight } };
}

/**
 * The confirmations of a chunk, set-based (issue 22; the settlement groups' shape): the rules are
 * confirm()'s and evaluateIntent's (decideIntent), the reads and writes one statement per table.
 *
 * - Reads, once, after locking every Transaction row of the batch in id order (one statement): the
 *   intents with their transactions, and their deposits' sums (one grouped read).
 * - Decisions, in memory: each deposit credited to its transaction's ESCROW, its intent's sums
 *   moved by it (undecided → credited), decideIntent. A deposit whose transaction is no longer open
 *   (late: SUSPENSE) or whose intent would expire now is confirmed alone by confirm(), after the
 *   others (still in this transaction, under the same locks): the rare paths keep their one code.
 * - Writes: one ledger_post for every credit (postLedgerTransactions; keys `deposit:<id>:confirmed`,
 *   so a credit is never posted twice), one UPDATE each for the deposits, the transactions and the
 *   intents (unnest), one insert of the release evaluation jobs; events and audit entries are queued
 *   in confirm()'s order per deposit and written once at the chunk's end (deferEvents, deferAudits).
 * A refused credit or any error rolls the chunk back whole; syncNetwork then redoes it address by
 * address (each confirmed alone), isolating a failing one, as before. Answers the changes (one per deposit).
 */
async function confirmMany(s: SyncScope, items: Confirmation[]): Promise<number> {
  const { tx, deps } = s;
  const { intents, sums } = await readIntents(
    s,
    items.map((i) => i.d.paymentIntentId!),
    items.map((i) => i.d.transactionId!),
  );
  const together: (Confirmation & { now: Date; decision: IntentDecision })[] = [];
  const alone: (Confirmation & { intent: IntentWithTransaction })[] = [];
  for (const it of items) {
    const intent = intents.get(it.d.paymentIntentId!)!;
    const open = OPEN_TRANSACTION.includes(intent.transaction.status) && intent.status !== 'EXPIRED' && intent.status !== 'CANCELLED';
    const now = await intentNow(s, it.d);
    const before = sums.get(intent.id)!;
    const decision = open
      ? decideIntent(intent, { ...before, credited: before.credited + numericToAmount(it.d.amount), undecided: before.undecided - 1 }, now)
      : null;
    if (!decision || decision.expire) alone.push({ ...it, intent });
    else together.push({ ...it, now, decision });
  }
  if (s.fast && alone.length) throw new NeedsPrisma();
  if (together.length) {
    // The writes pipelined (on the pool's connection): PostgreSQL runs the credits while the process
    // prepares the rows, events and audit entries that follow; a refused credit still fails the chunk.
    await pipelined(
      tx,
      postCredits(
        s,
        together.map((c) => c.d),
      ),
    );
    const updatedAt = new Date();
    await pipelined(
      tx,
      tx.$executeRaw`
      UPDATE "Deposit" AS d SET "status" = 'CONFIRMED', "confirmations" = u.confirmations, "blockHash" = u.hash, "blockHeight" = u.height,
             "confirmedAt" = u.at, "creditedTo" = 'ESCROW', "late" = false, "updatedAt" = ${updatedAt}
        FROM unnest(${together.map((c) => c.d.id)}::uuid[], ${together.map((c) => c.view.confirmations)}::int[],
                    ${together.map((c) => c.view.blockHash)}::text[], ${together.map((c) => c.view.blockHeight)}::int[],
                    ${together.map((c) => c.now.toISOString())}::timestamptz[]) AS u(id, confirmations, hash, height, at)
       WHERE d."id" = u.id`,
    );
    await writeDecisions(
      s,
      together.map((c) => c.decision),
      updatedAt,
    );
    for (const c of together) {
      const confirmed = { ...c.d, status: 'CONFIRMED' as const, transactionId: c.d.transactionId };
      await auditAs(tx, deps, SYNC_ACTOR, confirmedAudit(c.d, 'ESCROW', c.view.confirmations, false));
      await depositEvents(s, confirmed, 'confirmed');
      for (const e of c.decision.events) await emit(tx, deps, c.d.organizationId, e.type, e.fields as never);
      await auditAll(tx, deps, SYNC_ACTOR, c.decision.audits);
    }
  }
  for (const c of alone) await confirm(s, c.d, c.view, SYNC_ACTOR, c.intent);
  return items.length;
}

/**
 * The row writes of intents' decisions (decideIntent), one statement per table: the transactions
 * (funded amount, status, times), the intents (sums, status, succeededAt), the release evaluation
 * jobs. Their events and audit entries are the caller's (in its order).
 */
async function writeDecisions(s: SyncScope, decisions: IntentDecision[], updatedAt: Date): Promise<void> {
  const { tx, deps } = s;
  const transactions = decisions.filter((d) => d.transactionData).map((d) => d.transaction);
  // Pipelined (on the pool's connection): the caller's next statements queue behind these.
  if (transactions.length)
    await pipelined(
      tx,
      tx.$executeRaw`
      UPDATE "Transaction" AS t SET "fundedAmount" = u.funded, "status" = u.status::"TransactionStatus", "fundedAt" = u.funded_at,
             "reservedAt" = u.reserved_at, "updatedAt" = ${updatedAt}
        FROM unnest(${transactions.map((t) => t.id)}::uuid[], ${transactions.map((t) => String(numericToAmount(t.fundedAmount)))}::numeric[],
                    ${transactions.map((t) => t.status)}::text[], ${transactions.map((t) => t.fundedAt?.toISOString() ?? null)}::timestamptz[],
                    ${transactions.map((t) => t.reservedAt?.toISOString() ?? null)}::timestamptz[]) AS u(id, funded, status, funded_at, reserved_at)
       WHERE t."id" = u.id`,
    );
  const intents = decisions.filter((d) => d.intentData).map((d) => d.intent);
  if (intents.length)
    await pipelined(
      tx,
      tx.$executeRaw`
      UPDATE "PaymentIntent" AS p SET "detectedAmount" = u.detected, "confirmedAmount" = u.confirmed, "overpaid" = u.overpaid,
             "status" = u.status::"PaymentIntentStatus", "succeededAt" = u.succeeded_at, "updatedAt" = ${updatedAt}
        FROM unnest(${intents.map((i) => i.id)}::uuid[], ${intents.map((i) => String(numericToAmount(i.detectedAmount)))}::numeric[],
                    ${intents.map((i) => String(numericToAmount(i.confirmedAmount)))}::numeric[], ${intents.map((i) => i.overpaid)}::boolean[],
                    ${intents.map((i) => i.status)}::text[], ${intents.map((i) => i.succeededAt?.toISOString() ?? null)}::timestamptz[])
             AS u(id, detected, confirmed, overpaid, status, succeeded_at)
       WHERE p."id" = u.id`,
    );
  await pipelined(
    tx,
    sendReleaseEvaluations(
      tx,
      deps.boss,
      decisions.filter((d) => d.release).map((d) => d.transaction.id),
    ),
  );
}

/**
 * Confirmed deposits' credits to their transactions' ESCROW, with one ledger_post (keys
 * `deposit:<id>:confirmed`: never posted twice). A refusal throws: the chunk rolls back whole and is
 * redone address by address (syncNetwork), where the refused one fails alone.
 */
async function postCredits(s: SyncScope, deposits: Deposit[]): Promise<void> {
  if (!deposits.length) return;
  const posted = await postLedgerTransactions(
    s.tx,
    deposits.map((d) => depositCreditPosting(s.deps, d, 'ESCROW')),
  );
  for (const p of posted) if (p instanceof LedgerError) throw p;
}

/** Locks the Transaction rows of a batch (one statement, in id order) and reads their intents with their transactions and their deposits' sums. */
async function readIntents(s: SyncScope, intentIds: string[], transactionIds: string[]) {
  const { tx } = s;
  await tx.$queryRaw`SELECT 1 FROM "Transaction" WHERE "id" = ANY(${[...new Set(transactionIds)].sort()}::uuid[]) ORDER BY "id" FOR UPDATE`;
  // Raw (issue 22): the models' columns and types, also on the pool's connection.
  const ids = [...new Set(intentIds)];
  const rows = await tx.$queryRaw<PaymentIntent[]>`SELECT * FROM "PaymentIntent" WHERE "id" = ANY(${ids}::uuid[])`;
  const transactions = new Map(
    (await tx.$queryRaw<Transaction[]>`SELECT * FROM "Transaction" WHERE "id" = ANY(${rows.map((r) => r.transactionId)}::uuid[])`).map((t) => [t.id, t]),
  );
  const intents = new Map<string, IntentWithTransaction>(rows.map((i) => [i.id, { ...i, transaction: transactions.get(i.transactionId)! }]));
  return { intents, sums: await depositSumsOf(tx, [...intents.keys()]) };
}

/** A new transfer to an intent's address, detected with the chunk's others (detectMany). */
interface Detection {
  address: AddressRow & { paymentIntentId: string };
  o: ObservedTransfer;
  status: 'DETECTED' | 'CONFIRMING';
  /** First seen at its depth already (a sync behind the chain): detected and confirmed at once. */
  deep: boolean;
}

/** A new transfer that becomes a DETECTED or CONFIRMING deposit of an intent, or one confirmed at once: the common detection, set-based. */
function detectable(s: SyncScope, address: AddressRow, o: ObservedTransfer): Detection | null {
  if (!address.paymentIntentId || !s.env.has(address.paymentIntentId)) return null;
  const c = classify(s, address, o);
  if (c.view.gone !== null || (c.status !== 'DETECTED' && c.status !== 'CONFIRMING')) return null;
  return { address: address as Detection['address'], o, status: c.status, deep: c.view.deep };
}

/**
 * The detections of a chunk, set-based (issue 22), with detect()'s rules: the Transaction rows
 * locked at once, the intents and sums read once; an intent that is no longer open, or due (its
 * expiry is materialized first, and the deposit is late), is detected alone by detect(), after the
 * others. The rest: the deposits inserted with one statement, each intent decided in memory with
 * the new deposit live and undecided (decideIntent: PROCESSING), the rows written by writeDecisions;
 * deposit.detected (deposit.confirming when first seen in a block), then the intent's, per deposit.
 */
async function detectMany(s: SyncScope, items: Detection[]): Promise<number> {
  const { tx, deps } = s;
  const { intents, sums } = await readIntents(
    s,
    items.map((i) => i.address.paymentIntentId),
    items.map((i) => s.env.get(i.address.paymentIntentId)!.transactionId),
  );
  const together: (Detection & { d: Deposit; decision: IntentDecision })[] = [];
  const alone: Detection[] = [];
  const updatedAt = new Date();
  for (const it of items) {
    const intent = intents.get(it.address.paymentIntentId)!;
    const now = await s.now(it.address.organizationId, intent.environmentType);
    if (
      (intent.status !== 'AWAITING_PAYMENT' && intent.status !== 'PROCESSING') ||
      now >= intent.expiresAt ||
      !OPEN_TRANSACTION.includes(intent.transaction.status)
    ) {
      alone.push(it);
      continue;
    }
    const { o } = it;
    const mined = o.status === 'MINED';
    const d: Deposit = {
      id: monotonicUuidv7(),
      organizationId: it.address.organizationId,
      paymentIntentId: intent.id,
      transactionId: intent.transactionId,
      depositAddressId: it.address.id,
      networkId: s.network.id,
      assetNetworkId: o.assetNetworkId,
      address: it.address.address,
      txHash: o.txHash,
      amount: amountToNumeric(o.amount) as unknown as Deposit['amount'],
      status: it.deep ? 'CONFIRMED' : it.status,
      confirmations: mined ? o.confirmations : 0,
      blockHash: mined ? o.blockHash : null,
      blockHeight: mined ? o.blockHeight : null,
      late: false,
      creditedTo: it.deep ? 'ESCROW' : null,
      reason: null,
      reviewReason: null,
      detectedAt: now,
      confirmedAt: it.deep ? now : null,
      resolvedAt: null,
      createdAt: updatedAt,
      updatedAt,
    };
    const before = sums.get(intent.id)!;
    // The new deposit is live; undecided until deep, then credited.
    const after = it.deep
      ? { ...before, detected: before.detected + o.amount, live: before.live + 1, credited: before.credited + o.amount }
      : { ...before, detected: before.detected + o.amount, live: before.live + 1, undecided: before.undecided + 1 };
    const decision = decideIntent(intent, after, now);
    together.push({ ...it, d, decision });
  }
  if (s.fast && alone.length) throw new NeedsPrisma();
  if (together.length) {
    // Pipelined, as confirmMany's writes.
    await pipelined(
      tx,
      postCredits(
        s,
        together.filter((c) => c.deep).map((c) => c.d),
      ),
    );
    const ds = together.map((c) => c.d);
    await pipelined(
      tx,
      tx.$executeRaw`
      INSERT INTO "Deposit" ("id", "organizationId", "paymentIntentId", "transactionId", "depositAddressId", "networkId", "assetNetworkId",
                             "address", "txHash", "amount", "status", "confirmations", "blockHash", "blockHeight", "late", "detectedAt",
                             "confirmedAt", "creditedTo", "createdAt", "updatedAt")
      SELECT u.id, u.org, u.intent, u.tx, u.addr_id, ${s.network.id}::uuid, u.an, u.addr, u.hash, u.amount, u.status::"DepositStatus",
             u.confirmations, u.block_hash, u.block_height, false, u.detected_at, CASE WHEN u.deep THEN u.detected_at END,
             CASE WHEN u.deep THEN 'ESCROW'::"LedgerAccountKind" END, ${updatedAt}, ${updatedAt}
        FROM unnest(${ds.map((d) => d.id)}::uuid[], ${ds.map((d) => d.organizationId)}::uuid[], ${ds.map((d) => d.paymentIntentId)}::uuid[],
                    ${ds.map((d) => d.transactionId)}::uuid[], ${ds.map((d) => d.depositAddressId)}::uuid[], ${ds.map((d) => d.assetNetworkId)}::uuid[],
                    ${ds.map((d) => d.address)}::text[], ${ds.map((d) => d.txHash)}::text[], ${ds.map((d) => String(d.amount))}::numeric[],
                    ${ds.map((d) => d.status)}::text[], ${ds.map((d) => d.confirmations)}::int[], ${ds.map((d) => d.blockHash)}::text[],
                    ${ds.map((d) => d.blockHeight)}::int[], ${ds.map((d) => d.detectedAt.toISOString())}::timestamptz[],
                    ${ds.map((d) => d.status === 'CONFIRMED')}::boolean[])
             AS u(id, org, intent, tx, addr_id, an, addr, hash, amount, status, confirmations, block_hash, block_height, detected_at, deep)`,
    );
    await writeDecisions(
      s,
      together.map((c) => c.decision),
      updatedAt,
    );
    for (const c of together) {
      await audit(s, c.d, 'deposit.detected', null, { status: c.status, txHash: c.d.txHash, amount: amountToNumeric(c.o.amount), late: false });
      await depositEvents(s, c.d, 'detected');
      if (c.status === 'CONFIRMING')
        await emit(tx, deps, c.d.organizationId, 'deposit.confirming', { DepositId: c.d.id, ConfirmationCount: c.d.confirmations });
      if (c.deep) {
        // detect() then confirm(): the confirmation's audit entry and event follow the detection's.
        await auditAs(tx, deps, SYNC_ACTOR, confirmedAudit({ ...c.d, status: 'DETECTED' }, 'ESCROW', c.d.confirmations, false));
        await depositEvents(s, c.d, 'confirmed');
      }
      for (const e of c.decision.events) await emit(tx, deps, c.d.organizationId, e.type, e.fields as never);
      await auditAll(tx, deps, SYNC_ACTOR, c.decision.audits);
    }
  }
  for (const c of alone) await detect(s, c.address, c.o);
  return items.length;
}

/** Dropped, replaced, reverted (or gone while under review) before confirmation: REJECTED, never credited. */
async function reject(s: SyncScope, d: Deposit, reason: string): Promise<void> {
  const { tx, deps } = s;
  if (d.transactionId) await lockTransactionRow(tx, d.transactionId);
  const now = await intentNow(s, d);
  await tx.deposit.update({ where: { id: d.id }, data: { status: 'REJECTED', reason, resolvedAt: now } });
  await emit(tx, deps, d.organizationId, 'deposit.rejected', { DepositId: d.id, Reason: reason });
  await audit(s, d, 'deposit.rejected', { status: d.status }, { status: 'REJECTED', reason });
  if (d.paymentIntentId && !d.late) await evaluateIntent(tx, deps, SYNC_ACTOR, d.paymentIntentId, now);
}

/**
 * A confirmed deposit the chain no longer has at depth (a reorganization orphaned its block):
 * REORG_FROZEN, deposit.reorg_frozen, and its transaction frozen while the credit is in doubt.
 * No posting: AdminResolveDepositReorg decides (REMINED keeps the credit, GONE reverses it).
 */
async function reorgFreeze(s: SyncScope, d: Deposit, view: { confirmations: number; blockHash: string | null; blockHeight: number | null }): Promise<void> {
  const { tx, deps } = s;
  if (d.transactionId) await lockTransactionRow(tx, d.transactionId);
  await tx.deposit.update({
    where: { id: d.id },
    data: { status: 'REORG_FROZEN', confirmations: view.confirmations, blockHash: view.blockHash, blockHeight: view.blockHeight },
  });
  if (d.paymentIntentId)
    await emit(tx, deps, d.organizationId, 'deposit.reorg_frozen', { DepositId: d.id, PaymentIntentId: d.paymentIntentId, Amount: numericToAmount(d.amount) });
  await audit(s, d, 'deposit.reorg_frozen', { status: d.status, blockHash: d.blockHash }, { status: 'REORG_FROZEN', confirmations: view.confirmations });
  if (d.transactionId && d.creditedTo === 'ESCROW') await freezeForDeposit(tx, deps, SYNC_ACTOR, d.transactionId, d.id);
}
