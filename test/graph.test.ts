import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createApiKey, createOperator, createTestApp, signUpMember, type TestApp } from './harness';
import { setupIntegrator, setupSandboxCatalog } from './money-helpers';

/**
 * The graph of issue 19 through GraphQL: relations, connections (both directions, filters,
 * order, totalCount), node(id)/nodes(ids), and another organization's objects answering null.
 */
let app: TestApp;
beforeAll(async () => {
  app = await createTestApp();
});
afterAll(() => app.close());

type Member = Awaited<ReturnType<typeof signUpMember>>;

async function createAccounts(m: Member, n: number, prefix = 'Acc'): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await app.rest('POST', `/v1/organizations/${m.organizationId}/accounts`, {
      body: { name: `${prefix} ${i}`, mode: 'SANDBOX' },
      headers: m.headers,
    });
    expect(r.status, r.text).toBe(201);
    ids.push(r.headers.get('location')!.split('/').pop()!);
  }
  return ids;
}

const ACCOUNTS = `query($org: ID!, $first: Int, $after: String, $last: Int, $before: String, $orderBy: CreationOrder, $status: [AccountStatus!]) {
  organization(id: $org) {
    accounts(first: $first, after: $after, last: $last, before: $before, orderBy: $orderBy, status: $status) {
      totalCount
      edges { cursor node { id name status } }
      pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    }
  }
}`;

interface AccountsPage {
  organization: {
    accounts: {
      totalCount: number;
      edges: { cursor: string; node: { id: string; name: string; status: string } }[];
      pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string; endCursor: string };
    };
  };
}

describe('connections', () => {
  test('an organization’s accounts: newest first, paged forwards and backwards, ordered, filtered, counted', async () => {
    const m = await signUpMember(app);
    const ids = await createAccounts(m, 5);
    const newest = [...ids].reverse();

    const p1 = await app.gql<AccountsPage>(ACCOUNTS, { org: m.organizationId, first: 2 }, m.headers);
    expect(p1.errors, JSON.stringify(p1.errors)).toBeUndefined();
    const c1 = p1.data!.organization.accounts;
    expect(c1.edges.map((e) => e.node.id)).toEqual(newest.slice(0, 2));
    expect(c1.totalCount).toBe(5);
    expect(c1.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: false });

    const p2 = await app.gql<AccountsPage>(ACCOUNTS, { org: m.organizationId, first: 2, after: c1.pageInfo.endCursor }, m.headers);
    const c2 = p2.data!.organization.accounts;
    expect(c2.edges.map((e) => e.node.id)).toEqual(newest.slice(2, 4));
    expect(c2.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: true });

    const p3 = await app.gql<AccountsPage>(ACCOUNTS, { org: m.organizationId, first: 2, after: c2.pageInfo.endCursor }, m.headers);
    expect(p3.data!.organization.accounts.edges.map((e) => e.node.id)).toEqual(newest.slice(4));
    expect(p3.data!.organization.accounts.pageInfo.hasNextPage).toBe(false);

    // Backwards from the third page's start: the two before it, in the same order.
    const back = await app.gql<AccountsPage>(ACCOUNTS, { org: m.organizationId, last: 2, before: c2.edges[1]!.cursor }, m.headers);
    expect(back.data!.organization.accounts.edges.map((e) => e.node.id)).toEqual(newest.slice(1, 3));
    expect(back.data!.organization.accounts.pageInfo).toMatchObject({ hasPreviousPage: true });

    const last = await app.gql<AccountsPage>(ACCOUNTS, { org: m.organizationId, last: 2 }, m.headers);
    expect(last.data!.organization.accounts.edges.map((e) => e.node.id)).toEqual(newest.slice(3));

    const oldest = await app.gql<AccountsPage>(ACCOUNTS, { org: m.organizationId, first: 3, orderBy: 'OLDEST_FIRST' }, m.headers);
    expect(oldest.data!.organization.accounts.edges.map((e) => e.node.id)).toEqual(ids.slice(0, 3));

    const f = await app.rest('POST', `/v1/accounts/${ids[1]}/freeze`, { body: { reason: 'review' }, headers: m.headers });
    expect(f.status, f.text).toBe(204);
    const frozen = await app.gql<AccountsPage>(ACCOUNTS, { org: m.organizationId, status: ['FROZEN'] }, m.headers);
    expect(frozen.data!.organization.accounts.edges.map((e) => e.node.id)).toEqual([ids[1]]);
    expect(frozen.data!.organization.accounts.totalCount).toBe(1);
  });

  test('a page size over the cap (500 on the connections REST lists read) or a foreign cursor is refused with a field error', async () => {
    const m = await signUpMember(app);
    const big = await app.gql(ACCOUNTS, { org: m.organizationId, first: 501 }, m.headers);
    expect(big.errors?.[0]?.extensions?.code).toBe('VALIDATION_FAILED');
    const bad = await app.gql(ACCOUNTS, { org: m.organizationId, first: 1, after: 'not-a-cursor' }, m.headers);
    expect(bad.errors?.[0]?.extensions?.code).toBe('VALIDATION_FAILED');
  });
});

describe('relations', () => {
  test('accounts with balances, holder and authorized applications; an API key sees only its accounts', async () => {
    const m = await signUpMember(app);
    const [a1, a2] = await createAccounts(m, 2);
    const k = await createApiKey(app, m, 'SANDBOX');
    const auth = await app.rest('POST', `/v1/organizations/${m.organizationId}/accounts/${a1}/authorize-application`, {
      body: { applicationId: k.applicationId },
      headers: m.headers,
    });
    expect(auth.status, auth.text).toBe(204);
    const q = `query($id: ID!) { account(id: $id) { id holder { id } balances { assetNetworkId available } authorizedApplications { id name }
      ledgerEntries(first: 5) { edges { node { id amount } } } } }`;
    const r = await app.gql<{ account: { authorizedApplications: { id: string }[]; balances: unknown[]; holder: null } }>(q, { id: a1 }, m.headers);
    expect(r.errors).toBeUndefined();
    expect(r.data!.account).toMatchObject({ id: a1, holder: null, balances: [], authorizedApplications: [{ id: k.applicationId }] });

    // The key's view of the organization's accounts through node(): its authorized account only.
    const n = await app.gql<{ nodes: ({ id: string } | null)[] }>(
      `query($ids: [ID!]!) { nodes(ids: $ids) { id ... on Account { name } } }`,
      { ids: [a1, a2] },
      k.headers,
    );
    expect(n.errors).toBeUndefined();
    expect(n.data!.nodes).toEqual([{ id: a1, name: 'Acc 0' }, null]);
  });
});

describe('node(id)', () => {
  test('refetches by the id REST shows; another organization’s id answers null, never data', async () => {
    const a = await signUpMember(app);
    const b = await signUpMember(app);
    const [accountA] = await createAccounts(a, 1);
    const q = `query($id: ID!) { node(id: $id) { __typename id ... on Account { name organizationId } } }`;
    const own = await app.gql<{ node: unknown }>(q, { id: accountA }, a.headers);
    expect(own.errors).toBeUndefined();
    expect(own.data!.node).toEqual({ __typename: 'Account', id: accountA, name: 'Acc 0', organizationId: a.organizationId });

    const other = await app.gql<{ node: unknown }>(q, { id: accountA }, b.headers);
    expect(other.errors).toBeUndefined();
    expect(other.data!.node).toBeNull();

    const unknown = await app.gql<{ node: unknown }>(q, { id: '0190a000-0000-7000-8000-000000000000' }, a.headers);
    expect(unknown.data!.node).toBeNull();
    const malformed = await app.gql<{ node: unknown }>(q, { id: 'nope' }, a.headers);
    expect(malformed.data!.node).toBeNull();

    const org = await app.gql<{ node: unknown }>(`query($id: ID!) { node(id: $id) { __typename id } }`, { id: a.organizationId }, a.headers);
    expect(org.data!.node).toEqual({ __typename: 'Organization', id: a.organizationId });
    const otherOrg = await app.gql<{ node: unknown }>(`query($id: ID!) { node(id: $id) { id } }`, { id: a.organizationId }, b.headers);
    expect(otherOrg.data!.node).toBeNull();

    const op = await createOperator(app);
    const asOperator = await app.gql<{ node: unknown }>(`query($id: ID!) { node(id: $id) { id } }`, { id: accountA }, op.headers);
    expect(asOperator.data!.node).toBeNull(); // accounts are not an operator's (as the account root field)
  });
});

describe('money relations', () => {
  test('transaction ↔ payment intent, participants → accounts, wallet → addresses; filters; another organization gets null', async () => {
    const catalog = await setupSandboxCatalog(app);
    const f = await setupIntegrator(app, catalog);
    const acc = await app.rest('POST', `/v1/organizations/${f.organizationId}/accounts`, { body: { name: 'Seller' }, headers: f.apiKeyHeaders });
    expect(acc.status, acc.text).toBe(201);
    const accountId = acc.headers.get('location')!.split('/').pop()!;
    const intentIds: string[] = [];
    for (const amount of ['1000', '5000']) {
      app.clock.advance(1000); // ids made from the service clock order by its milliseconds
      const pi = await app.rest('POST', `/v1/organizations/${f.organizationId}/payment-intents`, {
        headers: f.apiKeyHeaders,
        body: { assetNetworkId: catalog.assetNetworkId, amount, beneficiaryAccountId: accountId, walletId: f.walletId },
      });
      expect(pi.status, pi.text).toBe(201);
      intentIds.push(pi.headers.get('location')!.split('/').pop()!);
    }
    const q = `query($org: ID!, $min: String, $an: ID) { organization(id: $org) {
      transactions(first: 10, amountMin: $min, assetNetworkId: $an, status: [AWAITING_FUNDS]) {
        edges { node { id amount paymentIntent { id transaction { id } } participants { role account { id name } } } }
      }
      paymentIntents(first: 10) { edges { node { id } } }
      wallets(first: 5) { totalCount edges { node { id depositAddresses(first: 5) { totalCount edges { node { id address paymentIntentId wallet { id } } } } } } }
    } }`;
    type Tx = {
      id: string;
      amount: string;
      paymentIntent: { id: string; transaction: { id: string } };
      participants: { role: string; account: { id: string } | null }[];
    };
    const r = await app.gql<{ organization: { transactions: { edges: { node: Tx }[] }; paymentIntents: { edges: { node: { id: string } }[] }; wallets: any } }>(
      q,
      { org: f.organizationId, min: '2000', an: catalog.assetNetworkId },
      f.member.headers,
    );
    expect(r.errors, JSON.stringify(r.errors)).toBeUndefined();
    const o = r.data!.organization;
    expect(o.paymentIntents.edges.map((e) => e.node.id)).toEqual([...intentIds].reverse());
    expect(o.transactions.edges).toHaveLength(1); // amountMin filters the 1000 one out
    const tx = o.transactions.edges[0]!.node;
    expect(tx.amount).toBe('5000');
    expect(tx.paymentIntent.id).toBe(intentIds[1]);
    expect(tx.paymentIntent.transaction.id).toBe(tx.id);
    expect(tx.participants).toContainEqual({ role: 'BENEFICIARY', account: { id: accountId, name: 'Seller' } });
    expect(o.wallets.totalCount).toBe(1);
    expect(o.wallets.edges[0].node.depositAddresses.totalCount).toBe(2);
    expect(o.wallets.edges[0].node.depositAddresses.edges[0].node).toMatchObject({ paymentIntentId: intentIds[1], wallet: { id: f.walletId } });

    // The same ids through node(): the owner sees them, another organization (member or key) gets null.
    const nq = `query($ids: [ID!]!) { nodes(ids: $ids) { __typename id } }`;
    const ids = [tx.id, intentIds[1]!, f.walletId, accountId];
    const own = await app.gql<{ nodes: unknown[] }>(nq, { ids }, f.member.headers);
    expect(own.data!.nodes).toEqual([
      { __typename: 'Transaction', id: tx.id },
      { __typename: 'PaymentIntent', id: intentIds[1] },
      { __typename: 'Wallet', id: f.walletId },
      { __typename: 'Account', id: accountId },
    ]);
    const other = await signUpMember(app);
    const otherKey = await createApiKey(app, other, 'SANDBOX');
    for (const headers of [other.headers, otherKey.headers]) {
      const n = await app.gql<{ nodes: unknown[] }>(nq, { ids }, headers);
      expect(n.errors).toBeUndefined();
      expect(n.data!.nodes).toEqual([null, null, null, null]);
    }
    // A key of the same organization and mode but another application (its own environment): null, as transaction(id) answers 404.
    const sibling = await createApiKey(app, f.member, 'SANDBOX');
    const t2 = await app.gql<{ nodes: unknown[] }>(nq, { ids }, sibling.headers);
    expect(t2.errors).toBeUndefined();
    expect(t2.data!.nodes).toEqual([null, null, null, null]);
  });
});
