import { fieldError } from './errors';
import { isUuid } from './ids';

/**
 * Keyset paging of the lists (docs/decisions.md, "Paging"): `limit` 1-500 (default 100) and
 * `after`, the id of the previous page's last item (ids are UUIDv7: id order is creation order).
 */
export interface PageArgs {
  limit?: number | null;
  after?: string | null;
}

/** The checked limit and the Prisma clauses of one page: `where` on the id, `take` one more row than the page. */
export function pageQuery(args: PageArgs): { limit: number; where: { id?: { gt: string } }; take: number } {
  const limit = args.limit ?? 100;
  if (!Number.isInteger(limit) || limit < 1 || limit > 500) throw fieldError('limit', 'must be an integer from 1 to 500');
  if (args.after != null && !isUuid(args.after)) throw fieldError('after', 'must be a cursor returned as nextCursor');
  return { limit, where: args.after ? { id: { gt: args.after } } : {}, take: limit + 1 };
}

/** The page of `limit` rows fetched with `take: limit + 1`: nextCursor is set when there is more. */
export function toPage<T extends { id: string }>(rows: T[], limit: number): { items: T[]; nextCursor: string | null } {
  const items = rows.slice(0, limit);
  return { items, nextCursor: rows.length > limit ? items[items.length - 1]!.id : null };
}
