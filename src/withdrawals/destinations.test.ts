import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { createApiKey, createOperator, PASSWORD, signUpMember, uniqueEmail, bearer, type TestApp, createTestApp } from '../../test/harness';
import { checkLedgerInvariants } from '../../test/ledger-invariants';
import { eventsOf, moneyFixture, type MoneyFixture } from '../../test/fixtures/deposits/testing';
import { assertDestinationUsable } from './destinations';

/**
 * Withdrawal destinations (register, read, list, block, assertDestinationUsable) and ledger
 * corrections (AdminRecordLedgerCorrection, read back), through REST and GraphQL.
 */

let app: TestApp;
let f: MoneyFixture;
let operator: Record<string, string>;
beforeAll(async () => {
  app = await createTestApp();
  f = await moneyFixture(app, { requiredConfirmations: 1 });
  operator = (await createOperator(app)).headers;
});
afterAll(() => app.close());
afterEach(() => checkLedgerInvariants(app.deps.db));

let n = 0;
/** A fresh well-formed sandbox address (mixed case: it is stored in lower case). */
const address = () => '0xAbC' + (++n).toString(16).padStart(37, '0');
const idOf = (location: string | null) => location!.split('/').pop()!;

async function register(body: Record<string, unknown>, headers: Record<string, string> = f.member.headers, organizationId = f.organizationId) {
  return app.rest('POST', `/v1/organizations/${organizationId}/withdrawal-destinations`, { body, headers });
}

describe('withdrawal destinations', () => {
  test('a member registers one over REST: 201 with Location, normalized address, the event and the audit entry; GET reads it back', async () => {
    const raw = address();
    const r = await register({ networkId: f.catalog.networkId, address: `  ${raw} `, label: 'Treasury cold wallet' });
    expect(r.status, r.text).toBe(201);
    const id = idOf(r.headers.get('location'));
    expect(r.headers.get('location')).toBe(`/v1/withdrawal-destinations/${id}`);
    const got = await app.rest('GET', `/v1/withdrawal-destinations/${id}`, { headers: f.member.headers });
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({
      id,
      organizationId: f.organizationId,
      networkId: f.catalog.networkId,
      environmentType: 'SANDBOX',
      address: raw.toLowerCase(),
      label: 'Treasury cold wallet',
      status: 'ACTIVE',
      blockedReason: null,
      blockedAt: null,
      blockedByOperatorId: null,
    });
    const events = (await eventsOf(app, f.organizationId)).filter(
      (e) => e.type === 'withdrawal_destination.registered' && e.body.WithdrawalDestinationId === id,
    );
    expect(events).toHaveLength(1);
    expect(events[0]!.body).toMatchObject({ WithdrawalDestinationId: id, OrganizationId: f.organizationId, Address: raw.toLowerCase() });
    const audit = await app.deps.db.auditLogEntry.findMany({ where: { entityType: 'WithdrawalDestination', entityId: id } });
    expect(audit.map((a) => [a.action, a.actorType])).toEqual([['withdrawal_destination.registered', 'MEMBER']]);
  });

  test(
    'an API key registers one over GraphQL; registering the same address again answers the existing one (no second ' + 'event); an Idempotency-Key replays',
    async () => {
      const raw = address();
      const mutation = `mutation($o: ID!, $i: RegisterWithdrawalDestinationInput!, $k: String) {
      registerWithdrawalDestination(organizationId: $o, input: $i, idempotencyKey: $k) { id address status environmentType label } }`;
      const g = await app.gql<{ registerWithdrawalDestination: { id: string; address: string; status: string } }>(
        mutation,
        { o: f.organizationId, i: { networkId: f.catalog.networkId, address: raw } },
        f.apiKeyHeaders,
      );
      expect(g.errors).toBeUndefined();
      const id = g.data!.registerWithdrawalDestination.id;
      expect(g.data!.registerWithdrawalDestination).toMatchObject({ address: raw.toLowerCase(), status: 'ACTIVE' });

      const again = await register({ networkId: f.catalog.networkId, address: raw.toLowerCase(), label: 'other label' });
      expect(again.status).toBe(201);
      expect(idOf(again.headers.get('location'))).toBe(id);
      const events = (await eventsOf(app, f.organizationId)).filter(
        (e) => e.type === 'withdrawal_destination.registered' && e.body.WithdrawalDestinationId === id,
      );
      expect(events).toHaveLength(1);
      expect((await app.rest('GET', `/v1/withdrawal-destinations/${id}`, { headers: f.apiKeyHeaders })).body.label).toBeNull();

      const key = 'wd-' + crypto.randomUUID();
      const body = { networkId: f.catalog.networkId, address: address() };
      const first = await app.rest('POST', `/v1/organizations/${f.organizationId}/withdrawal-destinations`, {
        body,
        headers: { ...f.member.headers, 'idempotency-key': key },
      });
      const replay = await app.rest('POST', `/v1/organizations/${f.organizationId}/withdrawal-destinations`, {
        body,
        headers: { ...f.member.headers, 'idempotency-key': key },
      });
      expect([first.status, replay.status]).toEqual([201, 201]);
      expect(replay.headers.get('location')).toBe(first.headers.get('location'));
      const other = await app.rest('POST', `/v1/organizations/${f.organizationId}/withdrawal-destinations`, {
        body: { ...body, address: address() },
        headers: { ...f.member.headers, 'idempotency-key': key },
      });
      expect([other.status, other.body.code]).toEqual([409, 'IDEMPOTENCY_KEY_REUSED']);
    },
  );

  test('malformed input answers 400 with the field, and writes nothing', async () => {
    const evm = await app.rest('POST', '/v1/platform/networks', {
      headers: operator,
      body: { name: `EVM ${crypto.randomUUID().slice(0, 8)}`, kind: 'EVM', environmentType: 'PRODUCTION', blockTimeSeconds: 12, requiredConfirmations: 12 },
    });
    expect(evm.status, evm.text).toBe(201);
    const before = await app.deps.db.withdrawalDestination.count();
    const cases: [Record<string, unknown>, string, Record<string, string>?][] = [
      [{ networkId: f.catalog.networkId, address: '0xABC' }, 'address'],
      [{ networkId: f.catalog.networkId, address: '1BoatSLRHtKNngkdXEeobR76b53LETtpyT' }, 'address'],
      [{ networkId: f.catalog.networkId, address: '' }, 'address'],
      [{ networkId: crypto.randomUUID(), address: address() }, 'networkId'],
      [{ networkId: 'not-a-uuid', address: address() }, 'networkId'],
      [{ networkId: idOf(evm.headers.get('location')), address: address() }, 'networkId'],
      [{ networkId: idOf(evm.headers.get('location')), address: address() }, 'networkId', f.apiKeyHeaders],
      [{ networkId: f.catalog.networkId, address: address(), label: 'x'.repeat(201) }, 'label'],
      [{ networkId: f.catalog.networkId, address: address(), extra: 1 }, '(input)'],
    ];
    for (const [body, field, headers] of cases) {
      const r = await register(body, headers);
      expect([r.status, r.body.code], JSON.stringify(body) + r.text).toEqual([400, 'VALIDATION_FAILED']);
      if (field !== '(input)')
        expect(
          r.body.errors?.map((e: { field: string }) => e.field),
          JSON.stringify(body),
        ).toEqual([field]);
    }
    expect(await app.deps.db.withdrawalDestination.count()).toBe(before);
  });

  test("tenant isolation: another organization's destination, list and registration answer 404; permissions are enforced", async () => {
    const r = await register({ networkId: f.catalog.networkId, address: address() });
    const id = idOf(r.headers.get('location'));
    const stranger = await signUpMember(app);
    expect((await app.rest('GET', `/v1/withdrawal-destinations/${id}`, { headers: stranger.headers })).status).toBe(404);
    expect((await app.rest('GET', `/v1/organizations/${f.organizationId}/withdrawal-destinations`, { headers: stranger.headers })).status).toBe(404);
    expect((await register({ networkId: f.catalog.networkId, address: address() }, stranger.headers)).status).toBe(404);
    const g = await app.gql(`query($id: ID!) { withdrawalDestination(id: $id) { id } }`, { id }, stranger.headers);
    expect(g.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    // An account holder may not read; an operator reads any.
    const h = await app.rest('POST', '/v1/account-holders/signup', { body: { email: uniqueEmail('holder'), password: PASSWORD, name: 'Holder' } });
    expect((await app.rest('GET', `/v1/withdrawal-destinations/${id}`, { headers: bearer(h.body.accessToken) })).status).toBe(403);
    expect((await app.rest('GET', `/v1/withdrawal-destinations/${id}`, { headers: operator })).status).toBe(200);
    expect((await register({ networkId: f.catalog.networkId, address: address() }, operator)).status).toBe(403);
    // A production API key does not see sandbox destinations.
    const prodKey = await createApiKey(app, f.member, 'PRODUCTION');
    expect((await app.rest('GET', `/v1/withdrawal-destinations/${id}`, { headers: prodKey.headers })).status).toBe(404);
  });

  test('list: oldest first, limit and after with a Link to the next page', async () => {
    const m = await signUpMember(app);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push(idOf((await register({ networkId: f.catalog.networkId, address: address() }, m.headers, m.organizationId)).headers.get('location')));
    const p1 = await app.rest('GET', `/v1/organizations/${m.organizationId}/withdrawal-destinations?limit=2`, { headers: m.headers });
    expect(p1.status).toBe(200);
    expect(p1.body.map((d: { id: string }) => d.id)).toEqual(ids.slice(0, 2));
    expect(p1.headers.get('link')).toContain(`after=${ids[1]}`);
    const p2 = await app.rest('GET', `/v1/organizations/${m.organizationId}/withdrawal-destinations?limit=2&after=${ids[1]}`, { headers: m.headers });
    expect(p2.body.map((d: { id: string }) => d.id)).toEqual(ids.slice(2));
    expect((await app.rest('GET', `/v1/organizations/${m.organizationId}/withdrawal-destinations?limit=0`, { headers: m.headers })).status).toBe(400);
  });

  test('an operator blocks one: BLOCKED with reason, operator and time, audited; 409 when blocked again; assertDestinationUsable refuses it', async () => {
    const id = idOf((await register({ networkId: f.catalog.networkId, address: address() })).headers.get('location'));
    const active = await app.deps.db.$transaction((tx) => assertDestinationUsable(tx, id, f.organizationId));
    expect(active.status).toBe('ACTIVE');

    expect((await app.rest('POST', `/v1/admin/withdrawal-destinations/${id}/block`, { headers: f.member.headers, body: { reason: 'x' } })).status).toBe(403);
    expect((await app.rest('POST', `/v1/admin/withdrawal-destinations/${id}/block`, { headers: operator, body: { reason: '' } })).status).toBe(400);
    const b = await app.rest('POST', `/v1/admin/withdrawal-destinations/${id}/block`, { headers: operator, body: { reason: 'sanctions screening hit' } });
    expect(b.status, b.text).toBe(204);
    const got = await app.rest('GET', `/v1/withdrawal-destinations/${id}`, { headers: f.member.headers });
    expect(got.body).toMatchObject({ status: 'BLOCKED', blockedReason: 'sanctions screening hit', blockedAt: app.clock.now().toISOString() });
    expect(got.body.blockedByOperatorId).toBeTruthy();
    const audit = await app.deps.db.auditLogEntry.findMany({ where: { entityId: id, action: 'withdrawal_destination.blocked' } });
    expect(audit.map((a) => a.actorType)).toEqual(['OPERATOR']);

    const again = await app.rest('POST', `/v1/admin/withdrawal-destinations/${id}/block`, { headers: operator, body: { reason: 'again' } });
    expect([again.status, again.body.code]).toEqual([409, 'INVALID_STATE']);
    const g = await app.gql(`mutation($id: ID!) { adminBlockWithdrawalDestination(id: $id, input: { reason: "again" }) { id } }`, { id }, operator);
    expect(g.errors?.[0]?.extensions?.code).toBe('INVALID_STATE');
    expect(
      (await app.rest('POST', `/v1/admin/withdrawal-destinations/${crypto.randomUUID()}/block`, { headers: operator, body: { reason: 'x' } })).status,
    ).toBe(404);

    await expect(app.deps.db.$transaction((tx) => assertDestinationUsable(tx, id, f.organizationId))).rejects.toMatchObject({ code: 'INVALID_STATE' });
    const stranger = await signUpMember(app);
    const other = idOf((await register({ networkId: f.catalog.networkId, address: address() })).headers.get('location'));
    await expect(app.deps.db.$transaction((tx) => assertDestinationUsable(tx, other, stranger.organizationId))).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(app.deps.db.$transaction((tx) => assertDestinationUsable(tx, 'nope', f.organizationId))).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});

describe('ledger corrections', () => {
  const an = () => f.catalog.assetNetworkId;
  const customer = (ownerId = f.beneficiaryAccountId) => ({ kind: 'CUSTOMER', ownerId, assetNetworkId: an() });
  const suspense = () => ({ kind: 'SUSPENSE', assetNetworkId: an() });
  const correction = (lines: unknown[], extra: Record<string, unknown> = {}) => ({
    reason: 'reconciliation difference',
    organizationId: f.organizationId,
    lines,
    ...extra,
  });
  const post = (body: unknown, headers: Record<string, string> = operator) => app.rest('POST', '/v1/admin/ledger-corrections', { body, headers });
  const balance = async () => {
    const r = await app.rest('GET', `/v1/accounts/${f.beneficiaryAccountId}/balances`, { headers: f.member.headers });
    expect(r.status).toBe(200);
    return (
      (r.body as { assetNetworkId: string; posted: string; available: string }[]).find((b) => b.assetNetworkId === an()) ?? { posted: '0', available: '0' }
    );
  };
  const counts = async () => [await app.deps.db.ledgerCorrection.count(), await app.deps.db.ledgerTransaction.count(), await app.deps.db.auditLogEntry.count()];

  test(
    'an operator records a correction that moves a balance: 201 with Location, the ledger transaction, the record ' + 'and the audit entry; GET reads it back',
    async () => {
      const before = BigInt((await balance()).posted);
      const r = await post(
        correction([
          { account: suspense(), direction: 'DEBIT', amount: '700' },
          { account: customer(), direction: 'CREDIT', amount: '700' },
        ]),
      );
      expect(r.status, r.text).toBe(201);
      const id = idOf(r.headers.get('location'));
      expect(r.headers.get('location')).toBe(`/v1/admin/ledger-corrections/${id}`);
      expect(BigInt((await balance()).posted)).toBe(before + 700n);

      const got = await app.rest('GET', `/v1/admin/ledger-corrections/${id}`, { headers: operator });
      expect(got.status).toBe(200);
      expect(got.body).toMatchObject({
        id,
        organizationId: f.organizationId,
        reason: 'reconciliation difference',
        correctsLedgerTransactionId: null,
        lines: [
          { account: { kind: 'SUSPENSE', ownerId: f.organizationId, assetNetworkId: an() }, direction: 'DEBIT', amount: '700' },
          { account: { kind: 'CUSTOMER', ownerId: f.beneficiaryAccountId, assetNetworkId: an() }, direction: 'CREDIT', amount: '700' },
        ],
      });
      const lt = await app.deps.db.ledgerTransaction.findUniqueOrThrow({ where: { id: got.body.ledgerTransactionId } });
      expect(lt).toMatchObject({ nature: 'ledger.correction', referenceType: 'LedgerCorrection', referenceId: id, organizationId: f.organizationId });
      expect(lt.metadata).toEqual({ reason: 'reconciliation difference', operatorId: got.body.operatorId, correctsLedgerTransactionId: null });
      const audit = await app.deps.db.auditLogEntry.findMany({ where: { entityType: 'LedgerCorrection', entityId: id } });
      expect(audit.map((a) => [a.action, a.actorType, a.actorId])).toEqual([['ledger.correction.recorded', 'OPERATOR', got.body.operatorId]]);

      // A correction of that correction over GraphQL, naming it; the record stays as it was.
      const g = await app.gql<{ adminRecordLedgerCorrection: { id: string; correctsLedgerTransactionId: string } }>(
        `mutation($i: RecordLedgerCorrectionInput!) { adminRecordLedgerCorrection(input: $i) { id correctsLedgerTransactionId } }`,
        {
          i: correction(
            [
              { account: customer(), direction: 'DEBIT', amount: '200' },
              { account: suspense(), direction: 'CREDIT', amount: '200' },
            ],
            { reason: 'partly wrong', correctsLedgerTransactionId: lt.id },
          ),
        },
        operator,
      );
      expect(g.errors).toBeUndefined();
      expect(g.data!.adminRecordLedgerCorrection.correctsLedgerTransactionId).toBe(lt.id);
      expect(BigInt((await balance()).posted)).toBe(before + 500n);
      // The service's role may not update it; the trigger refuses even the owner.
      await expect(app.deps.db.$executeRawUnsafe(`UPDATE "LedgerCorrection" SET "reason" = 'edited' WHERE "id" = $1::uuid`, id)).rejects.toThrow(
        /permission denied/,
      );
      await expect(app.ownerDb.$executeRawUnsafe(`UPDATE "LedgerCorrection" SET "reason" = 'edited' WHERE "id" = $1::uuid`, id)).rejects.toThrow(/append-only/);
    },
  );

  test('unbalanced or malformed: 400 and nothing written', async () => {
    const stranger = await signUpMember(app);
    const before = await counts();
    const bad: [unknown, string][] = [
      [
        correction([
          { account: suspense(), direction: 'DEBIT', amount: '700' },
          { account: customer(), direction: 'CREDIT', amount: '600' },
        ]),
        'lines',
      ],
      [correction([{ account: suspense(), direction: 'DEBIT', amount: '700' }]), 'lines'],
      [
        correction([
          { account: suspense(), direction: 'DEBIT', amount: '0' },
          { account: customer(), direction: 'CREDIT', amount: '0' },
        ]),
        'lines.0.amount',
      ],
      [
        correction([
          { account: suspense(), direction: 'DEBIT', amount: '1.5' },
          { account: customer(), direction: 'CREDIT', amount: '1.5' },
        ]),
        'lines.0.amount',
      ],
      [
        correction([
          { account: suspense(), direction: 'DEBIT', amount: '5' },
          { account: customer(crypto.randomUUID()), direction: 'CREDIT', amount: '5' },
        ]),
        'lines.1.account.ownerId',
      ],
      [
        correction([
          { account: suspense(), direction: 'DEBIT', amount: '5' },
          { account: { kind: 'FEES', ownerId: f.organizationId, assetNetworkId: an() }, direction: 'CREDIT', amount: '5' },
        ]),
        'lines.1.account.ownerId',
      ],
      [
        correction(
          [
            { account: suspense(), direction: 'DEBIT', amount: '5' },
            { account: customer(), direction: 'CREDIT', amount: '5' },
          ],
          { reason: '' },
        ),
        'reason',
      ],
      [
        correction(
          [
            { account: suspense(), direction: 'DEBIT', amount: '5' },
            { account: customer(), direction: 'CREDIT', amount: '5' },
          ],
          { organizationId: undefined },
        ),
        'organizationId',
      ],
      [
        correction(
          [
            { account: suspense(), direction: 'DEBIT', amount: '5' },
            { account: customer(), direction: 'CREDIT', amount: '5' },
          ],
          { correctsLedgerTransactionId: crypto.randomUUID() },
        ),
        'correctsLedgerTransactionId',
      ],
    ];
    for (const [body, field] of bad) {
      const r = await post(body);
      expect([r.status, r.body.code], JSON.stringify(body) + r.text).toEqual([400, 'VALIDATION_FAILED']);
      expect(
        r.body.errors?.map((e: { field: string }) => e.field),
        JSON.stringify(body),
      ).toEqual([field]);
    }
    // Another organization's account.
    const r = await post(
      correction(
        [
          { account: suspense(), direction: 'DEBIT', amount: '5' },
          { account: customer(), direction: 'CREDIT', amount: '5' },
        ],
        { organizationId: stranger.organizationId },
      ),
    );
    expect(r.status).toBe(400);
    expect(await counts()).toEqual(before);
  });

  test("a ledger refusal (insufficient funds, frozen account) answers 409 with the ledger's reason, and nothing is written", async () => {
    const available = BigInt((await balance()).available);
    const before = await counts();
    const r = await post(
      correction([
        { account: customer(), direction: 'DEBIT', amount: (available + 1n).toString() },
        { account: suspense(), direction: 'CREDIT', amount: (available + 1n).toString() },
      ]),
    );
    expect([r.status, r.body.code], r.text).toEqual([409, 'INVALID_STATE']);
    expect(r.body.detail).toContain('INSUFFICIENT_FUNDS');
    expect(await counts()).toEqual(before);

    const acc = await app.rest('POST', `/v1/organizations/${f.organizationId}/accounts`, {
      body: { name: 'Frozen', mode: 'SANDBOX' },
      headers: f.member.headers,
    });
    const frozenId = idOf(acc.headers.get('location'));
    const fund = await post(
      correction([
        { account: suspense(), direction: 'DEBIT', amount: '50' },
        { account: customer(frozenId), direction: 'CREDIT', amount: '50' },
      ]),
    );
    expect(fund.status).toBe(201);
    expect((await app.rest('POST', `/v1/accounts/${frozenId}/freeze`, { body: { reason: 'investigation' }, headers: f.member.headers })).status).toBe(204);
    const mid = await counts();
    const frozen = await post(
      correction([
        { account: customer(frozenId), direction: 'DEBIT', amount: '10' },
        { account: suspense(), direction: 'CREDIT', amount: '10' },
      ]),
    );
    expect([frozen.status, frozen.body.code]).toEqual([409, 'INVALID_STATE']);
    expect(frozen.body.detail).toContain('ACCOUNT_FROZEN');
    expect(await counts()).toEqual(mid);
  });

  test('idempotent replay: the same key and body answer the same correction once; another body under the key: 409', async () => {
    const key = 'corr-' + crypto.randomUUID();
    const body = correction(
      [
        { account: suspense(), direction: 'DEBIT', amount: '11' },
        { account: customer(), direction: 'CREDIT', amount: '11' },
      ],
      { idempotencyKey: key },
    );
    const before = BigInt((await balance()).posted);
    const a = await post(body);
    const b = await app.rest('POST', '/v1/admin/ledger-corrections', { body, headers: { ...operator, 'idempotency-key': key } });
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(b.headers.get('location')).toBe(a.headers.get('location'));
    expect(await app.deps.db.ledgerCorrection.count({ where: { idempotencyKey: key } })).toBe(1);
    expect(BigInt((await balance()).posted)).toBe(before + 11n);
    const other = await post({ ...body, reason: 'something else' });
    expect([other.status, other.body.code]).toEqual([409, 'IDEMPOTENCY_KEY_REUSED']);
    const mismatch = await app.rest('POST', '/v1/admin/ledger-corrections', { body, headers: { ...operator, 'idempotency-key': key + 'x' } });
    expect(mismatch.status).toBe(400);
  });

  test('operators only: every other principal is refused, and nothing is written', async () => {
    const body = correction([
      { account: suspense(), direction: 'DEBIT', amount: '5' },
      { account: customer(), direction: 'CREDIT', amount: '5' },
    ]);
    const h = await app.rest('POST', '/v1/account-holders/signup', { body: { email: uniqueEmail('holder'), password: PASSWORD, name: 'Holder' } });
    const before = await counts();
    const refused = [
      [{}, 401],
      [f.member.headers, 403],
      [f.apiKeyHeaders, 403],
      [bearer(h.body.accessToken), 403],
    ] as const;
    for (const [headers, status] of refused) expect((await post(body, headers)).status).toBe(status);
    const g = await app.gql(`mutation($i: RecordLedgerCorrectionInput!) { adminRecordLedgerCorrection(input: $i) { id } }`, { i: body }, f.member.headers);
    expect(g.errors?.[0]?.extensions?.code).toBe('PRINCIPAL_NOT_ALLOWED');
    expect(await counts()).toEqual(before);
    const id = (await app.deps.db.ledgerCorrection.findFirst())?.id ?? crypto.randomUUID();
    expect((await app.rest('GET', `/v1/admin/ledger-corrections/${id}`, { headers: f.member.headers })).status).toBe(403);
    expect((await app.rest('GET', `/v1/admin/ledger-corrections/${crypto.randomUUID()}`, { headers: operator })).status).toBe(404);
  });
});
