import type { Logger } from 'pino';
import type { PgBoss } from 'pg-boss';
import type { Config } from './config';
import type { Clock } from './clock';
import type { PrismaClient } from './db/prisma';
import type { DomainError } from './errors';
import type { Principal } from './auth/principal';
import type { TokenKeys } from './auth/tokens';
import type { RateLimiter } from './auth/rate-limit';
import type { Mailer } from './mailer';
import type { DeliveryStatusHub } from './webhooks/status';

/** Process-wide dependencies, built once at start and injected (tests build their own). */
export interface Deps {
  config: Config;
  db: PrismaClient;
  clock: Clock;
  log: Logger;
  tokenKeys: TokenKeys;
  boss: PgBoss | null;
  rateLimiter: RateLimiter;
  mailer: Mailer;
  /** AES-256-GCM key sealing webhook secrets at rest. */
  sealingKey: Buffer;
  /** Delivery status changes of every process (LISTEN/NOTIFY), for subscriptions. */
  deliveryStatus: DeliveryStatusHub;
}

/** Per-request GraphQL context. REST requests build the same context through yoga. */
export interface Context {
  deps: Deps;
  requestId: string;
  principal: Principal | null;
  credentialError: DomainError | null;
  /** Client address, for rate limits. */
  clientIp: string;
}
