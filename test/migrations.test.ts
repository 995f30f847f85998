import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, appendFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createMigration, pendingMigration, prismaDirs, sqlFiles, type PrismaDirs } from '../src/db/migrate';
import { driftFromFiles, liveDefinitions } from '../src/db/sql-definitions';
import { createTestApp, type TestApp } from './harness';

// Migrations without snapshots (issue 17): migrate:new diffs a shadow database migrated from
// prisma/migrations to prisma/schema/*.prisma, and copies each changed prisma/sql/*.sql whole.

let app: TestApp;
let owner: pg.Client;
const scratch: string[] = [];
beforeAll(async () => {
  app = await createTestApp();
  owner = new pg.Client({ connectionString: app.ownerDatabaseUrl });
  await owner.connect();
});
afterAll(async () => {
  await owner?.end();
  await app?.close();
  for (const d of scratch) rmSync(d, { recursive: true, force: true });
});

/** A copy of prisma/ (schema, migrations, sql) to change without touching the repository. */
function copyOfPrisma(): PrismaDirs {
  const root = mkdtempSync(join(tmpdir(), 'ftis-prisma-'));
  chmodSync(root, 0o777);
  scratch.push(root);
  const dirs = {
    schemaDir: join(root, 'schema'),
    migrationsDir: join(root, 'migrations'),
    sqlDir: join(root, 'sql'),
    acceptedDriftFile: prismaDirs.acceptedDriftFile,
  };
  cpSync(prismaDirs.schemaDir, dirs.schemaDir, { recursive: true });
  cpSync(prismaDirs.migrationsDir, dirs.migrationsDir, { recursive: true });
  cpSync(prismaDirs.sqlDir, dirs.sqlDir, { recursive: true });
  return dirs;
}

test('no migration folder holds a schema snapshot; the datamodel is prisma/schema/<domain>.prisma', () => {
  for (const d of readdirSync(prismaDirs.migrationsDir, { withFileTypes: true }).filter((e) => e.isDirectory()))
    expect(readdirSync(join(prismaDirs.migrationsDir, d.name)), d.name).toEqual(['migration.sql']);
  const files = readdirSync(prismaDirs.schemaDir);
  expect(files).toContain('main.prisma');
  expect(files.length).toBeGreaterThan(10);
  expect(existsSync(join(prismaDirs.schemaDir, '..', 'schema.prisma'))).toBe(false);
});

test('the live triggers and functions of a migrated database are exactly prisma/sql/*.sql', async () => {
  const live = await liveDefinitions(owner);
  const names = Object.keys(live);
  // 13 functions (uuidv7 only on servers before 18) and 17 triggers, every one hand-written.
  expect(names.filter((n) => n.startsWith('trigger '))).toHaveLength(17);
  expect(names.filter((n) => n.startsWith('function ') && !n.includes('uuidv7'))).toHaveLength(13);
  expect(
    live[
      'function ledger_post(timestamp with time ' +
        'zone,"LedgerAccountKind"[],uuid[],uuid[],uuid[],boolean[],text[],text[],text[],text[],uuid[],text[],uuid[],jsonb[],timestamp ' +
        'with time zone[],integer[],integer[],uuid[],numeric[],timestamp with time ' +
        'zone[],boolean[],integer[],integer[],boolean[],numeric[])'
    ],
  ).toMatch(/SET enable_seqscan TO 'off'/);
  // Drop them all and run the files (rolled back): the same definitions, none missing, none extra.
  expect(await driftFromFiles(owner, sqlFiles())).toEqual([]);
  // And the check sees a difference: an edited body, a trigger the files do not have.
  const dirs = copyOfPrisma();
  const file = join(dirs.sqlDir, 'ledger_append_only.sql');
  writeFileSync(file, readFileSync(file, 'utf8').replace("'% is append-only: % refused'", "'% is append-only (edited): % refused'"));
  appendFileSync(
    join(dirs.sqlDir, 'audit_log_entry_immutable.sql'),
    '\nCREATE OR REPLACE TRIGGER "Operator_immutable" BEFORE DELETE ON "Operator" FOR EACH ROW EXECUTE FUNCTION audit_log_entry_immutable();\n',
  );
  expect((await driftFromFiles(owner, sqlFiles(dirs.sqlDir))).map((d) => d.name)).toEqual([
    'function ledger_append_only()',
    'trigger Operator_immutable on Operator',
  ]);
}, 60_000);

test('prisma/schema and prisma/sql have no change without a migration: migrate:new writes nothing', async () => {
  const { sql, staleAcceptedDrift } = await pendingMigration(app.ownerDatabaseUrl);
  expect(
    sql,
    `the datamodel or a canonical SQL file differs from the migrations; run npm run migrate:new <name> (a step that undoes an object a migration made by hand on purpose goes into prisma/accepted-drift.sql instead):\n${sql}`,
  ).toBe('');
  expect(staleAcceptedDrift, 'prisma/accepted-drift.sql lists statements the diff no longer proposes: remove them').toEqual([]);
  const dirs = copyOfPrisma();
  const before = readdirSync(dirs.migrationsDir);
  expect(await createMigration(app.ownerDatabaseUrl, 'nothing', dirs)).toBeNull();
  expect(readdirSync(dirs.migrationsDir)).toEqual(before);
}, 120_000);

test('migrate:new with a change writes only that change, and then has nothing left to write', async () => {
  const dirs = copyOfPrisma();
  // A new model in a new domain file, a new field on an existing model, and an edited function.
  writeFileSync(join(dirs.schemaDir, 'probes.prisma'), 'model Probe {\n  id    String @id @db.Uuid\n  label String\n}\n');
  const tenancy = join(dirs.schemaDir, 'tenancy.prisma');
  writeFileSync(tenancy, readFileSync(tenancy, 'utf8').replace(/^model Organization \{\n/m, 'model Organization {\n  probeNote String?\n'));
  const fn = join(dirs.sqlDir, 'ledger_account_lock_key.sql');
  writeFileSync(fn, readFileSync(fn, 'utf8').replace("'ledger.account:'", "'ledger.account.v2:'"));

  const dir = await createMigration(app.ownerDatabaseUrl, 'Probe change', dirs, new Date('2099-01-02T03:04:05Z'));
  expect(dir).toBe(join(dirs.migrationsDir, '20990102030405_probe_change'));
  expect(readdirSync(dir!)).toEqual(['migration.sql']);
  const sql = readFileSync(join(dir!, 'migration.sql'), 'utf8');
  const statements = sql.split('\n').filter((l) => /^(CREATE|ALTER|DROP|COMMENT|DO)\b/.test(l));
  expect(statements).toEqual([
    'ALTER TABLE "Organization" ADD COLUMN     "probeNote" TEXT;',
    'CREATE TABLE "Probe" (',
    'CREATE OR REPLACE FUNCTION ledger_account_lock_key(account_id uuid) RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$',
  ]);
  expect(sql).toContain('-- prisma/sql/ledger_account_lock_key.sql');
  // Applied on top of the others, the migrations now say everything.
  const after = await pendingMigration(app.ownerDatabaseUrl, dirs);
  expect(after).toEqual({ datamodelSql: '', staleAcceptedDrift: [], sqlFiles: [], sql: '' });
}, 180_000);
