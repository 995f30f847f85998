import { afterAll, beforeAll, expect, test } from 'vitest';
import { createTestApp, type TestApp } from './harness';
import { createIntent, moneyFixture, type MoneyFixture } from './fixtures/deposits/testing';
import { drainMoneyWork } from './fixtures/settlements/testing';
import { sandboxMine, sandboxSend } from './money-helpers';
import { dashboardQueries } from './fixtures/graphql/dashboard-queries';
import { readFileSync } from 'node:fs';
import { parse, type OperationDefinitionNode } from 'graphql';
import { dashboardOperations } from '../examples/dashboard/operations';

/**
 * The dashboard operations of docs/graphql.md run (issue 19, point 6), and no N+1 (point 5): the SQL statements the service sends while serving one GraphQL
 * request of a representative dashboard query (test/fixtures/graphql/dashboard-queries.ts) are a
 * small number that does not grow with the page size: the same for 10 items as for 50. Counted at
 * the service's database client (TestApp.sqlStatements), so authentication's statements are in the
 * count too.
 */
let app: TestApp;
let f: MoneyFixture;
const accounts: string[] = [];
const ITEMS = 50;
/** At most this many statements per request, whatever the page size (authentication included). */
const MAX_STATEMENTS = 8;

beforeAll(async () => {
  app = await createTestApp();
  f = await moneyFixture(app, { requiredConfirmations: 1 });
  // ITEMS transactions, each paying its own account, funded, then half settled (one allocation each).
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

const operationNamed = (name: string) => {
  const text = dashboardOperations.find((o) => (parse(o).definitions[0] as OperationDefinitionNode).name?.value === name);
  if (!text) throw new Error(`no operation ${name}`);
  return text;
};

test('docs/graphql.md shows exactly the dashboard operations of examples/dashboard/operations.ts', () => {
  const doc = readFileSync(new URL('../docs/graphql.md', import.meta.url), 'utf8');
  const section = doc.slice(doc.indexOf('## For dashboard authors'));
  const blocks = [...section.matchAll(/```graphql\n([\s\S]*?)```/g)].map((m) => m[1]!.trim());
  expect(blocks).toEqual(dashboardOperations.map((o) => o.trim()));
  expect(blocks).toHaveLength(5);
});

test('the dashboard operations run and answer what the organization holds', async () => {
  const asMember = f.member.headers;
  const asKey = f.apiKeyHeaders;
  const gql = async (name: string, variables: Record<string, unknown>, headers: Record<string, string>) => {
    const r = await app.gql<any>(operationNamed(name), variables, headers);
    expect(r.errors, name).toBeUndefined();
    return r.data;
  };
  const organizationId = f.organizationId;

  const overview = await gql('OrganizationOverview', { organizationId }, asMember);
  expect(overview.organization.id).toBe(organizationId);
  expect(overview.organization.applications.map((a: { id: string }) => a.id)).toContain(f.applicationId);
  expect(overview.organization.members).toEqual([expect.objectContaining({ email: f.member.email, role: 'OWNER' })]);
  expect(overview.accounts.items).toHaveLength(5);
  expect(overview.accounts.nextCursor).toBe(overview.accounts.items[4].id);
  expect(overview.transactions.items.map((t: { status: string }) => t.status)).toEqual(Array(5).fill('RESERVED'));

  // Every account, 25 a page, as the API key that created them: the fixture's and the ITEMS others.
  const seen: string[] = [];
  let after: string | null = null;
  do {
    const page: any = await gql('AccountsList', { organizationId, after }, asKey);
    expect(page.accounts.items.length).toBeLessThanOrEqual(25);
    seen.push(...page.accounts.items.map((a: { id: string }) => a.id));
    after = page.accounts.nextCursor;
  } while (after);
  expect(seen.sort()).toEqual([f.beneficiaryAccountId, ...accounts].sort());

  // An account paid by a settlement of 500000 (no pricing policy: no fee).
  const detail = await gql('AccountDetail', { accountId: accounts[0] }, asMember);
  expect(detail.account).toMatchObject({ id: accounts[0], name: 'Seller 0', status: 'ACTIVE' });
  expect(detail.accountBalances).toEqual([
    { assetNetworkId: f.catalog.assetNetworkId, posted: '500000', available: '500000', pendingDebits: '0', pendingCredits: '0' },
  ]);

  const { transactions } = await gql('TransactionsWithSettlements', { organizationId }, asKey);
  expect(transactions.items).toHaveLength(25);
  expect(transactions.nextCursor).toBe(transactions.items[24].id);
  for (const t of transactions.items) {
    expect(t).toMatchObject({ status: 'RESERVED', amount: '1000000', escrowAmount: '500000', settledAmount: '500000', refundedAmount: '0', frozen: false });
    expect(t.settlements).toEqual([
      expect.objectContaining({
        status: 'EXECUTED',
        grossAmount: '500000',
        feeAmount: '0',
        failureReason: null,
        allocations: [expect.objectContaining({ amount: '500000' })],
      }),
    ]);
  }
  // each transaction's settlement paid its own account
  const paid = transactions.items.map((t: any) => t.settlements[0].allocations[0].accountId as string);
  expect(new Set(paid).size).toBe(25);
  for (const id of paid) expect(accounts).toContain(id);

  const catalog = await gql('AssetCatalog', {}, asKey);
  expect(catalog.assetNetworks).toContainEqual(
    expect.objectContaining({
      id: f.catalog.assetNetworkId,
      decimals: 6,
      minimumDeposit: '0',
      network: expect.objectContaining({ kind: 'SANDBOX', environmentType: 'SANDBOX', requiredConfirmations: 1 }),
    }),
  );
});
