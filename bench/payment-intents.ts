import type { Deps } from '../src/context';
import { intentGroupStats } from '../src/deposits/payment-intents';
import { cpuDelta, cpuSnapshot } from './ledger';
import { env, idOf, median, pool, setupBenchIntegrator, setupIntentPayee, textTable, type Call, type ScenarioBench } from './setup';

/**
 * The payment-intents scenario of `npm run bench` (BENCH_SCENARIOS=ledger,payment-intents; issue 22,
 * point 1): payment intents created through REST alone, as an integrator creates them
 * (POST /v1/organizations/{org}/payment-intents with a walletId: the transaction, the intent, the
 * deposit address, three events, two audit entries, the expiry job), at each concurrency of
 * BENCH_INTENTS_CONCURRENCY (default "16,64"), BENCH_INTENTS_COUNT (default 1000) per concurrency
 * per round, no GET after each (the 201 with its Location is the answer). Each round runs the
 * variants of BENCH_INTENTS_KEYS (default "unkeyed,keyed"): without an Idempotency-Key, and with a
 * fresh one per intent, as the API docs tell integrators to send (the key's record written with the
 * intent). Before the first round, BENCH_INTENTS_WARMUP (default 200; 0 for none) creations of both
 * variants warm the path up, unmeasured.
 *
 * Measured per concurrency: intents created per second, latency p50/p99, and CPU microseconds per
 * intent of this process (service + load generator) and of PostgreSQL (less sensitive to the
 * machine's load than the rates). Run with `ledger` selected, the run prints the ratio to the
 * one-transfer-per-commit pg baseline of the same run (target >= 0.25x).
 * After the rounds: every intent exists with its address, its three events, two audit entries and
 * its expiry job; the derivation indexes are distinct.
 */
export interface PaymentIntentsRound {
  concurrency: number;
  /** Each creation sent with an Idempotency-Key of its own. */
  keyed: boolean;
  intents: number;
  intentsPerSecond: number;
  latencyMs: { p50: number; p99: number };
  cpuMicrosPerIntent: { bench: number; postgres: number };
  /** The group commit's figures of the round: mean group size, and the mean time an intent waited for a slot and spent in its group's write. */
  groups: { count: number; meanSize: number; queuedMs: number; writeMs: number } | null;
}
export type PaymentIntentsBench = ScenarioBench<PaymentIntentsRound[]>;

export const paymentIntentsSettings = () => ({
  count: env('BENCH_INTENTS_COUNT', 1000),
  concurrency: (process.env.BENCH_INTENTS_CONCURRENCY ?? '16,64').split(',').map(Number),
  warmup: env('BENCH_INTENTS_WARMUP', 200),
  keyed: (process.env.BENCH_INTENTS_KEYS ?? 'unkeyed,keyed').split(',').map((k) => {
    if (k !== 'unkeyed' && k !== 'keyed') throw new Error(`BENCH_INTENTS_KEYS: "${k}" is neither unkeyed nor keyed`);
    return k === 'keyed';
  }),
});

const variantOf = (r: { keyed: boolean; concurrency: number }) => `${r.keyed ? 'keyed' : 'unkeyed'}, ${r.concurrency} in flight`;

const percentile = (sorted: number[], p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]! : NaN);

export async function startPaymentIntentsBench(opts: {
  deps: Pick<Deps, 'db'>;
  call: Call;
  pgPort: number;
  say: (msg: string) => void;
}): Promise<PaymentIntentsBench> {
  const { deps, call, say } = opts;
  const s = paymentIntentsSettings();
  const integrator = await setupBenchIntegrator(deps, call, 'payment-intents', { code: 'BP', requiredConfirmations: 1 });
  const { org } = integrator;
  const payee = await setupIntentPayee(call, integrator, 'payment-intents');
  const walletId = payee.walletId;
  say(`payment-intents: organization ${org}, wallet ${walletId}`);
  const ids: string[] = [];
  let keyedCount = 0;
  let warm = false;
  let seq = 0;

  return {
    async run() {
      const out: PaymentIntentsRound[] = [];
      if (!warm) {
        // Unmeasured, once per process: the path's first requests compile it (JIT, lazy set-up), a cost
        // a running service has paid, which fell on whichever variant ran first (issue 22, session 7).
        warm = true;
        await pool(s.warmup, 16, async (i) => {
          const r = await payee.createIntent(BigInt(1_000_000) + BigInt(seq++) * 10n, i % 2 ? `bench-pi-${walletId}-${seq}` : undefined);
          ids.push(idOf(r));
          if (i % 2) keyedCount++;
        });
      }
      for (const keyed of s.keyed)
        for (const concurrency of s.concurrency) {
          const n = s.count;
          const latencies: number[] = new Array(n);
          const g0 = { ...(intentGroupStats(deps.db) ?? { groups: 0, items: 0, queuedMs: 0, writeMs: 0 }) };
          const cpu0 = cpuSnapshot(opts.pgPort);
          const t0 = performance.now();
          await pool(n, concurrency, async (i) => {
            const amount = BigInt(1_000_000) + BigInt(seq++) * 10n;
            const a = performance.now();
            const r = await payee.createIntent(amount, keyed ? `bench-pi-${walletId}-${seq}` : undefined);
            latencies[i] = performance.now() - a;
            ids.push(idOf(r));
          });
          if (keyed) keyedCount += n;
          const seconds = (performance.now() - t0) / 1000;
          const cpu = cpuDelta(cpu0, cpuSnapshot(opts.pgPort));
          latencies.sort((x, y) => x - y);
          const g1 = intentGroupStats(deps.db);
          const items = g1 ? g1.items - g0.items : 0;
          out.push({
            groups:
              g1 && items
                ? {
                    count: g1.groups - g0.groups,
                    meanSize: +(items / (g1.groups - g0.groups)).toFixed(1),
                    queuedMs: +((g1.queuedMs - g0.queuedMs) / items).toFixed(1),
                    writeMs: +((g1.writeMs - g0.writeMs) / items).toFixed(1),
                  }
                : null,
            concurrency,
            keyed,
            intents: n,
            intentsPerSecond: Math.round(n / seconds),
            latencyMs: { p50: Math.round(percentile(latencies, 50)), p99: Math.round(percentile(latencies, 99)) },
            cpuMicrosPerIntent: { bench: Math.round(cpu.bench / n), postgres: Math.round(cpu.postgres / n) },
          });
        }
      return out;
    },
    async verify() {
      const [row] = await deps.db.$queryRaw<
        { intents: bigint; addresses: bigint; indexes: bigint; events: bigint; audits: bigint; jobs: bigint; keys: bigint }[]
      >`
        WITH i AS (SELECT unnest(${ids}::uuid[]) AS id)
        SELECT
          (SELECT count(*) FROM "PaymentIntent" pi JOIN i ON i.id = pi."id" WHERE pi."status" = 'AWAITING_PAYMENT') AS intents,
          (SELECT count(*) FROM "DepositAddress" d JOIN i ON i.id = d."paymentIntentId") AS addresses,
          (SELECT count(DISTINCT d."derivationIndex") FROM "DepositAddress" d JOIN i ON i.id = d."paymentIntentId") AS indexes,
          (SELECT count(*) FROM "WebhookEvent" e WHERE e."organizationId" = ${org}::uuid) AS events,
          (SELECT count(*) FROM "AuditLogEntry" a JOIN i ON i.id = a."entityId") AS audits,
          (SELECT count(*) FROM pgboss.job j JOIN i ON i.id = j."id" WHERE j."name" = 'payment-intent.expire') AS jobs,
          (SELECT count(*) FROM "IdempotencyRecord" r JOIN i ON r."response" = jsonb_build_object('id', i.id::text) WHERE r."key" LIKE ${`bench-pi-${walletId}-%`}) AS keys`;
      const n = ids.length;
      const got = Object.fromEntries(Object.entries(row!).map(([k, v]) => [k, Number(v)]));
      const want = { intents: n, addresses: n, indexes: n, events: 3 * n, audits: n, jobs: n, keys: keyedCount };
      const bad = Object.entries(want).filter(([k, v]) => got[k] !== v);
      if (bad.length) throw new Error(`payment-intents: ${bad.map(([k, v]) => `${k} ${got[k]} (expected ${v})`).join(', ')}`);
      return `${n} intents AWAITING_PAYMENT, each with its address (distinct derivation indexes), three events, its audit entry and its expiry job; ${keyedCount} keyed ones with their key's record`;
    },
  };
}

/** The scenario's table: the round with the median rate per concurrency, with the ratio to the pg baseline of the same run. */
export function paymentIntentsReport(runs: PaymentIntentsRound[][], check: { ok: boolean; detail: string } | undefined, baselineTransfers: number | undefined) {
  const byConcurrency = [...new Set(runs.flat().map(variantOf))].map((v) => {
    const rs = runs.flat().filter((r) => variantOf(r) === v);
    const m = median(rs.map((r) => r.intentsPerSecond));
    const r = rs.find((x) => x.intentsPerSecond === m)!;
    return {
      ...r,
      toBaseline: baselineTransfers ? +(r.intentsPerSecond / baselineTransfers).toFixed(3) : undefined,
      rounds: rs.map((x) => x.intentsPerSecond),
    };
  });
  const rows = [
    ['payment-intents', 'intents/s', 'vs pg baseline', 'p50 ms', 'p99 ms', 'cpu µs/intent bench/pg', 'groups: size, ms queued/write', 'rounds: intents/s'],
    ...byConcurrency.map((r) => [
      `${r.intents} intents, ${variantOf(r)}`,
      String(r.intentsPerSecond),
      r.toBaseline !== undefined ? `${r.toBaseline}x (${baselineTransfers}/s)` : 'no baseline (select ledger)',
      String(r.latencyMs.p50),
      String(r.latencyMs.p99),
      `${r.cpuMicrosPerIntent.bench}/${r.cpuMicrosPerIntent.postgres}`,
      r.groups ? `${r.groups.meanSize}, ${r.groups.queuedMs}/${r.groups.writeMs}` : '-',
      r.rounds.join(', '),
    ]),
  ];
  return {
    result: { baselineTransfersPerSecond: baselineTransfers, byConcurrency, rounds: runs },
    table: textTable(rows),
    targets: [
      ...byConcurrency.map((r) => ({
        target: `payment-intents: created through REST, ${variantOf(r)}, >= 0.25x the one-transfer-per-commit baseline (issue 22)`,
        met: r.toBaseline !== undefined ? r.toBaseline >= 0.25 : null,
        measured: `${r.intentsPerSecond} intents/s vs ${baselineTransfers ?? '?'} transfers/s: ${r.toBaseline ?? '?'}x (cpu µs per intent: bench ${r.cpuMicrosPerIntent.bench}, postgres ${r.cpuMicrosPerIntent.postgres})`,
      })),
      {
        target: 'payment-intents: every intent complete (address, events, audit, expiry job)',
        met: check?.ok ?? null,
        measured: check?.detail ?? 'not checked',
      },
    ],
  };
}
