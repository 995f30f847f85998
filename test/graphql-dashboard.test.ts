import { afterAll, beforeAll, expect, test } from 'vitest';
import { createTestApp, PASSWORD, uniqueEmail, type TestApp } from './harness';
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
const transactions: string[] = [];
const holders: string[] = [];
const ITEMS = 50;
/**
 * At most this many statements per request, whatever the page size (authentication included): about
 * one per relation level the query walks, each batched over the page (today 10 for the accounts with
 * balances, holders and authorized applications; 14 for the transactions with payment intent,
 * participants, settlements, allocations, their accounts and refunds).
 */
const MAX_STATEMENTS = 16;
/** The accounts frozen (by a member, through REST) and the transaction whose second settlement failed. */
const FROZEN = [1, 2];
const FAILED = 0;

beforeAll(async () => {
  app = await createTestApp();
  f = await moneyFixture(app, { requiredConfirmations: 1 });
  // Two account holders with an ACTIVE relationship with the organization; the accounts alternate between them.
  for (let i = 0; i < 2; i++) {
    const email = uniqueEmail('holder');
    const inv = await app.rest('POST', `/v1/organizations/${f.organizationId}/account-holder-invitations`, { body: { email }, headers: f.member.headers });
    expect(inv.status, inv.text).toBe(201);
    const r = await app.rest('POST', '/v1/account-holders/invitations/signup-and-claim', {
      body: { token: inv.body.token, email, password: PASSWORD, name: `Holder ${i}` },
    });
    expect(r.status, r.text).toBe(200);
    holders.push(r.body.accountHolderId);
  }
  // ITEMS transactions, each paying its own account, funded, then half settled (one allocation each).
  for (let i = 0; i < ITEMS; i++) {
    const r = await app.rest('POST', `/v1/organizations/${f.organizationId}/accounts`, {
      body: { name: `Seller ${i}`, accountHolderId: holders[i % 2] },
      headers: f.apiKeyHeaders,
    });
    expect(r.status, r.text).toBe(201);
    accounts.push(r.headers.get('location')!.split('/').pop()!);
  }
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
  // Two accounts frozen after they were paid.
  for (const i of FROZEN) {
    const r = await app.rest('POST', `/v1/accounts/${accounts[i]}/freeze`, { body: { reason: `review ${i}` }, headers: f.member.headers });
    expect(r.status, r.text).toBe(204);
  }
  // A settlement that fails: the transaction frozen between the request and the execution, then unfrozen.
  const failing = transactions[FAILED]!;
  const r = await app.rest('POST', `/v1/transactions/${failing}/settlements`, { body: { amount: '250000' }, headers: f.apiKeyHeaders });
  expect(r.status, r.text).toBe(201);
  expect((await app.rest('POST', `/v1/transactions/${failing}/freeze`, { body: { reason: 'chargeback' }, headers: f.member.headers })).status).toBe(204);
  await drainMoneyWork(app);
  expect((await app.rest('POST', `/v1/transactions/${failing}/unfreeze`, { headers: f.member.headers })).status).toBe(204);
}, 300_000);
afterAll(() => app?.close());

/** Runs a query with page size `size` as the organization's owner; answers its data and its SQL statements. */
async function run(query: string, size: number) {
  const { result, statements } = await app.sqlStatements(() => app.gql<any>(query, { organizationId: f.organizationId, size }, f.member.headers));
  expect(result.errors).toBeUndefined();
  return { data: result.data, statements };
}

const nodes = (connection: { edges: { node: any }[] }) => connection.edges.map((e) => e.node);

test('a page of accounts with their balances and holders: the same statements for 10 as for 50', async () => {
  const ten = await run(dashboardQueries.accounts, 10);
  const fifty = await run(dashboardQueries.accounts, 50);
  expect(nodes(ten.data.organization.accounts)).toHaveLength(10);
  const page = nodes(fifty.data.organization.accounts);
  expect(page).toHaveLength(50);
  // The ITEMS accounts created last (newest first), each with its holder and the balance its settlement paid.
  expect(page.map((a: { id: string }) => a.id).sort()).toEqual([...accounts].sort());
  for (const a of page) {
    const i = accounts.indexOf(a.id);
    expect(a.holder).toEqual({ id: holders[i % 2], name: `Holder ${i % 2}`, email: expect.any(String) });
    expect(a.balances).toEqual([expect.objectContaining({ assetNetworkId: f.catalog.assetNetworkId, posted: '500000' })]);
    expect(a.authorizedApplications).toEqual([expect.objectContaining({ id: f.applicationId })]);
  }
  expect(fifty.data.organization.accounts.totalCount).toBe(ITEMS + 1);
  expect(fifty.statements.length, fifty.statements.join('\n')).toBe(ten.statements.length);
  expect(fifty.statements.length).toBeLessThanOrEqual(MAX_STATEMENTS);
});

test('a page of transactions with settlements, allocations and their accounts: the same statements for 10 as for 50', async () => {
  const ten = await run(dashboardQueries.transactions, 10);
  const fifty = await run(dashboardQueries.transactions, 50);
  const page = nodes(fifty.data.organization.transactions);
  expect(page).toHaveLength(50);
  for (const t of page) {
    const executed = t.settlements.filter((s: { status: string }) => s.status === 'EXECUTED');
    expect(t.settlements).toHaveLength(t.id === transactions[FAILED] ? 2 : 1);
    expect(executed).toHaveLength(1);
    expect(executed[0].allocations).toEqual([
      expect.objectContaining({ accountId: t.participants[0].accountId, account: expect.objectContaining({ id: t.participants[0].accountId }) }),
    ]);
    expect(t.paymentIntent).toMatchObject({ amount: '1000000', status: 'SUCCEEDED' });
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
  const from = doc.indexOf('## For dashboard authors');
  const section = doc.slice(from, doc.indexOf('\n## ', from));
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
  const org = overview.organization;
  expect(org.id).toBe(organizationId);
  expect(nodes(org.applications).map((a: { id: string }) => a.id)).toContain(f.applicationId);
  expect(org.applications.totalCount).toBe(nodes(org.applications).length);
  expect(nodes(org.members)).toEqual([expect.objectContaining({ email: f.member.email, role: 'OWNER' })]);
  expect(org.members.totalCount).toBe(1);
  // Newest first: five of the accounts and transactions created last (created at the same instant
  // of the test clock, they are ordered by id).
  expect(org.accounts.totalCount).toBe(ITEMS + 1);
  expect(nodes(org.accounts)).toHaveLength(5);
  expect(accounts).toEqual(expect.arrayContaining(nodes(org.accounts).map((a: { id: string }) => a.id)));
  expect(nodes(org.transactions)).toHaveLength(5);
  expect(transactions).toEqual(expect.arrayContaining(nodes(org.transactions).map((t: { id: string }) => t.id)));
  expect(nodes(org.transactions).map((t: { status: string }) => t.status)).toEqual(Array(5).fill('RESERVED'));

  // The frozen accounts, with their holders and balances: one page.
  const frozen = (await gql('FrozenAccounts', { organizationId }, asMember)).organization.accounts;
  expect(frozen.totalCount).toBe(FROZEN.length);
  expect(frozen.pageInfo.hasNextPage).toBe(false);
  const byId = (a: { id?: string }, b: { id?: string }) => (a.id! < b.id! ? -1 : 1);
  expect(nodes(frozen).sort(byId)).toEqual(
    FROZEN.map((i) => ({
      id: accounts[i],
      name: `Seller ${i}`,
      reference: null,
      frozenReason: `review ${i}`,
      holder: { id: holders[i % 2], name: `Holder ${i % 2}`, email: expect.any(String) },
      balances: [{ assetNetworkId: f.catalog.assetNetworkId, posted: '500000', available: '500000', pendingDebits: '0', pendingCredits: '0' }],
    })).sort(byId),
  );

  // Today's failed settlements (since the start of the service clock's day), with transaction and payment intent.
  const now = app.clock.now();
  const since = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate())).toISOString();
  {
    const failed = (await gql('FailedSettlements', { organizationId, since }, asMember)).organization.settlements;
    expect(failed.pageInfo.hasNextPage).toBe(false);
    expect(nodes(failed)).toEqual([
      expect.objectContaining({
        requestedAmount: '250000',
        attempts: 1,
        failureReason: expect.stringMatching(/^TRANSACTION_FROZEN: /),
        failedAt: expect.any(String),
        transaction: expect.objectContaining({
          id: transactions[FAILED],
          status: 'RESERVED',
          escrowAmount: '500000',
          frozen: false,
          paymentIntent: expect.objectContaining({ amount: '1000000', assetNetworkId: f.catalog.assetNetworkId, status: 'SUCCEEDED' }),
        }),
      }),
    ]);
  }
  // None failed since tomorrow.
  const tomorrow = new Date(Date.parse(since) + 86_400_000).toISOString();
  expect(nodes((await gql('FailedSettlements', { organizationId, since: tomorrow }, asMember)).organization.settlements)).toEqual([]);

  // Every transaction, 25 a page, newest first (pageInfo.endCursor as $after).
  const seen: any[] = [];
  let after: string | null = null;
  do {
    const page: any = (await gql('TransactionsWithSettlements', { organizationId, after }, asMember)).organization.transactions;
    expect(page.edges.length).toBeLessThanOrEqual(25);
    seen.push(...nodes(page));
    after = page.pageInfo.hasNextPage ? page.pageInfo.endCursor : null;
  } while (after);
  expect(seen.map((t) => t.id).sort()).toEqual([...transactions].sort());
  for (const t of seen) {
    expect(t).toMatchObject({ status: 'RESERVED', amount: '1000000', settledAmount: '500000', refundedAmount: '0', frozen: false });
    const executed = t.settlements.filter((s: { status: string }) => s.status === 'EXECUTED');
    expect(executed).toEqual([
      expect.objectContaining({
        grossAmount: '500000',
        feeAmount: '0',
        failureReason: null,
        allocations: [expect.objectContaining({ amount: '500000', account: { id: expect.any(String), name: expect.stringMatching(/^Seller /) } })],
      }),
    ]);
  }
  // each transaction's settlement paid its own account
  const paid = seen.map((t) => t.settlements.find((s: { status: string }) => s.status === 'EXECUTED').allocations[0].account.id as string);
  expect(paid.sort()).toEqual([...accounts].sort());

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
