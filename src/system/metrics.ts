import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { getHeapSpaceStatistics, getHeapStatistics, type HeapSpaceInfo } from 'node:v8';
import { Gauge } from 'prom-client';
import type { PgBoss } from 'pg-boss';
import type { Logger } from 'pino';
import type { Config } from '../config';
import { poolUse, type PrismaClient } from '../db/prisma';
import { JOB_SCHEMA } from '../db/roles';
import { registry } from '../kernel/telemetry';

/**
 * GET /metrics (issue 20): the process's metrics in Prometheus text format, for the HTTP server
 * (src/app.ts) and a worker's small server alike: `metricsHandler(deps)` answers a Request.
 *
 * Protected (docs/decisions.md "Metrics, traces and rate limits"): with METRICS_TOKEN, a request
 * must carry `Authorization: Bearer <METRICS_TOKEN>` (401 otherwise); without it, only a loopback
 * client is answered (403 otherwise), so a process reachable from outside exposes nothing until
 * a token is set. METRICS=off: 404.
 *
 * What is read at scrape time, each with a bounded cost (one statement each, run together):
 * pg-boss's queue counts (its queue table, kept by its monitor), the age of the oldest waiting job
 * per queue (pg-boss's index on waiting jobs by name and created_on), the delivery backlog of the
 * TOP_ENDPOINTS endpoints with the most pending deliveries plus the total (the index on endpoint
 * and status), and the connection pool's use (in memory). A scrape that takes longer than
 * SCRAPE_BUDGET_MS answers what it has: the counters and histograms, and the gauges it could read.
 */
export interface MetricsDeps {
  config: Config;
  db: PrismaClient;
  boss: PgBoss | null;
  log: Logger;
}

const TOP_ENDPOINTS = 10;
const SCRAPE_BUDGET_MS = 2000;

const gauges = {
  pool: new Gauge({
    name: 'db_pool_connections',
    help: "The service's database connection pool: connections open (total), idle, requests waiting for one, and its maximum.",
    labelNames: ['state'] as const,
    registers: [registry],
  }),
  queueDepth: new Gauge({
    name: 'job_queue_jobs',
    help: "Jobs per queue and state (ready: runnable now; deferred: waiting for their start time; active: running), as of pg-boss's last monitor pass.",
    labelNames: ['queue', 'state'] as const,
    registers: [registry],
  }),
  oldest: new Gauge({
    name: 'job_queue_oldest_ready_age_seconds',
    help: 'Age of the oldest runnable job waiting in each queue (0: none waits).',
    labelNames: ['queue'] as const,
    registers: [registry],
  }),
  backlog: new Gauge({
    name: 'webhook_endpoint_backlog_deliveries',
    help: `Deliveries not yet delivered nor dead-lettered (pending or awaiting a retry), for the ${TOP_ENDPOINTS} endpoints with the most; endpoint="all" is the total over all endpoints.`,
    labelNames: ['endpoint'] as const,
    registers: [registry],
  }),
};

/**
 * The process's memory, read at scrape time only (a collect callback: nothing per request), under the
 * names prom-client's default metrics use, so the usual dashboards read them: resident set size,
 * the V8 heap used and allocated, and memory held outside the heap (Buffers). bench/memory.ts reads them.
 */
const memoryGauge = (name: string, help: string, read: (m: NodeJS.MemoryUsage) => number) =>
  new Gauge({
    name,
    help,
    registers: [registry],
    collect() {
      this.set(read(process.memoryUsage()));
    },
  });
memoryGauge('process_resident_memory_bytes', 'Resident memory size in bytes.', (m) => m.rss);
memoryGauge('nodejs_heap_size_used_bytes', 'Process heap size used from Node.js in bytes.', (m) => m.heapUsed);
memoryGauge('nodejs_heap_size_total_bytes', 'Process heap size from Node.js in bytes.', (m) => m.heapTotal);
memoryGauge('nodejs_external_memory_bytes', 'Node.js external memory size in bytes.', (m) => m.external);
memoryGauge('nodejs_array_buffers_bytes', 'Memory held by ArrayBuffers and Buffers (part of the external memory) in bytes.', (m) => m.arrayBuffers);
/** V8's heap limit (old space plus young generation): the heap budget the process runs with (src/heap-budget.ts, docs/deployment.md "Memory"). */
new Gauge({
  name: 'nodejs_heap_size_limit_bytes',
  help: "V8's heap size limit in bytes (the process's heap budget).",
  registers: [registry],
  collect() {
    this.set(getHeapStatistics().heap_size_limit);
  },
});
/** Each V8 heap space's size and use (prom-client's names): old space size far above its use is the collector's sizing, a rising use a leak. */
const heapSpaceGauge = (name: string, help: string, read: (s: HeapSpaceInfo) => number) =>
  new Gauge({
    name,
    help,
    labelNames: ['space'] as const,
    registers: [registry],
    collect() {
      for (const s of getHeapSpaceStatistics()) this.set({ space: s.space_name.replace(/_space$/, '') }, read(s));
    },
  });
heapSpaceGauge('nodejs_heap_space_size_total_bytes', 'Process heap space size total from Node.js in bytes.', (s) => s.space_size);
heapSpaceGauge('nodejs_heap_space_size_used_bytes', 'Process heap space size used from Node.js in bytes.', (s) => s.space_used_size);

async function readGauges(deps: MetricsDeps): Promise<void> {
  const pool = poolUse(deps.db);
  if (pool) for (const [state, v] of Object.entries(pool)) gauges.pool.set({ state }, v);
  const boss = deps.boss;
  await Promise.all([
    boss &&
      boss.getQueues().then((queues) => {
        gauges.queueDepth.reset();
        for (const q of queues) {
          gauges.queueDepth.set({ queue: q.name, state: 'ready' }, q.readyCount);
          gauges.queueDepth.set({ queue: q.name, state: 'deferred' }, q.deferredCount);
          gauges.queueDepth.set({ queue: q.name, state: 'active' }, q.activeCount);
        }
      }),
    boss &&
      deps.db
        .$queryRawUnsafe<{ name: string; age: number }[]>(
          // One index probe per queue (pgboss.queue lists them): the first waiting job by creation time.
          `SELECT q.name, COALESCE((SELECT extract(epoch FROM now() - j.created_on)::float8 FROM "${JOB_SCHEMA}".job j
             WHERE j.name = q.name AND j.state < 'active' AND j.start_after <= now() ORDER BY j.created_on LIMIT 1), 0) AS age
           FROM "${JOB_SCHEMA}".queue q`,
        )
        .then((rows) => {
          gauges.oldest.reset();
          for (const r of rows) gauges.oldest.set({ queue: r.name }, Math.max(0, Number(r.age)));
        }),
    deps.db.$queryRaw<{ endpointId: string | null; n: bigint }[]>`
        WITH per AS (
          SELECT "endpointId", count(*) AS n FROM "WebhookDelivery"
          WHERE "status" IN ('ATTEMPT_PENDING', 'AWAITING_RETRY') GROUP BY "endpointId"
        )
        (SELECT "endpointId"::text, n FROM per ORDER BY n DESC LIMIT ${TOP_ENDPOINTS})
        UNION ALL SELECT NULL, COALESCE(sum(n), 0)::bigint FROM per`.then((rows) => {
      gauges.backlog.reset();
      for (const r of rows) gauges.backlog.set({ endpoint: r.endpointId ?? 'all' }, Number(r.n));
    }),
  ]);
}

const digest = (s: string) => createHash('sha256').update(s).digest();
const isLoopback = (ip: string) => /^(127\.|::1$|::ffff:127\.)/.test(ip);

/** The /metrics handler: `(request, clientIp) => Response`. */
export function metricsHandler(deps: MetricsDeps): (request: Request, clientIp: string) => Promise<Response> {
  const token = deps.config.METRICS_TOKEN ? digest(deps.config.METRICS_TOKEN) : null;
  return async (request, clientIp) => {
    if (deps.config.METRICS === 'off') return new Response('metrics are off (METRICS=off)\n', { status: 404 });
    if (request.method !== 'GET' && request.method !== 'HEAD') return new Response(null, { status: 405, headers: { allow: 'GET, HEAD' } });
    if (token) {
      const given = /^Bearer (.+)$/i.exec(request.headers.get('authorization') ?? '')?.[1];
      if (!given || !timingSafeEqual(digest(given), token))
        return new Response('a bearer token is required (METRICS_TOKEN)\n', { status: 401, headers: { 'www-authenticate': 'Bearer realm="metrics"' } });
    } else if (!isLoopback(clientIp)) {
      return new Response('metrics are served to loopback clients only: set METRICS_TOKEN to scrape from elsewhere\n', { status: 403 });
    }
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      readGauges(deps).catch((err: unknown) => deps.log.warn({ err }, 'metrics: reading gauges failed')),
      new Promise<void>((ok) => (timer = setTimeout(ok, SCRAPE_BUDGET_MS))),
    ]);
    clearTimeout(timer);
    return new Response(await registry.metrics(), { headers: { 'content-type': registry.contentType, 'cache-control': 'no-store' } });
  };
}

/** The same handler for a plain node:http server (a worker's own port): `createServer(metricsNodeHandler(deps))` or one route of it. */
export function metricsNodeHandler(deps: MetricsDeps): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const handle = metricsHandler(deps);
  return async (req, res) => {
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers.set(name, value);
    const answer = await handle(new Request(`http://localhost${req.url ?? '/'}`, { method: req.method, headers }), req.socket.remoteAddress ?? 'unknown');
    res.writeHead(answer.status, Object.fromEntries(answer.headers));
    res.end(req.method === 'HEAD' ? undefined : Buffer.from(await answer.arrayBuffer()));
  };
}
