/**
 * The parameters of a set-based statement (issue 22: `unnest($1::uuid[], $2::text[], …)`): one array
 * per getter, each the getter applied to every item, in the items' order, so row i of the unnest is
 * item i. `columns(items, (x) => x.id, (x) => x.name)` is `[items.map((x) => x.id), items.map((x) => x.name)]`.
 */
export function columns<I, const G extends readonly ((item: I) => unknown)[]>(
  items: readonly I[],
  ...getters: G
): { -readonly [K in keyof G]: ReturnType<G[K]>[] } {
  return getters.map((f) => items.map(f)) as { -readonly [K in keyof G]: ReturnType<G[K]>[] };
}
