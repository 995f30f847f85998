import { createHash } from 'node:crypto';
import { PrismaPg } from '@prisma/adapter-pg';
import { trace } from '@opentelemetry/api';
import pg from 'pg';
import { inSpan, SpanKind, tracing } from '../kernel/telemetry';
import { TransactionTimeoutError } from '../errors';
import { PrismaClient } from '../generated/prisma/client';

export type { PrismaClient } from '../generated/prisma/client';
export { Prisma } from '../generated/prisma/client';

/**
 * One client per process; queries go through the pg driver adapter (no native engine).
 *
 * Every statement is a named prepared statement (its name is a hash of its SQL text), so
 * PostgreSQL parses and plans a query once per connection instead of once per request. A
 * connection lives at most 30 minutes, which bounds the statements each one keeps and lets a
 * migration's new column types reach every connection (see docs/decisions.md).
 *
 * `onStatement` sees the SQL text of every statement the client sends (BEGIN and COMMIT included),
 * as it is sent: the tests count the statements of one request with it (test/harness.ts).
 */
export function createPrisma(url: string, max: number, onConnectionError?: (err: Error) => void, onStatement?: (sql: string) => void): PrismaClient {
  // The pool is ours (handed to the adapter, which ends it with the client): /metrics reads its use,
  // and its connections are traced (tracedConnection).
  const pool = new pg.Pool({ connectionString: url, max, maxLifetimeSeconds: 1800 });
  pool.on('connect', tracedConnection);
  const client = new PrismaClient({
    adapter: new PrismaPg(pool, {
      disposeExternalPool: true,
      // Called once per statement sent (the adapter names each one), so it is also where statements are seen.
      statementNameGenerator: (query) => {
        onStatement?.(query.sql);
        return statementName(query.sql);
      },
      // A connection the server ends (57P01 at a database shutdown) is reported here, never as an
      // unhandled 'error' event; the query it served fails on its own.
      ...(onConnectionError ? { onPoolError: onConnectionError, onConnectionError } : {}),
    }),
  });
  pools.set(client, pool);
  if (onStatement) statementHooks.set(pool, onStatement);
  return client;
}

const pools = new WeakMap<object, pg.Pool>();
const statementHooks = new WeakMap<pg.Pool, (sql: string) => void>();

/**
 * The prepared statement's name of a SQL text: a hash of it, computed once per text (the texts are
 * the application's own, a bounded set; the cache is cleared past 10,000 anyway).
 *
 * A text with a list of parameters, `IN ($1,$2,...)` (Prisma writes `{ in: ids }` so, one parameter
 * per element), is a different text for every list length: named, each length would stay prepared on
 * every connection that ran it, for the connection's 30 minutes — about 30 KiB of PostgreSQL backend
 * memory and the text in the pg client each, up to (statements with a list) x (group sizes) per
 * connection (issue 22, point 3: a settlement group of 1-64 reads seven such lists). A list of more
 * than 8 parameters (LONG_LIST) is sent unnamed (parsed at each execution; PostgreSQL custom-plans such
 * a statement anyway), never cached here: '' (pg's unnamed statement). Short lists stay prepared: the
 * fixed lists (`status: { in: ['PENDING', 'FAILED'] }`, one text always) and the first lengths of a
 * group's, at most 8 statements per list. The application's own SQL passes lists as one array
 * parameter (`= ANY($1::uuid[])`), one text for every length, always prepared.
 */
const names = new Map<string, string>();
/** An IN list of more than 8 parameters (the first and 8 more). */
const LONG_LIST = /\bIN\s*\(\s*\$\d+(?:\s*,\s*\$\d+){8}/i;
function statementName(sql: string): string {
  let name = names.get(sql);
  if (name === undefined) {
    if (LONG_LIST.test(sql)) return '';
    if (names.size >= 10_000) names.clear();
    names.set(sql, (name = `p${createHash('sha1').update(sql).digest('base64url')}`));
  }
  return name;
}

/**
 * One statement straight on the pg pool under a client of createPrisma, as a named prepared
 * statement (named as Prisma's would be), seen by `onStatement` like Prisma's own: for the hot
 * paths where Prisma's query engine costs more CPU than the statement (issue 22). Null when the
 * client has no pool of ours (the caller then goes through Prisma).
 */
export function poolQuery<R extends pg.QueryResultRow>(client: object, text: string, values: unknown[]): Promise<pg.QueryResult<R>> | null {
  const pool = pools.get(client);
  if (!pool) return null;
  statementHooks.get(pool)?.(text);
  return pool.query<R>({ name: statementName(text), text, values });
}

/**
 * The pg pool under a client of createPrisma, for a hot statement that must cost one round trip
 * and nothing else (the request rate limit: one upsert per request, without Prisma's query engine).
 */
export function poolOf(client: object): pg.Pool | undefined {
  return pools.get(client);
}

/** A statement on a connection of poolTransaction: its rows. */
export type PoolQuery = <R>(text: string, values: unknown[]) => Promise<R[]>;

/**
 * A transaction straight on the pg pool under a client of createPrisma (BEGIN, `fn`'s statements,
 * COMMIT; ROLLBACK when `fn` throws), each statement a named prepared statement seen by
 * `onStatement` like Prisma's own: for a hot group commit where Prisma's interactive transaction and
 * query engine cost more CPU than the statements (issue 22: the sandbox sends). Like Prisma's
 * interactive transactions it ends when `fn` has not returned after `timeoutMs` (default 5 s,
 * Prisma's): the work is abandoned, COMMIT never sent, and its connection closed, so PostgreSQL
 * rolls it back. Null when the client has no pool of ours
 * (the caller then goes through Prisma).
 */
export function poolTransaction<T>(client: object, fn: (query: PoolQuery) => Promise<T>, opts: { timeoutMs?: number } = {}): Promise<T> | null {
  const pool = pools.get(client);
  if (!pool) return null;
  const hook = statementHooks.get(pool);
  const timeoutMs = opts.timeoutMs ?? 5000;
  return (async () => {
    const connection = await pool.connect();
    const query: PoolQuery = async <R>(text: string, values: unknown[]) => {
      hook?.(text);
      return (await connection.query<R & pg.QueryResultRow>(values.length ? { name: statementName(text), text, values } : text)).rows;
    };
    let broken: Error | undefined;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject((broken = new TransactionTimeoutError(timeoutMs))), timeoutMs);
    });
    timedOut.catch(() => {}); // seen by the race below; never unhandled
    try {
      await query('BEGIN', []);
      const work = fn(query);
      work.catch(() => {}); // abandoned when timed out: its error is the connection's closing
      const r = await Promise.race([work, timedOut]);
      // Not raced: once COMMIT is sent its outcome is the answer (a timeout then could hide a commit).
      clearTimeout(timer);
      await query('COMMIT', []);
      return r;
    } catch (e) {
      if (!broken)
        try {
          await connection.query('ROLLBACK');
        } catch (e1) {
          broken = e1 as Error; // the connection is gone: destroyed, not handed back
        }
      throw e;
    } finally {
      clearTimeout(timer);
      // A broken or timed-out connection is closed (PostgreSQL rolls its transaction back), never reused.
      connection.release(broken);
    }
  })();
}

/** The connection pool of a client of createPrisma: its use for /metrics. */
export function poolUse(client: object): { total: number; idle: number; waiting: number; max: number } | null {
  const pool = pools.get(client);
  return pool ? { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, max: pool.options.max ?? 10 } : null;
}

/**
 * A span per statement while a recorded span is active (tracing on and the request sampled):
 * db.query.text is the statement's SQL (its parameters are never recorded). Otherwise the query
 * runs as is, for the cost of one check.
 */
function tracedConnection(connection: pg.PoolClient): void {
  const query = connection.query.bind(connection) as (...a: unknown[]) => unknown;
  connection.query = ((...a: unknown[]) => {
    if (!tracing.recording || !trace.getActiveSpan()?.isRecording() || typeof a[a.length - 1] === 'function') return query(...a);
    const text = typeof a[0] === 'string' ? a[0] : ((a[0] as { text?: string } | undefined)?.text ?? '');
    return inSpan('db.query', { 'db.system.name': 'postgresql', 'db.query.text': text.slice(0, 2000) }, () => query(...a) as Promise<unknown>, {
      kind: SpanKind.CLIENT,
    });
  }) as typeof connection.query;
}

/** The client or an interactive transaction: services take this so they compose in one transaction. */
export type Db = Omit<PrismaClient, '$connect' | '$disconnect' | '$on' | '$transaction' | '$extends'>;
