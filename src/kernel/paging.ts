import { isUuid } from '../ids';
import { z } from 'zod';
import { DomainError, fieldError, type FieldError } from '../errors';

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

/**
 * Offset paging of the operator searches (SearchAuditLog, SearchLedgerEntriesAdmin): the one place
 * where the bounds and defaults of `skip` and `take` live (docs/admin.md).
 *
 * - skip: default 0, 0..100000. Deep offsets are slow (PostgreSQL reads and drops every skipped
 *   row); past 100000 narrow the filters (a time window) instead. A keyset cursor is the alternative
 *   if operators ever need to walk further.
 * - take: default 50, 1..500.
 *
 * Anything else answers 400 VALIDATION_FAILED with a field error naming the parameter.
 */
export const SKIP_DEFAULT = 0;
export const SKIP_MAX = 100_000;
export const TAKE_DEFAULT = 50;
export const TAKE_MAX = 500;

export const pagingInput = z.object({
  skip: z
    .number()
    .int(`must be an integer from 0 to ${SKIP_MAX}`)
    .min(0, `must be an integer from 0 to ${SKIP_MAX}`)
    .max(SKIP_MAX, `must be an integer from 0 to ${SKIP_MAX}`)
    .nullish(),
  take: z
    .number()
    .int(`must be an integer from 1 to ${TAKE_MAX}`)
    .min(1, `must be an integer from 1 to ${TAKE_MAX}`)
    .max(TAKE_MAX, `must be an integer from 1 to ${TAKE_MAX}`)
    .nullish(),
});

export interface Paging {
  skip: number;
  take: number;
}

/** The page asked for, defaults applied; a 400 naming each bad parameter otherwise. */
export function parsePaging(args: { skip?: number | null; take?: number | null }): Paging {
  const result = pagingInput.safeParse({ skip: args.skip ?? null, take: args.take ?? null });
  if (!result.success) {
    const fieldErrors: FieldError[] = result.error.issues.map((i) => ({ field: String(i.path[0]), message: i.message }));
    throw new DomainError('VALIDATION_FAILED', fieldErrors.map((e) => `${e.field}: ${e.message}`).join('; '), { fieldErrors });
  }
  return { skip: result.data.skip ?? SKIP_DEFAULT, take: result.data.take ?? TAKE_DEFAULT };
}

/** A page of an operator search: `total` is the exact count of the rows matching the filters. */
export interface Page<T> {
  items: T[];
  skip: number;
  take: number;
  total: number;
}
