import { inject } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import pg from 'pg';
import { exportJWK, generateKeyPair } from 'jose';
import { restResultOf, type RestResult } from './harness';

/**
 * The service as `npm start` runs it, in a child process: `node --import tsx src/main.ts` (one process: the job runner with
 * JOBS=on, its schedules, the sandbox block producer, the HTTP server), against a database cloned
 * from the harness's migrated template. For tests of the real process wiring (test/process.test.ts)
 * and of crashes and restarts: a ServiceProcess can be killed (SIGKILL) and another started on the
 * same database (`startService({ databaseUrl })`).
 *
 * Nothing is mocked: REST over real HTTP, pg-boss working every queue, pino's JSON lines on stdout
 * collected and parsed (`logs()`, `waitForLog`).
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface LogLine {
  level: number;
  msg?: string;
  time?: number;
  [k: string]: unknown;
}

/** pino's levels: error and fatal. */
export const ERROR_LEVEL = 50;

export interface ServiceProcess {
  child: ChildProcess;
  /** The base URL the service listens on (from its `listening` log line). */
  url: string;
  databaseUrl: string;
  env: Record<string, string>;
  /** Every JSON log line so far (stdout), in order. */
  logs(): LogLine[];
  /** stdout lines that are not JSON, and stderr: for failure messages. */
  rawOutput(): string;
  /** Resolves with the first log line (already seen or to come) matching, or rejects after timeoutMs. */
  waitForLog(match: (l: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
  /** A REST call over HTTP. */
  rest(method: string, path: string, opts?: { body?: unknown; headers?: Record<string, string>; raw?: string }): Promise<RestResult>;
  /** SIGTERM (graceful: the process stops its server and job runner), SIGKILL after graceMs. Resolves with the exit code or signal. */
  stop(graceMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The Node process running src/main.ts (the child itself, `npm start` being one process): from its `listening` line. */
  nodePid: number;
  /** Signals the whole process group (started with `detached`): Node and its embedded PostgreSQL. Resolves at Node's exit. */
  killGroup(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGKILL at once (a crash). */
  kill(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** The owner's connection to a cloned database (a test reads and locks what the service role may not). */
export function ownerUrlOf(serviceUrl: string): string {
  const u = new URL(inject('serverUrl'));
  u.pathname = new URL(serviceUrl).pathname;
  return u.toString();
}

/** A new database cloned from the harness's migrated template (with the pg-boss schema). Answers its URL for the service role. */
export async function cloneTemplateDatabase(prefix = 'p'): Promise<string> {
  const serverUrl = inject('serverUrl');
  const template = inject('templateDatabase');
  const name = `t_${template.split('_').pop()}_${prefix}_${process.pid}_${Date.now() % 1_000_000}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}" TEMPLATE ${template}`);
  } finally {
    await admin.end();
  }
  // The service connects as the least-privilege service role, as in production.
  const url = new URL(inject('serviceServerUrl'));
  url.pathname = `/${name}`;
  return url.toString();
}

/** The environment of a service process: explicit keys, deliveries to 127.0.0.1 allowed, fast sandbox blocks. */
export async function serviceEnv(overrides: Record<string, string> = {}): Promise<Record<string, string>> {
  const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
  return {
    JWT_PRIVATE_JWK: JSON.stringify({ ...(await exportJWK(privateKey)), kid: 'process-test' }),
    WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64'),
    WEBHOOK_DESTINATION_ALLOWLIST: '127.0.0.1/32',
    WEBHOOK_ATTEMPT_TIMEOUT_MS: '2000',
    SANDBOX_BLOCK_INTERVAL_MS: '300',
    LOG_LEVEL: 'info',
    HOST: '127.0.0.1',
    PORT: '0',
    // Request rate limits (issue 20) are tested with their own settings (test/rate-limits.test.ts).
    RATE_LIMIT_API_KEY: '0',
    RATE_LIMIT_SESSION: '0',
    ...overrides,
  };
}

/**
 * Starts `node --import tsx src/main.ts` (what `npm start` runs) with DATABASE_URL and `env`
 * (plus PATH and HOME; nothing else of this process's environment), and waits for its `listening`
 * line. The DATA_DIR is a fresh temporary folder (mail files), removed when the process exits.
 */
export async function startService(opts: {
  databaseUrl?: string;
  env: Record<string, string>;
  startTimeoutMs?: number;
  /** No DATABASE_URL: the service runs its embedded PostgreSQL in `dataDir` (kept across restarts) on `port`. */
  embedded?: { dataDir: string; port: number };
  /** Its own process group (Node and, embedded, PostgreSQL): `killGroup` signals all of them, as a terminal or a supervisor would. */
  detached?: boolean;
  /** Node's arguments instead of `--import tsx src/main.ts`: e.g. a build's `dist/main.js` (test/build.test.ts). */
  args?: string[];
  /** The process's role (`npm run start:api` / `start:worker`, issue 20): the argument after `src/main.ts`. Unset: everything, as `npm start`. */
  role?: 'api' | 'worker';
  /** Through npm itself (`npm start`, `npm run start:api`...): the child is npm, the service its descendant (`nodePid`). */
  npmScript?: string;
}): Promise<ServiceProcess> {
  const dataDir = opts.embedded?.dataDir ?? mkdtempSync(join(tmpdir(), 'ftis-process-'));
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    DATA_DIR: dataDir,
    ...opts.env,
    ...(opts.embedded ? { EMBEDDED_PG_PORT: String(opts.embedded.port) } : { DATABASE_URL: opts.databaseUrl! }),
  };
  // The Node running these tests (Node 24: npm puts node_modules/.bin first on PATH), with tsx as its loader.
  const [command, args] = opts.npmScript
    ? ['npm', ['run', '--silent', opts.npmScript]]
    : [process.execPath, opts.args ?? ['--import', 'tsx', 'src/main.ts', ...(opts.role ? [opts.role] : [])]];
  const child = spawn(command, args, {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: opts.detached ?? false,
  });
  const lines: LogLine[] = [];
  let raw = '';
  let pending = '';
  const waiters = new Set<{ match: (l: LogLine) => boolean; resolve: (l: LogLine) => void }>();
  child.stdout!.setEncoding('utf8');
  child.stderr!.setEncoding('utf8');
  child.stdout!.on('data', (chunk: string) => {
    pending += chunk;
    let nl: number;
    while ((nl = pending.indexOf('\n')) >= 0) {
      const text = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      let line: LogLine | null = null;
      try {
        const parsed = JSON.parse(text) as unknown;
        if (parsed && typeof parsed === 'object' && typeof (parsed as LogLine).level === 'number') line = parsed as LogLine;
      } catch {
        line = null;
      }
      if (!line) {
        raw += text + '\n';
        continue;
      }
      lines.push(line);
      for (const w of waiters)
        if (w.match(line)) {
          waiters.delete(w);
          w.resolve(line);
        }
    }
  });
  child.stderr!.on('data', (s: string) => (raw += s));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      if (!opts.embedded) rmSync(dataDir, { recursive: true, force: true });
      resolve({ code, signal });
    }),
  );
  const alive = () => child.exitCode === null && child.signalCode === null;
  const tail = () =>
    `${raw.slice(-4000)}\n${lines
      .slice(-20)
      .map((l) => JSON.stringify(l))
      .join('\n')}`;

  function waitForLog(match: (l: LogLine) => boolean, timeoutMs = 30_000): Promise<LogLine> {
    const seen = lines.find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise<LogLine>((resolve, reject) => {
      const w = {
        match,
        resolve: (l: LogLine) => {
          clearTimeout(timer);
          resolve(l);
        },
      };
      const timer = setTimeout(() => {
        waiters.delete(w);
        reject(new Error(`no matching log line after ${timeoutMs} ms:\n${tail()}`));
      }, timeoutMs);
      waiters.add(w);
      void exited.then(({ code, signal }) => {
        if (!waiters.has(w)) return;
        waiters.delete(w);
        clearTimeout(timer);
        reject(new Error(`the service exited (${code ?? signal}) before the expected log line:\n${tail()}`));
      });
    });
  }

  let listening: LogLine;
  try {
    listening = await waitForLog((l) => l.msg === 'listening', opts.startTimeoutMs ?? 60_000);
  } catch (err) {
    if (alive()) child.kill('SIGKILL');
    await exited;
    throw err;
  }
  const url = String(listening.url);

  async function stopWith(signal: NodeJS.Signals, graceMs: number) {
    if (alive()) {
      child.kill(signal);
      const timer = setTimeout(() => alive() && child.kill('SIGKILL'), graceMs);
      const r = await exited;
      clearTimeout(timer);
      return r;
    }
    return exited;
  }

  return {
    child,
    url,
    nodePid: Number(listening.pid),
    databaseUrl: opts.databaseUrl ?? '',
    killGroup: async (signal = 'SIGKILL') => {
      if (alive()) process.kill(-child.pid!, signal);
      return exited;
    },
    env,
    logs: () => lines.slice(),
    rawOutput: () => raw,
    waitForLog,
    rest: (method, path, o = {}) => restCall(url, method, path, o),
    stop: (graceMs = 15_000) => stopWith('SIGTERM', graceMs),
    kill: () => stopWith('SIGKILL', 0),
    exited,
  };
}

/** A REST call over HTTP, answered in the harness's RestResult shape. */
export async function restCall(
  baseUrl: string,
  method: string,
  path: string,
  o: { body?: unknown; headers?: Record<string, string>; raw?: string } = {},
): Promise<RestResult> {
  const headers: Record<string, string> = { ...(o.headers ?? {}) };
  let body: string | undefined = o.raw;
  if (o.body !== undefined) {
    body = JSON.stringify(o.body);
    headers['content-type'] ??= 'application/json';
  }
  return restResultOf(await fetch(`${baseUrl}${path}`, { method, headers, body }));
}

/** Polls `read` until `done` holds of its answer, at most `timeoutMs`; answers the last value or throws with it. */
export async function pollUntil<T>(what: string, read: () => Promise<T>, done: (v: T) => boolean, timeoutMs = 30_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T;
  for (;;) {
    last = await read();
    if (done(last)) return last;
    if (Date.now() > deadline) throw new Error(`${what}: not reached after ${timeoutMs} ms; last: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** A settlement's body (GET /v1/settlements/{id}), polled until it is no longer PENDING. */
export function settledOutcome(svc: ServiceProcess, settlementId: string, headers: Record<string, string>, timeoutMs: number) {
  return pollUntil(
    'settlement EXECUTED',
    async () => (await svc.rest('GET', `/v1/settlements/${settlementId}`, { headers })).body,
    (b) => b.status !== 'PENDING',
    timeoutMs,
  );
}

/** A webhook endpoint's deliveries (GET …/deliveries?limit=100), polled until each event type of `wanted` has one DELIVERED. */
export function deliveredEvents(svc: ServiceProcess, endpointId: string, headers: Record<string, string>, wanted: readonly string[], timeoutMs: number) {
  return pollUntil(
    'webhooks delivered',
    async () =>
      (await svc.rest('GET', `/v1/webhook-endpoints/${endpointId}/deliveries?limit=100`, { headers })).body as {
        id: string;
        EventType: string;
        status: string;
      }[],
    (items) => wanted.every((t) => items.some((d) => d.EventType === t && d.status === 'DELIVERED')),
    timeoutMs,
  );
}

/** A TCP port free on 127.0.0.1 at the time of the call. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** Runs a command to its end (the project folder, `env` plus PATH and HOME): its exit code, stdout and stderr. */
export async function runCommand(
  command: string,
  args: string[],
  env: Record<string, string>,
  timeoutMs = 120_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(command, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (s: string) => (stdout += s));
  child.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  clearTimeout(timer);
  return { code, stdout, stderr };
}
