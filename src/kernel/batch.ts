import type { Db } from '../db/prisma';

/**
 * Batches the loads of one tick into one query per database client: a DataLoader without a cache.
 * GraphQL resolves the same field of a list's items one after the other in the same tick, so the
 * `load(db, key)` calls of a page's 50 items become one `loadMany(db, keys)` (`WHERE key IN (…)`)
 * instead of 50 queries (docs/graphql.md, "No N+1"). Keys are grouped per client (`db`: the
 * service's client, or an interactive transaction), so a batch never crosses a transaction. Each
 * caller gets the rows of its key (`empty()` when none) or the batch's error.
 */
export function batchLoader<K, V>(loadMany: (db: Db, keys: K[]) => Promise<Map<K, V>>, empty: () => V): (db: Db, key: K) => Promise<V> {
  type Waiter = { resolve: (v: V) => void; reject: (e: unknown) => void };
  const pending = new WeakMap<Db, Map<K, Waiter[]>>();
  const run = async (db: Db, waiters: Map<K, Waiter[]>) => {
    pending.delete(db);
    try {
      const found = await loadMany(db, [...waiters.keys()]);
      for (const [key, list] of waiters) for (const w of list) w.resolve(found.get(key) ?? empty());
    } catch (e) {
      for (const list of waiters.values()) for (const w of list) w.reject(e);
    }
  };
  return (db, key) =>
    new Promise<V>((resolve, reject) => {
      let waiters = pending.get(db);
      if (!waiters) {
        const batch = (waiters = new Map());
        pending.set(db, batch);
        // After the promises resolved in this tick, as DataLoader schedules: siblings resolved
        // asynchronously one level up still join the batch.
        void Promise.resolve().then(() => process.nextTick(() => void run(db, batch)));
      }
      const list = waiters.get(key);
      if (list) list.push({ resolve, reject });
      else waiters.set(key, [{ resolve, reject }]);
    });
}

/** Rows grouped by a key (the input of a batch loader's answer), in the order given. */
export function groupBy<K, T>(rows: T[], keyOf: (row: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>();
  for (const row of rows) {
    const key = keyOf(row);
    const group = groups.get(key);
    if (group) group.push(row);
    else groups.set(key, [row]);
  }
  return groups;
}
