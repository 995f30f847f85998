import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createPrisma, type PrismaClient } from '../src/db/prisma';
import { EXPIRE_QUEUE } from '../src/kernel/queues';
import { setupIntegrator, setupSandboxCatalog } from './money-helpers';
import { cloneTemplateDatabase, pollUntil, serviceEnv, startService, type ServiceProcess } from './process-harness';
import { registerEndpoint, startReceiver } from './webhook-helpers';

/**
 * Traces (issue 20): `npm start` with OTEL_EXPORTER_OTLP_ENDPOINT exports spans over OTLP/HTTP to a
 * collector (here a tiny one on 127.0.0.1), linked parent → child from the REST request through
 * its GraphQL operation and its statements to the job it sent and the webhook attempt; the request
 * id is a span attribute and the request's log lines carry the trace id.
 */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: { stringValue?: string; intValue?: string | number } }[];
  /** The exporting process's service.name (its resource), added by the collector below. */
  service?: string;
}

let collector: Server;
let collectorUrl: string;
const spans: OtlpSpan[] = [];
const contentTypes = new Set<string>();
let svc: ServiceProcess;
let db: PrismaClient;
let receiver: Awaited<ReturnType<typeof startReceiver>>;

beforeAll(async () => {
  collector = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      contentTypes.add(`${req.method} ${req.url} ${req.headers['content-type']}`);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans: { resource?: { attributes?: OtlpSpan['attributes'] }; scopeSpans: { spans: OtlpSpan[] }[] }[];
      };
      for (const rs of body.resourceSpans) {
        const service = rs.resource?.attributes?.find((a) => a.key === 'service.name')?.value.stringValue;
        for (const ss of rs.scopeSpans) spans.push(...ss.spans.map((s) => ({ ...s, service })));
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((ok) => collector.listen(0, '127.0.0.1', ok));
  collectorUrl = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
  receiver = await startReceiver();
  const url = await cloneTemplateDatabase('tracing');
  db = createPrisma(url, 2);
  svc = await startService({
    databaseUrl: url,
    // No sandbox blocks: the only chain.sync job is the one the traced request sends.
    env: await serviceEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: collectorUrl, OTEL_SERVICE_NAME: 'ftis-test', SANDBOX_BLOCK_INTERVAL_MS: '0' }),
  });
}, 120_000);
afterAll(async () => {
  await svc?.stop();
  await receiver?.close();
  await db?.$disconnect();
  await new Promise((ok) => collector?.close(ok));
});

const attr = (s: OtlpSpan, key: string) => {
  const v = s.attributes.find((a) => a.key === key)?.value;
  return v?.stringValue ?? (v?.intValue !== undefined ? String(v.intValue) : undefined);
};
const SERVER = 2;

describe('tracing over OTLP/HTTP', () => {
  test('REST → GraphQL → database → job → webhook attempt, parent to child, with the request id; log lines carry the trace id', async () => {
    const app = { rest: svc.rest, deps: { db } };
    const catalog = await setupSandboxCatalog(app);
    const f = await setupIntegrator(app, catalog);
    await registerEndpoint(app, f.member, receiver.url);
    const acc = await svc.rest('POST', `/v1/organizations/${f.organizationId}/accounts`, { body: { name: 'Seller' }, headers: f.apiKeyHeaders });
    expect(acc.status).toBe(201);
    const pi = await svc.rest('POST', `/v1/organizations/${f.organizationId}/payment-intents`, {
      headers: { ...f.apiKeyHeaders, 'x-request-id': 'trace-intent' },
      body: {
        assetNetworkId: catalog.assetNetworkId,
        amount: '1000000',
        beneficiaryAccountId: acc.headers.get('location')!.split('/').pop(),
        walletId: f.walletId,
      },
    });
    expect(pi.status, pi.text).toBe(201);
    const intent = (await svc.rest('GET', `/v1/payment-intents/${pi.headers.get('location')!.split('/').pop()}`, { headers: f.apiKeyHeaders })).body as {
      address: string;
    };
    const sent = await svc.rest('POST', '/v1/sandbox/deposits', {
      headers: { ...f.apiKeyHeaders, 'x-request-id': 'trace-deposit' },
      body: { address: intent.address, amount: '1000000', assetNetworkId: catalog.assetNetworkId },
    });
    expect(sent.status, sent.text).toBe(201);

    const byRequest = (id: string) => spans.find((s) => s.kind === SERVER && attr(s, 'ftis.request_id') === id);
    const inTrace = (traceId: string) => spans.filter((s) => s.traceId === traceId);
    await pollUntil(
      'spans of both requests, the job and the webhook attempt exported',
      async () => {
        const a = byRequest('trace-intent');
        const b = byRequest('trace-deposit');
        return !!a && !!b && inTrace(a.traceId).some((s) => s.name === 'webhook attempt') && inTrace(b.traceId).some((s) => s.name === 'job chain.sync');
      },
      (ok) => ok,
      30_000,
    );
    expect([...contentTypes]).toEqual(['POST /v1/traces application/json']);

    // REST → GraphQL → database, for the payment intent.
    const server = byRequest('trace-intent')!;
    expect(server.name).toBe('POST /v1/organizations/{organizationId}/payment-intents');
    expect(attr(server, 'http.response.status_code')).toBe('201');
    expect(attr(server, 'ftis.principal_type')).toBe('apiKey');
    const trace = inTrace(server.traceId);
    const byId = new Map(trace.map((s) => [s.spanId, s]));
    const graphql = trace.find((s) => s.name === 'graphql mutation CreatePaymentIntent');
    expect(graphql?.parentSpanId).toBe(server.spanId);
    const statements = trace.filter((s) => s.name === 'db.query' && s.parentSpanId === graphql!.spanId);
    expect(statements.length).toBeGreaterThan(0);
    expect(statements.every((s) => !JSON.stringify(s.attributes).includes('1000000'))).toBe(true); // SQL text, never parameters
    // → the delivery job it committed → the webhook attempt, in the same trace, under the operation.
    const attempt = trace.find((s) => s.name === 'webhook attempt')!;
    const ancestors = (s: OtlpSpan): string[] => (s.parentSpanId && byId.get(s.parentSpanId) ? [s.parentSpanId, ...ancestors(byId.get(s.parentSpanId)!)] : []);
    expect(ancestors(attempt)).toContain(graphql!.spanId);
    expect(attr(attempt, 'webhook.outcome')).toBe('SUCCESS');
    // The intent's expiry job, written by the intent's own statement (a CTE, not boss.send), carries the trace too.
    const [expiry] = await db.$queryRaw<{ traceparent: string | null }[]>`
      SELECT data->'_trace'->>'traceparent' AS traceparent FROM pgboss.job WHERE name = ${EXPIRE_QUEUE} AND data->>'paymentIntentId' = ${pi.headers.get('location')!.split('/').pop()}`;
    expect(expiry?.traceparent).toContain(server.traceId);

    // REST → GraphQL → the chain.sync job it sent, worked by the job runner; the job's statements under it.
    const depositServer = byRequest('trace-deposit')!;
    const depositTrace = inTrace(depositServer.traceId);
    const depositOp = depositTrace.find((s) => s.name.startsWith('graphql mutation') && s.parentSpanId === depositServer.spanId)!;
    const job = depositTrace.find((s) => s.name === 'job chain.sync')!;
    expect(job.parentSpanId).toBe(depositOp.spanId);
    expect(depositTrace.some((s) => s.name === 'db.query' && s.parentSpanId === job.spanId)).toBe(true);

    // The request id links the logs to the trace.
    const line = svc.logs().find((l) => l.msg === 'rest' && (l as { requestId?: string }).requestId === 'trace-deposit') as { traceId?: string } | undefined;
    expect(line?.traceId).toBe(depositServer.traceId);
  }, 120_000);

  test('sampled at 0: requests make no span at all; a request whose caller samples its trace (traceparent flag 01) is traced, down to its job', async () => {
    const url = await cloneTemplateDatabase('tracing-ratio-0');
    const quiet = await startService({
      databaseUrl: url,
      env: await serviceEnv({
        OTEL_EXPORTER_OTLP_ENDPOINT: collectorUrl,
        OTEL_SERVICE_NAME: 'ftis-ratio-0',
        OTEL_TRACES_SAMPLE_RATIO: '0',
        SANDBOX_BLOCK_INTERVAL_MS: '0',
      }),
    });
    try {
      const quietDb = createPrisma(url, 2);
      const app = { rest: quiet.rest, deps: { db: quietDb } };
      const catalog = await setupSandboxCatalog(app);
      const f = await setupIntegrator(app, catalog);
      await quietDb.$disconnect();
      const acc = await quiet.rest('POST', `/v1/organizations/${f.organizationId}/accounts`, { body: { name: 'Seller' }, headers: f.apiKeyHeaders });
      expect(acc.status).toBe(201);
      const pi = await quiet.rest('POST', `/v1/organizations/${f.organizationId}/payment-intents`, {
        headers: f.apiKeyHeaders,
        body: {
          assetNetworkId: catalog.assetNetworkId,
          amount: '1000',
          beneficiaryAccountId: acc.headers.get('location')!.split('/').pop(),
          walletId: f.walletId,
        },
      });
      expect(pi.status, pi.text).toBe(201);
      const intent = (await quiet.rest('GET', `/v1/payment-intents/${pi.headers.get('location')!.split('/').pop()}`, { headers: f.apiKeyHeaders })).body as {
        address: string;
      };
      const deposit = (flags: string, traceId: string) =>
        quiet.rest('POST', '/v1/sandbox/deposits', {
          headers: { ...f.apiKeyHeaders, traceparent: `00-${traceId}-00f067aa0ba902b7-${flags}` },
          body: { address: intent.address, amount: '1000', assetNetworkId: catalog.assetNetworkId },
        });
      const sampled = '4bf92f3577b34da6a3ce929d0e0e4736';
      const unsampled = '5bf92f3577b34da6a3ce929d0e0e4737';
      expect((await deposit('01', sampled)).status).toBe(201);
      await pollUntil(
        "the sampled caller's trace exported, down to the job",
        async () => spans.some((s) => s.traceId === sampled && s.name === 'job chain.sync'),
        (ok) => ok,
        30_000,
      );
      expect((await deposit('00', unsampled)).status).toBe(201);
      await new Promise((r) => setTimeout(r, 2500)); // two more export intervals: anything else would be in by now
      const mine = spans.filter((s) => s.service === 'ftis-ratio-0');
      // Everything exported belongs to the sampled caller's trace: the set-up requests, the unsampled caller's, made none.
      expect(mine.length).toBeGreaterThan(0);
      expect(mine.filter((s) => s.traceId !== sampled)).toEqual([]);
      const server = mine.find((s) => s.kind === SERVER)!;
      expect(server.parentSpanId).toBe('00f067aa0ba902b7');
      expect(server.name).toBe('POST /v1/sandbox/deposits');
      const op = mine.find((s) => s.name.startsWith('graphql mutation') && s.parentSpanId === server.spanId)!;
      expect(mine.some((s) => s.name === 'db.query' && s.parentSpanId === op.spanId)).toBe(true);
      const job = mine.find((s) => s.name === 'job chain.sync')!;
      expect(job.parentSpanId).toBe(op.spanId);
    } finally {
      await quiet.stop();
    }
  }, 120_000);
});
