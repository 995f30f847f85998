import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The webhook receivers of the bench, run as their own process by bench/webhooks.ts so their CPU
 * is not charged to the service's event loop: N plain HTTP servers on 127.0.0.1 that answer 200 at
 * once and record, for each request, its X-Webhook-Delivery-Id and arrival time (Date.now(), the
 * same wall clock as the service's commit times: both processes run on this machine).
 *
 * argv[2]: N. Talks to the parent over IPC:
 * - sends `{ type: 'ready', urls }` once listening;
 * - `{ type: 'count' }` → `{ type: 'count', received }` (requests so far, since the last collect);
 * - `{ type: 'collect' }` → `{ type: 'records', ids, at, cpuMicros }`, then forgets them;
 * - `{ type: 'close' }` → closes the servers and exits.
 */
export type ReceiverRequest = { type: 'count' } | { type: 'collect' } | { type: 'close' };
export type ReceiverMessage =
  { type: 'ready'; urls: string[] } | { type: 'count'; received: number } | { type: 'records'; ids: string[]; at: number[]; cpuMicros: number };

const n = Number(process.argv[2] ?? 4);
if (!process.send) throw new Error('bench/receivers.ts runs as a child process with an IPC channel');
const send = (m: ReceiverMessage) => process.send!(m);

let ids: string[] = [];
let at: number[] = [];
const servers: Server[] = [];
for (let i = 0; i < n; i++) {
  const server = createServer((req, res) => {
    ids.push(String(req.headers['x-webhook-delivery-id'] ?? ''));
    at.push(Date.now());
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
      res.end('ok');
    });
  });
  // The sender keeps connections alive for 30 s; do not close them under it between bursts.
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  servers.push(server);
}

send({ type: 'ready', urls: servers.map((s) => `http://127.0.0.1:${(s.address() as AddressInfo).port}/hooks`) });

process.on('message', (m: ReceiverRequest) => {
  if (m.type === 'count') send({ type: 'count', received: ids.length });
  else if (m.type === 'collect') {
    const cpu = process.cpuUsage();
    send({ type: 'records', ids, at, cpuMicros: cpu.user + cpu.system });
    ids = [];
    at = [];
  } else if (m.type === 'close') {
    for (const s of servers) s.closeAllConnections();
    void Promise.all(servers.map((s) => new Promise((ok) => s.close(ok)))).then(() => process.exit(0));
  }
});
// The parent went away: do not linger.
process.on('disconnect', () => process.exit(0));
