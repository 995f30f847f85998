import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { evmNetworksOf, type Config } from './config';
import { configureEvmNetworks } from './chains/evm/config';
import type { Deps } from './context';
import { systemClock } from './clock';
import { createPrisma } from './db/prisma';
import { loadTokenKeys } from './auth/tokens';
import { loadSealingKey } from './auth/secrets';
import { RateLimiter } from './auth/rate-limit';
import { createMailer } from './mailer';
import { DeliveryStatusHub } from './webhooks/status';
import { handBackJobs, startJobs, stopJobs } from '../jobs/index';
import { restPlugin } from '../rest/adapter';
import { createYogaApp } from './app';
import { startTracing } from './kernel/otel';
import { metricsNodeHandler } from './system/metrics';

/**
 * The composition root: the one module of `src/` that imports `rest/` and `jobs/`
 * (.dependency-cruiser.cjs). `src/main.ts` (the process), `server.ts` and `shutdown.ts` take the
 * app, the dependencies and the job runner from here; tests, scripts and benchmarks do the same.
 */

/** The HTTP app: yoga with every plugin, the REST adapter of `rest/` among them. */
export function createApp(deps: Deps) {
  // The EVM networks' connection settings (issue 18): the adapter of each configured network reads them.
  configureEvmNetworks(evmNetworksOf(deps.config));
  return createYogaApp(deps, restPlugin);
}

/** Readiness (/readyz), for the worker's own small HTTP server too (src/server.ts). */
export { problem, readiness } from '../rest/adapter';

/** Stopping the job runner, for the shutdown (src/shutdown.ts). */
export { handBackJobs, stopJobs };

/**
 * The production wiring of a process: Prisma, the job runner (it always sends jobs; it works the
 * queues when JOBS=on), keys, clock, mail, the delivery status listener.
 */
export async function createDeps(config: Config, url: string, log: Logger): Promise<Deps> {
  // Tracing (issue 20): the OpenTelemetry SDK when OTEL_EXPORTER_OTLP_ENDPOINT is set, once per process.
  if (startTracing(config)) log.info({ endpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT, sampleRatio: config.OTEL_TRACES_SAMPLE_RATIO }, 'tracing on (OTLP/HTTP)');
  // The error's message and code only: pg hangs the idle client on it (its connection settings and every prepared statement's SQL).
  const db = createPrisma(url, config.DB_POOL_MAX, (err) =>
    log.warn({ err: { type: err.name, message: err.message, code: (err as { code?: string }).code } }, 'database connection lost'),
  );
  const sealingKey = loadSealingKey(config);
  const [boss, tokenKeys] = await Promise.all([
    startJobs(url, { db, clock: systemClock, log, config, sealingKey }, { work: config.JOBS === 'on' }),
    loadTokenKeys(config),
  ]);
  return {
    config,
    db,
    clock: systemClock,
    log,
    tokenKeys,
    boss,
    rateLimiter: new RateLimiter(db, systemClock),
    mailer: createMailer(config, log),
    sealingKey,
    deliveryStatus: new DeliveryStatusHub(url, log),
  };
}

/**
 * A handler of the worker's HTTP server (src/server.ts startWorkerServer) for the paths other than
 * /healthz and /readyz: answers true when it answered the request, false to leave it to the
 * server's 404.
 */
export type WorkerHttpHandler = (req: IncomingMessage, res: ServerResponse) => boolean | Promise<boolean>;

/** What a worker process serves besides /healthz and /readyz: its /metrics (issue 20); every other path answers 404. */
export function workerHttpHandler(deps: Deps): WorkerHttpHandler {
  const metrics = metricsNodeHandler(deps);
  return async (req, res) => {
    if (new URL(req.url ?? '/', 'http://worker').pathname !== '/metrics') return false;
    await metrics(req, res);
    return true;
  };
}
