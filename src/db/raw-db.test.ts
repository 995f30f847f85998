import { afterAll, beforeAll, expect, test } from 'vitest';
import { createTestApp, type TestApp } from '../../test/harness';
import { sqlState, isRetryable, violatedUniqueConstraint } from '../errors';
import { Prisma, pipelined, poolTransaction, type RawDb } from './prisma';
import { SERVICE_ROLE } from './roles';

/**
 * A transaction straight on the pool (poolTransaction) hands its callback a RawDb (rawDb) so that
 * the shared helpers written for Prisma's client (postInStatement, lockAccountsForMove, emitEvents,
 * auditAll, pg-boss's fromPrisma) run on it unchanged (issue 22). These tests pin that it answers
 * what Prisma's client answers: the same statement through both, every type a helper reads back or
 * sends, compared value for value (and type for type).
 */
let app: TestApp;
beforeAll(async () => {
  app = await createTestApp();
});
afterAll(() => app.close());

/** Runs `f` on the pool's RawDb inside a poolTransaction, rolled back. */
async function onPool<T>(f: (db: RawDb) => Promise<T>): Promise<T> {
  let out: T | undefined;
  await poolTransaction(app.deps.db, async (_q, db) => {
    out = await f(db);
    throw new Rollback();
  })!.catch((e) => {
    if (!(e instanceof Rollback)) throw e;
  });
  return out as T;
}
class Rollback extends Error {}

const at = new Date('2026-11-27T10:11:12.345Z');
const whole = new Date('2026-11-27T10:11:12.000Z');

/** Every type a helper reads back, in one row: from literals and from parameters. */
const everyType = Prisma.sql`SELECT
    1::int2 AS "i2", 2::int4 AS "i4", 9007199254740993::int8 AS "i8", count(*) AS "count",
    '115792089237316195423570985008687907853269984665640564039457584007913129639935'::numeric AS "n", 1.5::numeric AS "nFraction",
    ${at}::timestamptz AS "tstz", ${at}::timestamp AS "ts", ${whole}::timestamptz AS "tstzWhole", '2026-11-27'::date AS "d",
    '{"a": 1, "b": [true, null, "x"], "amount": "123"}'::jsonb AS "jb", '[1, 2]'::json AS "j", 'null'::jsonb AS "jNull",
    'text'::text AS "t", '0190d0c2-2e2b-7000-8000-000000000001'::uuid AS "u", true AS "b", 1.25::float8 AS "f8",
    'ACTIVE'::"AccountStatus" AS "e", ARRAY['ACTIVE', 'FROZEN']::"AccountStatus"[] AS "eArr",
    ARRAY['0190d0c2-2e2b-7000-8000-000000000001', NULL]::uuid[] AS "uArr", ARRAY['a"b', 'c,d', NULL]::text[] AS "tArr",
    ARRAY[1, 2]::int4[] AS "i4Arr", ARRAY[9007199254740993, NULL]::int8[] AS "i8Arr", ARRAY[1.5, 10]::numeric[] AS "nArr",
    ARRAY[${at}::timestamptz] AS "tstzArr", NULL::int8 AS "nullI8", NULL::numeric AS "nullN", NULL::timestamptz AS "nullTs",
    ${'x'}::text AS "pText", ${12345678901234567890n}::numeric AS "pBigint", ${7n}::int8 AS "pInt8", ${{ k: 'v', n: [1] }}::jsonb AS "pJson",
    ${['a', null, 'b"c']}::text[] AS "pTextArr", ${[at, null]}::timestamptz[] AS "pTstzArr", ${new Prisma.Decimal('12.5')}::numeric AS "pDecimal",
    ${null}::uuid AS "pNull", ${true}::boolean AS "pBool", ${42}::int AS "pInt", ${at} AS "pDateUntyped", ${[1n, 2n]}::int8[] AS "pInt8Arr"`;

/** A value with its type made visible (a bigint is not a number, a Decimal not a string). */
const typed = (v: unknown): unknown =>
  Array.isArray(v)
    ? v.map(typed)
    : v instanceof Date
      ? { Date: v.toISOString() }
      : Prisma.Decimal.isDecimal(v)
        ? { Decimal: (v as Prisma.Decimal).toString() }
        : typeof v === 'bigint'
          ? { bigint: v.toString() }
          : v;
const typedRows = (rows: Record<string, unknown>[]) => rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typed(v)])));

test('$queryRaw: every type reads back as through Prisma, from literals and from parameters', async () => {
  const viaPrisma = await app.deps.db.$queryRaw<Record<string, unknown>[]>(everyType);
  const viaPool = await onPool((db) => db.$queryRaw<Record<string, unknown>[]>(everyType));
  expect(typedRows(viaPool)).toEqual(typedRows(viaPrisma));
  // What the comparison covers, spelled out.
  const r = viaPool[0]!;
  expect(r.i8).toBe(9007199254740993n);
  expect(r.count).toBe(1n);
  expect(Prisma.Decimal.isDecimal(r.n)).toBe(true);
  expect((r.n as Prisma.Decimal).toFixed()).toBe('115792089237316195423570985008687907853269984665640564039457584007913129639935');
  expect(r.tstz).toEqual(at);
  expect(r.ts).toEqual(at);
  expect(r.jb).toEqual({ a: 1, b: [true, null, 'x'], amount: '123' });
  expect(r.pBigint).toEqual(new Prisma.Decimal('12345678901234567890'));
  expect(r.pInt8).toBe(7n);
  expect(r.pTstzArr).toEqual([at, null]);
});

test('the tagged template, the Unsafe forms and $executeRaw answer as through Prisma', async () => {
  const t = (db: RawDb) => db.$queryRaw<{ x: bigint; s: string }[]>`SELECT ${5n}::int8 AS "x", ${'a'} || 'b' AS "s"`;
  expect(await onPool(t)).toEqual(await t(app.deps.db));
  const u = (db: RawDb) =>
    db.$queryRawUnsafe<Record<string, unknown>[]>('SELECT $1::numeric AS "n", $2::timestamptz AS "at", $3::jsonb AS "j"', 10n, at, { a: 1 });
  expect(typedRows(await onPool(u))).toEqual(typedRows(await u(app.deps.db)));
  // Rows affected, as a number.
  const e = (db: RawDb) => db.$executeRaw`UPDATE "Organization" SET "name" = "name" WHERE "id" = ANY(${['0190d0c2-2e2b-7000-8000-000000000001']}::uuid[])`;
  expect(await onPool(e)).toBe(await e(app.deps.db));
  const eu = (db: RawDb) => db.$executeRawUnsafe('SELECT pg_advisory_xact_lock_shared(1) FROM generate_series(1, $1::int)', 3);
  expect(await onPool(eu)).toBe(3);
  expect(await eu(app.deps.db)).toBe(3);
});

test('a Date parameter into a timestamp column without a zone is its UTC time, as Prisma sends it', async () => {
  const q = (db: RawDb) => db.$queryRaw<{ s: string }[]>`SELECT ${at}::timestamp::text AS "s", ${whole}::text AS "untyped"`;
  const [viaPool] = await onPool(q);
  const [viaPrisma] = await q(app.deps.db);
  expect(viaPool).toEqual(viaPrisma);
  expect(viaPool!.s).toBe('2026-11-27 10:11:12.345');
});

test("a statement's error carries its SQLSTATE and constraint, as the error helpers read them", async () => {
  const e = await onPool((db) => db.$queryRawUnsafe('SELECT 1/0')).catch((x: unknown) => x);
  expect(sqlState(e)).toBe('22012');
  const dup = await onPool(async (db) => {
    await db.$executeRawUnsafe(`CREATE TEMP TABLE raw_db_t ("k" int CONSTRAINT "raw_db_t_k_key" UNIQUE)`);
    await db.$executeRawUnsafe(`INSERT INTO raw_db_t VALUES (1)`);
    return db.$executeRawUnsafe(`INSERT INTO raw_db_t VALUES (1)`);
  }).catch((x: unknown) => x);
  expect(sqlState(dup)).toBe('23505');
  expect(violatedUniqueConstraint(dup)).toBe('raw_db_t_k_key');
  expect(isRetryable(dup)).toBe(false);
});

test("the pool's statements are seen by sqlStatements, BEGIN and COMMIT included", async () => {
  const { statements } = await app.sqlStatements(() => poolTransaction(app.deps.db, (_q, db) => db.$queryRaw`SELECT ${1}::int AS "one"`)!);
  expect(statements).toEqual(['BEGIN', 'SELECT $1::int AS "one"', 'COMMIT']);
});

test("a pool transaction's BEGIN goes with its first statement in one round trip when that one has no parameters, else just before it", async () => {
  // now() is the transaction's start (its BEGIN's message); statement_timestamp() the message's in which a statement came.
  type Stamps = { same: boolean; rows: number };
  const stamps = (sql: string, values: unknown[]) =>
    poolTransaction(app.deps.db, async (q) => {
      const [first] = await q<{ same: boolean }>(sql, values);
      // The transaction is one: a later statement's now() is still the BEGIN's, before its own message's time.
      const [second] = await q<{ earlier: boolean }>('SELECT now() < statement_timestamp() AS "earlier"', []);
      return { same: first!.same, rows: second!.earlier ? 1 : 0 } satisfies Stamps;
    })!;
  expect(await stamps('SELECT now() = statement_timestamp() AS "same"', [])).toEqual({ same: true, rows: 1 });
  expect(await stamps('SELECT now() = statement_timestamp() AND $1::int = 1 AS "same"', [1])).toEqual({ same: false, rows: 1 });
  // A failure of the merged first statement rolls the transaction back (the connection stays usable).
  const failed = await poolTransaction(app.deps.db, (q) => q('SELECT 1 / 0', []))!.catch((x: unknown) => x);
  expect(sqlState(failed)).toBe('22012');
  expect(await poolTransaction(app.deps.db, (q) => q<{ one: number }>('SELECT 1 AS "one"', []))).toEqual([{ one: 1 }]);
  // A transaction that sends nothing commits nothing and sends nothing.
  const { statements } = await app.sqlStatements(() => poolTransaction(app.deps.db, async () => 'nothing')!);
  expect(statements).toEqual([]);
});

test('pipelined writes on the pool: sent in order without waiting, awaited before COMMIT; the first failure rolls the transaction back whole; elsewhere each is awaited in place', async () => {
  // A table of the test's own (the owner's set-up; the service role creates none), granted to the service.
  await app.ownerDb.$executeRawUnsafe(`CREATE TABLE IF NOT EXISTS raw_db_pipelined ("n" int PRIMARY KEY, "at" timestamptz NOT NULL DEFAULT clock_timestamp())`);
  await app.ownerDb.$executeRawUnsafe(`GRANT SELECT, INSERT ON raw_db_pipelined TO "${SERVICE_ROLE}"`);
  const rows = async () => (await app.deps.db.$queryRawUnsafe<{ n: number }[]>(`SELECT "n" FROM raw_db_pipelined ORDER BY "at", "n"`)).map((r) => r.n);
  // Several writes in flight from the caller's side, yet pg's client never sees two queries at once
  // (its own queue of them is deprecated: a DeprecationWarning at the first).
  const warnings: string[] = [];
  const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
  process.on('warning', onWarning);
  let returnedBeforeAnswers = false;
  await poolTransaction(app.deps.db, async (_q, db) => {
    let answered = false;
    // A slow write, then quick ones: the caller goes on at once, the statements run in sending order.
    await pipelined(
      db,
      db.$executeRawUnsafe(`INSERT INTO raw_db_pipelined ("n") SELECT 1 FROM pg_sleep(0.2)`).then(() => (answered = true)),
    );
    returnedBeforeAnswers = !answered;
    for (const n of [2, 3]) await pipelined(db, db.$executeRawUnsafe(`INSERT INTO raw_db_pipelined ("n") VALUES ($1)`, n));
  })!;
  expect(returnedBeforeAnswers).toBe(true);
  expect(await rows()).toEqual([1, 2, 3]);

  // A failing write (a duplicate key) among them: the transaction fails with its error, nothing of it is kept.
  const e = await poolTransaction(app.deps.db, async (_q, db) => {
    await pipelined(db, db.$executeRawUnsafe(`INSERT INTO raw_db_pipelined ("n") VALUES (4)`));
    await pipelined(db, db.$executeRawUnsafe(`INSERT INTO raw_db_pipelined ("n") VALUES (1)`));
    await pipelined(db, db.$executeRawUnsafe(`INSERT INTO raw_db_pipelined ("n") VALUES (5)`));
    return 'returned';
  })!.catch((x: unknown) => x);
  expect(sqlState(e)).toBe('23505');
  // A refusal thrown by a helper after its statement answered fails it the same way.
  const refused = await poolTransaction(app.deps.db, async (_q, db) => {
    await pipelined(
      db,
      db.$executeRawUnsafe(`INSERT INTO raw_db_pipelined ("n") VALUES (6)`).then(() => {
        throw new Error('refused after its statement');
      }),
    );
    await pipelined(db, db.$executeRawUnsafe(`INSERT INTO raw_db_pipelined ("n") VALUES (7)`));
  })!.catch((x: unknown) => x);
  expect((refused as Error).message).toBe('refused after its statement');
  expect(await rows()).toEqual([1, 2, 3]);

  // On Prisma's client (no poolTransaction), the write is awaited in place: its failure is thrown there.
  await expect(pipelined(app.deps.db, app.deps.db.$executeRawUnsafe(`INSERT INTO raw_db_pipelined ("n") VALUES (1)`))).rejects.toMatchObject({});
  await app.ownerDb.$executeRawUnsafe(`DROP TABLE raw_db_pipelined`);
  await new Promise((r) => setImmediate(r)); // a warning is emitted on the next tick
  process.off('warning', onWarning);
  expect(warnings.filter((w) => w.startsWith('DeprecationWarning'))).toEqual([]);
});
