import { createHash } from 'node:crypto';
import { PrismaPg } from '@prisma/adapter-pg';
import { trace } from '@opentelemetry/api';
import pg from 'pg';
import { inSpan, SpanKind, tracing } from '../kernel/telemetry';
import { TransactionTimeoutError } from '../errors';
import { Prisma, PrismaClient } from '../generated/prisma/client';

export type { PrismaClient } from '../generated/prisma/client';
export { Prisma };

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
 *
 * `fn` gets the connection twice: `query` (rows of a text and its parameters, pg's own types) and
 * `db`, a RawDb over the same connection that answers the four raw methods as Prisma's client does
 * (rawDb): the shared helpers typed on RawDb (postInStatement, lockAccountsForMove, emitEvents,
 * auditAll, pg-boss's fromPrisma) run on it unchanged, inside this transaction.
 */
export function poolTransaction<T>(client: object, fn: (query: PoolQuery, db: RawDb) => Promise<T>, opts: { timeoutMs?: number } = {}): Promise<T> | null {
  const pool = pools.get(client);
  if (!pool) return null;
  const hook = statementHooks.get(pool);
  const timeoutMs = opts.timeoutMs ?? 5000;
  return (async () => {
    const connection = await pool.connect();
    // The connection's statements one at a time, in calling order, each sent once the previous one
    // answered (pipelined writes leave several in flight from the caller's side: pg's own queue of a
    // client's concurrent queries is deprecated, to be removed in pg 9).
    let previous: Promise<unknown> = Promise.resolve();
    // BEGIN goes with the transaction's first statement: in the same simple query when that one has
    // no parameters (one round trip for both: PostgreSQL runs them in order, each statement with its
    // own snapshot), else just before it.
    let begun = false;
    const inTurn = <T>(send: () => Promise<T>): Promise<T> => {
      const p = previous.then(send);
      previous = p.catch(() => {});
      return p;
    };
    const send = async <R extends pg.QueryResultRow>(config: pg.QueryConfig): Promise<pg.QueryResult<R>> => {
      if (begun) return connection.query<R>(config);
      begun = true;
      if (config.values?.length) {
        await connection.query('BEGIN');
        return connection.query<R>(config);
      }
      // A simple query of two statements answers a result per statement: the second one's is the caller's.
      const results = (await connection.query({ ...config, text: 'BEGIN; ' + config.text })) as unknown as pg.QueryResult<R>[];
      return results[results.length - 1]!;
    };
    // onStatement sees BEGIN as a statement of its own, before the first one, however it is sent.
    let seen = false;
    const see = (text: string) => {
      if (!seen) hook?.('BEGIN');
      seen = true;
      hook?.(text);
    };
    const query: PoolQuery = async <R>(text: string, values: unknown[]) => {
      see(text);
      return (await inTurn(() => send<R & pg.QueryResultRow>(values.length ? { name: statementName(text), text, values } : { text }))).rows;
    };
    let broken: Error | undefined;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject((broken = new TransactionTimeoutError(timeoutMs))), timeoutMs);
    });
    timedOut.catch(() => {}); // seen by the race below; never unhandled
    try {
      const db = rawDb((text, values) => {
        see(text);
        return inTurn(() => send(values.length ? { name: statementName(text), text, values, types: PRISMA_TYPES } : { text, types: PRISMA_TYPES }));
      });
      const sent: Promise<unknown>[] = [];
      pipelines.set(db, sent);
      const work = (async () => {
        const r = await fn(query, db);
        // The statements sent without waiting (pipelined), in sending order: the first failure fails the transaction.
        for (let i = 0; i < sent.length; i++) await sent[i];
        return r;
      })();
      work.catch(() => {}); // abandoned when timed out: its error is the connection's closing
      const r = await Promise.race([work, timedOut]);
      // Not raced: once COMMIT is sent its outcome is the answer (a timeout then could hide a commit).
      clearTimeout(timer);
      // Nothing sent: nothing to commit.
      if (begun) await query('COMMIT', []);
      return r;
    } catch (e) {
      if (!broken && begun)
        try {
          // After the statements still in flight (pipelined ones behind a failed one).
          await inTurn(() => connection.query('ROLLBACK'));
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

/** The statements sent without waiting in each transaction of poolTransaction (pipelined), by its RawDb. */
const pipelines = new WeakMap<object, Promise<unknown>[]>();

/**
 * Writes that need no answer, pipelined (issue 22): in a transaction of poolTransaction, `write` (a
 * statement, or an async helper sending some) is left running and the caller goes on at once: its
 * next statements queue behind it on the connection (poolTransaction sends a connection's statements
 * one at a time, in calling order), while the process prepares
 * them (PostgreSQL executes one while the process builds the next, instead of each waiting for the
 * other), and poolTransaction awaits every one of them before COMMIT: the first failure (a refusal
 * thrown by the helper, a statement's error) fails the transaction, which rolls back whole, as if
 * each had been awaited in turn. Anywhere else (Prisma's interactive transactions, a client) it is
 * awaited here. For writes only: nothing the caller does next may depend on their answer, and the
 * statements queued after them must not need their locks taken in an order the helper would change.
 */
export async function pipelined(tx: RawDb, write: Promise<unknown>): Promise<void> {
  const sent = pipelines.get(tx);
  if (!sent) {
    await write;
    return;
  }
  write.catch(() => {}); // seen by poolTransaction before COMMIT; never unhandled
  sent.push(write);
}

/**
 * A RawDb straight on the pg pool under a client of createPrisma (issue 22): each statement
 * autocommitted on a connection of the pool, named, typed and seen by `onStatement` as on a
 * connection of poolTransaction (rawDb): for reads outside a transaction on a hot path, where
 * Prisma's query engine costs more CPU than the statement (a sync's reads before its chunks). Null
 * when the client has no pool of ours (the caller then goes through Prisma).
 */
export function poolRawDb(client: object): RawDb | null {
  const pool = pools.get(client);
  if (!pool) return null;
  let db = pooledRawDbs.get(pool);
  if (!db) {
    const hook = statementHooks.get(pool);
    db = rawDb((text, values) => {
      hook?.(text);
      return pool.query(values.length ? { name: statementName(text), text, values, types: PRISMA_TYPES } : { text, types: PRISMA_TYPES });
    });
    pooledRawDbs.set(pool, db);
  }
  return db;
}
const pooledRawDbs = new WeakMap<pg.Pool, RawDb>();

/**
 * Disconnects a client of createPrisma and waits (at most `timeoutMs`) until its pool's connections
 * are closed: pg-pool's end() answers once it has asked each idle connection to end, not once they
 * have, so a database stopped right after it (the embedded PostgreSQL, last step of a shutdown)
 * terminated the ones still closing, each logged as "database connection lost" (57P01) on a clean
 * SIGTERM that came within the pool's idle timeout of the last statement.
 */
export async function disconnectPrisma(client: PrismaClient, timeoutMs = 2000): Promise<void> {
  const pool = pools.get(client);
  let open = pool?.totalCount ?? 0;
  const closed = new Promise<void>((resolve) => {
    if (!open) return resolve();
    pool!.on('remove', () => --open <= 0 && resolve());
  });
  await client.$disconnect();
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([closed, new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
  clearTimeout(timer);
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

/**
 * What a raw statement needs of a client (issue 22): Prisma's four raw methods. The client and an
 * interactive transaction are RawDbs, and so is a connection of poolTransaction (rawDb): a helper
 * that only sends raw statements takes a RawDb and runs unchanged in a Prisma transaction or in a
 * transaction straight on the pool.
 */
export type RawDb = Pick<Db, '$queryRaw' | '$executeRaw' | '$queryRawUnsafe' | '$executeRawUnsafe'>;

/**
 * A RawDb over `run` (a statement on one pg connection), answering as Prisma's client with the pg
 * driver adapter does, so that a helper reads the same values either way (src/db/raw-db.test.ts
 * compares the two, type by type):
 * - parameters: a Date as Prisma's adapter formats it (UTC, `YYYY-MM-DD HH:MM:SS[.mmm]`, also inside
 *   arrays), a bigint or a Decimal as its decimal string, an object as its JSON, the rest as pg sends them;
 * - results (PRISMA_TYPES): int8 and oid as bigint, numeric as Prisma.Decimal, timestamp and
 *   timestamptz as Date (a timestamp read as UTC), date as Date at UTC midnight, json/jsonb parsed,
 *   enums as their text, their arrays likewise; `$executeRaw*` answers the rows affected.
 * A statement error is pg's own (its SQLSTATE in `code`, the constraint in `constraint`): sqlState,
 * isRetryable and violatedUniqueConstraint read both forms.
 */
export function rawDb(run: (text: string, values: unknown[]) => Promise<pg.QueryResult>): RawDb {
  const sqlOf = (a: unknown[]): Prisma.Sql =>
    a[0] instanceof Prisma.Sql ? a[0] : new Prisma.Sql(a[0] as readonly string[], a.slice(1) as Prisma.Sql['values']);
  const exec = (text: string, values: readonly unknown[]) => run(text, values.map(prismaParam));
  const db = {
    $queryRaw: async (...a: unknown[]) => {
      const q = sqlOf(a);
      return (await exec(q.text, q.values)).rows;
    },
    $executeRaw: async (...a: unknown[]) => {
      const q = sqlOf(a);
      return (await exec(q.text, q.values)).rowCount ?? 0;
    },
    $queryRawUnsafe: async (text: string, ...values: unknown[]) => (await exec(text, values)).rows,
    $executeRawUnsafe: async (text: string, ...values: unknown[]) => (await exec(text, values)).rowCount ?? 0,
  };
  return db as unknown as RawDb;
}

/** A parameter as Prisma's client and its pg adapter send it (see rawDb). */
function prismaParam(v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (v instanceof Date) return formatDateTime(v);
  if (typeof v === 'bigint') return v.toString();
  if (Array.isArray(v)) return v.map(prismaParam);
  if (Prisma.Decimal.isDecimal(v)) return (v as Prisma.Decimal).toString();
  return v;
}

/** A Date as @prisma/adapter-pg formats a datetime parameter: UTC, no zone, milliseconds only when there are. */
function formatDateTime(date: Date): string {
  const pad = (n: number, z = 2) => String(n).padStart(z, '0');
  const ms = date.getUTCMilliseconds();
  return (
    `${pad(date.getUTCFullYear(), 4)}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())} ` +
    `${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())}${ms ? `.${String(ms).padStart(3, '0')}` : ''}`
  );
}

/** The result types of rawDb: those of Prisma's client over its pg adapter (see rawDb). */
const PRISMA_TYPES = (() => {
  const { builtins } = pg.types;
  const arrayOf = (parse: (s: string) => unknown) => (s: string) => parsePgArray(s, parse);
  const int8 = (s: string) => BigInt(s);
  const numeric = (s: string) => new Prisma.Decimal(s);
  const timestamp = (s: string) => new Date(`${s.replace(' ', 'T')}Z`);
  const timestamptz = (s: string) => new Date(s.replace(' ', 'T').replace(/([+-]\d{2})$/, '$1:00'));
  const date = (s: string) => new Date(`${s}T00:00:00Z`);
  const parsers = new Map<number, (s: string) => unknown>([
    [builtins.INT8, int8],
    [builtins.OID, int8],
    [1016, arrayOf(int8)],
    [builtins.NUMERIC, numeric],
    [1231, arrayOf(numeric)],
    [builtins.TIMESTAMP, timestamp],
    [1115, arrayOf(timestamp)],
    [builtins.TIMESTAMPTZ, timestamptz],
    [1185, arrayOf(timestamptz)],
    [builtins.DATE, date],
    [1182, arrayOf(date)],
  ]);
  return {
    getTypeParser: ((oid: number, format?: 'text' | 'binary') => parsers.get(oid) ?? pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
  };
})();

/** A PostgreSQL array's text form, each element through `parse` (NULL as null). */
function parsePgArray(text: string, parse: (s: string) => unknown): unknown[] {
  return (pg.types.getTypeParser(1009 as never /* text[] */, 'text')(text) as (string | null)[]).map((e) => (e === null ? null : parse(e)));
}
