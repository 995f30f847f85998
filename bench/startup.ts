import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { exportJWK, generateKeyPair } from 'jose';
import { startEmbeddedPostgres } from '../src/db/embedded';
import { applyMigrations } from '../src/db/migrate';
import { SERVICE_ROLE } from '../src/db/roles';
import { projectRoot } from '../src/root';
import { buildAll } from '../scripts/build';
import { median, textTable } from './setup';

/**
 * npm run bench:startup — start-up time of the service on an existing database, through tsx
 * (`node --import tsx src/main.ts`, what `npm start` runs) and built (`node dist/main.js`, what
 * `npm run start:prod` runs): from spawning Node to the first `GET /readyz` answering 200 (polled
 * every 10 ms). Runs alternate, so drift of the machine's load hits both alike. The database is
 * an embedded PostgreSQL migrated once before the runs (as `npm run migrate:prod` does); the
 * service connects as the least-privilege role (DATABASE_URL only, NODE_ENV=production), so a
 * start checks that no migration is pending and migrates nothing (docs/deployment.md).
 *
 * Env: BENCH_STARTUP_RUNS (per variant, default 7), BENCH_PG_PORT (default 54362),
 * BENCH_STARTUP_PORT (default 8399).
 */
const runs = Number(process.env.BENCH_STARTUP_RUNS ?? 7);
const pgPort = Number(process.env.BENCH_PG_PORT ?? 54362);
const port = Number(process.env.BENCH_STARTUP_PORT ?? 8399);

const variants = {
  tsx: ['--import', 'tsx', 'src/main.ts'],
  built: ['dist/main.js'],
} as const;

/** Milliseconds from spawn to the first log line (every module loaded: main.ts imports them all before it logs) and to ready. */
async function startOnce(args: readonly string[], env: Record<string, string>): Promise<{ loaded: number; ready: number }> {
  const t0 = performance.now();
  const child = spawn(process.execPath, args, { cwd: projectRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  let loaded = 0;
  child.stdout.on('data', (c: Buffer) => {
    loaded ||= performance.now() - t0;
    err += c.toString();
  });
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`exited before ready: ${err}`);
      const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) return { loaded, ready: performance.now() - t0 };
      await new Promise((r) => setTimeout(r, 10));
    }
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

await buildAll({ quiet: true });
const db = await startEmbeddedPostgres({ dataDir: resolve(projectRoot, '.data/bench-startup'), port: pgPort, database: 'ftis' });
try {
  await applyMigrations(db.ownerUrl, { serviceRole: SERVICE_ROLE });
  const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    NODE_ENV: 'production',
    LOG_LEVEL: 'info',
    HOST: '127.0.0.1',
    PORT: String(port),
    DATA_DIR: resolve(projectRoot, '.data/bench-startup'),
    DATABASE_URL: db.serviceUrl,
    JWT_PRIVATE_JWK: JSON.stringify({ ...(await exportJWK(privateKey)), kid: 'bench' }),
    WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64'),
    SMTP_URL: 'smtp://127.0.0.1:2525', // production requires mail settings; nothing is sent here
    MAIL_FROM: 'bench@example.com',
  };
  const times: Record<keyof typeof variants, number[]> = { tsx: [], built: [] };
  const loads: Record<keyof typeof variants, number[]> = { tsx: [], built: [] };
  await startOnce(variants.tsx, env); // warm the OS file cache for both
  await startOnce(variants.built, env);
  for (let i = 0; i < runs; i++)
    for (const name of Object.keys(variants) as (keyof typeof variants)[]) {
      const t = await startOnce(variants[name], env);
      times[name].push(t.ready);
      loads[name].push(t.loaded);
    }
  const rows = (Object.keys(times) as (keyof typeof variants)[]).map((name) => {
    const sorted = [...times[name]].sort((a, b) => a - b);
    const ms = (x: number) => String(Math.round(x));
    return [name, variants[name].join(' '), ms(median(loads[name])), ms(median(sorted)), ms(sorted[0]!), ms(sorted.at(-1)!)];
  });
  console.log(textTable([['variant', 'command (node …)', 'modules loaded, median ms', 'ready, median ms', 'ready, min', 'ready, max'], ...rows]));
  console.log(`speed-up (median tsx / median built): ${(median(times.tsx) / median(times.built)).toFixed(2)}x over ${runs} runs each`);
} finally {
  await db.stop();
}
