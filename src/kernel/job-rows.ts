import type { PgBoss } from 'pg-boss';
import { Prisma } from '../db/prisma';

/**
 * A queue's jobs as a part of the caller's own statement (issue 22): pg-boss's insert statement for
 * the queue, learned once per queue through its public `insert` with a `db` that records the SQL
 * instead of running it, then embedded as a data-modifying CTE whose one parameter (the jobs as
 * JSON, as `insert` sends them) is the caller's. The rows are those `boss.insert` writes (the same
 * statement); one round trip fewer per transaction.
 *
 * Only a plain `INSERT … json_to_recordset($1…) … ON CONFLICT DO NOTHING` can be a CTE: a queue
 * with `notify` has pg-boss wrap it in a WITH of its own (to NOTIFY when a job is due at once), and
 * anything else pg-boss may send in a later version is refused here (null: the caller uses
 * `boss.insert`). src/kernel/job-rows.test.ts pins the shape and compares the rows with insert's.
 */
const learned = new WeakMap<PgBoss, Map<string, Promise<{ before: string; after: string } | null>>>();

export function jobInsertParts(boss: PgBoss, queue: string): Promise<{ before: string; after: string } | null> {
  let byQueue = learned.get(boss);
  if (!byQueue) learned.set(boss, (byQueue = new Map()));
  let parts = byQueue.get(queue);
  if (!parts) {
    parts = (async () => {
      let text = '';
      await boss.insert(queue, [{ data: {} }], {
        db: {
          executeSql: async (sql: string) => {
            text = sql;
            return { rows: [] };
          },
        },
      });
      return splitInsert(text);
    })();
    // A failure (the queue cache could not be read) is not remembered: the next call tries again.
    parts.catch(() => byQueue.delete(queue));
    byQueue.set(queue, parts);
  }
  return parts;
}

/** The statement around its one parameter, if it is the plain INSERT a CTE can hold. */
export function splitInsert(text: string): { before: string; after: string } | null {
  const trimmed = text.trim();
  if (!/^INSERT INTO /i.test(trimmed) || /pg_notify|;|\bRETURNING\b[\s\S]*\bSELECT\b/i.test(trimmed)) return null;
  const params = trimmed.match(/\$\d+/g) ?? [];
  if (params.length !== 1 || params[0] !== '$1') return null;
  const [before, after] = trimmed.split('$1') as [string, string];
  return { before, after };
}

/** The jobs' INSERT for a CTE (`"name" AS (<this>)`), their JSON as insert's one parameter. */
export function jobInsertSql(parts: { before: string; after: string }, jobs: readonly { id?: string; data: unknown; startAfter?: Date }[]): Prisma.Sql {
  return new Prisma.Sql([parts.before, parts.after], [JSON.stringify(jobs)]);
}
