import { createHmac, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { apiKey, createApiKey, createTestApp, signUpMember, type TestApp } from '../../test/harness';
import {
  advanceAndDrain,
  deadLetteredDelivery,
  drainDeliveries,
  emit,
  emitTransactionCreated,
  registerEndpoint,
  startReceiver,
  webhookEnv,
} from '../../test/webhook-helpers';
import { unseal } from '../auth/secrets';
import { secretAad, processDeliveries } from './delivery';
import { emitEvent } from './outbox';
import { DELIVER_QUEUE } from '../kernel/queues';
import { aggregateIdField, eventTypes, webhookEvent } from './events';
import { verifyWebhook } from './verify';
import { BULK_QUEUE } from '../kernel/queues';
import { runBulkRedelivery } from './deliveries';

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp({ env: webhookEnv });
});
afterAll(() => app.close());

type Member = Awaited<ReturnType<typeof signUpMember>>;
const sign = (secret: string, ts: string, body: string) => createHmac('sha256', secret).update(`${ts}.${body}`).digest('hex');
const delivery = (id: string, m: Member) => app.rest('GET', `/v1/webhook-deliveries/${id}`, { headers: m.headers });
const jobsOf = async (deliveryId: string) =>
  (await app.deps.db.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM pgboss.job WHERE name = ${DELIVER_QUEUE} AND data->>'deliveryId' = ${deliveryId}`)[0]!
    .n;

describe('endpoint management', () => {
  test('register (with and without the trailing slash) shows the secret once; GET never does; it is sealed at rest', async () => {
    const m = await signUpMember(app);
    const withSlash = await app.rest('POST', `/v1/organizations/${m.organizationId}/webhook-endpoints/`, {
      body: { url: 'http://127.0.0.1:9/a' },
      headers: m.headers,
    });
    const without = await app.rest('POST', `/v1/organizations/${m.organizationId}/webhook-endpoints`, {
      body: { url: 'http://127.0.0.1:9/b' },
      headers: m.headers,
    });
    for (const r of [withSlash, without]) {
      expect(r.status).toBe(201);
      expect(r.body.secret).toMatch(/^whsec_[0-9A-Za-z]{43}$/);
      expect(r.headers.get('location')).toBe(`/v1/webhook-endpoints/${r.body.id}`);
      expect(r.body).toMatchObject({ organizationId: m.organizationId, status: 'ACTIVE', secretVersion: 1 });
    }
    const get = await app.rest('GET', `/v1/webhook-endpoints/${withSlash.body.id}`, { headers: m.headers });
    expect(get.status).toBe(200);
    expect(get.body.url).toBe('http://127.0.0.1:9/a');
    expect(get.body).not.toHaveProperty('secret');
    expect(get.text).not.toContain(withSlash.body.secret);
    // GraphQL reads have no secret field at all.
    const gql = await app.gql(`{ webhookEndpoint(id: "${withSlash.body.id}") { id secret } }`, {}, m.headers);
    expect(gql.errors?.[0]?.message).toMatch(/Cannot query field "secret"/);
    // At rest: AES-GCM ciphertext bound to the endpoint, never the secret itself.
    const row = await app.deps.db.webhookEndpoint.findUniqueOrThrow({ where: { id: withSlash.body.id } });
    expect(Buffer.from(row.secretCiphertext).toString('latin1')).not.toContain(withSlash.body.secret);
    expect(unseal(app.deps.sealingKey, row.secretCiphertext, secretAad(row.id))).toBe(withSlash.body.secret);
    expect(() => unseal(app.deps.sealingKey, row.secretCiphertext, secretAad(without.body.id))).toThrow();
    const audit = await app.deps.db.auditLogEntry.findMany({ where: { entityId: withSlash.body.id } });
    expect(audit.map((a) => a.action)).toEqual(['webhook_endpoint.registered']);
    expect(JSON.stringify(audit)).not.toContain(withSlash.body.secret);
  });

  test('only a member with webhook-endpoint-manage manages endpoints; another organization sees 404', async () => {
    const m = await signUpMember(app);
    const other = await signUpMember(app);
    const key = await createApiKey(app, m);
    const { id } = await registerEndpoint(app, m, 'http://127.0.0.1:9/x');
    const byKey = await app.rest('POST', `/v1/organizations/${m.organizationId}/webhook-endpoints/`, {
      body: { url: 'http://127.0.0.1:9/y' },
      headers: apiKey(key.key),
    });
    expect(byKey.status).toBe(403);
    expect(byKey.body.code).toBe('PRINCIPAL_NOT_ALLOWED');
    for (const [method, path] of [
      ['GET', `/v1/webhook-endpoints/${id}`],
      ['POST', `/v1/webhook-endpoints/${id}/rotate-secret`],
      ['POST', `/v1/webhook-endpoints/${id}/deactivate`],
      ['GET', `/v1/webhook-endpoints/${id}/deliveries`],
    ] as const) {
      expect((await app.rest(method, path, { headers: key.headers })).status).toBe(403);
      expect((await app.rest(method, path, { headers: other.headers })).status).toBe(404);
    }
    expect((await app.rest('GET', `/v1/webhook-endpoints/${id}`, { headers: m.headers })).body.status).toBe('ACTIVE');
  });

  test('URLs: refused when malformed or not a public address, at registration', async () => {
    const m = await signUpMember(app);
    for (const url of [
      'not a url',
      'ftp://127.0.0.1/x',
      'http://10.0.0.1/x',
      'http://169.254.169.254/latest/meta-data',
      'http://[::1]/x',
      'http://user:pw@127.0.0.1/x',
      'http://100.64.0.1/',
    ]) {
      const r = await app.rest('POST', `/v1/organizations/${m.organizationId}/webhook-endpoints/`, { body: { url }, headers: m.headers });
      expect(r.status, url).toBe(400);
      expect(r.body.code).toBe('VALIDATION_FAILED');
      expect(r.body.errors[0].field).toBe('url');
      // A non-public address is refused with the setting that allows a local receiver; a malformed URL is not.
      if (/10\.0\.0\.1|169\.254|\[::1\]|100\.64/.test(url)) expect(r.body.errors[0].message, url).toMatch(/WEBHOOK_DESTINATION_ALLOWLIST=127\.0\.0\.1\/32/);
      else expect(r.body.errors[0].message, url).not.toMatch(/WEBHOOK_DESTINATION_ALLOWLIST/);
    }
    expect(await app.deps.db.webhookEndpoint.count({ where: { organizationId: m.organizationId } })).toBe(0);
  });

  test('production refuses http and refuses an allowlist', async () => {
    const { loadConfig } = await import('../config');
    expect(() => loadConfig({ NODE_ENV: 'production', WEBHOOK_DESTINATION_ALLOWLIST: '127.0.0.1/32' })).toThrow(/WEBHOOK_DESTINATION_ALLOWLIST/);
    const prod = await createTestApp({ env: { NODE_ENV: 'production' } });
    try {
      const m = await signUpMember(prod);
      const r = await prod.rest('POST', `/v1/organizations/${m.organizationId}/webhook-endpoints/`, {
        body: { url: 'http://127.0.0.1/x' },
        headers: m.headers,
      });
      expect(r.status).toBe(400);
      expect(r.body.detail).toMatch(/https/);
    } finally {
      await prod.close();
    }
  });

  test('rotation returns a new secret at once; deactivation is idempotent and terminal', async () => {
    const m = await signUpMember(app);
    const { id, secret } = await registerEndpoint(app, m, 'http://127.0.0.1:9/x');
    const rotated = await app.rest('POST', `/v1/webhook-endpoints/${id}/rotate-secret`, { headers: m.headers });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(secret);
    expect(rotated.body.secretVersion).toBe(2);
    expect((await app.rest('POST', `/v1/webhook-endpoints/${id}/deactivate`, { headers: m.headers })).status).toBe(204);
    expect((await app.rest('POST', `/v1/webhook-endpoints/${id}/deactivate`, { headers: m.headers })).status).toBe(204);
    const again = await app.rest('POST', `/v1/webhook-endpoints/${id}/rotate-secret`, { headers: m.headers });
    expect(again.status).toBe(409);
    const audit = await app.deps.db.auditLogEntry.findMany({ where: { entityId: id }, orderBy: [{ occurredAt: 'asc' }, { id: 'asc' }] });
    expect(audit.map((a) => a.action)).toEqual(['webhook_endpoint.registered', 'webhook_endpoint.secret_rotated', 'webhook_endpoint.deactivated']);
  });
});

describe('the outbox', () => {
  test('one delivery per ACTIVE endpoint with a strictly increasing SequenceNumber per endpoint, even under concurrent emitters', async () => {
    const m = await signUpMember(app);
    const a = await registerEndpoint(app, m, 'http://127.0.0.1:9/a');
    const b = await registerEndpoint(app, m, 'http://127.0.0.1:9/b');
    const gone = await registerEndpoint(app, m, 'http://127.0.0.1:9/c');
    await app.rest('POST', `/v1/webhook-endpoints/${gone.id}/deactivate`, { headers: m.headers });
    const results = await Promise.all(Array.from({ length: 20 }, () => emitTransactionCreated(app, m.organizationId)));
    for (const r of results) expect(r.deliveries.map((d) => d.endpointId).sort()).toEqual([a.id, b.id].sort());
    for (const e of [a, b]) {
      const rows = await app.deps.db.webhookDelivery.findMany({
        where: { endpointId: e.id },
        orderBy: { sequenceNumber: 'asc' },
        select: { sequenceNumber: true, createdAt: true },
      });
      expect(rows.map((r) => Number(r.sequenceNumber))).toEqual(Array.from({ length: 20 }, (_v, i) => i + 1));
    }
    expect(await app.deps.db.webhookDelivery.count({ where: { endpointId: gone.id } })).toBe(0);
    // Each delivery has its job, sent in the same transaction.
    for (const d of results[0]!.deliveries) expect(await jobsOf(d.id)).toBe(1n);
  });

  test('a rollback leaves no event, no delivery and no job', async () => {
    const m = await signUpMember(app);
    await registerEndpoint(app, m, 'http://127.0.0.1:9/a');
    const aggregate = randomUUID();
    let deliveryId = '';
    await expect(
      app.deps.db.$transaction(async (tx) => {
        const r = await emitEvent(tx, app.deps, m.organizationId, webhookEvent('transaction.funded', { TransactionId: aggregate }));
        deliveryId = r.deliveries[0]!.id;
        throw new Error('the change fails after emitting');
      }),
    ).rejects.toThrow('the change fails');
    expect(deliveryId).not.toBe('');
    expect(await app.deps.db.webhookEvent.count({ where: { aggregateId: aggregate } })).toBe(0);
    expect(await app.deps.db.webhookDelivery.count({ where: { id: deliveryId } })).toBe(0);
    expect(await jobsOf(deliveryId)).toBe(0n);
  });

  /** Emits in a transaction that stays open until `release` is called. */
  function heldEmitter(organizationId: string) {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let emitted!: (d: { id: string; sequenceNumber: bigint }[]) => void;
    const deliveries = new Promise<{ id: string; sequenceNumber: bigint }[]>((r) => (emitted = r));
    const committed = app.deps.db.$transaction(
      async (tx) => {
        const r = await emitEvent(
          tx,
          app.deps,
          organizationId,
          webhookEvent('transaction.created', { TransactionId: randomUUID(), ApplicationId: randomUUID(), ParticipantAccountIds: [] }),
        );
        emitted(r.deliveries);
        await released;
      },
      { timeout: 20_000 },
    );
    return { deliveries, release, committed };
  }
  const settled = async (p: Promise<unknown>, ms: number) => Promise.race([p.then(() => true), new Promise((r) => setTimeout(() => r(false), ms))]);

  test('emitters of one organization never wait for each other; numbers are taken in order, a rollback leaves a gap', async () => {
    const m = await signUpMember(app);
    const a = await registerEndpoint(app, m, 'http://127.0.0.1:9/a');
    const held = heldEmitter(m.organizationId);
    expect((await held.deliveries).map((d) => d.sequenceNumber)).toEqual([1n]);
    // A second emitter commits while the first is still open (with a row lock held to commit, it would wait).
    const second = emitTransactionCreated(app, m.organizationId);
    expect(await settled(second, 3000)).toBe(true);
    expect((await second).deliveries.map((d) => d.sequenceNumber)).toEqual([2n]);
    held.release();
    await held.committed;
    await expect(
      app.deps.db.$transaction(async (tx) => {
        await emitEvent(
          tx,
          app.deps,
          m.organizationId,
          webhookEvent('transaction.created', { TransactionId: randomUUID(), ApplicationId: randomUUID(), ParticipantAccountIds: [] }),
        );
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    const fourth = await emitTransactionCreated(app, m.organizationId);
    expect(fourth.deliveries.map((d) => d.sequenceNumber)).toEqual([4n]);
    const numbers = await app.deps.db.webhookDelivery.findMany({
      where: { endpointId: a.id },
      orderBy: { sequenceNumber: 'asc' },
      select: { sequenceNumber: true },
    });
    expect(numbers.map((n) => n.sequenceNumber)).toEqual([1n, 2n, 4n]);
  });

  test('a deactivation waits for an emitter in flight, then cancels its delivery; later emitters skip the endpoint', async () => {
    const m = await signUpMember(app);
    const a = await registerEndpoint(app, m, 'http://127.0.0.1:9/a');
    const held = heldEmitter(m.organizationId);
    const [d] = await held.deliveries;
    const deactivation = app.rest('POST', `/v1/webhook-endpoints/${a.id}/deactivate`, { headers: m.headers });
    expect(await settled(deactivation, 500)).toBe(false);
    held.release();
    await held.committed;
    expect((await deactivation).status).toBe(204);
    expect((await app.deps.db.webhookDelivery.findUniqueOrThrow({ where: { id: d!.id } })).status).toBe('CANCELLED');
    expect((await emitTransactionCreated(app, m.organizationId)).deliveries).toEqual([]);
  });

  test("the catalog is exactly the spec's: 36 events, aggregate id and key fields, PascalCase, no envelope", () => {
    const spec = readFileSync(resolve(import.meta.dirname, '../../docs/spec/api-v1.md'), 'utf8');
    const section = spec.slice(spec.indexOf('### Catalog'), spec.indexOf('### Delivery semantics'));
    const rows = [...section.matchAll(/^\| ([a-z_]+\.[a-z_]+) \|[^|]+\|([^|]*)\| (\w+) \|$/gm)].map((r) => ({
      type: r[1]!,
      keys: r[2]!
        .split(',')
        .map((k) => k.trim())
        .filter(Boolean),
      aggregate: r[3]!,
    }));
    expect(rows).toHaveLength(36);
    expect(eventTypes).toEqual(rows.map((r) => r.type));
    for (const r of rows) expect(aggregateIdField[r.type as keyof typeof aggregateIdField], r.type).toBe(r.aggregate);
    // A builder's body: the aggregate id first, key fields, amounts as base-unit strings, times in ISO 8601.
    const e = webhookEvent('payment_intent.created', {
      PaymentIntentId: 'p1',
      TransactionId: 't1',
      Amount: 1234567890123456789012n,
      ExpiresAt: new Date('2026-01-02T03:04:05Z'),
    });
    expect(e.body).toBe('{"PaymentIntentId":"p1","TransactionId":"t1","Amount":"1234567890123456789012","ExpiresAt":"2026-01-02T03:04:05.000Z"}');
    expect(Object.keys(JSON.parse(e.body))).not.toContain('type');
  });
});

describe('delivery to the letter', () => {
  test('POST of the raw body with exactly the three X-Webhook-* headers, signed with the current secret at send time', async () => {
    const m = await signUpMember(app);
    const receiver = await startReceiver();
    try {
      const { id: endpointId, secret } = await registerEndpoint(app, m, receiver.url);
      const { deliveries } = await emit(app, m.organizationId, 'deposit.confirmed', {
        DepositId: randomUUID(),
        PaymentIntentId: randomUUID(),
        TransactionId: randomUUID(),
        Amount: 5000n,
      });
      const d = deliveries.find((x) => x.endpointId === endpointId)!;
      app.clock.advance(1500); // signed when sent, not when queued
      const sentAt = Math.floor(app.clock.now().getTime() / 1000);
      await drainDeliveries(app);
      expect(receiver.received).toHaveLength(1);
      const got = receiver.received[0]!;
      expect(got.method).toBe('POST');
      expect(got.headers['content-type']).toBe('application/json');
      const webhookHeaders = Object.keys(got.headers)
        .filter((h) => h.startsWith('x-webhook-'))
        .sort();
      expect(webhookHeaders).toEqual(['x-webhook-delivery-id', 'x-webhook-signature', 'x-webhook-timestamp']);
      expect(Object.keys(got.headers).some((h) => /event|type/i.test(h) && h !== 'content-type')).toBe(false);
      expect(got.headers['x-webhook-delivery-id']).toBe(d.id);
      expect(got.headers['x-webhook-timestamp']).toBe(String(sentAt));
      expect(got.headers['x-webhook-signature']).toBe(sign(secret, String(sentAt), got.body));
      expect(got.headers['x-webhook-signature']).toMatch(/^[0-9a-f]{64}$/);
      const event = await app.deps.db.webhookEvent.findFirstOrThrow({ where: { deliveries: { some: { id: d.id } } } });
      expect(got.body).toBe(event.body);
      expect(verifyWebhook(got.body, got.headers as Record<string, string>, secret, { now: app.clock.now() })).toEqual({ deliveryId: d.id, timestamp: sentAt });
      const r = await delivery(d.id, m);
      expect(r.body).toMatchObject({
        id: d.id,
        EventType: 'deposit.confirmed',
        SequenceNumber: '1',
        status: 'DELIVERED',
        attemptCount: 1,
        originalDeliveryId: null,
      });
      expect(r.body.attempts).toEqual([
        expect.objectContaining({ attemptNumber: 1, outcome: 'SUCCESS', statusCode: 200, responseBody: 'ok', nextAttemptAt: null }),
      ]);
    } finally {
      await receiver.close();
    }
  });

  test('3xx (not followed), 4xx, 5xx, a timeout and a dropped connection are failures, recorded with their class', async () => {
    const m = await signUpMember(app);
    const target = await startReceiver();
    const big = 'x'.repeat(20_000);
    const receiver = await startReceiver(async (req, res) => {
      const kind = req.url.split('/').pop();
      if (kind === 'redirect') return res.writeHead(302, { location: target.url }).end();
      if (kind === 'notfound') return res.writeHead(404).end(big);
      if (kind === 'error') return res.writeHead(503).end('busy');
      if (kind === 'drop') return res.socket?.destroy();
      // slow: never answers within the 1.5 s budget
      await new Promise((r) => setTimeout(r, 3000));
      res.end('late');
    });
    try {
      const expected = {
        redirect: ['HTTP_ERROR', 302],
        notfound: ['HTTP_ERROR', 404],
        error: ['HTTP_ERROR', 503],
        drop: ['CONNECTION_ERROR', null],
        slow: ['TIMEOUT', null],
      } as const;
      const ids: Record<string, string> = {};
      for (const kind of Object.keys(expected)) ids[kind] = (await registerEndpoint(app, m, `${receiver.url}/${kind}`)).id;
      const closed = await registerEndpoint(app, m, 'http://127.0.0.1:9/refused');
      const { deliveries } = await emitTransactionCreated(app, m.organizationId);
      await drainDeliveries(app);
      for (const [kind, [outcome, status]] of Object.entries(expected)) {
        const d = deliveries.find((x) => x.endpointId === ids[kind])!;
        const r = (await delivery(d.id, m)).body;
        expect(r.status, kind).toBe('AWAITING_RETRY');
        expect(r.attempts[0], kind).toMatchObject({ outcome, statusCode: status });
        expect(r.attempts[0].latencyMs).toBeGreaterThanOrEqual(0);
      }
      const notFound = (await delivery(deliveries.find((x) => x.endpointId === ids.notfound)!.id, m)).body;
      expect(notFound.attempts[0].responseBody).toHaveLength(16 * 1024);
      const refused = (await delivery(deliveries.find((x) => x.endpointId === closed.id)!.id, m)).body;
      expect(refused.attempts[0].outcome).toBe('CONNECTION_REFUSED');
      expect(target.received).toHaveLength(0); // the redirect was not followed
    } finally {
      await receiver.close();
      await target.close();
    }
  });

  test('the destination is checked again at every attempt: a blocked address is recorded as such', async () => {
    const m = await signUpMember(app);
    const receiver = await startReceiver();
    try {
      const { id } = await registerEndpoint(app, m, receiver.url);
      const { deliveries } = await emitTransactionCreated(app, m.organizationId);
      const d = deliveries.find((x) => x.endpointId === id)!;
      // A worker whose policy no longer allows 127.0.0.1 (the allowlist was removed).
      await processDeliveries(
        {
          db: app.deps.db,
          clock: app.clock,
          log: app.deps.log,
          boss: app.deps.boss,
          sealingKey: app.deps.sealingKey,
          policy: { requireHttps: false, allowlist: [] },
          timeoutMs: 1000,
        },
        [{ deliveryId: d.id, attempt: 1 }],
      );
      expect(receiver.received).toHaveLength(0);
      expect((await delivery(d.id, m)).body.attempts[0]).toMatchObject({ outcome: 'BLOCKED_DESTINATION', statusCode: null });
    } finally {
      await receiver.close();
    }
  });
});

describe('retries and dead-letter', () => {
  test('ten attempts on the 30 s x 2^(n-1) schedule (±20%), then dead-letter and no more attempts', async () => {
    const m = await signUpMember(app);
    const receiver = await startReceiver((_r, res) => res.writeHead(500).end('down'));
    try {
      const { id } = await registerEndpoint(app, m, receiver.url);
      const { deliveries } = await emitTransactionCreated(app, m.organizationId);
      const d = deliveries.find((x) => x.endpointId === id)!;
      const started = app.clock.now();
      await drainDeliveries(app);
      for (let i = 0; i < 12; i++) await advanceAndDrain(app, { deliveryId: d.id });
      const afterAttempts = app.clock.now();
      app.clock.set(started); // the session's access token lives 15 minutes
      const r = (await delivery(d.id, m)).body;
      expect(r.status).toBe('DEAD_LETTER');
      expect(r.attemptCount).toBe(10);
      expect(r.nextAttemptAt).toBeNull();
      expect(r.attempts.map((a: { attemptNumber: number }) => a.attemptNumber)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      for (const a of r.attempts.slice(0, 9)) {
        const base = 30_000 * 2 ** (a.attemptNumber - 1);
        const wait = Date.parse(a.nextAttemptAt) - Date.parse(a.attemptedAt);
        expect(wait, `retry ${a.attemptNumber}`).toBeGreaterThanOrEqual(base * 0.8);
        expect(wait, `retry ${a.attemptNumber}`).toBeLessThanOrEqual(base * 1.2);
        // The next attempt happens at (not before) its scheduled time.
        expect(Date.parse(r.attempts[a.attemptNumber].attemptedAt)).toBeGreaterThanOrEqual(Date.parse(a.nextAttemptAt));
      }
      expect(r.attempts[9].nextAttemptAt).toBeNull();
      expect(receiver.received).toHaveLength(10);
      // Automatic retries stop: a day later nothing is attempted.
      app.clock.set(new Date(afterAttempts.getTime() + 24 * 3600_000));
      await drainDeliveries(app);
      expect(receiver.received).toHaveLength(10);
      expect(await app.deps.db.webhookDeliveryAttempt.count({ where: { deliveryId: d.id } })).toBe(10);
      const pending = await app.deps.db.$queryRaw<
        { n: bigint }[]
      >`SELECT count(*) AS n FROM pgboss.job WHERE name = ${DELIVER_QUEUE} AND data->>'deliveryId' = ${d.id} AND state IN ('created', 'retry', 'active')`;
      expect(pending[0]!.n).toBe(0n);
      app.clock.set(started);
    } finally {
      await receiver.close();
    }
  });

  test('rotation mid-retry: the next attempt is signed with the new secret only', async () => {
    const m = await signUpMember(app);
    const receiver = await startReceiver((_r, res, n) => res.writeHead(n === 1 ? 500 : 200).end());
    try {
      const { id, secret: old } = await registerEndpoint(app, m, receiver.url);
      const { deliveries } = await emitTransactionCreated(app, m.organizationId);
      const d = deliveries.find((x) => x.endpointId === id)!;
      const started = app.clock.now();
      await drainDeliveries(app);
      const rotated = await app.rest('POST', `/v1/webhook-endpoints/${id}/rotate-secret`, { headers: m.headers });
      await advanceAndDrain(app, { deliveryId: d.id });
      expect(receiver.received).toHaveLength(2);
      const second = receiver.received[1]!;
      const ts = second.headers['x-webhook-timestamp'] as string;
      expect(second.headers['x-webhook-signature']).toBe(sign(rotated.body.secret, ts, second.body));
      expect(second.headers['x-webhook-signature']).not.toBe(sign(old, ts, second.body));
      expect(() => verifyWebhook(second.body, second.headers as Record<string, string>, old, { now: app.clock.now() })).toThrow();
      expect((await delivery(d.id, m)).body.status).toBe('DELIVERED');
      app.clock.set(started);
    } finally {
      await receiver.close();
    }
  });

  test('deactivation cancels pending deliveries: their retries stop and new events skip the endpoint', async () => {
    const m = await signUpMember(app);
    const receiver = await startReceiver((_r, res) => res.writeHead(500).end());
    try {
      const { id } = await registerEndpoint(app, m, receiver.url);
      const { deliveries } = await emitTransactionCreated(app, m.organizationId);
      const d = deliveries.find((x) => x.endpointId === id)!;
      const started = app.clock.now();
      await drainDeliveries(app);
      expect((await delivery(d.id, m)).body.status).toBe('AWAITING_RETRY');
      expect((await app.rest('POST', `/v1/webhook-endpoints/${id}/deactivate`, { headers: m.headers })).status).toBe(204);
      expect((await delivery(d.id, m)).body).toMatchObject({ status: 'CANCELLED', nextAttemptAt: null });
      app.clock.advance(3600_000);
      await drainDeliveries(app);
      expect(receiver.received).toHaveLength(1);
      const later = await emitTransactionCreated(app, m.organizationId);
      expect(later.deliveries.filter((x) => x.endpointId === id)).toEqual([]);
      app.clock.set(started);
    } finally {
      await receiver.close();
    }
  });
});

describe('lookup, listing, redelivery', () => {
  test('redeliver: a new delivery linked to the dead-lettered original, which stays dead-letter; anything else is 409', async () => {
    const m = await signUpMember(app);
    const { endpoint, deliveryId } = await deadLetteredDelivery(app, m);
    // The endpoint's receiver is gone: point a new one at the same URL path? Simpler: rotate nothing, just redeliver.
    const r = await app.rest('POST', `/v1/webhook-deliveries/${deliveryId}/redeliver`, { headers: m.headers });
    expect(r.status).toBe(201);
    expect(r.headers.get('location')).toBe(`/v1/webhook-deliveries/${r.body.id}`);
    expect(r.body).toMatchObject({
      status: 'ATTEMPT_PENDING',
      attemptCount: 0,
      originalDeliveryId: deliveryId,
      endpointId: endpoint.id,
      EventType: 'transaction.created',
    });
    expect(r.body.id).not.toBe(deliveryId);
    expect(Number(r.body.SequenceNumber)).toBeGreaterThan(1);
    expect((await delivery(deliveryId, m)).body.status).toBe('DEAD_LETTER');
    const again = await app.rest('POST', `/v1/webhook-deliveries/${r.body.id}/redeliver`, { headers: m.headers });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('INVALID_STATE');
    const other = await signUpMember(app);
    expect((await app.rest('POST', `/v1/webhook-deliveries/${deliveryId}/redeliver`, { headers: other.headers })).status).toBe(404);
    expect((await delivery(deliveryId, other)).status).toBe(404);
    // Same event, same body.
    const [a, b] = await Promise.all([
      app.deps.db.webhookDelivery.findUniqueOrThrow({ where: { id: deliveryId } }),
      app.deps.db.webhookDelivery.findUniqueOrThrow({ where: { id: r.body.id } }),
    ]);
    expect(b.eventId).toBe(a.eventId);
  });

  test('listing filters by eventType and pages newest first with a Link header', async () => {
    const m = await signUpMember(app);
    const { id } = await registerEndpoint(app, m, 'http://127.0.0.1:9/x');
    for (let i = 0; i < 3; i++) await emitTransactionCreated(app, m.organizationId);
    await emit(app, m.organizationId, 'withdrawal.cancelled', { WithdrawalId: randomUUID() });
    const all = await app.rest('GET', `/v1/webhook-endpoints/${id}/deliveries`, { headers: m.headers });
    expect(all.body.map((d: { SequenceNumber: string }) => d.SequenceNumber)).toEqual(['4', '3', '2', '1']);
    const page1 = await app.rest('GET', `/v1/webhook-endpoints/${id}/deliveries?eventType=transaction.created&limit=2`, { headers: m.headers });
    expect(page1.body.map((d: { EventType: string }) => d.EventType)).toEqual(['transaction.created', 'transaction.created']);
    const link = page1.headers.get('link')!;
    expect(link).toMatch(/rel="next"/);
    const page2 = await app.rest('GET', link.slice(1, link.indexOf('>')), { headers: m.headers });
    expect(page2.body.map((d: { SequenceNumber: string }) => d.SequenceNumber)).toEqual(['1']);
    expect(page2.headers.get('link')).toBeNull();
    const bad = await app.rest('GET', `/v1/webhook-endpoints/${id}/deliveries?eventType=nope`, { headers: m.headers });
    expect(bad.status).toBe(400);
  });

  test('bulk redelivery by time range and event type runs in the background and never redelivers an original twice', async () => {
    const m = await signUpMember(app);
    const dead = await deadLetteredDelivery(app, m);
    const second = await deadLetteredDelivery(app, m); // a second endpoint, also dead-lettered
    const from = new Date(app.clock.now().getTime() - 3600_000).toISOString();
    const to = new Date(app.clock.now().getTime() + 3600_000).toISOString();
    const start = await app.gql<{ bulkRedeliverWebhookDeliveries: { id: string; status: string } }>(
      `mutation($i: BulkRedeliverWebhookDeliveriesInput!) { bulkRedeliverWebhookDeliveries(input: $i) { id status } }`,
      { i: { endpointId: dead.endpoint.id, since: from, until: to, eventType: 'transaction.created' } },
      m.headers,
    );
    expect(start.errors).toBeUndefined();
    const jobId = start.data!.bulkRedeliverWebhookDeliveries.id;
    // The job runner: fetch the bulk job and run it, twice (at-least-once).
    const [job] = await app.deps.boss!.fetch<{ jobId: string }>(BULK_QUEUE);
    expect(job!.data.jobId).toBe(jobId);
    const deps = { db: app.deps.db, boss: app.deps.boss, clock: app.clock, log: app.deps.log };
    await runBulkRedelivery(deps, jobId);
    await app.deps.db.webhookRedeliveryJob.update({ where: { id: jobId }, data: { status: 'RUNNING' } });
    await runBulkRedelivery(deps, jobId);
    const status = await app.gql<{ webhookRedeliveryJob: { status: string; total: number; redelivered: number } }>(
      `{ webhookRedeliveryJob(id: "${jobId}") { status total redelivered } }`,
      {},
      m.headers,
    );
    expect(status.data!.webhookRedeliveryJob).toEqual({ status: 'COMPLETED', total: 1, redelivered: 1 });
    expect(await app.deps.db.webhookDelivery.count({ where: { originalDeliveryId: dead.deliveryId } })).toBe(1);
    expect(await app.deps.db.webhookDelivery.count({ where: { originalDeliveryId: second.deliveryId } })).toBe(0);
  });

  test('endpoint health in GraphQL: success rate, last error, next retry, dead letters', async () => {
    const m = await signUpMember(app);
    const { endpoint } = await deadLetteredDelivery(app, m);
    const h = await app.gql<{ webhookEndpoint: { health: Record<string, unknown> } }>(
      `{ webhookEndpoint(id: "${endpoint.id}") { health { attemptsLast24h successRateLast24h deadLetterCount pendingCount nextRetryAt lastError lastErrorAt } } }`,
      {},
      m.headers,
    );
    expect(h.errors).toBeUndefined();
    expect(h.data!.webhookEndpoint.health).toMatchObject({
      deadLetterCount: 1,
      pendingCount: 0,
      nextRetryAt: null,
      lastError: expect.stringMatching(/500|HTTP_ERROR/),
    });
  });
});

test('operators follow delivery status platform-wide over graphql-ws; a member must name an endpoint or organization', async () => {
  const { createClient } = await import('graphql-ws');
  const { default: WebSocket } = await import('ws');
  const { createOperator } = await import('../../test/harness');
  const server = await app.listen();
  const url = server.url.replace('http', 'ws') + '/graphql';
  const op = await createOperator(app);
  const m = await signUpMember(app);
  const receiver = await startReceiver();
  const clients: { dispose: () => void }[] = [];
  const follow = (params: Record<string, string>, query: string) => {
    const client = createClient({ url, webSocketImpl: WebSocket, connectionParams: params, retryAttempts: 0 });
    clients.push(client);
    const events: { data?: { webhookDeliveryStatus: { kind: string; deliveryId: string } } }[] = [];
    const errors: unknown[] = [];
    client.subscribe({ query }, { next: (v) => events.push(v as never), error: (e) => errors.push(e), complete: () => {} });
    return { events, errors };
  };
  try {
    const platform = follow(op.headers, 'subscription { webhookDeliveryStatus { kind deliveryId organizationId } }');
    const memberWide = follow(m.headers, 'subscription { webhookDeliveryStatus { kind deliveryId } }');
    await new Promise((r) => setTimeout(r, 500)); // LISTEN is in place once the subscription is set up
    await registerEndpoint(app, m, receiver.url);
    const { deliveries } = await emitTransactionCreated(app, m.organizationId);
    await drainDeliveries(app);
    for (let i = 0; i < 100 && platform.events.filter((e) => e.data?.webhookDeliveryStatus.deliveryId === deliveries[0]!.id).length < 2; i++)
      await new Promise((r) => setTimeout(r, 50));
    const mine = platform.events.filter((e) => e.data?.webhookDeliveryStatus.deliveryId === deliveries[0]!.id).map((e) => e.data!.webhookDeliveryStatus.kind);
    expect(mine).toEqual(['ATTEMPTED', 'DELIVERED']);
    expect(JSON.stringify(memberWide.events)).toMatch(/VALIDATION_FAILED|organizationId/);
  } finally {
    for (const c of clients) c.dispose();
    await receiver.close();
  }
});
