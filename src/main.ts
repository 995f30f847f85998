import { config } from './config';
import { openDatabase, prepareDatabase } from './db/database';
import { createLogger } from './app';
import { createDeps } from './deps';
import { startServer } from './server';
import { stopJobs } from '../jobs/index';

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

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.on(signal, async () => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    await server.close();
    if (deps.boss) await stopJobs(deps.boss);
    await deps.deliveryStatus.close();
    await deps.db.$disconnect();
    await db.close();
    process.exit(0);
  });
