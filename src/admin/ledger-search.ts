import type { Context } from '../context';
import { Prisma } from '../generated/prisma/client';
import { fieldError } from '../errors';
import { isUuid } from '../ids';
import { amountToString, numericToAmount } from '../money';
import { parseSearchPaging, searchPageOf, TOTAL_CAP, type SearchPage } from '../kernel/paging';

/** One ledger entry with its ledger transaction and account, as SearchLedgerEntriesAdmin answers it. */
export interface LedgerEntryView {
  id: string;
  ledgerTransactionId: string;
  nature: string;
  organizationId: string | null;
  referenceType: string | null;
  referenceId: string | null;
  ledgerAccountId: string;
  accountKind: string;
  ownerId: string | null;
  assetNetworkId: string;
  direction: string;
  /** Decimal string of integer base units. */
  amount: string;
  pending: boolean;
  holdId: string | null;
  /** Decimal string (a bigint). */
  accountVersion: string;
  postedAt: Date;
  createdAt: Date;
}

export interface LedgerSearchFilter {
  assetNetworkId?: string | null;
  nature?: string | null;
  /** On the transaction's postedAt: inclusive. */
  from?: Date | null;
  /** On the transaction's postedAt: exclusive. */
  to?: Date | null;
  skip?: number | null;
  take?: number | null;
  /** A nextCursor of this search: the page after it (keyset), instead of skip. */
  after?: string | null;
}

type Row = Omit<LedgerEntryView, 'amount'> & { amount: string };

/**
 * SearchLedgerEntriesAdmin: entries joined with their transaction and account, newest first
 * (postedAt desc, then entry id desc): the ledger transactions walked backwards on their (postedAt,
 * id) index (or (nature, postedAt) with a nature), their entries joined, so a page costs skip + take
 * rows, not the history; `total` capped at TOTAL_CAP; `after` continues from a nextCursor (issue 22). Plain SQL with ::text casts, so NUMERIC(78,0)
 * amounts never pass through a double (docs/decisions.md "No relationJoins").
 */
export async function searchLedgerEntries(ctx: Context, filter: LedgerSearchFilter): Promise<SearchPage<LedgerEntryView>> {
  const conditions: Prisma.Sql[] = [];
  if (filter.assetNetworkId != null) {
    if (!isUuid(filter.assetNetworkId)) throw fieldError('assetNetworkId', 'must be a uuid');
    conditions.push(Prisma.sql`e."assetNetworkId" = ${filter.assetNetworkId.toLowerCase()}::uuid`);
  }
  if (filter.nature != null) {
    if (!filter.nature.length || filter.nature.length > 200) throw fieldError('nature', 'must be 1 to 200 characters');
    conditions.push(Prisma.sql`t."nature" = ${filter.nature}`);
  }
  if (filter.from && filter.to && filter.from.getTime() > filter.to.getTime()) throw fieldError('from', 'must not be after to');
  if (filter.from) conditions.push(Prisma.sql`t."postedAt" >= ${filter.from}`);
  if (filter.to) conditions.push(Prisma.sql`t."postedAt" < ${filter.to}`);
  const db = ctx.deps.db;
  const { skip, take, after } = await parseSearchPaging(filter, async (id) => {
    const [row] = await db.$queryRaw<{ postedAt: Date }[]>`
      SELECT t."postedAt" FROM "LedgerEntry" e JOIN "LedgerTransaction" t ON t."id" = e."ledgerTransactionId" WHERE e."id" = ${id}::uuid`;
    return row?.postedAt ?? null;
  });
  const where = conditions.length ? Prisma.sql`WHERE ${Prisma.join(conditions, ' AND ')}` : Prisma.empty;
  const page = [...conditions];
  if (after) page.push(Prisma.sql`t."postedAt" <= ${after.at} AND (t."postedAt" < ${after.at} OR e."id" < ${after.id}::uuid)`);
  const pageWhere = page.length ? Prisma.sql`WHERE ${Prisma.join(page, ' AND ')}` : Prisma.empty;
  const from = Prisma.sql`FROM "LedgerEntry" e JOIN "LedgerTransaction" t ON t."id" = e."ledgerTransactionId" JOIN "LedgerAccount" a ON a."id" = e."ledgerAccountId"`;

  const [rows, counted] = await db.$transaction([
    db.$queryRaw<Row[]>`
      SELECT e."id"::text AS "id", e."ledgerTransactionId"::text AS "ledgerTransactionId", t."nature", t."organizationId"::text AS "organizationId",
             t."referenceType", t."referenceId"::text AS "referenceId", e."ledgerAccountId"::text AS "ledgerAccountId", a."kind"::text AS "accountKind",
             a."ownerId"::text AS "ownerId", e."assetNetworkId"::text AS "assetNetworkId", e."direction"::text AS "direction", e."amount"::text AS "amount",
             e."pending", e."holdId"::text AS "holdId", e."accountVersion"::text AS "accountVersion", t."postedAt", e."createdAt"
      ${from} ${pageWhere}
      ORDER BY t."postedAt" DESC, e."id" DESC
      LIMIT ${take + 1} OFFSET ${skip}`,
    db.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS "n" FROM (SELECT 1 ${from} ${where} LIMIT ${TOTAL_CAP + 1}) x`,
  ]);
  const n = counted[0]!.n;
  const items = rows.map((r) => ({ ...r, amount: amountToString(numericToAmount(r.amount)) }));
  return { ...searchPageOf(items, take), skip, take, total: Math.min(n, TOTAL_CAP), totalExact: n <= TOTAL_CAP };
}
