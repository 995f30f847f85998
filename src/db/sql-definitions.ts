import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import type pg from 'pg';

/**
 * The hand-written triggers and functions of the public schema, as PostgreSQL prints them
 * (pg_get_functiondef: signature, language, volatility, SECURITY DEFINER, SET options and the body;
 * pg_get_triggerdef; a function's comment), keyed by name. Internal triggers (foreign keys) and
 * extensions' functions are left out: Prisma's datamodel owns those.
 */
export type Definitions = Record<string, string>;

export async function liveDefinitions(c: pg.ClientBase): Promise<Definitions> {
  const { rows } = await c.query<{ name: string; def: string }>(`
    SELECT 'function ' || p.oid::regprocedure::text AS name,
           pg_get_functiondef(p.oid) || coalesce(E'\\n-- comment: ' || obj_description(p.oid, 'pg_proc'), '') AS def
      FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
     WHERE n.nspname = 'public' AND p.prokind IN ('f', 'p')
       AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
    UNION ALL
    SELECT 'trigger ' || t.tgname || ' on ' || c.relname, pg_get_triggerdef(t.oid) || ' -- enabled: ' || t.tgenabled::text
      FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'public' AND NOT t.tgisinternal
     ORDER BY 1`);
  return Object.fromEntries(rows.map((r) => [r.name, r.def]));
}

/** Names whose definitions differ between a and b (present in one only, or different). */
export function differing(a: Definitions, b: Definitions): string[] {
  return [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((k) => a[k] !== b[k]).sort();
}

/** Runs fn in a transaction that is always rolled back. */
async function rolledBack<T>(c: pg.ClientBase, fn: () => Promise<T>): Promise<T> {
  await c.query('BEGIN');
  try {
    return await fn();
  } finally {
    await c.query('ROLLBACK');
  }
}

/**
 * The canonical files (prisma/sql/*.sql) whose definitions differ from the database's: each file
 * is run on its own in a rolled-back transaction, and a file that changes anything is stale in
 * the database (a new or edited definition). Nothing is changed.
 */
export async function changedSqlFiles(c: pg.ClientBase, files: string[]): Promise<string[]> {
  const changed: string[] = [];
  for (const file of files) {
    const differs = await rolledBack(c, async () => {
      const before = await liveDefinitions(c);
      await c.query(readFileSync(file, 'utf8'));
      return differing(before, await liveDefinitions(c)).length > 0;
    });
    if (differs) changed.push(file);
  }
  return changed;
}

/**
 * What the database has that the files do not say, and the reverse: in a rolled-back transaction,
 * every hand-written function and trigger is dropped and the files are run in name order; the
 * names whose definitions then differ from the live ones. Empty: the files are exactly the database's.
 */
export async function driftFromFiles(c: pg.ClientBase, files: string[]): Promise<{ name: string; live?: string; files?: string }[]> {
  return rolledBack(c, async () => {
    const live = await liveDefinitions(c);
    for (const name of Object.keys(live).filter((n) => n.startsWith('trigger '))) {
      const [, trigger, table] = /^trigger (.+) on (.+)$/.exec(name)!;
      await c.query(`DROP TRIGGER ${ident(trigger!)} ON ${ident(table!)}`);
    }
    for (const name of Object.keys(live).filter((n) => n.startsWith('function '))) await c.query(`DROP FUNCTION ${name.slice('function '.length)} CASCADE`);
    for (const file of files) await c.query(readFileSync(file, 'utf8'));
    const fromFiles = await liveDefinitions(c);
    return differing(live, fromFiles).map((name) => ({ name, live: live[name], files: fromFiles[name] }));
  });
}

const ident = (s: string): string => `"${s.replace(/"/g, '""')}"`;

/** The migration text that applies the given canonical files (each marked with its name). */
export const sqlFilesScript = (files: string[]): string =>
  files.map((f) => `-- prisma/sql/${basename(f)} (canonical definition, copied by migrate:new)\n${readFileSync(f, 'utf8').trimEnd()}\n`).join('\n');
