import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { createApiKey, signUpMember, type RestApp, type TestApp } from './harness';
import { setupSandboxCatalog } from './money-helpers';
import { emitEvent } from '../src/webhooks/outbox';
import { webhookEvent, type EventFields, type EventType } from '../src/webhooks/events';
import { deliveryDeps, processDeliveries } from '../src/webhooks/delivery';
import { DELIVER_QUEUE } from '../src/kernel/queues';
import { type DeliverJob } from '../src/webhooks/outbox';

/** Test settings: deliveries may go to 127.0.0.1; a short attempt budget. */
export const webhookEnv = { WEBHOOK_DESTINATION_ALLOWLIST: '127.0.0.1/32', WEBHOOK_ATTEMPT_TIMEOUT_MS: '1500' };

export interface Received {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  rawHeaders: string[];
  body: string;
  at: number;
}

/** A real HTTP receiver on 127.0.0.1. `respond` decides each answer (default 200). */
export async function startReceiver(respond: (req: Received, res: ServerResponse, n: number) => unknown = (_r, res) => res.end('ok')) {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = {
        method: req.method!,
        url: req.url!,
        headers: req.headers,
        rawHeaders: req.rawHeaders,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      };
      received.push(r);
      void Promise.resolve(respond(r, res, received.length)).catch(() => res.destroy());
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    port,
    received,
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}

/** Registers an endpoint through REST; returns its id and secret. */
export async function registerEndpoint(app: RestApp, member: { organizationId: string; headers: Record<string, string> }, url: string) {
  const r = await app.rest('POST', `/v1/organizations/${member.organizationId}/webhook-endpoints/`, { body: { url }, headers: member.headers });
  if (r.status !== 201) throw new Error(`register endpoint: ${r.status} ${r.text}`);
  return { id: r.body.id as string, secret: r.body.secret as string };
}

/**
 * Emits a catalog event for the organization, as domain code does: in a transaction of its own.
 * (The events' domains arrive with later issues; until then this is their only producer.)
 */
export async function emit<T extends EventType>(app: TestApp, organizationId: string, type: T, fields: EventFields[T]) {
  return app.deps.db.$transaction((tx) => emitEvent(tx, app.deps, organizationId, webhookEvent(type, fields)));
}
export const emitTransactionCreated = (app: TestApp, organizationId: string) =>
  emit(app, organizationId, 'transaction.created', { TransactionId: randomUUID(), ApplicationId: randomUUID(), ParticipantAccountIds: [randomUUID()] });

/**
 * The job runner, driven by the test: fetches the delivery jobs that are due by the app's clock
 * (pg-boss is told to ignore its own start times, which follow the wall clock), runs the real
 * handler and completes them, until no due job is left.
 */
export async function drainDeliveries(app: TestApp, opts: { ca?: string } = {}): Promise<number> {
  const boss = app.deps.boss!;
  const deps = deliveryDeps(app.deps, boss, opts.ca);
  let attempted = 0;
  for (let round = 0; round < 100; round++) {
    const jobs = await boss.fetch<DeliverJob>(DELIVER_QUEUE, { batchSize: 200, ignoreStartAfter: true });
    if (!jobs.length) break;
    // Jobs not yet due by the app clock are put back by the handler itself (a new job at their time).
    const r = await processDeliveries(
      deps,
      jobs.map((j) => j.data),
    );
    await boss.complete(
      DELIVER_QUEUE,
      jobs.map((j) => j.id),
    );
    attempted += r.attempted;
    if (!r.attempted) break;
  }
  return attempted;
}

/** Moves the app clock past the next attempt of every pending delivery, then drains. */
export async function advanceAndDrain(app: TestApp, opts: { ca?: string; deliveryId?: string } = {}): Promise<number> {
  const next = await app.deps.db.webhookDelivery.aggregate({
    where: { status: 'AWAITING_RETRY', ...(opts.deliveryId ? { id: opts.deliveryId } : {}) },
    _min: { nextAttemptAt: true },
  });
  if (next._min.nextAttemptAt && next._min.nextAttemptAt > app.clock.now()) app.clock.set(new Date(next._min.nextAttemptAt.getTime() + 1));
  return drainDeliveries(app, opts);
}

/** Emits one event and fails it ten times against a receiver answering 500: a dead-lettered delivery. The clock ends where it started. */
export async function deadLetteredDelivery(app: TestApp, member: { organizationId: string; headers: Record<string, string> }) {
  const receiver = await startReceiver((_r, res) => {
    res.statusCode = 500;
    res.end('no');
  });
  const endpoint = await registerEndpoint(app, member, receiver.url);
  const { deliveries } = await emitTransactionCreated(app, member.organizationId);
  const delivery = deliveries.find((d) => d.endpointId === endpoint.id)!;
  const started = app.clock.now();
  await drainDeliveries(app);
  for (let i = 0; i < 30; i++) {
    const d = await app.deps.db.webhookDelivery.findUniqueOrThrow({ where: { id: delivery.id }, select: { status: true } });
    if (d.status === 'DEAD_LETTER') break;
    await advanceAndDrain(app, { deliveryId: delivery.id });
  }
  // The ten attempts span hours of the app clock: put it back, so sessions stay valid.
  app.clock.set(started);
  await receiver.close();
  return { endpoint, deliveryId: delivery.id };
}

/**
 * A delivery of a sandbox event, through REST: an organization with a sandbox API key registers a
 * withdrawal destination on a SANDBOX network (`withdrawal_destination.registered`), delivered to an
 * endpoint at `url`. Returns the member, the key, the endpoint and the delivery's id.
 */
export async function sandboxEventDelivery(app: TestApp, url: string, catalog?: { networkId: string }) {
  const network = catalog ?? (await setupSandboxCatalog(app));
  const member = await signUpMember(app);
  const key = await createApiKey(app, member, 'SANDBOX');
  const endpoint = await registerEndpoint(app, member, url);
  const address = `0x${randomUUID().replaceAll('-', '')}${randomUUID().slice(0, 8)}`;
  const r = await app.rest('POST', `/v1/organizations/${member.organizationId}/withdrawal-destinations`, {
    headers: key.headers,
    body: { networkId: network.networkId, address },
  });
  if (r.status !== 201) throw new Error(`register withdrawal destination: ${r.status} ${r.text}`);
  const delivery = await app.deps.db.webhookDelivery.findFirstOrThrow({ where: { endpointId: endpoint.id }, select: { id: true } });
  return { member, key, endpoint, address, deliveryId: delivery.id, catalog: network };
}
