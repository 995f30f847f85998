import type { Deps } from '../src/context';
import {
  env,
  expectStatus,
  fetchCallerOf,
  fundBenchAccount,
  fundedHotAddress,
  httpCallerOf,
  idOf,
  pool,
  setupBenchIntegrator,
  type Call,
  median,
  textTable,
  type ScenarioBench,
} from './setup';
import { checkLedgerInvariants } from '../test/ledger-invariants';
import { balanceOf } from '../src/ledger/ledger';
import { numericToAmount } from '../src/money';
import { withdrawalRequestGroupStats } from '../src/withdrawals/requests';
import { cpuDelta, cpuSnapshot } from './ledger';

/**
 * The withdrawals scenario of `npm run bench` (BENCH_SCENARIOS=withdrawals): custodial
 * withdrawals end to end: request through REST, auto-approved (no policy), broadcast by the
 * service's withdrawal.broadcast workers (signed with the custodial key, sent to the sandbox
 * chain), blocks mined through the sandbox REST API, and the service's chain.sync workers
 * confirming them (each block's chain.sync follows the network's BROADCAST withdrawals). No job
 * function is called by the bench: the job runner alone moves them, as under `npm start`.
 *
 * Setup (once, through REST): an operator, a sandbox catalog (1 confirmation), an organization with
 * a sandbox API key, accounts and a withdrawal destination; a HOT treasury controlled address and a
 * seeded network resource reserve. Funding: the accounts are credited directly in the ledger (DEBIT
 * CHAIN_CLEARING, CREDIT CUSTOMER: the shape of a settled deposit; BENCH_WITHDRAWALS_ACCOUNTS
 * accounts, default 16, requests round robin), and the HOT address receives the same on the sandbox
 * chain (a sandbox send, mined): withdrawals pay from the treasury, as in production.
 *
 * Each round: BENCH_WITHDRAWALS_COUNT withdrawals (BENCH_WITHDRAWALS_CONCURRENCY requests in
 * flight); meanwhile a loop mines a block every BENCH_WITHDRAWALS_BLOCK_MS (default 100: a fast
 * chain's cadence; a comma-separated list gives each round the next value, e.g. `20,100` to compare
 * the old cadence with the new in one run) until every withdrawal of the round is CONFIRMED, checking
 * the round's statuses every 20 ms once the requests are answered.
 * withdrawals/s = withdrawals / (first request -> last confirmed).
 * After the rounds: every withdrawal CONFIRMED, the account's balance is the funding less the
 * withdrawals, no hold left pending, the ledger invariants hold.
 */
export interface WithdrawalsRound {
  withdrawals: number;
  concurrency: number;
  accounts: number;
  requestsPerSecond: number;
  /** End to end: first request -> last CONFIRMED. */
  withdrawalsPerSecond: number;
  /**
   * Where the round's wall clock went: request (first request -> last 201), broadcast (last 201 ->
   * every withdrawal of the round BROADCAST or CONFIRMED), confirmation (-> every one CONFIRMED).
   * The phases overlap in the service (broadcasts start with the first request): each is measured
   * from the end of the one before, as the polling loop (one block mined every 20 ms) sees it.
   */
  seconds: { request: number; broadcast: number; confirmation: number; total: number };
  /**
   * Lock waits, sampled every 100 ms during the round from pg_stat_activity: the mean number of
   * backends waiting for a lock, and the statements they waited in (first 60 characters), most
   * waited first, with the share of the samples' waiting backends.
   */
  requestGroups: { groups: number; meanSize: number; isolated: number };
  /** The bench process's CPU (service + load generator) per withdrawal, in the request phase and in all; PostgreSQL's in all. */
  cpuMicrosPerWithdrawal: { request: number; total: number; postgres: number };
  /** The block cadence of the round (BENCH_WITHDRAWALS_BLOCK_MS), and the blocks it mined. */
  blockMs: number;
  /** The load generator's HTTP client for the round's requests and mines (BENCH_WITHDRAWALS_CLIENT). */
  client: WithdrawalsClient;
  blocks: number;
  lockWaits: { samples: number; meanWaiting: number; top: { statement: string; share: number }[] };
}

export type WithdrawalsBench = ScenarioBench<WithdrawalsRound>;

export const withdrawalsSettings = () => ({
  count: env('BENCH_WITHDRAWALS_COUNT', 500),
  concurrency: env('BENCH_WITHDRAWALS_CONCURRENCY', 16),
  accounts: env('BENCH_WITHDRAWALS_ACCOUNTS', 16),
  timeoutSeconds: env('BENCH_WITHDRAWALS_TIMEOUT', 600),
  blockMs: (process.env.BENCH_WITHDRAWALS_BLOCK_MS ?? '100').split(',').map((v) => {
    const ms = Number(v.trim());
    if (!Number.isInteger(ms) || ms < 1) throw new Error(`BENCH_WITHDRAWALS_BLOCK_MS: ${v} is not a whole number of milliseconds`);
    return ms;
  }),
  clients: (process.env.BENCH_WITHDRAWALS_CLIENT ?? 'http').split(',').map((v) => {
    const client = v.trim();
    if (client !== 'http' && client !== 'fetch') throw new Error(`BENCH_WITHDRAWALS_CLIENT: ${v} is neither http nor fetch`);
    return client as WithdrawalsClient;
  }),
});

/**
 * The load generator's HTTP client for a round's requests and mines (BENCH_WITHDRAWALS_CLIENT):
 * `http`, node:http on a keep-alive agent (the default since issue 22's session 9), or `fetch`, the
 * global fetch (bench/setup.ts's httpCallerOf and fetchCallerOf; undici's fetch: WHATWG
 * Request/Response objects and streams per call, ~12% of the process's busy samples in this
 * scenario, a cost of the load generator and not of the service, which shares its process). The
 * set-up always uses the shared caller (callerOf: BENCH_HTTP_CLIENT).
 */
export type WithdrawalsClient = 'http' | 'fetch';

const FUNDING = 10n ** 15n;
/** Enough network resource reserve for every broadcast of the rounds (21,000 each on the sandbox). */
const RESERVE = 10n ** 12n;

export async function startWithdrawalsBench(opts: {
  deps: Deps;
  call: Call;
  base: string;
  pgPort: number;
  say: (msg: string) => void;
}): Promise<WithdrawalsBench> {
  const { deps, call, say } = opts;
  const httpCall = httpCallerOf(opts.base);
  const fetchCall = fetchCallerOf(opts.base);
  const s = withdrawalsSettings();
  if (!deps.boss) throw new Error('withdrawals bench: the job runner is off (JOBS=on is needed)');
  const expect = expectStatus('withdrawals');
  const { assetNetworkId, networkId, org, app, apiKey, op } = await setupBenchIntegrator(deps, call, 'withdrawals', { code: 'BW', requiredConfirmations: 1 });
  const accounts: string[] = [];
  for (let i = 0; i < s.accounts; i++)
    accounts.push(idOf(expect(await call('POST', `/v1/organizations/${org}/accounts`, { name: `Payouts ${i}` }, apiKey), 201, 'account')));
  const destinationId = idOf(
    expect(
      await call('POST', `/v1/organizations/${org}/withdrawal-destinations`, { networkId, address: '0x00000000000000000000000000000000000000b1' }, apiKey),
      201,
      'destination',
    ),
  );
  // On the chain: the treasury's HOT address (registered by the operator) holds the funding, and the
  // network resource reserve pays the network cost of every broadcast (docs/withdrawals.md).
  const address = await fundedHotAddress(call, { assetNetworkId, apiKey, op }, { label: 'Bench hot', funding: FUNDING, reserve: RESERVE });
  expect(await call('POST', `/v1/sandbox/networks/${networkId}/mine`, { blocks: 1 }, apiKey), 200, 'mine');
  // In the ledger: the accounts hold the same, split evenly.
  const each = FUNDING / BigInt(accounts.length);
  for (const a of accounts)
    await fundBenchAccount(deps, { key: `bench-withdrawals-funding:${a}`, organizationId: org, assetNetworkId, accountId: a, amount: each });
  say(
    `withdrawals: organization ${org}, asset-network ${assetNetworkId}, ${accounts.length} accounts, HOT treasury source ${address}, reserve ${RESERVE}, no policy (auto-approved)`,
  );
  // What one block costs that has nothing to confirm (the load a mining cadence adds beside the
  // withdrawals): IDLE_BLOCKS mined through REST 20 ms apart, then every chain.sync job they queued
  // worked by the job runner; the bench process's and PostgreSQL's CPU per block (background work of
  // the window included: pg-boss's polls, the bench's wait).
  const IDLE_BLOCKS = 20;
  const idleCpu0 = cpuSnapshot(opts.pgPort);
  const idleT0 = performance.now();
  for (let i = 0; i < IDLE_BLOCKS; i++) {
    expect(await call('POST', `/v1/sandbox/networks/${networkId}/mine`, { blocks: 1 }, apiKey), 200, 'mine');
    await new Promise((r) => setTimeout(r, 20));
  }
  const pendingSyncs = 'SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND state IN ($2, $3, $4)';
  while ((await deps.db.$queryRawUnsafe<{ n: number }[]>(pendingSyncs, 'chain.sync', 'created', 'retry', 'active'))[0]!.n > 0)
    await new Promise((r) => setTimeout(r, 20));
  const idleCpu = cpuDelta(idleCpu0, cpuSnapshot(opts.pgPort));
  const idleMs = performance.now() - idleT0;
  // The background of a window as long, no block mined (pg-boss's polls of every queue, the bench's
  // 20 ms wait): what the blocks cost is the difference (issue 22, session 8).
  const quiet0 = cpuSnapshot(opts.pgPort);
  for (const end = performance.now() + idleMs; performance.now() < end;) await new Promise((r) => setTimeout(r, 20));
  const quietCpu = cpuDelta(quiet0, cpuSnapshot(opts.pgPort));
  say(
    `withdrawals: a block with nothing to confirm (${IDLE_BLOCKS} mined through REST, their chain.sync jobs worked, ${Math.round(idleMs)} ms): ` +
      `${Math.round(idleCpu.bench / IDLE_BLOCKS)} µs bench-process CPU and ${Math.round(idleCpu.postgres / IDLE_BLOCKS)} µs PostgreSQL CPU per block; ` +
      `less the background of as long a window without blocks: ${Math.round((idleCpu.bench - quietCpu.bench) / IDLE_BLOCKS)} µs and ` +
      `${Math.round((idleCpu.postgres - quietCpu.postgres) / IDLE_BLOCKS)} µs`,
  );

  const all: { id: string; amount: bigint }[] = [];
  let roundNo = 0;
  return {
    async run() {
      roundNo++;
      const n = s.count;
      const ids: string[] = new Array(n);
      const amounts: bigint[] = new Array(n);
      const blockMs = s.blockMs[(roundNo - 1) % s.blockMs.length]!;
      const client = s.clients[(roundNo - 1) % s.clients.length]!;
      const hot: Call = client === 'http' ? httpCall : fetchCall;
      const pg0 = cpuSnapshot(opts.pgPort);
      const t0 = performance.now();
      const cpu0 = process.cpuUsage();
      const groups0 = { ...(withdrawalRequestGroupStats(deps) ?? { groups: 0, items: 0, isolated: 0, largest: 0 }) };
      let cpuRequest = 0;
      let requested = false;
      let t1 = t0;
      const requests = pool(n, s.concurrency, async (i) => {
        const amount = BigInt(1_000 + roundNo * 10 + i);
        amounts[i] = amount;
        ids[i] = idOf(
          expect(
            await hot(
              'POST',
              `/v1/accounts/${accounts[i % accounts.length]}/withdrawals`,
              { amount: amount.toString(), assetNetworkId, withdrawalDestinationId: destinationId },
              apiKey,
            ),
            201,
            'withdrawal',
          ),
        );
      }).then(() => {
        requested = true;
        t1 = performance.now();
        const c = process.cpuUsage(cpu0);
        cpuRequest = c.user + c.system;
      });
      const deadline = performance.now() + s.timeoutSeconds * 1000;
      let tBroadcast = 0;
      const waits = new Map<string, number>();
      let samples = 0;
      let waiting = 0;
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          const rows = await deps.db.$queryRaw<{ q: string }[]>`
            SELECT left(regexp_replace(query, '[[:space:]]+', ' ', 'g'), 60) AS q FROM pg_stat_activity
             WHERE state = 'active' AND wait_event_type = 'Lock' AND datname = current_database()`;
          samples++;
          waiting += rows.length;
          for (const r of rows) waits.set(r.q, (waits.get(r.q) ?? 0) + 1);
          await new Promise((r) => setTimeout(r, 100));
        }
      })();
      // Mine a block every blockMs until every withdrawal of the round is CONFIRMED (by the job runner's chain.sync).
      let blocks = 0;
      let nextBlock = performance.now();
      for (;;) {
        if (performance.now() >= nextBlock) {
          expect(await hot('POST', `/v1/sandbox/networks/${networkId}/mine`, { blocks: 1 }, apiKey), 200, 'mine');
          blocks++;
          nextBlock += blockMs;
        }
        await new Promise((r) => setTimeout(r, Math.max(1, Math.min(20, nextBlock - performance.now()))));
        if (requested) {
          const by = new Map(
            (await deps.db.withdrawal.groupBy({ by: ['status'], where: { id: { in: ids } }, _count: { _all: true } })).map((g) => [g.status, g._count._all]),
          );
          const confirmed = by.get('CONFIRMED') ?? 0;
          if (!tBroadcast && confirmed + (by.get('BROADCAST') ?? 0) >= n) tBroadcast = performance.now();
          if (confirmed >= n) break;
          const bad = ['FAILED', 'REJECTED', 'REQUIRES_RECONCILIATION', 'BROADCAST_FAILED'].reduce((sum, k) => sum + (by.get(k as never) ?? 0), 0);
          if (bad) throw new Error(`withdrawals bench: ${bad} withdrawals failed or need reconciliation`);
        }
        if (performance.now() > deadline) throw new Error(`withdrawals bench: not all confirmed after ${s.timeoutSeconds} s`);
      }
      await requests;
      const t2 = performance.now();
      sampling = false;
      await sampler;
      all.push(...ids.map((id, i) => ({ id, amount: amounts[i]! })));
      const g = withdrawalRequestGroupStats(deps)!;
      const cpuTotal = process.cpuUsage(cpu0);
      const pgCpu = cpuDelta(pg0, cpuSnapshot(opts.pgPort));
      const sec = (ms: number) => +(ms / 1000).toFixed(2);
      return {
        withdrawals: n,
        concurrency: s.concurrency,
        accounts: accounts.length,
        requestsPerSecond: Math.round(n / ((t1 - t0) / 1000)),
        withdrawalsPerSecond: Math.round(n / ((t2 - t0) / 1000)),
        seconds: { request: sec(t1 - t0), broadcast: sec((tBroadcast || t2) - t1), confirmation: sec(t2 - (tBroadcast || t2)), total: sec(t2 - t0) },
        // The request groups (src/withdrawals/requests.ts) of the round, and the bench process's CPU
        // (service + load generator: one process) per withdrawal, in the request phase and in all.
        requestGroups: {
          groups: g.groups - groups0.groups,
          meanSize: +((g.items - groups0.items) / Math.max(1, g.groups - groups0.groups)).toFixed(1),
          isolated: g.isolated - groups0.isolated,
        },
        cpuMicrosPerWithdrawal: {
          request: Math.round(cpuRequest / n),
          total: Math.round((cpuTotal.user + cpuTotal.system) / n),
          postgres: Math.round(pgCpu.postgres / n),
        },
        blockMs,
        client,
        blocks,
        lockWaits: {
          samples,
          meanWaiting: +(waiting / Math.max(1, samples)).toFixed(2),
          top: [...waits.entries()]
            .sort((x, y) => y[1] - x[1])
            .slice(0, 5)
            .map(([statement, n]) => ({ statement, share: +(n / Math.max(1, waiting)).toFixed(2) })),
        },
      };
    },
    async verify() {
      const rows = await deps.db.withdrawal.findMany({
        where: { id: { in: all.map((x) => x.id) } },
        select: { status: true, amount: true, holdId: true, fromAddress: true },
      });
      const confirmed = rows.filter((r) => r.status === 'CONFIRMED');
      if (confirmed.length !== all.length) throw new Error(`${confirmed.length} of ${all.length} withdrawals CONFIRMED`);
      const out = confirmed.reduce((sum, r) => sum + numericToAmount(r.amount), 0n);
      const elsewhere = confirmed.filter((r) => r.fromAddress !== address).length;
      if (elsewhere) throw new Error(`${elsewhere} withdrawals were not paid from the HOT treasury address`);
      const reserve = expect(await call('GET', `/v1/admin/network-resource-reserve/${assetNetworkId}/balance`, undefined, op), 200, 'reserve balance').body!
        .balance as string;
      if (BigInt(reserve) !== RESERVE - 21_000n * BigInt(all.length))
        throw new Error(`the reserve holds ${reserve}; expected ${RESERVE - 21_000n * BigInt(all.length)} (21,000 per broadcast)`);
      let posted = 0n;
      for (const a of accounts) {
        const b = await balanceOf(deps.db, { kind: 'CUSTOMER', ownerId: a, organizationId: org, assetNetworkId });
        if (b.available !== b.posted) throw new Error(`account ${a}: posted ${b.posted}, available ${b.available}`);
        posted += b.posted;
      }
      if (posted !== each * BigInt(accounts.length) - out) throw new Error(`accounts hold ${posted}; expected ${each * BigInt(accounts.length) - out}`);
      const pending = await deps.db.ledgerHold.count({ where: { id: { in: rows.map((r) => r.holdId) }, status: { not: 'POSTED' } } });
      if (pending) throw new Error(`${pending} holds not POSTED`);
      await checkLedgerInvariants(deps.db);
      return `${all.length} withdrawals CONFIRMED from the HOT address, each hold posted once, 21,000 of reserve each; the ${accounts.length} accounts hold the funding less ${out}; ledger invariants hold`;
    },
  };
}

/** The scenario's table (the round with the median withdrawals/s) and its target. */
export function withdrawalsReport(runs: WithdrawalsRound[], check: { ok: boolean; detail: string } | undefined) {
  const m = median(runs.map((r) => r.withdrawalsPerSecond));
  const r = runs.find((x) => x.withdrawalsPerSecond === m)!;
  const rows = [
    [
      'withdrawals',
      'requests/s',
      'withdrawals/s',
      'total s',
      'phases s (request / broadcast / confirmation)',
      'rounds: withdrawals/s (block every ms, client)',
    ],
    [
      `${r.withdrawals} custodial from HOT, auto-approved, ${r.accounts} accounts, ${r.concurrency} in flight`,
      String(r.requestsPerSecond),
      String(r.withdrawalsPerSecond),
      String(r.seconds.total),
      `${r.seconds.request} / ${r.seconds.broadcast} / ${r.seconds.confirmation}`,
      runs.map((x) => `${x.withdrawalsPerSecond} (${x.blockMs}, ${x.client})`).join(', '),
    ],
  ];
  return {
    result: { ...r, rounds: runs },
    table: textTable(rows),
    targets: [
      {
        target: 'withdrawals: measured (no target set): request -> auto-approve -> broadcast -> mine -> confirmed, end to end (median of the rounds)',
        met: null,
        measured: `${r.withdrawalsPerSecond}/s (requests through REST ${r.requestsPerSecond}/s)`,
      },
      {
        target: 'withdrawals: every withdrawal CONFIRMED once from the HOT address, reserve consumed once each, balance exact, ledger invariants hold',
        met: check?.ok ?? null,
        measured: check?.detail ?? 'not checked',
      },
    ],
  };
}
