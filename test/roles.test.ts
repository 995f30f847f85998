import { afterAll, describe, expect, inject, test } from 'vitest';
import { request } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { createPrisma } from '../src/db/prisma';
import { setupIntegrator, setupSandboxCatalog } from './money-helpers';
import { checkLedgerInvariants } from './ledger-invariants';
import { cloneTemplateDatabase, ERROR_LEVEL, pollUntil, runCommand, serviceEnv, startService, type ServiceProcess } from './process-harness';

/**
 * The process roles (issue 20): `npm run start:api` (HTTP and websockets, jobs sent, never worked)
 * and `npm run start:worker` (the job runner; /healthz and /readyz on its own port), each stopped
 * gracefully by SIGTERM or SIGINT: websockets closed with 1001, a request in flight answered, jobs
 * handed back, exit 0, nothing logged at error.
 */
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});
/**
 * A process told to stop, within SHUTDOWN_DELAY_MS: /readyz answers 503 (with Connection: close, so
 * the client reconnects elsewhere) while /healthz still answers 200.
 */
async function expectStopping(svc: { rest: ServiceProcess['rest'] }): Promise<void> {
  const notReady = await pollUntil(
    '/readyz 503',
    () => svc.rest('GET', '/readyz'),
    (r) => r.status === 503,
    2_500,
    20,
  );
  expect(notReady.body).toEqual({ status: 'stopping' });
  expect(notReady.headers.get('connection')).toBe('close');
  expect((await svc.rest('GET', '/healthz')).status).toBe(200);
}
const idOf = (r: { headers: Headers }) => r.headers.get('location')!.split('/').pop()!;
const ownerUrlOf = (serviceUrl: string) => {
  const u = new URL(inject('serverUrl'));
  u.pathname = new URL(serviceUrl).pathname;
  return u.toString();
};

describe('roles need DATABASE_URL', () => {
  test.concurrent.each(['start:api', 'start:worker'])(
    'npm run %s without DATABASE_URL: one fatal line, exit 1, nothing started',
    async (script) => {
      const dataDir = mkdtempSync(join(tmpdir(), 'ftis-role-'));
      cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
      const r = await runCommand('npm', ['run', '-s', script], { DATA_DIR: dataDir, PORT: '0', NODE_ENV: 'test' }, 60_000);
      expect(r.code).toBe(1);
      const fatal = r.stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { level: number; msg: string });
      expect(fatal).toHaveLength(1);
      expect(fatal[0]!.level).toBe(60);
      expect(fatal[0]!.msg).toMatch(
        /role needs DATABASE_URL: API and worker processes apart share one PostgreSQL; for one process on the embedded database run npm start$/,
      );
      // The test's budget covers runCommand's own 60 s bound (npm and tsx starting on a loaded machine took over 30 s in CI).
    },
    90_000,
  );
});

test('an API process works no job; a worker does; limits count the client behind a trusted proxy; SIGTERM of the API (open websocket, request in flight) and of the worker (job in flight): exit 0', async () => {
  const databaseUrl = await cloneTemplateDatabase('roles');
  const db = createPrisma(ownerUrlOf(databaseUrl), 2);
  cleanups.push(() => db.$disconnect());
  // The test is the API's reverse proxy: it connects from 127.0.0.1 and says the client's address in X-Forwarded-For.
  // SHUTDOWN_DELAY_MS: a stopping process answers /readyz 503 (and serves on) this long before it stops accepting.
  const env = await serviceEnv({ SHUTDOWN_TIMEOUT_MS: '5000', SHUTDOWN_DELAY_MS: '3000', TRUST_PROXY: '127.0.0.1/32' });
  const start = (role: 'api' | 'worker') => startService({ databaseUrl, env, role }).then((s) => (cleanups.push(() => s.stop()), s));
  const api = await start('api');
  expect(api.logs().find((l) => l.msg === 'listening')).toMatchObject({ role: 'api' });
  const app = { rest: api.rest, deps: { db } };
  const catalog = await setupSandboxCatalog(app, { requiredConfirmations: 1 });
  const f = await setupIntegrator(app, catalog);
  const h = f.apiKeyHeaders;
  const acc = await api.rest('POST', `/v1/organizations/${f.organizationId}/accounts`, { body: { name: 'Seller' }, headers: h });
  const pi = await api.rest('POST', `/v1/organizations/${f.organizationId}/payment-intents`, {
    headers: h,
    body: { assetNetworkId: catalog.assetNetworkId, amount: '1000000', beneficiaryAccountId: idOf(acc), walletId: f.walletId },
  });
  const intent = (await api.rest('GET', `/v1/payment-intents/${idOf(pi)}`, { headers: h })).body as { id: string; transactionId: string; address: string };
  expect(
    (
      await api.rest('POST', '/v1/sandbox/deposits', {
        headers: h,
        body: { address: intent.address, amount: '1000000', assetNetworkId: catalog.assetNetworkId },
      })
    ).status,
  ).toBe(201);
  expect((await api.rest('POST', `/v1/sandbox/networks/${catalog.networkId}/mine`, { headers: h, body: { blocks: 2 } })).status).toBe(200);
  // Without a worker the chain.sync jobs wait in the queue and the payment stays unseen.
  await new Promise((r) => setTimeout(r, 2_000));
  expect((await api.rest('GET', `/v1/payment-intents/${intent.id}`, { headers: h })).body.status).not.toBe('SUCCEEDED');
  const waiting = await db.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM pgboss.job WHERE name = 'chain.sync' AND state = 'created'`;
  expect(Number(waiting[0]!.n)).toBeGreaterThan(0);

  const worker = await start('worker');
  expect((await worker.rest('GET', '/healthz')).body).toEqual({ status: 'ok', mode: 'development', role: 'worker' });
  expect((await worker.rest('GET', '/readyz')).body).toMatchObject({ status: 'ready', checks: { database: 'ok', jobs: 'ok' } });
  const other = await worker.rest('GET', '/graphql');
  expect([other.status, other.body.code, other.headers.get('content-type')]).toEqual([404, 'ROUTE_NOT_FOUND', 'application/problem+json']);
  // The worker's own /metrics (loopback client, no METRICS_TOKEN): its job runner's series.
  const metrics = await fetch(`${worker.url}/metrics`);
  expect([metrics.status, metrics.headers.get('content-type')]).toEqual([200, expect.stringContaining('text/plain')]);
  expect(await metrics.text()).toMatch(/^# TYPE \w+ (counter|gauge|histogram)$/m);
  await pollUntil(
    'paid',
    async () => (await api.rest('GET', `/v1/payment-intents/${intent.id}`, { headers: h })).body.status,
    (s) => s === 'SUCCEEDED',
    30_000,
    200,
  );

  // The worker stops while a settlement's job may be running: it finishes or hands it back, exit 0.
  const st = await api.rest('POST', `/v1/transactions/${intent.transactionId}/settlements`, { headers: h, body: { amount: '1000000' } });
  expect(st.status, st.text).toBe(201);
  expect(await worker.stop(20_000)).toEqual({ code: 0, signal: null });
  expect(worker.logs().map((l) => l.msg)).toEqual(expect.arrayContaining(['shutting down', 'stopped']));
  expect(worker.logs().filter((l) => l.level >= ERROR_LEVEL)).toEqual([]);
  const next = await start('worker');
  await pollUntil(
    'settled',
    async () => (await api.rest('GET', `/v1/settlements/${idOf(st)}`, { headers: h })).body.status,
    (s) => s === 'EXECUTED',
    30_000,
    200,
  );
  expect(await db.ledgerTransaction.count({ where: { idempotencyKey: `settlement:${idOf(st)}` } })).toBe(1);
  await checkLedgerInvariants(db);

  // Behind the trusted proxy, limits count the forwarded client (10 reset requests per source, then 429), not the proxy.
  const reset = (client: string) =>
    api.rest('POST', '/v1/auth/password-reset/request', { body: { email: 'nobody@example.com' }, headers: { 'x-forwarded-for': `1.2.3.4, ${client}` } });
  for (let i = 0; i < 10; i++) expect((await reset('198.51.100.7')).status).toBe(204);
  const limited = await reset('198.51.100.7');
  expect(limited.status, limited.text).toBe(429);
  expect((await reset('198.51.100.8')).status).toBe(204);
  expect((await api.rest('POST', '/v1/auth/password-reset/request', { body: { email: 'nobody@example.com' } })).status).toBe(204);

  // The API stops: an open websocket is closed with 1001 (going away); a request in flight still gets its answer.
  const socket = new WebSocket(`${api.url.replace('http', 'ws')}/graphql`, 'graphql-transport-ws');
  await new Promise((ok, fail) => socket.once('open', ok).once('error', fail));
  // Authenticated (connection_ack), so graphql-ws's 3 s init timeout does not close it during the shutdown delay.
  const acked = new Promise((ok) => socket.on('message', (m) => JSON.parse(String(m)).type === 'connection_ack' && ok(true)));
  socket.send(JSON.stringify({ type: 'connection_init', payload: h }));
  await acked;
  const closed = new Promise<number>((ok) => socket.once('close', (code) => ok(code)));
  const body = JSON.stringify({ name: 'Late' });
  const late = new Promise<number>((ok, fail) => {
    const req = request(`${api.url}/v1/organizations/${f.organizationId}/accounts`, {
      method: 'POST',
      headers: { ...h, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    req.on('response', (res) => (res.resume(), ok(res.statusCode!))).on('error', fail);
    req.write(body.slice(0, 5)); // the request has begun: its connection is in flight
    setTimeout(() => req.end(body.slice(5)), 500);
  });
  await new Promise((r) => setTimeout(r, 100));
  const stopping = api.stop(20_000);
  // At once, before it stops listening: not ready (the load balancer's cue), still alive, still serving.
  await expectStopping(api);
  expect((await api.rest('GET', `/v1/organizations/${f.organizationId}/accounts`, { headers: h })).status).toBe(200);
  expect(await closed).toBe(1001);
  expect(await late).toBe(201);
  expect(await stopping).toEqual({ code: 0, signal: null });
  expect(api.logs().filter((l) => l.level >= ERROR_LEVEL)).toEqual([]);

  // SIGINT stops a worker the same way; its /readyz answers 503 at once, /healthz 200.
  next.child.kill('SIGINT');
  await expectStopping(next);
  expect(await next.exited).toEqual({ code: 0, signal: null });
  expect(next.logs().map((l) => l.msg)).toEqual(expect.arrayContaining(['shutting down', 'stopped']));
  expect(next.logs().filter((l) => l.level >= ERROR_LEVEL)).toEqual([]);
}, 150_000);
