import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, test } from 'vitest';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { createApiKey, PASSWORD, signUpMember, bearer } from './harness';
import { setupSandboxCatalog } from './money-helpers';
import { drainDeliveries, registerEndpoint, startReceiver } from './webhook-helpers';
import { drainMoneyWork } from './fixtures/settlements/testing';
import { app, auditOf, balanceOf, expectOwnAudit, idOf, remember, requested, secrets, useAttackApp, wt } from './attack-kit';
import type { RunningServer } from '../src/server';

/**
 * Revocation mid-flight, from outside (session 7): an API key revoked while its requests are in a
 * group, a credential revoked while a graphql-ws subscription of webhook delivery status (or any
 * subscription) is open, and while a long list is paged with a keyset cursor. The rules: a request
 * sent after the revocation answered is refused; one in flight either commits whole (its audit entry
 * naming the key) or is refused with nothing written; an open socket of a revoked credential is
 * closed (4401) at once on the process that revoked it, and sends nothing committed after the
 * revocation; a cursor carries no authority (the next page is authorized as any request).
 */
useAttackApp();

let server: RunningServer;
let wsUrl: string;
beforeAll(async () => {
  server = await app.listen();
  wsUrl = `${server.url.replace('http', 'ws')}/graphql`;
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An organization with its owner, a sandbox API key, an endpoint answering 200, and a way to make one delivery change through REST. */
async function organization() {
  const owner = await signUpMember(app);
  const key = await createApiKey(app, owner, 'SANDBOX');
  secrets.add(key.key);
  secrets.add(owner.tokens.accessToken);
  secrets.add(owner.tokens.refreshToken);
  const catalog = await setupSandboxCatalog(app);
  const receiver = await startReceiver();
  const endpoint = await registerEndpoint(app, owner, receiver.url);
  secrets.add(endpoint.secret);
  /** A withdrawal destination registered by the API key: one `withdrawal_destination.registered` delivery, attempted and delivered. */
  const deliver = async (): Promise<string> => {
    const d = await app.rest('POST', `/v1/organizations/${owner.organizationId}/withdrawal-destinations`, {
      headers: key.headers,
      body: { networkId: catalog.networkId, address: `0x${randomBytes(20).toString('hex')}` },
    });
    expect(d.status, d.text).toBe(201);
    const delivery = await app.deps.db.webhookDelivery.findFirstOrThrow({
      where: { endpointId: endpoint.id },
      orderBy: { id: 'desc' },
      select: { id: true },
    });
    await drainDeliveries(app);
    return delivery.id;
  };
  /** A second session of the owner (login again). */
  const session = async () => {
    const l = await app.rest('POST', '/v1/auth/login', { body: { email: owner.email, password: PASSWORD } });
    expect(l.status, l.text).toBe(200);
    secrets.add(l.body.accessToken);
    secrets.add(l.body.refreshToken);
    return bearer(l.body.accessToken);
  };
  return { owner, key, catalog, receiver, endpoint, deliver, session };
}

interface Watch {
  changes: { deliveryId: string; kind: string }[];
  errors: unknown[];
  closed: Promise<{ code: number; reason: string }>;
  closedAt: () => number | null;
  dispose: () => void;
}
/** A graphql-ws socket with `query` subscribed (real socket, no retry). */
function watch(connectionParams: Record<string, string>, query: string, variables: Record<string, unknown> = {}): Watch {
  const changes: Watch['changes'] = [];
  const errors: unknown[] = [];
  let closedAt: number | null = null;
  let onClosed!: (v: { code: number; reason: string }) => void;
  const closed = new Promise<{ code: number; reason: string }>((r) => (onClosed = r));
  const client = createClient({
    url: wsUrl,
    webSocketImpl: WebSocket,
    connectionParams,
    retryAttempts: 0,
    on: {
      closed: (e) => {
        closedAt = Date.now();
        onClosed({ code: (e as CloseEvent).code, reason: (e as CloseEvent).reason });
      },
    },
  });
  client.subscribe(
    { query, variables },
    {
      next: (v) => {
        if (v.errors) errors.push(v.errors);
        const c = (v.data as { webhookDeliveryStatus?: { deliveryId: string; kind: string } } | undefined)?.webhookDeliveryStatus;
        if (c) changes.push(c);
      },
      error: (e) => errors.push(e),
      complete: () => {},
    },
  );
  return { changes, errors, closed, closedAt: () => closedAt, dispose: () => void client.dispose() };
}
const STATUS = 'subscription ($o: ID) { webhookDeliveryStatus(organizationId: $o) { kind deliveryId } }';
const HEARTBEAT = 'subscription { heartbeat(intervalMs: 100, count: 1000) { sequence } }';

/** Waits until `w` received a change of `deliveryId` (the subscription is live). */
async function until(w: Watch, deliveryId: string) {
  for (let i = 0; i < 100 && !w.changes.some((c) => c.deliveryId === deliveryId); i++) await sleep(50);
  expect(
    w.changes.map((c) => c.deliveryId),
    JSON.stringify(w.errors),
  ).toContain(deliveryId);
}

/** Closed with 4401 within `ms` of `since` (the default re-check interval is 10 s: this asks for "at once"). */
async function expectClosedSoon(w: Watch, since: number, ms = 2500) {
  const closed = await Promise.race([w.closed, sleep(ms).then(() => null)]);
  expect(closed, `socket still open ${ms} ms after the revocation answered`).not.toBeNull();
  expect(closed!.code).toBe(4401);
  for (const s of secrets) expect(closed!.reason.includes(s)).toBe(false);
  expect(w.closedAt()! - since).toBeLessThan(ms);
}

/** After a revocation answered at `since`: a delivery made now never reaches the socket, which closes at once. */
async function expectCutOff(w: Watch, o: { deliver(): Promise<string> }, since: number) {
  const later = await o.deliver();
  await sleep(300);
  expect(
    w.changes.map((c) => c.deliveryId),
    'a change committed after the revocation reached the revoked session',
  ).not.toContain(later);
  await expectClosedSoon(w, since);
}

describe('open subscriptions when the credential is revoked', () => {
  test('a member session logged out while following delivery status: the socket closes at once and no later change reaches it', async () => {
    const o = await organization();
    const s1 = await o.session();
    const w = watch(s1, STATUS, { o: o.owner.organizationId });
    try {
      await sleep(300);
      await until(w, await o.deliver());
      const out = await app.rest('POST', '/v1/auth/logout', { headers: s1 });
      expect(out.status, out.text).toBe(204);
      await expectCutOff(w, o, Date.now());
      // The owner's other session is untouched.
      expect((await app.rest('GET', `/v1/webhook-endpoints/${o.endpoint.id}`, { headers: o.owner.headers })).status).toBe(200);
    } finally {
      w.dispose();
      await o.receiver.close();
    }
  }, 30_000);

  test('a password reset while following delivery status: every session of the member ends, the socket closes at once', async () => {
    const o = await organization();
    const s1 = await o.session();
    const w = watch(s1, STATUS, { o: o.owner.organizationId });
    try {
      await sleep(300);
      await until(w, await o.deliver());
      expect((await app.rest('POST', '/v1/auth/password-reset/request', { body: { email: o.owner.email } })).status).toBe(204);
      const token = app.mailer.last(o.owner.email)!.data!.token!;
      secrets.add(token);
      const reset = await app.rest('POST', '/v1/auth/password-reset/confirm', { body: { token, newPassword: `${PASSWORD}!` } });
      expect(reset.status, reset.text).toBe(204);
      await expectCutOff(w, o, Date.now());
    } finally {
      w.dispose();
      await o.receiver.close();
    }
  }, 30_000);

  test('an API key may not follow delivery status (principal rule); its open heartbeat socket closes at once when the key is revoked, rotated, or its application suspended', async () => {
    const o = await organization();
    // Webhook delivery status is a member (or operator) subscription: an API key is refused.
    const denied = watch(o.key.headers, STATUS, { o: o.owner.organizationId });
    try {
      for (let i = 0; i < 60 && denied.errors.length === 0; i++) await sleep(50);
      expect(JSON.stringify(denied.errors)).toMatch(/PRINCIPAL_NOT_ALLOWED|FORBIDDEN|PERMISSION/);
      expect(denied.changes).toEqual([]);
    } finally {
      denied.dispose();
    }
    const keys = await Promise.all(
      [0, 1, 2].map(async () => {
        const k = await app.rest('POST', `/v1/environments/${o.key.environmentId}/api-keys`, { headers: o.owner.headers });
        expect(k.status, k.text).toBe(201);
        secrets.add(k.body.apiKey);
        return { id: k.body.id as string, headers: { 'x-api-key': k.body.apiKey as string } };
      }),
    );
    const [revoked, rotated] = keys;
    const wRevoked = watch(revoked!.headers, HEARTBEAT);
    const wRotated = watch(rotated!.headers, HEARTBEAT);
    try {
      await sleep(500);
      expect((await app.rest('DELETE', `/v1/api-keys/${revoked!.id}`, { headers: o.owner.headers })).status).toBe(204);
      await expectClosedSoon(wRevoked, Date.now());
      const rot = await app.rest('POST', `/v1/api-keys/${rotated!.id}/rotate`, { headers: o.owner.headers, body: {} });
      expect(rot.status, rot.text).toBe(200);
      secrets.add(rot.body.apiKey);
      await expectClosedSoon(wRotated, Date.now());
    } finally {
      wRevoked.dispose();
      wRotated.dispose();
    }
    const wSuspended = watch(keys[2]!.headers, HEARTBEAT);
    try {
      await sleep(500);
      const susp = await app.rest('POST', `/v1/applications/${o.key.applicationId}/suspend`, { headers: o.owner.headers, body: { reason: 'attack' } });
      expect(susp.status, susp.text).toBe(204);
      await expectClosedSoon(wSuspended, Date.now());
    } finally {
      wSuspended.dispose();
      await o.receiver.close();
    }
  }, 30_000);
});

describe('requests in a group when their API key is revoked', () => {
  test('account creations and withdrawal requests in flight while the key is revoked: each commits whole (audit naming the key) or is refused with nothing written; every request after the revocation is refused', async () => {
    const s = await wt.setup(1_000_000n);
    remember(s.f);
    const k = await app.rest('POST', `/v1/environments/${s.f.environmentId}/api-keys`, { headers: s.f.member.headers });
    expect(k.status, k.text).toBe(201);
    secrets.add(k.body.apiKey);
    const headers = { 'x-api-key': k.body.apiKey as string };
    const start = await balanceOf(s);
    const accounts = Array.from({ length: 16 }, (_, i) =>
      app.rest('POST', `/v1/organizations/${s.f.organizationId}/accounts`, { headers, body: { name: `Burst ${i}` } }),
    );
    const withdrawals = Array.from({ length: 12 }, () =>
      app.rest('POST', `/v1/accounts/${s.accountId}/withdrawals`, {
        headers,
        body: { amount: '10000', assetNetworkId: s.f.catalog.assetNetworkId, withdrawalDestinationId: s.destinationId },
      }),
    );
    const revoke = sleep(5).then(() => app.rest('DELETE', `/v1/api-keys/${k.body.id}`, { headers: s.f.member.headers }));
    const [acc, wd, rev] = await Promise.all([Promise.all(accounts), Promise.all(withdrawals), revoke]);
    expect(rev.status, rev.text).toBe(204);
    for (const r of [...acc, ...wd]) expect([201, 401], r.text).toContain(r.status);
    // After the revocation answered: everything is refused, nothing written.
    const after = await Promise.all([
      app.rest('POST', `/v1/organizations/${s.f.organizationId}/accounts`, { headers, body: { name: 'After' } }),
      app.rest('POST', `/v1/accounts/${s.accountId}/withdrawals`, {
        headers,
        body: { amount: '10000', assetNetworkId: s.f.catalog.assetNetworkId, withdrawalDestinationId: s.destinationId },
      }),
      app.gql('mutation($o: ID!) { createAccount(organizationId: $o, input: { name: "After gql" }) { id } }', { o: s.f.organizationId }, headers),
    ]);
    expect(after.slice(0, 2).map((r) => (r as { status: number }).status)).toEqual([401, 401]);
    expect((after[2] as { errors?: { extensions?: { code?: string } }[] }).errors?.[0]?.extensions?.code).toBe('INVALID_CREDENTIAL');
    // Exactly the accepted requests were written, each with its own audit entry naming the revoked key.
    const created = acc.filter((r) => r.status === 201);
    const names = (await app.rest('GET', `/v1/organizations/${s.f.organizationId}/accounts?limit=500`, { headers: s.f.member.headers })).body.map(
      (a: { name: string }) => a.name,
    ) as string[];
    expect(names.filter((n) => n.startsWith('Burst ')).length).toBe(created.length);
    expect(names.some((n) => n.startsWith('After'))).toBe(false);
    for (const r of created)
      await expectOwnAudit(idOf(r), r, { organizationId: s.f.organizationId, actorType: 'API_KEY', actorId: k.body.id }, 'account.created');
    const accepted = wd.filter((r) => r.status === 201).map(idOf);
    expect((await requested(s)).sort()).toEqual([...accepted].sort());
    for (const id of accepted) expect((await auditOf(id)).length).toBeGreaterThan(0);
    const end = await balanceOf(s);
    expect(end.posted).toBe(start.posted);
    expect(start.available - end.available).toBe(10_000n * BigInt(accepted.length));
    for (const id of accepted) await app.rest('POST', `/v1/withdrawals/${id}/cancel`, { headers: s.f.member.headers });
    await drainMoneyWork(app);
    expect(await balanceOf(s)).toEqual(start);
  }, 40_000);
});

describe('keyset paging when the credential is revoked', () => {
  test('a cursor carries no authority: the next page with the revoked key is 401, another organization gets only its own rows, a forged cursor is 400; the member resumes without gaps or duplicates', async () => {
    const a = await organization();
    const b = await organization();
    await a.receiver.close();
    await b.receiver.close();
    const k = await app.rest('POST', `/v1/environments/${a.key.environmentId}/api-keys`, { headers: a.owner.headers });
    secrets.add(k.body.apiKey);
    const kh = { 'x-api-key': k.body.apiKey as string };
    // 45 accounts of A created by its first key (authorized for the application both keys share), 3 of B.
    const made = await Promise.all(
      Array.from({ length: 45 }, (_, i) =>
        app.rest('POST', `/v1/organizations/${a.owner.organizationId}/accounts`, { headers: a.key.headers, body: { name: `A${i}` } }),
      ),
    );
    expect(made.every((r) => r.status === 201)).toBe(true);
    for (let i = 0; i < 3; i++)
      expect((await app.rest('POST', `/v1/organizations/${b.owner.organizationId}/accounts`, { headers: b.key.headers, body: { name: `B${i}` } })).status).toBe(
        201,
      );
    const list = (org: string, headers: Record<string, string>, after?: string) =>
      app.rest('GET', `/v1/organizations/${org}/accounts?limit=20${after ? `&after=${encodeURIComponent(after)}` : ''}`, { headers });
    const nextOf = (r: { headers: Headers }) => {
      const link = r.headers.get('link');
      const m = link && /<([^>]+)>;\s*rel="next"/.exec(link);
      return m ? new URL(m[1]!, 'http://x').searchParams.get('after')! : null;
    };
    const p1 = await list(a.owner.organizationId, kh);
    expect(p1.status, p1.text).toBe(200);
    expect(p1.body).toHaveLength(20);
    const cursor = nextOf(p1);
    expect(cursor).toBeTruthy();
    // Revoked mid-paging: the next page is refused, whatever the cursor.
    expect((await app.rest('DELETE', `/v1/api-keys/${k.body.id}`, { headers: a.owner.headers })).status).toBe(204);
    const p2revoked = await list(a.owner.organizationId, kh, cursor!);
    expect(p2revoked.status, p2revoked.text).toBe(401);
    expect(p2revoked.text).not.toContain('A2');
    // Another organization with A's cursor: its own rows only (or none), never A's.
    const cross = await list(b.owner.organizationId, b.key.headers, cursor!);
    expect(cross.status, cross.text).toBe(200);
    expect((cross.body as { name: string }[]).every((x) => x.name.startsWith('B'))).toBe(true);
    // B on A's organization with A's cursor: 404.
    expect((await list(a.owner.organizationId, b.key.headers, cursor!)).status).toBe(404);
    // Forged cursors: 400 with a field error, never 500.
    for (const forged of ['not-a-cursor', "' OR 1=1 --", 'a\u0000b', '0'.repeat(5000), '%00', '{"id":"x"}']) {
      const r = await list(a.owner.organizationId, a.owner.headers, forged);
      expect([r.status, forged], r.text).toEqual([400, forged]);
      expect(r.body.errors?.length).toBeGreaterThan(0);
    }
    // The member resumes from the revoked key's cursor: the rest, no gaps, no duplicates.
    const seen = new Set((p1.body as { id: string }[]).map((x) => x.id));
    let after: string | null = cursor;
    let pages = 1;
    while (after) {
      const p = await list(a.owner.organizationId, a.owner.headers, after);
      expect(p.status, p.text).toBe(200);
      for (const x of p.body as { id: string }[]) {
        expect(seen.has(x.id), 'a duplicate across pages').toBe(false);
        seen.add(x.id);
      }
      after = nextOf(p);
      pages++;
    }
    const all = await app.rest('GET', `/v1/organizations/${a.owner.organizationId}/accounts?limit=500`, { headers: a.owner.headers });
    expect(seen.size).toBe((all.body as unknown[]).length);
    expect(pages).toBeGreaterThanOrEqual(3);
  }, 40_000);
});
