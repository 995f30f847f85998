import { config, missingProductionSettings, postureOf } from './config';
import { openDatabase, prepareDatabase } from './db/database';
import { createLogger } from './app';
import { createDeps } from './deps';
import { startServer } from './server';
import { installShutdown } from './shutdown';

/**
 * npm start: database (embedded unless DATABASE_URL), migrations as the schema owner, job runner,
 * HTTP + websocket server connected as the least-privilege service role.
 */
const log = createLogger(config.LOG_LEVEL);
// The first line says the mode and what it implies; production refuses to start without its settings.
const posture = postureOf(config);
log.info(posture, `mode: ${posture.mode}`);
const missing = missingProductionSettings(config);
if (missing.length) {
  log.fatal({ missing: missing.map((m) => m.slice(0, m.indexOf(' '))) }, `production refuses to start without: ${missing.join('; ')}`);
  await new Promise<void>((flushed) => log.flush(() => flushed())); // both lines out before exiting
  process.exit(1);
}
if (posture.mode !== 'production') log.warn(`${posture.mode} mode: not for production; set NODE_ENV=production (docs/deployment.md)`);
const db = await openDatabase();
const { applied } = await prepareDatabase(db, config, log);
log.info({ applied, embedded: db.embedded }, 'database ready');
const deps = await createDeps(config, db.url, log);
const server = await startServer(deps, config.PORT, config.HOST);
log.info({ url: server.url, graphql: `${server.url}/graphql`, openapi: `${server.url}/v1/openapi.json` }, 'listening');

installShutdown({ log, server, deps, database: db, timeoutMs: config.SHUTDOWN_TIMEOUT_MS });
