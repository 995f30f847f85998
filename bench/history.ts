import { rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { resolve } from 'node:path';
import pg from 'pg';
import type { Logger } from 'pino';
import type { Config } from '../src/config';
import type { Deps } from '../src/context';
import { createDeps } from '../src/compose';
import { startEmbeddedPostgres } from '../src/db/embedded';
import { applyMigrations } from '../src/db/migrate';
import { SERVICE_ROLE } from '../src/db/roles';
import { startServer } from '../src/server';
import { stopJobs } from '../jobs/index';
import { quietSyncSql, syncNetwork } from '../src/deposits/sync';
import { payerAddress } from '../src/chains/sandbox/chain';
import { callerOf, env, expectStatus, fundBenchAccount, fundedHotAddress, idOf, median, setupBenchIntegrator, sleep, textTable, type Call } from './setup';

/**
 * The history scenario of `npm run bench` (BENCH_SCENARIOS=history; issue 22, point 2): do everyday
 * operations stay flat as history grows? One service, one database, one run:
 *
 * Two worlds side by side, each a service (this process, job runner on, the bench's configuration)
 * on its own fresh embedded PostgreSQL (BENCH_PG_PORT+1 and +2, data under the OS temp folder,
 * removed after): one holds the small history, the other the large, so every measurement alternates
 * between them (small then large, then large then small, ... BENCH_HISTORY_SAMPLES times each) and
 * whatever else loads the machine at that moment hits both alike. The ratio read is the median of
 * the per-pair ratios, beside the ratio of the two medians.
 *
 * 1. Setup through REST in each world: an operator, a sandbox network (1 confirmation), an
 *    organization with a sandbox API key, a custodial wallet and a beneficiary account.
 * 2. Each world's history (BENCH_HISTORY_SMALL, default 10^4, and BENCH_HISTORY_LARGE, default
 *    10^6, ledger entries and audit entries; a tenth as many deposit addresses on the network, and
 *    as many past sandbox transfers from the organization's payer to them, each swept on to one
 *    address) is grown in bulk SQL through the service's own data model
 *    (generate_series INSERTs into LedgerTransaction and LedgerEntry, with their balance rows'
 *    totals and versions moved to match, AuditLogEntry, DepositAddress, SandboxTransaction mined
 *    below the sync's cursor, with the SandboxAddressBalance nets moved to match; and a tenth as
 *    many past payments: Transaction SETTLED with its participant, PaymentIntent SUCCEEDED on one of
 *    the past addresses, Settlement EXECUTED with its allocation, and a CONFIRMED custodial
 *    Withdrawal of the payouts account with its POSTED LedgerHold, each referencing a ledger
 *    transaction of the history, and its mined sandbox transfer from the HOT address to the
 *    destination), with every trigger and constraint on, then ANALYZE (as autovacuum
 *    would), then measured through the real interfaces:
 *    - deposit confirmation latency: a payment intent (REST), a sandbox send, one block mined; from
 *      the send to the deposit CONFIRMED, worked by the service's own job runner;
 *    - POST payment-intents with the wallet that holds the past addresses (the request's time);
 *    - a settlement of a transaction the deposit measure funded: POST /v1/transactions/{id}/settlements
 *      to EXECUTED by the service's settlement job;
 *    - a custodial withdrawal of an account (funded in the ledger; the treasury's HOT address funded
 *      on the chain, the network resource reserve seeded, no policy: auto-approved): POST to
 *      CONFIRMED, through the broadcast job, a block mined once it is BROADCAST, and chain.sync;
 *    - one chain.sync of the network (syncNetwork, the job's handler) after a block;
 *    - one block mined (REST) holding one transfer from the payer to the sweep address, the two
 *      addresses with the history's past transfers; and one chain.sync after such a block;
 *    - GET /v1/admin/audit-log at skip 0 and 5,000, without and with organizationId;
 *    - GET /v1/admin/ledger-entries at skip 0 and 5,000, without and with nature.
 *    Each is the median of BENCH_HISTORY_SAMPLES (default 15) runs per world, alternated.
 * 3. The database's own work, which the machine's load does not change: each search's SQL (the
 *    page at skip 0 and 5,000, and the capped count) and the sync's change queries under EXPLAIN
 *    (ANALYZE, BUFFERS) in both worlds, alternated: the buffers they touch (shared hit + read: a
 *    count of pages, the same on a quiet and on a loaded machine) and their execution time (median).
 * 4. The ratio large/small of each (target: at most 1.5x), and the EXPLAIN (ANALYZE) plans of the
 *    searches and of the sync's change query on the large history.
 */
export interface HistoryMeasure {
  name: string;
  /** Medians of each world's samples (ms). */
  small: number;
  large: number;
  /** The median of the per-pair ratios large/small (each pair measured back to back): the figure the target reads. */
  ratio: number;
  /** large / small of the two medians. */
  ratioOfMedians: number;
}
/** One statement under EXPLAIN (ANALYZE, BUFFERS) in both worlds: pages touched and execution time (median, ms). */
export interface HistoryDbMeasure {
  name: string;
  buffers: { small: number; large: number; ratio: number };
  executionMs: { small: number; large: number; ratio: number };
}
export interface HistoryResult {
  sizes: { small: Sizes; large: Sizes };
  growSeconds: { small: number; large: number };
  samples: number;
  loadAverage: { start: number[]; end: number[] };
  measures: HistoryMeasure[];
  database: HistoryDbMeasure[];
  plans: { name: string; plan: string }[];
}
interface Sizes {
  ledgerEntries: number;
  auditEntries: number;
  depositAddresses: number;
  /** Past sandbox transfers from the payer to the deposit addresses (and as many from them to the sweep address). */
  pastTransfers: number;
  /**
   * Past money of the organization, as many of each: payment intents SUCCEEDED (each on one of the past addresses), their
   * transactions SETTLED with a participant, an EXECUTED settlement and its allocation, and CONFIRMED custodial withdrawals
   * of the payouts account with their POSTED holds.
   */
  pastPayments: number;
}

const TARGET_RATIO = 1.5;
const CHUNK = 100_000;

/** A service on its own fresh embedded PostgreSQL, in this process (job runner on): one history size. */
interface World {
  deps: Deps;
  call: Call;
  ownerUrl: string;
  close(): Promise<void>;
}

async function startWorld(config: Config, log: Logger, name: string, port: number): Promise<World> {
  const dataDir = resolve(tmpdir(), `ftis-bench-history-${process.pid}-${name}`);
  rmSync(dataDir, { recursive: true, force: true });
  const db = await startEmbeddedPostgres({ dataDir, port, database: 'ftis_bench' });
  const steps: (() => Promise<unknown>)[] = [async () => rmSync(dataDir, { recursive: true, force: true }), () => db.stop()];
  try {
    await applyMigrations(db.ownerUrl, { serviceRole: SERVICE_ROLE });
    const deps = await createDeps(config, db.serviceUrl, log);
    steps.push(() => deps.db.$disconnect());
    const boss = deps.boss;
    if (boss) steps.push(() => stopJobs(boss, { graceful: true, timeout: 10_000 }));
    const server = await startServer(deps, 0, config.HOST);
    steps.push(() => server.close());
    return {
      deps,
      call: callerOf(server.url),
      ownerUrl: db.ownerUrl,
      close: async () => {
        for (const step of steps.reverse()) await step().catch(() => {});
      },
    };
  } catch (e) {
    for (const step of steps.reverse()) await step().catch(() => {});
    throw e;
  }
}

/** One world, set up and grown to its size: what is measured in it. */
interface Grown {
  sizes: Sizes;
  growSeconds: number;
  owner: pg.Client;
  org: string;
  networkId: string;
  depositLatency(): Promise<number>;
  syncAfterBlock(): Promise<void>;
  /** A payer → sweep transfer sent; answers the time to mine the block holding it (ms). */
  mineTransfer(): Promise<number>;
  /** A payer → sweep transfer sent and mined; answers the time of the chain.sync after it (ms). */
  syncAfterTransfer(): Promise<number>;
  search(path: string): Promise<void>;
  /** POST payment-intents with the wallet that holds the history's addresses: the request's time (ms). */
  createIntent(): Promise<number>;
  /** A settlement of a funded transaction (one the deposit measure funded, or a new one funded the same way): POST to EXECUTED by the job (ms). */
  settlementLatency(): Promise<number>;
  /** A custodial withdrawal from the HOT treasury address: POST → auto-approved → broadcast → mined → CONFIRMED (ms). */
  withdrawalLatency(): Promise<number>;
}

async function growWorld(w: World, size: Sizes, say: (msg: string) => void): Promise<Grown> {
  const { deps, call } = w;
  const expect = expectStatus('history');
  const s = await setupBenchIntegrator(deps, call, 'history', { code: 'BHI', requiredConfirmations: 1 });
  const { org, app, networkId, assetNetworkId, apiKey, op } = s;
  const walletId = idOf(
    expect(await call('POST', `/v1/applications/${app}/wallets`, { networkId, custodyMode: 'CUSTODIAL', label: 'history' }, apiKey), 201, 'wallet'),
  );
  const beneficiaryAccountId = idOf(expect(await call('POST', `/v1/organizations/${org}/accounts`, { name: 'Seller' }, apiKey), 201, 'account'));
  // Withdrawals (as bench/withdrawals.ts): a destination (outside the past deposit addresses, 0x00...01 to 0x00...186a0: a
  // destination that is one of them is a deposit address paid by every past withdrawal), the treasury's HOT address funded on the chain,
  // the network resource reserve seeded, and an account funded in the ledger.
  const destinationAddress = '0x' + 'd1'.repeat(20);
  const payoutsAccountId = idOf(expect(await call('POST', `/v1/organizations/${org}/accounts`, { name: 'Payouts' }, apiKey), 201, 'account'));
  const destinationId = idOf(
    expect(await call('POST', `/v1/organizations/${org}/withdrawal-destinations`, { networkId, address: destinationAddress }, apiKey), 201, 'destination'),
  );
  const hotAddress = await fundedHotAddress(call, s, { label: 'History hot', funding: 10n ** 15n, reserve: 10n ** 12n });
  await fundBenchAccount(deps, {
    key: `history-withdrawals-funding:${payoutsAccountId}`,
    organizationId: org,
    assetNetworkId,
    accountId: payoutsAccountId,
    amount: 10n ** 15n,
  });
  const owner = new pg.Client({ connectionString: w.ownerUrl });
  await owner.connect();
  // Two balance rows of their own (CUSTOMER rows of the bench organization, owned by no Account: only the history posts to them).
  const accounts = await owner.query<{ id: string }>(
    `INSERT INTO "LedgerAccount" ("id", "kind", "ownerId", "organizationId", "assetNetworkId", "normalBalance")
     SELECT uuidv7(), 'CUSTOMER', o, $2::uuid, $1::uuid, 'CREDIT' FROM (VALUES (gen_random_uuid()), (gen_random_uuid())) v(o) RETURNING "id"`,
    [assetNetworkId, org],
  );
  const [debitAccount, creditAccount] = accounts.rows.map((r) => r.id) as [string, string];
  const moneyDeps = { db: deps.db, clock: deps.clock, boss: deps.boss };
  const mine = async () => expect(await call('POST', `/v1/sandbox/networks/${networkId}/mine`, { blocks: 1 }, apiKey), 200, 'mine');
  // The past transfers are mined at height 0, below the sync's cursor (a block mined and synced
  // first): history the sync followed long ago, as on a network that has run for months.
  await mine();
  await syncNetwork(moneyDeps, networkId);
  const payer = payerAddress(org);
  const sweep = '0x' + '5e'.repeat(20);

  /** Grows the history to `to`, in chunks of CHUNK rows per statement, each its own transaction. */
  async function grow(to: Sizes) {
    for (let from = 0 / 2; from < to.ledgerEntries / 2; from += CHUNK / 2) {
      const n = Math.min(CHUNK / 2, to.ledgerEntries / 2 - from);
      await owner.query('BEGIN');
      const v = await owner.query<{ id: string; version: string }>(
        `SELECT "id", "version"::text FROM "LedgerAccount" WHERE "id" = ANY($1::uuid[]) FOR UPDATE`,
        [[debitAccount, creditAccount]],
      );
      const version = new Map(v.rows.map((r) => [r.id, Number(r.version)]));
      await owner.query(
        `WITH t AS (
           INSERT INTO "LedgerTransaction" ("id", "idempotencyKey", "payloadHash", "nature", "organizationId", "postedAt")
           SELECT uuidv7(), 'history:' || $1 || ':' || g, 'history', CASE WHEN g % 5 < 3 THEN 'history.filtered' ELSE 'history.other' END, $2::uuid,
                  now() - interval '30 days' + g * interval '1 second'
             FROM generate_series($3::int + 1, $3::int + $4::int) g
           RETURNING "id", "postedAt", split_part("idempotencyKey", ':', 3)::int AS g)
         INSERT INTO "LedgerEntry" ("id", "ledgerTransactionId", "ledgerAccountId", "assetNetworkId", "direction", "amount", "accountVersion", "createdAt")
         SELECT uuidv7(), t."id", x.account, $5::uuid, x.direction::"LedgerDirection", 1, x.version + t.g - $3::int, t."postedAt"
           FROM t CROSS JOIN (VALUES ($6::uuid, 'DEBIT', $7::bigint), ($8::uuid, 'CREDIT', $9::bigint)) x(account, direction, version)`,
        [s.tag, org, from, n, assetNetworkId, debitAccount, version.get(debitAccount)!, creditAccount, version.get(creditAccount)!],
      );
      await owner.query(`UPDATE "LedgerAccount" SET "debitsPosted" = "debitsPosted" + $2, "version" = "version" + $2, "updatedAt" = now() WHERE "id" = $1`, [
        debitAccount,
        n,
      ]);
      await owner.query(`UPDATE "LedgerAccount" SET "creditsPosted" = "creditsPosted" + $2, "version" = "version" + $2, "updatedAt" = now() WHERE "id" = $1`, [
        creditAccount,
        n,
      ]);
      await owner.query('COMMIT');
    }
    for (let from = 0; from < to.auditEntries; from += CHUNK) {
      const n = Math.min(CHUNK, to.auditEntries - from);
      // 60% of the entries are the bench organization's (so that skip 5,000 of the filtered search is within
      // the small history too), the others spread over 100 organizations.
      await owner.query(
        `INSERT INTO "AuditLogEntry" ("id", "occurredAt", "organizationId", "actorType", "entityType", "entityId", "action", "after")
         SELECT uuidv7(), now() - interval '30 days' + g * interval '1 second',
                CASE WHEN g % 5 < 3 THEN $1::uuid ELSE md5('history-org-' || (g % 100))::uuid END,
                'SYSTEM', 'History', gen_random_uuid(), 'history.entry', jsonb_build_object('n', g)
           FROM generate_series($2::int + 1, $2::int + $3::int) g`,
        [org, from, n],
      );
    }
    for (let from = 0; from < to.depositAddresses; from += CHUNK) {
      const n = Math.min(CHUNK, to.depositAddresses - from);
      await owner.query(
        `INSERT INTO "DepositAddress" ("id", "organizationId", "applicationId", "walletId", "networkId", "assetNetworkId", "address", "derivationIndex", "publicKey")
         SELECT uuidv7(), $1::uuid, $2::uuid, $3::uuid, $4::uuid, $5::uuid, '0x' || lpad(to_hex(g), 40, '0'), 100000000 + g, 'history'
           FROM generate_series($6::int + 1, $6::int + $7::int) g`,
        [org, app, walletId, networkId, assetNetworkId, from, n],
      );
    }
    for (let from = 0; from < to.pastTransfers; from += CHUNK) {
      const n = Math.min(CHUNK, to.pastTransfers - from);
      // Deposit address g received 1,000 from the payer and sent it on to the sweep address: its net 0.
      await owner.query('BEGIN');
      await owner.query(
        `INSERT INTO "SandboxTransaction" ("id", "networkId", "assetNetworkId", "txHash", "fromAddress", "toAddress", "amount", "status", "blockHash", "blockHeight",
                                           "senderOrganizationId", "recipientOrganizationId", "createdAt", "updatedAt")
         SELECT uuidv7(), $1::uuid, $2::uuid, '0x' || md5('history-in-' || $1::uuid::text || g) || md5(g || 'history-in-' || $1::uuid::text), $3, '0x' || lpad(to_hex(g), 40, '0'), 1000,
                'MINED'::"SandboxTransactionStatus", 'history', 0, $5::uuid, $5::uuid, now() - interval '30 days', now() - interval '30 days'
           FROM generate_series($6::int + 1, $6::int + $7::int) g
         UNION ALL
         SELECT uuidv7(), $1::uuid, $2::uuid, '0x' || md5('history-out-' || $1::uuid::text || g) || md5(g || 'history-out-' || $1::uuid::text), '0x' || lpad(to_hex(g), 40, '0'), $4, 1000,
                'MINED'::"SandboxTransactionStatus", 'history', 0, $5::uuid, NULL, now() - interval '30 days', now() - interval '30 days'
           FROM generate_series($6::int + 1, $6::int + $7::int) g`,
        [networkId, assetNetworkId, payer, sweep, org, from, n],
      );
      // Each address's deposit of the past, CONFIRMED long ago at height 0 (credited to SUSPENSE, as a late one is):
      // the open-deposit and reorganization checks of every sync walk past them, or must not.
      await owner.query(
        `INSERT INTO "Deposit" ("id", "organizationId", "depositAddressId", "networkId", "assetNetworkId", "address", "txHash", "amount", "status", "confirmations",
                                "blockHash", "blockHeight", "late", "creditedTo", "detectedAt", "confirmedAt", "createdAt", "updatedAt")
         SELECT uuidv7(), a."organizationId", a."id", a."networkId", a."assetNetworkId", a."address",
                '0x' || md5('history-in-' || $1::uuid::text || g) || md5(g || 'history-in-' || $1::uuid::text), 1000, 'CONFIRMED', 1,
                'history', 0, true, 'SUSPENSE', now() - interval '30 days', now() - interval '30 days', now() - interval '30 days', now() - interval '30 days'
           FROM generate_series($2::int + 1, $2::int + $3::int) g
           JOIN "DepositAddress" a ON a."networkId" = $1::uuid AND a."address" = '0x' || lpad(to_hex(g), 40, '0')`,
        [networkId, from, n],
      );
      await owner.query(
        `INSERT INTO "SandboxAddressBalance" AS b ("networkId", "assetNetworkId", "address", "net", "balance")
         SELECT $1::uuid, $2::uuid, '0x' || lpad(to_hex(g), 40, '0'), 0, 0 FROM generate_series($3::int + 1, $3::int + $4::int) g
         UNION ALL VALUES ($1::uuid, $2::uuid, $5::text, -1000 * $4::int::numeric, 0), ($1::uuid, $2::uuid, $6::text, 1000 * $4::int::numeric, 1000 * $4::int::numeric)
         ON CONFLICT ("networkId", "assetNetworkId", "address") DO UPDATE SET "net" = b."net" + EXCLUDED."net", "balance" = GREATEST(0, b."net" + EXCLUDED."net")`,
        [networkId, assetNetworkId, from, n, payer, sweep],
      );
      await owner.query('COMMIT');
    }
    const [environment] = (
      await owner.query<{ id: string; type: string }>(`SELECT "id", "type"::text FROM "Environment" WHERE "applicationId" = $1::uuid AND "type" = 'SANDBOX'`, [
        app,
      ])
    ).rows;
    if (!environment) throw new Error('history bench: no SANDBOX environment of the application');
    // The values as SQL literals (uuids, a hex address and a tag of this bench's own making).
    const q = Object.fromEntries(
      Object.entries({
        org,
        app,
        tag: s.tag,
        env: environment.id,
        assetNetwork: assetNetworkId,
        network: networkId,
        beneficiary: beneficiaryAccountId,
        payouts: payoutsAccountId,
        destination: destinationId,
        destinationAddress,
        debit: debitAccount,
        credit: creditAccount,
        hot: hotAddress,
      }).map(([k, v]) => {
        if (!/^[0-9a-zA-Z_-]+$/.test(v)) throw new Error(`history bench: ${k} ${v} is not a plain literal`);
        return [k, `'${v}'`];
      }),
    ) as Record<
      | 'org'
      | 'app'
      | 'tag'
      | 'env'
      | 'assetNetwork'
      | 'network'
      | 'beneficiary'
      | 'payouts'
      | 'destination'
      | 'destinationAddress'
      | 'debit'
      | 'credit'
      | 'hot',
      string
    >;
    // Deterministic ids (md5 of a tag, the organization and g) join the rows of one past payment without lookups.
    const rowId = (kind: string) => `md5('history-${kind}-' || ${q.org}::uuid::text || '-' || g)::uuid`;
    const at = `(now() - interval '30 days' + g * interval '1 second')`;
    // Each row's ledger transaction: the history's own of the same number (the organization's, posted at the same time).
    const ledgerTx = `(SELECT "id" FROM "LedgerTransaction" WHERE "idempotencyKey" = 'history:' || ${q.tag}::text || ':' || g)`;
    if (to.pastPayments > to.ledgerEntries / 2 || to.pastPayments > to.depositAddresses)
      throw new Error('history bench: more past payments than ledger transactions or addresses');
    for (let from = 0; from < to.pastPayments; from += CHUNK) {
      const n = Math.min(CHUNK, to.pastPayments - from);
      const series = `generate_series(${from + 1}, ${from + n}) g`;
      await owner.query('BEGIN');
      await owner.query(
        `INSERT INTO "Transaction" ("id", "organizationId", "applicationId", "environmentId", "environmentType", "assetNetworkId", "amount", "fundedAmount", "status",
                                    "settledAmount", "settledAt", "fundedAt", "reservedAt", "createdAt", "updatedAt")
         SELECT ${rowId('transaction')}, ${q.org}::uuid, ${q.app}::uuid, ${q.env}::uuid, 'SANDBOX', ${q.assetNetwork}::uuid, 1000, 1000, 'SETTLED', 1000, ${at}, ${at}, ${at}, ${at}, ${at}
           FROM ${series}`,
      );
      await owner.query(
        `INSERT INTO "TransactionParticipant" ("id", "transactionId", "accountId", "role")
         SELECT ${rowId('participant')}, ${rowId('transaction')}, ${q.beneficiary}::uuid, 'BENEFICIARY' FROM ${series}`,
      );
      await owner.query(
        `INSERT INTO "PaymentIntent" ("id", "organizationId", "applicationId", "environmentId", "environmentType", "transactionId", "assetNetworkId", "amount", "status",
                                      "depositAddressId", "detectedAmount", "confirmedAmount", "expiresAt", "succeededAt", "createdAt", "updatedAt")
         SELECT ${rowId('intent')}, ${q.org}::uuid, ${q.app}::uuid, ${q.env}::uuid, 'SANDBOX', ${rowId('transaction')}, ${q.assetNetwork}::uuid, 1000, 'SUCCEEDED',
                a."id", 1000, 1000, ${at} + interval '1 hour', ${at}, ${at}, ${at}
           FROM ${series}
           JOIN "DepositAddress" a ON a."networkId" = ${q.network}::uuid AND a."address" = '0x' || lpad(to_hex(g), 40, '0')`,
      );
      await owner.query(
        `UPDATE "DepositAddress" a SET "paymentIntentId" = ${rowId('intent')}
           FROM ${series} WHERE a."networkId" = ${q.network}::uuid AND a."address" = '0x' || lpad(to_hex(g), 40, '0')`,
      );
      await owner.query(
        `INSERT INTO "Settlement" ("id", "organizationId", "applicationId", "environmentId", "environmentType", "transactionId", "assetNetworkId", "status",
                                   "grossAmount", "feeAmount", "distributableAmount", "feePercentage", "isTotal", "attempts", "executedAt", "ledgerTransactionId", "createdAt", "updatedAt")
         SELECT ${rowId('settlement')}, ${q.org}::uuid, ${q.app}::uuid, ${q.env}::uuid, 'SANDBOX', ${rowId('transaction')}, ${q.assetNetwork}::uuid, 'EXECUTED',
                1000, 0, 1000, 0, true, 1, ${at}, ${ledgerTx}, ${at}, ${at}
           FROM ${series}`,
      );
      await owner.query(
        `INSERT INTO "SettlementAllocation" ("id", "settlementId", "transactionId", "organizationId", "participantId", "accountId", "amount", "status", "releasedAt", "createdAt", "updatedAt")
         SELECT ${rowId('allocation')}, ${rowId('settlement')}, ${rowId('transaction')}, ${q.org}::uuid, ${rowId('participant')}, ${q.beneficiary}::uuid, 1000, 'RELEASED', ${at}, ${at}, ${at}
           FROM ${series}`,
      );
      await owner.query(
        `INSERT INTO "LedgerHold" ("id", "ledgerTransactionId", "debitAccountId", "creditAccountId", "assetNetworkId", "amount", "postedAmount", "status",
                                   "resolvedAt", "resolvedByLedgerTransactionId", "createdAt")
         SELECT ${rowId('hold')}, ${ledgerTx}, ${q.debit}::uuid, ${q.credit}::uuid, ${q.assetNetwork}::uuid, 1000, 1000, 'POSTED', ${at}, ${ledgerTx}, ${at}
           FROM ${series}`,
      );
      await owner.query(
        `INSERT INTO "Withdrawal" ("id", "organizationId", "environmentType", "applicationId", "accountId", "assetNetworkId", "networkId", "withdrawalDestinationId",
                                   "toAddress", "amount", "status", "custodyMode", "fromAddress", "holdId", "txHash", "broadcastAttempts",
                                   "approvedAt", "broadcastAt", "confirmedAt", "createdAt", "updatedAt")
         SELECT ${rowId('withdrawal')}, ${q.org}::uuid, 'SANDBOX', ${q.app}::uuid, ${q.payouts}::uuid, ${q.assetNetwork}::uuid, ${q.network}::uuid, ${q.destination}::uuid,
                ${q.destinationAddress}, 1000, 'CONFIRMED', 'CUSTODIAL', ${q.hot}, ${rowId('hold')},
                '0x' || md5('history-withdrawal-' || ${q.org}::uuid::text || g) || md5(g || 'history-withdrawal-' || ${q.org}::uuid::text), 1,
                ${at}, ${at}, ${at}, ${at}, ${at}
           FROM ${series}`,
      );
      // Their transfers on the chain, from the HOT address to the destination, mined long ago below the sync's cursor,
      // with the two addresses' balance rows moved to match.
      await owner.query(
        `INSERT INTO "SandboxTransaction" ("id", "networkId", "assetNetworkId", "txHash", "fromAddress", "toAddress", "amount", "status", "blockHash", "blockHeight",
                                           "createdAt", "updatedAt")
         SELECT uuidv7(), ${q.network}::uuid, ${q.assetNetwork}::uuid, w."txHash", w."fromAddress", w."toAddress", w."amount", 'MINED', 'history', 0, w."createdAt", w."createdAt"
           FROM ${series} JOIN "Withdrawal" w ON w."id" = ${rowId('withdrawal')}`,
      );
      await owner.query(
        `INSERT INTO "SandboxAddressBalance" AS b ("networkId", "assetNetworkId", "address", "net", "balance")
         VALUES (${q.network}::uuid, ${q.assetNetwork}::uuid, ${q.hot}, -1000 * ${n}::numeric, 0),
                (${q.network}::uuid, ${q.assetNetwork}::uuid, ${q.destinationAddress}, 1000 * ${n}::numeric, 1000 * ${n}::numeric)
         ON CONFLICT ("networkId", "assetNetworkId", "address") DO UPDATE SET "net" = b."net" + EXCLUDED."net", "balance" = GREATEST(0, b."net" + EXCLUDED."net")`,
      );
      await owner.query('COMMIT');
    }
    await owner.query(
      `ANALYZE "LedgerTransaction", "LedgerEntry", "LedgerAccount", "AuditLogEntry", "DepositAddress", "Deposit", "SandboxTransaction", "SandboxAddressBalance",
               "Transaction", "TransactionParticipant", "PaymentIntent", "Settlement", "SettlementAllocation", "LedgerHold", "Withdrawal"`,
    );
  }
  const t = performance.now();
  // A failed growth ends the owner's connection before its world stops (else its error event is unhandled).
  await grow(size).catch(async (e: unknown) => {
    await owner.end().catch(() => {});
    throw e;
  });
  const growSeconds = +((performance.now() - t) / 1000).toFixed(1);
  say(`history: grown in ${growSeconds} s (${JSON.stringify(size)})`);

  let amountNo = 0;
  const sendPayerToSweep = async () =>
    expect(await call('POST', '/v1/sandbox/deposits', { address: sweep, amount: '1000', assetNetworkId }, apiKey), 201, 'sandbox send to the sweep address');
  /** Transactions funded by the deposit measure (SUCCEEDED intents), for the settlement measure. */
  const funded: string[] = [];
  const newIntent = async () =>
    expect(
      await call(
        'POST',
        `/v1/organizations/${org}/payment-intents`,
        { assetNetworkId, amount: String(1_000_000 + ++amountNo * 10), beneficiaryAccountId, walletId, expiresInSeconds: 3600 },
        apiKey,
      ),
      201,
      'payment intent',
    );
  /** A payment intent, its deposit sent and mined: the time from the send to the deposit CONFIRMED (ms), and its transaction (funded). */
  const fundedIntent = async () => {
    const intent = await newIntent();
    const got = expect(await call('GET', intent.headers.get('location')!, undefined, apiKey), 200, 'get payment intent').body!;
    const t0 = performance.now();
    expect(await call('POST', '/v1/sandbox/deposits', { address: got.address, amount: got.amount, assetNetworkId }, apiKey), 201, 'sandbox send');
    await mine();
    for (;;) {
      const d = await deps.db.deposit.findFirst({ where: { paymentIntentId: got.id, status: 'CONFIRMED' }, select: { id: true } });
      if (d) {
        const ms = performance.now() - t0;
        const { transactionId } = await deps.db.paymentIntent.findUniqueOrThrow({ where: { id: got.id as string }, select: { transactionId: true } });
        funded.push(transactionId);
        return { ms, transactionId };
      }
      if (performance.now() - t0 > 60_000) throw new Error('history bench: a deposit not confirmed within 60 s');
      await sleep(5);
    }
  };
  return {
    sizes: size,
    growSeconds,
    owner,
    org,
    networkId,
    async depositLatency() {
      return (await fundedIntent()).ms;
    },
    async createIntent() {
      const t0 = performance.now();
      await newIntent();
      return performance.now() - t0;
    },
    async settlementLatency() {
      if (!funded.length) await fundedIntent();
      const transactionId = funded.pop()!;
      const t0 = performance.now();
      const id = idOf(expect(await call('POST', `/v1/transactions/${transactionId}/settlements`, undefined, apiKey), 201, 'request settlement'));
      for (;;) {
        const r = await deps.db.settlement.findUniqueOrThrow({ where: { id }, select: { status: true } });
        if (r.status === 'EXECUTED') return performance.now() - t0;
        if (r.status === 'FAILED') throw new Error('history bench: a settlement FAILED');
        if (performance.now() - t0 > 60_000) throw new Error('history bench: a settlement not executed within 60 s');
        await sleep(5);
      }
    },
    async withdrawalLatency() {
      const t0 = performance.now();
      const id = idOf(
        expect(
          await call(
            'POST',
            `/v1/accounts/${payoutsAccountId}/withdrawals`,
            { amount: String(1_000 + ++amountNo), assetNetworkId, withdrawalDestinationId: destinationId },
            apiKey,
          ),
          201,
          'withdrawal',
        ),
      );
      let minedAt = 0;
      for (;;) {
        const r = await deps.db.withdrawal.findUniqueOrThrow({ where: { id }, select: { status: true } });
        if (r.status === 'CONFIRMED') return performance.now() - t0;
        if (!['PENDING_APPROVAL', 'APPROVED', 'BROADCAST'].includes(r.status)) throw new Error(`history bench: a withdrawal ${r.status}`);
        // Its block, once broadcast (again after 500 ms if the sync has not confirmed it yet).
        if (r.status === 'BROADCAST' && performance.now() - minedAt > 500) {
          await mine();
          minedAt = performance.now();
        }
        if (performance.now() - t0 > 60_000) throw new Error('history bench: a withdrawal not confirmed within 60 s');
        await sleep(5);
      }
    },
    async syncAfterBlock() {
      await mine();
      await syncNetwork(moneyDeps, networkId);
    },
    async mineTransfer() {
      await sendPayerToSweep();
      const t0 = performance.now();
      await mine();
      return performance.now() - t0;
    },
    async syncAfterTransfer() {
      await sendPayerToSweep();
      await mine();
      const t0 = performance.now();
      await syncNetwork(moneyDeps, networkId);
      return performance.now() - t0;
    },
    async search(path: string) {
      expect(await call('GET', path.replace('%ORG%', org), undefined, op), 200, path);
    },
  };
}

export async function runHistoryBench(opts: { config: Config; log: Logger; pgPort: number; say: (msg: string) => void }): Promise<HistoryResult> {
  const { say } = opts;
  const samples = env('BENCH_HISTORY_SAMPLES', 15);
  const sizeOf = (n: number): Sizes => ({
    ledgerEntries: n,
    auditEntries: n,
    depositAddresses: Math.round(n / 10),
    pastTransfers: Math.round(n / 10),
    pastPayments: Math.round(n / 10),
  });
  const sizes = { small: sizeOf(env('BENCH_HISTORY_SMALL', 10_000)), large: sizeOf(env('BENCH_HISTORY_LARGE', 1_000_000)) };
  const worlds: World[] = [];
  const grown: Grown[] = [];
  try {
    // One push each: a world that started is closed below even when the next one fails to start.
    worlds.push(await startWorld(opts.config, opts.log, 'small', opts.pgPort + 1));
    worlds.push(await startWorld(opts.config, opts.log, 'large', opts.pgPort + 2));
    grown.push(await growWorld(worlds[0]!, sizes.small, say));
    grown.push(await growWorld(worlds[1]!, sizes.large, say));
    const [small, large] = grown as [Grown, Grown];
    const startLoad = loadavg().map((x) => +x.toFixed(1));

    /** `samples` pairs, alternating which world goes first; each world's median and the median of the pair ratios. */
    async function alternated(name: string, f: (g: Grown) => Promise<number>): Promise<HistoryMeasure> {
      const xs: number[] = [];
      const ys: number[] = [];
      for (let i = 0; i < samples; i++) {
        if (i % 2 === 0) {
          xs.push(await f(small));
          ys.push(await f(large));
        } else {
          ys.push(await f(large));
          xs.push(await f(small));
        }
      }
      const a = median(xs);
      const b = median(ys);
      // Below a millisecond, timer and scheduling noise dominate: compared from 1 ms.
      const ratios = xs.map((x, k) => Math.max(1, ys[k]!) / Math.max(1, x));
      return {
        name,
        small: +a.toFixed(1),
        large: +b.toFixed(1),
        ratio: +median(ratios).toFixed(2),
        ratioOfMedians: +(Math.max(1, b) / Math.max(1, a)).toFixed(2),
      };
    }
    const timed = (f: (g: Grown) => Promise<unknown>) => async (g: Grown) => {
      const t = performance.now();
      await f(g);
      return performance.now() - t;
    };
    const measures: HistoryMeasure[] = [];
    measures.push(await alternated('deposit send → CONFIRMED (ms)', (g) => g.depositLatency()));
    measures.push(await alternated('POST payment-intents with the wallet of the past addresses (ms)', (g) => g.createIntent()));
    measures.push(await alternated('settlement POST → EXECUTED by the job (ms)', (g) => g.settlementLatency()));
    measures.push(await alternated('custodial withdrawal POST → CONFIRMED (auto-approved, broadcast, mined) (ms)', (g) => g.withdrawalLatency()));
    measures.push(
      await alternated(
        'chain.sync of the network after a block (ms)',
        timed((g) => g.syncAfterBlock()),
      ),
    );
    measures.push(await alternated('sandbox block mined, a payer transfer in it (ms)', (g) => g.mineTransfer()));
    measures.push(await alternated('chain.sync after a block with a payer transfer (ms)', (g) => g.syncAfterTransfer()));
    for (const [name, path] of searches) {
      await small.search(path); // warm
      await large.search(path);
      measures.push(
        await alternated(
          `GET ${name} (ms)`,
          timed((g) => g.search(path)),
        ),
      );
    }

    // The database's own work for the same statements, alternated too.
    const explainJson = async (g: Grown, sql: string | ((g: Grown) => string), params: (g: Grown) => unknown[]) => {
      const r = await g.owner.query<{ 'QUERY PLAN': [{ Plan: Record<string, number>; 'Execution Time': number }] }>(
        `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${typeof sql === 'string' ? sql : sql(g)}`,
        params(g),
      );
      const top = r.rows[0]!['QUERY PLAN'][0];
      return { buffers: (top.Plan['Shared Hit Blocks'] ?? 0) + (top.Plan['Shared Read Blocks'] ?? 0), ms: top['Execution Time'] };
    };
    const database: HistoryDbMeasure[] = [];
    for (const q of statements) {
      const xs: { buffers: number; ms: number }[] = [];
      const ys: { buffers: number; ms: number }[] = [];
      for (let i = 0; i < samples; i++) {
        if (i % 2 === 0) {
          xs.push(await explainJson(small, q.sql, q.params));
          ys.push(await explainJson(large, q.sql, q.params));
        } else {
          ys.push(await explainJson(large, q.sql, q.params));
          xs.push(await explainJson(small, q.sql, q.params));
        }
      }
      const bs = median(xs.map((x) => x.buffers));
      const bl = median(ys.map((x) => x.buffers));
      const ms = median(xs.map((x) => x.ms));
      const ml = median(ys.map((x) => x.ms));
      database.push({
        name: q.name,
        buffers: { small: bs, large: bl, ratio: +(Math.max(1, bl) / Math.max(1, bs)).toFixed(2) },
        // Compared from 0.1 ms: below it the figure is the clock's resolution.
        executionMs: { small: +ms.toFixed(3), large: +ml.toFixed(3), ratio: +(Math.max(0.1, ml) / Math.max(0.1, ms)).toFixed(2) },
      });
    }
    const endLoad = loadavg().map((x) => +x.toFixed(1));

    // The plans on the large history, as the service runs them (the same SQL).
    const plans: { name: string; plan: string }[] = [];
    for (const q of statements) {
      const r = await large.owner.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${typeof q.sql === 'string' ? q.sql : q.sql(large)}`,
        q.params(large),
      );
      plans.push({ name: q.name, plan: r.rows.map((x) => x['QUERY PLAN']).join('\n') });
    }
    return {
      sizes,
      growSeconds: { small: small.growSeconds, large: large.growSeconds },
      samples,
      loadAverage: { start: startLoad, end: endLoad },
      measures,
      database,
      plans,
    };
  } finally {
    for (const g of grown) await g.owner.end().catch(() => {});
    for (const w of worlds) await w.close();
  }
}

const searches: [string, string][] = [
  ['audit-log skip 0', '/v1/admin/audit-log?skip=0&take=50'],
  ['audit-log skip 5000', '/v1/admin/audit-log?skip=5000&take=50'],
  ['audit-log organizationId skip 0', `/v1/admin/audit-log?organizationId=%ORG%&skip=0&take=50`],
  ['audit-log organizationId skip 5000', `/v1/admin/audit-log?organizationId=%ORG%&skip=5000&take=50`],
  ['ledger-entries skip 0', '/v1/admin/ledger-entries?skip=0&take=50'],
  ['ledger-entries skip 5000', '/v1/admin/ledger-entries?skip=5000&take=50'],
  ['ledger-entries nature skip 0', '/v1/admin/ledger-entries?nature=history.filtered&skip=0&take=50'],
  ['ledger-entries nature skip 5000', '/v1/admin/ledger-entries?nature=history.filtered&skip=5000&take=50'],
];

/** The statements the searches and the sync run (src/admin/audit-search.ts, ledger-search.ts, src/deposits/sync.ts), as EXPLAIN takes them. */
const auditPage = (where: string, skip: number) =>
  `SELECT "id", "occurredAt", "organizationId", "actorType", "actorId", "entityType", "entityId", "action", "requestId", "before", "after"
     FROM "AuditLogEntry" ${where} ORDER BY "occurredAt" DESC, "id" DESC LIMIT 51 OFFSET ${skip}`;
const ledgerFrom = `FROM "LedgerEntry" e JOIN "LedgerTransaction" t ON t."id" = e."ledgerTransactionId" JOIN "LedgerAccount" a ON a."id" = e."ledgerAccountId"`;
const ledgerPage = (where: string, skip: number) =>
  `SELECT e."id", e."ledgerTransactionId", t."nature", t."organizationId", t."referenceType", t."referenceId", e."ledgerAccountId", a."kind", a."ownerId",
          e."assetNetworkId", e."direction", e."amount"::text, e."pending", e."holdId", e."accountVersion"::text, t."postedAt", e."createdAt"
     ${ledgerFrom} ${where} ORDER BY t."postedAt" DESC, e."id" DESC LIMIT 51 OFFSET ${skip}`;
const byOrg = 'WHERE "organizationId" = $1::uuid';
const byNature = `WHERE t."nature" = 'history.filtered'`;
const none = () => [];
const org = (g: Grown) => [g.org];
const network = (g: Grown) => [g.networkId];
const statements: { name: string; sql: string | ((g: Grown) => string); params: (g: Grown) => unknown[] }[] = [
  { name: 'audit-log skip 0', sql: auditPage('', 0), params: none },
  { name: 'audit-log skip 5000', sql: auditPage('', 5000), params: none },
  { name: 'audit-log organizationId skip 0', sql: auditPage(byOrg, 0), params: org },
  { name: 'audit-log organizationId skip 5000', sql: auditPage(byOrg, 5000), params: org },
  {
    name: 'audit-log total (capped count)',
    sql: `SELECT count(*) FROM (SELECT 1 FROM "AuditLogEntry" ORDER BY "occurredAt" DESC, "id" DESC LIMIT 1001) x`,
    params: none,
  },
  {
    name: 'audit-log organizationId total (capped count)',
    sql: `SELECT count(*) FROM (SELECT 1 FROM "AuditLogEntry" ${byOrg} ORDER BY "occurredAt" DESC, "id" DESC LIMIT 1001) x`,
    params: org,
  },
  { name: 'ledger-entries skip 0', sql: ledgerPage('', 0), params: none },
  { name: 'ledger-entries skip 5000', sql: ledgerPage('', 5000), params: none },
  { name: 'ledger-entries nature skip 0', sql: ledgerPage(byNature, 0), params: none },
  { name: 'ledger-entries nature skip 5000', sql: ledgerPage(byNature, 5000), params: none },
  { name: 'ledger-entries total (capped count)', sql: `SELECT count(*) FROM (SELECT 1 ${ledgerFrom} LIMIT 1001) x`, params: none },
  { name: 'ledger-entries nature total (capped count)', sql: `SELECT count(*) FROM (SELECT 1 ${ledgerFrom} ${byNature} LIMIT 1001) x`, params: none },
  {
    name: 'chain.sync: the changed addresses (sandbox adapter)',
    sql: `SELECT DISTINCT "toAddress" FROM "SandboxTransaction" WHERE "networkId" = $1::uuid AND ("blockHeight" >= (SELECT "height" FROM "ChainSyncCursor" WHERE "networkId" = $1::uuid) OR "status" IN ('PENDING', 'ORPHANED'))`,
    params: network,
  },
  {
    name: 'chain.sync: the open deposits',
    sql: `SELECT "depositAddressId" FROM "Deposit" WHERE "networkId" = $1::uuid AND ("status" IN ('DETECTED', 'CONFIRMING', 'UNDER_REVIEW') OR ("status" = 'CONFIRMED' AND "blockHeight" >= (SELECT "height" FROM "ChainSyncCursor" WHERE "networkId" = $1::uuid)))`,
    params: network,
  },
  {
    // The job's first statement for a SANDBOX network (quietSandboxSync), as the service sends it: it moves the
    // cursor to the tip when nothing waits, which is what the next sync would do.
    name: 'chain.sync: the quiet network check (the job, every block)',
    sql: (g) => quietSyncSql(g.networkId),
    params: none,
  },
];

/** The scenario's table, its plans and its targets. */
export function historyReport(r: HistoryResult) {
  const rows = [
    [
      `history (ms, median of ${r.samples} alternated pairs)`,
      `small (${r.sizes.small.ledgerEntries} entries, ${r.sizes.small.depositAddresses} addresses, ${r.sizes.small.pastTransfers} payer transfers, ${r.sizes.small.pastPayments} past payments)`,
      `large (${r.sizes.large.ledgerEntries}, ${r.sizes.large.depositAddresses}, ${r.sizes.large.pastTransfers}, ${r.sizes.large.pastPayments})`,
      'large/small (pairs)',
      'of medians',
    ],
    ...r.measures.map((m) => [m.name, String(m.small), String(m.large), `${m.ratio}x`, `${m.ratioOfMedians}x`]),
  ];
  const dbRows = [
    ['database work (EXPLAIN ANALYZE, BUFFERS)', 'buffers small', 'buffers large', 'ratio', 'exec ms small', 'exec ms large', 'ratio'],
    ...r.database.map((d) => [
      d.name,
      String(d.buffers.small),
      String(d.buffers.large),
      `${d.buffers.ratio}x`,
      String(d.executionMs.small),
      String(d.executionMs.large),
      `${d.executionMs.ratio}x`,
    ]),
  ];
  const plans = r.plans.map((p) => `\n-- EXPLAIN ${p.name} (large history)\n${p.plan}`).join('\n');
  return {
    result: r,
    table:
      textTable(rows) +
      '\n' +
      textTable(dbRows) +
      `\n(history grown in ${r.growSeconds.small} s and ${r.growSeconds.large} s; load average ${r.loadAverage.start.join(' ')} before the measures, ${r.loadAverage.end.join(' ')} after)\n` +
      plans,
    targets: [
      ...r.measures.map((m) => ({
        target: `history: ${m.name} at most ${TARGET_RATIO}x at the larger history (median of alternated pairs)`,
        met: m.ratio <= TARGET_RATIO,
        measured: `${m.small} → ${m.large} (${m.ratio}x; of medians ${m.ratioOfMedians}x)`,
      })),
      // Evidence, no target: at 10^4 rows a plan may read the whole small table (fewer pages than skip 5,000 costs at
      // any size), and at 10^6 the tables outgrow shared_buffers (a sequential scan's pages then come through a ring
      // buffer from the OS cache): both move these ratios without any work growing with history (docs/benchmarks.md).
      ...r.database.map((d) => ({
        target: `history: ${d.name}: database work at both sizes (measured, no target)`,
        met: null,
        measured: `${d.buffers.small} → ${d.buffers.large} buffers (${d.buffers.ratio}x); execution ${d.executionMs.small} → ${d.executionMs.large} ms (${d.executionMs.ratio}x)`,
      })),
    ],
  };
}
