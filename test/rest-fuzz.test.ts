import { afterAll, beforeAll, expect, test } from 'vitest';
import { hashPassword } from '../src/auth/passwords';
import { bearer, createApiKey, createOperator, createTestApp, PASSWORD, signUpMember, uniqueEmail, type TestApp } from './harness';

/**
 * A REST fuzz generated from the OpenAPI document (GET /v1/openapi.json): every operation is
 * called with a credential its security accepts and with request bodies, query parameters and
 * path parameters mutated from their schemas (wrong types, missing required fields, nulls, huge
 * strings, NUL and control characters, numbers for ids, arrays for objects, deep nesting, unknown
 * fields). No answer may be 5xx; every 400 is a problem body with `errors[]`. Deterministic: a
 * fixed seed, at most PER_OPERATION requests per operation.
 */

const PER_OPERATION = 20;
type Schema = Record<string, any>;

let app: TestApp;
let doc: Schema;
const credentials: Record<string, Record<string, string>> = {};
let organizationId: string;

beforeAll(async () => {
  app = await createTestApp();
  doc = (await app.rest('GET', '/v1/openapi.json')).body;
  const owner = await signUpMember(app);
  organizationId = owner.organizationId;
  credentials.MemberBearer = owner.headers;
  credentials.ApiKey = (await createApiKey(app, owner)).headers;
  credentials.OperatorKey = (await createOperator(app)).headers;
  const email = uniqueEmail('holder');
  await app.deps.db.accountHolder.create({
    data: { email, name: 'Holder', passwordHash: await hashPassword(PASSWORD), credentialsChangedAt: new Date(app.clock.now().getTime() - 5000) },
  });
  const login = await app.rest('POST', '/v1/account-holders/login', { body: { email, password: PASSWORD } });
  credentials.AccountHolderBearer = bearer(login.body.accessToken);
});
afterAll(() => app.close());

/** mulberry32: a small deterministic PRNG. */
function prng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function resolveRef(s: Schema | undefined): Schema {
  let out = s ?? {};
  for (let i = 0; out.$ref && i < 10; i++) out = doc.components.schemas[String(out.$ref).split('/').pop()!];
  if (out.oneOf || out.anyOf) {
    const alts = (out.oneOf ?? out.anyOf) as Schema[];
    out = resolveRef(alts.find((a) => a.type !== 'null') ?? alts[0]);
  }
  return out;
}

/** A plausible value of a schema (valid enough to reach the resolvers when the ids exist). */
function sample(s0: Schema | undefined, depth = 0): unknown {
  const s = resolveRef(s0);
  const type = Array.isArray(s.type) ? s.type.find((t: string) => t !== 'null') : s.type;
  if (s.enum) return s.enum[0];
  if (type === 'object' || s.properties) {
    const out: Record<string, unknown> = {};
    if (depth > 4) return out;
    for (const k of (s.required ?? []) as string[]) out[k] = sample(s.properties?.[k], depth + 1);
    return out;
  }
  if (type === 'array') return [sample(s.items, depth + 1)];
  if (type === 'integer') return 1;
  if (type === 'number') return 1;
  if (type === 'boolean') return true;
  if (s.format === 'uuid') return crypto.randomUUID();
  if (s.format === 'date-time') return new Date(app.clock.now().getTime() + 3_600_000).toISOString();
  if (s.format === 'email') return uniqueEmail('fuzz');
  return '1';
}

const hostileValues: unknown[] = [
  null,
  12345,
  -1,
  1.5,
  1e308,
  true,
  {},
  [],
  [[[]]],
  'x'.repeat(200_000),
  'a\u0000b',
  'a\u0007b',
  'gnp.\u202eexe',
  '\ud800',
  '',
  '   ',
  '../../etc/passwd',
  "' OR 1=1 --",
  '{"$gt":""}',
  JSON.parse('{"__proto__":{"polluted":true}}'),
  '9'.repeat(400),
  '-0',
  'NaN',
];

function deep(n: number): unknown {
  let v: unknown = 'leaf';
  for (let i = 0; i < n; i++) v = { a: v };
  return v;
}

/** Body mutations: every top-level field replaced or removed, the body itself replaced. */
function bodyMutations(schema: Schema | undefined, rand: () => number): unknown[] {
  const s = resolveRef(schema);
  const base = sample(s) as Record<string, unknown>;
  const out: unknown[] = [base, [base], 'body', 42, deep(2000), { ...base, unknownField: 'x' }];
  const props = Object.keys(s.properties ?? {});
  for (const k of props) {
    const { [k]: _gone, ...rest } = base;
    out.push(rest);
    const p = resolveRef(s.properties[k]);
    if (p.format === 'uuid') out.push({ ...base, [k]: 12345 });
    if (p.type === 'string' || (Array.isArray(p.type) && p.type.includes('string'))) out.push({ ...base, [k]: 'a\u0000b' });
    for (let i = 0; i < 2; i++) out.push({ ...base, [k]: hostileValues[Math.floor(rand() * hostileValues.length)] });
    if (p.type === 'object' || p.properties) out.push({ ...base, [k]: deep(200) });
    if (p.type === 'array')
      out.push({ ...base, [k]: [sample(p.items), ...Array.from({ length: 3 }, () => hostileValues[Math.floor(rand() * hostileValues.length)])] });
  }
  return out;
}

const operations = () =>
  Object.entries(doc.paths as Record<string, Record<string, Schema>>).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([m]) => ['get', 'post', 'put', 'delete'].includes(m))
      .map(([method, op]) => ({ path, method: method.toUpperCase(), op })),
  );

test('no hostile request answers 5xx; every 400 is a problem body with field errors', async () => {
  const rand = prng(20260114);
  let sent = 0;
  const statuses: Record<number, number> = {};
  const failures: string[] = [];
  for (const { path, method, op } of operations()) {
    if (path === '/v1/openapi.json') continue;
    const schemes = ((op.security ?? []) as Record<string, unknown>[]).flatMap((s) => Object.keys(s));
    const headers = schemes.length ? (credentials[schemes[0]!] ?? {}) : {};
    const params = ((op.parameters ?? []) as Schema[]).map((p) => (p.$ref ? resolveRef(p) : p));
    const pathFor = (hostile?: string) =>
      path.replace(/\{(\w+)\}/g, (_m, n: string) => hostile ?? (n === 'organizationId' ? organizationId : crypto.randomUUID()));
    const requests: { path: string; body?: unknown; raw?: string; query?: string }[] = [];
    const bodySchema = op.requestBody?.content?.['application/json']?.schema;
    if (bodySchema) for (const body of bodyMutations(bodySchema, rand)) requests.push({ path: pathFor(), body });
    for (const p of params.filter((x) => x.in === 'query')) {
      for (const v of ['abc', '-1', '1e999', '99999999999', '', '%00', '%E2%80%AE', 'x'.repeat(5000), '%zz'])
        requests.push({ path: pathFor(), query: `${encodeURIComponent(p.name)}=${v}` });
    }
    if (path.includes('{')) for (const v of ['%zz', '%00', '12345', 'x'.repeat(300), '%E2%80%AE']) requests.push({ path: pathFor(v) });
    if (bodySchema) requests.push({ path: pathFor(), raw: '{"unterminated' }, { path: pathFor(), raw: 'null' });
    // A deterministic sample per operation keeps the run bounded.
    const chosen =
      requests.length <= PER_OPERATION
        ? requests
        : requests
            .map((r) => [rand(), r] as const)
            .sort((a, b) => a[0] - b[0])
            .slice(0, PER_OPERATION)
            .map(([, r]) => r);
    for (const r of chosen) {
      const url = r.query ? `${r.path}?${r.query}` : r.path;
      const res = await app.rest(method, url, {
        headers: r.raw !== undefined ? { ...headers, 'content-type': 'application/json' } : headers,
        ...(r.raw !== undefined ? { raw: r.raw } : r.body !== undefined ? { body: r.body } : {}),
      });
      sent++;
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      const what = `${method} ${url.slice(0, 200)} ${JSON.stringify(r.body ?? r.raw ?? null)?.slice(0, 200)} → ${res.status} ${res.text.slice(0, 400)}`;
      if (res.status >= 500 && res.status !== 501) failures.push(what);
      else if (res.status === 400) {
        const b = res.body;
        const fine =
          b &&
          typeof b.code === 'string' &&
          b.status === 400 &&
          typeof b.type === 'string' &&
          Array.isArray(b.errors) &&
          b.errors.length > 0 &&
          b.errors.every((e: Schema) => typeof e.field === 'string' && typeof e.message === 'string' && typeof e.code === 'string');
        if (!fine) failures.push(what);
      }
    }
  }
  expect(failures).toEqual([]);
  expect(sent).toBeGreaterThan(1000);
  expect(sent).toBeLessThan(5000);
  // Most requests must be refused as input, not merely as unknown resources.
  expect(statuses[400]! / sent).toBeGreaterThan(0.5);
}, 600_000);
