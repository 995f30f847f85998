import { inject } from 'vitest';
import pg from 'pg';
import { createApp } from '../src/compose';
import { createLogger } from '../src/app';
import { loadConfig } from '../src/config';
import { ManualClock } from '../src/clock';
import { createPrisma, type PrismaClient } from '../src/db/prisma';
import { RateLimiter } from '../src/auth/rate-limit';
import { CaptureMailer } from '../src/mailer';
import { generateKeyPair, exportJWK } from 'jose';
import { loadTokenKeys } from '../src/auth/tokens';
import { startServer, type RunningServer } from '../src/server';
import { newOperatorKey } from '../src/auth/secrets';
import { hashPassword } from '../src/auth/passwords';
import type { Deps } from '../src/context';
import { randomBytes } from 'node:crypto';
import { loadSealingKey } from '../src/auth/secrets';
import { DeliveryStatusHub } from '../src/webhooks/status';
import { startJobs } from '../jobs/index';

/**
 * A whole service for one test file: its own database cloned from the migrated template, the
 * real yoga app (REST and GraphQL), a manual clock and a capturing mailer. Requests go through
 * `yoga.fetch` (no socket) unless `listen()` starts a real HTTP/websocket server.
 */
export interface TestApp {
  deps: Deps;
  clock: ManualClock;
  mailer: CaptureMailer;
  /** The service's connection (the least-privilege role), which deps.db and the job runner use. */
  databaseUrl: string;
  /** The owner's connection to the same database: set-up only a test cannot do as the service. */
  ownerDatabaseUrl: string;
  /** A client on ownerDatabaseUrl (set-up only: tampering, triggers as the owner sees them). */
  ownerDb: PrismaClient;
  /** Every log line written, as JSON text, when created with `captureLogs` (else empty). */
  logs: string[];
  /** A REST call. `auth` is a header set (see the credential helpers). */
  rest(method: string, path: string, opts?: { body?: unknown; headers?: Record<string, string>; raw?: string; clientIp?: string }): Promise<RestResult>;
  /** A GraphQL call over HTTP POST /graphql. */
  gql<T = Record<string, unknown>>(
    query: string,
    variables?: Record<string, unknown>,
    headers?: Record<string, string>,
    clientIp?: string,
  ): Promise<GqlResult<T>>;
  /**
   * Runs `fn` and answers the SQL statements the service's database client sent meanwhile (every
   * statement of deps.db: BEGIN and COMMIT included; not the owner's client, not pg-boss's own pool).
   * Calls must not overlap.
   */
  sqlStatements<T>(fn: () => Promise<T>): Promise<{ result: T; statements: string[] }>;
  listen(): Promise<RunningServer>;
  close(): Promise<void>;
}

/** What REST-only helpers need: the app's REST call (a TestApp, or a service process: test/process-harness.ts). */
export type RestApp = Pick<TestApp, 'rest'>;
/** What helpers writing straight to the database need (a TestApp, or a connection to a service process's database). */
export interface DbApp {
  deps: { db: Deps['db'] };
}

export interface RestResult {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

export interface GqlResult<T> {
  data: T | null;
  errors?: { message: string; extensions?: { code?: string; fieldErrors?: unknown } }[];
}

/** A response read as a RestResult: its text, and its JSON body when it has one. */
export async function restResultOf(res: Response): Promise<RestResult> {
  const text = await res.text();
  let parsed: unknown = undefined;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

let counter = 0;

async function createDatabase(): Promise<string> {
  const serverUrl = inject('serverUrl');
  const serviceServerUrl = inject('serviceServerUrl');
  const template = inject('templateDatabase');
  const name = `t_${template.split('_').pop()}_${process.pid}_${++counter}_${Date.now() % 100000}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}" TEMPLATE ${template}`);
  await admin.end();
  // The service connects as the least-privilege role; the owner's connection is for set-up only.
  return onDatabase(serviceServerUrl, name);
}

/** The same database on another server URL (another role's credentials). */
function onDatabase(server: string, name: string): string {
  const url = new URL(server);
  url.pathname = `/${name}`;
  return url.toString();
}

export async function createTestApp(opts: { now?: Date; env?: Record<string, string>; databaseUrl?: string; captureLogs?: boolean } = {}): Promise<TestApp> {
  // databaseUrl: a second service (another API process) on the database of an existing test app.
  const databaseUrl = opts.databaseUrl ?? (await createDatabase());
  const ownerDatabaseUrl = onDatabase(inject('serverUrl'), new URL(databaseUrl).pathname.slice(1));
  const ownerDb = createPrisma(ownerDatabaseUrl, 2);
  const clock = new ManualClock(opts.now ?? new Date());
  const mailer = new CaptureMailer();
  const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
  const config = loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    JWT_PRIVATE_JWK: JSON.stringify({ ...(await exportJWK(privateKey)), kid: 'test' }),
    WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64'),
    // Every request of a test comes from one address: sign-up limits are tested with their own setting.
    SIGNUP_BURST_PER_SOURCE: '1000000',
    // Request rate limits (issue 20) are tested with their own settings (test/rate-limits.test.ts).
    RATE_LIMIT_API_KEY: '0',
    RATE_LIMIT_SESSION: '0',
    ...opts.env,
  });
  let recording: string[] | null = null;
  const db = createPrisma(databaseUrl, 8, undefined, (sql) => recording?.push(sql));
  // A capturing logger keeps every line (trace and up) in memory for the test to read.
  const logs: string[] = [];
  const log = opts.captureLogs ? createLogger('trace', { write: (line: string) => void logs.push(line) }) : createLogger('silent');
  const sealingKey = loadSealingKey(config);
  // Sends jobs (in the transactions that need them); tests work the queues themselves (drainDeliveries) or start a worker.
  const boss = await startJobs(databaseUrl, { db, clock, log, config, sealingKey }, { work: false });
  const deps: Deps = {
    config,
    db,
    clock,
    log,
    tokenKeys: await loadTokenKeys(config),
    boss,
    rateLimiter: new RateLimiter(db, clock),
    mailer,
    sealingKey,
    deliveryStatus: new DeliveryStatusHub(databaseUrl, log),
  };
  const yoga = createApp(deps);
  const servers: RunningServer[] = [];

  const app: TestApp = {
    deps,
    clock,
    mailer,
    databaseUrl,
    ownerDatabaseUrl,
    ownerDb,
    logs,
    async rest(method, path, o = {}) {
      const headers: Record<string, string> = { ...(o.headers ?? {}) };
      let body: string | undefined = o.raw;
      if (o.body !== undefined) {
        body = JSON.stringify(o.body);
        headers['content-type'] ??= 'application/json';
      }
      // The client address (rate limits) as the HTTP server passes it; 'unknown' by default.
      return restResultOf(await yoga.fetch(`http://test${path}`, { method, headers, body }, { clientIp: o.clientIp }));
    },
    async gql(query, variables, headers = {}, clientIp) {
      const res = await yoga.fetch(
        'http://test/graphql',
        { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json', ...headers }, body: JSON.stringify({ query, variables }) },
        { clientIp },
      );
      return (await res.json()) as GqlResult<never>;
    },
    async sqlStatements(fn) {
      if (recording) throw new Error('sqlStatements calls overlap');
      recording = [];
      try {
        const result = await fn();
        return { result, statements: recording };
      } finally {
        recording = null;
      }
    },
    async listen() {
      const s = await startServer(deps, 0);
      servers.push(s);
      return s;
    },
    async close() {
      for (const s of servers) await s.close();
      await boss.stop({ graceful: false });
      await deps.deliveryStatus.close();
      await db.$disconnect();
      await ownerDb.$disconnect();
    },
  };
  return app;
}

// Credentials, as header sets.
export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
export const apiKey = (key: string) => ({ 'x-api-key': key });
export const operatorKey = (key: string) => ({ 'x-operator-key': key });

let seq = 0;
export const uniqueEmail = (prefix = 'user') => `${prefix}.${process.pid}.${Date.now()}.${++seq}@example.com`;
export const PASSWORD = 'correct horse battery staple';

/** Signs up a member (a new organization, its OWNER) and logs in. */
export async function signUpMember(app: RestApp, email = uniqueEmail('owner')) {
  const s = await app.rest('POST', '/v1/auth/signup', { body: { email, password: PASSWORD, name: 'Owner', organizationName: 'Org ' + email } });
  if (s.status !== 201) throw new Error(`signup failed: ${s.status} ${s.text}`);
  const l = await app.rest('POST', '/v1/auth/login', { body: { email, password: PASSWORD } });
  if (l.status !== 200) throw new Error(`login failed: ${l.status} ${l.text}`);
  return { email, organizationId: s.body.organizationId as string, memberId: s.body.memberId as string, tokens: l.body, headers: bearer(l.body.accessToken) };
}

/**
 * A VIEWER member of `organizationId`, made straight in the database (its credentials dated before
 * the app's clock, so its first token is valid) and logged in over REST.
 */
export async function createViewer(app: TestApp, organizationId: string) {
  const email = uniqueEmail('viewer');
  const viewer = await app.deps.db.member.create({
    data: {
      organizationId,
      email,
      name: 'Viewer',
      role: 'VIEWER',
      passwordHash: await hashPassword(PASSWORD),
      credentialsChangedAt: new Date(app.clock.now().getTime() - 5000),
    },
  });
  const login = await app.rest('POST', '/v1/auth/login', { body: { email, password: PASSWORD } });
  if (login.status !== 200) throw new Error(`viewer login failed: ${login.status} ${login.text}`);
  return { memberId: viewer.id, email, headers: bearer(login.body.accessToken) };
}

/** Creates an application with an environment of `type` and an API key in it, as `member`. */
export async function createApiKey(
  app: RestApp,
  member: { organizationId: string; headers: Record<string, string> },
  type: 'SANDBOX' | 'PRODUCTION' = 'SANDBOX',
) {
  const a = await app.rest('POST', `/v1/organizations/${member.organizationId}/applications`, { body: { name: 'App' }, headers: member.headers });
  if (a.status !== 201) throw new Error(`application failed: ${a.status} ${a.text}`);
  const e = await app.rest('POST', `/v1/applications/${a.body.id}/environments`, { body: { type }, headers: member.headers });
  if (e.status !== 201) throw new Error(`environment failed: ${e.status} ${e.text}`);
  const k = await app.rest('POST', `/v1/environments/${e.body.id}/api-keys`, { headers: member.headers });
  if (k.status !== 201) throw new Error(`api key failed: ${k.status} ${k.text}`);
  return {
    applicationId: a.body.id as string,
    environmentId: e.body.id as string,
    apiKeyId: k.body.id as string,
    key: k.body.apiKey as string,
    headers: apiKey(k.body.apiKey),
  };
}

/** Creates a platform operator straight in the database (as `npm run operator:create` does). */
export async function createOperator(app: DbApp) {
  const { key, keyHash } = newOperatorKey();
  const op = await app.deps.db.operator.create({ data: { email: uniqueEmail('op'), name: 'Operator', keyHash } });
  return { operatorId: op.id, key, headers: operatorKey(key) };
}
