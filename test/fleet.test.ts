import { afterAll, expect, inject, test } from 'vitest';
import { randomUUID } from 'node:crypto';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { createPrisma } from '../src/db/prisma';
import { STATUS_CHANNEL } from '../src/webhooks/status';
import { setupIntegrator, setupSandboxCatalog } from './money-helpers';
import { checkLedgerInvariants } from './ledger-invariants';
import { checkSandboxInvariants } from './sandbox-invariants';
import { registerEndpoint, startReceiver } from './webhook-helpers';
import { cloneTemplateDatabase, ERROR_LEVEL, pollUntil, serviceEnv, startService, type ServiceProcess } from './process-harness';
import { replayWithKeys, type BatchRequest } from './crash-mixed-batch';

/**
 * A fleet on one PostgreSQL (issue 20): two API processes (`npm run start:api`) and two workers
 * (`npm run start:worker`) as child processes. Load goes to both APIs in turn: sandbox deposits,
 * settlements, refunds, withdrawals, each with an Idempotency-Key, and every event is delivered to
 * two local webhook receivers. Mid-run one worker and one API are killed (kill -9); what the dead
 * API did not answer is sent again, with its key, to the other (what a load balancer's client does).
 * Then: every operation terminal, every webhook delivered at least once, each money movement posted
 * once, balances exact, ledger and chain invariants, each minute's scheduled jobs queued once across
 * the workers, and a graphql-ws subscriber on API 1 saw every delivery the workers recorded while it
 * listened.
 */
const BOUND_MS = 60_000;
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

const idOf = (r: { headers: Headers }) => r.headers.get('location')!.split('/').pop()!;
const DEST = '0x00000000000000000000000000000000000000f1';
const ownerUrlOf = (serviceUrl: string) => {
  const u = new URL(inject('serverUrl'));
  u.pathname = new URL(serviceUrl).pathname;
  return u.toString();
};

type Request = BatchRequest;

test('2 API and 2 worker processes on one database; kill -9 of a worker and an API mid-run: all terminal, delivered, posted once', async () => {
  const databaseUrl = await cloneTemplateDatabase('fleet');
  const db = createPrisma(ownerUrlOf(databaseUrl), 4);
  cleanups.push(() => db.$disconnect());
  const env = await serviceEnv({ SANDBOX_BLOCK_INTERVAL_MS: '300', SHUTDOWN_TIMEOUT_MS: '5000' });
  const start = (role: 'api' | 'worker') => startService({ databaseUrl, env, detached: true, role }).then((s) => (cleanups.push(() => s.stop()), s));
  const [api1, api2, worker1, worker2] = await Promise.all([start('api'), start('api'), start('worker'), start('worker')]);
  const apis = [api1!, api2!];
  let turn = 0;
  const next = () => apis[turn++ % apis.length]!;

  // The roles: APIs serve the API and work no queue; workers serve health only.
  for (const w of [worker1!, worker2!]) {
    expect((await w.rest('GET', '/healthz')).body).toMatchObject({ status: 'ok', role: 'worker' });
    expect((await w.rest('GET', '/readyz')).status).toBe(200);
    expect((await w.rest('GET', '/v1/openapi.json')).status).toBe(404);
  }
  expect((await api2!.rest('GET', '/readyz')).body.checks).toMatchObject({ database: 'ok', jobs: 'ok' });

  // Set-up through both APIs: catalog, integrator, two receivers, a live subscriber on API 1.
  const app = { rest: (m: string, p: string, o?: Parameters<ServiceProcess['rest']>[2]) => next().rest(m, p, o), deps: { db } };
  const catalog = await setupSandboxCatalog(app, { requiredConfirmations: 1 });
  const f = await setupIntegrator(app, catalog);
  const h = f.apiKeyHeaders;
  const an = catalog.assetNetworkId;
  const receivers = [await startReceiver((_r, res) => res.writeHead(204).end()), await startReceiver((_r, res) => res.writeHead(200).end('ok'))];
  for (const r of receivers) {
    cleanups.push(() => r.close());
    await registerEndpoint(app, f.member, r.url);
  }

  const seen = new Map<string, Set<string>>(); // deliveryId → kinds seen by the subscriber
  const probes = new Set<string>();
  const client = createClient({
    url: `${api1!.url.replace('http', 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: f.member.headers,
    retryAttempts: 0,
  });
  cleanups.push(() => client.dispose());
  let subscriptionError: unknown;
  client.subscribe<{ webhookDeliveryStatus: { kind: string; deliveryId: string } }>(
    { query: 'subscription ($o: ID) { webhookDeliveryStatus(organizationId: $o) { kind deliveryId } }', variables: { o: f.organizationId } },
    {
      next: (v) => {
        const c = v.data?.webhookDeliveryStatus;
        if (v.errors) subscriptionError ??= v.errors;
        if (c) seen.set(c.deliveryId, (seen.get(c.deliveryId) ?? new Set()).add(c.kind));
      },
      error: (e) => (subscriptionError ??= e),
      complete: () => {},
    },
  );
  // Established once a change published through PostgreSQL reaches it (the server sends no signal of its own).
  await pollUntil(
    'the subscription to be established',
    async () => {
      if (subscriptionError) throw new Error(`subscription failed: ${JSON.stringify(subscriptionError)}`);
      if ([...probes].some((id) => seen.has(id))) return true;
      const probe = { kind: 'ATTEMPTED', deliveryId: randomUUID(), endpointId: randomUUID(), organizationId: f.organizationId, eventType: 'probe' };
      probes.add(probe.deliveryId);
      await db.$executeRaw`SELECT pg_notify(${STATUS_CHANNEL}, ${JSON.stringify({ ...probe, status: 'ATTEMPT_PENDING', attemptCount: 0, outcome: null, statusCode: null, nextAttemptAt: null, originalDeliveryId: null, at: new Date().toISOString() })})`;
      return false;
    },
    (ok) => ok,
    20_000,
    200,
  );
  const listeningSince = new Date();

  const acc = await next().rest('POST', `/v1/organizations/${f.organizationId}/accounts`, { body: { name: 'Seller' }, headers: h });
  expect(acc.status, acc.text).toBe(201);
  const accountId = idOf(acc);
  const intent = async () => {
    const pi = await next().rest('POST', `/v1/organizations/${f.organizationId}/payment-intents`, {
      headers: h,
      body: { assetNetworkId: an, amount: '1000000', beneficiaryAccountId: accountId, walletId: f.walletId },
    });
    expect(pi.status, pi.text).toBe(201);
    return (await next().rest('GET', `/v1/payment-intents/${idOf(pi)}`, { headers: h })).body as { id: string; transactionId: string; address: string };
  };
  // 8 funded transactions: 2 settled in full first (the seller's balance for the withdrawals), 6 for the run.
  const funded = await Promise.all(Array.from({ length: 8 }, intent));
  for (const pi of funded)
    expect(
      (await next().rest('POST', '/v1/sandbox/deposits', { headers: h, body: { address: pi.address, amount: '1000000', assetNetworkId: an } })).status,
    ).toBe(201);
  await pollUntil(
    'funded',
    async () => Promise.all(funded.map(async (pi) => (await next().rest('GET', `/v1/transactions/${pi.transactionId}`, { headers: h })).body.status)),
    (s) => s.every((x) => x === 'RESERVED'),
    BOUND_MS,
    300,
  );
  for (const pi of funded.slice(0, 2)) expect((await next().rest('POST', `/v1/transactions/${pi.transactionId}/settlements`, { headers: h })).status).toBe(201);
  const dest = await next().rest('POST', `/v1/organizations/${f.organizationId}/withdrawal-destinations`, {
    headers: h,
    body: { networkId: catalog.networkId, address: DEST },
  });
  expect(dest.status, dest.text).toBe(201);
  const unpaid = await Promise.all(Array.from({ length: 4 }, intent));
  await pollUntil(
    'seller funded',
    async () => (await next().rest('GET', `/v1/accounts/${accountId}/balances`, { headers: f.member.headers })).body,
    (b) => b.some((r: { posted: string }) => r.posted === '2000000'),
    BOUND_MS,
    300,
  );

  // The run: 20 requests, each to one API in turn; half-way through, a worker and an API die.
  const requests: Request[] = [];
  for (const pi of funded.slice(2)) {
    requests.push({ kind: 'settlement', path: `/v1/transactions/${pi.transactionId}/settlements`, body: { amount: '600000' }, key: randomUUID() });
    requests.push({ kind: 'refund', path: `/v1/transactions/${pi.transactionId}/refunds`, body: { amount: '200000' }, key: randomUUID() });
  }
  for (let i = 0; i < 4; i++)
    requests.push({
      kind: 'withdrawal',
      path: `/v1/accounts/${accountId}/withdrawals`,
      body: { amount: '250000', assetNetworkId: an, withdrawalDestinationId: idOf(dest) },
      key: randomUUID(),
    });
  for (const pi of unpaid)
    requests.push({ kind: 'deposit', path: '/v1/sandbox/deposits', body: { address: pi.address, amount: '1000000', assetNetworkId: an }, key: randomUUID() });
  requests.sort(() => Math.random() - 0.5);
  let answered = 0;
  const halfWay = new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 5_000);
    for (const r of requests)
      next()
        .rest('POST', r.path, { body: r.body, headers: { ...h, 'idempotency-key': r.key } })
        .then((res) => (r.first = res))
        .catch(() => {}) // cut by the kill: sent again below
        .finally(() => {
          if (++answered >= requests.length / 2) {
            clearTimeout(timer);
            resolve();
          }
        });
  });
  await halfWay;
  const [w1, a2] = await Promise.all([worker1!.killGroup('SIGKILL'), api2!.killGroup('SIGKILL')]);
  expect([w1.signal, a2.signal]).toEqual(['SIGKILL', 'SIGKILL']);
  const killedAt = Date.now();
  apis.splice(1, 1); // the load balancer takes API 2 out

  // Every request again, with its key, to the surviving API: the first answer stands.
  const ids = await replayWithKeys(api1!, requests, h);
  const of = (kind: Request['kind']) => requests.filter((r) => r.kind === kind).map((r) => ids.get(r)!);
  const status = async (path: string) => (await api1!.rest('GET', path, { headers: h })).body.status as string;
  await pollUntil(
    'every operation terminal',
    async () => ({
      settlements: await Promise.all(of('settlement').map((id) => status(`/v1/settlements/${id}`))),
      refunds: await Promise.all(of('refund').map((id) => status(`/v1/refunds/${id}`))),
      withdrawals: await Promise.all(of('withdrawal').map((id) => status(`/v1/withdrawals/${id}`))),
      intents: await Promise.all(unpaid.map((pi) => status(`/v1/payment-intents/${pi.id}`))),
    }),
    (s) =>
      s.settlements.every((x) => x === 'EXECUTED') &&
      s.refunds.every((x) => x === 'EXECUTED') &&
      s.withdrawals.every((x) => x === 'CONFIRMED') &&
      s.intents.every((x) => x === 'SUCCEEDED'),
    BOUND_MS,
    300,
  );
  expect(Date.now() - killedAt).toBeLessThan(BOUND_MS);

  // Every webhook delivered (at least once to its receiver), none dead or waiting.
  const deliveries = await pollUntil(
    'every webhook delivered',
    () => db.webhookDelivery.findMany({ where: { organizationId: f.organizationId }, select: { id: true, status: true, endpointId: true, deliveredAt: true } }),
    (ds) => ds.length > 0 && ds.every((d) => d.status === 'DELIVERED'),
    Math.max(5_000, killedAt + BOUND_MS - Date.now()),
    300,
  );
  const received = new Set(receivers.flatMap((r) => r.received.map((x) => String(x.headers['x-webhook-delivery-id']))));
  expect(deliveries.filter((d) => !received.has(d.id))).toEqual([]);
  expect(deliveries.length).toBeGreaterThanOrEqual(2 * (8 + 4 + 20)); // two endpoints; at least one event per operation

  // Money moved once: each settlement and refund posted once, one deposit per send, balances exact.
  expect(await db.ledgerTransaction.count({ where: { idempotencyKey: { in: of('settlement').map((id) => `settlement:${id}`) } } })).toBe(6);
  expect(await db.ledgerTransaction.count({ where: { idempotencyKey: { in: of('refund').map((id) => `refund:${id}`) } } })).toBe(6);
  expect(await db.deposit.count({ where: { paymentIntentId: { in: unpaid.map((pi) => pi.id) } } })).toBe(4);
  const balances = (await api1!.rest('GET', `/v1/accounts/${accountId}/balances`, { headers: f.member.headers })).body as {
    posted: string;
    available: string;
  }[];
  // 2 x 1,000,000 + 6 x 600,000 - 4 x 250,000
  expect(balances.map((b) => ({ posted: b.posted, available: b.available }))).toEqual([{ posted: '4600000', available: '4600000' }]);
  for (const pi of funded.slice(2)) {
    const t = await db.transaction.findUniqueOrThrow({ where: { id: pi.transactionId } });
    expect({ settled: t.settledAmount.toFixed(), refunded: t.refundedAmount.toFixed() }).toEqual({ settled: '600000', refunded: '200000' });
  }
  await checkLedgerInvariants(db);
  await checkSandboxInvariants(db);

  // Scheduled work ran once per occurrence across the two workers: at most one job per schedule and minute.
  // A run shorter than a minute may not have crossed a minute boundary yet: wait for one occurrence.
  const scheduledJobs = () => db.$queryRaw<{ name: string; minute: Date; n: bigint }[]>`
    SELECT j.name, date_trunc('minute', j.created_on) AS minute, count(*) AS n
    FROM pgboss.job j JOIN pgboss.schedule s ON s.name = j.name AND s.cron = '* * * * *'
    WHERE j.data IS NULL OR j.data = 'null'::jsonb -- a schedule's jobs carry no data (the same queues' other senders do)
    GROUP BY 1, 2`;
  const scheduled = await pollUntil('a scheduled occurrence', scheduledJobs, (rows) => rows.length > 0, 75_000, 500);
  expect(scheduled.length).toBeGreaterThan(0);
  expect(scheduled.filter((r) => r.n > 1n)).toEqual([]);

  // The subscriber on API 1 saw every delivery the workers recorded while it listened.
  await pollUntil(
    'the subscriber to see every delivery',
    async () => deliveries.filter((d) => d.deliveredAt! > listeningSince && !seen.get(d.id)?.has('DELIVERED')).map((d) => d.id),
    (missing) => missing.length === 0,
    5_000,
    200,
  );
  expect(subscriptionError).toBeUndefined();

  // The survivors logged no error but lost attempts of the dead worker (taken over, logged at error by design).
  for (const s of [api1!, worker2!]) expect(s.logs().filter((l) => l.level >= ERROR_LEVEL && !String(l.msg).startsWith('job attempt lost'))).toEqual([]);
  const stopped = await Promise.all([api1!.stop(), worker2!.stop()]);
  expect(stopped).toEqual([
    { code: 0, signal: null },
    { code: 0, signal: null },
  ]);
}, 150_000);
