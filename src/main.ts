import { config } from './config';
import { openDatabase } from './db/database';
import { applyMigrations } from './db/migrate';
import { createPrisma } from './db/prisma';
import { systemClock } from './clock';
import { createLogger } from './app';
import { loadTokenKeys } from './auth/tokens';
import { RateLimiter } from './auth/rate-limit';
import { fileMailer } from './mailer';
import { startJobs } from '../jobs/index';
import { startServer } from './server';

/** npm start: database (embedded unless DATABASE_URL), migrations, job runner, HTTP + websocket server. */
const log = createLogger(config.LOG_LEVEL);
const db = await openDatabase();
const applied = await applyMigrations(db.url);
log.info({ applied, embedded: !config.DATABASE_URL }, 'database ready');
const prisma = createPrisma(db.url, config.DB_POOL_MAX);
const boss = config.JOBS === 'on' ? await startJobs(db.url, { db: prisma, clock: systemClock, log }, { work: true }) : null;
const server = await startServer(
  {
    config,
    db: prisma,
    clock: systemClock,
    log,
    tokenKeys: await loadTokenKeys(config),
    boss,
    rateLimiter: new RateLimiter(systemClock),
    mailer: fileMailer(config.DATA_DIR),
  },
  config.PORT,
  config.HOST,
);
log.info({ url: server.url, graphql: `${server.url}/graphql`, openapi: `${server.url}/v1/openapi.json` }, 'listening');

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.on(signal, async () => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    await server.close();
    await boss?.stop({ graceful: true, timeout: 10_000 });
    await prisma.$disconnect();
    await db.close();
    process.exit(0);
  });
