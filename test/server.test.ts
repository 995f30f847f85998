import { afterAll, beforeAll, expect, test } from 'vitest';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { createTestApp, signUpMember, type TestApp } from './harness';

let app: TestApp;
let httpUrl: string;
let wsUrl: string;

beforeAll(async () => {
  app = await createTestApp();
  const server = await app.listen();
  httpUrl = server.url;
  wsUrl = server.url.replace('http', 'ws') + '/graphql';
});

test('the HTTP server answers REST, GraphQL and probes over a real socket', async () => {
  const health = await fetch(`${httpUrl}/healthz`);
  expect(health.status).toBe(200);
  expect(health.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  const m = await signUpMember(app);
  const rest = await fetch(`${httpUrl}/v1/organizations/${m.organizationId}/applications`, { headers: m.headers });
  expect(rest.status).toBe(200);
  expect(await rest.json()).toEqual([]);
  const gql = await fetch(`${httpUrl}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...m.headers },
    body: JSON.stringify({ query: '{ viewer { id } }' }),
  });
  expect(await gql.json()).toEqual({ data: { viewer: { id: m.memberId } } });
});
afterAll(() => app.close());

function subscribe(connectionParams: Record<string, string>, query: string) {
  const client = createClient({ url: wsUrl, webSocketImpl: WebSocket, connectionParams, retryAttempts: 0, lazy: true });
  const events: unknown[] = [];
  const done = new Promise<{ events: unknown[]; error?: unknown }>((resolve) => {
    client.subscribe(
      { query },
      {
        next: (v) => events.push(v),
        error: (error) => resolve({ events, error }),
        complete: () => resolve({ events }),
      },
    );
  }).finally(() => client.dispose());
  return done;
}

test('graphql-ws on the same port and path streams a subscription to an authenticated member', async () => {
  const m = await signUpMember(app);
  const { events, error } = await subscribe(m.headers, 'subscription { heartbeat(intervalMs: 100, count: 3) { sequence at } }');
  expect(error).toBeUndefined();
  expect(events.map((e) => (e as { data: { heartbeat: { sequence: number } } }).data.heartbeat.sequence)).toEqual([1, 2, 3]);
});

test('a socket without a credential is closed with 4401 at connection, never acknowledged', async () => {
  const { events, error } = await subscribe({}, 'subscription { heartbeat(intervalMs: 100, count: 1) { sequence } }');
  expect(events).toEqual([]);
  expect((error as { code?: number }).code).toBe(4401);
});
