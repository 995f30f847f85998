import { afterAll, beforeAll, expect, test } from 'vitest';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { createTestApp, signUpMember, type TestApp } from './harness';

let app: TestApp;
let wsUrl: string;

beforeAll(async () => {
  app = await createTestApp();
  const server = await app.listen();
  wsUrl = server.url.replace('http', 'ws') + '/graphql';
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

test('a subscription without a credential is refused with UNAUTHENTICATED', async () => {
  const { events, error } = await subscribe({}, 'subscription { heartbeat(intervalMs: 100, count: 1) { sequence } }');
  const first = (error ?? events[0]) as { errors?: { extensions?: { code?: string } }[] } | { extensions?: { code?: string } }[];
  const errors = Array.isArray(first) ? first : first.errors;
  expect(errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
});
