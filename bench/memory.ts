import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { startEmbeddedPostgres } from '../src/db/embedded';
import { createPrisma } from '../src/db/prisma';
import { systemClock } from '../src/clock';
import { projectRoot } from '../src/root';
import { callerOf, env, median, sleep, textTable } from './setup';
import { startDepositsBench } from './deposits';
import { awaitSettlementsExecuted, createFundedTransactions, requestSettlements, setupSettlements, verifySettlements } from './settlements';

/**
 * npm run bench:memory (issue 22, point 3): does the service's resident memory stay flat under a
 * sustained money load? The service runs as `npm start` runs it (`node --import tsx src/main.ts`, a
 * child process with its embedded PostgreSQL and its job runner, NODE_ENV development, logging at
 * warn, no request rate limit), one fresh process per scenario on one DATA_DIR:
 *
 * - `memory-settlements`: cycles of BENCH_MEMORY_BATCH (200) payment intents through REST, funded in
 *   the database (the ledger shape of a confirmed deposit, as bench/settlements.ts does), one
 *   settlement requested per transaction through REST, executed by the service's own settlement
 *   job; the next cycle starts when every settlement of this one is EXECUTED;
 * - `memory-deposits`: cycles of BENCH_MEMORY_BATCH payment intents paid on the sandbox chain end to
 *   end (bench/deposits.ts's round: REST intents, sandbox sends, blocks mined, the service's chain.sync
 *   jobs confirm them), the next when every deposit of this one is CONFIRMED.
 *
 * Each scenario's load runs BENCH_MEMORY_SECONDS (600); every BENCH_MEMORY_SAMPLE_SECONDS (5) the
 * service process's VmRSS (/proc/<pid>/status) and its V8 heap (GET /metrics:
 * nodejs_heap_size_used_bytes) are sampled. Printed per scenario: RSS at 60 s (the issue's "after
 * the first minute"), at the end, their ratio, the median of the second minute's samples and of the
 * last minute's and their ratio (the target, <= 1.2x: one sample lands anywhere on the garbage
 * collector's sawtooth), the maximum, the heap at both points, and the work done; then the checks of the scenario (balances exact, ledger invariants).
 * Each sample also keeps where the memory is (GET /metrics: heap total, each heap space, external,
 * arrayBuffers; /proc: RssAnon, RssFile), and the output says, for the two windows, how much of the
 * RSS is V8's committed heap (young generation, old space and its use after collections) and how
 * much is outside it: the collector's sizing moves the first, a leak the old space's floor or the
 * second (compare heap snapshots with bench/memory-heapsnapshot.ts). NODE_OPTIONS reaches the
 * service (a heap budget, docs/deployment.md "Memory") and is recorded; without one the service
 * gives itself its default budget (src/heap-budget.ts), and the heap limit it runs with
 * (nodejs_heap_size_limit_bytes) is in every sample and printed.
 * Results in <DATA_DIR>/memory-results.json.
 *
 * Env: BENCH_SCENARIOS (memory-settlements,memory-deposits), BENCH_MEMORY_SECONDS (600),
 * BENCH_MEMORY_BATCH (200), BENCH_MEMORY_CONCURRENCY (16 requests in flight),
 * BENCH_MEMORY_DEPOSITS_CONCURRENCY (4: intents and sandbox sends of memory-deposits), BENCH_DATA_DIR
 * (.data/bench-memory), BENCH_PG_PORT (54363), BENCH_MEMORY_PORT (8398),
 * BENCH_MEMORY_HEAPSNAPSHOT=1: the service runs with --heapsnapshot-signal=SIGUSR2 and is sent it
 * at 60 s and at the end (two .heapsnapshot files in DATA_DIR, to compare in Chrome DevTools). A
 * snapshot stops the service for seconds (transactions in flight time out): for leak hunting, not figures.
 */
const seconds = env('BENCH_MEMORY_SECONDS', 600);
const sampleSeconds = env('BENCH_MEMORY_SAMPLE_SECONDS', 5);
const batch = env('BENCH_MEMORY_BATCH', 200);
const concurrency = env('BENCH_MEMORY_CONCURRENCY', 16);
const depositsConcurrency = env('BENCH_MEMORY_DEPOSITS_CONCURRENCY', 4);
const pgPort = env('BENCH_PG_PORT', 54363);
const port = env('BENCH_MEMORY_PORT', 8398);
const DATA_DIR = resolve(process.env.BENCH_DATA_DIR ?? '.data/bench-memory');
const heapSnapshots = process.env.BENCH_MEMORY_HEAPSNAPSHOT === '1';
const scenarios = (process.env.BENCH_SCENARIOS ?? 'memory-settlements,memory-deposits').split(',').map((x) => x.trim());
const TARGET_RATIO = 1.2;
const FIRST_MINUTE = 60;

const say = (msg: string) => process.stderr.write(`[bench:memory] ${msg}\n`);
const mib = (bytes: number | null) => (bytes === null ? 'n/a' : (bytes / 2 ** 20).toFixed(1));
const base = `http://127.0.0.1:${port}`;

interface Sample {
  /** Seconds since the load started. */
  t: number;
  rssBytes: number;
  heapUsedBytes: number | null;
  cycles: number;
  /** The detail of the sample (GET /metrics and /proc/<pid>/status): where resident memory is, to tell the collector's sizing from a leak. */
  detail?: MemoryDetail;
}
interface MemoryDetail {
  heapTotalBytes: number | null;
  externalBytes: number | null;
  arrayBuffersBytes: number | null;
  oldSpaceUsedBytes: number | null;
  oldSpaceTotalBytes: number | null;
  newSpaceTotalBytes: number | null;
  codeSpaceUsedBytes: number | null;
  /** V8's heap limit: the heap budget the service runs with (src/heap-budget.ts: 1 GiB by default, or the operator's). */
  heapLimitBytes: number | null;
  /** RssAnon (heap, allocator arenas, stacks) and RssFile (mapped files: the binary, shared libraries). */
  rssAnonBytes: number;
  rssFileBytes: number;
}
interface MemoryResult {
  scenario: string;
  seconds: number;
  batch: number;
  cycles: number;
  operations: number;
  at60: Sample;
  end: Sample;
  ratio: number;
  /** Medians of the samples of the second minute [60 s, 120 s) and of the last minute: a garbage collection between two samples moves a single sample by 100 MiB. */
  window: { secondMinuteRssBytes: number; lastMinuteRssBytes: number; ratio: number };
  /** Where the RSS of each window is (medians; the old space's use by its minimum, the floor after collections): evidence beside the target, not the target. */
  composition: { secondMinute: Composition; lastMinute: Composition } | null;
  maxRssBytes: number;
  heapRatio: number | null;
  loadAverage: { start: number[]; end: number[] };
  samples: Sample[];
  check: { ok: boolean; detail: string };
}

/** The service as `npm start` runs it: `node --import tsx src/main.ts`. */
async function startService(): Promise<ChildProcess> {
  const args = [...(heapSnapshots ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${DATA_DIR}`] : []), '--import', 'tsx', 'src/main.ts'];
  // The embedded database of DATA_DIR, whatever the caller's environment says.
  const { DATABASE_URL: _url, MIGRATION_DATABASE_URL: _owner, ...callerEnv } = process.env;
  const child = spawn(process.execPath, args, {
    cwd: projectRoot,
    env: {
      ...callerEnv,
      NODE_ENV: 'development',
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
      DATA_DIR,
      PORT: String(port),
      HOST: '127.0.0.1',
      EMBEDDED_PG_PORT: String(pgPort),
      JOBS: 'on',
      RATE_LIMIT_API_KEY: '0',
      RATE_LIMIT_SESSION: '0',
      METRICS: 'on',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  for (const deadline = performance.now() + 120_000; ;) {
    if (child.exitCode !== null) throw new Error(`the service exited with ${child.exitCode} before it was ready`);
    const ready = await fetch(`${base}/readyz`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ready) return child;
    if (performance.now() > deadline) throw new Error('the service was not ready within 120 s');
    await sleep(100);
  }
}

async function stopService(child: ChildProcess) {
  if (child.exitCode !== null) return;
  const exited = new Promise<void>((ok) => child.once('exit', () => ok()));
  child.kill('SIGTERM');
  await exited;
}

/** Waits (at most 3 minutes) until `n` .heapsnapshot files of process `pid` are in DATA_DIR (Heap.<date>.<time>.<pid>...) and none still grows. */
async function snapshotsWritten(pid: number, n: number) {
  const sizes = () =>
    readdirSync(DATA_DIR)
      .filter((f) => f.endsWith('.heapsnapshot') && f.includes(`.${pid}.`))
      .map((f) => statSync(resolve(DATA_DIR, f)).size);
  let last = '';
  for (const deadline = performance.now() + 180_000; performance.now() < deadline; await sleep(2000)) {
    const now = sizes();
    if (now.length >= n && now.join() === last) return;
    last = now.join();
  }
  say(`heap snapshots: fewer than ${n} complete after 3 minutes`);
}

const statusKiB = (status: string, field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
const rssOf = (pid: number) => statusKiB(readFileSync(`/proc/${pid}/status`, 'utf8'), 'VmRSS');
/** The service's memory figures from GET /metrics and /proc/<pid>/status. */
async function memoryOf(pid: number): Promise<{ heapUsedBytes: number | null; detail: MemoryDetail }> {
  const text = await fetch(`${base}/metrics`).then(
    (r) => (r.ok ? r.text() : ''),
    () => '',
  );
  const metric = (name: string) => {
    const m = new RegExp(`^${name.replace(/[{}"]/g, '\\$&')} (\\S+)$`, 'm').exec(text);
    return m ? Number(m[1]) : null;
  };
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return {
    heapUsedBytes: metric('nodejs_heap_size_used_bytes'),
    detail: {
      heapTotalBytes: metric('nodejs_heap_size_total_bytes'),
      externalBytes: metric('nodejs_external_memory_bytes'),
      arrayBuffersBytes: metric('nodejs_array_buffers_bytes'),
      oldSpaceUsedBytes: metric('nodejs_heap_space_size_used_bytes{space="old"}'),
      oldSpaceTotalBytes: metric('nodejs_heap_space_size_total_bytes{space="old"}'),
      newSpaceTotalBytes: metric('nodejs_heap_space_size_total_bytes{space="new"}'),
      codeSpaceUsedBytes: metric('nodejs_heap_space_size_used_bytes{space="code"}'),
      heapLimitBytes: metric('nodejs_heap_size_limit_bytes'),
      rssAnonBytes: statusKiB(status, 'RssAnon'),
      rssFileBytes: statusKiB(status, 'RssFile'),
    },
  };
}

const call = callerOf(base);

/** A scenario's load: `setup` once, then `cycle` (one batch, to completion) until the time is up; `verify` after. */
interface Load {
  cycle(n: number): Promise<void>;
  verify(): Promise<string>;
}

async function runScenario(name: string): Promise<MemoryResult> {
  say(`${name}: starting the service (${DATA_DIR}, port ${port}, PostgreSQL ${pgPort})`);
  const child = await startService();
  const pid = child.pid!;
  // The bench's own connection to the service's database (the running service's embedded PostgreSQL, as the scripts attach to it).
  const database = await startEmbeddedPostgres({ dataDir: DATA_DIR, port: pgPort, database: 'ftis', attach: true });
  const db = createPrisma(database.serviceUrl, 4);
  const deps = { db, clock: systemClock };
  try {
    let load: Load;
    if (name === 'memory-settlements') {
      const setup = await setupSettlements(deps, call);
      const all: { transactionId: string; settlementId: string; amount: bigint }[] = [];
      load = {
        async cycle(n) {
          const { txs } = await createFundedTransactions(setup, batch, n, concurrency);
          await requestSettlements(setup, txs, concurrency);
          await awaitSettlementsExecuted(
            setup,
            txs.map((x) => x.settlementId),
            600,
          );
          all.push(...txs);
        },
        verify: () => verifySettlements(setup, all),
      };
    } else if (name === 'memory-deposits') {
      process.env.BENCH_DEPOSITS_INTENTS = String(batch);
      // Sends to one sandbox network serialize on its lock: more in flight only wait (and, on a loaded
      // machine, past the 5 s interactive-transaction timeout: a 500), so fewer go at once.
      process.env.BENCH_DEPOSITS_CONCURRENCY = String(depositsConcurrency);
      const deposits = await startDepositsBench({ deps, call, say });
      load = { cycle: async () => void (await deposits.run()), verify: () => deposits.verify() };
    } else throw new Error(`unknown scenario ${name} (memory-settlements, memory-deposits)`);

    const samples: Sample[] = [];
    let cycles = 0;
    const startLoad = loadavg().map((x) => +x.toFixed(1));
    const t0 = performance.now();
    const elapsed = () => (performance.now() - t0) / 1000;
    let snapshotAt60 = heapSnapshots;
    const sample = async () => {
      const t = +elapsed().toFixed(1);
      const rssBytes = rssOf(pid);
      const s: Sample = { t, rssBytes, ...(await memoryOf(pid)), cycles };
      samples.push(s);
      if (snapshotAt60 && s.t >= FIRST_MINUTE) {
        snapshotAt60 = false;
        child.kill('SIGUSR2');
      }
      if (samples.length % 12 === 0) {
        const d = s.detail!;
        say(
          `${name}: ${s.t} s, RSS ${mib(s.rssBytes)} MiB (anon ${mib(d.rssAnonBytes)}), heap used/total ${mib(s.heapUsedBytes)}/${mib(d.heapTotalBytes)} MiB (old ${mib(d.oldSpaceUsedBytes)}/${mib(d.oldSpaceTotalBytes)}, new total ${mib(d.newSpaceTotalBytes)}), external ${mib(d.externalBytes)} (arrayBuffers ${mib(d.arrayBuffersBytes)}) MiB, ${cycles} cycles`,
        );
      }
    };
    let sampling = true;
    const exited = () => new Error(`the service exited during the load (code ${child.exitCode}, signal ${child.signalCode})`);
    const sampler = (async () => {
      for (let next = 0; sampling && child.exitCode === null && child.signalCode === null;) {
        await sample();
        next += sampleSeconds;
        await sleep(Math.max(0, next * 1000 - (performance.now() - t0)));
      }
    })().catch((e: unknown) => {
      sampling = false;
      return e;
    });
    try {
      while (elapsed() < seconds) {
        if (!sampling || child.exitCode !== null || child.signalCode !== null) throw exited();
        await load.cycle(++cycles);
      }
    } finally {
      sampling = false; // also when a cycle fails: no sample of a stopped service
    }
    const failed = await sampler;
    if (failed) throw failed;
    if (child.exitCode !== null || child.signalCode !== null) throw exited();
    await sample();
    if (heapSnapshots) child.kill('SIGUSR2');
    const endLoad = loadavg().map((x) => +x.toFixed(1));
    const at60 = samples.find((s) => s.t >= FIRST_MINUTE) ?? samples[0]!;
    const end = samples.at(-1)!;
    const check = await load.verify().then(
      (detail) => ({ ok: true, detail }),
      (e: unknown) => ({ ok: false, detail: String(e) }),
    );
    return {
      scenario: name,
      seconds: end.t,
      batch,
      cycles,
      operations: cycles * batch,
      at60,
      end,
      ratio: +(end.rssBytes / at60.rssBytes).toFixed(3),
      window: windowOf(samples, end.t),
      composition: compositionOf(samples, end.t),
      maxRssBytes: Math.max(...samples.map((s) => s.rssBytes)),
      heapRatio: at60.heapUsedBytes && end.heapUsedBytes ? +(end.heapUsedBytes / at60.heapUsedBytes).toFixed(3) : null,
      loadAverage: { start: startLoad, end: endLoad },
      samples,
      check,
    };
  } finally {
    await db.$disconnect();
    if (heapSnapshots) await snapshotsWritten(pid, 2); // the last snapshot is written before the process stops
    await stopService(child);
    await database.stop();
  }
}

interface Composition {
  heapTotalBytes: number;
  newSpaceTotalBytes: number;
  oldSpaceTotalBytes: number;
  oldSpaceUsedFloorBytes: number;
  /** RssAnon minus the V8 heap and external memory: code, allocator, thread stacks, WASM. */
  outsideHeapBytes: number;
}
function compositionOf(samples: Sample[], endT: number): MemoryResult['composition'] {
  const of = (from: number, to: number): Composition | null => {
    const xs = samples.filter((s) => s.t >= from && s.t < to && s.detail?.heapTotalBytes != null).map((s) => s.detail!);
    if (!xs.length) return null;
    const med = (f: (d: MemoryDetail) => number | null) => median(xs.map((d) => f(d) ?? 0));
    return {
      heapTotalBytes: med((d) => d.heapTotalBytes),
      newSpaceTotalBytes: med((d) => d.newSpaceTotalBytes),
      oldSpaceTotalBytes: med((d) => d.oldSpaceTotalBytes),
      oldSpaceUsedFloorBytes: Math.min(...xs.map((d) => d.oldSpaceUsedBytes ?? 0)),
      outsideHeapBytes: med((d) => d.rssAnonBytes - (d.heapTotalBytes ?? 0) - (d.externalBytes ?? 0)),
    };
  };
  const secondMinute = of(FIRST_MINUTE, 2 * FIRST_MINUTE);
  const lastMinute = of(endT - FIRST_MINUTE, endT + 1);
  return secondMinute && lastMinute ? { secondMinute, lastMinute } : null;
}

function windowOf(samples: Sample[], endT: number): MemoryResult['window'] {
  // A run shorter than two minutes has no second minute: its first sample stands in (a quick look, not the figure).
  const rss = (from: number, to: number) => {
    const xs = samples.filter((s) => s.t >= from && s.t < to).map((s) => s.rssBytes);
    return xs.length ? median(xs) : samples[0]!.rssBytes;
  };
  const secondMinuteRssBytes = rss(FIRST_MINUTE, 2 * FIRST_MINUTE);
  const lastMinuteRssBytes = rss(endT - FIRST_MINUTE, endT + 1);
  return { secondMinuteRssBytes, lastMinuteRssBytes, ratio: +(lastMinuteRssBytes / secondMinuteRssBytes).toFixed(3) };
}

const results: MemoryResult[] = [];
const failures: { scenario: string; error: string }[] = [];
const file = resolve(DATA_DIR, 'memory-results.json');
const save = () => {
  mkdirSync(DATA_DIR, { recursive: true });
  writeFileSync(
    file,
    JSON.stringify(
      {
        date: new Date().toISOString(),
        // NODE_OPTIONS reaches the service (a heap budget such as --max-old-space-size: docs/deployment.md "Memory").
        settings: { seconds, sampleSeconds, batch, concurrency, depositsConcurrency, nodeOptions: process.env.NODE_OPTIONS ?? '' },
        results,
        failures,
      },
      null,
      2,
    ) + '\n',
  );
};
for (const name of scenarios) {
  try {
    results.push(await runScenario(name));
  } catch (e) {
    say(`${name} failed: ${String(e)}`);
    failures.push({ scenario: name, error: String(e) });
  }
  save(); // after each scenario: a later failure loses nothing
}
const rows = [
  [
    'memory',
    'load s',
    'operations',
    'RSS 60 s MiB',
    'RSS end MiB',
    'end/60 s',
    'RSS 2nd min / last min MiB (median)',
    'ratio',
    'max MiB',
    'heap 60 s MiB',
    'heap end MiB',
    'load avg start/end',
  ],
  ...results.map((r) => [
    r.scenario,
    String(r.seconds),
    `${r.operations} (${r.cycles} x ${r.batch})`,
    mib(r.at60.rssBytes),
    mib(r.end.rssBytes),
    `${r.ratio}x`,
    `${mib(r.window.secondMinuteRssBytes)} / ${mib(r.window.lastMinuteRssBytes)}`,
    `${r.window.ratio}x`,
    mib(r.maxRssBytes),
    mib(r.at60.heapUsedBytes),
    mib(r.end.heapUsedBytes),
    `${r.loadAverage.start[0]}/${r.loadAverage.end[0]}`,
  ]),
];
console.log(textTable(rows));
if (process.env.NODE_OPTIONS) console.log(`(the service ran with NODE_OPTIONS=${process.env.NODE_OPTIONS})`);
for (const r of results) console.log(`(${r.scenario}: the service's heap limit ${mib(r.end.detail?.heapLimitBytes ?? null)} MiB)`);
console.log('\nTargets:');
for (const r of results) {
  console.log(
    `  ${r.window.ratio <= TARGET_RATIO ? 'MET ' : 'MISS'}  ${r.scenario}: resident memory at the end at most ${TARGET_RATIO}x its size after the first minute (median of the last minute's samples over the second minute's) — measured ${r.window.ratio}x (${mib(r.window.secondMinuteRssBytes)} → ${mib(r.window.lastMinuteRssBytes)} MiB)`,
  );
  console.log(
    `  ${r.ratio <= TARGET_RATIO ? 'MET ' : 'MISS'}  ${r.scenario}: the same by single samples, at 60 s and at the end — measured ${r.ratio}x (${mib(r.at60.rssBytes)} → ${mib(r.end.rssBytes)} MiB, max ${mib(r.maxRssBytes)} MiB)`,
  );
  console.log(`  ${r.check.ok ? 'MET ' : 'MISS'}  ${r.scenario}: checks after the load — ${r.check.detail}`);
  const c = r.composition;
  if (c) {
    const pair = (f: (x: Composition) => number) => `${mib(f(c.secondMinute))} → ${mib(f(c.lastMinute))}`;
    console.log(
      `        ${r.scenario}, where the RSS is (2nd minute → last minute, MiB; evidence, not a target): V8 heap committed ${pair((x) => x.heapTotalBytes)} (young generation ${pair((x) => x.newSpaceTotalBytes)}, old space ${pair((x) => x.oldSpaceTotalBytes)}, old space used after collections ${pair((x) => x.oldSpaceUsedFloorBytes)}), outside the heap ${pair((x) => x.outsideHeapBytes)}`,
    );
  }
}
for (const f of failures) console.log(`  MISS  ${f.scenario}: did not complete — ${f.error}`);
console.log(`\nresults: ${file}`);
if (failures.length || results.some((r) => r.window.ratio > TARGET_RATIO || !r.check.ok)) process.exitCode = 1;
