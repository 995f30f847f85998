import { createHash } from 'node:crypto';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createTestApp, type TestApp } from '../../test/harness';
import { Prisma } from '../db/prisma';
import { jobInsertFromRows, jobInsertParts, jobInsertSql, splitInsert } from './job-rows';
import { CHAIN_SYNC_QUEUE, EXPIRE_QUEUE, RELEASE_EVALUATE_QUEUE } from './queues';
import pg from 'pg';

/**
 * pg-boss's job table is internal to pg-boss: the payment intents' group statement embeds pg-boss's
 * own insert (src/kernel/job-rows.ts). These tests fail if pg-boss changes that statement (its text,
 * pinned by hash: read the new one and check it still is a plain INSERT a CTE can hold) or if the
 * rows the embedded insert writes differ from those boss.insert writes.
 */
let app: TestApp;
beforeAll(async () => {
  app = await createTestApp();
});
afterAll(() => app.close());

const jobColumns = Prisma.sql`name, data, priority, start_after, singleton_key, singleton_on, group_id, group_tier, expire_seconds, deletion_seconds,
  keep_until, retry_limit, retry_delay, retry_backoff, retry_delay_max, policy, dead_letter, heartbeat_seconds, blocked, blocking, pending_dependencies, state`;

test("pg-boss's insert for the expiry queue is the statement this version embeds (pinned)", async () => {
  const parts = await jobInsertParts(app.deps.boss!, EXPIRE_QUEUE);
  expect(parts).not.toBeNull();
  const text = `${parts!.before}$1${parts!.after}`;
  expect(text).toMatch(/^INSERT INTO pgboss\.\S+ \(/);
  expect(text).toMatch(/json_to_recordset\(\$1::text::json\)/);
  expect(text).toMatch(/ON CONFLICT DO NOTHING$/);
  // pg-boss 12.35.0's statement. A new pg-boss changes the hash: re-read plans.insertJobs, then update it.
  // (The queue's table, named by pg-boss when the queue is created, is left out.)
  const normalized = text.replace(/^INSERT INTO pgboss\.\S+/, 'INSERT INTO pgboss.<table>').replace(/\s+/g, ' ');
  expect(createHash('sha256').update(normalized).digest('hex')).toBe('7fd08113a41f02112648aa5a6ba173754d4cb28f408984299cca8e3b52722d4e');
  // What a CTE cannot hold is refused (the caller then uses boss.insert).
  expect(splitInsert(`WITH ins AS (${text}) SELECT pg_notify('x', 'y')`)).toBeNull();
  expect(splitInsert(`${text} RETURNING id; SELECT $2`)).toBeNull();
});

test('the embedded insert writes the rows boss.insert writes', async () => {
  const boss = app.deps.boss!;
  const parts = (await jobInsertParts(boss, EXPIRE_QUEUE))!;
  const startAfter = new Date(Date.now() + 3_600_000);
  const [a, b] = [crypto.randomUUID(), crypto.randomUUID()];
  await boss.insert(EXPIRE_QUEUE, [{ id: a, data: { paymentIntentId: a }, startAfter }]);
  await app.deps.db.$executeRaw`WITH "j" AS (${jobInsertSql(parts, [{ id: b, data: { paymentIntentId: a }, startAfter }])}) SELECT 1`;
  const rows = await app.deps.db.$queryRaw<
    Record<string, unknown>[]
  >`SELECT id::text, ${jobColumns} FROM pgboss.job WHERE id IN (${a}::uuid, ${b}::uuid) ORDER BY id = ${a}::uuid DESC`;
  expect(rows).toHaveLength(2);
  const [viaInsert, embedded] = rows.map(({ id: _id, ...rest }) => rest);
  expect(embedded).toEqual(viaInsert);
  expect(viaInsert).toMatchObject({ name: EXPIRE_QUEUE, state: 'created', data: { paymentIntentId: a } });
  expect((viaInsert!.start_after as Date).getTime()).toBe(startAfter.getTime());
  // Sending the same id again inserts nothing (ON CONFLICT DO NOTHING), as boss.insert.
  await app.deps.db.$executeRaw`WITH "j" AS (${jobInsertSql(parts, [{ id: b, data: { other: true } }])}) SELECT 1`;
  const [again] = await app.deps.db.$queryRaw<{ data: unknown }[]>`SELECT data FROM pgboss.job WHERE id = ${b}::uuid`;
  expect(again!.data).toEqual({ paymentIntentId: a });
});

test("a notify queue's insert (pg-boss's wrapper taken apart) writes boss.insert's rows and wakes its workers once, at the commit, only when a job was written", async () => {
  const boss = app.deps.boss!;
  const parts = (await jobInsertParts(boss, CHAIN_SYNC_QUEUE))!;
  expect(parts).not.toBeNull();
  // pg-boss 12.35.0's notify call for the queue: its channel (the schema's) and the queue's name.
  expect(parts.notify).toMatch(/^pg_notify\(\('pgboss_' \|\| left\(encode\(sha224\('pgboss'::bytea\), 'hex'\), 24\)\), 'chain\.sync'\)$/);
  expect(parts.before).toMatch(/^INSERT INTO pgboss\.\S+ \(/);
  // Anything else around the insert is refused.
  const wrapper = (tail: string) =>
    `WITH ins AS (${parts.before}$1${parts.after} RETURNING id, start_after), notified AS (SELECT ${parts.notify} FROM ins WHERE start_after <= pgboss.job_now() LIMIT 1) ${tail}`;
  expect(splitInsert(wrapper('SELECT id FROM ins WHERE (SELECT count(*) FROM notified) >= 0'))).not.toBeNull();
  expect(splitInsert(wrapper('SELECT id FROM ins WHERE (SELECT count(*) FROM notified) >= 0; DELETE FROM pgboss.job'))).toBeNull();
  expect(splitInsert(wrapper('SELECT id, $2 FROM ins WHERE (SELECT count(*) FROM notified) >= 0'))).toBeNull();

  const listener = new pg.Client({ connectionString: app.databaseUrl });
  await listener.connect();
  const heard: string[] = [];
  listener.on('notification', (n) => heard.push(n.payload ?? ''));
  const channel = (await listener.query<{ c: string }>(`SELECT ${parts.notify!.replace(/^pg_notify\((.*), 'chain\.sync'\)$/, '$1')} AS c`)).rows[0]!.c;
  await listener.query(`LISTEN ${channel}`);
  try {
    const [a, b, c] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
    const data = { networkId: a, addresses: ['0xabc'] };
    await boss.insert(CHAIN_SYNC_QUEUE, [{ id: a, data }]);
    const until = async (n: number) => {
      for (let i = 0; i < 200 && heard.length < n; i++) await new Promise((r) => setTimeout(r, 10));
    };
    await until(1);
    heard.length = 0;
    await app.deps.db.$transaction(async (tx) => {
      await tx.$executeRaw`WITH "j" AS (${jobInsertSql(parts, [{ id: b, data }])}) SELECT 1`;
      await new Promise((r) => setTimeout(r, 100));
      // Not before the commit.
      expect(heard).toEqual([]);
    });
    await until(1);
    expect(heard).toEqual(['chain.sync']);
    // A condition that does not hold: no job, no notification.
    heard.length = 0;
    await app.deps.db.$executeRaw`WITH "j" AS (${jobInsertSql(parts, [{ id: c, data }], Prisma.sql`false`)}) SELECT 1`;
    await new Promise((r) => setTimeout(r, 150));
    expect(heard).toEqual([]);
    const rows = await app.deps.db.$queryRaw<
      Record<string, unknown>[]
    >`SELECT id::text, ${jobColumns} FROM pgboss.job WHERE id IN (${a}::uuid, ${b}::uuid, ${c}::uuid) ORDER BY id = ${a}::uuid DESC`;
    expect(rows.map((r) => r.id)).toEqual([a, b]);
    // Both due now: start_after and keep_until are each statement's time.
    const [viaInsert, embedded] = rows.map(({ id: _id, start_after: _s, keep_until: _k, ...rest }) => rest);
    expect(embedded).toEqual(viaInsert);
    expect(viaInsert).toMatchObject({ name: CHAIN_SYNC_QUEUE, state: 'created', data });
    // A job due later cannot be sent this way (the wrapper would not have notified).
    expect(() => jobInsertSql(parts, [{ data, startAfter: new Date(Date.now() + 60_000) }])).toThrow(/due at once/);
  } finally {
    await listener.end();
  }
});

test("jobs made from the caller's rows (jobInsertFromRows): one per row, boss.insert's rows, the notify queue woken only when a job was made", async () => {
  const boss = app.deps.boss!;
  const parts = (await jobInsertParts(boss, RELEASE_EVALUATE_QUEUE))!;
  expect(parts.notify).not.toBeNull();
  const listener = new pg.Client({ connectionString: app.databaseUrl });
  await listener.connect();
  const heard: string[] = [];
  listener.on('notification', (n) => heard.push(n.payload ?? ''));
  const channel = (await listener.query<{ c: string }>(`SELECT ${parts.notify!.replace(/^pg_notify\((.*), '[^']+'\)$/, '$1')} AS c`)).rows[0]!.c;
  await listener.query(`LISTEN ${channel}`);
  try {
    const [a, b, c] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
    const rowsOf = (ids: string[]) => Prisma.sql`SELECT jsonb_build_object('transactionId', t.id) AS "data" FROM unnest(${ids}::text[]) AS t(id)`;
    const ofJobs = (ids: string[]) =>
      app.deps.db.$queryRaw<Record<string, unknown>[]>`SELECT ${jobColumns} FROM pgboss.job
        WHERE name = ${RELEASE_EVALUATE_QUEUE} AND data->>'transactionId' = ANY(${ids}::text[]) ORDER BY data->>'transactionId'`;
    // No row: no job, no notification.
    await app.deps.db.$executeRaw(jobInsertFromRows(parts, rowsOf([])));
    await new Promise((r) => setTimeout(r, 150));
    expect(heard).toEqual([]);
    // Two rows: two jobs, one notification at the commit.
    await app.deps.db.$executeRaw(jobInsertFromRows(parts, rowsOf([a, b].sort())));
    for (let i = 0; i < 200 && !heard.length; i++) await new Promise((r) => setTimeout(r, 10));
    expect(heard).toEqual([RELEASE_EVALUATE_QUEUE]);
    await boss.insert(RELEASE_EVALUATE_QUEUE, [{ data: { transactionId: c } }]);
    const made = await ofJobs([a, b]);
    expect(made.map((j) => (j.data as { transactionId: string }).transactionId)).toEqual([a, b].sort());
    const [viaInsert] = (await ofJobs([c])).map(({ data: _d, start_after: _s, keep_until: _k, ...rest }) => rest);
    for (const { data: _d, start_after: _s, keep_until: _k, ...rest } of made) expect(rest).toEqual(viaInsert);
  } finally {
    await listener.end();
  }
});
