import { readdirSync, readFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { resolve, join } from 'node:path';
import { SchemaEngine } from '@prisma/schema-engine-wasm';
import type { MigrationList } from '@prisma/schema-engine-wasm/schema_engine_bg';
import { bindMigrationAwareSqlAdapterFactory } from '@prisma/driver-adapter-utils';
import { PrismaPg } from '@prisma/adapter-pg';
import { PgBoss } from 'pg-boss';
import pg from 'pg';
import { JOB_SCHEMA } from './roles';
import { grantServiceRole } from './grants';

/**
 * Migrations with Prisma's WebAssembly schema engine: no native engine download. They are
 * ordinary Prisma migrations (prisma/migrations/<name>/migration.sql) recorded in
 * `_prisma_migrations`, so `prisma migrate deploy` agrees with what this applies.
 */
const root = resolve(import.meta.dirname, '../..');
export const schemaPath = resolve(root, 'prisma/schema.prisma');
export const migrationsDir = resolve(root, 'prisma/migrations');
const noFilters = { externalTables: [], externalEnums: [] };

function migrationList(): MigrationList {
  const dirs = existsSync(migrationsDir)
    ? readdirSync(migrationsDir, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name).sort()
    : [];
  const lockPath = join(migrationsDir, 'migration_lock.toml');
  return {
    baseDir: migrationsDir,
    lockfile: { path: 'migration_lock.toml', content: existsSync(lockPath) ? readFileSync(lockPath, 'utf8') : null },
    shadowDbInitScript: '',
    migrationDirectories: dirs.map((path) => ({
      path,
      migrationFile: { path: 'migration.sql', content: { tag: 'ok', value: readFileSync(join(migrationsDir, path, 'migration.sql'), 'utf8') } },
    })),
  };
}

/**
 * @prisma/adapter-pg 7.10 runs a migration script by splitting it on every ";", which breaks
 * any function body (PL/pgSQL) in a migration. The migrator's connection sends the script
 * whole instead, as one simple-protocol query, which PostgreSQL parses itself.
 */
interface ScriptRunner {
  client: { query(sql: string): Promise<unknown> };
  onError(e: unknown): never;
  executeScript(script: string): Promise<void>;
}
function wholeScripts(pgFactory: PrismaPg, opened: { dispose(): Promise<void> }[]): PrismaPg {
  const connect = pgFactory.connect.bind(pgFactory);
  pgFactory.connect = async () => {
    const adapter = await connect();
    opened.push(adapter);
    const runner = adapter as unknown as ScriptRunner;
    runner.executeScript = async (script) => {
      try {
        await runner.client.query(script);
      } catch (e) {
        runner.onError(e);
      }
    };
    return adapter;
  };
  return pgFactory;
}

/** Runs `fn` with an engine on `url`, then frees it and closes every connection it opened. */
async function withEngine<T>(url: string, fn: (engine: SchemaEngine) => Promise<T>): Promise<T> {
  const opened: { dispose(): Promise<void> }[] = [];
  const adapter = bindMigrationAwareSqlAdapterFactory(wholeScripts(new PrismaPg({ connectionString: url }), opened));
  const engine = await SchemaEngine.new({ datamodels: [[schemaPath, readFileSync(schemaPath, 'utf8')]] }, () => {}, adapter);
  try {
    return await fn(engine);
  } finally {
    engine.free();
    for (const a of opened) await a.dispose().catch(() => {});
  }
}

/**
 * Applies every migration not yet applied, installs or upgrades the job runner's schema, then
 * grants the service role its privileges (src/db/grants.ts). `url` logs in as the schema's owner.
 * Returns the names applied.
 */
export async function applyMigrations(url: string, opts: { serviceRole?: string | null } = {}): Promise<string[]> {
  const applied = await withEngine(url, async (engine) => {
    const out = await engine.applyMigrations({ migrationsList: migrationList(), filters: noFilters });
    return out.appliedMigrationNames;
  });
  await installJobSchema(url);
  if (opts.serviceRole) await grantServiceRole(url, opts.serviceRole);
  return applied;
}

/** Names of the migrations in prisma/migrations. */
export const migrationNames = (): string[] => migrationList().migrationDirectories.map((d) => d.path);

/**
 * pg-boss's schema, installed or migrated by the owner, so the service (which starts pg-boss with
 * `migrate: false`) needs no DDL. pg-boss's migrations may queue index builds for its background
 * runner (bam); this waits for them, so the service never has to run them.
 */
async function installJobSchema(url: string): Promise<void> {
  const boss = new PgBoss({ connectionString: url, schema: JOB_SCHEMA, supervise: false, schedule: false, migrate: true, max: 2 });
  boss.on('error', () => {});
  await boss.start();
  try {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      for (let i = 0; ; i++) {
        const { rows } = await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${JOB_SCHEMA}.bam WHERE status NOT IN ('completed', 'failed')`);
        if (!rows[0]!.n) break;
        if (i > 6000) throw new Error('pg-boss schema migration: index builds still pending after 10 minutes');
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      await c.end();
    }
  } finally {
    await boss.stop({ graceful: false });
  }
}

const SNAPSHOT = 'schema.prisma';

/** schema.prisma as it stood when the newest migration was made (kept beside its migration.sql). */
export function lastSnapshot(): string | null {
  const dirs = migrationList().migrationDirectories;
  for (const d of dirs.reverse()) {
    const p = join(migrationsDir, d.path, SNAPSHOT);
    if (existsSync(p)) return readFileSync(p, 'utf8');
  }
  return null;
}

/**
 * The SQL that takes the schema of the newest migration to the current schema.prisma, computed
 * by the engine from the two datamodels (no database needed). Empty when nothing changed.
 */
export async function pendingMigrationSql(url: string): Promise<string> {
  const current = readFileSync(schemaPath, 'utf8');
  // The engine insists on a reachable database, though a datamodel-to-datamodel diff reads nothing from it.
  return withEngine(url, async (engine) => {
    const previous = lastSnapshot();
    const result = await engine.diff({
      from: previous === null ? { tag: 'empty' } : { tag: 'schemaDatamodel', files: [{ path: schemaPath, content: previous }] },
      to: { tag: 'schemaDatamodel', files: [{ path: schemaPath, content: current }] },
      script: true,
      exitCode: null,
      filters: noFilters,
    });
    const sql = result.stdout ?? '';
    return /^\s*(-- This is an empty migration\.)?\s*$/.test(sql) ? '' : sql;
  });
}

/** Writes prisma/migrations/<timestamp>_<name>/ from the pending change. Returns the folder, or null. */
export async function createMigration(url: string, name: string): Promise<string | null> {
  const sql = await pendingMigrationSql(url);
  if (!sql) return null;
  const stamp = new Date().toISOString().replace(/\D/g, '').slice(0, 14);
  const dir = join(migrationsDir, `${stamp}_${name.replace(/[^a-z0-9_]+/gi, '_').toLowerCase()}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'migration.sql'), sql);
  writeFileSync(join(dir, SNAPSHOT), readFileSync(schemaPath, 'utf8'));
  const lock = join(migrationsDir, 'migration_lock.toml');
  if (!existsSync(lock)) writeFileSync(lock, '# Please do not edit this file manually\nprovider = "postgresql"\n');
  return dir;
}
