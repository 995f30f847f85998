import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { createOperator, createTestApp, type RestResult, type TestApp } from './harness';
import { checkLedgerInvariants } from './ledger-invariants';
import { checkSandboxInvariants } from './sandbox-invariants';
import { eventsOf, type MoneyFixture } from './fixtures/deposits/testing';
import { withdrawalTesting, type WithdrawalSetup } from './fixtures/withdrawals/testing';
import { webhookEnv } from './webhook-helpers';

/**
 * The attack kit of test/attack-groups*.test.ts (issue 22, point 5): one app per test file, bursts
 * of concurrent requests compared with the same requests sent alone, hostile bodies, and the
 * outcome checks (audit entries with each request's own identity, balances, events).
 */
export let app: TestApp;
export let op: { operatorId: string; key: string; headers: Record<string, string> };
/** Every credential the file handed out: none may appear in a log line. */
export const secrets = new Set<string>();
/** The file's app (logs captured), an operator, and after each test: invariants, no fault logged, no 5xx, no credential in a log line. */
export function useAttackApp(): void {
  beforeAll(async () => {
    // Webhook receivers on 127.0.0.1 are allowed (an attack registers an endpoint mid-burst).
    app = await createTestApp({ captureLogs: true, env: webhookEnv });
    op = await createOperator(app);
    secrets.add(op.key);
  });
  afterAll(() => app.close());
  afterEach(async () => {
    await checkLedgerInvariants(app.deps.db);
    await checkSandboxInvariants(app.deps.db);
    const lines = app.logs.map((l) => JSON.parse(l) as { level: number; msg: string; status?: number });
    // No request answered 5xx (the adapter logs every REST answer's status).
    expect(lines.filter((l) => l.msg === 'rest' && l.status! >= 500)).toEqual([]);
    // No fault (an `unexpected error` is logged at error with its stack) and no credential anywhere.
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
    for (const line of app.logs) for (const s of secrets) expect(line.includes(s), 'a credential in a log line').toBe(false);
  });
}

// ------------------------------------------------------------------------------------------------
// Helpers

export const idOf = (r: { headers: Headers }) => r.headers.get('location')!.split('/').pop()!;

/** A request of a burst; `kind` says what it must answer: success, or exactly what it answers alone. */
export interface Req {
  label: string;
  method?: string;
  path: string;
  body?: unknown;
  raw?: string;
  headers: Record<string, string>;
  kind: 'ok' | 'refused';
}

export async function send(r: Req): Promise<RestResult> {
  const headers = r.raw !== undefined ? { 'content-type': 'application/json', ...r.headers } : r.headers;
  return app.rest(r.method ?? 'POST', r.path, { body: r.body, raw: r.raw, headers });
}

/** An answer without what differs between two identical requests (the request id). */
export function norm(r: RestResult) {
  const body = r.body && typeof r.body === 'object' && !Array.isArray(r.body) ? { ...r.body } : r.text;
  if (typeof body === 'object') delete (body as Record<string, unknown>).requestId;
  return { status: r.status, body, retryAfter: r.headers.get('retry-after') };
}

export function shuffle<T>(xs: T[]): T[] {
  const a = [...xs];
  for (let i = a.length - 1; i > 0; i--) {
    const j = randomBytes(1)[0]! % (i + 1);
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

/**
 * Sends each refused request alone first (its reference answer), then every request at once in a
 * shuffled burst. Checks: no 5xx; a 400 carries field errors; a refused request answers in the burst
 * exactly what it answered alone; a valid one succeeds. Answers the burst's answers by request.
 */
export async function attack(reqs: Req[]): Promise<Map<Req, RestResult>> {
  const alone = new Map<Req, ReturnType<typeof norm>>();
  for (const r of reqs.filter((q) => q.kind === 'refused')) {
    const a = await send(r);
    expect(a.status, `${r.label} alone: ${a.text}`).toBeGreaterThanOrEqual(400);
    expect(a.status, `${r.label} alone: ${a.text}`).toBeLessThan(500);
    if (a.status === 400) expect(a.body?.errors?.length, `${r.label}: field errors`).toBeGreaterThan(0);
    alone.set(r, norm(a));
  }
  const order = shuffle(reqs);
  const answers = await Promise.all(order.map(send));
  const byReq = new Map<Req, RestResult>();
  for (const [i, r] of order.entries()) byReq.set(r, answers[i]!);
  const problems: string[] = [];
  for (const r of reqs) {
    const a = byReq.get(r)!;
    if (a.status >= 500) problems.push(`${r.label}: ${a.status} ${a.text}`);
    else if (r.kind === 'ok' && (a.status < 200 || a.status > 299)) problems.push(`${r.label}: expected success, got ${a.status} ${a.text}`);
    else if (r.kind === 'refused' && JSON.stringify(norm(a)) !== JSON.stringify(alone.get(r)))
      problems.push(`${r.label}: alone ${JSON.stringify(alone.get(r))}, in the burst ${JSON.stringify(norm(a))}`);
  }
  expect(problems).toEqual([]);
  return byReq;
}

export const TWO_256 = 2n ** 256n;
/** Amounts no path may accept (400 on the amount, whatever the path). */
export const BAD_AMOUNTS: [string, unknown][] = [
  ['a number', 1000],
  ['negative', '-5'],
  ['zero', '0'],
  ['decimals', '1.5'],
  ['2^256', TWO_256.toString()],
  ['10^80', (10n ** 80n).toString()],
  ['empty', ''],
  ['exponent', '1e6'],
  ['hex', '0x10'],
  ['a plus sign', '+1'],
  ['spaces', ' 1'],
  ['null', null],
  ['true', true],
  ['an object', { value: '1' }],
  ['an array', ['1']],
  ['a NUL byte', '1\u00002'],
  ['leading zeros', '007'],
  ['zeros', '00'],
  ['minus zero', '-0'],
  ['underscores', '1_000'],
  ['full-width digits', '\uFF11\uFF12'],
  ['Arabic-Indic digit', '\u0663'],
  ['a trailing newline', '1\n'],
  ['Infinity', 'Infinity'],
  ['NaN', 'NaN'],
  ['binary', '0b1'],
  ['a BigInt literal', '1n'],
  ['no integer part', '.5'],
];

/**
 * Hostile variants of `base` (a valid body): bad amounts, control characters and huge strings in
 * `textField`, wrong types, a missing required field, an unknown field, a deeply nested value, and
 * raw bodies that are not the JSON they claim (bad escapes, a lone surrogate, truncated, not an object).
 */
export function hostileBodies(base: Record<string, unknown>, opts: { amountField?: string; textField: string; requiredField: string; idField: string }) {
  const out: { label: string; body?: unknown; raw?: string }[] = [];
  if (opts.amountField) for (const [label, v] of BAD_AMOUNTS) out.push({ label: `amount ${label}`, body: { ...base, [opts.amountField]: v } });
  let deep: unknown = 'x';
  for (let i = 0; i < 64; i++) deep = { d: deep };
  const rawBase = JSON.stringify(base);
  out.push(
    { label: 'NUL in text', body: { ...base, [opts.textField]: 'a\u0000b' } },
    { label: 'bidi override in text', body: { ...base, [opts.textField]: 'abc\u202Edef' } },
    { label: 'C1 control in text', body: { ...base, [opts.textField]: 'a\u0085b' } },
    { label: 'huge text', body: { ...base, [opts.textField]: 'x'.repeat(200_000) } },
    { label: 'text a number', body: { ...base, [opts.textField]: 5 } },
    { label: 'text an object', body: { ...base, [opts.textField]: { a: 1 } } },
    { label: 'id a number', body: { ...base, [opts.idField]: 12 } },
    { label: 'id not a uuid', body: { ...base, [opts.idField]: 'not-a-uuid\u0000' } },
    { label: 'missing required', body: Object.fromEntries(Object.entries(base).filter(([k]) => k !== opts.requiredField)) },
    { label: 'unknown field', body: { ...base, isAdmin: true } },
    { label: 'deep object', body: { ...base, extra: deep } },
    { label: 'raw bad escape', raw: rawBase.replace(/}$/, `,"${opts.textField}x":"\\x41"}`) },
    { label: 'raw lone surrogate in text', raw: JSON.stringify({ ...base, [opts.textField]: 'PLACEHOLDER' }).replace('PLACEHOLDER', 'a\\ud800b') },
    { label: 'raw NUL escape in text', raw: JSON.stringify({ ...base, [opts.textField]: 'PLACEHOLDER' }).replace('PLACEHOLDER', 'a\\u0000b') },
    { label: 'raw truncated', raw: rawBase.slice(0, -3) },
    { label: 'raw not an object', raw: '[1,2,3]' },
    { label: 'raw null', raw: 'null' },
    { label: 'raw duplicate keys', raw: rawBase.replace(/}$/, `,"${opts.requiredField}":12}`) },
  );
  return out;
}

/** The audit entries naming `entityId` (operator search). */
export async function auditOf(entityId: string): Promise<{ actionType?: string; action?: string; organizationId?: string }[]> {
  const r = await app.rest('GET', `/v1/admin/audit-log?entityId=${entityId}&take=50`, { headers: op.headers });
  expect(r.status, r.text).toBe(200);
  return (r.body.items ?? r.body.entries ?? r.body) as never;
}

export interface AuditEntry {
  organizationId: string;
  actorType: string;
  actorId: string;
  entityId: string;
  action: string;
  requestId: string;
  after: Record<string, unknown> | null;
}
/**
 * The request's own audit entry: exactly one `action` entry for the entity, written with the
 * request's id (its X-Request-Id), its organization and its caller: a group writes each request's
 * entry with that request's identity, never a neighbour's.
 */
export async function expectOwnAudit(
  entityId: string,
  res: RestResult,
  who: { organizationId: string; actorType: 'API_KEY' | 'MEMBER'; actorId?: string },
  action: string,
) {
  const entries = ((await auditOf(entityId)) as unknown as AuditEntry[]).filter((e) => e.action === action);
  expect(entries, `${action} ${entityId}`).toHaveLength(1);
  expect(entries[0]).toMatchObject({ organizationId: who.organizationId, actorType: who.actorType, requestId: res.headers.get('x-request-id') });
  if (who.actorId) expect(entries[0]!.actorId).toBe(who.actorId);
  return entries[0]!;
}

export function remember(f: MoneyFixture) {
  secrets.add(f.apiKeyHeaders['x-api-key']!);
  secrets.add(f.member.tokens.accessToken);
  secrets.add(f.member.tokens.refreshToken);
  return f;
}

export const gqlVia = (query: string, variables: Record<string, unknown>, headers: Record<string, string>) => app.gql(query, variables, headers);

// ------------------------------------------------------------------------------------------------

export const DEST = '0x00000000000000000000000000000000000000e7';
export const wt = withdrawalTesting(() => app, DEST);

/** An account's balance on the fixture's asset-network, as its organization's member reads it. */
export async function balanceOf(s: WithdrawalSetup, accountId = s.accountId) {
  const r = await app.rest('GET', `/v1/accounts/${accountId}/balances`, { headers: s.f.member.headers });
  expect(r.status, r.text).toBe(200);
  const row = (r.body as { assetNetworkId: string; posted: string; available: string }[]).find((x) => x.assetNetworkId === s.f.catalog.assetNetworkId);
  return { posted: BigInt(row?.posted ?? 0), available: BigInt(row?.available ?? 0) };
}
export const requested = async (s: WithdrawalSetup) =>
  (await eventsOf(app, s.f.organizationId)).filter((e) => e.type === 'withdrawal.requested').map((e) => e.body.WithdrawalId as string);
