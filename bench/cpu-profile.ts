import { readFileSync } from 'node:fs';

/**
 * Where the server's CPU goes per request (issue 22): reads a `.cpuprofile` written by
 * `node --cpu-prof` on the bench process (bench/run.ts, one REST scenario, BENCH_ROUNDS=1), keeps
 * the samples of the seconds where requests were being served (the load's window: seconds with at
 * least 30% of the busiest second's request samples), and splits them by layer: each sample goes
 * to the first rule below that its stack meets, from the leaf up. Prints a Markdown table of each
 * layer's share of the busy (non-idle) samples.
 *
 *   npx tsx bench/cpu-profile.ts /tmp/prof/CPU.<...>.0.001.cpuprofile
 *
 * Shares, not microseconds: V8 samples by wall time, so on a loaded machine a sample lands on the
 * stack the thread was on while it waited for a core; the shares hold, absolute times do not (the
 * bench prints the process's CPU time per request for those).
 */
interface CallFrame {
  functionName: string;
  url: string;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const profile = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const stacks = new Map<number, CallFrame[]>();
const stackOf = (id: number): CallFrame[] => {
  let s = stacks.get(id);
  if (!s) {
    s = [];
    for (let i: number | undefined = id; i !== undefined; i = parent.get(i)) s.push(byId.get(i)!.callFrame);
    stacks.set(id, s);
  }
  return s;
};

const writes = new Set(['writev', 'writeBuffer', 'writeUtf8String', 'writeLatin1String']);
/** Whole-stack rules first (what the leaf is doing), then the first frame's layer from the leaf up. */
const stackRules: [string, (s: CallFrame[]) => boolean][] = [
  ['socket write to PostgreSQL (writev)', (s) => writes.has(s[0]!.functionName) && s.some((f) => f.url.includes('/pg/lib/'))],
  ['socket write of the HTTP answer (writev)', (s) => writes.has(s[0]!.functionName)],
  ['garbage collector', (s) => s[0]!.functionName === '(garbage collector)'],
  ['idle', (s) => s[0]!.functionName === '(idle)'],
  ['background: pg-boss job polling', (s) => s.some((f) => f.url.includes('pg-boss'))],
  ['pg connection set-up (SCRAM)', (s) => s.some((f) => f.functionName === 'deriveKey')],
];
const frameRules: [string, (f: CallFrame) => boolean][] = [
  ['API key authentication (src/auth)', (f) => f.url.includes('/src/auth/')],
  ['Prisma client (query compiler, interpreter, result mapping)', (f) => /@prisma\/client|\/generated\/prisma|^wasm:/.test(f.url)],
  ['Prisma pg adapter', (f) => f.url.includes('@prisma/adapter-pg')],
  ['pg driver (JS: protocol, pool, parsing)', (f) => /node_modules\/(pg|pg-pool|pg-protocol|pg-types)\//.test(f.url)],
  ['Pothos plugins (scope-auth, validation, prisma)', (f) => f.url.includes('@pothos/') || f.url.includes('/src/builder.ts')],
  ['GraphQL executor (graphql-tools, graphql-js)', (f) => /@graphql-tools\/executor|node_modules\/graphql\//.test(f.url)],
  ['REST adapter (rest/adapter.ts)', (f) => f.url.includes('/rest/adapter.ts')],
  ['resolvers, services, app plugins (src/*)', (f) => f.url.includes('/src/') && !f.url.includes('node_modules')],
  ['envelop, yoga, whatwg-node (Request/Response)', (f) => /node_modules\/(@envelop|graphql-yoga|@graphql-yoga|@whatwg-node)/.test(f.url)],
  ['zod', (f) => f.url.includes('node_modules/zod')],
  ['logging (pino)', (f) => f.url.includes('node_modules/pino')],
  ['Node HTTP server, streams, events, timers', (f) => f.url.startsWith('node:')],
];
const layerOf = (s: CallFrame[]): string => {
  for (const [name, rule] of stackRules) if (rule(s)) return name;
  for (const f of s) for (const [name, rule] of frameRules) if (rule(f)) return name;
  return 'other native (microtasks, program)';
};

// The load's window.
let t = 0;
const times = profile.timeDeltas.map((d) => (t += d));
const perSecond = new Map<number, number>();
profile.samples.forEach((id, i) => {
  if (stackOf(id).some((f) => f.functionName === 'parserOnIncoming'))
    perSecond.set(Math.floor(times[i]! / 1e6), (perSecond.get(Math.floor(times[i]! / 1e6)) ?? 0) + 1);
});
const busiest = Math.max(...perSecond.values());
const hot = [...perSecond].filter(([, n]) => n >= busiest * 0.3).map(([s]) => s);
const [from, to] = [Math.min(...hot), Math.max(...hot) + 1];

const layers = new Map<string, number>();
profile.samples.forEach((id, i) => {
  if (times[i]! < from * 1e6 || times[i]! >= to * 1e6) return;
  const layer = layerOf(stackOf(id));
  layers.set(layer, (layers.get(layer) ?? 0) + profile.timeDeltas[i]!);
});
const busy = [...layers].filter(([k]) => k !== 'idle').reduce((a, [, v]) => a + v, 0);
console.log(`window: seconds ${from}-${to} of the profile, busy ${(busy / 1e6).toFixed(2)} s\n`);
console.log('| layer | share of busy samples |\n| --- | ---: |');
for (const [k, v] of [...layers].filter(([k]) => k !== 'idle').sort((a, b) => b[1] - a[1])) console.log(`| ${k} | ${((100 * v) / busy).toFixed(1)}% |`);
