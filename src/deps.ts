import type { Logger } from 'pino';
import type { Config } from './config';
import type { Deps } from './context';
import { systemClock } from './clock';
import { createPrisma } from './db/prisma';
import { loadTokenKeys } from './auth/tokens';
import { RateLimiter } from './auth/rate-limit';
import { fileMailer } from './mailer';
import { startJobs } from '../jobs/index';

/** The production wiring of a process: Prisma, the job runner (when JOBS=on), keys, clock, mail. */
export async function createDeps(config: Config, url: string, log: Logger): Promise<Deps> {
  const db = createPrisma(url, config.DB_POOL_MAX);
  const boss = config.JOBS === 'on' ? await startJobs(url, { db, clock: systemClock, log }, { work: true }) : null;
  return {
    config,
    db,
    clock: systemClock,
    log,
    tokenKeys: await loadTokenKeys(config),
    boss,
    rateLimiter: new RateLimiter(systemClock),
    mailer: fileMailer(config.DATA_DIR),
  };
}
