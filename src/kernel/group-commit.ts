/**
 * Group commit of independent operations (issue 22): callers submit items; while a group is being
 * written, the items that arrive wait and go together in the next group, one database transaction
 * for all of them (as PostgreSQL groups the WAL flushes of concurrent commits, and as
 * createLedgerBatcher groups postings). No timer: an item that finds a free slot is written at once,
 * alone, so a quiet service adds no latency; under load the groups grow by themselves. With
 * `gatherTurn`, a free slot waits one turn of the event loop (setImmediate) first, so the items
 * submitted in the same turn (the requests parsed from one read of the sockets) share a group.
 *
 * `write(items)` writes a group in one transaction and answers one result per item. When it throws
 * for a group of several (a constraint one item breaks, a deadlock), nothing of the group committed:
 * each item is written again alone, in its own transaction, and only the one that fails alone gets
 * its error. Each caller's promise settles after its group's commit.
 *
 * `stats`: groups written, items, groups retried item by item, the largest group, and the time the
 * items spent waiting for a slot and in their group's write (milliseconds, summed over the items:
 * divided by `items`, the mean of each).
 */
export interface GroupCommit<I, R> {
  submit(item: I): Promise<R>;
  readonly stats: { groups: number; items: number; isolated: number; largest: number; queuedMs: number; writeMs: number };
}

export function createGroupCommit<I, R>(opts: {
  maxGroup: number;
  concurrency: number;
  write: (items: I[]) => Promise<R[]>;
  /** Wait one turn of the event loop before a free slot takes what waits (default false: at once). */
  gatherTurn?: boolean;
}): GroupCommit<I, R> {
  type Waiting = { item: I; at: number; resolve: (r: R) => void; reject: (e: unknown) => void };
  let queue: Waiting[] = [];
  let inFlight = 0;
  let scheduled = false;
  const stats = { groups: 0, items: 0, isolated: 0, largest: 0, queuedMs: 0, writeMs: 0 };

  async function run(group: Waiting[]): Promise<void> {
    const start = performance.now();
    stats.groups++;
    stats.items += group.length;
    stats.largest = Math.max(stats.largest, group.length);
    for (const w of group) stats.queuedMs += start - w.at;
    try {
      const results = await opts.write(group.map((w) => w.item));
      stats.writeMs += (performance.now() - start) * group.length;
      group.forEach((w, i) => w.resolve(results[i]!));
    } catch (e) {
      if (group.length === 1) {
        group[0]!.reject(e);
        return;
      }
      stats.isolated++;
      for (const w of group) {
        try {
          w.resolve((await opts.write([w.item]))[0]!);
        } catch (e1) {
          w.reject(e1);
        }
      }
    }
  }

  function flush(): void {
    scheduled = false;
    while (queue.length && inFlight < opts.concurrency) {
      // The waiting items spread over the free slots.
      const size = Math.min(opts.maxGroup, Math.ceil(queue.length / (opts.concurrency - inFlight)));
      const group = queue.slice(0, size);
      queue = queue.slice(size);
      inFlight++;
      void run(group).finally(() => {
        inFlight--;
        if (queue.length) next();
      });
    }
  }

  function next(): void {
    if (!opts.gatherTurn) return flush();
    if (scheduled) return;
    scheduled = true;
    setImmediate(flush);
  }

  return {
    stats,
    submit(item) {
      return new Promise<R>((resolve, reject) => {
        queue.push({ item, at: performance.now(), resolve, reject });
        next();
      });
    },
  };
}
