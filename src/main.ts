import { config } from './config';
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
const db = await openDatabase();
const { applied } = await prepareDatabase(db, config, log);
log.info({ applied, embedded: db.embedded }, 'database ready');
const deps = await createDeps(config, db.url, log);
const server = await startServer(deps, config.PORT, config.HOST);
log.info({ url: server.url, graphql: `${server.url}/graphql`, openapi: `${server.url}/v1/openapi.json` }, 'listening');

installShutdown({ log, server, deps, database: db, timeoutMs: config.SHUTDOWN_TIMEOUT_MS });
