import type { Deps } from '../src/context';
import {
  env,
  expectStatus,
  pool,
  setupBenchIntegrator,
  setupIntentPayee,
  sleep,
  type BenchIntegrator,
  type Call,
  median,
  textTable,
  type ScenarioBench,
} from './setup';
import { checkLedgerInvariants } from '../test/ledger-invariants';
import { balanceOf } from '../src/ledger/ledger';
import { ledgerAccounts } from '../src/ledger/ledger';
import { sendGroupStats } from '../src/chains/sandbox/service';
import { cpuDelta, cpuSnapshot } from './ledger';

/**
 * The deposits scenario of `npm run bench` (BENCH_SCENARIOS=deposits): payment intents paid on the
 * sandbox chain, end to end through the public REST API and the service's own job runner.
 *
 * Setup (once): a platform operator, a sandbox catalog (asset, SANDBOX network with
 * BENCH_DEPOSITS_CONFIRMATIONS required confirmations, ENABLED asset-network), an organization with
 * a sandbox API key, a custodial wallet and a beneficiary account, all through REST.
 *
 * Each round, with BENCH_DEPOSITS_CONCURRENCY requests in flight:
 * 1. BENCH_DEPOSITS_INTENTS payment intents (POST /v1/organizations/{org}/payment-intents with walletId:
 *    the transaction, the address, three events, two audit entries, the expiry job);
 * 2. one sandbox send per intent (POST /v1/sandbox/deposits), each queuing a chain.sync job that the
 *    job runner works (deposit detection) while the sends go on;
 * 3. blocks mined (POST /v1/sandbox/networks/{id}/mine) to the required depth;
 * 4. wait until every deposit of the round is CONFIRMED: credited through the ledger (DEBIT
 *    CHAIN_CLEARING, CREDIT ESCROW), deposit.confirmed, transaction.funded and .reserved, the intent
 *    SUCCEEDED.
 * Measured: intents/s, sends/s, deposits confirmed per second from the first send to the last
 * confirmation (end to end) and from the mine to the last confirmation (the confirming sync alone),
 * and per deposit the latency from its send to its confirmation. After the rounds: every intent
 * SUCCEEDED, the escrow balances and CHAIN_CLEARING exact, the ledger invariants hold.
 *
 * The same rounds run on a real EVM chain as the scenario `evm-deposits` (bench/evm-deposits.ts):
 * the same intents in a PRODUCTION environment, the sends ERC-20 transfers on Hardhat's EDR node,
 * the blocks mined by the node, the deposits found by the EVM watcher; `DepositChain` is what differs.
 */
/** Where the deposits are paid: the catalog and integrator it made, how one deposit is sent, how the sends are mined to the required depth. */
export interface DepositChain {
  integrator: BenchIntegrator;
  send(address: string, amount: bigint): Promise<void>;
  /** Several deposits in one request (the sandbox's batch send, BENCH_DEPOSITS_SEND_BATCH); absent: the chain has none. */
  sendMany?(deposits: { address: string; amount: bigint }[]): Promise<void>;
  /** Mines the round's `sends` to the required depth. */
  settle(sends: number): Promise<void>;
  /** Mines one block (the blocks produced while the sends go on, BENCH_DEPOSITS_BLOCK_MS); absent: the chain produces its own. */
  mineOne?(): Promise<void>;
  close?(): Promise<void>;
}

/** The sandbox chain, through its REST endpoints (POST /v1/sandbox/deposits, POST /v1/sandbox/networks/{id}/mine). */
export async function sandboxDepositChain(deps: Pick<Deps, 'db'>, call: Call, requiredConfirmations: number): Promise<DepositChain> {
  const expect = expectStatus('deposits');
  const integrator = await setupBenchIntegrator(deps, call, 'deposits', { code: 'BD', requiredConfirmations });
  const { assetNetworkId, networkId, apiKey } = integrator;
  return {
    integrator,
    async send(address, amount) {
      expect(await call('POST', '/v1/sandbox/deposits', { address, amount: amount.toString(), assetNetworkId }, apiKey), 201, 'sandbox send');
    },
    async sendMany(deposits) {
      const body = { deposits: deposits.map((d) => ({ address: d.address, amount: d.amount.toString(), assetNetworkId })) };
      expect(await call('POST', '/v1/sandbox/deposits/batch', body, apiKey), 201, 'sandbox batch send');
    },
    async mineOne() {
      expect(await call('POST', `/v1/sandbox/networks/${networkId}/mine`, { blocks: 1 }, apiKey), 200, 'mine');
    },
    async settle(sends) {
      // Enough blocks for every send (a block takes up to 1,000 transactions) and the required depth.
      let blocks = Math.ceil(sends / 1000) + requiredConfirmations;
      while (blocks > 0) {
        const b = Math.min(100, blocks);
        expect(await call('POST', `/v1/sandbox/networks/${networkId}/mine`, { blocks: b }, apiKey), 200, 'mine');
        blocks -= b;
      }
    },
  };
}
export interface DepositsRound {
  intents: number;
  /**
   * Blocks mined every `blockMs` while the sends go on (a chain that produces blocks while deposits
   * arrive: detection and confirmation overlap the sends); 0: none, every block after the last send
   * (the serial round measured before issue 22's sixth session).
   */
  blockMs: number;
  /** Blocks mined during the send phase. */
  blocksDuringSends: number;
  /** The same round in the other block mode, run right after it (BENCH_DEPOSITS_BLOCK_MS lists two). */
  alongside?: DepositsRound;
  /** Deposits per send request: 0, one POST /v1/sandbox/deposits each (the judged round); n, POST …/deposits/batch of n. */
  sendBatch: number;
  /** The same round with the sends in batches (BENCH_DEPOSITS_SEND_BATCH), run right after it, beside (not judged). */
  batched?: DepositsRound;
  /**
   * CPU per deposit of the service's own thread (the service, its job runner and the bench's REST
   * client: one event loop), end to end, µs; the rest of the bench process's CPU is V8's and libuv's
   * helper threads (garbage collection above all).
   */
  serviceThreadMicrosPerDeposit: number;
  concurrency: number;
  requiredConfirmations: number;
  intentsPerSecond: number;
  sendsPerSecond: number;
  /** Deposits confirmed per second, first send → last confirmation. */
  confirmedPerSecond: number;
  /** Deposits confirmed per second, mine answered → last confirmation (the confirming syncs alone). */
  confirmSyncPerSecond: number;
  /** Send answered → deposit CONFIRMED (ms). */
  latencyMs: { p50: number; p90: number; p99: number; max: number };
  /**
   * Phases: create (intents), send (first send → last send answered), mine (the mine request),
   * confirm (mine answered → last confirmation), tail (last send answered → last confirmation).
   */
  seconds: { create: number; send: number; mine: number; confirm: number; tail: number; total: number };
  /**
   * CPU per deposit (µs), end to end (first send → last confirmation) and of the send phase alone:
   * the bench process (the service, its job runner and the REST client) and PostgreSQL's processes
   * (with pgPort; 0 without, or off Linux). Load-independent beside the rates.
   */
  cpuMicrosPerDeposit: { endToEnd: { bench: number; postgres: number }; send: { bench: number; postgres: number } };
  /** The sandbox sends' group commit in the send phase (null when the sends were not written in groups here). */
  sendGroups: { groups: number; sends: number; mean: number; largest: number } | null;
  /** `chain.sync` jobs sent during the round (one per send group, per block mined). */
  syncJobs: number;
  /** The fetches of those jobs by the workers: the syncs that ran (a fetch takes up to 500 jobs and syncs once). */
  syncFetches: number;
}

export type DepositsBench = ScenarioBench<DepositsRound>;

export const depositsSettings = () => ({
  intents: env('BENCH_DEPOSITS_INTENTS', 1000),
  /**
   * BENCH_DEPOSITS_BLOCK_MS: the block interval while the sends go on, ms (0, the default: every block
   * after the last send, as before); two values (`0,100`) run each round in both modes, the first one
   * judged, the second printed beside it.
   */
  blockModes: (process.env.BENCH_DEPOSITS_BLOCK_MS ?? '0')
    .split(',')
    .filter((x) => x.trim() !== '')
    .slice(0, 2)
    .map(Number),
  concurrency: env('BENCH_DEPOSITS_CONCURRENCY', 16),
  /**
   * BENCH_DEPOSITS_SEND_BATCH: 0 (the default) sends one request per deposit; n > 0 also runs each
   * round again right after with the sends in batches of n (POST /v1/sandbox/deposits/batch, the same
   * requests in flight), printed beside the judged per-deposit round.
   */
  sendBatch: env('BENCH_DEPOSITS_SEND_BATCH', 0),
  requiredConfirmations: env('BENCH_DEPOSITS_CONFIRMATIONS', 2),
  timeoutSeconds: env('BENCH_DEPOSITS_TIMEOUT', 600),
});

const threadMicros = () => {
  const u = process.threadCpuUsage();
  return u.user + u.system;
};
const percentile = (sorted: number[], p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]! : NaN);

export async function startDepositsBench(opts: {
  deps: Pick<Deps, 'db'>;
  call: Call;
  say: (msg: string) => void;
  /** The chain paid on (default: the sandbox). */
  chain?: DepositChain;
  /** The bench's PostgreSQL port: its processes' CPU is counted (cpuMicrosPerDeposit). */
  pgPort?: number;
}): Promise<DepositsBench & { close(): Promise<void> }> {
  const { deps, call, say } = opts;
  const s = depositsSettings();
  const expect = expectStatus('deposits');
  const chain = opts.chain ?? (await sandboxDepositChain(deps, call, s.requiredConfirmations));
  const { assetNetworkId, networkId, org, apiKey } = chain.integrator;
  const payee = await setupIntentPayee(call, chain.integrator, 'deposits');
  say(`deposits: organization ${org}, network ${networkId} (${s.requiredConfirmations} confirmations)`);

  const all: { id: string; transactionId: string; amount: bigint }[] = [];
  let roundNo = 0;

  const confirmedOnNetwork = async () =>
    Number(
      (
        await deps.db.$queryRaw<{ n: bigint }[]>`
          SELECT count(*) AS n FROM "Deposit" WHERE "networkId" = ${networkId}::uuid AND "status" = 'CONFIRMED'`
      )[0]!.n,
    );

  /** One round, with blocks mined every `blockMs` while the sends go on (0: none). */
  async function round(blockMs: number, sendBatch = 0): Promise<DepositsRound> {
    roundNo++;
    const n = s.intents;
    const intents: { id: string; transactionId: string; address: string; amount: bigint; sentAt: number }[] = new Array(n);
    const t0 = performance.now();
    await pool(n, s.concurrency, async (i) => {
      // Distinct amounts ending in 0 (an amount ending in 666 would be held for review by the sandbox's screening).
      const amount = BigInt(1_000_000 + roundNo * 100_000) + BigInt(i) * 10n;
      const r = await payee.createIntent(amount);
      const got = expect(await call('GET', r.headers.get('location')!, undefined, apiKey), 200, 'get payment intent');
      intents[i] = { id: got.body!.id, transactionId: got.body!.transactionId, address: got.body!.address, amount, sentAt: 0 };
    });
    const groups0 = { ...(sendGroupStats(deps.db) ?? { groups: 0, items: 0, largest: 0 }) };
    const jobs0 = new Date();
    const cpu1 = cpuSnapshot(opts.pgPort ?? -1);
    const confirmed0 = await confirmedOnNetwork();
    const t1 = performance.now();
    const thread1 = threadMicros();
    // Blocks while the sends go on, one every blockMs from the first send (a block that takes longer
    // delays the next: never two mines at once), until the last send is answered.
    let sending = true;
    let blocksDuringSends = 0;
    const producer = (async () => {
      if (!blockMs || !chain.mineOne) return;
      for (let due = performance.now() + blockMs; ; due += blockMs) {
        await sleep(Math.max(0, due - performance.now()));
        if (!sending) return;
        await chain.mineOne();
        blocksDuringSends++;
      }
    })();
    if (sendBatch > 0 && chain.sendMany) {
      const batches = Math.ceil(n / sendBatch);
      await pool(batches, s.concurrency, async (b) => {
        const of = intents.slice(b * sendBatch, (b + 1) * sendBatch);
        await chain.sendMany!(of);
        const at = Date.now();
        for (const x of of) x.sentAt = at;
      });
    } else
      await pool(n, s.concurrency, async (i) => {
        const x = intents[i]!;
        await chain.send(x.address, x.amount);
        x.sentAt = Date.now();
      });
    sending = false;
    const t2 = performance.now();
    const cpu2 = cpuSnapshot(opts.pgPort ?? -1);
    const groups1 = sendGroupStats(deps.db);
    await producer;
    await chain.settle(n);
    const t3 = performance.now();
    const ids = intents.map((x) => x.id);
    const deadline = Date.now() + s.timeoutSeconds * 1000;
    for (;;) {
      // The network is the scenario's own: its CONFIRMED deposits, counted on the (networkId, status) index, are
      // the earlier rounds' and this one's (a count over this round's n intent ids cost PostgreSQL ~0.2 ms per
      // deposit in the tail at 20 ms polls: the load generator's cost, not the product's).
      const confirmed = (await confirmedOnNetwork()) - confirmed0;
      if (confirmed >= n) break;
      if (Date.now() > deadline) throw new Error(`deposits bench: ${confirmed} of ${n} deposits confirmed after ${s.timeoutSeconds} s`);
      // The end seen within 20 ms (50 ms overstated a sub-second tail by up to 50 ms; finer would load the tail it measures).
      await sleep(20);
    }
    const t4 = performance.now();
    const thread4 = threadMicros();
    const cpu4 = cpuSnapshot(opts.pgPort ?? -1);
    // Jobs fetched together share their started_on: its distinct values count the syncs that ran.
    const syncJobs = await deps.db.$queryRaw<{ n: bigint; fetches: bigint }[]>`
      SELECT count(*) AS n, count(DISTINCT started_on) AS fetches FROM pgboss.job WHERE name = 'chain.sync' AND created_on >= ${jobs0}`;
    const perDeposit = (d: ReturnType<typeof cpuDelta>) => ({ bench: Math.round(d.bench / n), postgres: Math.round(d.postgres / n) });
    const rows = await deps.db.deposit.findMany({ where: { paymentIntentId: { in: ids } }, select: { paymentIntentId: true, confirmedAt: true } });
    const sentAt = new Map(intents.map((x) => [x.id, x.sentAt]));
    const latencies = rows.map((r) => r.confirmedAt!.getTime() - sentAt.get(r.paymentIntentId!)!).sort((a, b) => a - b);
    all.push(...intents.map((x) => ({ id: x.id, transactionId: x.transactionId, amount: x.amount })));
    const sec = (ms: number) => +(ms / 1000).toFixed(2);
    return {
      intents: n,
      blockMs: chain.mineOne ? blockMs : 0,
      blocksDuringSends,
      sendBatch: sendBatch > 0 && chain.sendMany ? sendBatch : 0,
      serviceThreadMicrosPerDeposit: Math.round((thread4 - thread1) / n),
      concurrency: s.concurrency,
      requiredConfirmations: s.requiredConfirmations,
      intentsPerSecond: Math.round(n / ((t1 - t0) / 1000)),
      sendsPerSecond: Math.round(n / ((t2 - t1) / 1000)),
      // One decimal: under load (or in short rounds) the figures are small, and evm-deposits is a ratio to this one.
      confirmedPerSecond: +(n / ((t4 - t1) / 1000)).toFixed(1),
      confirmSyncPerSecond: +(n / ((t4 - t3) / 1000)).toFixed(1),
      latencyMs: { p50: percentile(latencies, 50), p90: percentile(latencies, 90), p99: percentile(latencies, 99), max: latencies.at(-1) ?? NaN },
      seconds: { create: sec(t1 - t0), send: sec(t2 - t1), mine: sec(t3 - t2), confirm: sec(t4 - t3), tail: sec(t4 - t2), total: sec(t4 - t0) },
      cpuMicrosPerDeposit: { endToEnd: perDeposit(cpuDelta(cpu1, cpu4)), send: perDeposit(cpuDelta(cpu1, cpu2)) },
      sendGroups:
        groups1 && groups1.groups > groups0.groups
          ? {
              groups: groups1.groups - groups0.groups,
              sends: groups1.items - groups0.items,
              mean: +((groups1.items - groups0.items) / (groups1.groups - groups0.groups)).toFixed(1),
              largest: groups1.largest,
            }
          : null,
      syncJobs: Number(syncJobs[0]!.n),
      syncFetches: Number(syncJobs[0]!.fetches),
    };
  }

  return {
    close: async () => chain.close?.(),
    async run() {
      const [first = 0, second] = s.blockModes;
      const r = await round(first);
      // A chain that produces its own blocks (evm-deposits) has one mode.
      if (second !== undefined && chain.mineOne) r.alongside = await round(second);
      if (s.sendBatch > 0 && chain.sendMany) r.batched = await round(first, s.sendBatch);
      return r;
    },
    async verify() {
      // One array parameter, not one parameter per id: the memory bench's ten minutes pay 40,000 and more (PostgreSQL's limit is 32,767).
      const ids = all.map((x) => x.id);
      const [row] = await deps.db.$queryRaw<
        { n: bigint }[]
      >`SELECT count(*) AS n FROM "PaymentIntent" WHERE "id" = ANY(${ids}::uuid[]) AND "status" = 'SUCCEEDED'`;
      const succeeded = Number(row!.n);
      if (succeeded !== all.length) throw new Error(`${succeeded} of ${all.length} payment intents SUCCEEDED`);
      const total = all.reduce((s2, x) => s2 + x.amount, 0n);
      const clearing = (await balanceOf(deps.db, ledgerAccounts.clearing(assetNetworkId))).posted;
      if (clearing !== total) throw new Error(`CHAIN_CLEARING ${clearing}, deposits ${total}`);
      for (const x of all.slice(0, 50)) {
        const escrow = (await balanceOf(deps.db, ledgerAccounts.escrow({ id: x.transactionId, organizationId: org, assetNetworkId }))).posted;
        if (escrow !== x.amount) throw new Error(`escrow of ${x.transactionId}: ${escrow}, expected ${x.amount}`);
      }
      await checkLedgerInvariants(deps.db);
      return `${all.length} intents SUCCEEDED, CHAIN_CLEARING = sum of deposits (${total}), escrows exact (first 50 checked), ledger invariants hold`;
    },
  };
}

/**
 * The scenario's table (the round with the median confirmed/s) and its targets. `evm-deposits`
 * passes the sandbox's median of the same run: its target is a ratio to it.
 */
export function depositsReport(
  runs: DepositsRound[],
  check: { ok: boolean; detail: string } | undefined,
  opts: { name?: string; sandbox?: { confirmedPerSecond: number; target: number } } = {},
) {
  const name = opts.name ?? 'deposits';
  const m = median(runs.map((r) => r.confirmedPerSecond));
  const r = runs.find((x) => x.confirmedPerSecond === m)!;
  const ratio = opts.sandbox ? +(r.confirmedPerSecond / opts.sandbox.confirmedPerSecond).toFixed(2) : undefined;
  const rows = [
    [name, 'intents/s', 'sends/s', 'confirmed/s', 'confirm sync/s', 'p50 ms', 'p99 ms', 'rounds: confirmed/s (sync/s)'],
    [
      `${r.intents} intents, ${r.concurrency} in flight, ${r.requiredConfirmations} confirmations`,
      String(r.intentsPerSecond),
      String(r.sendsPerSecond),
      String(r.confirmedPerSecond) + (ratio !== undefined ? ` (${ratio}x sandbox)` : ''),
      String(r.confirmSyncPerSecond),
      String(r.latencyMs.p50),
      String(r.latencyMs.p99),
      runs.map((x) => `${x.confirmedPerSecond} (${x.confirmSyncPerSecond})`).join(', '),
    ],
  ];
  const measured = `${r.confirmedPerSecond}/s (confirming syncs alone ${r.confirmSyncPerSecond}/s; send to confirmed p50 ${r.latencyMs.p50} ms)`;
  return {
    result: { ...r, ...(ratio !== undefined ? { ratioToSandbox: ratio } : {}), rounds: runs },
    table: textTable(rows),
    targets: [
      opts.sandbox
        ? {
            target: `${name}: deposits confirmed per second >= ${opts.sandbox.target}x the sandbox's in the same run`,
            met: ratio! >= opts.sandbox.target,
            measured: `${ratio}x: ${measured} vs sandbox ${opts.sandbox.confirmedPerSecond}/s`,
          }
        : {
            target: `${name}: measured end to end${name === 'deposits' ? ' (no target set)' : ' (no sandbox figure in this run: select deposits too)'}: deposits confirmed per second, first send to last confirmation`,
            met: null,
            measured,
          },
      {
        target: `${name}: every intent SUCCEEDED, credited exactly once, ledger invariants hold`,
        met: check?.ok ?? null,
        measured: check?.detail ?? 'not checked',
      },
    ],
  };
}
