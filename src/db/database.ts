import type { Logger } from 'pino';
import { config as processConfig, type Config } from '../config';
import { startEmbeddedPostgres } from './embedded';
import { applyMigrations, migrationNames } from './migrate';
import { appliedMigrationNames, excessPrivileges, isSchemaOwner, roleOf, serverVersion } from './roles';

/**
 * The oldest PostgreSQL major the service supports (docs/decisions.md, issue 24): the migrations
 * use 15's NULLS NOT DISTINCT and its privileges on parameters; 18's uuidv7() has a fallback.
 */
export const MINIMUM_POSTGRES_MAJOR = 15;

/** Null when the server of `url` is supported; else the one line that says why not, naming the minimum. */
export async function unsupportedServer(url: string): Promise<string | null> {
  const v = await serverVersion(url);
  if (Math.floor(v.num / 10000) >= MINIMUM_POSTGRES_MAJOR) return null;
  return `PostgreSQL ${v.version} is not supported: the service needs PostgreSQL ${MINIMUM_POSTGRES_MAJOR} or newer (supported: ${MINIMUM_POSTGRES_MAJOR} to 18)`;
}

export interface Database {
  /** The service's connection: a least-privilege role (docs/deployment.md). */
  url: string;
  /** The owner's connection, for migrations (MIGRATION_DATABASE_URL; embedded: the bootstrap superuser). Null when not given. */
  ownerUrl: string | null;
  embedded: boolean;
  /** Embedded, run by another live process (a running `npm start`) this one connected to; null otherwise. */
  attachedTo?: number | null;
  /** Stops the embedded server when this process started one. */
  close(): Promise<void>;
}

/**
 * DATABASE_URL (and MIGRATION_DATABASE_URL) when set; otherwise the embedded PostgreSQL under
 * DATA_DIR, started on demand. `attach` (the scripts): when a running service already runs the
 * embedded database of DATA_DIR, its server is used (and left running) instead of refusing.
 */
export async function openDatabase(c: Config = processConfig, opts: { attach?: boolean } = {}): Promise<Database> {
  if (c.DATABASE_URL) return { url: c.DATABASE_URL, ownerUrl: c.MIGRATION_DATABASE_URL ?? null, embedded: false, attachedTo: null, close: async () => {} };
  const db = await startEmbeddedPostgres({ dataDir: c.DATA_DIR, port: c.EMBEDDED_PG_PORT, database: 'ftis', attach: opts.attach });
  return { url: db.serviceUrl, ownerUrl: db.ownerUrl, embedded: true, attachedTo: db.attachedTo, close: () => db.stop() };
}

type Log = Pick<Logger, 'info' | 'warn'>;
/** The scripts' default log: stderr, so that their standard output is only their answer. */
const processLog: Log = { info: ((m: unknown) => console.error(m)) as Log['info'], warn: ((m: unknown) => console.error(m)) as Log['warn'] };

/**
 * Makes the database ready for the service, before it connects:
 * - a server older than MINIMUM_POSTGRES_MAJOR is refused before anything is changed;
 * - migrations (and pg-boss's schema, and the service role's grants) as the owner: the owner's
 *   connection when known, else DATABASE_URL's if its role owns the schema (a single-role set-up);
 * - otherwise nothing is changed, a log line says so, and the start is refused if a migration
 *   is pending (`npm run migrate` with MIGRATION_DATABASE_URL first);
 * - then the service's role is checked: a superuser, the tables' owner, or a role that may
 *   create objects or SET session_replication_role could disable the audit log's triggers.
 *   Production refuses to start with one; other modes warn.
 */
export async function prepareDatabase(db: Database, c: Config, log: Log, opts: { requireOwner?: boolean } = {}): Promise<{ applied: string[] }> {
  // Three reads at once (each its own connection): start-up time. The version is judged before anything changes.
  const [unsupported, serviceRole, ownsSchema] = await Promise.all([
    unsupportedServer(db.url),
    roleOf(db.url),
    db.ownerUrl ? Promise.resolve(false) : isSchemaOwner(db.url),
  ]);
  if (unsupported) throw new Error(unsupported);
  let owner = db.ownerUrl;
  if (!owner && ownsSchema) owner = db.url;
  let applied: string[] = [];
  if (owner) {
    const ownerRole = owner === db.url ? serviceRole : await roleOf(owner);
    applied = await applyMigrations(owner, { serviceRole: ownerRole === serviceRole ? null : serviceRole });
  } else {
    if (opts.requireOwner)
      throw new Error(`DATABASE_URL logs in as ${serviceRole}, which does not own the schema: set MIGRATION_DATABASE_URL to the owner's connection`);
    log.info(
      { role: serviceRole },
      'migrations skipped: DATABASE_URL does not log in as the schema owner (set MIGRATION_DATABASE_URL, or run `npm run migrate` with it)',
    );
    const done = await appliedMigrationNames(db.url);
    const pending = migrationNames().filter((n) => !done?.has(n));
    if (pending.length)
      throw new Error(
        `the database needs ${pending.length} migration(s) (${pending.join(', ')}): run \`npm run migrate\` with MIGRATION_DATABASE_URL set to the owner's connection`,
      );
  }
  const excess = await excessPrivileges(db.url);
  if (excess.length) {
    const message = `DATABASE_URL has more privileges than the service needs (${excess.join('; ')}): it could disable the audit log's and the ledger's triggers. Connect the service as a least-privilege role and migrate with MIGRATION_DATABASE_URL (docs/deployment.md)`;
    if (c.NODE_ENV === 'production') throw new Error(message);
    log.warn(message);
  }
  return { applied };
}

/**
 * For the scripts: the database opened and prepared, `fn` run on the service's connection, then
 * closed. The embedded database of a running `npm start` (same DATA_DIR) is used as it runs.
 */
export async function withDatabase<T>(
  fn: (url: string, db: Database, prepared: { applied: string[] }) => Promise<T>,
  opts: { requireOwner?: boolean; log?: Log } = {},
): Promise<T> {
  const db = await openDatabase(processConfig, { attach: true });
  if (db.attachedTo)
    (opts.log ?? processLog).info(`using the embedded PostgreSQL of the running service (process ${db.attachedTo}, DATA_DIR ${processConfig.DATA_DIR})`);
  try {
    const prepared = await prepareDatabase(db, processConfig, opts.log ?? processLog, opts);
    return await fn(db.url, db, prepared);
  } finally {
    await db.close();
  }
}
