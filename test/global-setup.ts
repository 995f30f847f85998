import type { TestProject } from 'vitest/node';
import pg from 'pg';
import { PgBoss } from 'pg-boss';
import { startEmbeddedPostgres } from '../src/db/embedded';
import { applyMigrations } from '../src/db/migrate';

/**
 * One real PostgreSQL for the run: DATABASE_URL's server when set, else an embedded one under
 * .data/test-<port> (TEST_PG_PORT, default 54339). Migrations are applied once to a template database; every test file then gets its
 * own database cloned from the template (test/harness.ts), so files run in parallel in isolation.
 */
export default async function setup(project: TestProject) {
  let serverUrl: string;
  let stop = async () => {};
  if (process.env.DATABASE_URL) serverUrl = process.env.DATABASE_URL;
  else {
    const port = Number(process.env.TEST_PG_PORT ?? 54339);
    const db = await startEmbeddedPostgres({ dataDir: `.data/test-${port}`, port, database: 'postgres' });
    serverUrl = db.url;
    stop = db.stop;
  }
  const template = `ftis_template_${process.pid}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${template}`);
  const url = new URL(serverUrl);
  url.pathname = `/${template}`;
  await applyMigrations(url.toString());
  // The job runner's schema, installed once in the template (every cloned database has it).
  const boss = new PgBoss({ connectionString: url.toString(), schema: 'pgboss', supervise: false, schedule: false });
  await boss.start();
  await boss.stop({ graceful: false });
  project.provide('serverUrl', serverUrl);
  project.provide('templateDatabase', template);
  return async () => {
    // Drop what this run created: the template and the per-file databases cloned from it.
    const { rows } = await admin.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname LIKE 't\\_${process.pid}\\_%' OR datname = $1`, [template]);
    for (const r of rows) await admin.query(`DROP DATABASE IF EXISTS "${r.datname}" WITH (FORCE)`);
    await admin.end();
    await stop();
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    serverUrl: string;
    templateDatabase: string;
  }
}
