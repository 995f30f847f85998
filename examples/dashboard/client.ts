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
import { AccountsListDocument, TransactionsWithSettlementsDocument, type AccountsListQuery, type TransactionsWithSettlementsQuery } from './generated/graphql';

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

type TransactionRow = TransactionsWithSettlementsQuery['transactions']['items'][number];

/** What a settlement sent to each account, summed per account over a page (amounts: decimal strings of base units). */
export function allocatedByAccount(transactions: TransactionRow[]): Map<string, bigint> {
  const totals = new Map<string, bigint>();
  for (const t of transactions)
    for (const s of t.settlements)
      if (s.status === 'EXECUTED') for (const a of s.allocations) totals.set(a.accountId, (totals.get(a.accountId) ?? 0n) + BigInt(a.amount));
  return totals;
}

/** Every account of the organization, page after page, and what the first page of transactions allocated to each. */
export async function main(endpoint: { url: string; headers: Record<string, string> }, organizationId: string) {
  const accounts: { id: string; name: string; status: string }[] = [];
  let after: string | null = null;
  do {
    const page: AccountsListQuery = await request(endpoint, AccountsListDocument, { organizationId, after });
    accounts.push(...page.accounts.items);
    after = page.accounts.nextCursor ?? null;
  } while (after);
  const { transactions } = await request(endpoint, TransactionsWithSettlementsDocument, { organizationId });
  const allocated = allocatedByAccount(transactions.items);
  return accounts.map((a) => ({ ...a, allocated: (allocated.get(a.id) ?? 0n).toString() }));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const endpoint = { url: process.env.BASE_URL ?? 'http://localhost:8080', headers: { authorization: `Bearer ${process.env.TOKEN}` } };
  console.log(await main(endpoint, process.env.ORGANIZATION_ID!));
}
