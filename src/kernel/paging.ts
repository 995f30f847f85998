import { isUuid } from '../ids';
import { z } from 'zod';
import { DomainError, fieldError, type FieldError } from '../errors';

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

/**
 * The operator searches that grow with history (SearchAuditLog, SearchLedgerEntriesAdmin; issue 22):
 * `total` counts at most TOTAL_CAP matches (an index walk of at most that many entries, whatever the
 * history), `totalExact` false when there are more; `nextCursor` continues after the page's last row
 * in the search's own order (keyset: an index walk from that row, as cheap at any depth), to pass as
 * `after` instead of a growing `skip`. docs/admin.md, docs/decisions.md "Flat with history (issue 22)".
 */
export const TOTAL_CAP = 1_000;

export interface SearchPage<T> extends Page<T> {
  /** False when more than TOTAL_CAP rows match: `total` is then TOTAL_CAP, a lower bound. */
  totalExact: boolean;
  /** The cursor of the next page (`after`), null on the last page. */
  nextCursor: string | null;
}

/** A position in a search's order (newest first): the sort time and the id of the row. */
export interface SearchCursor {
  at: Date;
  id: string;
}

/**
 * The checked paging of a search that offers both modes: `skip`/`take` (the spec's, bounded) or
 * `after` (a nextCursor: the id of the previous page's last row, as the keyset lists take it) and
 * `take`. `after` with a `skip` other than 0 is refused (400 naming skip); `locate` finds the row's
 * place in the search's order (null: no such row, 400 naming after).
 */
export async function parseSearchPaging(
  args: { skip?: number | null; take?: number | null; after?: string | null },
  locate: (id: string) => Promise<Date | null>,
): Promise<Paging & { after: SearchCursor | null }> {
  const paging = parsePaging(args);
  if (args.after == null) return { ...paging, after: null };
  if (paging.skip !== 0) throw fieldError('skip', 'must be 0 with after: a cursor continues where its page ended');
  const at = isUuid(args.after) ? await locate(args.after.toLowerCase()) : null;
  if (!at) throw fieldError('after', 'must be a nextCursor returned by this search');
  return { ...paging, after: { at, id: args.after.toLowerCase() } };
}

/** The page of `take` rows fetched with `take + 1`: the items, and the last one's id as nextCursor when there is more. */
export function searchPageOf<T extends { id: string }>(rows: T[], take: number): { items: T[]; nextCursor: string | null } {
  const items = rows.slice(0, take);
  return { items, nextCursor: rows.length > take ? items[items.length - 1]!.id : null };
}

/** A page of an operator search: `total` is the exact count of the rows matching the filters. */
export interface Page<T> {
  items: T[];
  skip: number;
  take: number;
  total: number;
}
