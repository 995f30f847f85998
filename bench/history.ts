import pg from 'pg';
import type { Deps } from '../src/context';
import { syncNetwork } from '../src/deposits/sync';
import { env, expectStatus, idOf, median, setupBenchIntegrator, sleep, textTable, type Call } from './setup';

/**
 * The history scenario of `npm run bench` (BENCH_SCENARIOS=history; issue 22, point 2): do everyday
 * operations stay flat as history grows? One service, one database, one run:
 *
 * 1. Setup through REST: an operator, a sandbox network (1 confirmation), an organization with a
 *    sandbox API key, a custodial wallet and a beneficiary account.
 * 2. For each size (small, then large: BENCH_HISTORY_SMALL, default 10^4, and BENCH_HISTORY_LARGE,
 *    default 10^6, ledger entries and audit entries; a tenth as many deposit addresses on the
 *    network), the history is grown to that size in bulk SQL through the service's own data model
 *    (generate_series INSERTs into LedgerTransaction and LedgerEntry, with their balance rows'
 *    totals and versions moved to match, AuditLogEntry, DepositAddress), with every trigger and
 *    constraint on, then ANALYZE (as autovacuum would), then measured through the real interfaces:
 *    - deposit confirmation latency: a payment intent (REST), a sandbox send, one block mined; from
 *      the send to the deposit CONFIRMED, worked by the service's own job runner;
 *    - one chain.sync of the network (syncNetwork, the job's handler) after a block;
 *    - GET /v1/admin/audit-log at skip 0 and 5,000, without and with organizationId;
 *    - GET /v1/admin/ledger-entries at skip 0 and 5,000, without and with nature.
 *    Each is the median of BENCH_HISTORY_SAMPLES (default 7) runs.
 * 3. The ratio large/small of each (target: at most 1.5x), and the EXPLAIN (ANALYZE) plans of the
 *    searches and of the sync's change query on the grown history.
 */
export interface HistoryMeasure {
  name: string;
  small: number;
  large: number;
  ratio: number;
}
export interface HistoryResult {
  sizes: { small: Sizes; large: Sizes };
  growSeconds: { small: number; large: number };
  measures: HistoryMeasure[];
  plans: { name: string; plan: string }[];
}
interface Sizes {
  ledgerEntries: number;
  auditEntries: number;
  depositAddresses: number;
}

const TARGET_RATIO = 1.5;
const CHUNK = 100_000;

export async function runHistoryBench(opts: { deps: Deps; call: Call; ownerUrl: string; say: (msg: string) => void }) {
  const { deps, call, say } = opts;
  const expect = expectStatus('history');
  const samples = env('BENCH_HISTORY_SAMPLES', 7);
  const sizeOf = (n: number): Sizes => ({ ledgerEntries: n, auditEntries: n, depositAddresses: Math.round(n / 10) });
  const sizes = { small: sizeOf(env('BENCH_HISTORY_SMALL', 10_000)), large: sizeOf(env('BENCH_HISTORY_LARGE', 1_000_000)) };
  const s = await setupBenchIntegrator(deps, call, 'history', { code: 'BHI', requiredConfirmations: 1 });
  const { org, app, networkId, assetNetworkId, apiKey, op } = s;
  const walletId = idOf(
    expect(await call('POST', `/v1/applications/${app}/wallets`, { networkId, custodyMode: 'CUSTODIAL', label: 'history' }, apiKey), 201, 'wallet'),
  );
  const beneficiaryAccountId = idOf(expect(await call('POST', `/v1/organizations/${org}/accounts`, { name: 'Seller' }, apiKey), 201, 'account'));
  const owner = new pg.Client({ connectionString: opts.ownerUrl });
  await owner.connect();
  try {
    // Two balance rows of their own (CUSTOMER rows of the bench organization, owned by no Account: only the history posts to them).
    const accounts = await owner.query<{ id: string }>(
      `INSERT INTO "LedgerAccount" ("id", "kind", "ownerId", "organizationId", "assetNetworkId", "normalBalance")
       SELECT uuidv7(), 'CUSTOMER', o, $2::uuid, $1::uuid, 'CREDIT' FROM (VALUES (gen_random_uuid()), (gen_random_uuid())) v(o) RETURNING "id"`,
      [assetNetworkId, org],
    );
    const [debitAccount, creditAccount] = accounts.rows.map((r) => r.id) as [string, string];
    const grown: Sizes = { ledgerEntries: 0, auditEntries: 0, depositAddresses: 0 };

    /** Grows the history to `to`, in chunks of CHUNK rows per statement, each its own transaction. */
    async function grow(to: Sizes) {
      for (let from = grown.ledgerEntries / 2; from < to.ledgerEntries / 2; from += CHUNK / 2) {
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
        await owner.query(
          `UPDATE "LedgerAccount" SET "creditsPosted" = "creditsPosted" + $2, "version" = "version" + $2, "updatedAt" = now() WHERE "id" = $1`,
          [creditAccount, n],
        );
        await owner.query('COMMIT');
      }
      for (let from = grown.auditEntries; from < to.auditEntries; from += CHUNK) {
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
      for (let from = grown.depositAddresses; from < to.depositAddresses; from += CHUNK) {
        const n = Math.min(CHUNK, to.depositAddresses - from);
        await owner.query(
          `INSERT INTO "DepositAddress" ("id", "organizationId", "applicationId", "walletId", "networkId", "assetNetworkId", "address", "derivationIndex", "publicKey")
           SELECT uuidv7(), $1::uuid, $2::uuid, $3::uuid, $4::uuid, $5::uuid, '0x' || lpad(to_hex(g), 40, '0'), 100000000 + g, 'history'
             FROM generate_series($6::int + 1, $6::int + $7::int) g`,
          [org, app, walletId, networkId, assetNetworkId, from, n],
        );
      }
      Object.assign(grown, to);
      await owner.query('ANALYZE "LedgerTransaction", "LedgerEntry", "LedgerAccount", "AuditLogEntry", "DepositAddress", "Deposit", "SandboxTransaction"');
    }

    const moneyDeps = { db: deps.db, clock: deps.clock, boss: deps.boss };
    const timed = async (f: () => Promise<unknown>) => {
      const t = performance.now();
      await f();
      return performance.now() - t;
    };
    const sampled = async (f: () => Promise<unknown>) => {
      const xs: number[] = [];
      for (let i = 0; i < samples; i++) xs.push(await timed(f));
      return +median(xs).toFixed(1);
    };
    const mine = async () => expect(await call('POST', `/v1/sandbox/networks/${networkId}/mine`, { blocks: 1 }, apiKey), 200, 'mine');
    let amountNo = 0;
    async function depositLatency(): Promise<number> {
      const intent = expect(
        await call(
          'POST',
          `/v1/organizations/${org}/payment-intents`,
          { assetNetworkId, amount: String(1_000_000 + ++amountNo * 10), beneficiaryAccountId, walletId, expiresInSeconds: 3600 },
          apiKey,
        ),
        201,
        'payment intent',
      );
      const got = expect(await call('GET', intent.headers.get('location')!, undefined, apiKey), 200, 'get payment intent').body!;
      const t = performance.now();
      expect(await call('POST', '/v1/sandbox/deposits', { address: got.address, amount: got.amount, assetNetworkId }, apiKey), 201, 'sandbox send');
      await mine();
      for (;;) {
        const d = await deps.db.deposit.findFirst({ where: { paymentIntentId: got.id, status: 'CONFIRMED' }, select: { id: true } });
        if (d) return performance.now() - t;
        if (performance.now() - t > 60_000) throw new Error('history bench: a deposit not confirmed within 60 s');
        await sleep(5);
      }
    }
    const search = (path: string) => async () => expect(await call('GET', path, undefined, op), 200, path);
    const searches: [string, string][] = [
      ['audit-log skip 0', '/v1/admin/audit-log?skip=0&take=50'],
      ['audit-log skip 5000', '/v1/admin/audit-log?skip=5000&take=50'],
      ['audit-log organizationId skip 0', `/v1/admin/audit-log?organizationId=${org}&skip=0&take=50`],
      ['audit-log organizationId skip 5000', `/v1/admin/audit-log?organizationId=${org}&skip=5000&take=50`],
      ['ledger-entries skip 0', '/v1/admin/ledger-entries?skip=0&take=50'],
      ['ledger-entries skip 5000', '/v1/admin/ledger-entries?skip=5000&take=50'],
      ['ledger-entries nature skip 0', '/v1/admin/ledger-entries?nature=history.filtered&skip=0&take=50'],
      ['ledger-entries nature skip 5000', '/v1/admin/ledger-entries?nature=history.filtered&skip=5000&take=50'],
    ];
    async function measure(): Promise<Map<string, number>> {
      const out = new Map<string, number>();
      const latencies: number[] = [];
      for (let i = 0; i < samples; i++) latencies.push(await depositLatency());
      out.set('deposit send → CONFIRMED (ms)', +median(latencies).toFixed(1));
      out.set(
        'chain.sync of the network after a block (ms)',
        await sampled(async () => {
          await mine();
          await syncNetwork(moneyDeps, networkId);
        }),
      );
      for (const [name, path] of searches) {
        await search(path)(); // warm
        out.set(`GET ${name} (ms)`, await sampled(search(path)));
      }
      return out;
    }

    const growSeconds = { small: 0, large: 0 };
    let t = performance.now();
    await grow(sizes.small);
    growSeconds.small = +((performance.now() - t) / 1000).toFixed(1);
    say(`history: small history grown in ${growSeconds.small} s (${JSON.stringify(sizes.small)})`);
    const small = await measure();
    t = performance.now();
    await grow(sizes.large);
    growSeconds.large = +((performance.now() - t) / 1000).toFixed(1);
    say(`history: large history grown in ${growSeconds.large} s (${JSON.stringify(sizes.large)})`);
    const large = await measure();
    const measures: HistoryMeasure[] = [...small.keys()].map((name) => ({
      name,
      small: small.get(name)!,
      large: large.get(name)!,
      // Below a millisecond, timer and scheduling noise dominate: compared from 1 ms.
      ratio: +(Math.max(1, large.get(name)!) / Math.max(1, small.get(name)!)).toFixed(2),
    }));

    // The plans on the grown history, as the service runs them (the same SQL).
    const explain = async (name: string, sql: string, params: unknown[] = []) => {
      const r = await owner.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${sql}`, params);
      return { name, plan: r.rows.map((x) => x['QUERY PLAN']).join('\n') };
    };
    const auditPage = `SELECT "id", "occurredAt", "organizationId", "action" FROM "AuditLogEntry" %WHERE% ORDER BY "occurredAt" DESC, "id" DESC LIMIT 51 OFFSET 5000`;
    const ledgerPage = `SELECT e."id", t."postedAt", e."amount"::text FROM "LedgerEntry" e JOIN "LedgerTransaction" t ON t."id" = e."ledgerTransactionId"
      JOIN "LedgerAccount" a ON a."id" = e."ledgerAccountId" %WHERE% ORDER BY t."postedAt" DESC, e."id" DESC LIMIT 51 OFFSET 5000`;
    const plans = [
      await explain('audit-log skip 5000', auditPage.replace('%WHERE%', '')),
      await explain('audit-log organizationId skip 5000', auditPage.replace('%WHERE%', 'WHERE "organizationId" = $1::uuid'), [org]),
      await explain('audit-log total (capped count)', `SELECT count(*) FROM (SELECT 1 FROM "AuditLogEntry" LIMIT 1001) x`),
      await explain('ledger-entries skip 5000', ledgerPage.replace('%WHERE%', '')),
      await explain('ledger-entries nature skip 5000', ledgerPage.replace('%WHERE%', `WHERE t."nature" = 'history.filtered'`)),
      await explain(
        'ledger-entries total (capped count)',
        `SELECT count(*) FROM (SELECT 1 FROM "LedgerEntry" e JOIN "LedgerTransaction" t ON t."id" = e."ledgerTransactionId" JOIN "LedgerAccount" a ON a."id" = e."ledgerAccountId" LIMIT 1001) x`,
      ),
      await explain(
        'chain.sync: the changed addresses (sandbox adapter)',
        `SELECT DISTINCT "toAddress" FROM "SandboxTransaction" WHERE "networkId" = $1::uuid AND ("blockHeight" >= (SELECT "height" FROM "ChainSyncCursor" WHERE "networkId" = $1::uuid) OR "status" IN ('PENDING', 'ORPHANED'))`,
        [networkId],
      ),
      await explain(
        'chain.sync: the open deposits',
        `SELECT "depositAddressId" FROM "Deposit" WHERE "networkId" = $1::uuid AND ("status" IN ('DETECTED', 'CONFIRMING', 'UNDER_REVIEW') OR ("status" = 'CONFIRMED' AND "blockHeight" >= 0))`,
        [networkId],
      ),
    ];
    const result: HistoryResult = { sizes, growSeconds, measures, plans };
    return result;
  } finally {
    await owner.end();
  }
}

/** The scenario's table, its plans and its targets. */
export function historyReport(r: HistoryResult) {
  const rows = [
    [
      'history',
      `small (${r.sizes.small.ledgerEntries} entries, ${r.sizes.small.depositAddresses} addresses)`,
      `large (${r.sizes.large.ledgerEntries}, ${r.sizes.large.depositAddresses})`,
      'large/small',
    ],
    ...r.measures.map((m) => [m.name, String(m.small), String(m.large), `${m.ratio}x`]),
  ];
  const plans = r.plans.map((p) => `\n-- EXPLAIN ${p.name} (large history)\n${p.plan}`).join('\n');
  return {
    result: r,
    table: textTable(rows) + `\n(history grown in ${r.growSeconds.small} s, then ${r.growSeconds.large} s)\n` + plans,
    targets: r.measures.map((m) => ({
      target: `history: ${m.name} at most ${TARGET_RATIO}x at the larger history`,
      met: m.ratio <= TARGET_RATIO,
      measured: `${m.small} → ${m.large} (${m.ratio}x)`,
    })),
  };
}
