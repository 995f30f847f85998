import pg from 'pg';

/** The schema of the job runner (pg-boss), installed by the owner with the migrations. */
export const JOB_SCHEMA = 'pgboss';

/** The embedded database's least-privilege role, which the service connects as. */
export const SERVICE_ROLE = 'ftis_app';

type Queryable = Pick<pg.Client, 'query' | 'escapeIdentifier' | 'escapeLiteral'>;

/**
 * Creates (or resets) a login role with no attribute beyond LOGIN: not a superuser, no
 * CREATEDB/CREATEROLE/REPLICATION/BYPASSRLS, inheriting nothing, and no SET privilege on
 * session_replication_role. Run by a role that may create roles. PostgreSQL 15+ syntax.
 */
export async function ensureServiceRole(admin: Queryable, role: string, password: string): Promise<void> {
  const id = admin.escapeIdentifier(role);
  await admin.query(`DO $$ BEGIN CREATE ROLE ${id}; EXCEPTION WHEN duplicate_object THEN NULL; END $$`);
  await admin.query(
    `ALTER ROLE ${id} WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS NOINHERIT PASSWORD ${admin.escapeLiteral(password)}`,
  );
  await admin.query(`REVOKE SET, ALTER SYSTEM ON PARAMETER session_replication_role FROM ${id}`);
}

async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** The server's version: server_version_num (e.g. 170010) and server_version (e.g. "17.10"). */
export const serverVersion = (url: string): Promise<{ num: number; version: string }> =>
  withClient(url, async (c) => {
    const { rows } = await c.query<{ num: string; version: string }>(
      `SELECT current_setting('server_version_num') AS num, current_setting('server_version') AS version`,
    );
    return { num: Number(rows[0]!.num), version: rows[0]!.version.split(' ')[0]! };
  });

/** The role a connection string logs in as. */
export const roleOf = (url: string): Promise<string> => withClient(url, async (c) => (await c.query<{ r: string }>('SELECT current_user AS r')).rows[0]!.r);

/**
 * Whether `url` logs in as the schema's owner: it owns the migrations table (or a member of its
 * owner, or a superuser), or, before any migration, may create in schema public.
 */
export const isSchemaOwner = (url: string): Promise<boolean> =>
  withClient(url, async (c) => {
    const { rows } = await c.query<{ owner: boolean }>(`
      SELECT coalesce(
        (SELECT pg_has_role(current_user, relowner, 'USAGE') FROM pg_class WHERE oid = to_regclass('public."_prisma_migrations"')),
        has_schema_privilege('public', 'CREATE')) AS owner`);
    return rows[0]!.owner;
  });

/**
 * What the service's role may do that it must not: anything here lets it alter or bypass the
 * audit log's and the ledger's triggers. Empty for a least-privilege role.
 */
export const excessPrivileges = (url: string): Promise<string[]> =>
  withClient(url, async (c) => {
    const { rows } = await c.query<Record<string, boolean | string>>(`
      SELECT current_user AS role, r.rolsuper AS superuser, r.rolbypassrls AS bypassrls, r.rolreplication AS replication,
        r.rolcreaterole AS createrole,
        coalesce((SELECT pg_has_role(current_user, relowner, 'USAGE') FROM pg_class WHERE oid = to_regclass('public."AuditLogEntry"')), false) AS owner,
        has_schema_privilege('public', 'CREATE') AS "create",
        has_parameter_privilege('session_replication_role', 'SET') AS replica
      FROM pg_roles r WHERE r.rolname = current_user`);
    const r = rows[0]!;
    const out: string[] = [];
    if (r.superuser) out.push('is a superuser');
    if (r.owner) out.push('owns the tables (or is a member of their owner)');
    if (r.bypassrls) out.push('has BYPASSRLS');
    if (r.replication) out.push('has REPLICATION');
    if (r.createrole) out.push('has CREATEROLE');
    if (r.create && !r.superuser) out.push('may CREATE in schema public');
    if (r.replica && !r.superuser) out.push('may SET session_replication_role');
    return out.map((p) => `role ${String(r.role)} ${p}`);
  });

/** Migrations of prisma/migrations not recorded as applied in `url`'s database (readable by the service role). */
export const appliedMigrationNames = (url: string): Promise<Set<string> | null> =>
  withClient(url, async (c) => {
    const exists = (await c.query<{ t: string | null }>(`SELECT to_regclass('public."_prisma_migrations"')::text AS t`)).rows[0]!.t;
    if (!exists) return null;
    const { rows } = await c.query<{ n: string }>(
      `SELECT migration_name AS n FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`,
    );
    return new Set(rows.map((r) => r.n));
  });
