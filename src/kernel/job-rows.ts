import type { PgBoss } from 'pg-boss';
import { Prisma } from '../db/prisma';
import { traceCarrier, withTrace } from './telemetry';

/**
 * A queue's jobs as a part of the caller's own statement (issue 22): pg-boss's insert statement for
 * the queue, learned once per queue through its public `insert` with a `db` that records the SQL
 * instead of running it, then embedded as a data-modifying CTE whose one parameter (the jobs as
 * JSON, as `insert` sends them) is the caller's. The rows are those `boss.insert` writes (the same
 * statement); one round trip fewer per transaction.
 *
 * Only a plain `INSERT … json_to_recordset($1…) … ON CONFLICT DO NOTHING` can be a CTE. A queue
 * with `notify` has pg-boss wrap that insert in a WITH of its own (`ins`, then `notified`: one
 * `pg_notify(<channel>, '<queue>')` when an inserted job is due at once), which a CTE cannot hold:
 * its insert is taken out and its `pg_notify` call kept (`notify`), and jobInsertSql calls it in the
 * insert's parameter, so the NOTIFY is sent (at the commit, as pg-boss's) by the caller's statement.
 * Anything else pg-boss may send in a later version is refused here (null: the caller uses
 * `boss.insert`). src/kernel/job-rows.test.ts pins both shapes and compares the rows with insert's.
 */
export interface JobInsertParts {
  before: string;
  after: string;
  /** The queue's `pg_notify(…)` call when it has `notify` (pg-boss's wrapper, taken apart), else null. */
  notify: string | null;
}

const learned = new WeakMap<PgBoss, Map<string, Promise<JobInsertParts | null>>>();

export function jobInsertParts(boss: PgBoss, queue: string): Promise<JobInsertParts | null> {
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

/** The statement around its one parameter, if it is the plain INSERT a CTE can hold, or pg-boss's NOTIFY wrapper around one. */
export function splitInsert(text: string): JobInsertParts | null {
  const trimmed = text.trim();
  // pg-boss's wrapper for a queue with notify (plans.insertJobs): the insert, then one NOTIFY when an
  // inserted job is due now; the final SELECT only makes PostgreSQL evaluate `notified`.
  const wrapped = trimmed.match(
    /^WITH ins AS \(([\s\S]*)\),\s*notified AS \(\s*SELECT (pg_notify\([^;$]*\))\s+FROM ins WHERE start_after <= \S+\.job_now\(\) LIMIT 1\s*\)\s*SELECT id FROM ins WHERE \(SELECT count\(\*\) FROM notified\) (?:>= 0|< 0)$/,
  );
  if (wrapped) {
    // The inner text is a plain INSERT or nothing: the plain path refuses a pg_notify.
    const inner = splitInsert(wrapped[1]!);
    return inner && { ...inner, notify: wrapped[2]! };
  }
  if (!/^INSERT INTO /i.test(trimmed) || /pg_notify|;|\bRETURNING\b[\s\S]*\bSELECT\b/i.test(trimmed)) return null;
  const params = trimmed.match(/\$\d+/g) ?? [];
  if (params.length !== 1 || params[0] !== '$1') return null;
  const [before, after] = trimmed.split('$1') as [string, string];
  return { before, after, notify: null };
}

/**
 * The jobs' INSERT for a CTE (`"name" AS (<this>)`), their JSON as insert's one parameter. `when`: a
 * condition of the caller's statement (it may read the statement's other CTEs) without which no job
 * is inserted (the JSON is then `[]`). A queue with notify wakes its workers from the parameter's
 * evaluation: one `pg_notify` per statement, delivered at the commit (every job here is due at once:
 * none has a `startAfter` in the future, which the wrapper's gate would have held back, so the gate
 * is refused rather than dropped).
 */
export function jobInsertSql(parts: JobInsertParts, jobs: readonly { id?: string; data: unknown; startAfter?: Date }[], when?: Prisma.Sql): Prisma.Sql {
  // The sender's trace context in each job's data, as boss.send and boss.insert add it (propagateTraces).
  const json = JSON.stringify(traceCarrier() ? jobs.map((j) => ({ ...j, data: withTrace(j.data) })) : jobs);
  if (parts.notify && jobs.some((j) => j.startAfter)) throw new Error('jobInsertSql: a job of a notify queue is sent due at once (no startAfter)');
  const param = notifying(parts, Prisma.sql`${json}::text`);
  return new Prisma.Sql([parts.before, parts.after], [when ? Prisma.sql`(CASE WHEN ${when} THEN ${param} ELSE '[]' END)` : param]);
}

/**
 * The insert's parameter from the jobs' JSON (`json`, an SQL text expression): for a queue with
 * notify, evaluating it also calls the queue's `pg_notify`, only when the JSON holds a job.
 */
function notifying(parts: JobInsertParts, json: Prisma.Sql): Prisma.Sql {
  if (!parts.notify) return json;
  return new Prisma.Sql(
    ["(SELECT CASE WHEN x.j = '[]' THEN x.j ELSE (SELECT x.j FROM (SELECT " + parts.notify + ') AS "notified") END FROM (SELECT ', ' AS j) AS x)'],
    [json],
  );
}

/**
 * The jobs' INSERT (a statement of its own or a CTE), one job per row of `data`: a query of the
 * caller's answering one jsonb column `data`, for jobs owed only to rows the database reads at the
 * moment of the write. Each job's data carries the sender's trace context as jobInsertSql's; every
 * job is due at once; a queue with notify wakes its workers only when a job was made.
 */
export function jobInsertFromRows(parts: JobInsertParts, data: Prisma.Sql): Prisma.Sql {
  const trace = JSON.stringify(withTrace({}));
  const json = Prisma.sql`(SELECT coalesce(json_agg(json_build_object('data', j."data" || ${trace}::jsonb)), '[]')::text FROM (${data}) AS j)`;
  return new Prisma.Sql([parts.before, parts.after], [notifying(parts, json)]);
}
