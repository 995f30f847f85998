import { readdirSync, readFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { resolve, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { SchemaEngine } from '@prisma/schema-engine-wasm';
import type { MigrationList } from '@prisma/schema-engine-wasm/schema_engine_bg';
import { bindMigrationAwareSqlAdapterFactory, ColumnTypeEnum } from '@prisma/driver-adapter-utils';
import { PrismaPg } from '@prisma/adapter-pg';
import { PgBoss } from 'pg-boss';
import pg from 'pg';
import { JOB_SCHEMA } from './roles';
import { grantServiceRole } from './grants';
import { projectRoot } from '../root';
import { changedSqlFiles, sqlFilesScript } from './sql-definitions';

/**
 * Migrations with Prisma's WebAssembly schema engine: no native engine download. They are
 * ordinary Prisma migrations (prisma/migrations/<name>/migration.sql) recorded in
 * `_prisma_migrations`, so `prisma migrate deploy` agrees with what this applies. The datamodel is
 * the folder prisma/schema/ (one file per domain); triggers and PL/pgSQL functions have one
 * canonical file each in prisma/sql/, which migrations copy (`migrate:new` does it).
 */
export interface PrismaDirs {
  /** prisma/schema: the datamodel, *.prisma. */
  schemaDir: string;
  /** prisma/migrations: <timestamp>_<name>/migration.sql, applied in name order. */
  migrationsDir: string;
  /** prisma/sql: the canonical definition of each trigger and function, *.sql. */
  sqlDir: string;
  /** prisma/accepted-drift.sql: diff statements that would undo hand-made schema objects. */
  acceptedDriftFile: string;
}
export const prismaDirs: PrismaDirs = {
  schemaDir: resolve(projectRoot, 'prisma/schema'),
  migrationsDir: resolve(projectRoot, 'prisma/migrations'),
  sqlDir: resolve(projectRoot, 'prisma/sql'),
  acceptedDriftFile: resolve(projectRoot, 'prisma/accepted-drift.sql'),
};
const noFilters = { externalTables: [], externalEnums: [] };

const filesOf = (dir: string, ext: string): string[] =>
  existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => f.endsWith(ext))
        .sort()
        .map((f) => join(dir, f))
    : [];

/** The datamodel's files, as the engine takes them. */
export const datamodelFiles = (schemaDir = prismaDirs.schemaDir): { path: string; content: string }[] =>
  filesOf(schemaDir, '.prisma').map((path) => ({ path, content: readFileSync(path, 'utf8') }));

function migrationList(migrationsDir = prismaDirs.migrationsDir): MigrationList {
  const dirs = existsSync(migrationsDir)
    ? readdirSync(migrationsDir, { withFileTypes: true })
        .filter((d) => d.isDirectory())
        .map((d) => d.name)
        .sort()
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
 * Two gaps of @prisma/adapter-pg 7.10 for the migrator's connection:
 * - it runs a migration script by splitting it on every ";", which breaks any function body
 *   (PL/pgSQL): scripts are sent whole instead, as one simple-protocol query, which PostgreSQL parses;
 * - it refuses result columns of PostgreSQL's one-byte "char" type (oid 18), which the engine's
 *   introspection of the catalogs returns (pg_constraint.contype…): they are passed on as the
 *   engine's Character type (node-postgres already decoded them to one-character strings).
 */
interface ScriptRunner {
  client: { query(sql: string): Promise<unknown> };
  onError(e: unknown): never;
  executeScript(script: string): Promise<void>;
  performIO(query: unknown): Promise<{ fields: { dataTypeID: number }[] }>;
  queryRaw(query: unknown): Promise<{ columnTypes: number[] }>;
}
const PG_CHAR = 18;
const PG_TEXT = 25;
function migratorConnection(pgFactory: PrismaPg, opened: { dispose(): Promise<void> }[]): PrismaPg {
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
    // queryRaw reads this.performIO: each call gets a view of the adapter whose performIO notes
    // the "char" columns of that call's result (no state shared between concurrent calls).
    const { performIO, queryRaw } = runner;
    runner.queryRaw = async (query) => {
      const chars: number[] = [];
      const view = Object.create(runner, {
        performIO: {
          value: async (q: unknown) => {
            const result = await performIO.call(runner, q);
            result.fields.forEach((f, i) => {
              if (f.dataTypeID === PG_CHAR) {
                f.dataTypeID = PG_TEXT;
                chars.push(i);
              }
            });
            return result;
          },
        },
      }) as ScriptRunner;
      const result = await queryRaw.call(view, query);
      for (const i of chars) result.columnTypes[i] = ColumnTypeEnum.Character;
      return result;
    };
    return adapter;
  };
  return pgFactory;
}

/** Runs `fn` with an engine on `url`, then frees it and closes every connection it opened. */
async function withEngine<T>(url: string, fn: (engine: SchemaEngine) => Promise<T>, schemaDir = prismaDirs.schemaDir): Promise<T> {
  const opened: { dispose(): Promise<void> }[] = [];
  const adapter = bindMigrationAwareSqlAdapterFactory(migratorConnection(new PrismaPg({ connectionString: url }), opened));
  const datamodels = datamodelFiles(schemaDir).map((f): [string, string] => [f.path, f.content]);
  // Loaded on first use: a start that migrates nothing (a service on its least-privilege role)
  // never compiles the engine's WebAssembly.
  const { SchemaEngine } = await import('@prisma/schema-engine-wasm');
  const engine = await SchemaEngine.new({ datamodels }, () => {}, adapter);
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

/**
 * Runs fn on a fresh database (a shadow) on the server of `ownerUrl`, with every migration of
 * `migrationsDir` applied, then drops it. The owner needs CREATEDB (the embedded server's has it).
 */
async function withShadowDatabase<T>(ownerUrl: string, dirs: PrismaDirs, fn: (url: string, engine: SchemaEngine) => Promise<T>): Promise<T> {
  const name = `ftis_shadow_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ownerUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
    const u = new URL(ownerUrl);
    u.pathname = `/${name}`;
    const url = u.toString();
    try {
      return await withEngine(
        url,
        async (engine) => {
          await engine.applyMigrations({ migrationsList: migrationList(dirs.migrationsDir), filters: noFilters });
          return fn(url, engine);
        },
        dirs.schemaDir,
      );
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    }
  } finally {
    await admin.end();
  }
}

const normalizeStatement = (s: string): string => s.replace(/\s+/g, ' ').trim();

/** The statements of prisma/accepted-drift.sql (one a line; comments and blank lines skipped). */
export function acceptedDrift(file = prismaDirs.acceptedDriftFile): string[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() && !l.startsWith('--'))
    .map(normalizeStatement);
}

/**
 * Splits the engine's script into its steps (a "-- Kind" comment and its statements, separated by
 * blank lines) and leaves out the steps whose statement is accepted drift. Returns the kept script
 * and the accepted statements that were not proposed (a stale list).
 */
function withoutAcceptedDrift(script: string, accepted: string[]): { sql: string; stale: string[] } {
  const proposed = new Set<string>();
  const kept = script.split(/\n\s*\n/).filter((step) => {
    const body = normalizeStatement(
      step
        .split('\n')
        .filter((l) => !l.startsWith('--'))
        .join('\n'),
    );
    if (!body) return false;
    proposed.add(body);
    return !accepted.includes(body);
  });
  return { sql: kept.length ? `${kept.map((k) => k.trim()).join('\n\n')}\n` : '', stale: accepted.filter((a) => !proposed.has(a)) };
}

export interface PendingMigration {
  /** What Prisma's engine computes from the migrated shadow database to the datamodel, less the accepted drift ('' when nothing). */
  datamodelSql: string;
  /** Statements of prisma/accepted-drift.sql the engine no longer proposes (their object is gone or now in the datamodel). */
  staleAcceptedDrift: string[];
  /** The canonical SQL files whose definitions the migrations do not have yet. */
  sqlFiles: string[];
  /** Both, as one migration script ('' when nothing changed). */
  sql: string;
}

/**
 * What a new migration must do: every migration is applied to a shadow database on the server of
 * `ownerUrl`; then the engine diffs that database to the datamodel (prisma/schema/*.prisma), and
 * each canonical file (prisma/sql/*.sql) is tried in a rolled-back transaction: a file that
 * changes a definition goes into the migration whole (CREATE OR REPLACE). The diff's steps that
 * would undo hand-made objects (prisma/accepted-drift.sql) are left out: no schema snapshot is
 * kept, so the database the migrations make is the starting point, hand-made objects included.
 */
export async function pendingMigration(ownerUrl: string, dirs: PrismaDirs = prismaDirs): Promise<PendingMigration> {
  return withShadowDatabase(ownerUrl, dirs, async (url, engine) => {
    const result = await engine.diff({
      // schemaDatasource: the database the engine is connected to (the shadow), introspected.
      from: { tag: 'schemaDatasource', files: datamodelFiles(dirs.schemaDir), configDir: dirs.schemaDir },
      to: { tag: 'schemaDatamodel', files: datamodelFiles(dirs.schemaDir) },
      script: true,
      exitCode: null,
      filters: noFilters,
    });
    const { sql: datamodelSql, stale } = withoutAcceptedDrift(result.stdout ?? '', acceptedDrift(dirs.acceptedDriftFile));
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    let sqlFiles: string[];
    try {
      // The datamodel's change first, so a changed trigger may name a new table or column.
      if (datamodelSql) await c.query(datamodelSql);
      sqlFiles = await changedSqlFiles(c, filesOf(dirs.sqlDir, '.sql'));
    } finally {
      await c.end();
    }
    const sql = [datamodelSql.trimEnd(), sqlFilesScript(sqlFiles).trimEnd()].filter(Boolean).join('\n\n');
    return { datamodelSql, staleAcceptedDrift: stale, sqlFiles, sql: sql ? `${sql}\n` : '' };
  });
}

/** The canonical SQL files (prisma/sql/*.sql), in the order they are applied. */
export const sqlFiles = (sqlDir = prismaDirs.sqlDir): string[] => filesOf(sqlDir, '.sql');

/**
 * Writes <migrationsDir>/<timestamp>_<name>/migration.sql from the pending change (datamodel and
 * canonical SQL). Returns the folder, or null when nothing changed.
 */
export async function createMigration(ownerUrl: string, name: string, dirs: PrismaDirs = prismaDirs, now = new Date()): Promise<string | null> {
  const { sql } = await pendingMigration(ownerUrl, dirs);
  if (!sql) return null;
  const stamp = now.toISOString().replace(/\D/g, '').slice(0, 14);
  const dir = join(dirs.migrationsDir, `${stamp}_${name.replace(/[^a-z0-9_]+/gi, '_').toLowerCase()}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'migration.sql'), sql);
  const lock = join(dirs.migrationsDir, 'migration_lock.toml');
  if (!existsSync(lock)) writeFileSync(lock, '# Please do not edit this file manually\nprovider = "postgresql"\n');
  return dir;
}
