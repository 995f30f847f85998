/**
 * A per-process memory of rows whose remembered columns never change once written (a network's kind,
 * an asset-network's network; issue 22: read on hot paths such as every sandbox send, mine and
 * withdrawal request). `get` answers the row remembered under `key`, or reads it with `load`: a row
 * found is remembered, a missing one (null) is read again next time. Bounded: at `max` entries the
 * memory is emptied and fills again. Never for a column that can change (a status): read those in
 * the transaction that relies on them.
 */
export function immutableRows<T>(max = 1000) {
  const rows = new Map<string, T>();
  return {
    async get(key: string, load: () => Promise<T | null>): Promise<T | null> {
      const hit = rows.get(key);
      if (hit !== undefined) return hit;
      const found = await load();
      if (found !== null) {
        if (rows.size >= max) rows.clear();
        rows.set(key, found);
      }
      return found;
    },
  };
}
