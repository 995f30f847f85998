import type { Logger } from 'pino';
import type { Config } from './config';
import type { Deps } from './context';
import { systemClock } from './clock';
import { createPrisma } from './db/prisma';
import { loadTokenKeys } from './auth/tokens';
import { loadSealingKey } from './auth/secrets';
import { RateLimiter } from './auth/rate-limit';
import { createMailer } from './mailer';
import { DeliveryStatusHub } from './webhooks/status';
import { startJobs } from '../jobs/index';

/**
 * The production wiring of a process: Prisma, the job runner (it always sends jobs; it works the
 * queues when JOBS=on), keys, clock, mail, the delivery status listener.
 */
export async function createDeps(config: Config, url: string, log: Logger): Promise<Deps> {
  const db = createPrisma(url, config.DB_POOL_MAX, (err) => log.warn({ err }, 'database connection lost'));
  const sealingKey = loadSealingKey(config);
  const boss = await startJobs(url, { db, clock: systemClock, log, config, sealingKey }, { work: config.JOBS === 'on' });
  return {
    config,
    db,
    clock: systemClock,
    log,
    tokenKeys: await loadTokenKeys(config),
    boss,
    rateLimiter: new RateLimiter(db, systemClock),
    mailer: createMailer(config, log),
    sealingKey,
    deliveryStatus: new DeliveryStatusHub(url, log),
  };
}
