import { afterAll, afterEach, beforeAll, expect, test } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { createTestApp, signUpMember, type TestApp } from '../../test/harness';
import { emitTransactionCreated, registerEndpoint, startReceiver, webhookEnv } from '../../test/webhook-helpers';
import { DELIVER_QUEUE } from '../kernel/queues';
import { verifyWebhook } from './verify';
import { STATUS_CHANNEL, type DeliveryStatusChange } from './status';

/**
 * Delivery across processes: the API process (this test's app) emits events and serves the
 * subscription; a job worker in a SEPARATE Node process (test/fixtures/webhook-worker.ts) makes
 * the attempts. Real receivers on 127.0.0.1, real PostgreSQL, real pg-boss: nothing is mocked.
 *
 * With a 1000 ms attempt budget the delivery job's expireInSeconds is 1 * 2 + 5 = 7 s, and the
 * worker's pg-boss supervises every second: a job left active by a killed worker is failed
 * ~7-8 s after it started and retried 2 s later (the queue's retryDelay).
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ATTEMPT_TIMEOUT_MS = '1000';

let app: TestApp;
let wsUrl: string;

beforeAll(async () => {
  app = await createTestApp({ env: { ...webhookEnv, WEBHOOK_ATTEMPT_TIMEOUT_MS: ATTEMPT_TIMEOUT_MS } });
  const server = await app.listen();
  wsUrl = server.url.replace('http', 'ws') + '/graphql';
});

// ---------------------------------------------------------------------------------------------
// Worker processes

interface Worker {
  child: ChildProcess;
  /** stdout and stderr, for failure messages. */
  output: () => string;
  exited: Promise<void>;
}

const workers = new Set<Worker>();
const cleanups: (() => Promise<void> | void)[] = [];

function alive(w: Worker) {
  return w.child.exitCode === null && w.child.signalCode === null;
}

async function startWorker(): Promise<Worker> {
  const c = app.deps.config;
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/webhook-worker.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      NODE_ENV: 'test',
      DATABASE_URL: app.databaseUrl,
      WEBHOOK_SECRET_KEY: c.WEBHOOK_SECRET_KEY!,
      WEBHOOK_DESTINATION_ALLOWLIST: c.WEBHOOK_DESTINATION_ALLOWLIST,
      WEBHOOK_ATTEMPT_TIMEOUT_MS: String(c.WEBHOOK_ATTEMPT_TIMEOUT_MS),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.setEncoding('utf8');
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (s: string) => (out += s));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const worker: Worker = { child, output: () => out.slice(-4000), exited };
  workers.add(worker);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`webhook worker not ready after 30 s:\n${out}`)), 30_000);
    child.stdout!.on('data', (s: string) => {
      out += s;
      if (/^ready$/m.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`webhook worker exited (${child.exitCode ?? child.signalCode}) before ready:\n${out}`));
    });
  });
  return worker;
}

/** SIGTERM (graceful), then SIGKILL if it is still there after 10 s. */
async function stopWorker(w: Worker): Promise<void> {
  if (alive(w)) {
    w.child.kill('SIGTERM');
    const timer = setTimeout(() => alive(w) && w.child.kill('SIGKILL'), 10_000);
    await w.exited;
    clearTimeout(timer);
  }
  workers.delete(w);
}

// A crashed test file must not leave workers behind.
const killAll = () => {
  for (const w of workers) if (alive(w)) w.child.kill('SIGKILL');
};
process.once('exit', killAll);

afterEach(async () => {
  for (const w of [...workers]) await stopWorker(w);
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(async () => {
  killAll();
  process.removeListener('exit', killAll);
  await app?.close();
});

// ---------------------------------------------------------------------------------------------
// Helpers

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `fn` until it returns a truthy value; fails with `what` and the last value after `timeoutMs`. */
async function waitFor<T>(what: string, fn: () => Promise<T> | T, timeoutMs = 45_000, everyMs = 200, detail?: () => unknown): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const last = await fn();
    if (last) return last as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last: ${JSON.stringify(detail ? detail() : last)}`);
    await sleep(everyMs);
  }
}

async function receiver(respond: Parameters<typeof startReceiver>[0]) {
  const r = await startReceiver(respond);
  cleanups.push(() => r.close());
  return r;
}

type Member = Awaited<ReturnType<typeof signUpMember>>;

async function getDelivery(member: Member, id: string) {
  const r = await app.rest('GET', `/v1/webhook-deliveries/${id}`, { headers: member.headers });
  expect(r.status, r.text).toBe(200);
  return r.body as {
    id: string;
    status: string;
    attemptCount: number;
    nextAttemptAt: string | null;
    deliveredAt: string | null;
    cancelledAt: string | null;
    attempts: { attemptNumber: number; attemptedAt: string; outcome: string; statusCode: number | null; nextAttemptAt: string | null }[];
  };
}

async function emitOne(member: Member, endpointId: string) {
  const { deliveries } = await emitTransactionCreated(app, member.organizationId);
  const d = deliveries.find((x) => x.endpointId === endpointId);
  expect(d).toBeDefined();
  return d!.id;
}

/** The pg-boss delivery jobs of a delivery (every attempt's), straight from the job table. */
async function deliverJobs(deliveryId: string) {
  return app.deps.db.$queryRaw<{ id: string; attempt: number; state: string; retryCount: number; startAfter: Date }[]>`
    SELECT id::text, (data->>'attempt')::int AS attempt, state::text AS state, retry_count AS "retryCount", start_after AS "startAfter"
    FROM pgboss.job WHERE name = ${DELIVER_QUEUE} AND data->>'deliveryId' = ${deliveryId}
    ORDER BY created_on`;
}

// ---------------------------------------------------------------------------------------------
// graphql-ws subscriptions

type Change = Pick<DeliveryStatusChange, 'kind' | 'deliveryId' | 'status' | 'attemptCount' | 'outcome' | 'statusCode'>;
const STATUS_SUBSCRIPTION = `subscription($e: ID, $o: ID) {
  webhookDeliveryStatus(endpointId: $e, organizationId: $o) { kind deliveryId status attemptCount outcome statusCode }
}`;
const probeIds = new Set<string>();

interface Subscription {
  client: Client;
  /** The changes received, readiness probes left out. */
  changes: () => Change[];
  probes: Set<string>;
  error: () => unknown;
  completed: () => boolean;
}

function subscribeStatus(headers: Record<string, string>, variables: { e?: string; o?: string }): Subscription {
  const client = createClient({ url: wsUrl, webSocketImpl: WebSocket, connectionParams: headers, retryAttempts: 0, lazy: true });
  const received: Change[] = [];
  const probes = new Set<string>();
  let error: unknown;
  let completed = false;
  client.subscribe<{ webhookDeliveryStatus: Change }>(
    { query: STATUS_SUBSCRIPTION, variables },
    {
      next: (v) => {
        if (v.errors?.length) error ??= v.errors;
        const c = v.data?.webhookDeliveryStatus;
        if (!c) return;
        if (probeIds.has(c.deliveryId)) probes.add(c.deliveryId);
        else received.push(c);
      },
      error: (e) => (error ??= e),
      complete: () => (completed = true),
    },
  );
  cleanups.push(() => client.dispose());
  return { client, changes: () => [...received], probes, error: () => error, completed: () => completed };
}

/**
 * Waits until the subscriptions are established on the server: publishes, through PostgreSQL, a
 * probe change matching them until every one has received one. (The server gives the client no
 * signal when its subscription is in place; a change committed before that would be missed.)
 */
async function established(subs: Subscription[], endpointId: string, organizationId: string) {
  await waitFor(
    'the subscriptions to be established',
    async () => {
      for (const s of subs) if (s.error() || s.completed()) throw new Error(`subscription ended: ${JSON.stringify(s.error())}`);
      if (subs.every((s) => s.probes.size > 0)) return true;
      const probe: DeliveryStatusChange = {
        kind: 'ATTEMPTED',
        deliveryId: randomUUID(),
        endpointId,
        organizationId,
        eventType: 'probe',
        status: 'ATTEMPT_PENDING',
        attemptCount: 0,
        outcome: null,
        statusCode: null,
        nextAttemptAt: null,
        originalDeliveryId: null,
        at: new Date().toISOString(),
      };
      probeIds.add(probe.deliveryId);
      await app.deps.db.$executeRaw`SELECT pg_notify(${STATUS_CHANNEL}, ${JSON.stringify(probe)})`;
      return false;
    },
    15_000,
    250,
  );
}

/** The error code a refused subscription ends with (next-with-errors or error message). */
async function refusal(s: Subscription): Promise<string | undefined> {
  await waitFor('the subscription to be refused', () => s.error() ?? (s.completed() || undefined), 15_000, 50);
  const e = s.error() as { extensions?: { code?: string } }[] | { extensions?: { code?: string } } | undefined;
  const errors = Array.isArray(e) ? e : e ? [e] : [];
  return errors[0]?.extensions?.code;
}

// ---------------------------------------------------------------------------------------------
// Tests

test('a job worker killed in the middle of a delivery loses nothing: another worker makes the attempt again', async () => {
  const member = await signUpMember(app);
  let first: Worker | undefined;
  let firstKilledAt = 0;
  // The first request gets no answer: the worker is killed (SIGKILL) while waiting for it, well
  // before its 1000 ms attempt budget would have let it record a TIMEOUT. Later requests: 200.
  const rcv = await receiver((_req, res, n) => {
    if (n === 1) {
      firstKilledAt = Date.now();
      first?.child.kill('SIGKILL');
      return; // held open until the dead worker's socket closes
    }
    res.end('ok');
  });
  const endpoint = await registerEndpoint(app, member, rcv.url);
  first = await startWorker();
  const deliveryId = await emitOne(member, endpoint.id);

  await waitFor('the first request at the receiver', () => rcv.received.length >= 1, 30_000, 20);
  await first.exited;
  expect(first.child.signalCode).toBe('SIGKILL');
  // The in-flight attempt died with its worker: nothing is recorded, the job is still active.
  const mid = await getDelivery(member, deliveryId);
  expect(mid.status).toBe('ATTEMPT_PENDING');
  expect(mid.attempts).toEqual([]);
  expect((await deliverJobs(deliveryId)).map((j) => j.state)).toEqual(['active']);

  const second = await startWorker();
  let seen: unknown;
  const done = await waitFor(
    'the delivery to be DELIVERED',
    async () => {
      const d = await getDelivery(member, deliveryId);
      seen = d;
      return d.status === 'DELIVERED' ? d : undefined;
    },
    45_000,
    200,
    () => ({ delivery: seen, received: rcv.received.length, worker: second.output() }),
  );
  // pg-boss's path: expiry 7 s after the job started, supervision (every 1 s), then retryDelay 2 s.
  expect(Date.now() - firstKilledAt).toBeGreaterThanOrEqual(6_000);

  // The receiver saw the same delivery (same id, same body, validly signed by the second worker
  // with the secret the API process sealed) at least twice: the lost attempt and the retry.
  expect(rcv.received.length).toBeGreaterThanOrEqual(2);
  expect(new Set(rcv.received.map((r) => r.headers['x-webhook-delivery-id']))).toEqual(new Set([deliveryId]));
  expect(new Set(rcv.received.map((r) => r.body)).size).toBe(1);
  const last = rcv.received.at(-1)!;
  expect(verifyWebhook(last.body, last.headers, endpoint.secret)).toMatchObject({ deliveryId });
  // The retry came from pg-boss expiring the dead worker's job (expireInSeconds 7), not earlier.
  expect(last.at - rcv.received[0]!.at).toBeGreaterThanOrEqual(6_000);

  // Attempt history: one row per attempt number, numbered from 1, the success last.
  const numbers = done.attempts.map((a) => a.attemptNumber);
  expect(new Set(numbers).size).toBe(numbers.length);
  expect(numbers).toEqual(numbers.map((_n, i) => i + 1));
  expect(done.attemptCount).toBe(done.attempts.length);
  expect(done.attempts.at(-1)).toMatchObject({ outcome: 'SUCCESS', statusCode: 200, nextAttemptAt: null });
  // Here exactly: the lost attempt left no row, the retry of the same job recorded attempt 1.
  expect(done.attempts).toMatchObject([{ attemptNumber: 1, outcome: 'SUCCESS', statusCode: 200 }]);
  expect(done.deliveredAt).not.toBeNull();

  // The same job (id = delivery id) ran again after expiring; nothing else was queued.
  const jobs = await waitFor(
    'the job to be completed',
    async () => {
      const j = await deliverJobs(deliveryId);
      return j.every((x) => x.state === 'completed') ? j : undefined;
    },
    10_000,
  );
  expect(jobs).toMatchObject([{ id: deliveryId, attempt: 1, state: 'completed' }]);
  expect(jobs[0]!.retryCount).toBeGreaterThanOrEqual(1);

  // And no further request once delivered.
  await sleep(1_500);
  expect(rcv.received).toHaveLength(2);
}, 90_000);

test("the subscription sees a delivery's transitions made by another process; other organizations cannot subscribe", async () => {
  const member = await signUpMember(app);
  const other = await signUpMember(app);
  // First request: 500; every later one: 200.
  const rcv = await receiver((_req, res, n) => {
    res.statusCode = n === 1 ? 500 : 200;
    res.end(n === 1 ? 'boom' : 'ok');
  });
  const endpoint = await registerEndpoint(app, member, rcv.url);

  // Another organization's member: the endpoint (and the organization) do not exist for them.
  expect(await refusal(subscribeStatus(other.headers, { e: endpoint.id }))).toBe('NOT_FOUND');
  expect(await refusal(subscribeStatus(other.headers, { o: member.organizationId }))).toBe('NOT_FOUND');

  const byEndpoint = subscribeStatus(member.headers, { e: endpoint.id });
  const byOrganization = subscribeStatus(member.headers, { o: member.organizationId });
  // And a subscription of the other organization's own, which must see none of these changes.
  const otherOrganization = subscribeStatus(other.headers, { o: other.organizationId });
  await established([byEndpoint, byOrganization], endpoint.id, member.organizationId);
  await established([otherOrganization], randomUUID(), other.organizationId);
  await startWorker();

  // 1. A failed attempt, made by the worker process: ATTEMPTED (HTTP_ERROR 500) then RETRY_SCHEDULED.
  const failing = await emitOne(member, endpoint.id);
  await waitFor('ATTEMPTED and RETRY_SCHEDULED', () => byEndpoint.changes().filter((c) => c.deliveryId === failing).length >= 2, 30_000, 50);
  const retryScheduled = [
    { kind: 'ATTEMPTED', deliveryId: failing, status: 'AWAITING_RETRY', attemptCount: 1, outcome: 'HTTP_ERROR', statusCode: 500 },
    { kind: 'RETRY_SCHEDULED', deliveryId: failing, status: 'AWAITING_RETRY', attemptCount: 1, outcome: 'HTTP_ERROR', statusCode: 500 },
  ];
  expect(byEndpoint.changes()).toEqual(retryScheduled);
  const afterFailure = await getDelivery(member, failing);
  expect(afterFailure).toMatchObject({ status: 'AWAITING_RETRY', attemptCount: 1 });
  expect(afterFailure.attempts).toMatchObject([{ attemptNumber: 1, outcome: 'HTTP_ERROR', statusCode: 500 }]);
  // The retry waits 30 s +-20% after the attempt.
  expect(afterFailure.attempts[0]!.nextAttemptAt).toBe(afterFailure.nextAttemptAt);
  const wait = new Date(afterFailure.nextAttemptAt!).getTime() - new Date(afterFailure.attempts[0]!.attemptedAt).getTime();
  expect(wait).toBeGreaterThanOrEqual(24_000);
  expect(wait).toBeLessThanOrEqual(36_000);

  // 2. A delivery the receiver accepts at once: ATTEMPTED (SUCCESS 200) then DELIVERED.
  const succeeding = await emitOne(member, endpoint.id);
  await waitFor('ATTEMPTED and DELIVERED', () => byEndpoint.changes().filter((c) => c.deliveryId === succeeding).length >= 2, 30_000, 50);
  const delivered = [
    { kind: 'ATTEMPTED', deliveryId: succeeding, status: 'DELIVERED', attemptCount: 1, outcome: 'SUCCESS', statusCode: 200 },
    { kind: 'DELIVERED', deliveryId: succeeding, status: 'DELIVERED', attemptCount: 1, outcome: 'SUCCESS', statusCode: 200 },
  ];
  expect(byEndpoint.changes()).toEqual([...retryScheduled, ...delivered]);
  expect(await getDelivery(member, succeeding)).toMatchObject({ status: 'DELIVERED', attemptCount: 1 });

  // The organization's subscription received the same changes, in the same order.
  await waitFor('the organization subscription to catch up', () => byOrganization.changes().length >= 4, 10_000, 50);
  expect(byOrganization.changes()).toEqual([...retryScheduled, ...delivered]);
  // The other organization's subscription saw none of them.
  await sleep(300);
  expect(otherOrganization.changes()).toEqual([]);
  for (const s of [byEndpoint, byOrganization, otherOrganization]) expect(s.error()).toBeUndefined();

  // Leave no retry pending for the later tests (and see the cancellation on both subscriptions).
  expect((await app.rest('POST', `/v1/webhook-endpoints/${endpoint.id}/deactivate`, { headers: member.headers })).status).toBe(204);
  const cancelled = { kind: 'CANCELLED', deliveryId: failing, status: 'CANCELLED', attemptCount: 1, outcome: null, statusCode: null };
  await waitFor('CANCELLED on both subscriptions', () => byEndpoint.changes().length >= 5 && byOrganization.changes().length >= 5, 10_000, 50);
  expect(byEndpoint.changes().at(-1)).toEqual(cancelled);
  expect(byOrganization.changes().at(-1)).toEqual(cancelled);
}, 90_000);

test('deactivating an endpoint stops its pending retries, even for a worker in another process', async () => {
  const member = await signUpMember(app);
  const rcv = await receiver((_req, res) => {
    res.statusCode = 500;
    res.end('no');
  });
  const endpoint = await registerEndpoint(app, member, rcv.url);
  const sub = subscribeStatus(member.headers, { e: endpoint.id });
  await established([sub], endpoint.id, member.organizationId);
  await startWorker();

  const deliveryId = await emitOne(member, endpoint.id);
  const failed = await waitFor(
    'AWAITING_RETRY',
    async () => {
      const d = await getDelivery(member, deliveryId);
      return d.status === 'AWAITING_RETRY' ? d : undefined;
    },
    30_000,
  );
  expect(failed.attemptCount).toBe(1);
  expect(rcv.received).toHaveLength(1);
  // The worker queued the second attempt for ~30 s later.
  const retry = await waitFor('the retry job', async () => (await deliverJobs(deliveryId)).find((j) => j.attempt === 2));
  expect(retry.state).toBe('created');
  expect(retry.startAfter.getTime()).toBeGreaterThan(Date.now() + 15_000);

  const r = await app.rest('POST', `/v1/webhook-endpoints/${endpoint.id}/deactivate`, { headers: member.headers });
  expect(r.status, r.text).toBe(204);
  const cancelled = await getDelivery(member, deliveryId);
  expect(cancelled).toMatchObject({ status: 'CANCELLED', attemptCount: 1, nextAttemptAt: null });
  expect(cancelled.cancelledAt).not.toBeNull();
  await waitFor('CANCELLED on the subscription', () => sub.changes().some((c) => c.kind === 'CANCELLED'), 10_000, 50);
  expect(sub.changes()).toEqual([
    { kind: 'ATTEMPTED', deliveryId, status: 'AWAITING_RETRY', attemptCount: 1, outcome: 'HTTP_ERROR', statusCode: 500 },
    { kind: 'RETRY_SCHEDULED', deliveryId, status: 'AWAITING_RETRY', attemptCount: 1, outcome: 'HTTP_ERROR', statusCode: 500 },
    { kind: 'CANCELLED', deliveryId, status: 'CANCELLED', attemptCount: 1, outcome: null, statusCode: null },
  ]);

  // Let the queued retry come due now instead of in ~30 s (the passage of time, nothing else): the
  // worker process runs it, and it must send nothing.
  await app.deps.db.$executeRaw`UPDATE pgboss.job SET start_after = now() WHERE name = ${DELIVER_QUEUE} AND id = ${retry.id}::uuid AND state = 'created'`;
  await waitFor('the retry job to be worked', async () => (await deliverJobs(deliveryId)).find((j) => j.id === retry.id)?.state === 'completed', 30_000);
  await sleep(2_000);
  expect(rcv.received).toHaveLength(1);
  const after = await getDelivery(member, deliveryId);
  expect(after).toMatchObject({ status: 'CANCELLED', attemptCount: 1, nextAttemptAt: null });
  expect(after.attempts).toHaveLength(1);
  expect(sub.changes()).toHaveLength(3);
}, 90_000);
