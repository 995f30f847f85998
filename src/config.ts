import { z } from 'zod';

/** Process configuration, read once from the environment. Nothing else reads process.env. */
const schema = z.object({
  NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().default('0.0.0.0'),
  /** The service's connection: a least-privilege role (docs/deployment.md). Unset: the embedded PostgreSQL. */
  DATABASE_URL: z.string().url().optional(),
  /** The schema owner's connection, for migrations (`npm run migrate` and at start). Unset: DATABASE_URL if its role owns the schema, else no migration. */
  MIGRATION_DATABASE_URL: z.string().url().optional(),
  /** Folder for local state: the embedded database and generated local keys. Git-ignored. */
  DATA_DIR: z.string().default('.data'),
  EMBEDDED_PG_PORT: z.coerce.number().int().default(54329),
  /** Ed25519 private JWK (JSON) that signs session tokens. Unset: a local key is created once under DATA_DIR. */
  JWT_PRIVATE_JWK: z.string().optional(),
  JWT_ISSUER: z.string().default('ftis'),
  ACCESS_TOKEN_TTL_SECONDS: z.coerce.number().int().min(60).max(3600).default(900),
  REFRESH_TOKEN_TTL_SECONDS: z.coerce.number().int().min(3600).default(30 * 24 * 3600),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  DB_POOL_MAX: z.coerce.number().int().min(1).max(200).default(20),
  /** Start the pg-boss job runner in this process. */
  JOBS: z.enum(['on', 'off']).default('on'),
  /** AES-256-GCM key (base64, 32 bytes) sealing webhook secrets at rest. Unset: a local key is created once under DATA_DIR. */
  WEBHOOK_SECRET_KEY: z.string().optional(),
  /** Budget of one delivery attempt: connect, response and body (ms). */
  WEBHOOK_ATTEMPT_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(10_000),
  /** Non-public destinations allowed anyway (comma-separated CIDRs, e.g. 127.0.0.1/32). Refused in production. */
  WEBHOOK_DESTINATION_ALLOWLIST: z.string().default(''),
  /** Deliveries in flight at once per endpoint, across all workers (pg-boss group concurrency). */
  WEBHOOK_ENDPOINT_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(50),
  /** Delivery jobs fetched at once, and outcomes recorded per transaction, at most. */
  WEBHOOK_BATCH_SIZE: z.coerce.number().int().min(1).max(500).default(100),
  /** Attempts in flight at once per worker process. */
  WEBHOOK_MAX_IN_FLIGHT: z.coerce.number().int().min(1).max(5000).default(1000),
  /** Sandbox chains: one block per SANDBOX network every this many ms (worker processes; 0 disables). */
  SANDBOX_BLOCK_INTERVAL_MS: z.coerce.number().int().min(0).max(3_600_000).default(5000),

  // --- Shutdown and crash recovery (issue 15; docs/deployment.md) ---
  /** On SIGTERM/SIGINT: how long running requests and jobs may take to finish; the rest is handed back to the queue. */
  SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(0).max(600_000).default(20_000),
  /** A settlement, refund, withdrawal or deposit idle (non-terminal, unchanged) longer than this is reported as stuck. */
  STUCK_AFTER_SECONDS: z.coerce.number().int().min(10).max(30 * 86_400).default(300),
}).superRefine((c, ctx) => {
  if (c.MIGRATION_DATABASE_URL && !c.DATABASE_URL)
    ctx.addIssue({ code: 'custom', path: ['MIGRATION_DATABASE_URL'], message: 'needs DATABASE_URL (the service\'s connection): the embedded database makes its own roles' });
  if (c.NODE_ENV === 'production' && c.WEBHOOK_DESTINATION_ALLOWLIST.trim())
    ctx.addIssue({ code: 'custom', path: ['WEBHOOK_DESTINATION_ALLOWLIST'], message: 'must be empty in production: webhooks go to public https addresses only' });
});

export type Config = z.infer<typeof schema>;

export function destinationPolicy(c: Config) {
  return {
    requireHttps: c.NODE_ENV === 'production',
    allowlist: c.WEBHOOK_DESTINATION_ALLOWLIST.split(',').map((s) => s.trim()).filter(Boolean),
  };
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  return schema.parse(env);
}

export const config: Config = loadConfig();
