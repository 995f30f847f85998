import pg from 'pg';

/**
 * The service role's privileges, applied by the owner after every migration run (applyMigrations),
 * so a new table or sequence is covered without its migration saying anything. Idempotent.
 *
 * - Schemas public and pgboss: USAGE only (no CREATE: the service makes no objects).
 * - Every table: SELECT, INSERT, UPDATE, DELETE; never TRUNCATE, REFERENCES or TRIGGER. Not
 *   being the owner, the role cannot ALTER a table, disable or drop a trigger; not being a
 *   superuser, it cannot SET session_replication_role.
 * - Append-only tables keep SELECT and INSERT only: a table with a trigger whose function's name
 *   ends in `append_only` or `immutable` (AuditLogEntry, LedgerEntry, LedgerTransaction,
 *   LedgerCorrection, NetworkResourceReserveMovement). A table with a trigger function ending in
 *   `guard` (LedgerAccount, LedgerHold: they change only forward) loses DELETE. The triggers stay
 *   as the second line, for the owner.
 * - _prisma_migrations: SELECT (the service checks that no migration is pending).
 * - Sequences: USAGE, SELECT (nextval; nothing calls setval).
 * - Functions: EXECUTE, PostgreSQL's default for PUBLIC; none is SECURITY DEFINER but
 *   webhook_endpoint_create_sequence (it creates the endpoint's sequence, which needs CREATE).
 * - Default privileges of the owner in both schemas, so objects made between two runs of this
 *   step (pg-boss's own, a migration's) are usable at once.
 */
export function serviceGrantsSql(role: string): string {
  const r = pg.escapeIdentifier(role);
  const lit = pg.escapeLiteral(role);
  return `
DO $grants$
DECLARE
  t record;
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = ${lit}) THEN
    RAISE EXCEPTION 'the service role % does not exist: create it first (docs/deployment.md)', ${lit};
  END IF;
  IF (SELECT rolsuper FROM pg_roles WHERE rolname = ${lit}) THEN
    RAISE EXCEPTION 'the service role % is a superuser: it must be a least-privilege role (docs/deployment.md)', ${lit};
  END IF;
END
$grants$;
REVOKE ALL ON SCHEMA public, pgboss FROM ${r};
GRANT USAGE ON SCHEMA public, pgboss TO ${r};
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public, pgboss TO ${r};
REVOKE TRUNCATE, REFERENCES, TRIGGER ON ALL TABLES IN SCHEMA public, pgboss FROM ${r};
REVOKE ALL ON TABLE public."_prisma_migrations" FROM ${r};
GRANT SELECT ON TABLE public."_prisma_migrations" TO ${r};
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public, pgboss TO ${r};
REVOKE UPDATE ON ALL SEQUENCES IN SCHEMA public, pgboss FROM ${r};
DO $grants$
DECLARE
  t record;
BEGIN
  FOR t IN
    SELECT c.oid::regclass AS tbl,
           bool_or(p.proname ~ '(append_only|immutable)$') AS append_only,
           bool_or(p.proname ~ 'guard$') AS guarded
    FROM pg_trigger g
    JOIN pg_class c ON c.oid = g.tgrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
    JOIN pg_proc p ON p.oid = g.tgfoid
    WHERE n.nspname = 'public' AND NOT g.tgisinternal
    GROUP BY c.oid
  LOOP
    IF t.append_only THEN
      EXECUTE format('REVOKE UPDATE, DELETE ON TABLE %s FROM %I', t.tbl, ${lit});
    ELSIF t.guarded THEN
      EXECUTE format('REVOKE DELETE ON TABLE %s FROM %I', t.tbl, ${lit});
    END IF;
  END LOOP;
END
$grants$;
ALTER DEFAULT PRIVILEGES IN SCHEMA public, pgboss GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO ${r};
ALTER DEFAULT PRIVILEGES IN SCHEMA public, pgboss GRANT USAGE, SELECT ON SEQUENCES TO ${r};
`;
}

/** Applies serviceGrantsSql as the connection's role (the owner), in one transaction. */
export async function grantServiceRole(ownerUrl: string, role: string): Promise<void> {
  const c = new pg.Client({ connectionString: ownerUrl });
  await c.connect();
  try {
    await c.query(`BEGIN;\n${serviceGrantsSql(role)}\nCOMMIT;`);
  } catch (e) {
    await c.query('ROLLBACK').catch(() => {});
    throw e;
  } finally {
    await c.end();
  }
}
