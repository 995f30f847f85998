import autocannon from 'autocannon';

/**
 * The load generator, run as its own process by bench/run.ts so the client does not share the
 * server's event loop. Reads one scenario as JSON from argv[2], runs a warm-up (discarded) and
 * then the measured run with autocannon, and prints the measured result as one JSON line.
 */
export interface LoadSpec {
  name: string;
  url: string;
  method: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  connections: number;
  durationSeconds: number;
  warmupSeconds: number;
}

export interface LoadResult {
  name: string;
  requestsPerSecond: number;
  requestsTotal: number;
  latencyMs: { p50: number; p90: number; p99: number; max: number; mean: number };
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  durationSeconds: number;
  connections: number;
  /** The server process's CPU time per request answered during the scenario (warm-up included), set by bench/run.ts. */
  cpuMicrosPerRequest?: number;
  /** The bench's PostgreSQL processes' CPU time per request answered (every backend on its port: the job runner's too), set by bench/run.ts. */
  pgCpuMicrosPerRequest?: number;
}

function run(spec: LoadSpec, duration: number): Promise<autocannon.Result> {
  return new Promise((ok, fail) => {
    autocannon(
      {
        url: spec.url,
        method: spec.method,
        headers: spec.headers,
        body: spec.body,
        connections: spec.connections,
        duration,
        pipelining: 1,
        timeout: 10,
      },
      (err, result) => (err ? fail(err) : ok(result)),
    );
  });
}

const spec = JSON.parse(process.argv[2] ?? '{}') as LoadSpec;
if (spec.warmupSeconds > 0) await run(spec, spec.warmupSeconds);
const r = await run(spec, spec.durationSeconds);
const statusCodes = Object.fromEntries(
  Object.entries((r as unknown as { statusCodeStats?: Record<string, { count: number }> }).statusCodeStats ?? {}).map(([k, v]) => [k, v.count]),
);
const result: LoadResult = {
  name: spec.name,
  requestsPerSecond: r.requests.average,
  requestsTotal: r.requests.total,
  latencyMs: { p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, max: r.latency.max, mean: r.latency.average },
  non2xx: r.non2xx,
  errors: r.errors,
  timeouts: r.timeouts,
  statusCodes,
  durationSeconds: r.duration,
  connections: spec.connections,
};
process.stdout.write(JSON.stringify(result) + '\n');
