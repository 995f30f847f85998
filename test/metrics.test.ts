import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApiKey, createTestApp, signUpMember, type TestApp } from './harness';
import { metricsNodeHandler } from '../src/system/metrics';

/** /metrics (issue 20): Prometheus text format, protected, and its values move with requests. */

const TOKEN = 'metrics-token-0123456789abcdef';
let app: TestApp;
beforeAll(async () => {
  app = await createTestApp({ env: { METRICS_TOKEN: TOKEN } });
});
afterAll(() => app.close());

interface Family {
  type: string;
  help: string;
  samples: { name: string; labels: Record<string, string>; value: number }[];
}

/**
 * A strict parser of the Prometheus text exposition format (0.0.4): every line is a HELP, a TYPE or
 * a sample of the family declared before it; names, label names and escapes as the format says;
 * a value is a float (or +Inf, -Inf, NaN). Anything else throws.
 */
function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const name = '[a-zA-Z_:][a-zA-Z0-9_:]*';
  let current: string | undefined;
  expect(text.endsWith('\n')).toBe(true);
  for (const line of text.slice(0, -1).split('\n')) {
    if (line === '') continue;
    let m: RegExpExecArray | null;
    if ((m = new RegExp(`^# HELP (${name}) (.*)$`).exec(line))) {
      if (families.has(m[1]!)) throw new Error(`HELP of ${m[1]} twice`);
      families.set(m[1]!, { type: 'untyped', help: m[2]!, samples: [] });
      current = m[1];
      continue;
    }
    if ((m = new RegExp(`^# TYPE (${name}) (counter|gauge|histogram|summary|untyped)$`).exec(line))) {
      if (m[1] !== current) throw new Error(`TYPE of ${m[1]} not after its HELP`);
      families.get(m[1]!)!.type = m[2]!;
      continue;
    }
    m = new RegExp(`^(${name})(?:\\{(.*)\\})? (\\S+)$`).exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const [, sample, rawLabels = '', rawValue] = m;
    const family = families.get(current!);
    const suffixes = family?.type === 'histogram' ? ['_bucket', '_sum', '_count'] : family?.type === 'summary' ? ['', '_sum', '_count'] : [''];
    if (!family || !suffixes.some((s) => sample === current + s)) throw new Error(`sample ${sample} outside its family (${current})`);
    const labels: Record<string, string> = {};
    const labelRe = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)/y;
    let at = 0;
    while (at < rawLabels.length) {
      labelRe.lastIndex = at;
      const l = labelRe.exec(rawLabels);
      if (!l) throw new Error(`bad labels: ${rawLabels}`);
      labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_x, c: string) => (c === 'n' ? '\n' : c));
      at = labelRe.lastIndex;
    }
    if (!/^([-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?|[+-]Inf|NaN)$/.test(rawValue!)) throw new Error(`bad value: ${rawValue}`);
    family.samples.push({ name: sample!, labels, value: Number(rawValue!.replace('Inf', 'Infinity')) });
  }
  return families;
}

const scrape = async () => {
  const r = await app.rest('GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(r.status).toBe(200);
  expect(r.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseExposition(r.text);
};
const value = (f: Map<string, Family>, sample: string, labels: Record<string, string>) =>
  f
    .get(sample.replace(/_(bucket|sum|count)$/, '') === sample ? sample : sample.replace(/_(bucket|sum|count)$/, ''))
    ?.samples.find((s) => s.name === sample && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value ?? 0;

describe('/metrics', () => {
  test('is refused without the token (401), with a wrong one (401), and to a non-loopback client without a token configured (403)', async () => {
    expect((await app.rest('GET', '/metrics')).status).toBe(401);
    expect((await app.rest('GET', '/metrics', { headers: { authorization: 'Bearer wrong-token-0123456789' } })).status).toBe(401);
    const open = await createTestApp({ databaseUrl: app.databaseUrl });
    try {
      expect((await open.rest('GET', '/metrics', { clientIp: '203.0.113.9' })).status).toBe(403);
      expect((await open.rest('GET', '/metrics', { clientIp: '127.0.0.1' })).status).toBe(200);
    } finally {
      await open.close();
    }
  });

  test('the same handler serves a plain node:http server (a worker process has one)', async () => {
    const server = createServer(metricsNodeHandler(app.deps));
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
      expect((await fetch(url)).status).toBe(401);
      const r = await fetch(url, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(r.status).toBe(200);
      expect(parseExposition(await r.text()).has('job_runs_total')).toBe(true);
    } finally {
      await new Promise((ok) => server.close(ok));
    }
  });

  test('parses strictly, follows the naming conventions, and counts requests by route template, status and principal type', async () => {
    const member = await signUpMember(app);
    const key = await createApiKey(app, member);
    const created = await app.rest('POST', `/v1/organizations/${member.organizationId}/accounts`, { body: { name: 'm' }, headers: key.headers });
    expect(created.status).toBe(201);
    const accountPath = new URL(created.headers.get('location')!, 'http://x').pathname;
    const accountId = accountPath.split('/').pop()!;

    const before = await scrape();
    const route = { route: '/v1/accounts/{accountId}', method: 'GET', status: '200', principal: 'apiKey' };
    for (let i = 0; i < 3; i++) expect((await app.rest('GET', accountPath, { headers: key.headers })).status).toBe(200);
    expect((await app.rest('GET', accountPath)).status).toBe(401);
    await app.gql('query Probe { __typename }', {}, key.headers);
    const after = await scrape();

    expect(value(after, 'http_requests_total', route) - value(before, 'http_requests_total', route)).toBe(3);
    expect(value(after, 'http_requests_total', { ...route, status: '401', principal: 'none' })).toBeGreaterThanOrEqual(1);
    const hist = { route: '/v1/accounts/{accountId}', method: 'GET', status: '200' };
    expect(value(after, 'http_request_duration_seconds_count', hist) - value(before, 'http_request_duration_seconds_count', hist)).toBe(3);
    expect(value(after, 'http_request_duration_seconds_bucket', { ...hist, le: '+Inf' })).toBe(value(after, 'http_request_duration_seconds_count', hist));
    expect(value(after, 'graphql_operations_total', { operation: 'Probe', type: 'query', outcome: 'ok' })).toBe(1);
    expect(value(after, 'graphql_operations_total', { operation: 'GetAccount', type: 'query', outcome: 'ok' })).toBeGreaterThanOrEqual(3);
    // Never a raw path nor an id in a label.
    const labelValues = [...after.values()].flatMap((f) => f.samples.flatMap((s) => Object.values(s.labels)));
    expect(labelValues.filter((v) => v.includes(accountId))).toEqual([]);

    // Scrape-time gauges: the pool, the queues (pg-boss's counts), the delivery backlog.
    expect(value(after, 'db_pool_connections', { state: 'max' })).toBe(8);
    expect(value(after, 'db_pool_connections', { state: 'total' })).toBeGreaterThan(0);
    expect(after.get('job_queue_jobs')!.samples.some((s) => s.labels.queue === 'webhook.deliver' && s.labels.state === 'ready')).toBe(true);
    expect(after.get('job_queue_oldest_ready_age_seconds')!.samples.length).toBeGreaterThan(0);
    expect(after.get('webhook_endpoint_backlog_deliveries')!.samples.find((s) => s.labels.endpoint === 'all')).toBeDefined();
    // The process's memory (issue 22: bench/memory.ts reads it), under prom-client's default names, read at scrape time.
    expect(value(after, 'process_resident_memory_bytes', {})).toBeGreaterThan(10 * 2 ** 20);
    expect(value(after, 'nodejs_heap_size_used_bytes', {})).toBeGreaterThan(0);
    expect(value(after, 'nodejs_heap_size_used_bytes', {})).toBeLessThanOrEqual(value(after, 'nodejs_heap_size_total_bytes', {}));
    expect(after.get('nodejs_external_memory_bytes')?.type).toBe('gauge');
    expect(value(after, 'nodejs_array_buffers_bytes', {})).toBeGreaterThan(0);
    // Each V8 heap space (issue 22, point 3: old space size against its use tells the collector's sizing from a leak).
    expect(value(after, 'nodejs_heap_space_size_used_bytes', { space: 'old' })).toBeGreaterThan(0);
    expect(value(after, 'nodejs_heap_space_size_used_bytes', { space: 'old' })).toBeLessThanOrEqual(
      value(after, 'nodejs_heap_space_size_total_bytes', { space: 'old' }),
    );
    expect(value(after, 'nodejs_heap_space_size_total_bytes', { space: 'new' })).toBeGreaterThan(0);
    // The ledger: the account's creation posted nothing yet, but the families are declared.
    for (const n of ['ledger_postings_total', 'webhook_delivery_attempts_total', 'job_runs_total', 'chain_watcher_lag_blocks']) expect(after.has(n)).toBe(true);

    // Prometheus conventions: counters end in _total, durations in _seconds; every family has help.
    for (const [n, f] of after) {
      if (f.type === 'counter') expect(n).toMatch(/_total$/);
      if (n.includes('duration')) expect(n).toMatch(/_seconds$/);
      expect(f.help.length).toBeGreaterThan(10);
    }
  });
});
