import { afterAll, beforeAll, expect, test } from 'vitest';
import { createTestApp, type TestApp } from './harness';
import { createIntent, moneyFixture, type MoneyFixture } from './fixtures/deposits/testing';
import { drainMoneyWork } from './fixtures/settlements/testing';
import { sandboxMine, sandboxSend } from './money-helpers';
import { dashboardQueries } from './fixtures/graphql/dashboard-queries';

/**
 * No N+1 (issue 19, point 5): the SQL statements the service sends while serving one GraphQL
 * request of a representative dashboard query (test/fixtures/graphql/dashboard-queries.ts) are a
 * small number that does not grow with the page size: the same for 10 items as for 50. Counted at
 * the service's database client (TestApp.sqlStatements), so authentication's statements are in the
 * count too.
 */
let app: TestApp;
let f: MoneyFixture;
const ITEMS = 50;
/** At most this many statements per request, whatever the page size (authentication included). */
const MAX_STATEMENTS = 8;

beforeAll(async () => {
  app = await createTestApp();
  f = await moneyFixture(app, { requiredConfirmations: 1 });
  // ITEMS transactions, each paying its own account, funded, then half settled (one allocation each).
  const accounts: string[] = [];
  for (let i = 0; i < ITEMS; i++) {
    const r = await app.rest('POST', `/v1/organizations/${f.organizationId}/accounts`, { body: { name: `Seller ${i}` }, headers: f.apiKeyHeaders });
    expect(r.status).toBe(201);
    accounts.push(r.headers.get('location')!.split('/').pop()!);
  }
  const transactions: string[] = [];
  for (const account of accounts) {
    const pi = await createIntent(app, f, { amount: '1000000', beneficiaryAccountId: account });
    await sandboxSend(app, f.apiKeyHeaders, { address: pi.address, amount: 1_000_000n, assetNetworkId: f.catalog.assetNetworkId });
    transactions.push(pi.transactionId);
  }
  await sandboxMine(app, f.apiKeyHeaders, f.catalog.networkId, 1);
  await drainMoneyWork(app);
  for (const id of transactions) {
    const r = await app.rest('POST', `/v1/transactions/${id}/settlements`, { body: { amount: '500000' }, headers: f.apiKeyHeaders });
    expect(r.status, r.text).toBe(201);
  }
  await drainMoneyWork(app);
}, 300_000);
afterAll(() => app?.close());

/** Runs a query with page size `size` as the organization's owner; answers its data and its SQL statements. */
async function run(query: string, size: number) {
  const { result, statements } = await app.sqlStatements(() => app.gql<any>(query, { organizationId: f.organizationId, size }, f.member.headers));
  expect(result.errors).toBeUndefined();
  return { data: result.data, statements };
}

test('a page of accounts: the same statements for 10 as for 50', async () => {
  const ten = await run(dashboardQueries.accounts, 10);
  const fifty = await run(dashboardQueries.accounts, 50);
  expect(ten.data.accounts.items).toHaveLength(10);
  expect(fifty.data.accounts.items).toHaveLength(50);
  expect(fifty.statements.length, fifty.statements.join('\n')).toBe(ten.statements.length);
  expect(fifty.statements.length).toBeLessThanOrEqual(MAX_STATEMENTS);
});

test('a page of transactions with settlements, allocations, participants and refunds: the same statements for 10 as for 50', async () => {
  const ten = await run(dashboardQueries.transactions, 10);
  const fifty = await run(dashboardQueries.transactions, 50);
  expect(fifty.data.transactions.items).toHaveLength(50);
  for (const t of fifty.data.transactions.items) {
    expect(t.settlements).toHaveLength(1);
    expect(t.settlements[0].status).toBe('EXECUTED');
    expect(t.settlements[0].allocations).toEqual([expect.objectContaining({ accountId: t.participants[0].accountId })]);
  }
  expect(fifty.statements.length, fifty.statements.join('\n')).toBe(ten.statements.length);
  expect(fifty.statements.length).toBeLessThanOrEqual(MAX_STATEMENTS);
});
