import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

/**
 * Compares two V8 heap snapshots without a browser (issue 22, point 3): `npx tsx
 * bench/memory-heapsnapshot.ts <earlier.heapsnapshot> <later.heapsnapshot>` (the two files
 * `BENCH_MEMORY_HEAPSNAPSHOT=1 npm run bench:memory` writes to DATA_DIR, after 60 s and at the end).
 * A snapshot holds only live objects (V8 collects before writing it), so the totals are the live
 * heap: a leak shows as a total and a constructor (or a string family) that grow with the
 * operations; the collector's sizing does not show at all. Prints each snapshot's live total, the
 * (type, constructor) pairs that grew and shrank most by self size, and the SQL texts held (a
 * statement text per list length would grow here). Large snapshots need memory: run it with
 * NODE_OPTIONS=--max-old-space-size=4096 for heaps of several hundred MiB.
 */
interface Group {
  count: number;
  bytes: number;
}
interface Summary {
  file: string;
  nodes: number;
  bytes: number;
  groups: Map<string, Group>;
  sql: Group;
  sqlWithList: Group;
}

const STRING_TYPES = new Set(['string', 'concatenated string', 'sliced string']);

function summarize(file: string): Summary {
  const snap = JSON.parse(readFileSync(file, 'utf8')) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
    nodes: number[];
    strings: string[];
  };
  const fields = snap.snapshot.meta.node_fields;
  const types = snap.snapshot.meta.node_types[0];
  const width = fields.length;
  const [iType, iName, iSize] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f)) as [number, number, number];
  const groups = new Map<string, Group>();
  const add = (g: Group, size: number) => {
    g.count++;
    g.bytes += size;
  };
  const s: Summary = { file, nodes: snap.nodes.length / width, bytes: 0, groups, sql: { count: 0, bytes: 0 }, sqlWithList: { count: 0, bytes: 0 } };
  for (let i = 0; i < snap.nodes.length; i += width) {
    const type = types[snap.nodes[i + iType]!]!;
    const name = snap.strings[snap.nodes[i + iName]!]!;
    const size = snap.nodes[i + iSize]!;
    s.bytes += size;
    // Strings are grouped by type only (their name is their text); objects by constructor.
    const key = `${type}: ${STRING_TYPES.has(type) ? '' : name.slice(0, 60)}`;
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { count: 0, bytes: 0 }));
    add(g, size);
    if (STRING_TYPES.has(type) && /^\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b/.test(name)) {
      add(s.sql, size);
      if (/\bIN \(\$\d+,/.test(name)) add(s.sqlWithList, size);
    }
  }
  return s;
}

const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(2);
const [a, b] = process.argv.slice(2).map(summarize);
if (!a || !b) throw new Error('usage: tsx bench/memory-heapsnapshot.ts <earlier.heapsnapshot> <later.heapsnapshot>');
for (const s of [a, b])
  console.log(
    `${basename(s.file)}: ${s.nodes} objects, live ${mib(s.bytes)} MiB; SQL texts ${s.sql.count} (${mib(s.sql.bytes)} MiB), of which with a parameter list ${s.sqlWithList.count} (${mib(s.sqlWithList.bytes)} MiB)`,
  );
console.log(`live heap ${mib(a.bytes)} -> ${mib(b.bytes)} MiB (${(b.bytes / a.bytes).toFixed(3)}x)`);
const diff = [...new Set([...a.groups.keys(), ...b.groups.keys()])].map((k) => {
  const x = a.groups.get(k) ?? { count: 0, bytes: 0 };
  const y = b.groups.get(k) ?? { count: 0, bytes: 0 };
  return { k, bytes: y.bytes - x.bytes, count: y.count - x.count, from: x.count, to: y.count };
});
diff.sort((p, q) => q.bytes - p.bytes);
const line = (d: (typeof diff)[number]) =>
  `  ${(d.bytes / 1024).toFixed(0).padStart(9)} KiB ${String(d.count).padStart(8)} objects (${d.from} -> ${d.to})  ${d.k}`;
console.log('grew most (self size):');
for (const d of diff.slice(0, 15)) console.log(line(d));
console.log('shrank most:');
for (const d of diff.slice(-5).reverse()) console.log(line(d));
