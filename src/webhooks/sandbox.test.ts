import { afterAll, beforeAll, expect, test } from 'vitest';
import { createApiKey, createTestApp, type TestApp } from '../../test/harness';
import { setupSandboxCatalog } from '../../test/money-helpers';
import { drainDeliveries, registerEndpoint, sandboxEventDelivery, startReceiver, webhookEnv } from '../../test/webhook-helpers';
import { MAX_ATTEMPTS } from './delivery';

/**
 * POST /v1/sandbox/webhook-deliveries/{id}/fast-forward: a sandbox integrator reaches DEAD_LETTER in
 * seconds against a failing receiver, then redelivers; production keys and deliveries get 404.
 * The app clock never moves here: only the fast-forward makes retries due.
 */
let app: TestApp;
let catalog: Awaited<ReturnType<typeof setupSandboxCatalog>>;
beforeAll(async () => {
  app = await createTestApp({ env: webhookEnv });
  catalog = await setupSandboxCatalog(app);
});
afterAll(() => app.close());

const fastForward = (id: string, headers: Record<string, string>, body?: unknown, extra: Record<string, string> = {}) =>
  app.rest('POST', `/v1/sandbox/webhook-deliveries/${id}/fast-forward`, { headers: { ...headers, ...extra }, ...(body !== undefined ? { body } : {}) });
const read = (id: string, headers: Record<string, string>) => app.rest('GET', `/v1/webhook-deliveries/${id}`, { headers });

test('REMAINING runs the rest of the schedule at once: DEAD_LETTER in seconds, then a redelivery is delivered', async () => {
  let failing = true;
  const receiver = await startReceiver((_r, res) => {
    res.statusCode = failing ? 503 : 204;
    res.end();
  });
  try {
    const { member, key, deliveryId } = await sandboxEventDelivery(app, receiver.url, catalog);
    await drainDeliveries(app); // the first attempt fails: a retry about 30 s away, by the app clock
    const first = await read(deliveryId, key.headers);
    expect(first.body).toMatchObject({ status: 'AWAITING_RETRY', attemptCount: 1, environmentType: 'SANDBOX' });
    expect(Date.parse(first.body.nextAttemptAt)).toBeGreaterThan(app.clock.now().getTime() + 20_000);
    expect(await drainDeliveries(app)).toBe(0); // nothing is due on the normal schedule

    // NEXT: only the next attempt is due now.
    const next = await fastForward(deliveryId, key.headers);
    expect(next.status, next.text).toBe(200);
    expect(next.body).toMatchObject({ id: deliveryId, status: 'AWAITING_RETRY', attemptCount: 1, nextAttemptAt: app.clock.now().toISOString() });
    expect(await drainDeliveries(app)).toBe(1);
    expect((await read(deliveryId, key.headers)).body).toMatchObject({ status: 'AWAITING_RETRY', attemptCount: 2 });

    // REMAINING, under an Idempotency-Key: the eight attempts left run one after the other.
    const idem = { 'idempotency-key': `ff-${deliveryId}` };
    const all = await fastForward(deliveryId, key.headers, { attempts: 'REMAINING' }, idem);
    expect(all.status, all.text).toBe(200);
    await drainDeliveries(app);
    const dead = await read(deliveryId, key.headers);
    expect(dead.body).toMatchObject({ status: 'DEAD_LETTER', attemptCount: MAX_ATTEMPTS, nextAttemptAt: null });
    expect(dead.body.attempts).toHaveLength(MAX_ATTEMPTS);
    expect(dead.body.attempts.every((a: { outcome: string; statusCode: number }) => a.outcome === 'HTTP_ERROR' && a.statusCode === 503)).toBe(true);
    expect(receiver.received.filter((r) => r.headers['x-webhook-delivery-id'] === deliveryId)).toHaveLength(MAX_ATTEMPTS);

    // The same key and request: the first answer again, nothing re-run; without a key: 409, no longer pending.
    const replay = await fastForward(deliveryId, key.headers, { attempts: 'REMAINING' }, idem);
    expect(replay.status).toBe(200);
    expect(replay.body.id).toBe(deliveryId);
    expect(await drainDeliveries(app)).toBe(0);
    const late = await fastForward(deliveryId, key.headers);
    expect(late.status).toBe(409);
    expect(late.body.code).toBe('INVALID_STATE');

    // Audited: who, what, before and after.
    const entries = await app.deps.db.auditLogEntry.findMany({
      where: { entityId: deliveryId, action: 'sandbox.webhook_delivery_fast_forwarded' },
      orderBy: { id: 'asc' },
    });
    expect(entries).toHaveLength(2);
    expect(entries[1]).toMatchObject({ actorType: 'API_KEY', before: { status: 'AWAITING_RETRY', attemptCount: 2 }, after: { attempts: 'REMAINING' } });

    // The receiver is fixed; the member redelivers and the new delivery succeeds.
    failing = false;
    const again = await app.rest('POST', `/v1/webhook-deliveries/${deliveryId}/redeliver`, { headers: member.headers });
    expect(again.status, again.text).toBe(201);
    await drainDeliveries(app);
    expect((await read(again.body.id, key.headers)).body).toMatchObject({ status: 'DELIVERED', originalDeliveryId: deliveryId, attemptCount: 1 });
  } finally {
    await receiver.close();
  }
});

test('a member may fast-forward too (GraphQL); production keys, production deliveries and other organizations get 404', async () => {
  const { member, key, deliveryId } = await sandboxEventDelivery(app, 'http://127.0.0.1:9/hooks', catalog);
  const productionKey = await createApiKey(app, member, 'PRODUCTION');
  const other = await sandboxEventDelivery(app, 'http://127.0.0.1:9/other', catalog);

  const byMember = await app.gql<{ sandboxFastForwardWebhookDelivery: { id: string; status: string } }>(
    `mutation($id: ID!) { sandboxFastForwardWebhookDelivery(id: $id, input: { attempts: NEXT }) { id status } }`,
    { id: deliveryId },
    member.headers,
  );
  expect(byMember.errors).toBeUndefined();
  expect(byMember.data!.sandboxFastForwardWebhookDelivery).toEqual({ id: deliveryId, status: 'ATTEMPT_PENDING' });

  for (const headers of [productionKey.headers, other.key.headers, other.member.headers]) {
    const r = await fastForward(deliveryId, headers);
    expect(r.status).toBe(404);
    expect(r.body.code).toBe('NOT_FOUND');
  }
  // A delivery whose event is not a sandbox one (here: no sandbox aggregate behind it) does not exist for the facility.
  const endpoint = await registerEndpoint(app, member, 'http://127.0.0.1:9/prod');
  const { emitTransactionCreated } = await import('../../test/webhook-helpers');
  const { deliveries } = await emitTransactionCreated(app, member.organizationId);
  const production = deliveries.find((d) => d.endpointId === endpoint.id)!;
  expect((await fastForward(production.id, member.headers)).status).toBe(404);
  expect((await fastForward(production.id, key.headers)).status).toBe(404);
  // Hostile input: 400 with the field named.
  const bad = await fastForward(deliveryId, key.headers, { attempts: 'ALL' });
  expect(bad.status).toBe(400);
  expect(JSON.stringify(bad.body)).toMatch(/attempts/);
  expect((await fastForward('not-a-uuid', key.headers)).status).toBe(404); // as every malformed id in a path
});
