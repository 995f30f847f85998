import type { Logger } from 'pino';
import type { Deps } from './context';
import type { Database } from './db/database';
import type { RunningServer } from './server';
import { releaseShutdownSignals } from './db/embedded';
import { handBackJobs, stopJobs } from './compose';
import { handlersSettled } from './kernel/work';
import { stopTracing } from './kernel/otel';
import { lifecycle } from './kernel/lifecycle';
import { disconnectPrisma } from './db/prisma';

/**
 * The graceful shutdown of `npm start` (docs/deployment.md, "Shutdown"), on SIGTERM or SIGINT:
 *
 * 0. the process is marked stopping (src/kernel/lifecycle.ts): /readyz answers 503 at once, on the
 *    API and the worker, while /healthz stays 200; for `delayMs` (SHUTDOWN_DELAY_MS, default 0) it
 *    goes on serving as usual, so a load balancer that probes /readyz deregisters it first;
 * 1. the HTTP server stops accepting connections; websockets are closed with 1001 (going away);
 *    requests in flight finish (their connections close after the response), within the timeout;
 * 2. the job runner stops: its timers and the delivery worker first, then pg-boss, which waits for
 *    the handlers running until the timeout and hands the jobs it still holds back to the queue
 *    (`retry`); they are made runnable at once, for another process or the next start;
 * 3. the delivery status listener, the database pool, and last the embedded PostgreSQL stop;
 * 4. exit 0 (1 if a step failed, logged at error).
 *
 * `timeoutMs` (SHUTDOWN_TIMEOUT_MS) bounds steps 1 and 2 together. A second signal changes nothing.
 */
export interface ShutdownParts {
  log: Logger;
  server: RunningServer;
  deps: Pick<Deps, 'boss' | 'db' | 'deliveryStatus'>;
  database: Pick<Database, 'close'>;
  timeoutMs: number;
  /** SHUTDOWN_DELAY_MS: how long /readyz answers 503 before the listener closes (default 0). */
  delayMs?: number;
}

export function installShutdown(parts: ShutdownParts): void {
  // Without this the embedded PostgreSQL's module stops the database at once on these signals.
  releaseShutdownSignals();
  let started = false;
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.on(signal, () => {
      if (started) return void parts.log.info({ signal }, 'already shutting down');
      started = true;
      void shutdown(parts, signal).then((code) => process.exit(code));
    });
}

export async function shutdown(parts: ShutdownParts, signal: string): Promise<number> {
  const { log, server, deps, database, timeoutMs, delayMs = 0 } = parts;
  // First, before anything closes: /readyz answers 503 from now on (the load balancer's cue).
  lifecycle.stopping = true;
  log.info({ signal, timeoutMs, delayMs }, 'shutting down');
  if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
  const deadline = Date.now() + timeoutMs;
  const left = () => Math.max(0, deadline - Date.now());
  let code = 0;
  const step = async (name: string, fn: () => Promise<unknown>) => {
    try {
      await fn();
    } catch (err) {
      code = 1;
      log.error({ err, step: name }, `shutdown: ${name} failed`);
    }
  };
  await step('http server', () => server.close({ drainMs: left() }));
  const boss = deps.boss;
  if (boss) {
    let held = new Map<string, string>();
    await step('job runner', async () => {
      held = await stopJobs(boss, { graceful: true, timeout: left() });
    });
    if (held.size) await step('hand back', async () => log.info({ jobs: await handBackJobs(deps.db, held) }, 'jobs handed back to the queue'));
    // A handler that outlived the timeout still holds a database transaction: let it end first.
    if (!(await handlersSettled(boss, Math.max(left(), 2000))))
      log.warn('job handlers still running after the shutdown timeout: their database transactions roll back, their jobs run again');
  }
  await step('traces', stopTracing);
  await step('delivery status listener', () => deps.deliveryStatus.close());
  await step('database pool', () => disconnectPrisma(deps.db));
  await step('database', () => database.close());
  log.info({ code }, 'stopped');
  return code;
}
