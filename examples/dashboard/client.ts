/**
 * A dashboard's GraphQL calls, typed by the generated documents (`npm run codegen`): the variables
 * a document needs and the shape of its answer come from schema.graphql, so a field renamed or
 * removed in the schema fails `npm run typecheck` here, not in a browser. No client library: one
 * `fetch` (GraphQL over HTTP, POST /graphql). Run it against a server:
 *
 *   BASE_URL=http://localhost:8080 TOKEN=<accessToken> ORGANIZATION_ID=… npx tsx examples/dashboard/client.ts
 */
import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { print } from 'graphql';
import { TransactionsWithSettlementsDocument, type TransactionsWithSettlementsQuery } from './generated/graphql';

/** One GraphQL request: the answer's data, typed by the document; a GraphQL error throws with its code. */
export async function request<Result, Variables>(
  endpoint: { url: string; headers: Record<string, string> },
  document: TypedDocumentNode<Result, Variables>,
  variables: Variables,
): Promise<Result> {
  const response = await fetch(`${endpoint.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json', ...endpoint.headers },
    body: JSON.stringify({ query: print(document), variables }),
  });
  const body = (await response.json()) as { data?: Result | null; errors?: { message: string; extensions?: { code?: string } }[] };
  if (body.errors?.length) throw new Error(`${body.errors[0]!.extensions?.code ?? 'ERROR'}: ${body.errors[0]!.message}`);
  return body.data!;
}

type TransactionRow = NonNullable<TransactionsWithSettlementsQuery['organization']>['transactions']['edges'][number]['node'];

/** What executed settlements sent to each account (that the caller may see), summed per account (amounts: decimal strings of base units). */
export function allocatedByAccount(transactions: TransactionRow[]): Map<string, { name: string; allocated: bigint }> {
  const totals = new Map<string, { name: string; allocated: bigint }>();
  for (const t of transactions)
    for (const s of t.settlements)
      if (s.status === 'EXECUTED')
        for (const a of s.allocations) {
          if (!a.account) continue;
          const total = totals.get(a.account.id) ?? { name: a.account.name, allocated: 0n };
          total.allocated += BigInt(a.amount);
          totals.set(a.account.id, total);
        }
  return totals;
}

/** Every transaction of the organization, page after page (pageInfo.endCursor), and what its settlements paid to each account. */
export async function main(endpoint: { url: string; headers: Record<string, string> }, organizationId: string) {
  const transactions: TransactionRow[] = [];
  let after: string | null = null;
  do {
    const page: TransactionsWithSettlementsQuery = await request(endpoint, TransactionsWithSettlementsDocument, { organizationId, after });
    if (!page.organization) throw new Error(`no organization ${organizationId}`);
    const { edges, pageInfo } = page.organization.transactions;
    transactions.push(...edges.map((e) => e.node));
    after = pageInfo.hasNextPage ? (pageInfo.endCursor ?? null) : null;
  } while (after);
  return [...allocatedByAccount(transactions)].map(([id, { name, allocated }]) => ({ id, name, allocated: allocated.toString() }));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const endpoint = { url: process.env.BASE_URL ?? 'http://localhost:8080', headers: { authorization: `Bearer ${process.env.TOKEN}` } };
  console.log(await main(endpoint, process.env.ORGANIZATION_ID!));
}
