import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { bearer, createApiKey, createOperator, createTestApp, PASSWORD, restResultOf, uniqueEmail, type RestResult, type TestApp } from './harness';
import { checkLedgerInvariants } from './ledger-invariants';
import { checkSandboxInvariants } from './sandbox-invariants';
import { sandboxMine, sandboxSend } from './money-helpers';
import { eventsOf, moneyFixture, type MoneyFixture } from './fixtures/deposits/testing';
import { drainMoneyWork, fundedTransaction } from './fixtures/settlements/testing';
import { withdrawalTesting, type WithdrawalSetup } from './fixtures/withdrawals/testing';

/**
 * Attacks on the group-committed write paths (issue 22, point 5: "nothing weaker"), from outside:
 * REST and GraphQL only, as a client, a fuzzer and an attacker would send them. Account creation,
 * payment intents, sandbox sends and withdrawal requests are written several clients' requests to
 * one transaction; settlements are executed in groups by their job. Each attack fires a burst of
 * concurrent requests (so they land in one group) mixing two organizations' valid requests, hostile
 * bodies, business refusals, tenant-crossing requests and Idempotency-Key replays, and checks that
 * every refused request answers exactly what it answers when sent alone, that every valid one
 * succeeds, and that what was written is exactly the accepted requests' (resources, audit entries,
 * events, balances, ledger and sandbox invariants), with no 500 and no credential in any log line.
 */
let app: TestApp;
let op: { operatorId: string; key: string; headers: Record<string, string> };
/** Every credential the file handed out: none may appear in a log line. */
const secrets = new Set<string>();

beforeAll(async () => {
  app = await createTestApp({ captureLogs: true });
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

// ------------------------------------------------------------------------------------------------
// Helpers

const idOf = (r: { headers: Headers }) => r.headers.get('location')!.split('/').pop()!;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A request of a burst; `kind` says what it must answer: success, or exactly what it answers alone. */
interface Req {
  label: string;
  method?: string;
  path: string;
  body?: unknown;
  raw?: string;
  headers: Record<string, string>;
  kind: 'ok' | 'refused';
}

async function send(r: Req): Promise<RestResult> {
  const headers = r.raw !== undefined ? { 'content-type': 'application/json', ...r.headers } : r.headers;
  return app.rest(r.method ?? 'POST', r.path, { body: r.body, raw: r.raw, headers });
}

/** An answer without what differs between two identical requests (the request id). */
function norm(r: RestResult) {
  const body = r.body && typeof r.body === 'object' && !Array.isArray(r.body) ? { ...r.body } : r.text;
  if (typeof body === 'object') delete (body as Record<string, unknown>).requestId;
  return { status: r.status, body, retryAfter: r.headers.get('retry-after') };
}

function shuffle<T>(xs: T[]): T[] {
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
async function attack(reqs: Req[]): Promise<Map<Req, RestResult>> {
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

const TWO_256 = 2n ** 256n;
/** Amounts no path may accept (400 on the amount, whatever the path). */
const BAD_AMOUNTS: [string, unknown][] = [
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
];

/**
 * Hostile variants of `base` (a valid body): bad amounts, control characters and huge strings in
 * `textField`, wrong types, a missing required field, an unknown field, a deeply nested value, and
 * raw bodies that are not the JSON they claim (bad escapes, a lone surrogate, truncated, not an object).
 */
function hostileBodies(base: Record<string, unknown>, opts: { amountField?: string; textField: string; requiredField: string; idField: string }) {
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
async function auditOf(entityId: string): Promise<{ actionType?: string; action?: string; organizationId?: string }[]> {
  const r = await app.rest('GET', `/v1/admin/audit-log?entityId=${entityId}&take=50`, { headers: op.headers });
  expect(r.status, r.text).toBe(200);
  return (r.body.items ?? r.body.entries ?? r.body) as never;
}

interface AuditEntry {
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
async function expectOwnAudit(
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

function remember(f: MoneyFixture) {
  secrets.add(f.apiKeyHeaders['x-api-key']!);
  secrets.add(f.member.tokens.accessToken);
  secrets.add(f.member.tokens.refreshToken);
  return f;
}

const gqlVia = (query: string, variables: Record<string, unknown>, headers: Record<string, string>) => app.gql(query, variables, headers);

// ------------------------------------------------------------------------------------------------

describe('REST account creation in groups', () => {
  test('a burst of two organizations\u2019 creations, hostile bodies, tenant crossings and reference clashes: each answered as alone, exactly the accepted ones written', async () => {
    const a = remember(await moneyFixture(app));
    const b = remember(await moneyFixture(app));
    const pathA = `/v1/organizations/${a.organizationId}/accounts`;
    const pathB = `/v1/organizations/${b.organizationId}/accounts`;
    const taken = `ref-${randomBytes(4).toString('hex')}`;
    const existing = await app.rest('POST', pathA, { headers: a.apiKeyHeaders, body: { name: 'Existing', reference: taken } });
    expect(existing.status, existing.text).toBe(201);
    const listed = async (org: string, headers: Record<string, string>) =>
      ((await app.rest('GET', `/v1/organizations/${org}/accounts?limit=200`, { headers })).body as { id: string }[]).map((x) => x.id);
    const beforeA = await listed(a.organizationId, a.member.headers);
    const beforeB = await listed(b.organizationId, b.member.headers);

    const base = { name: 'Burst account' };
    const clash = `clash-${randomBytes(4).toString('hex')}`;
    const reqs: Req[] = [
      ...Array.from({ length: 10 }, (_, i): Req => ({
        label: `A valid ${i}`,
        path: pathA,
        headers: a.apiKeyHeaders,
        body: { name: `A ${i}`, reference: `a-${i}-${clash}` },
        kind: 'ok',
      })),
      ...Array.from({ length: 4 }, (_, i): Req => ({
        label: `A member valid ${i}`,
        path: pathA,
        headers: a.member.headers,
        body: { name: `A m ${i}` },
        kind: 'ok',
      })),
      ...Array.from({ length: 8 }, (_, i): Req => ({
        label: `B valid ${i}`,
        path: pathB,
        headers: b.apiKeyHeaders,
        body: { name: `B ${i}`, reference: `b-${i}-${clash}` },
        kind: 'ok',
      })),
      // Tenant crossings: A's credentials on B's organization.
      { label: "A's key on B's organization", path: pathB, headers: a.apiKeyHeaders, body: base, kind: 'refused' },
      { label: "A's member on B's organization", path: pathB, headers: a.member.headers, body: base, kind: 'refused' },
      { label: 'no credential', path: pathA, headers: {}, body: base, kind: 'refused' },
      // Business refusals.
      { label: 'reference taken', path: pathA, headers: a.apiKeyHeaders, body: { name: 'Dup', reference: taken }, kind: 'refused' },
      {
        label: 'unknown holder',
        path: pathA,
        headers: a.apiKeyHeaders,
        body: { name: 'H', accountHolderId: '00000000-0000-7000-8000-000000000001' },
        kind: 'refused',
      },
      // B's taken reference is free in A: B's reference used by A succeeds (ok), A's taken one in B succeeds too.
      { label: "A's taken reference in B", path: pathB, headers: b.apiKeyHeaders, body: { name: 'B has it free', reference: taken }, kind: 'ok' },
      ...hostileBodies({ name: 'Hostile', reference: 'r' }, { textField: 'name', requiredField: 'name', idField: 'accountHolderId' }).map((h): Req => ({
        label: `hostile ${h.label}`,
        path: pathA,
        headers: a.apiKeyHeaders,
        body: h.body,
        raw: h.raw,
        kind: 'refused',
      })),
    ];
    // Two requests with one new reference in the burst: one wins, the other is the 409 of a taken reference.
    const twins: Req[] = [0, 1].map((i) => ({
      label: `twin ${i}`,
      path: pathA,
      headers: a.apiKeyHeaders,
      body: { name: `Twin ${i}`, reference: `twin-${clash}` },
      kind: 'ok',
    }));
    const [answers, twinAnswers, gqlAnswers] = await Promise.all([
      attack(reqs),
      Promise.all(twins.map(send)),
      Promise.all(
        [0, 1, 2].map((i) =>
          gqlVia(
            'mutation($o: ID!, $i: CreateAccountInput!) { createAccount(organizationId: $o, input: $i) { id name } }',
            { o: a.organizationId, i: { name: `A gql ${i}` } },
            a.apiKeyHeaders,
          ),
        ),
      ),
    ]);
    expect(twinAnswers.map((t) => t.status).sort()).toEqual([201, 409]);
    const lost = twinAnswers.find((t) => t.status === 409)!;
    const refTaken = norm(
      await send({ label: 'dup', path: pathA, headers: a.apiKeyHeaders, body: { name: 'Dup', reference: `twin-${clash}` }, kind: 'refused' }),
    );
    expect(norm(lost)).toEqual(refTaken);
    for (const g of gqlAnswers) expect(g.errors, JSON.stringify(g.errors)).toBeUndefined();

    const created = (org: string) => [...answers.entries()].filter(([r, res]) => res.status === 201 && r.path.includes(org)).map(([, res]) => idOf(res));
    const createdA = [
      ...created(a.organizationId),
      ...twinAnswers.filter((t) => t.status === 201).map(idOf),
      ...gqlAnswers.map((g) => (g.data as any).createAccount.id),
    ];
    const createdB = created(b.organizationId);
    expect(createdA).toHaveLength(10 + 4 + 1 + 3);
    expect(createdB).toHaveLength(8 + 1);
    // Exactly the accepted ones exist, each in its own organization only.
    expect((await listed(a.organizationId, a.member.headers)).sort()).toEqual([...beforeA, ...createdA].sort());
    expect((await listed(b.organizationId, b.member.headers)).sort()).toEqual([...beforeB, ...createdB].sort());
    const byKeyA = [...answers.entries()].filter(([r]) => r.label.startsWith('A valid')).map(([, res]) => idOf(res));
    for (const id of byKeyA.slice(0, 4)) {
      expect((await app.rest('GET', `/v1/accounts/${id}`, { headers: a.apiKeyHeaders })).status).toBe(200);
      expect((await app.rest('GET', `/v1/accounts/${id}`, { headers: b.apiKeyHeaders })).status).toBe(404);
    }
    // One audit entry per accepted creation, with its own request id, organization and caller.
    for (const id of [...createdA, ...createdB]) expect(await auditOf(id), id).toHaveLength(1);
    const actors = new Map<string, string>();
    for (const [r, res] of answers) {
      if (res.status !== 201) continue;
      const org = r.path === pathA ? a.organizationId : b.organizationId;
      const member = r.headers === a.member.headers;
      const e = await expectOwnAudit(
        idOf(res),
        res,
        { organizationId: org, actorType: member ? 'MEMBER' : 'API_KEY', actorId: member ? a.member.memberId : undefined },
        'account.created',
      );
      expect(e.after).toMatchObject({ name: (r.body as { name: string }).name });
      const who = `${org} ${member}`;
      expect(actors.get(who) ?? e.actorId, who).toBe(e.actorId);
      actors.set(who, e.actorId);
    }
    expect(new Set(actors.values()).size).toBe(3);
  });

  test('Idempotency-Key: one key sent 8 times at once (one account, identical answers), with two bodies (one wins, the others 409), across bursts, and shared by two organizations (no collision)', async () => {
    const a = remember(await moneyFixture(app));
    const b = remember(await moneyFixture(app));
    const pathA = `/v1/organizations/${a.organizationId}/accounts`;
    const pathB = `/v1/organizations/${b.organizationId}/accounts`;
    const key = `k-${randomBytes(6).toString('hex')}`;
    const key2 = `k2-${randomBytes(6).toString('hex')}`;
    const same = (i: number): Req => ({
      label: `A same ${i}`,
      path: pathA,
      headers: { ...a.apiKeyHeaders, 'idempotency-key': key },
      body: { name: 'Keyed' },
      kind: 'ok',
    });
    const sameB = (i: number): Req => ({
      label: `B same ${i}`,
      path: pathB,
      headers: { ...b.apiKeyHeaders, 'idempotency-key': key },
      body: { name: 'Keyed' },
      kind: 'ok',
    });
    const two = (i: number): Req => ({
      label: `A two bodies ${i}`,
      path: pathA,
      headers: { ...a.apiKeyHeaders, 'idempotency-key': key2 },
      body: { name: i % 2 ? 'Odd' : 'Even' },
      kind: 'ok',
    });
    const unkeyed = (i: number): Req => ({ label: `A unkeyed ${i}`, path: pathA, headers: a.apiKeyHeaders, body: { name: `U ${i}` }, kind: 'ok' });
    const reqs = [
      ...Array.from({ length: 8 }, (_, i) => same(i)),
      ...Array.from({ length: 6 }, (_, i) => sameB(i)),
      ...Array.from({ length: 8 }, (_, i) => two(i)),
      ...Array.from({ length: 8 }, (_, i) => unkeyed(i)),
    ];
    const answers = await Promise.all(shuffle(reqs).map(async (r) => [r, await send(r)] as const));
    const of = (p: string) => answers.filter(([r]) => r.label.startsWith(p)).map(([, res]) => res);
    const sameAnswers = of('A same');
    expect(
      new Set(sameAnswers.map((r) => JSON.stringify([r.status, r.headers.get('location'), r.text]))).size,
      JSON.stringify(sameAnswers.map((r) => r.status)),
    ).toBe(1);
    expect(sameAnswers[0]!.status).toBe(201);
    const bAnswers = of('B same');
    expect(new Set(bAnswers.map((r) => JSON.stringify([r.status, r.headers.get('location')]))).size).toBe(1);
    expect(bAnswers[0]!.status).toBe(201);
    expect(idOf(bAnswers[0]!)).not.toBe(idOf(sameAnswers[0]!));
    // Two bodies on one key: every request of the winning body answers the same account, the others 409.
    const twoAnswers = answers.filter(([r]) => r.label.startsWith('A two'));
    const winners = twoAnswers.filter(([, res]) => res.status === 201);
    expect(winners.length).toBeGreaterThan(0);
    const winningName = (winners[0]![0].body as { name: string }).name;
    for (const [r, res] of twoAnswers) {
      if ((r.body as { name: string }).name === winningName)
        expect([res.status, res.headers.get('location')]).toEqual([201, winners[0]![1].headers.get('location')]);
      else expect([res.status, res.body.code], res.text).toEqual([409, 'IDEMPOTENCY_KEY_REUSED']);
    }
    for (const res of of('A unkeyed')) expect(res.status, res.text).toBe(201);
    // Across bursts: the same key answers the same account again.
    const again = await Promise.all([0, 1, 2].map((i) => send(same(i))));
    for (const r of again) expect([r.status, r.headers.get('location')]).toEqual([201, sameAnswers[0]!.headers.get('location')]);
    // What exists: one account per key and organization, the 8 unkeyed ones.
    const names = (
      (await app.rest('GET', `/v1/organizations/${a.organizationId}/accounts?limit=200`, { headers: a.member.headers })).body as { name: string }[]
    ).map((x) => x.name);
    expect(names.filter((n) => n === 'Keyed')).toHaveLength(1);
    expect(names.filter((n) => n === 'Odd' || n === 'Even')).toHaveLength(1);
    expect(names.filter((n) => n.startsWith('U '))).toHaveLength(8);
    const namesB = (
      (await app.rest('GET', `/v1/organizations/${b.organizationId}/accounts?limit=200`, { headers: b.member.headers })).body as { name: string }[]
    ).map((x) => x.name);
    expect(namesB.filter((n) => n === 'Keyed')).toHaveLength(1);
    expect(await auditOf(idOf(sameAnswers[0]!))).toHaveLength(1);
  });
});

// ------------------------------------------------------------------------------------------------

describe('payment intents in groups', () => {
  test('a burst of two organizations\u2019 intents, hostile bodies, foreign accounts/wallets/asset-networks, a frozen beneficiary and reference clashes: each answered as alone, exactly the accepted ones written', async () => {
    const a = remember(await moneyFixture(app));
    const b = remember(await moneyFixture(app));
    const pathA = `/v1/organizations/${a.organizationId}/payment-intents`;
    const pathB = `/v1/organizations/${b.organizationId}/payment-intents`;
    const baseA = { assetNetworkId: a.catalog.assetNetworkId, amount: '1000', beneficiaryAccountId: a.beneficiaryAccountId, walletId: a.walletId };
    const baseB = { assetNetworkId: b.catalog.assetNetworkId, amount: '2000', beneficiaryAccountId: b.beneficiaryAccountId, walletId: b.walletId };
    const taken = `pi-${randomBytes(4).toString('hex')}`;
    const first = await app.rest('POST', pathA, { headers: a.apiKeyHeaders, body: { ...baseA, reference: taken } });
    expect(first.status, first.text).toBe(201);
    // A frozen beneficiary of A's.
    const frozen = await app.rest('POST', `/v1/organizations/${a.organizationId}/accounts`, { headers: a.apiKeyHeaders, body: { name: 'Frozen' } });
    expect(frozen.status).toBe(201);
    expect((await app.rest('POST', `/v1/accounts/${idOf(frozen)}/freeze`, { headers: a.member.headers, body: { reason: 'attack' } })).status).toBe(204);
    const eventsBefore = async (org: string) => (await eventsOf(app, org)).filter((e) => e.type === 'payment_intent.created').length;
    const [evA0, evB0] = [await eventsBefore(a.organizationId), await eventsBefore(b.organizationId)];

    const clash = randomBytes(4).toString('hex');
    const reqs: Req[] = [
      ...Array.from({ length: 10 }, (_, i): Req => ({
        label: `A valid ${i}`,
        path: pathA,
        headers: a.apiKeyHeaders,
        body: { ...baseA, reference: `a-${i}-${clash}` },
        kind: 'ok',
      })),
      ...Array.from({ length: 8 }, (_, i): Req => ({
        label: `B valid ${i}`,
        path: pathB,
        headers: b.apiKeyHeaders,
        body: { ...baseB, metadata: { i } },
        kind: 'ok',
      })),
      { label: 'A amount 2^256-1', path: pathA, headers: a.apiKeyHeaders, body: { ...baseA, amount: (TWO_256 - 1n).toString() }, kind: 'ok' },
      { label: 'A without a wallet', path: pathA, headers: a.apiKeyHeaders, body: { ...baseA, walletId: undefined }, kind: 'ok' },
      // Tenant crossings.
      { label: "A's key on B's organization", path: pathB, headers: a.apiKeyHeaders, body: baseB, kind: 'refused' },
      {
        label: "A's member on B's organization",
        path: pathB,
        headers: a.member.headers,
        body: { ...baseB, applicationId: b.applicationId, environmentId: b.environmentId },
        kind: 'refused',
      },
      { label: "B's beneficiary", path: pathA, headers: a.apiKeyHeaders, body: { ...baseA, beneficiaryAccountId: b.beneficiaryAccountId }, kind: 'refused' },
      { label: "B's payer account", path: pathA, headers: a.apiKeyHeaders, body: { ...baseA, payerAccountId: b.beneficiaryAccountId }, kind: 'refused' },
      { label: "B's wallet", path: pathA, headers: a.apiKeyHeaders, body: { ...baseA, walletId: b.walletId }, kind: 'refused' },
      {
        label: "B's asset-network with A's wallet",
        path: pathA,
        headers: a.apiKeyHeaders,
        body: { ...baseA, assetNetworkId: b.catalog.assetNetworkId },
        kind: 'refused',
      },
      {
        label: "A's member naming B's environment",
        path: pathA,
        headers: a.member.headers,
        body: { ...baseA, applicationId: b.applicationId, environmentId: b.environmentId },
        kind: 'refused',
      },
      // Business refusals.
      { label: 'reference taken', path: pathA, headers: a.apiKeyHeaders, body: { ...baseA, reference: taken }, kind: 'refused' },
      { label: 'frozen beneficiary', path: pathA, headers: a.apiKeyHeaders, body: { ...baseA, beneficiaryAccountId: idOf(frozen) }, kind: 'refused' },
      { label: 'expires too soon', path: pathA, headers: a.apiKeyHeaders, body: { ...baseA, expiresInSeconds: 10 }, kind: 'refused' },
      {
        label: 'expired already',
        path: pathA,
        headers: a.apiKeyHeaders,
        body: { ...baseA, expiresAt: new Date(Date.now() - 3_600_000).toISOString() },
        kind: 'refused',
      },
      { label: 'metadata over 8 KiB', path: pathA, headers: a.apiKeyHeaders, body: { ...baseA, metadata: { x: 'y'.repeat(9000) } }, kind: 'refused' },
      {
        label: 'unknown asset-network',
        path: pathA,
        headers: a.apiKeyHeaders,
        body: { ...baseA, assetNetworkId: '00000000-0000-7000-8000-0000000000aa' },
        kind: 'refused',
      },
      ...hostileBodies(
        { ...baseA, reference: 'hostile' },
        { amountField: 'amount', textField: 'reference', requiredField: 'beneficiaryAccountId', idField: 'walletId' },
      ).map((h): Req => ({ label: `hostile ${h.label}`, path: pathA, headers: a.apiKeyHeaders, body: h.body, raw: h.raw, kind: 'refused' })),
    ];
    const twins = [0, 1].map((i): Req => ({
      label: `twin ${i}`,
      path: pathA,
      headers: a.apiKeyHeaders,
      body: { ...baseA, reference: `twin-${clash}` },
      kind: 'ok',
    }));
    const [answers, twinAnswers, gqlAnswers] = await Promise.all([
      attack(reqs),
      Promise.all(twins.map(send)),
      Promise.all(
        [0, 1].map(() =>
          gqlVia(
            'mutation($o: ID!, $i: CreatePaymentIntentInput!) { createPaymentIntent(organizationId: $o, input: $i) { id address } }',
            { o: b.organizationId, i: baseB },
            b.apiKeyHeaders,
          ),
        ),
      ),
    ]);
    expect(twinAnswers.map((t) => t.status).sort()).toEqual([201, 409]);
    expect(norm(twinAnswers.find((t) => t.status === 409)!)).toEqual(norm(await send({ ...twins[0]! })));
    for (const g of gqlAnswers) expect(g.errors, JSON.stringify(g.errors)).toBeUndefined();

    const accepted = (org: string) => [...answers.entries()].filter(([r, res]) => res.status === 201 && r.path.includes(org)).map(([, res]) => idOf(res));
    const idsA = [...accepted(a.organizationId), idOf(twinAnswers.find((t) => t.status === 201)!)];
    const idsB = [...accepted(b.organizationId), ...gqlAnswers.map((g) => (g.data as any).createPaymentIntent.id as string)];
    expect(idsA).toHaveLength(10 + 2 + 1);
    expect(idsB).toHaveLength(8 + 2);
    // Each accepted intent whole: its transaction, its own address (from its own wallet), its event; invisible to the other organization.
    const addresses = new Set<string>();
    for (const [ids, f, other] of [
      [idsA, a, b],
      [idsB, b, a],
    ] as const) {
      for (const id of ids) {
        const got = await app.rest('GET', `/v1/payment-intents/${id}`, { headers: f.apiKeyHeaders });
        expect(got.status, got.text).toBe(200);
        expect(got.body).toMatchObject({ organizationId: f.organizationId, status: 'AWAITING_PAYMENT', beneficiaryAccountId: f.beneficiaryAccountId });
        if (got.body.address) addresses.add(got.body.address);
        expect((await app.rest('GET', `/v1/transactions/${got.body.transactionId}`, { headers: f.apiKeyHeaders })).status).toBe(200);
        expect((await app.rest('GET', `/v1/payment-intents/${id}`, { headers: other.apiKeyHeaders })).status).toBe(404);
      }
    }
    expect(addresses.size).toBe(idsA.length + idsB.length - 1); // one was created without a wallet
    // Exactly one payment_intent.created per accepted intent, none for a refused one.
    const created = async (org: string) => (await eventsOf(app, org)).filter((e) => e.type === 'payment_intent.created').map((e) => e.body.PaymentIntentId);
    expect((await created(a.organizationId)).slice(evA0).sort()).toEqual([...idsA].sort());
    expect((await created(b.organizationId)).slice(evB0).sort()).toEqual([...idsB].sort());
    for (const [r, res] of answers) {
      if (res.status !== 201) continue;
      const e = await expectOwnAudit(
        idOf(res),
        res,
        { organizationId: r.path === pathA ? a.organizationId : b.organizationId, actorType: 'API_KEY' },
        'payment_intent.created',
      );
      expect(e.after).toMatchObject({ amount: (r.body as { amount: string }).amount });
    }
  });

  test('Idempotency-Key on intents: one key 8 times at once, two bodies on one key, the same key in two organizations, and again in a later burst', async () => {
    const a = remember(await moneyFixture(app));
    const b = remember(await moneyFixture(app));
    const pathA = `/v1/organizations/${a.organizationId}/payment-intents`;
    const pathB = `/v1/organizations/${b.organizationId}/payment-intents`;
    const baseA = { assetNetworkId: a.catalog.assetNetworkId, amount: '1000', beneficiaryAccountId: a.beneficiaryAccountId, walletId: a.walletId };
    const baseB = { assetNetworkId: b.catalog.assetNetworkId, amount: '1000', beneficiaryAccountId: b.beneficiaryAccountId, walletId: b.walletId };
    const key = `pk-${randomBytes(6).toString('hex')}`;
    const key2 = `pk2-${randomBytes(6).toString('hex')}`;
    const reqs: [string, Req][] = [
      ...Array.from({ length: 8 }, (_, i): [string, Req] => [
        'A same',
        { label: `A same ${i}`, path: pathA, headers: { ...a.apiKeyHeaders, 'idempotency-key': key }, body: baseA, kind: 'ok' },
      ]),
      ...Array.from({ length: 4 }, (_, i): [string, Req] => [
        'B same',
        { label: `B same ${i}`, path: pathB, headers: { ...b.apiKeyHeaders, 'idempotency-key': key }, body: baseB, kind: 'ok' },
      ]),
      ...Array.from({ length: 8 }, (_, i): [string, Req] => [
        'A two',
        {
          label: `A two ${i}`,
          path: pathA,
          headers: { ...a.apiKeyHeaders, 'idempotency-key': key2 },
          body: { ...baseA, amount: String(100 + (i % 2)) },
          kind: 'ok',
        },
      ]),
      ...Array.from({ length: 8 }, (_, i): [string, Req] => [
        'A unkeyed',
        { label: `A unkeyed ${i}`, path: pathA, headers: a.apiKeyHeaders, body: baseA, kind: 'ok' },
      ]),
    ];
    const answers = await Promise.all(shuffle(reqs).map(async ([g, r]) => ({ g, r, res: await send(r) })));
    const of = (g: string) => answers.filter((x) => x.g === g);
    for (const g of ['A same', 'B same']) {
      const xs = of(g);
      expect(
        new Set(xs.map((x) => JSON.stringify([x.res.status, x.res.headers.get('location'), x.res.text]))).size,
        g + JSON.stringify(xs.map((x) => x.res.text)),
      ).toBe(1);
      expect(xs[0]!.res.status).toBe(201);
    }
    expect(idOf(of('A same')[0]!.res)).not.toBe(idOf(of('B same')[0]!.res));
    const two = of('A two');
    const won = two.find((x) => x.res.status === 201)!;
    expect(won, JSON.stringify(two.map((x) => x.res.text))).toBeDefined();
    for (const x of two) {
      if ((x.r.body as { amount: string }).amount === (won.r.body as { amount: string }).amount)
        expect([x.res.status, x.res.headers.get('location')]).toEqual([201, won.res.headers.get('location')]);
      else expect([x.res.status, x.res.body?.code], x.res.text).toEqual([409, 'IDEMPOTENCY_KEY_REUSED']);
    }
    for (const x of of('A unkeyed')) expect(x.res.status, x.res.text).toBe(201);
    const again = await Promise.all(
      of('A same')
        .slice(0, 3)
        .map((x) => send(x.r)),
    );
    for (const r of again) expect([r.status, r.headers.get('location')]).toEqual([201, of('A same')[0]!.res.headers.get('location')]);
    const created = (await eventsOf(app, a.organizationId)).filter((e) => e.type === 'payment_intent.created').map((e) => e.body.PaymentIntentId);
    expect(created).toHaveLength(1 + 1 + 8);
    expect(new Set(created).size).toBe(created.length);
  });
});

// ------------------------------------------------------------------------------------------------

describe('sandbox sends in groups', () => {
  test('a burst of two organizations\u2019 sends, hostile bodies, a production key, an unknown asset-network and sends past the 2^256 \u2212 1 bound: each answered as alone; what was accepted is mined exactly once', async () => {
    const a = remember(await moneyFixture(app, { requiredConfirmations: 1 }));
    const b = remember(await moneyFixture(app, { requiredConfirmations: 1 }));
    const intentOf = async (f: MoneyFixture) => {
      const r = await app.rest('POST', `/v1/organizations/${f.organizationId}/payment-intents`, {
        headers: f.apiKeyHeaders,
        body: { assetNetworkId: f.catalog.assetNetworkId, amount: '1000000', beneficiaryAccountId: f.beneficiaryAccountId, walletId: f.walletId },
      });
      expect(r.status, r.text).toBe(201);
      return (await app.rest('GET', `/v1/payment-intents/${idOf(r)}`, { headers: f.apiKeyHeaders })).body as {
        id: string;
        address: string;
        transactionId: string;
      };
    };
    const [ia, ib] = [await intentOf(a), await intentOf(b)];
    const prod = await createApiKey(app, a.member, 'PRODUCTION');
    secrets.add(prod.key);
    // An address already awaiting 2^256 - 1: any further send to it is past the bound.
    const full = `0x${randomBytes(20).toString('hex')}`;
    await sandboxSend(app, a.apiKeyHeaders, { address: full, amount: TWO_256 - 1n, assetNetworkId: a.catalog.assetNetworkId });
    const path = '/v1/sandbox/deposits';
    const sendA = (amount: string) => ({ address: ia.address, amount, assetNetworkId: a.catalog.assetNetworkId });
    const reqs: Req[] = [
      ...Array.from({ length: 10 }, (_, i): Req => ({ label: `A valid ${i}`, path, headers: a.apiKeyHeaders, body: sendA(String(100_000 + i)), kind: 'ok' })),
      ...Array.from({ length: 8 }, (_, i): Req => ({
        label: `B valid ${i}`,
        path,
        headers: b.apiKeyHeaders,
        body: { address: ib.address, amount: String(125_000), assetNetworkId: b.catalog.assetNetworkId },
        kind: 'ok',
      })),
      // B pays A's address: allowed (a public chain), and must not disturb A's.
      { label: 'B pays A', path, headers: b.apiKeyHeaders, body: sendA('7'), kind: 'ok' },
      { label: 'production key', path, headers: prod.headers, body: sendA('1'), kind: 'refused' },
      {
        label: 'unknown asset-network',
        path,
        headers: a.apiKeyHeaders,
        body: { ...sendA('1'), assetNetworkId: '00000000-0000-7000-8000-0000000000ab' },
        kind: 'refused',
      },
      ...[0, 1, 2].map((i): Req => ({
        label: `past the bound ${i}`,
        path,
        headers: i === 1 ? b.apiKeyHeaders : a.apiKeyHeaders,
        body: { address: full, amount: '1', assetNetworkId: a.catalog.assetNetworkId },
        kind: 'refused',
      })),
      {
        label: 'past the bound alone',
        path,
        headers: a.apiKeyHeaders,
        body: { address: `0x${'0'.repeat(39)}1`, amount: (TWO_256 - 1n).toString(), assetNetworkId: a.catalog.assetNetworkId, revert: 'no' },
        kind: 'refused',
      },
      { label: 'address too short', path, headers: a.apiKeyHeaders, body: { ...sendA('1'), address: '0x1234' }, kind: 'refused' },
      { label: 'replaceable a string', path, headers: a.apiKeyHeaders, body: { ...sendA('1'), replaceable: 'yes' }, kind: 'refused' },
      ...hostileBodies(sendA('1'), { amountField: 'amount', textField: 'address', requiredField: 'address', idField: 'assetNetworkId' }).map((h): Req => ({
        label: `hostile ${h.label}`,
        path,
        headers: a.apiKeyHeaders,
        body: h.body,
        raw: h.raw,
        kind: 'refused',
      })),
    ];
    const [answers, gqlAnswers] = await Promise.all([
      attack(reqs),
      Promise.all(
        [0, 1].map(() =>
          gqlVia(
            'mutation($i: SandboxDepositInput!) { sandboxSendDeposit(input: $i) { txHash status } }',
            { i: { address: ib.address, amount: '3', assetNetworkId: b.catalog.assetNetworkId } },
            b.apiKeyHeaders,
          ),
        ),
      ),
    ]);
    for (const g of gqlAnswers) expect(g.errors, JSON.stringify(g.errors)).toBeUndefined();
    const hashes = [...answers.entries()].filter(([, r]) => r.status === 201).map(([, r]) => r.body.txHash as string);
    hashes.push(...gqlAnswers.map((g) => (g.data as any).sandboxSendDeposit.txHash as string));
    expect(hashes).toHaveLength(10 + 8 + 1 + 2);
    expect(new Set(hashes).size).toBe(hashes.length);
    for (const [r, res] of answers)
      if (res.status === 201) expect(res.body, r.label).toEqual({ txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/), status: 'PENDING' });

    // Each send's audit entry carries its own request id and its sender's organization.
    for (const f of [a, b]) {
      const r = await app.rest('GET', `/v1/admin/audit-log?organizationId=${f.organizationId}&actionType=sandbox.transaction_sent&take=500`, {
        headers: op.headers,
      });
      const entries = r.body.items as AuditEntry[];
      for (const [q, res] of answers) {
        if (res.status !== 201 || q.headers !== f.apiKeyHeaders) continue;
        const mine = entries.filter((e) => e.after?.txHash === res.body.txHash);
        expect(mine, q.label).toHaveLength(1);
        expect(mine[0]!.requestId, q.label).toBe(res.headers.get('x-request-id'));
        expect(mine[0]!.after, q.label).toMatchObject({ amount: (q.body as { amount: string }).amount, address: (q.body as { address: string }).address });
      }
    }
    await sandboxMine(app, a.apiKeyHeaders, a.catalog.networkId, 1);
    await sandboxMine(app, b.apiKeyHeaders, b.catalog.networkId, 1);
    await drainMoneyWork(app);
    const balance = async (assetNetworkId: string, address: string, headers: Record<string, string>) => {
      const r = await app.gql<{ sandboxBalance: { balance: string } }>(
        'query($a: String!, $n: ID!) { sandboxBalance(address: $a, assetNetworkId: $n) { balance } }',
        { a: address, n: assetNetworkId },
        headers,
      );
      expect(r.errors, JSON.stringify(r.errors)).toBeUndefined();
      return BigInt(r.data!.sandboxBalance.balance);
    };
    const sumA = Array.from({ length: 10 }, (_, i) => BigInt(100_000 + i)).reduce((x, y) => x + y) + 7n;
    expect(await balance(a.catalog.assetNetworkId, ia.address, a.apiKeyHeaders)).toBe(sumA);
    expect(await balance(b.catalog.assetNetworkId, ib.address, b.apiKeyHeaders)).toBe(8n * 125_000n + 6n);
    expect(await balance(a.catalog.assetNetworkId, full, a.apiKeyHeaders)).toBe(TWO_256 - 1n);
    // The intents saw exactly what was sent to them.
    const got = (id: string, f: MoneyFixture) => app.rest('GET', `/v1/payment-intents/${id}`, { headers: f.apiKeyHeaders });
    expect((await got(ia.id, a)).body.confirmedAmount).toBe(sumA.toString());
    expect((await got(ib.id, b)).body.confirmedAmount).toBe((8n * 125_000n + 6n).toString());
  });

  test('Idempotency-Key on sends: one key 8 times at once sends once with identical answers; another body on the key 409; two organizations\u2019 identical keys do not collide', async () => {
    const a = remember(await moneyFixture(app, { requiredConfirmations: 1 }));
    const b = remember(await moneyFixture(app, { requiredConfirmations: 1 }));
    const to = `0x${randomBytes(20).toString('hex')}`;
    const key = `sk-${randomBytes(6).toString('hex')}`;
    const body = (amount: string) => ({ address: to, amount, assetNetworkId: a.catalog.assetNetworkId });
    const reqs = [
      ...Array.from({ length: 8 }, () => ({ g: 'A same', h: { ...a.apiKeyHeaders, 'idempotency-key': key }, body: body('11') })),
      ...Array.from({ length: 4 }, () => ({ g: 'A other', h: { ...a.apiKeyHeaders, 'idempotency-key': key }, body: body('12') })),
      ...Array.from({ length: 4 }, () => ({ g: 'B same', h: { ...b.apiKeyHeaders, 'idempotency-key': key }, body: body('11') })),
      ...Array.from({ length: 8 }, () => ({ g: 'A unkeyed', h: a.apiKeyHeaders, body: body('1') })),
    ];
    const answers = await Promise.all(
      shuffle(reqs).map(async (x) => ({ ...x, res: await app.rest('POST', '/v1/sandbox/deposits', { headers: x.h, body: x.body }) })),
    );
    const of = (g: string) => answers.filter((x) => x.g === g);
    const winner = of('A same')[0]!.res.status === 201 ? 'A same' : 'A other';
    const loser = winner === 'A same' ? 'A other' : 'A same';
    expect(new Set(of(winner).map((x) => `${x.res.status} ${x.res.text}`)).size, JSON.stringify(of(winner).map((x) => x.res.text))).toBe(1);
    expect(of(winner)[0]!.res.status).toBe(201);
    for (const x of of(loser)) expect([x.res.status, x.res.body?.code], x.res.text).toEqual([409, 'IDEMPOTENCY_KEY_REUSED']);
    expect(new Set(of('B same').map((x) => `${x.res.status} ${x.res.text}`)).size).toBe(1);
    expect(of('B same')[0]!.res.body.txHash).not.toBe(of(winner)[0]!.res.body.txHash);
    for (const x of of('A unkeyed')) expect(x.res.status, x.res.text).toBe(201);
    await sandboxMine(app, a.apiKeyHeaders, a.catalog.networkId, 1);
    const r = await app.gql<{ sandboxBalance: { balance: string } }>(
      'query($a: String!, $n: ID!) { sandboxBalance(address: $a, assetNetworkId: $n) { balance } }',
      { a: to, n: a.catalog.assetNetworkId },
      a.apiKeyHeaders,
    );
    expect(r.data!.sandboxBalance.balance).toBe(String((winner === 'A same' ? 11n : 12n) + 11n + 8n));
    await drainMoneyWork(app);
  });
});

// ------------------------------------------------------------------------------------------------

const DEST = '0x00000000000000000000000000000000000000e7';
const wt = withdrawalTesting(() => app, DEST);

/** An account's balance on the fixture's asset-network, as its organization's member reads it. */
async function balanceOf(s: WithdrawalSetup, accountId = s.accountId) {
  const r = await app.rest('GET', `/v1/accounts/${accountId}/balances`, { headers: s.f.member.headers });
  expect(r.status, r.text).toBe(200);
  const row = (r.body as { assetNetworkId: string; posted: string; available: string }[]).find((x) => x.assetNetworkId === s.f.catalog.assetNetworkId);
  return { posted: BigInt(row?.posted ?? 0), available: BigInt(row?.available ?? 0) };
}
const requested = async (s: WithdrawalSetup) =>
  (await eventsOf(app, s.f.organizationId)).filter((e) => e.type === 'withdrawal.requested').map((e) => e.body.WithdrawalId as string);

describe('withdrawal requests in groups', () => {
  test('a burst draining one account (exactly what it holds is accepted), another organization\u2019s requests, foreign accounts and destinations, a blocked destination, a frozen and an empty account, hostile bodies: each answered as alone', async () => {
    const sa = await wt.setup(1_000_000n);
    const sb = await wt.setup(1_000_000n);
    const sc = await wt.setup(500_000n);
    for (const s of [sa, sb, sc]) remember(s.f);
    const an = (s: WithdrawalSetup) => s.f.catalog.assetNetworkId;
    const body = (s: WithdrawalSetup, amount: bigint, extra: Record<string, unknown> = {}) => ({
      amount: amount.toString(),
      assetNetworkId: an(s),
      withdrawalDestinationId: s.destinationId,
      ...extra,
    });
    const path = (accountId: string) => `/v1/accounts/${accountId}/withdrawals`;
    // An empty account of A's, a blocked destination of A's, C's account frozen.
    const empty = await app.rest('POST', `/v1/organizations/${sa.f.organizationId}/accounts`, { headers: sa.f.apiKeyHeaders, body: { name: 'Empty' } });
    expect(empty.status).toBe(201);
    const blockedDest = await app.rest('POST', `/v1/organizations/${sa.f.organizationId}/withdrawal-destinations`, {
      headers: sa.f.apiKeyHeaders,
      body: { networkId: sa.f.catalog.networkId, address: `0x${randomBytes(20).toString('hex')}` },
    });
    expect(blockedDest.status, blockedDest.text).toBe(201);
    const block = await app.rest('POST', `/v1/admin/withdrawal-destinations/${idOf(blockedDest)}/block`, {
      headers: op.headers,
      body: { reason: 'sanctioned' },
    });
    expect(block.status, block.text).toBe(204);
    expect((await app.rest('POST', `/v1/accounts/${sc.accountId}/freeze`, { headers: sc.f.member.headers, body: { reason: 'attack' } })).status).toBe(204);
    const insufficient = await app.rest('POST', path(idOf(empty)), { headers: sa.f.apiKeyHeaders, body: body(sa, 1n) });
    expect(insufficient.status, insufficient.text).toBe(409);

    const reqs: Req[] = [
      ...Array.from({ length: 4 }, (_, i): Req => ({
        label: `B valid ${i}`,
        path: path(sb.accountId),
        headers: sb.f.apiKeyHeaders,
        body: body(sb, 50_000n),
        kind: 'ok',
      })),
      { label: 'B valid member', path: path(sb.accountId), headers: sb.f.member.headers, body: body(sb, 50_000n), kind: 'ok' },
      // Tenant crossings.
      { label: "A's key on B's account", path: path(sb.accountId), headers: sa.f.apiKeyHeaders, body: body(sb, 1n), kind: 'refused' },
      { label: "A's member on B's account", path: path(sb.accountId), headers: sa.f.member.headers, body: body(sb, 1n), kind: 'refused' },
      {
        label: "A's account to B's destination",
        path: path(sa.accountId),
        headers: sa.f.apiKeyHeaders,
        body: body(sa, 1n, { withdrawalDestinationId: sb.destinationId }),
        kind: 'refused',
      },
      {
        label: "A's account with B's asset-network",
        path: path(sa.accountId),
        headers: sa.f.apiKeyHeaders,
        body: body(sa, 1n, { assetNetworkId: an(sb) }),
        kind: 'refused',
      },
      {
        label: "A's account from B's wallet",
        path: path(sa.accountId),
        headers: sa.f.apiKeyHeaders,
        body: body(sa, 1n, { walletId: sb.f.walletId, sourceIndex: 0 }),
        kind: 'refused',
      },
      // Business refusals.
      { label: 'empty account', path: path(idOf(empty)), headers: sa.f.apiKeyHeaders, body: body(sa, 1n), kind: 'refused' },
      {
        label: 'blocked destination',
        path: path(sa.accountId),
        headers: sa.f.apiKeyHeaders,
        body: body(sa, 1n, { withdrawalDestinationId: idOf(blockedDest) }),
        kind: 'refused',
      },
      { label: 'frozen account', path: path(sc.accountId), headers: sc.f.apiKeyHeaders, body: body(sc, 1n), kind: 'refused' },
      { label: 'amount 2^256-1', path: path(idOf(empty)), headers: sa.f.apiKeyHeaders, body: body(sa, TWO_256 - 1n), kind: 'refused' },
      {
        label: 'unknown destination',
        path: path(sa.accountId),
        headers: sa.f.apiKeyHeaders,
        body: body(sa, 1n, { withdrawalDestinationId: '00000000-0000-7000-8000-0000000000ac' }),
        kind: 'refused',
      },
      { label: 'unknown account', path: path('00000000-0000-7000-8000-0000000000ad'), headers: sa.f.apiKeyHeaders, body: body(sa, 1n), kind: 'refused' },
      ...hostileBodies(body(sa, 1n), {
        amountField: 'amount',
        textField: 'withdrawalDestinationId',
        requiredField: 'withdrawalDestinationId',
        idField: 'assetNetworkId',
      }).map((h): Req => ({ label: `hostile ${h.label}`, path: path(sa.accountId), headers: sa.f.apiKeyHeaders, body: h.body, raw: h.raw, kind: 'refused' })),
    ];
    // A's 16 requests of 100,000 against 1,000,000: ten are accepted, six refused as an empty account is.
    const drain = Array.from({ length: 16 }, (_, i): Req => ({
      label: `A drain ${i}`,
      path: path(sa.accountId),
      headers: sa.f.apiKeyHeaders,
      body: body(sa, 100_000n),
      kind: 'ok',
    }));
    const [answers, drained] = await Promise.all([attack(reqs), Promise.all(drain.map(send))]);
    expect(drained.filter((r) => r.status === 201)).toHaveLength(10);
    for (const r of drained.filter((x) => x.status !== 201)) expect([r.status, r.body?.code], r.text).toEqual([409, insufficient.body.code]);

    const idsA = drained.filter((r) => r.status === 201).map(idOf);
    const idsB = [...answers.entries()].filter(([, r]) => r.status === 201).map(([, r]) => idOf(r));
    expect(idsB).toHaveLength(5);
    expect(await balanceOf(sa)).toEqual({ posted: 1_000_000n, available: 0n });
    expect(await balanceOf(sb)).toEqual({ posted: 1_000_000n, available: 750_000n });
    expect(await balanceOf(sc)).toEqual({ posted: 500_000n, available: 500_000n });
    expect((await requested(sa)).sort()).toEqual([...idsA].sort());
    expect((await requested(sb)).sort()).toEqual([...idsB].sort());
    expect(await requested(sc)).toEqual([]);
    for (const [r, res] of [...answers.entries(), ...drained.map((d, i) => [drain[i]!, d] as const)]) {
      if (res.status !== 201) continue;
      const member = r.headers === sb.f.member.headers;
      const org = r.path.includes(sa.accountId) ? sa.f.organizationId : sb.f.organizationId;
      const e = await expectOwnAudit(
        idOf(res),
        res,
        { organizationId: org, actorType: member ? 'MEMBER' : 'API_KEY', actorId: member ? sb.f.member.memberId : undefined },
        'withdrawal.requested',
      );
      expect(e.after).toMatchObject({ amount: (r.body as { amount: string }).amount });
    }
    for (const id of idsA) {
      expect(await wt.get(sa, id)).toMatchObject({ status: 'APPROVED', amount: '100000', toAddress: DEST });
      expect((await app.rest('GET', `/v1/withdrawals/${id}`, { headers: sb.f.apiKeyHeaders })).status).toBe(404);
    }
    // Broadcast, mined, confirmed: each accepted withdrawal moved once.
    await drainMoneyWork(app);
    await wt.mine(sa);
    await wt.mine(sb);
    await drainMoneyWork(app);
    for (const id of idsA) expect((await wt.get(sa, id)).status).toBe('CONFIRMED');
    for (const id of idsB) expect((await wt.get(sb, id)).status).toBe('CONFIRMED');
    expect(await balanceOf(sa)).toEqual({ posted: 0n, available: 0n });
    expect(await balanceOf(sb)).toEqual({ posted: 750_000n, available: 750_000n });
  });

  test('Idempotency-Key on withdrawals: one key 8 times at once holds once, another body on the key 409, the same key in two organizations, later bursts; two requests for the last funds: one wins', async () => {
    const sa = await wt.setup(1_000_000n);
    const sb = await wt.setup(1_000_000n);
    for (const s of [sa, sb]) remember(s.f);
    const key = `wk-${randomBytes(6).toString('hex')}`;
    const req = (s: WithdrawalSetup, amount: bigint, k?: string) =>
      app.rest('POST', `/v1/accounts/${s.accountId}/withdrawals`, {
        headers: k ? { ...s.f.apiKeyHeaders, 'idempotency-key': k } : s.f.apiKeyHeaders,
        body: { amount: amount.toString(), assetNetworkId: s.f.catalog.assetNetworkId, withdrawalDestinationId: s.destinationId },
      });
    const jobs = [
      ...Array.from({ length: 8 }, () => ({ g: 'A same', run: () => req(sa, 100_000n, key) })),
      ...Array.from({ length: 4 }, () => ({ g: 'A other', run: () => req(sa, 200_000n, key) })),
      ...Array.from({ length: 4 }, () => ({ g: 'B same', run: () => req(sb, 100_000n, key) })),
      ...Array.from({ length: 6 }, () => ({ g: 'A unkeyed', run: () => req(sa, 10_000n) })),
    ];
    const answers = await Promise.all(shuffle(jobs).map(async (j) => ({ g: j.g, res: await j.run() })));
    const of = (g: string) => answers.filter((x) => x.g === g).map((x) => x.res);
    const winner = of('A same')[0]!.status === 201 ? 'A same' : 'A other';
    const loser = winner === 'A same' ? 'A other' : 'A same';
    expect(new Set(of(winner).map((r) => `${r.status} ${r.text}`)).size, JSON.stringify(of(winner).map((r) => r.text))).toBe(1);
    expect(of(winner)[0]!.status).toBe(201);
    for (const r of of(loser)) expect([r.status, r.body?.code], r.text).toEqual([409, 'IDEMPOTENCY_KEY_REUSED']);
    expect(new Set(of('B same').map((r) => `${r.status} ${r.text}`)).size).toBe(1);
    expect(idOf(of('B same')[0]!)).not.toBe(idOf(of(winner)[0]!));
    for (const r of of('A unkeyed')) expect(r.status, r.text).toBe(201);
    const held = winner === 'A same' ? 100_000n : 200_000n;
    expect(await balanceOf(sa)).toEqual({ posted: 1_000_000n, available: 1_000_000n - held - 60_000n });
    expect(await requested(sa)).toHaveLength(7);
    expect(await requested(sb)).toHaveLength(1);
    // A later burst replays the key.
    for (const r of await Promise.all([0, 1, 2].map(() => req(sa, winner === 'A same' ? 100_000n : 200_000n, key))))
      expect([r.status, r.text]).toEqual([201, of(winner)[0]!.text]);
    // The last funds asked for twice at once (keyed and not): exactly one is accepted.
    const rest = (await balanceOf(sa)).available;
    const race = await Promise.all([req(sa, rest), req(sa, rest, `${key}-last`), req(sa, rest), req(sa, rest, `${key}-last2`)]);
    expect(
      race.filter((r) => r.status === 201),
      JSON.stringify(race.map((r) => r.text)),
    ).toHaveLength(1);
    for (const r of race.filter((x) => x.status !== 201)) expect(r.status, r.text).toBe(409);
    expect(await balanceOf(sa)).toEqual({ posted: 1_000_000n, available: 0n });
    expect(await requested(sa)).toHaveLength(8);
    await drainMoneyWork(app);
  });
});

// ------------------------------------------------------------------------------------------------

describe('settlements executed in groups', () => {
  test('one group of two organizations\u2019 settlements, one to a frozen account, one asked twice at once, foreign and hostile requests: each settles as it would alone', async () => {
    const fa = remember(await moneyFixture(app, { requiredConfirmations: 1 }));
    const fb = remember(await moneyFixture(app, { requiredConfirmations: 1 }));
    const fc = remember(await moneyFixture(app, { requiredConfirmations: 1 }));
    const t1 = await fundedTransaction(app, 1_000n, fa);
    const t2 = await fundedTransaction(app, 2_000n, fa);
    const t3 = await fundedTransaction(app, 3_000n, fb);
    const t4 = await fundedTransaction(app, 4_000n, fc);
    // Refused requests go to a transaction no valid request of the burst touches (their answers must not depend on the burst's order).
    const t5 = await fundedTransaction(app, 500n, fa);
    expect((await app.rest('POST', `/v1/accounts/${fc.beneficiaryAccountId}/freeze`, { headers: fc.member.headers, body: { reason: 'attack' } })).status).toBe(
      204,
    );
    const path = (t: { transactionId: string }) => `/v1/transactions/${t.transactionId}/settlements`;
    const reqs: Req[] = [
      { label: 't2', path: path(t2), headers: fa.apiKeyHeaders, body: {}, kind: 'ok' },
      { label: 't3', path: path(t3), headers: fb.apiKeyHeaders, body: { amount: '3000' }, kind: 'ok' },
      { label: 't4 (frozen beneficiary)', path: path(t4), headers: fc.apiKeyHeaders, body: {}, kind: 'ok' },
      { label: "A's key on B's transaction", path: path(t3), headers: fa.apiKeyHeaders, body: {}, kind: 'refused' },
      { label: "A's member on B's transaction", path: path(t3), headers: fa.member.headers, body: {}, kind: 'refused' },
      { label: 'more than the escrow', path: path(t5), headers: fa.apiKeyHeaders, body: { amount: '501' }, kind: 'refused' },
      ...BAD_AMOUNTS.filter(([, v]) => v !== null).map(([label, v]): Req => ({
        label: `amount ${label}`,
        path: path(t5),
        headers: fa.apiKeyHeaders,
        body: { amount: v },
        kind: 'refused',
      })),
      { label: 'unknown field', path: path(t5), headers: fa.apiKeyHeaders, body: { amount: '1', to: fb.beneficiaryAccountId }, kind: 'refused' },
      { label: 'raw null', path: path(t5), headers: fa.apiKeyHeaders, raw: 'null', kind: 'refused' },
    ];
    const twice = [0, 1].map((): Req => ({ label: 't1 twice', path: path(t1), headers: fa.apiKeyHeaders, body: {}, kind: 'ok' }));
    const [, twiceAnswers] = await Promise.all([attack(reqs), Promise.all(twice.map(send))]);
    for (const r of twiceAnswers) expect(r.status, r.text).toBeLessThan(500);
    // Every settlement job of the burst runs as one group (the test driver fetches them together).
    await drainMoneyWork(app);
    const bal = async (f: MoneyFixture) => {
      const r = await app.rest('GET', `/v1/accounts/${f.beneficiaryAccountId}/balances`, { headers: f.member.headers });
      return BigInt((r.body as { assetNetworkId: string; posted: string }[]).find((x) => x.assetNetworkId === f.catalog.assetNetworkId)?.posted ?? 0);
    };
    // t1 is settled once however many times it was asked; t2 and t3 in full; t4 not paid to a frozen account.
    expect(await bal(fa)).toBe(3_000n);
    expect(await bal(fb)).toBe(3_000n);
    expect(await bal(fc)).toBe(0n);
    const tx = async (f: MoneyFixture, t: { transactionId: string }) =>
      (await app.rest('GET', `/v1/transactions/${t.transactionId}`, { headers: f.apiKeyHeaders })).body;
    expect((await tx(fa, t1)).status).toBe((await tx(fa, t2)).status);
    const settled = async (f: MoneyFixture, t: { transactionId: string }) =>
      ((await app.rest('GET', path(t), { headers: f.apiKeyHeaders })).body as { status: string }[]).map((s) => s.status);
    expect((await settled(fa, t1)).filter((s) => s === 'EXECUTED')).toHaveLength(1);
    expect(await settled(fa, t2)).toEqual(['EXECUTED']);
    expect(await settled(fb, t3)).toEqual(['EXECUTED']);
    const executedEvents = async (f: MoneyFixture) => (await eventsOf(app, f.organizationId)).filter((e) => e.type === 'settlement.executed').length;
    expect(await executedEvents(fa)).toBe(2);
    expect(await executedEvents(fb)).toBe(1);
  });
});

// ------------------------------------------------------------------------------------------------

describe('harder attacks on the groups', () => {
  test('a period limit across concurrent groups: the accepted requests never sum past it, every refusal is the limit\u2019s own, approvals waiting count', async () => {
    const s = await wt.setup(1_000_000n);
    remember(s.f);
    const configured = await app.rest('POST', `/v1/admin/organizations/${s.f.organizationId}/withdrawal-policy`, {
      headers: op.headers,
      body: { periodLimit: '500000', periodSeconds: 86_400, approvalThreshold: '80000' },
    });
    expect(configured.status, configured.text).toBe(204);
    const req = (amount: bigint) =>
      app.rest('POST', `/v1/accounts/${s.accountId}/withdrawals`, {
        headers: s.f.apiKeyHeaders,
        body: { amount: amount.toString(), assetNetworkId: s.f.catalog.assetNetworkId, withdrawalDestinationId: s.destinationId },
      });
    const amounts = shuffle([...Array.from({ length: 24 }, () => 50_000n), ...Array.from({ length: 6 }, () => 90_000n)]);
    const answers = await Promise.all(amounts.map(req));
    for (const r of answers) expect([201, 409], r.text).toContain(r.status);
    const sum = amounts.filter((_, i) => answers[i]!.status === 201).reduce((x, y) => x + y, 0n);
    expect(sum <= 500_000n, String(sum)).toBe(true);
    for (const [i, r] of answers.entries()) if (r.status === 409) expect(sum + amounts[i]! > 500_000n, `refused ${amounts[i]} with ${sum} accepted`).toBe(true);
    const codes = new Set(answers.filter((r) => r.status === 409).map((r) => r.body.code));
    expect(codes.size).toBeLessThanOrEqual(1);
    // Alone, a request over the limit answers the same.
    const alone = await req(50_000n);
    expect(alone.status).toBe(409);
    if (codes.size) expect(norm(answers.find((r) => r.status === 409)!)).toEqual(norm(alone));
    expect(await balanceOf(s)).toEqual({ posted: 1_000_000n, available: 1_000_000n - sum });
    const statuses = await Promise.all(answers.filter((r) => r.status === 201).map(async (r) => (await wt.get(s, idOf(r))).status));
    expect(statuses.filter((x) => x === 'PENDING_APPROVAL')).toHaveLength(amounts.filter((a, i) => a === 90_000n && answers[i]!.status === 201).length);
    expect(await requested(s)).toHaveLength(answers.filter((r) => r.status === 201).length);
  });

  test('sends to one address spelled in upper and lower case in one group: the 2^256 \u2212 1 bound holds for the address, whatever its spelling', async () => {
    const f = remember(await moneyFixture(app, { requiredConfirmations: 1 }));
    const hex = randomBytes(20).toString('hex').replace(/[0-9]/, 'a');
    const spellings = [`0x${hex}`, `0x${hex.toUpperCase()}`, `0x${hex.slice(0, 20).toUpperCase()}${hex.slice(20)}`, `0X${hex}`];
    const answers = await Promise.all(
      spellings.flatMap((address) =>
        [0, 1].map(() =>
          app.rest('POST', '/v1/sandbox/deposits', {
            headers: f.apiKeyHeaders,
            body: { address, amount: (TWO_256 - 1n).toString(), assetNetworkId: f.catalog.assetNetworkId },
          }),
        ),
      ),
    );
    for (const r of answers) expect(r.status, r.text).toBeLessThan(500);
    expect(
      answers.filter((r) => r.status === 201),
      JSON.stringify(answers.map((r) => r.status)),
    ).toHaveLength(1);
    await sandboxMine(app, f.apiKeyHeaders, f.catalog.networkId, 1);
    await drainMoneyWork(app);
  });

  test('one Idempotency-Key on every grouped operation of one caller at once: scoped per operation, each written once', async () => {
    const s = await wt.setup(1_000_000n);
    remember(s.f);
    const key = `all-${randomBytes(6).toString('hex')}`;
    const h = { ...s.f.apiKeyHeaders, 'idempotency-key': key };
    const ops = () => [
      app.rest('POST', `/v1/organizations/${s.f.organizationId}/accounts`, { headers: h, body: { name: 'Same key' } }),
      app.rest('POST', `/v1/organizations/${s.f.organizationId}/payment-intents`, {
        headers: h,
        body: { assetNetworkId: s.f.catalog.assetNetworkId, amount: '1000', beneficiaryAccountId: s.accountId, walletId: s.f.walletId },
      }),
      app.rest('POST', '/v1/sandbox/deposits', { headers: h, body: { address: DEST, amount: '5', assetNetworkId: s.f.catalog.assetNetworkId } }),
      app.rest('POST', `/v1/accounts/${s.accountId}/withdrawals`, {
        headers: h,
        body: { amount: '1000', assetNetworkId: s.f.catalog.assetNetworkId, withdrawalDestinationId: s.destinationId },
      }),
    ];
    const rounds = await Promise.all([ops(), ops(), ops()].map((r) => Promise.all(r)));
    for (const op of [0, 1, 2, 3]) {
      const answers = rounds.map((r) => r[op]!);
      for (const a of answers) expect(a.status, a.text).toBe(201);
      expect(new Set(answers.map((a) => a.text + a.headers.get('location'))).size, `operation ${op}`).toBe(1);
    }
    expect(await balanceOf(s)).toEqual({ posted: 1_000_000n, available: 999_000n });
    expect(await requested(s)).toHaveLength(1);
    await sandboxMine(app, s.f.apiKeyHeaders, s.f.catalog.networkId, 1);
    await drainMoneyWork(app);
  });

  test('GraphQL: several aliased creations in one document, one of them refused, beside a REST burst: the REST burst unaffected, the document stops at the refused one', async () => {
    const f = remember(await moneyFixture(app));
    const base = { assetNetworkId: f.catalog.assetNetworkId, amount: '1000', beneficiaryAccountId: f.beneficiaryAccountId, walletId: f.walletId };
    const ref = `g-${randomBytes(4).toString('hex')}`;
    expect(
      (await app.rest('POST', `/v1/organizations/${f.organizationId}/payment-intents`, { headers: f.apiKeyHeaders, body: { ...base, reference: ref } })).status,
    ).toBe(201);
    const doc = `mutation($o: ID!, $ok: CreatePaymentIntentInput!, $bad: CreatePaymentIntentInput!, $acc: CreateAccountInput!) {
      p1: createPaymentIntent(organizationId: $o, input: $ok) { id }
      p2: createPaymentIntent(organizationId: $o, input: $bad) { id }
      p3: createPaymentIntent(organizationId: $o, input: $ok) { id }
      a1: createAccount(organizationId: $o, input: $acc) { id }
    }`;
    const rest = Array.from({ length: 8 }, () =>
      app.rest('POST', `/v1/organizations/${f.organizationId}/payment-intents`, { headers: f.apiKeyHeaders, body: base }),
    );
    const [g, ...restAnswers] = await Promise.all([
      app.gql<Record<string, { id: string } | null>>(
        doc,
        { o: f.organizationId, ok: base, bad: { ...base, reference: ref }, acc: { name: 'G' } },
        f.apiKeyHeaders,
      ),
      ...rest,
    ]);
    for (const r of restAnswers) expect(r.status, r.text).toBe(201);
    expect(g.errors?.map((e) => e.extensions?.code)).toEqual(['CONFLICT']);
    expect(g.errors?.[0]?.message).toBe(
      norm(await app.rest('POST', `/v1/organizations/${f.organizationId}/payment-intents`, { headers: f.apiKeyHeaders, body: { ...base, reference: ref } }))
        .body.detail,
    );
    // The root fields are non-null: the refused one nulls `data` and stops the serial execution
    // (GraphQL's rule): p1 ran and committed, p3 and a1 never ran. Nothing of p2 exists.
    expect(g.data).toBeNull();
    const names = (
      (await app.rest('GET', `/v1/organizations/${f.organizationId}/accounts?limit=200`, { headers: f.member.headers })).body as { name: string }[]
    ).map((x) => x.name);
    expect(names.filter((n) => n === 'G')).toHaveLength(0);
    const created = (await eventsOf(app, f.organizationId)).filter((e) => e.type === 'payment_intent.created');
    expect(created).toHaveLength(1 + 8 + 1);
  });

  test('metadata with awkward keys and values: a group writes it byte for byte, as a creation alone does; a __proto__ key is refused alone, not dropped', async () => {
    const f = remember(await moneyFixture(app));
    const body = (metadata: unknown) => ({
      assetNetworkId: f.catalog.assetNetworkId,
      amount: '1000',
      beneficiaryAccountId: f.beneficiaryAccountId,
      walletId: f.walletId,
      metadata,
    });
    const metadatas: Record<string, unknown>[] = [
      { constructor: 'c', toString: 'x', 'emoji 🦊': '🦊', '\u2028': 'line separator', big: 12345678901234, neg: -0.5, nested: [1, { a: [null, true] }] },
      { '': '', ' ': ' ', quote: '"\'`', backslash: '\\', unicode: '\u00e9\u0301 \uD83D\uDE00', tab: 'a\tb', crlf: 'a\r\nb' },
      { sql: '\'); DROP TABLE "Account"; --', dollar: '$1 $$ $tag$', percent: '%s %d', json: '{"a":1}', array: '{1,2}', cast: '::jsonb' },
    ];
    const path = `/v1/organizations/${f.organizationId}/payment-intents`;
    // __proto__ as an own key of the JSON text (an object literal would set the prototype instead).
    const proto = JSON.stringify(body({ a: 1 })).replace('"a":1', '"__proto__":{"polluted":true},"a":1');
    const protoReq: Req = { label: '__proto__ key', path, headers: f.apiKeyHeaders, raw: proto, kind: 'refused' };
    const reqs: Req[] = [
      ...[0, 1, 2].flatMap((round) =>
        metadatas.map((m, i): Req => ({ label: `metadata ${i} (${round})`, path, headers: f.apiKeyHeaders, body: body(m), kind: 'ok' })),
      ),
      protoReq,
    ];
    const answers = await attack(reqs);
    for (const [r, res] of answers) {
      if (r.kind !== 'ok') continue;
      const got = await app.rest('GET', `/v1/payment-intents/${idOf(res)}`, { headers: f.apiKeyHeaders });
      expect(got.body.metadata, r.label).toEqual((r.body as { metadata: unknown }).metadata);
    }
    expect(answers.get(protoReq)!.body.errors).toEqual([{ field: 'metadata', message: 'A key named __proto__ is not accepted.', code: 'invalid_format' }]);
    // Not grouped (an Idempotency-Key): the same metadata, the same answer.
    for (const [i, m] of metadatas.entries()) {
      const keyed = await app.rest('POST', path, { headers: { ...f.apiKeyHeaders, 'idempotency-key': `meta-${i}` }, body: body(m) });
      expect(keyed.status, keyed.text).toBe(201);
      expect((await app.rest('GET', `/v1/payment-intents/${idOf(keyed)}`, { headers: f.apiKeyHeaders })).body.metadata).toEqual(m);
    }
  });
});

describe('the bursts do land in groups', () => {
  test('16 concurrent requests of each path cost far fewer statements than 16 requests one at a time', async () => {
    const s = await wt.setup(1_000_000n);
    remember(s.f);
    const f = s.f;
    const an = f.catalog.assetNetworkId;
    const calls: Record<string, () => Promise<RestResult>> = {
      account: () => app.rest('POST', `/v1/organizations/${f.organizationId}/accounts`, { headers: f.apiKeyHeaders, body: { name: 'g' } }),
      intent: () =>
        app.rest('POST', `/v1/organizations/${f.organizationId}/payment-intents`, {
          headers: f.apiKeyHeaders,
          body: { assetNetworkId: an, amount: '1000', beneficiaryAccountId: s.accountId, walletId: f.walletId },
        }),
      send: () => app.rest('POST', '/v1/sandbox/deposits', { headers: f.apiKeyHeaders, body: { address: DEST, amount: '1', assetNetworkId: an } }),
      withdrawal: () =>
        app.rest('POST', `/v1/accounts/${s.accountId}/withdrawals`, {
          headers: f.apiKeyHeaders,
          body: { amount: '10', assetNetworkId: an, withdrawalDestinationId: s.destinationId },
        }),
    };
    for (const [name, call] of Object.entries(calls)) {
      const alone = await app.sqlStatements(async () => {
        for (let i = 0; i < 4; i++) expect((await call()).status).toBe(201);
      });
      const burst = await app.sqlStatements(async () => {
        for (const r of await Promise.all(Array.from({ length: 16 }, call))) expect(r.status, r.text).toBe(201);
      });
      const perAlone = alone.statements.length / 4;
      expect(burst.statements.length, `${name}: ${perAlone} statements alone, ${burst.statements.length} for 16 at once`).toBeLessThan(16 * perAlone * 0.6);
    }
    await drainMoneyWork(app);
  });
});

describe('cross-tenant pairings inside one group', () => {
  test('account holders: each organization’s holder accepted in its own organization and refused in the other, in one burst, as alone', async () => {
    const a = remember(await moneyFixture(app));
    const b = remember(await moneyFixture(app));
    const holderOf = async (f: MoneyFixture) => {
      const email = uniqueEmail('holder');
      const h = await app.rest('POST', '/v1/account-holders/signup', { body: { email, password: PASSWORD, name: 'Holder' } });
      expect(h.status, h.text).toBe(200);
      secrets.add(h.body.accessToken);
      const inv = await app.rest('POST', `/v1/organizations/${f.organizationId}/account-holder-invitations`, { body: { email }, headers: f.member.headers });
      expect(inv.status, inv.text).toBe(201);
      secrets.add(inv.body.token);
      const c = await app.rest('POST', '/v1/account-holders/invitations/claim', { body: { token: inv.body.token }, headers: bearer(h.body.accessToken) });
      expect(c.status, c.text).toBe(200);
      return { id: h.body.accountHolderId as string, headers: bearer(h.body.accessToken) };
    };
    const [ha, hb] = [await holderOf(a), await holderOf(b)];
    const pathOf = (f: MoneyFixture) => `/v1/organizations/${f.organizationId}/accounts`;
    const reqs: Req[] = [
      ...Array.from({ length: 6 }, (_, i): Req => ({
        label: `A with A's holder ${i}`,
        path: pathOf(a),
        headers: a.apiKeyHeaders,
        body: { name: `HA ${i}`, accountHolderId: ha.id },
        kind: 'ok',
      })),
      ...Array.from({ length: 6 }, (_, i): Req => ({
        label: `B with B's holder ${i}`,
        path: pathOf(b),
        headers: b.member.headers,
        body: { name: `HB ${i}`, accountHolderId: hb.id },
        kind: 'ok',
      })),
      ...Array.from({ length: 3 }, (_, i): Req => ({
        label: `A with B's holder ${i}`,
        path: pathOf(a),
        headers: a.apiKeyHeaders,
        body: { name: `X ${i}`, accountHolderId: hb.id },
        kind: 'refused',
      })),
      ...Array.from({ length: 3 }, (_, i): Req => ({
        label: `B with A's holder ${i}`,
        path: pathOf(b),
        headers: b.member.headers,
        body: { name: `Y ${i}`, accountHolderId: ha.id },
        kind: 'refused',
      })),
      ...Array.from({ length: 4 }, (_, i): Req => ({
        label: `A without holder ${i}`,
        path: pathOf(a),
        headers: a.member.headers,
        body: { name: `N ${i}` },
        kind: 'ok',
      })),
    ];
    const answers = await attack(reqs);
    // Each holder sees exactly its own organization's accounts made for it.
    const seen = async (h: { headers: Record<string, string> }) =>
      ((await app.rest('GET', '/v1/account-holders/me', { headers: h.headers })).body.accounts as { id: string; name: string }[]).map((x) => x.name).sort();
    expect(await seen(ha)).toEqual(Array.from({ length: 6 }, (_, i) => `HA ${i}`).sort());
    expect(await seen(hb)).toEqual(Array.from({ length: 6 }, (_, i) => `HB ${i}`).sort());
    for (const [r, res] of answers) {
      if (res.status !== 201) continue;
      const got = await app.rest('GET', `/v1/accounts/${idOf(res)}`, { headers: r.path === pathOf(a) ? a.member.headers : b.member.headers });
      expect(got.body, r.label).toMatchObject({
        name: (r.body as { name: string }).name,
        accountHolderId: (r.body as { accountHolderId?: string }).accountHolderId ?? null,
      });
    }
  });

  test('one address registered as a destination by two organizations, blocked for one: the other’s requests in the same groups go through', async () => {
    const sa = await wt.setup(1_000_000n);
    const sb = await wt.setup(1_000_000n);
    for (const s of [sa, sb]) remember(s.f);
    const blocked = await app.rest('POST', `/v1/admin/withdrawal-destinations/${sb.destinationId}/block`, {
      headers: op.headers,
      body: { reason: 'sanctioned' },
    });
    expect(blocked.status, blocked.text).toBe(204);
    const req = (s: WithdrawalSetup, i: number): Req => ({
      label: `${s === sa ? 'A' : 'B'} ${i}`,
      path: `/v1/accounts/${s.accountId}/withdrawals`,
      headers: s.f.apiKeyHeaders,
      body: { amount: '1000', assetNetworkId: s.f.catalog.assetNetworkId, withdrawalDestinationId: s.destinationId },
      kind: s === sa ? 'ok' : 'refused',
    });
    await attack([...Array.from({ length: 10 }, (_, i) => req(sa, i)), ...Array.from({ length: 6 }, (_, i) => req(sb, i))]);
    expect(await balanceOf(sa)).toEqual({ posted: 1_000_000n, available: 990_000n });
    expect(await balanceOf(sb)).toEqual({ posted: 1_000_000n, available: 1_000_000n });
    expect(await requested(sb)).toEqual([]);
    await drainMoneyWork(app);
  });
});

// ------------------------------------------------------------------------------------------------

describe('requests cancelled mid-flight', () => {
  test('clients that abort while their group writes: nothing half-written; a cancelled key answers the one resource afterwards (replayed at once or later)', async () => {
    const server = await app.listen();
    const s = await wt.setup(1_000_000n);
    remember(s.f);
    const f = s.f;
    const an = f.catalog.assetNetworkId;
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    /** A POST over a real socket, aborted after `abortMs` (null: the client gave up before an answer). */
    async function call(path: string, body: unknown, headers: Record<string, string>, abortMs?: number): Promise<RestResult | null> {
      const ac = new AbortController();
      const timer = abortMs === undefined ? undefined : setTimeout(() => ac.abort(), abortMs);
      try {
        const res = await fetch(new URL(path, server.url), {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify(body),
          signal: ac.signal,
        });
        return await restResultOf(res);
      } catch (err) {
        if ((err as Error).name === 'AbortError') return null;
        throw err;
      } finally {
        clearTimeout(timer);
      }
    }
    const tag = randomBytes(4).toString('hex');
    const key = (kind: string, i: number) => ({ ...f.apiKeyHeaders, 'idempotency-key': `abort-${tag}-${kind}-${i}` });
    const abortAt = (i: number) => ((i >> 1) % 2 === 0 ? i * 4 : undefined); // half of them cancelled, after 0-60 ms
    const to = `0x${randomBytes(20).toString('hex')}`;
    const paths = {
      account: `/v1/organizations/${f.organizationId}/accounts`,
      intent: `/v1/organizations/${f.organizationId}/payment-intents`,
      send: '/v1/sandbox/deposits',
      withdrawal: `/v1/accounts/${s.accountId}/withdrawals`,
    };
    const bodies = {
      account: (i: number) => ({ name: `abort-${tag}-${i}` }),
      intent: (i: number) => ({
        assetNetworkId: an,
        amount: String(1000 + i),
        beneficiaryAccountId: s.accountId,
        walletId: f.walletId,
        reference: `abort-${tag}-${i}`,
      }),
      send: (i: number) => ({ address: to, amount: (1n << BigInt(i)).toString(), assetNetworkId: an }),
      withdrawal: () => ({ amount: '10000', assetNetworkId: an, withdrawalDestinationId: s.destinationId }),
    };
    type Kind = keyof typeof paths;
    const kinds = Object.keys(paths) as Kind[];
    const N = 16; // per kind: even i unkeyed, odd i keyed; half of each cancelled
    const sent = kinds.flatMap((kind) => Array.from({ length: N }, (_, i) => ({ kind, i, keyed: i % 2 === 1 })));
    const answers = await Promise.all(
      shuffle(sent).map(async (x) => ({
        ...x,
        res: await call(paths[x.kind], bodies[x.kind](x.i), x.keyed ? key(x.kind, x.i) : f.apiKeyHeaders, abortAt(x.i)),
      })),
    );
    // The attack happened: some clients gave up before their answer.
    const cancelled = answers.filter((x) => !x.res).length;
    console.log(`cancelled before an answer: ${cancelled} of ${answers.length}`);
    expect(cancelled).toBeGreaterThan(0);
    expect(cancelled).toBeLessThan(answers.length);
    // A keyed request cancelled is replayed at once (its first attempt may still be in its group), and again later.
    const replay = () =>
      Promise.all(sent.filter((x) => x.keyed).map(async (x) => ({ ...x, res: (await call(paths[x.kind], bodies[x.kind](x.i), key(x.kind, x.i)))! })));
    const first = await replay();
    await sleep(300);
    const second = await replay();
    for (const x of [...answers, ...first, ...second]) if (x.res) expect(x.res.status, `${x.kind} ${x.i}: ${x.res.text}`).toBeLessThan(500);
    for (const x of answers) if (x.res) expect(x.res.status, `${x.kind} ${x.i}: ${x.res.text}`).toBe(201);
    const answerOf = (r: RestResult) => (r.body?.txHash as string | undefined) ?? idOf(r);
    for (const [i, x] of first.entries()) {
      expect(x.res.status, `${x.kind} ${x.i}: ${x.res.text}`).toBe(201);
      expect(answerOf(second[i]!.res), `${x.kind} ${x.i}`).toBe(answerOf(x.res));
      const original = answers.find((a) => a.kind === x.kind && a.i === x.i)!.res;
      if (original) expect(answerOf(original), `${x.kind} ${x.i}`).toBe(answerOf(x.res));
    }
    await sleep(300);
    const ok = (kind: Kind) => answers.filter((x) => x.kind === kind && x.res).map((x) => answerOf(x.res!));
    const keyedIds = (kind: Kind) => first.filter((x) => x.kind === kind).map((x) => answerOf(x.res));

    // Accounts: every one whole (one audit entry), each keyed one once, every answered one there.
    const accounts = (
      (await app.rest('GET', `/v1/organizations/${f.organizationId}/accounts?limit=200`, { headers: f.member.headers })).body as { id: string; name: string }[]
    ).filter((a) => a.name.startsWith(`abort-${tag}-`));
    expect(new Set(accounts.map((a) => a.name)).size).toBe(accounts.length);
    for (const id of [...ok('account'), ...keyedIds('account')]) expect(accounts.map((a) => a.id)).toContain(id);
    for (const a of accounts) expect(await auditOf(a.id), a.name).toHaveLength(1);

    // Intents: each with its transaction, address and one event; references unique, so never two of one request.
    const intentEvents = (await eventsOf(app, f.organizationId))
      .filter((e) => e.type === 'payment_intent.created')
      .map((e) => e.body.PaymentIntentId as string);
    expect(new Set(intentEvents).size).toBe(intentEvents.length);
    for (const id of [...ok('intent'), ...keyedIds('intent')]) expect(intentEvents).toContain(id);
    for (const id of intentEvents) {
      const got = await app.rest('GET', `/v1/payment-intents/${id}`, { headers: f.apiKeyHeaders });
      expect(got.status).toBe(200);
      if (got.body.reference?.startsWith(`abort-${tag}-`)) expect(got.body.address, id).toMatch(/^0x[0-9a-f]{40}$/);
      expect((await app.rest('GET', `/v1/transactions/${got.body.transactionId}`, { headers: f.apiKeyHeaders })).status).toBe(200);
    }

    // Withdrawals: the holds are exactly the requested withdrawals', each keyed one once.
    const withdrawals = await requested(s);
    expect(new Set(withdrawals).size).toBe(withdrawals.length);
    for (const id of [...ok('withdrawal'), ...keyedIds('withdrawal')]) expect(withdrawals).toContain(id);
    expect(new Set(keyedIds('withdrawal')).size).toBe(N / 2);
    expect(await balanceOf(s)).toEqual({ posted: 1_000_000n, available: 1_000_000n - 10_000n * BigInt(withdrawals.length) });
    for (const id of withdrawals) expect((await wt.get(s, id)).status).toBe('APPROVED');

    // Sends: amounts are distinct powers of two, so the mined balance names the sends that exist (each at most once).
    await sandboxMine(app, f.apiKeyHeaders, f.catalog.networkId, 1);
    const bal = await app.gql<{ sandboxBalance: { balance: string } }>(
      'query($a: String!, $n: ID!) { sandboxBalance(address: $a, assetNetworkId: $n) { balance } }',
      { a: to, n: an },
      f.apiKeyHeaders,
    );
    const mined = BigInt(bal.data!.sandboxBalance.balance);
    expect(mined < 1n << BigInt(N), 'no send twice').toBe(true);
    for (const x of [...answers.filter((a) => a.kind === 'send' && a.res), ...first.filter((a) => a.kind === 'send')])
      expect((mined >> BigInt(x.i)) & 1n, `send ${x.i}`).toBe(1n);
    await drainMoneyWork(app);
  });
});
