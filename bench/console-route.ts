// npx tsx bench/console-route.ts — what the operator console's route costs a REST request, in
// isolation (issue 23, point 5): the pages plugin's onRequest (the only request-path code the console
// added) run on `GET /v1/accounts/{id}` with CONSOLE=on and CONSOLE=off, interleaved rounds of a
// million calls each, CPU time per call. `npm run bench` measures the whole REST read
// (rest-read-console, rest-read-no-console); this one is not disturbed by the load of a shared machine.
import { loadConfig } from '../src/config';
import { pagesPlugin } from '../src/pages/pages';

const CALLS = 1_000_000;
const ROUNDS = 7;
const base = loadConfig({ NODE_ENV: 'production', LOG_LEVEL: 'silent' });
type OnRequest = (p: { request: Request; url: URL; endResponse: (r: Response) => void }) => unknown;
const plugins = {
  on: pagesPlugin({ ...base, CONSOLE: 'on' }).onRequest as OnRequest,
  off: pagesPlugin({ ...base, CONSOLE: 'off' }).onRequest as OnRequest,
};
const request = new Request('http://127.0.0.1/v1/accounts/01a21a13-0640-7d67-8ac0-ea107ba71c66', { headers: { 'x-api-key': 'k' } });
const url = new URL(request.url);
const endResponse = () => {
  throw new Error('the pages plugin answered a REST request');
};

function run(onRequest: OnRequest): number {
  const t0 = process.cpuUsage();
  for (let i = 0; i < CALLS; i++) onRequest({ request, url, endResponse });
  const t = process.cpuUsage(t0);
  return ((t.user + t.system) * 1000) / CALLS; // ns per call
}

run(plugins.on);
run(plugins.off); // warm-up
const rows: { on: number; off: number }[] = [];
for (let r = 0; r < ROUNDS; r++) {
  const first = r % 2 === 0 ? 'on' : 'off';
  const a = run(plugins[first]);
  const b = run(plugins[first === 'on' ? 'off' : 'on']);
  rows.push(first === 'on' ? { on: a, off: b } : { on: b, off: a });
}
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
for (const [i, r] of rows.entries()) console.log(`round ${i + 1}: console on ${r.on.toFixed(1)} ns, off ${r.off.toFixed(1)} ns per call`);
console.log(
  `median: console on ${median(rows.map((r) => r.on)).toFixed(1)} ns, off ${median(rows.map((r) => r.off)).toFixed(1)} ns; ` +
    `difference ${median(rows.map((r) => r.on - r.off)).toFixed(1)} ns per request`,
);
