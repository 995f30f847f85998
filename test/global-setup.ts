import type { TestProject } from 'vitest/node';
import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { startEmbeddedPostgres } from '../src/db/embedded';
import { applyMigrations } from '../src/db/migrate';
import { ensureServiceRole, SERVICE_ROLE } from '../src/db/roles';

/**
 * One real PostgreSQL for the run: DATABASE_URL's server when set, else an embedded one under
 * .data/test-<port> (TEST_PG_PORT, default 54339). Migrations are applied once to a template database; every test file then gets its
 * own database cloned from the template (test/harness.ts), so files run in parallel in isolation.
 *
 * Two roles, as in production: the owner (the embedded superuser, or DATABASE_URL's role, which
 * must be allowed to create databases and roles) migrates and clones; every service connection of
 * the tests logs in as the least-privilege service role (SERVICE_ROLE, or `ftis_test_app_<pid>`
 * created for the run on DATABASE_URL's server), so the whole suite runs with its privileges only.
 */
export default async function setup(project: TestProject) {
  let serverUrl: string;
  let serviceServerUrl: string;
  let stop = async () => {};
  let dropRole: string | null = null;
  if (process.env.DATABASE_URL) {
    serverUrl = process.env.DATABASE_URL;
    // One role per run (two runs may share the server), dropped at the end.
    const role = `ftis_test_app_${process.pid}`;
    const password = randomBytes(24).toString('base64url');
    const c = new pg.Client({ connectionString: serverUrl });
    await c.connect();
    await ensureServiceRole(c, role, password);
    await c.end();
    dropRole = role;
    const u = new URL(serverUrl);
    u.username = role;
    u.password = password;
    serviceServerUrl = u.toString();
  } else {
    const port = Number(process.env.TEST_PG_PORT ?? 54339);
    const db = await startEmbeddedPostgres({ dataDir: `.data/test-${port}`, port, database: 'postgres' });
    serverUrl = db.ownerUrl;
    serviceServerUrl = db.serviceUrl;
    stop = db.stop;
  }
  const serviceRole = decodeURIComponent(new URL(serviceServerUrl).username) || SERVICE_ROLE;
  const template = `ftis_template_${process.pid}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${template}`);
  const url = new URL(serverUrl);
  url.pathname = `/${template}`;
  // With the job runner's schema and the service role's grants: every cloned database has them.
  await applyMigrations(url.toString(), { serviceRole });
  project.provide('serverUrl', serverUrl);
  project.provide('serviceServerUrl', serviceServerUrl);
  project.provide('templateDatabase', template);
  return async () => {
    // Drop what this run created: the template and the per-file databases cloned from it.
    const { rows } = await admin.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname LIKE 't\\_${process.pid}\\_%' OR datname = $1`, [
      template,
    ]);
    for (const r of rows) await admin.query(`DROP DATABASE IF EXISTS "${r.datname}" WITH (FORCE)`);
    if (dropRole) await admin.query(`DROP OWNED BY ${admin.escapeIdentifier(dropRole)}; DROP ROLE ${admin.escapeIdentifier(dropRole)}`);
    await admin.end();
    await stop();
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    serverUrl: string;
    serviceServerUrl: string;
    templateDatabase: string;
  }
}
