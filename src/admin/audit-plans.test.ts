import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createOperator, createTestApp, type TestApp } from '../../test/harness';

/**
 * SearchAuditLog on a grown table (issue 22, point 2): the statements the service sends for a REST
 * search — the page and its capped count — walk an index of the table backwards in the search's
 * order, never a sequential scan. A sequential scan for the capped count read few pages, but the
 * wrong ones: it starts where the previous scan of the table stopped (synchronize_seqscans), so at
 * 10^6 entries every request read cold pages through a ring buffer (docs/decisions.md "Flat with
 * history (issue 22)", docs/benchmarks.md). The statements are taken as the service sent them
 * (test/harness.ts `sqlStatements`) and planned by this database at 60,000 entries, ANALYZEd:
 * the page under `EXPLAIN (GENERIC_PLAN)` (every statement is a named prepared statement, which
 * PostgreSQL may run with its generic plan after five executions), the count prepared and executed
 * with the search's own values past those five, as a connection of the service runs it.
 */
const GROWN = 60_000;

let app: TestApp;
let op: Record<string, string>;
let owner: pg.Client;
const org = randomUUID();

beforeAll(async () => {
  app = await createTestApp();
  op = (await createOperator(app)).headers;
  owner = new pg.Client({ connectionString: app.ownerDatabaseUrl });
  await owner.connect();
  // 60% of the entries are one organization's (as in the history bench), the others spread over 100.
  await owner.query(
    `INSERT INTO "AuditLogEntry" ("id", "occurredAt", "organizationId", "actorType", "entityType", "entityId", "action", "after")
     SELECT uuidv7(), now() - interval '30 days' + g * interval '1 second',
            CASE WHEN g % 5 < 3 THEN $1::uuid ELSE md5('plans-org-' || (g % 100))::uuid END,
            'SYSTEM', 'History', gen_random_uuid(), 'history.entry', jsonb_build_object('n', g)
       FROM generate_series(1, $2::int) g`,
    [org, GROWN],
  );
  await owner.query('ANALYZE "AuditLogEntry"');
}, 120_000);
afterAll(async () => {
  await owner?.end();
  await app?.close();
});

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Scan Direction'?: string;
  Plans?: PlanNode[];
}
const nodesOf = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodesOf)];
const planOf = async (sql: string, values: unknown[] = []) =>
  (await owner.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(sql, values)).rows[0]!['QUERY PLAN'][0].Plan;

/** The plan walks an index of AuditLogEntry backwards (the search's order), with no sequential scan and no sort. */
function expectIndexWalk(plan: PlanNode, what: string) {
  const nodes = nodesOf(plan);
  const scans = nodes.filter((n) => n['Relation Name'] === 'AuditLogEntry');
  expect(scans.length, `${what}: ${JSON.stringify(plan)}`).toBe(1);
  expect(scans[0]!['Node Type'], what).toMatch(/^Index (Only )?Scan$/);
  expect(scans[0]!['Index Name'], what).toMatch(/^AuditLogEntry_(organizationId_)?occurredAt_id_idx$/);
  expect(scans[0]!['Scan Direction'], what).toBe('Backward');
  expect(
    nodes.map((n) => n['Node Type']),
    what,
  ).not.toContain('Sort');
}

describe('SearchAuditLog on 60,000 entries walks its index, the page and the capped count alike (issue 22)', () => {
  for (const [name, query] of [
    ['no filter, skip 0', 'skip=0&take=50'],
    ['no filter, skip 5,000', 'skip=5000&take=50'],
    ['organizationId, skip 5,000', `organizationId=%ORG%&skip=5000&take=50`],
  ] as const)
    test(name, async () => {
      const path = `/v1/admin/audit-log?${query.replace('%ORG%', org)}`;
      const { result: r, statements } = await app.sqlStatements(() => app.rest('GET', path, { headers: op }));
      expect(r.status, r.text).toBe(200);
      const body = r.body as { items: { occurredAt: string; organizationId: string }[]; skip: number; total: number; totalExact: boolean };
      // The answer's shape is kept: the count is capped at 1,000 and says so.
      expect(body).toMatchObject({ skip: query.includes('5000') ? 5000 : 0, total: 1000, totalExact: false });
      expect(body.items).toHaveLength(50);
      const times = body.items.map((e) => Date.parse(e.occurredAt));
      expect(times).toEqual([...times].sort((a, b) => b - a));
      if (query.includes('organizationId')) expect(new Set(body.items.map((e) => e.organizationId))).toEqual(new Set([org]));

      const mine = statements.filter((s) => s.includes('"AuditLogEntry"'));
      const count = mine.filter((s) => /count\(\*\)/.test(s));
      const page = mine.filter((s) => !/count\(\*\)/.test(s));
      expect(count, JSON.stringify(mine)).toHaveLength(1);
      expect(page, JSON.stringify(mine)).toHaveLength(1);
      // The cap is written into the count, so its plan is the same custom or generic.
      expect(count[0]).toMatch(/ORDER BY "occurredAt" DESC, "id" DESC LIMIT 1001\)/);
      // The page under its generic plan: `LIMIT $n OFFSET $m` planned without their values (PostgreSQL then
      // assumes a tenth of the table) still walks the index.
      expectIndexWalk(await planOf(`EXPLAIN (GENERIC_PLAN, FORMAT JSON) ${page[0]}`), `generic plan of ${page[0]}`);
      // The count as a connection of the service runs it after repeated use: prepared, executed six times
      // (past the five custom plans after which PostgreSQL may switch to the generic one), then explained.
      const args = query.includes('organizationId') ? `('${org}')` : '';
      await owner.query(`PREPARE audit_count AS ${count[0]}`);
      try {
        for (let i = 0; i < 6; i++) await owner.query(`EXECUTE audit_count${args}`);
        const executed = await planOf(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE audit_count${args}`);
        const cache = (await owner.query(`SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = 'audit_count'`)).rows[0];
        expectIndexWalk(executed, `the count of ${path} (${JSON.stringify(cache)})`);
      } finally {
        await owner.query('DEALLOCATE audit_count');
      }
    });
});
