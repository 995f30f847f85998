import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import pg from 'pg';
import type { Deps } from '../src/context';
import { balanceOf, createLedgerBatcher, ledgerMetrics, postLedgerTransaction, type LedgerAccountRef, type PostInput } from '../src/ledger/ledger';
import { checkLedgerInvariants } from '../test/ledger-invariants';

/**
 * The ledger scenario of `npm run bench` (issue 4, point 10): sustained balanced postings per
 * second through the ledger's own interface (createLedgerBatcher) with `callers` concurrent
 * callers, beside a baseline in the same round: one minimal durable two-entry transfer per commit
 * through the pg driver directly (BEGIN; two UPDATEs of balance rows; INSERT of two entries;
 * COMMIT) with the same callers. Both move amounts between random pairs of the same number of
 * accounts, and both commit durably (synchronous_commit on, the server's default).
 *
 * - The ledger side: one organization (its own sign-up), `accounts` customer Accounts created
 *   through REST, one asset-network (rows straight in the database, as the tests do), each account
 *   funded from CHAIN_CLEARING. A posting: DEBIT customer A, CREDIT customer B (the funds check,
 *   the frozen/closed check, idempotency key, versions, running totals: everything a real posting does).
 * - The baseline: tables of its own (bench_balance, bench_entry) with the same number of rows.
 * - Measured per side: postings committed per second in the window (after a warm-up), caller-side
 *   latency (post call to answer), errors; the ledger side also batches and mean batch size; CPU of
 *   this process and of PostgreSQL. After all rounds: the ledger invariants
 *   (test/ledger-invariants.ts), each account's balance against what the callers were told, the
 *   committed count against the successes, and the baseline's total balance and entry count.
 */
export interface LedgerRunOptions {
  warmupSeconds: number;
  durationSeconds: number;
  callers: number;
}

export interface SideResult {
  postingsPerSecond: number;
  committed: number;
  errors: number;
  latencyMs: { p50: number; p99: number; max: number };
  cpuPercent: { bench: number; postgres: number; machine: number; machineCapacity: number };
}

export interface LedgerResult {
  name: 'ledger';
  accounts: number;
  callers: number;
  durationSeconds: number;
  batcher: { maxBatch: number; maxWaitMs: number; concurrency: number; batches: number; meanBatch: number; retries: number };
  ledger: SideResult;
  baseline: SideResult;
  ratio: number;
}

export interface LedgerBench {
  run(o: LedgerRunOptions): Promise<LedgerResult>;
  /** The checks after the run; throws when one fails. */
  verify(): Promise<string>;
  close(): Promise<void>;
}

type Call = (
  method: string,
  path: string,
  body?: unknown,
  headers?: Record<string, string>,
) => Promise<{ status: number; body?: Record<string, any>; text: string; headers: Pick<Headers, 'get'> }>;

const percentile = (sorted: number[], p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]! : NaN);
const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));
const FUNDING = 10n ** 15n;

export async function startLedgerBench(opts: {
  deps: Deps;
  call: Call;
  /** The owner's connection: the baseline makes its own tables. */
  databaseUrl: string;
  pgPort: number;
  accounts: number;
  batcher: { maxBatch: number; maxWaitMs: number; concurrency: number };
  say: (msg: string) => void;
}): Promise<LedgerBench> {
  const { deps, call, say } = opts;
  const db = deps.db;

  // The organization and its accounts, through REST.
  const email = `bench.ledger.${Date.now()}@example.com`;
  const password = 'correct horse battery staple';
  const signUp = await call('POST', '/v1/auth/signup', { email, password, name: 'Bench ledger', organizationName: `Bench ledger ${email}` });
  if (signUp.status !== 201) throw new Error(`signup: ${signUp.status} ${signUp.text}`);
  const organizationId = signUp.body!.organizationId as string;
  const login = await call('POST', '/v1/auth/login', { email, password });
  if (login.status !== 200) throw new Error(`login: ${login.status} ${login.text}`);
  const member = { authorization: `Bearer ${login.body!.accessToken}` };
  const accountIds: string[] = [];
  for (let i = 0; i < opts.accounts; i += 16) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(16, opts.accounts - i) }, async () => {
        const r = await call('POST', `/v1/organizations/${organizationId}/accounts`, { name: 'bench', mode: 'SANDBOX' }, member);
        if (r.status !== 201) throw new Error(`create account: ${r.status} ${r.text}`);
        return r.headers.get('location')!.split('/').pop()!;
      }),
    );
    accountIds.push(...batch);
  }
  // One asset-network of its own.
  const tag = `${Date.now()}`;
  const asset = await db.asset.create({ data: { code: `BENCH${tag}`, name: `Bench ${tag}`, decimals: 6 } });
  const network = await db.network.create({
    data: { name: `bench-ledger-${tag}`, kind: 'SANDBOX', environmentType: 'SANDBOX', blockTimeSeconds: 5, requiredConfirmations: 1 },
  });
  const assetNetworkId = (
    await db.assetNetwork.create({ data: { assetId: asset.id, networkId: network.id, decimals: 6, minimumDeposit: '0', status: 'ENABLED' } })
  ).id;
  const customers: LedgerAccountRef[] = accountIds.map((id) => ({ kind: 'CUSTOMER', ownerId: id, organizationId, assetNetworkId }));
  const clearing: LedgerAccountRef = { kind: 'CHAIN_CLEARING', ownerId: null, organizationId: null, assetNetworkId };
  for (const c of customers)
    await postLedgerTransaction(db, {
      idempotencyKey: `bench:fund:${c.ownerId}`,
      nature: 'bench.funding',
      organizationId,
      lines: [
        { account: clearing, direction: 'DEBIT', amount: FUNDING },
        { account: c, direction: 'CREDIT', amount: FUNDING },
      ],
      postedAt: new Date(),
    });

  // The baseline's tables: the same number of balance rows, entries with a primary key only.
  const pool = new pg.Pool({ connectionString: opts.databaseUrl, max: 80 });
  await pool.query(`CREATE TABLE IF NOT EXISTS bench_balance (id int PRIMARY KEY, balance numeric(78,0) NOT NULL)`);
  await pool.query(
    `CREATE TABLE IF NOT EXISTS bench_entry (id bigserial PRIMARY KEY, tx uuid NOT NULL, account int NOT NULL, amount numeric(78,0) NOT NULL, created_at timestamptz NOT NULL)`,
  );
  await pool.query(`TRUNCATE bench_balance, bench_entry`);
  await pool.query(`INSERT INTO bench_balance SELECT g, $1::numeric FROM generate_series(1, $2::int) g`, [FUNDING.toString(), opts.accounts]);
  say(`ledger: organization ${organizationId}, ${opts.accounts} customer accounts funded with ${FUNDING} base units each, asset-network ${assetNetworkId}`);

  // What the callers were told, to check against the ledger at the end.
  const expected = new Map(customers.map((c) => [c.ownerId!, FUNDING]));
  let ledgerCommitted = 0;
  let baselineCommitted = 0;
  const runId = randomUUID();
  let seq = 0;
  const pair = () => {
    const a = Math.floor(Math.random() * opts.accounts);
    let b = Math.floor(Math.random() * (opts.accounts - 1));
    if (b >= a) b++;
    return [a, b] as const;
  };

  /** `callers` closed loops of `one()` for warm-up + duration; counts and latencies of the window. */
  async function drive(o: LedgerRunOptions, one: () => Promise<void>): Promise<Omit<SideResult, 'postingsPerSecond'> & { windowMs: number }> {
    let measuring = false;
    let stop = false;
    let committed = 0;
    let errors = 0;
    const latencies: number[] = [];
    const loops = Array.from({ length: o.callers }, async () => {
      while (!stop) {
        const t0 = performance.now();
        try {
          await one();
          if (measuring) {
            committed++;
            latencies.push(performance.now() - t0);
          }
        } catch (e) {
          errors++;
          if (errors <= 3) say(`ledger: a posting failed: ${String(e)}`);
        }
      }
    });
    await sleep(o.warmupSeconds * 1000);
    const cpu0 = cpuSnapshot(opts.pgPort);
    const w0 = performance.now();
    measuring = true;
    await sleep(o.durationSeconds * 1000);
    measuring = false;
    const windowMs = performance.now() - w0;
    const cpu = cpuDelta(cpu0, cpuSnapshot(opts.pgPort));
    stop = true;
    await Promise.all(loops);
    latencies.sort((x, y) => x - y);
    const pct = (micros: number) => Math.round((micros / 1000 / windowMs) * 100);
    return {
      committed,
      errors,
      windowMs,
      latencyMs: { p50: +percentile(latencies, 50).toFixed(1), p99: +percentile(latencies, 99).toFixed(1), max: +(latencies.at(-1) ?? NaN).toFixed(1) },
      cpuPercent: { bench: pct(cpu.bench), postgres: pct(cpu.postgres), machine: pct(cpu.machine), machineCapacity: cpu0.cores * 100 },
    };
  }

  async function run(o: LedgerRunOptions): Promise<LedgerResult> {
    // The ledger, through its batcher.
    const batcher = createLedgerBatcher(db, opts.batcher);
    const calls0 = ledgerMetrics.calls;
    const items0 = ledgerMetrics.items;
    const retries0 = ledgerMetrics.retries;
    const ledgerSide = await drive(o, async () => {
      const [a, b] = pair();
      const amount = BigInt(1 + Math.floor(Math.random() * 100));
      const input: PostInput = {
        idempotencyKey: `bench:${runId}:${++seq}`,
        nature: 'bench.transfer',
        organizationId,
        lines: [
          { account: customers[a]!, direction: 'DEBIT', amount },
          { account: customers[b]!, direction: 'CREDIT', amount },
        ],
        postedAt: new Date(),
      };
      await batcher.post(input);
      ledgerCommitted++;
      expected.set(customers[a]!.ownerId!, expected.get(customers[a]!.ownerId!)! - amount);
      expected.set(customers[b]!.ownerId!, expected.get(customers[b]!.ownerId!)! + amount);
    });
    await batcher.close();
    const batches = ledgerMetrics.calls - calls0;
    const items = ledgerMetrics.items - items0;

    // The baseline: one transfer per commit, the pg driver directly.
    const baselineSide = await drive(o, async () => {
      const [a, b] = pair();
      const amount = String(1 + Math.floor(Math.random() * 100));
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        // Rows in a fixed order, as the ledger does, so callers never deadlock.
        const [first, second] =
          a < b
            ? [
                [a, '-'],
                [b, '+'],
              ]
            : [
                [b, '+'],
                [a, '-'],
              ];
        await client.query(`UPDATE bench_balance SET balance = balance ${first[1]} $1::numeric WHERE id = $2`, [amount, Number(first[0]) + 1]);
        await client.query(`UPDATE bench_balance SET balance = balance ${second[1]} $1::numeric WHERE id = $2`, [amount, Number(second[0]) + 1]);
        const tx = randomUUID();
        await client.query(`INSERT INTO bench_entry (tx, account, amount, created_at) VALUES ($1, $2, -$4::numeric, now()), ($1, $3, $4::numeric, now())`, [
          tx,
          a + 1,
          b + 1,
          amount,
        ]);
        await client.query('COMMIT');
        baselineCommitted++;
      } catch (e) {
        await client.query('ROLLBACK').catch(() => {});
        throw e;
      } finally {
        client.release();
      }
    });

    const side = (s: Awaited<ReturnType<typeof drive>>): SideResult => ({
      postingsPerSecond: Math.round(s.committed / (s.windowMs / 1000)),
      committed: s.committed,
      errors: s.errors,
      latencyMs: s.latencyMs,
      cpuPercent: s.cpuPercent,
    });
    const ledger = side(ledgerSide);
    const baseline = side(baselineSide);
    return {
      name: 'ledger',
      accounts: opts.accounts,
      callers: o.callers,
      durationSeconds: o.durationSeconds,
      batcher: { ...opts.batcher, batches, meanBatch: batches ? +(items / batches).toFixed(1) : 0, retries: ledgerMetrics.retries - retries0 },
      ledger,
      baseline,
      ratio: +(ledger.postingsPerSecond / baseline.postingsPerSecond).toFixed(2),
    };
  }

  async function verify(): Promise<string> {
    await checkLedgerInvariants(db);
    for (const c of customers) {
      const b = await balanceOf(db, c);
      if (b.posted !== expected.get(c.ownerId!))
        throw new Error(`ledger: account ${c.ownerId} holds ${b.posted}, the callers were told ${expected.get(c.ownerId!)}`);
    }
    const committed = (
      await db.$queryRawUnsafe<{ n: number }[]>(`SELECT count(*)::int AS n FROM "LedgerTransaction" WHERE "idempotencyKey" LIKE $1`, `bench:${runId}:%`)
    )[0]!.n;
    if (committed !== ledgerCommitted) throw new Error(`ledger: ${committed} transactions committed, ${ledgerCommitted} successes answered`);
    const total = (
      await db.$queryRawUnsafe<{ t: string }[]>(
        `SELECT sum("creditsPosted" - "debitsPosted")::text AS t FROM "LedgerAccount" WHERE "kind" = 'CUSTOMER' AND "assetNetworkId" = $1::uuid`,
        assetNetworkId,
      )
    )[0]!.t;
    if (BigInt(total) !== FUNDING * BigInt(opts.accounts)) throw new Error(`ledger: customer balances sum to ${total}`);
    const base = (
      await pool.query<{ t: string; n: string }>(`SELECT (SELECT sum(balance) FROM bench_balance)::text AS t, (SELECT count(*) FROM bench_entry)::text AS n`)
    ).rows[0]!;
    if (BigInt(base.t) !== FUNDING * BigInt(opts.accounts)) throw new Error(`baseline: balances sum to ${base.t}`);
    if (Number(base.n) !== 2 * baselineCommitted) throw new Error(`baseline: ${base.n} entries for ${baselineCommitted} transfers`);
    return `ledger invariants hold; ${opts.accounts} balances equal what ${ledgerCommitted} answered postings imply; committed = answered; baseline: ${baselineCommitted} transfers, ${base.n} entries, total unchanged`;
  }

  return { run, verify, close: () => pool.end() };
}

// CPU accounting from /proc (Linux; zeros elsewhere), in microseconds.
const TICK_MICROS = 10_000;
export function procCpuMicros(pid: number | string): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * TICK_MICROS;
  } catch {
    return 0;
  }
}
export function postgresPids(port: number): number[] {
  try {
    const procs = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
    const parent = new Map<number, number>();
    let postmaster: number | undefined;
    for (const d of procs) {
      try {
        const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
        parent.set(Number(d), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
        if (postmaster === undefined && stat.includes('(postgres)')) {
          const args = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0');
          if (args[args.indexOf('-p') + 1] === String(port)) postmaster = Number(d);
        }
      } catch {
        // gone meanwhile
      }
    }
    if (postmaster === undefined) return [];
    return [postmaster, ...[...parent].filter(([, pp]) => pp === postmaster).map(([p]) => p)];
  } catch {
    return [];
  }
}
export function cpuSnapshot(pgPort: number) {
  let machine = 0;
  let cores = 0;
  try {
    const lines = readFileSync('/proc/stat', 'utf8').split('\n');
    const t = lines[0]!.split(/\s+/).slice(1).map(Number);
    machine = (t[0]! + t[1]! + t[2]! + t[5]! + t[6]! + t[7]!) * TICK_MICROS;
    cores = lines.filter((l) => /^cpu\d/.test(l)).length;
  } catch {
    // not Linux
  }
  return { bench: procCpuMicros(process.pid), postgres: new Map(postgresPids(pgPort).map((p) => [p, procCpuMicros(p)])), machine, cores };
}
export function cpuDelta(a: ReturnType<typeof cpuSnapshot>, b: ReturnType<typeof cpuSnapshot>) {
  let postgres = 0;
  for (const [pid, end] of b.postgres) postgres += Math.max(0, end - (a.postgres.get(pid) ?? 0));
  return { bench: b.bench - a.bench, postgres, machine: b.machine - a.machine };
}
