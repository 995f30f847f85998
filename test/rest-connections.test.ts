import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createApiKey, createTestApp, signUpMember, type TestApp } from './harness';

/**
 * Issue 19, one paging style: a REST list route reads the graph's connection (rest/routes.ts,
 * `success.page`). For the same page, the REST body is the connection's nodes and the Link
 * header's `after` is its pageInfo.endCursor (the id of the page's last item), so a REST cursor
 * and a GraphQL cursor are interchangeable.
 */

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp();
});
afterAll(() => app.close());

type Page = { nodes: { id: string; name: string; status: string }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } };
const ACCOUNTS = `query($org: ID!, $first: Int, $after: String) {
  organization(id: $org) { accounts(first: $first, after: $after, orderBy: OLDEST_FIRST) { nodes { id name status } pageInfo { hasNextPage endCursor } } }
}`;

const afterOf = (link: string | null) => (link ? new URL(/^<([^>]+)>; rel="next"$/.exec(link)![1]!, 'http://x').searchParams.get('after') : null);

describe('a REST list and its GraphQL connection', () => {
  test('give the same items and the same cursor for every page, and take each other’s cursors', async () => {
    const m = await signUpMember(app);
    for (let i = 0; i < 5; i++) {
      const r = await app.rest('POST', `/v1/organizations/${m.organizationId}/accounts`, { body: { name: `A${i}` }, headers: m.headers });
      expect(r.status, r.text).toBe(201);
    }
    let restAfter: string | null = null;
    let gqlAfter: string | null = null;
    const seen: string[] = [];
    for (let pageNo = 0; pageNo < 3; pageNo++) {
      const rest = await app.rest('GET', `/v1/organizations/${m.organizationId}/accounts?limit=2${restAfter ? `&after=${restAfter}` : ''}`, {
        headers: m.headers,
      });
      expect(rest.status, rest.text).toBe(200);
      const g = await app.gql<{ organization: { accounts: Page } }>(ACCOUNTS, { org: m.organizationId, first: 2, after: gqlAfter }, m.headers);
      expect(g.errors).toBeUndefined();
      const page = g.data!.organization.accounts;
      expect(rest.body.map((a: { id: string; name: string; status: string }) => ({ id: a.id, name: a.name, status: a.status }))).toEqual(page.nodes);
      const next = afterOf(rest.headers.get('link'));
      expect(next).toBe(page.pageInfo.hasNextPage ? page.pageInfo.endCursor : null);
      seen.push(...page.nodes.map((n) => n.id));
      // The next page: REST follows GraphQL's cursor and GraphQL REST's (the same id).
      restAfter = page.pageInfo.endCursor;
      gqlAfter = next;
      if (!next) break;
    }
    expect(seen).toHaveLength(5);
    expect(new Set(seen).size).toBe(5);
    expect([...seen].sort()).toEqual(seen); // oldest first, as REST always answered
  });

  test('an API key reads the same list through REST and GraphQL (its authorized accounts only); REST limit up to 500', async () => {
    const m = await signUpMember(app);
    const k = await createApiKey(app, m);
    const own = await app.rest('POST', `/v1/organizations/${m.organizationId}/accounts`, { body: { name: 'mine' }, headers: k.headers });
    expect(own.status, own.text).toBe(201);
    const other = await app.rest('POST', `/v1/organizations/${m.organizationId}/accounts`, { body: { name: 'not authorized' }, headers: m.headers });
    expect(other.status, other.text).toBe(201);
    const rest = await app.rest('GET', `/v1/organizations/${m.organizationId}/accounts?limit=500`, { headers: k.headers });
    expect(rest.status, rest.text).toBe(200);
    const g = await app.gql<{ organization: { accounts: Page } }>(ACCOUNTS, { org: m.organizationId, first: 500 }, k.headers);
    expect(g.errors).toBeUndefined();
    expect(rest.body.map((a: { id: string }) => a.id)).toEqual(g.data!.organization.accounts.nodes.map((n) => n.id));
    expect(rest.body.map((a: { name: string }) => a.name)).toEqual(['mine']);
    // REST's own bounds and cursor format are unchanged, naming the REST parameter.
    for (const [q, field] of [
      ['limit=0', 'limit'],
      ['limit=501', 'limit'],
      ['after=nope', 'after'],
    ] as const) {
      const r = await app.rest('GET', `/v1/organizations/${m.organizationId}/accounts?${q}`, { headers: k.headers });
      expect(r.status, q).toBe(400);
      expect(r.body.errors?.[0]?.field, q).toBe(field);
    }
  });
});
