import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createOperator, createTestApp, signUpMember, type TestApp } from '../../test/harness';
import { deadLetteredDelivery, drainDeliveries, emitTransactionCreated, registerEndpoint, startReceiver, webhookEnv } from '../../test/webhook-helpers';
import { BULK_QUEUE } from '../kernel/queues';
import { runBulkRedelivery } from './deliveries';

/**
 * Issue 23's reads for the operator console, through GraphQL and REST: operators read and redeliver
 * every organization's deliveries (audited as the operator), the dead-letter queue as a connection,
 * endpoint health computed by the server.
 */
let app: TestApp;
beforeAll(async () => {
  app = await createTestApp({ env: webhookEnv });
});
afterAll(() => app.close());

type Headers = Record<string, string>;
const gql = <T>(query: string, variables: Record<string, unknown>, headers: Headers) => app.gql<T>(query, variables, headers);
const DEAD_LETTERS = `query($org: ID, $endpoint: ID, $after: String, $first: Int, $from: DateTime, $to: DateTime) {
  webhookDeadLetters(organizationId: $org, endpointId: $endpoint, after: $after, first: $first, createdAfter: $from, createdBefore: $to) {
    totalCount edges { cursor node { id status organizationId endpointId } } pageInfo { hasNextPage endCursor }
  }
}`;
type DeadLetters = {
  webhookDeadLetters: {
    totalCount: number;
    edges: { cursor: string; node: { id: string; status: string; organizationId: string; endpointId: string } }[];
    pageInfo: { hasNextPage: boolean; endCursor: string | null };
  };
};

describe('operators and tenants’ deliveries', () => {
  test('an operator reads another organization’s delivery (payload, attempts) and redelivers it, audited as the operator', async () => {
    const m = await signUpMember(app);
    const op = await createOperator(app);
    const dead = await deadLetteredDelivery(app, m);

    const read = await gql<{ webhookDelivery: { id: string; payload: string; attempts: { outcome: string }[] } }>(
      `query($id: ID!) { webhookDelivery(id: $id) { id payload attempts { outcome statusCode } } }`,
      { id: dead.deliveryId },
      op.headers,
    );
    expect(read.errors).toBeUndefined();
    expect(JSON.parse(read.data!.webhookDelivery.payload)).toHaveProperty('TransactionId');
    expect(read.data!.webhookDelivery.attempts).toHaveLength(10);
    // The REST lookup follows the same policy (the spec names no principal for it).
    const rest = await app.rest('GET', `/v1/webhook-deliveries/${dead.deliveryId}`, { headers: op.headers });
    expect(rest.status).toBe(200);
    expect(rest.body.status).toBe('DEAD_LETTER');
    // The endpoint's health and deliveries, never its secret.
    const endpoint = await gql<{ webhookEndpoints: { id: string; health: { deadLetterCount: number } }[] }>(
      `query($org: ID!) { webhookEndpoints(organizationId: $org) { id health { deadLetterCount } } }`,
      { org: m.organizationId },
      op.headers,
    );
    expect(endpoint.errors).toBeUndefined();
    expect(endpoint.data!.webhookEndpoints).toEqual([{ id: dead.endpoint.id, health: { deadLetterCount: 1 } }]);

    const redeliver = await gql<{ redeliverWebhookDelivery: { id: string; originalDeliveryId: string; status: string } }>(
      `mutation($id: ID!) { redeliverWebhookDelivery(id: $id) { id originalDeliveryId status } }`,
      { id: dead.deliveryId },
      op.headers,
    );
    expect(redeliver.errors).toBeUndefined();
    const created = redeliver.data!.redeliverWebhookDelivery;
    expect(created).toMatchObject({ originalDeliveryId: dead.deliveryId, status: 'ATTEMPT_PENDING' });
    const entries = await app.deps.db.auditLogEntry.findMany({ where: { entityId: created.id } });
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      action: 'webhook_delivery.redelivered',
      actorType: 'OPERATOR',
      actorId: op.operatorId,
      organizationId: m.organizationId,
    });
    // The redelivery is the organization's like any other: its member reads it.
    const asMember = await app.rest('GET', `/v1/webhook-deliveries/${created.id}`, { headers: m.headers });
    expect(asMember.status).toBe(200);
  });

  test('an operator starts a bulk redelivery of a tenant’s endpoint and follows its progress', async () => {
    const m = await signUpMember(app);
    const op = await createOperator(app);
    const dead = await deadLetteredDelivery(app, m);
    const since = new Date(app.clock.now().getTime() - 3600_000).toISOString();
    const until = new Date(app.clock.now().getTime() + 3600_000).toISOString();
    const start = await gql<{ bulkRedeliverWebhookDeliveries: { id: string } }>(
      `mutation($i: BulkRedeliverWebhookDeliveriesInput!) { bulkRedeliverWebhookDeliveries(input: $i) { id } }`,
      { i: { endpointId: dead.endpoint.id, since, until } },
      op.headers,
    );
    expect(start.errors).toBeUndefined();
    const jobId = start.data!.bulkRedeliverWebhookDeliveries.id;
    const audit = await app.deps.db.auditLogEntry.findFirstOrThrow({ where: { entityId: jobId } });
    expect(audit).toMatchObject({ action: 'webhook_delivery.bulk_redelivery_requested', actorType: 'OPERATOR', actorId: op.operatorId });
    const [job] = await app.deps.boss!.fetch<{ jobId: string }>(BULK_QUEUE);
    expect(job!.data.jobId).toBe(jobId);
    await runBulkRedelivery({ db: app.deps.db, boss: app.deps.boss, clock: app.clock, log: app.deps.log }, jobId);
    await app.deps.boss!.complete(BULK_QUEUE, job!.id);
    const progress = await gql<{ webhookRedeliveryJob: { status: string; total: number; redelivered: number } }>(
      `query($id: ID!) { webhookRedeliveryJob(id: $id) { status total redelivered } }`,
      { id: jobId },
      op.headers,
    );
    expect(progress.data!.webhookRedeliveryJob).toEqual({ status: 'COMPLETED', total: 1, redelivered: 1 });
  });

  test('a member never sees another organization’s deliveries or dead letters; operators keep out of endpoint configuration', async () => {
    const a = await signUpMember(app);
    const b = await signUpMember(app);
    const op = await createOperator(app);
    const dead = await deadLetteredDelivery(app, a);
    const byId = await app.rest('GET', `/v1/webhook-deliveries/${dead.deliveryId}`, { headers: b.headers });
    expect(byId.status).toBe(404);
    const redeliver = await app.rest('POST', `/v1/webhook-deliveries/${dead.deliveryId}/redeliver`, { headers: b.headers });
    expect(redeliver.status).toBe(404);
    const gqlRead = await gql(`query($id: ID!) { webhookDelivery(id: $id) { id payload } }`, { id: dead.deliveryId }, b.headers);
    expect(gqlRead.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    // Their own queue is empty; naming the other organization or its endpoint is a 404.
    const own = await gql<DeadLetters>(DEAD_LETTERS, {}, b.headers);
    expect(own.errors).toBeUndefined();
    expect(own.data!.webhookDeadLetters).toMatchObject({ totalCount: 0, edges: [] });
    for (const vars of [{ org: a.organizationId }, { endpoint: dead.endpoint.id }]) {
      const other = await gql<DeadLetters>(DEAD_LETTERS, vars, b.headers);
      expect(other.errors?.[0]?.extensions?.code, JSON.stringify(vars)).toBe('NOT_FOUND');
    }
    // Registration, rotation and deactivation stay the organization's members'.
    const rotate = await app.rest('POST', `/v1/webhook-endpoints/${dead.endpoint.id}/rotate-secret`, { headers: op.headers });
    expect(rotate.status).toBe(403);
    const register = await app.rest('POST', `/v1/organizations/${a.organizationId}/webhook-endpoints/`, {
      body: { url: 'http://127.0.0.1:9/x' },
      headers: op.headers,
    });
    expect(register.status).toBe(403);
  });
});

describe('the dead-letter queue', () => {
  test('a connection filtered by organization, endpoint and creation time, newest first, in pages', async () => {
    const m = await signUpMember(app);
    const other = await signUpMember(app);
    const op = await createOperator(app);
    const first = await deadLetteredDelivery(app, m);
    app.clock.set(new Date(app.clock.now().getTime() + 60_000));
    const second = await deadLetteredDelivery(app, m);
    const foreign = await deadLetteredDelivery(app, other);
    // A delivered one never appears.
    const receiver = await startReceiver();
    await registerEndpoint(app, m, receiver.url);
    await emitTransactionCreated(app, m.organizationId);
    await drainDeliveries(app);
    await receiver.close();

    const mine = await gql<DeadLetters>(DEAD_LETTERS, {}, m.headers);
    expect(mine.errors).toBeUndefined();
    // Each event fans out to every endpoint of the organization, so earlier dead endpoints add dead letters too.
    const ids = mine.data!.webhookDeadLetters.edges.map((e) => e.node.id);
    expect(ids).toContain(first.deliveryId);
    expect(ids).toContain(second.deliveryId);
    expect(ids).not.toContain(foreign.deliveryId);
    expect(ids).toEqual([...ids].sort().reverse()); // newest first
    expect(mine.data!.webhookDeadLetters.totalCount).toBe(ids.length);
    expect(mine.data!.webhookDeadLetters.edges.every((e) => e.node.status === 'DEAD_LETTER' && e.node.organizationId === m.organizationId)).toBe(true);

    // One endpoint, one item a page.
    const page1 = await gql<DeadLetters>(DEAD_LETTERS, { endpoint: first.endpoint.id, first: 1 }, m.headers);
    expect(page1.data!.webhookDeadLetters.edges.map((e) => e.node.endpointId)).toEqual([first.endpoint.id]);
    const count = page1.data!.webhookDeadLetters.totalCount;
    let seen = page1.data!.webhookDeadLetters.edges.length;
    let after = page1.data!.webhookDeadLetters.pageInfo.endCursor;
    let more = page1.data!.webhookDeadLetters.pageInfo.hasNextPage;
    while (more) {
      const p = await gql<DeadLetters>(DEAD_LETTERS, { endpoint: first.endpoint.id, first: 1, after }, m.headers);
      seen += p.data!.webhookDeadLetters.edges.length;
      after = p.data!.webhookDeadLetters.pageInfo.endCursor;
      more = p.data!.webhookDeadLetters.pageInfo.hasNextPage;
    }
    expect(seen).toBe(count);

    // The creation time range: only the second event's deliveries (created a minute later).
    const created = await app.deps.db.webhookDelivery.findUniqueOrThrow({ where: { id: second.deliveryId } });
    const ranged = await gql<DeadLetters>(
      DEAD_LETTERS,
      { from: created.createdAt.toISOString(), to: new Date(created.createdAt.getTime() + 1).toISOString() },
      m.headers,
    );
    expect(ranged.data!.webhookDeadLetters.edges.map((e) => e.node.id)).toContain(second.deliveryId);
    expect(ranged.data!.webhookDeadLetters.edges.map((e) => e.node.id)).not.toContain(first.deliveryId);

    // An operator: the whole platform, or one organization.
    const platform = await gql<DeadLetters>(DEAD_LETTERS, { first: 100 }, op.headers);
    const platformIds = platform.data!.webhookDeadLetters.edges.map((e) => e.node.id);
    expect(platformIds).toEqual(expect.arrayContaining([first.deliveryId, second.deliveryId, foreign.deliveryId]));
    const theirs = await gql<DeadLetters>(DEAD_LETTERS, { org: other.organizationId }, op.headers);
    expect(theirs.data!.webhookDeadLetters.edges.map((e) => e.node.id)).toEqual([foreign.deliveryId]);

    const bad = await gql<DeadLetters>(DEAD_LETTERS, { from: '2026-01-02T00:00:00Z', to: '2026-01-01T00:00:00Z' }, m.headers);
    expect(bad.errors?.[0]?.extensions?.code).toBe('VALIDATION_FAILED');
  });

  test('its queries and endpoint health read through indexes', async () => {
    const m = await signUpMember(app);
    const { endpoint } = await deadLetteredDelivery(app, m);
    const plan = async (sql: string, ...params: unknown[]) =>
      app.deps.db.$transaction(async (tx) => {
        await tx.$executeRawUnsafe('SET LOCAL enable_seqscan = off');
        const rows = await tx.$queryRawUnsafe<{ 'QUERY PLAN': string }[]>(`EXPLAIN ${sql}`, ...params);
        return rows.map((r) => r['QUERY PLAN']).join('\n');
      });
    const dl = (col: string) =>
      plan(
        `SELECT id FROM "WebhookDelivery" WHERE status = 'DEAD_LETTER' AND "${col}" = $1::uuid ORDER BY id DESC LIMIT 21`,
        col === 'endpointId' ? endpoint.id : m.organizationId,
      );
    expect(await dl('endpointId')).toMatch(/WebhookDelivery_dead_letter_endpoint_idx/);
    expect(await dl('organizationId')).toMatch(/WebhookDelivery_dead_letter_organization_idx/);
    expect(await plan(`SELECT id FROM "WebhookDelivery" WHERE status = 'DEAD_LETTER' ORDER BY id DESC LIMIT 21`)).toMatch(/WebhookDelivery_dead_letter_idx/);
    expect(
      await plan(`SELECT id FROM "WebhookDelivery" WHERE "endpointId" = $1::uuid AND "lastAttemptAt" >= now() - interval '24 hours'`, endpoint.id),
    ).toMatch(/WebhookDelivery_endpointId_lastAttemptAt_idx/);
  });
});

describe('endpoint health computed by the server', () => {
  test('success rate, outcomes per hour, last error and backlog over a window of whole hours', async () => {
    // The clock at the start of an hour plus ten minutes, so the attempts fall in known hours.
    const hour = Math.floor(app.clock.now().getTime() / 3600_000) + 1;
    app.clock.set(new Date(hour * 3600_000 + 600_000));
    const m = await signUpMember(app);
    const op = await createOperator(app); // reads after the clock moved past the member's session
    const receiver = await startReceiver((_r, res, n) => {
      res.statusCode = n === 1 ? 500 : 200;
      res.end(n === 1 ? 'no' : 'ok');
    });
    const endpoint = await registerEndpoint(app, m, receiver.url);
    await emitTransactionCreated(app, m.organizationId);
    await emitTransactionCreated(app, m.organizationId);
    await drainDeliveries(app);
    const HEALTH = `query($id: ID!, $w: Int) { webhookEndpoint(id: $id) { health(windowHours: $w) {
      windowHours windowStart attempts successes failures successRate outcomesPerHour { hour successes failures }
      attemptsLast24h successRateLast24h pendingCount deadLetterCount nextRetryAt lastError lastErrorAt lastSuccessAt } } }`;
    type H = { webhookEndpoint: { health: Record<string, unknown> & { outcomesPerHour: { hour: string; successes: number; failures: number }[] } } };
    const now1 = await gql<H>(HEALTH, { id: endpoint.id, w: 3 }, m.headers);
    expect(now1.errors).toBeUndefined();
    const h1 = now1.data!.webhookEndpoint.health;
    expect(h1).toMatchObject({ windowHours: 3, attempts: 2, successes: 1, failures: 1, successRate: 0.5, pendingCount: 1, deadLetterCount: 0 });
    expect(h1.windowStart).toBe(new Date((hour - 2) * 3600_000).toISOString());
    expect(h1.outcomesPerHour).toEqual([
      { hour: new Date((hour - 2) * 3600_000).toISOString(), successes: 0, failures: 0 },
      { hour: new Date((hour - 1) * 3600_000).toISOString(), successes: 0, failures: 0 },
      { hour: new Date(hour * 3600_000).toISOString(), successes: 1, failures: 1 },
    ]);
    expect(h1.lastError).toMatch(/500/);
    expect(h1.nextRetryAt).not.toBeNull();

    // Two hours later the retry succeeds: the backlog is gone, a one-hour window holds only the retry.
    app.clock.set(new Date((hour + 2) * 3600_000 + 600_000));
    await drainDeliveries(app);
    const later = await gql<H>(HEALTH, { id: endpoint.id, w: 1 }, op.headers);
    expect(later.data!.webhookEndpoint.health).toMatchObject({
      windowHours: 1,
      attempts: 1,
      successes: 1,
      successRate: 1,
      pendingCount: 0,
      nextRetryAt: null,
      attemptsLast24h: 3,
      lastSuccessAt: new Date((hour + 2) * 3600_000 + 600_000).toISOString(),
    });
    // Before the window, the last error is that of the newest delivery whose last attempt failed: none here.
    expect(later.data!.webhookEndpoint.health.lastError).toBeNull();
    const day = await gql<H>(HEALTH, { id: endpoint.id }, op.headers);
    expect(day.data!.webhookEndpoint.health).toMatchObject({ windowHours: 24, attempts: 3, successes: 2, lastError: expect.stringMatching(/500/) });
    expect(day.data!.webhookEndpoint.health.outcomesPerHour).toHaveLength(24);

    for (const w of [0, 169]) {
      const bad = await gql<H>(HEALTH, { id: endpoint.id, w }, op.headers);
      expect(bad.errors?.[0]?.extensions?.code, String(w)).toBe('VALIDATION_FAILED');
    }
    await receiver.close();
  });
});
