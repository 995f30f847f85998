import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { randomUUID } from 'node:crypto';
import { createPrisma, poolQuery, type PrismaClient } from '../src/db/prisma';
import { cloneTemplateDatabase } from './process-harness';

/**
 * Named prepared statements stay on their connection for its lifetime (30 minutes): a text that
 * differs with the length of a list (Prisma's `{ in: ids }` writes `IN ($1,$2,...)`, one parameter
 * per element) must not be prepared, or every group size would leave one more statement on every
 * connection (issue 22, point 3). The client runs on one connection, so its prepared statements are
 * those pg_prepared_statements shows.
 */
let db: PrismaClient;
beforeAll(async () => {
  db = createPrisma(await cloneTemplateDatabase('stmts'), 1);
});
afterAll(async () => {
  await db.$disconnect();
});

const prepared = async () =>
  (await poolQuery<{ statement: string }>(db, `SELECT "statement" FROM pg_prepared_statements WHERE "statement" LIKE '%"Settlement"%'`, [])!).rows.map(
    (r) => r.statement,
  );

describe('prepared statements', () => {
  test('a list of n parameters is sent unnamed (nothing stays prepared per length); a statement of fixed text is prepared once and reused', async () => {
    for (let n = 1; n <= 12; n++) {
      const ids = Array.from({ length: n }, () => randomUUID());
      // The same lists through a statement of one text for every length: an array parameter.
      expect(await db.settlement.findMany({ where: { id: { in: ids } } })).toEqual([]);
      expect(await db.$queryRaw`SELECT "id" FROM "Settlement" WHERE "id" = ANY(${ids}::uuid[])`).toEqual([]);
      expect(await db.settlement.count({ where: { status: 'PENDING' } })).toBe(0);
    }
    const statements = await prepared();
    // No statement per list length: at most the one of `IN ($1)` (a list of one is a fixed text).
    expect(statements.filter((s) => /\bIN \(\$\d+,/.test(s))).toEqual([]);
    expect(statements.filter((s) => /\bIN \(/.test(s)).length).toBeLessThanOrEqual(1);
    // The array form and the count: one prepared statement each, for all twelve runs.
    expect(statements.filter((s) => s.includes('= ANY('))).toHaveLength(1);
    expect(statements.filter((s) => /count/i.test(s))).toHaveLength(1);
  });

  test('an unnamed list statement answers like a named one, with its rows', async () => {
    const a = await db.settlement.findMany({ where: { id: { in: [randomUUID(), randomUUID(), randomUUID()] }, status: { in: ['PENDING', 'FAILED'] } } });
    expect(a).toEqual([]);
    // A failing list statement reports its error as a named one does, and the connection stays usable.
    await expect(db.$queryRawUnsafe(`SELECT "id" FROM "Settlement" WHERE "id" IN ($1,$2)`, 'not-a-uuid', randomUUID())).rejects.toThrow(/uuid/i);
    expect(await db.settlement.count()).toBe(0);
  });
});
