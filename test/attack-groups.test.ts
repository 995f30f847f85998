import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { createApiKey, createOperator, createTestApp, type RestResult, type TestApp } from './harness';
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
  const lines = app.logs.map((l) => JSON.parse(l) as { level: number; msg: string });
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
    // One audit entry per accepted creation.
    for (const id of [...createdA, ...createdB]) expect(await auditOf(id), id).toHaveLength(1);
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
    for (const id of [...idsA, ...idsB].slice(0, 6)) expect((await auditOf(id)).length, id).toBeGreaterThan(0);
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
