import { z } from 'zod';
import { parseEvmNetworks, type EvmNetworks } from './kernel/evm-settings';
import { parseTrustedProxies } from './kernel/client-address';

/** An exact browser origin: scheme, host and port only (https://app.example.com). */
const origin = z.string().transform((s, ctx) => {
  try {
    const u = new URL(s);
    if ((u.protocol === 'https:' || u.protocol === 'http:') && u.origin === s.replace(/\/$/, '')) return u.origin;
  } catch {
    // refused below
  }
  ctx.addIssue({ code: 'custom', message: `"${s}" is not an origin (scheme://host[:port], nothing else)` });
  return z.NEVER;
});

function isEd25519PrivateJwk(text: string): boolean {
  try {
    const k = JSON.parse(text) as Record<string, unknown>;
    return k.kty === 'OKP' && k.crv === 'Ed25519' && typeof k.d === 'string' && typeof k.x === 'string';
  } catch {
    return false;
  }
}

const DEFAULT_MAIL_FROM = 'ftis <no-reply@localhost>';

/** Process configuration, read once from the environment. Nothing else reads process.env. */
const schema = z
  .object({
    /** The mode: development (the default of `npm start`), test (the test suite) or production. See postureOf. */
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
    JWT_PRIVATE_JWK: z.string().refine(isEd25519PrivateJwk, 'must be an Ed25519 private JWK in JSON ({"kty":"OKP","crv":"Ed25519","d":…,"x":…})').optional(),
    JWT_ISSUER: z.string().default('ftis'),
    ACCESS_TOKEN_TTL_SECONDS: z.coerce.number().int().min(60).max(3600).default(900),
    REFRESH_TOKEN_TTL_SECONDS: z.coerce
      .number()
      .int()
      .min(3600)
      .default(30 * 24 * 3600),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    DB_POOL_MAX: z.coerce.number().int().min(1).max(200).default(20),
    /** Start the pg-boss job runner in this process. */
    JOBS: z.enum(['on', 'off']).default('on'),
    /** AES-256-GCM key (base64, 32 bytes) sealing webhook secrets at rest. Unset: a local key is created once under DATA_DIR. */
    WEBHOOK_SECRET_KEY: z
      .string()
      .refine((k) => Buffer.from(k, 'base64').length === 32, 'must be 32 bytes, base64-encoded (openssl rand -base64 32)')
      .optional(),
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
    /** Sign-ups (member, account holder) a source address may make at once; then each waits 60 s doubling (capped at 1 h), and one is forgotten every 6 minutes. */
    SIGNUP_BURST_PER_SOURCE: z.coerce.number().int().min(1).max(1_000_000).default(10),
    /** graphql-ws: an open socket's credential is authenticated again this often (ms); a revoked one closes it (4401). */
    WS_REAUTH_INTERVAL_MS: z.coerce.number().int().min(100).max(300_000).default(10_000),
    /** Sandbox chains: one block per SANDBOX network every this many ms (worker processes; 0 disables). */
    SANDBOX_BLOCK_INTERVAL_MS: z.coerce.number().int().min(0).max(3_600_000).default(5000),
    /**
     * Sandbox chains: after a chain.sync of sends alone (transfers in the mempool, no block) that detected a deposit, the job runner waits this
     * many ms before its next chain.sync fetch, so a burst of sends is detected together; a waiting job of a block or
     * other chain change ends the wait. 0: no wait.
     */
    SANDBOX_DETECTION_PAUSE_MS: z.coerce.number().int().min(0).max(60_000).default(250),
    /** Introspection and "did you mean" suggestions in GraphQL errors: on, except in production. */
    GRAPHQL_INTROSPECTION: z.enum(['on', 'off']).optional(),
    /** Browser origins allowed by CORS (comma-separated exact origins). Unset: any origin in development and test, none in production. */
    CORS_ORIGINS: z
      .string()
      .default('')
      .transform((s) =>
        s
          .split(',')
          .map((o) => o.trim())
          .filter(Boolean),
      )
      .pipe(z.array(origin)),
    /** Outgoing mail through SMTP (nodemailer): smtp://user:pass@host:587 or smtps://…:465. Unset: mail goes to DATA_DIR/mailbox.jsonl. */
    SMTP_URL: z
      .string()
      .regex(/^smtps?:\/\/[^\s]+$/, 'must be an smtp:// or smtps:// URL')
      .optional(),
    /** The From address of outgoing mail (e.g. "Acme <no-reply@acme.example>"). */
    MAIL_FROM: z.string().min(3).default(DEFAULT_MAIL_FROM),

    /** Reverse proxies trusted to say the client's address in X-Forwarded-For (comma-separated CIDRs or addresses). Unset: the socket's peer is the client. */
    TRUST_PROXY: z
      .string()
      .default('')
      .superRefine((text, ctx) => {
        try {
          parseTrustedProxies(text);
        } catch (e) {
          ctx.addIssue({ code: 'custom', message: (e as Error).message });
        }
      }),

    // --- Shutdown and crash recovery (issue 15; docs/deployment.md) ---
    /** On SIGTERM/SIGINT: how long running requests and jobs may take to finish; the rest is handed back to the queue. */
    SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(0).max(600_000).default(20_000),
    /**
     * On SIGTERM/SIGINT: how long the process stays up answering /readyz 503 (and serving requests as
     * usual) before it stops accepting, so a load balancer deregisters it first. 0: stop at once.
     */
    SHUTDOWN_DELAY_MS: z.coerce.number().int().min(0).max(600_000).default(0),
    /** A settlement, refund, withdrawal or deposit idle (non-terminal, unchanged) longer than this is reported as stuck. */
    STUCK_AFTER_SECONDS: z.coerce
      .number()
      .int()
      .min(10)
      .max(30 * 86_400)
      .default(300),

    /** The operator console at /console (docs/console.md): on, or off (/console and its assets answer 404; the API is unchanged). */
    CONSOLE: z.enum(['on', 'off']).default('on'),

    // --- Metrics, traces and request rate limits (issue 20; docs/observability.md) ---
    /** Prometheus metrics at /metrics and their recording per request: on, or off (nothing recorded per request, /metrics answers 404). */
    METRICS: z.enum(['on', 'off']).default('on'),
    /** Bearer token /metrics requires (Authorization: Bearer …; at least 16 characters). Unset: /metrics answers only loopback clients. */
    METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters (openssl rand -hex 24)').optional(),
    /** OTLP/HTTP collector base URL (spans go to <url>/v1/traces). Unset: no tracing. */
    OTEL_EXPORTER_OTLP_ENDPOINT: z.string().url().optional(),
    /** service.name of the spans. */
    OTEL_SERVICE_NAME: z.string().min(1).default('ftis'),
    /** Share of new traces recorded (0 to 1); a request continuing a caller's trace follows the caller's decision. */
    OTEL_TRACES_SAMPLE_RATIO: z.coerce.number().min(0).max(1).default(1),
    /** Requests per API key per window (REST and GraphQL together; 0: no limit). */
    RATE_LIMIT_API_KEY: z.coerce.number().int().min(0).default(6000),
    /** Requests per member or account-holder session per window (0: no limit). */
    RATE_LIMIT_SESSION: z.coerce.number().int().min(0).default(1200),
    /** The rate-limit window (seconds; fixed windows aligned to the epoch). */
    RATE_LIMIT_WINDOW_SECONDS: z.coerce.number().int().min(1).max(3600).default(60),

    // --- EVM networks (issue 18; docs/chains.md) ---
    /** JSON: per EVM network id, its connection settings ({rpcUrl, chainId, finalityDepth?, pollIntervalMs?, tokens?, …}). */
    EVM_NETWORKS: z.string().optional(),
    /** The same settings in a JSON file (instead of EVM_NETWORKS). */
    EVM_NETWORKS_FILE: z.string().optional(),
  })
  .superRefine((c, ctx) => {
    parseEvmNetworks(c.EVM_NETWORKS, c.EVM_NETWORKS_FILE, ctx);
    if (c.MIGRATION_DATABASE_URL && !c.DATABASE_URL)
      ctx.addIssue({
        code: 'custom',
        path: ['MIGRATION_DATABASE_URL'],
        message: "needs DATABASE_URL (the service's connection): the embedded database makes its own roles",
      });
    if (c.NODE_ENV === 'production' && c.WEBHOOK_DESTINATION_ALLOWLIST.trim())
      ctx.addIssue({
        code: 'custom',
        path: ['WEBHOOK_DESTINATION_ALLOWLIST'],
        message: 'must be empty in production: webhooks go to public https addresses only',
      });
  });

export type Config = z.infer<typeof schema>;

/** Every setting's name (README.md's Configuration names each: test/docs.test.ts). */
export const settingNames = Object.keys(schema.shape);

export function destinationPolicy(c: Config) {
  return {
    requireHttps: c.NODE_ENV === 'production',
    allowlist: c.WEBHOOK_DESTINATION_ALLOWLIST.split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  };
}

/**
 * What the mode implies, for the first log line of `npm start` and for the app's wiring. Development
 * (the default) and test: GraphiQL (development only), introspection, http:// webhook URLs, keys
 * generated under DATA_DIR when unset, mail to a file, CORS from any origin (no credentials).
 * Production: none of these; see missingProductionSettings.
 */
export function postureOf(c: Config) {
  const production = c.NODE_ENV === 'production';
  return {
    mode: c.NODE_ENV,
    graphiql: c.NODE_ENV === 'development',
    introspection: (c.GRAPHQL_INTROSPECTION ?? (production ? 'off' : 'on')) === 'on',
    webhookHttp: !production,
    generatedKeys: [!c.JWT_PRIVATE_JWK && 'JWT_PRIVATE_JWK', !c.WEBHOOK_SECRET_KEY && 'WEBHOOK_SECRET_KEY'].filter((k): k is string => !!k),
    mailer: c.SMTP_URL ? 'smtp' : 'file',
    cors: c.CORS_ORIGINS.length ? c.CORS_ORIGINS : production ? 'none' : 'any origin, without credentials',
  };
}

/**
 * The settings production refuses to start without, each with why: `npm start` names every one
 * missing in one message, before it touches the database. (loadConfig itself does not require
 * them: the scripts, the tests and the bench load a production configuration without mail.)
 */
export function missingProductionSettings(c: Config): string[] {
  if (c.NODE_ENV !== 'production') return [];
  const missing: string[] = [];
  if (!c.JWT_PRIVATE_JWK) missing.push('JWT_PRIVATE_JWK (the Ed25519 private JWK that signs session tokens; a generated local key would differ per host)');
  if (!c.WEBHOOK_SECRET_KEY)
    missing.push('WEBHOOK_SECRET_KEY (the AES-256 key, base64, sealing webhook secrets and custodial keys; a generated local key would differ per host)');
  if (!c.SMTP_URL) missing.push('SMTP_URL (smtp:// or smtps:// server for password reset and invitation mail; production does not write mail to a file)');
  if (c.MAIL_FROM === DEFAULT_MAIL_FROM) missing.push('MAIL_FROM (the From address of that mail)');
  return missing;
}

/**
 * With DATABASE_URL, every process of that database must use the same keys: a token signed by one
 * API process must verify on another, and a webhook secret or custodial key sealed by one must open
 * on another. Keys generated under each process's DATA_DIR would differ, so with DATABASE_URL (in
 * any mode) `npm start` refuses to start without them, naming each missing one. Only the embedded
 * database (no DATABASE_URL: one process, one DATA_DIR) generates its keys, kept under DATA_DIR.
 */
export function missingSharedDatabaseKeys(c: Config): string[] {
  if (!c.DATABASE_URL) return [];
  const missing: string[] = [];
  if (!c.JWT_PRIVATE_JWK)
    missing.push(
      'JWT_PRIVATE_JWK (the Ed25519 private JWK that signs session tokens: the same in every process, or a token issued by one is refused by another)',
    );
  if (!c.WEBHOOK_SECRET_KEY)
    missing.push(
      'WEBHOOK_SECRET_KEY (the AES-256 key, base64, sealing webhook secrets and custodial keys: the same in every ' +
        'process, or what one seals another cannot open)',
    );
  return missing;
}

/** The EVM networks' settings (validated with the rest of the configuration by loadConfig). */
export function evmNetworksOf(c: Config): EvmNetworks {
  return parseEvmNetworks(c.EVM_NETWORKS, c.EVM_NETWORKS_FILE, { addIssue: () => {} } as never);
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const r = schema.safeParse(env);
  if (r.success) return r.data;
  // One line naming each bad variable; never the value (it may be a key).
  throw new ConfigError(`Invalid configuration: ${r.error.issues.map((i) => `${i.path.join('.') || '(environment)'}: ${i.message}`).join('; ')}`);
}

export const config: Config = loadConfig();
