import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import pg from 'pg';
import { createTestApp, signUpMember, type TestApp } from './harness';
import { loadConfig } from '../src/config';
import { prepareDatabase } from '../src/db/database';

/**
 * The service connects as a least-privilege role (issue 14, point 9): whatever a route does, it
 * does through that role, so what the role cannot do, no route can. These tests log in as it
 * (app.databaseUrl, the connection deps.db and the job runner use) and try every way around the
 * audit log's and the ledger's append-only rules.
 */
let app: TestApp;
let service: pg.Client;
let owner: pg.Client;
beforeAll(async () => {
  app = await createTestApp();
  service = new pg.Client({ connectionString: app.databaseUrl });
  owner = new pg.Client({ connectionString: app.ownerDatabaseUrl });
  await service.connect();
  await owner.connect();
});
afterAll(async () => {
  await service?.end();
  await owner?.end();
  await app.close();
});

/** The error a statement raises as the service's role; it must raise one. */
async function refused(sql: string, params: unknown[] = []): Promise<{ code: string; message: string }> {
  await service.query('BEGIN');
  try {
    await service.query(sql, params);
  } catch (e) {
    return { code: (e as { code: string }).code, message: (e as Error).message };
  } finally {
    await service.query('ROLLBACK');
  }
  throw new Error(`the service role was allowed: ${sql}`);
}

const APPEND_ONLY = ['AuditLogEntry', 'LedgerEntry', 'LedgerTransaction', 'LedgerCorrection', 'NetworkResourceReserveMovement'];

describe('the service role', () => {
  test('is neither a superuser nor the owner, has no special attribute and belongs to no role', async () => {
    const { rows } = await service.query(`
      SELECT r.rolsuper, r.rolcreaterole, r.rolcreatedb, r.rolreplication, r.rolbypassrls, r.rolinherit,
        (SELECT count(*)::int FROM pg_auth_members WHERE member = r.oid) AS memberships,
        (SELECT count(*)::int FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname IN ('public', 'pgboss') AND pg_has_role(r.oid, c.relowner, 'USAGE')) AS owned,
        has_schema_privilege('public', 'CREATE') AS create_public, has_schema_privilege('pgboss', 'CREATE') AS create_pgboss,
        has_parameter_privilege('session_replication_role', 'SET') AS set_replica
      FROM pg_roles r WHERE r.rolname = current_user`);
    expect(rows[0]).toEqual({
      rolsuper: false,
      rolcreaterole: false,
      rolcreatedb: false,
      rolreplication: false,
      rolbypassrls: false,
      rolinherit: false,
      memberships: 0,
      owned: 0,
      create_public: false,
      create_pgboss: false,
      set_replica: false,
    });
  });

  test('cannot change, remove or bypass an audit entry by any statement', async () => {
    const m = await signUpMember(app);
    const r = await app.rest('POST', `/v1/organizations/${m.organizationId}/applications`, { body: { name: 'Audited' }, headers: m.headers });
    expect(r.status).toBe(201);
    const entry = await app.deps.db.auditLogEntry.findFirstOrThrow({ where: { entityId: r.body.id } });
    const attempts = [
      [`UPDATE "AuditLogEntry" SET "action" = 'tampered' WHERE "id" = $1::uuid`, [entry.id]],
      [`DELETE FROM "AuditLogEntry" WHERE "id" = $1::uuid`, [entry.id]],
      [`TRUNCATE "AuditLogEntry"`],
      [`ALTER TABLE "AuditLogEntry" DISABLE TRIGGER "AuditLogEntry_immutable"`],
      [`ALTER TABLE "AuditLogEntry" DISABLE TRIGGER ALL`],
      [`DROP TRIGGER "AuditLogEntry_immutable" ON "AuditLogEntry"`],
      [`ALTER TABLE "AuditLogEntry" OWNER TO CURRENT_USER`],
      [`CREATE OR REPLACE FUNCTION audit_log_entry_immutable() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$`],
      [`SET session_replication_role = replica`],
      [`SET LOCAL session_replication_role = replica`],
      [`SELECT set_config('session_replication_role', 'replica', true)`],
      [`ALTER ROLE CURRENT_USER SET session_replication_role = replica`],
      [`CREATE TABLE "AuditLogEntry_copy" (LIKE "AuditLogEntry")`],
      [`CREATE FUNCTION evil() RETURNS int LANGUAGE sql AS 'SELECT 1'`],
    ] as const;
    for (const [sql, params] of attempts) {
      const e = await refused(sql, params ? [...params] : []);
      expect(e.code, `${sql}: ${e.message}`).toBe('42501'); // insufficient_privilege
    }
    // Through the service's own client (what every route uses): refused, and the entry is unchanged.
    await expect(app.deps.db.auditLogEntry.update({ where: { id: entry.id }, data: { action: 'tampered' } })).rejects.toThrow(/denied/);
    await expect(app.deps.db.auditLogEntry.delete({ where: { id: entry.id } })).rejects.toThrow(/denied/);
    await expect(app.deps.db.auditLogEntry.deleteMany({})).rejects.toThrow(/denied/);
    expect(await app.deps.db.auditLogEntry.findUniqueOrThrow({ where: { id: entry.id } })).toEqual(entry);
    // It still writes entries: the routes audit their changes.
    expect(
      (
        await service.query(
          `INSERT INTO "AuditLogEntry" ("id", "actorType", "entityType", "entityId", "action") VALUES (gen_random_uuid(), 'SYSTEM', 'Test', gen_random_uuid(), 'test.inserted')`,
        )
      ).rowCount,
    ).toBe(1);
  });

  test('cannot change or remove ledger entries and transactions, nor remove balance rows or holds', async () => {
    const denied = async (sql: string) => expect((await refused(sql)).code, sql).toBe('42501');
    for (const t of ['LedgerEntry', 'LedgerTransaction', 'LedgerAccount', 'LedgerHold']) {
      await denied(`DELETE FROM "${t}"`);
      await denied(`TRUNCATE "${t}" CASCADE`);
      await denied(`ALTER TABLE "${t}" DISABLE TRIGGER ALL`);
    }
    await denied(`UPDATE "LedgerEntry" SET "amount" = 1`);
    await denied(`UPDATE "LedgerTransaction" SET "nature" = 'x'`);
  });

  test('holds only what the catalog shows: append-only tables SELECT and INSERT, no TRUNCATE anywhere, no definer function but the two sequence makers', async () => {
    const { rows } = await owner.query<{ t: string; p: string[] }>(
      `SELECT c.relname AS t, array(SELECT p FROM unnest(array['SELECT','INSERT','UPDATE','DELETE','TRUNCATE','REFERENCES','TRIGGER']) p
         WHERE has_table_privilege($1, c.oid, p)) AS p
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname IN ('public', 'pgboss') AND c.relkind IN ('r', 'p') ORDER BY 1`,
      [new URL(app.databaseUrl).username],
    );
    const privileges = new Map(rows.map((r) => [r.t, r.p]));
    for (const t of APPEND_ONLY) expect(privileges.get(t), t).toEqual(['SELECT', 'INSERT']);
    for (const t of ['LedgerAccount', 'LedgerHold']) expect(privileges.get(t), t).toEqual(['SELECT', 'INSERT', 'UPDATE']);
    expect(privileges.get('_prisma_migrations')).toEqual(['SELECT']);
    for (const [t, p] of privileges)
      expect(
        p.filter((x) => ['TRUNCATE', 'REFERENCES', 'TRIGGER'].includes(x)),
        t,
      ).toEqual([]);
    // A SECURITY DEFINER function would run with the owner's privileges: the two there only create a sequence each.
    const definers = await owner.query<{ f: string }>(
      `SELECT p.oid::regprocedure::text AS f FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE p.prosecdef AND n.nspname IN ('public', 'pgboss')`,
    );
    expect(definers.rows.map((r) => r.f).sort()).toEqual(['sandbox_network_create_nonce_sequence()', 'webhook_endpoint_create_sequence()']);
  });
});

describe('start-up', () => {
  const production = loadConfig({ NODE_ENV: 'production' });
  const quiet = { info: () => {}, warn: () => {} } as never;

  test('production refuses to run the service as a superuser or as the owner', async () => {
    const db = { url: app.ownerDatabaseUrl, ownerUrl: null, embedded: false, close: async () => {} };
    await expect(prepareDatabase(db, production, quiet)).rejects.toThrow(/is a superuser.*audit log/);
  });

  test('the service role alone: no migration, the schema checked current, production accepts it', async () => {
    const lines: string[] = [];
    const log = { info: (_: unknown, msg: string) => lines.push(msg), warn: (msg: string) => lines.push(msg) } as never;
    const db = { url: app.databaseUrl, ownerUrl: null, embedded: false, close: async () => {} };
    await expect(prepareDatabase(db, production, log)).resolves.toEqual({ applied: [] });
    expect(lines.join('\n')).toMatch(/migrations skipped/);
  });

  test("with the owner's connection: migrates as the owner and grants the service role again", async () => {
    const db = { url: app.databaseUrl, ownerUrl: app.ownerDatabaseUrl, embedded: false, close: async () => {} };
    await expect(prepareDatabase(db, production, quiet)).resolves.toEqual({ applied: [] });
    expect((await refused(`UPDATE "AuditLogEntry" SET "action" = 'x'`)).code).toBe('42501');
  });
});
