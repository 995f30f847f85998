import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { randomUUID } from 'node:crypto';
import { createPrisma, poolQuery, type PrismaClient } from '../src/db/prisma';
import { cloneTemplateDatabase } from './process-harness';

/**
 * Named prepared statements stay on their connection for its lifetime (30 minutes): a text that
 * differs with the length of a list (Prisma's `{ in: ids }` writes `IN ($1,$2,...)`, one parameter
 * per element) is prepared only for short lists (at most 8), or every group size would leave one
 * more statement on every connection (issue 22, point 3). The client runs on one connection, so its prepared statements are
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
  test('a list of more than 8 parameters is sent unnamed (nothing stays prepared per length); short lists and fixed texts are prepared once and reused', async () => {
    for (let n = 1; n <= 20; n++) {
      const ids = Array.from({ length: n }, () => randomUUID());
      expect(await db.settlement.findMany({ where: { id: { in: ids } } })).toEqual([]);
      // The same lists through a statement of one text for every length: an array parameter.
      expect(await db.$queryRaw`SELECT "id" FROM "Settlement" WHERE "id" = ANY(${ids}::uuid[])`).toEqual([]);
      // A fixed list: one text, always.
      expect(await db.settlement.count({ where: { status: { in: ['PENDING', 'FAILED'] } } })).toBe(0);
    }
    const statements = await prepared();
    const lengths = statements
      .filter((s) => s.includes('"Settlement"."id" IN ('))
      .map((s) => /IN \(([^)]*)\)/.exec(s)![1]!.split(',').length)
      .sort((a, b) => a - b);
    // Lengths 1-8 prepared once each; 9-20 never: at most 8 statements per list, whatever the group sizes.
    expect(lengths).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    // The array form and the fixed list: one prepared statement each, for all twenty runs.
    expect(statements.filter((s) => s.includes('= ANY('))).toHaveLength(1);
    expect(statements.filter((s) => /count/i.test(s))).toHaveLength(1);
  });

  test('an unnamed list statement answers like a named one, with its rows and its errors', async () => {
    const many = Array.from({ length: 12 }, () => randomUUID());
    expect(await db.settlement.findMany({ where: { id: { in: many }, status: { in: ['PENDING', 'FAILED'] } } })).toEqual([]);
    // A failing unnamed statement reports its error as a named one does, and the connection stays usable.
    const placeholders = many.map((_, i) => `$${i + 1}`).join(',');
    await expect(db.$queryRawUnsafe(`SELECT "id" FROM "Settlement" WHERE "id" IN (${placeholders})`, 'not-a-uuid', ...many.slice(1))).rejects.toThrow(/uuid/i);
    expect(await db.settlement.count()).toBe(0);
  });
});
