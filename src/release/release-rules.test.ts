import { describe, expect, test } from 'vitest';
import { createApiKey, createOperator, PASSWORD, signUpMember, uniqueEmail } from '../../test/harness';
import { moneySuite } from '../../test/money-suite';
import { sandboxAdvanceClock, sandboxMine, sandboxSend } from '../../test/money-helpers';
import { hashPassword } from '../auth/passwords';
import { createIntent, drainChainSync, eventsOf, moneyDeps, moneyFixture, type MoneyFixture } from '../../test/fixtures/deposits/testing';
import { drainMoneyWork } from '../../test/fixtures/settlements/testing';
import { runReleaseSweep } from './release-rules';

/**
 * Conditional release rules and templates (docs/release-rules.md), through REST and GraphQL:
 * each kind of condition releases when it should and never before, milestones release partial
 * amounts, frozen or reviewed transactions wait, templates apply, validation and tenancy hold, and
 * the settlements the milestones request execute (drainMoneyWork runs the real job handlers).
 */
const suite = moneySuite();

type H = Record<string, string>;
const AMOUNT = 1_000_000n;
const fixture = () => moneyFixture(suite.app, { requiredConfirmations: 1 });
const rulePath = (id: string) => `/v1/transactions/${id}/release-rule`;
const getRule = async (id: string, headers: H) => suite.app.rest('GET', rulePath(id), { headers });
const putRule = (id: string, body: unknown, headers: H) => suite.app.rest('PUT', rulePath(id), { headers, body });
const approve = (id: string, headers: H, body?: unknown) =>
  suite.app.rest('POST', `/v1/transactions/${id}/release-approvals`, { headers, ...(body !== undefined ? { body } : {}) });
const txOf = async (f: MoneyFixture, id: string) => (await suite.app.rest('GET', `/v1/transactions/${id}`, { headers: f.apiKeyHeaders })).body;
const inHours = (h: number) => new Date(suite.app.clock.now().getTime() + h * 3600_000).toISOString();
const statuses = (rule: { milestones: { status: string }[] }) => rule.milestones.map((m) => m.status);

async function ok<T = any>(r: Promise<{ status: number; text: string; body: T }>, status: number): Promise<T> {
  const res = await r;
  expect(res.status, res.text).toBe(status);
  return res.body;
}

/** An account holder with an active relationship with the organization, holding a new account (created by the API key: authorized for its application). */
async function holderWithAccount(f: MoneyFixture) {
  const email = uniqueEmail('holder');
  const s = await ok(suite.app.rest('POST', '/v1/account-holders/signup', { body: { email, password: PASSWORD, name: 'Holder' } }), 200);
  const headers = { authorization: `Bearer ${s.accessToken}` };
  const inv = await ok(
    suite.app.rest('POST', `/v1/organizations/${f.organizationId}/account-holder-invitations`, { body: { email }, headers: f.member.headers }),
    201,
  );
  await ok(suite.app.rest('POST', '/v1/account-holders/invitations/claim', { body: { token: inv.token }, headers }), 200);
  const acc = await suite.app.rest('POST', `/v1/organizations/${f.organizationId}/accounts`, {
    body: { name: 'Buyer', accountHolderId: s.accountHolderId },
    headers: f.apiKeyHeaders,
  });
  expect(acc.status, acc.text).toBe(201);
  return { accountHolderId: s.accountHolderId as string, headers, accountId: acc.headers.get('location')!.split('/').pop()! };
}

async function account(f: MoneyFixture, name = 'Partner') {
  const r = await suite.app.rest('POST', `/v1/organizations/${f.organizationId}/accounts`, { body: { name }, headers: f.apiKeyHeaders });
  expect(r.status, r.text).toBe(201);
  return r.headers.get('location')!.split('/').pop()!;
}

/** Another member of the organization (role OPERATIONS unless told), logged in. */
async function memberOf(f: MoneyFixture, role: 'OPERATIONS' | 'VIEWER' = 'OPERATIONS') {
  const email = uniqueEmail('member');
  const m = await suite.app.deps.db.member.create({
    data: {
      organizationId: f.organizationId,
      email,
      name: 'Colleague',
      role,
      passwordHash: await hashPassword(PASSWORD),
      credentialsChangedAt: new Date(suite.app.clock.now().getTime() - 5000),
    },
  });
  const login = await ok(suite.app.rest('POST', '/v1/auth/login', { body: { email, password: PASSWORD } }), 200);
  return { memberId: m.id, headers: { authorization: `Bearer ${login.accessToken}` } };
}

/** Pays the intent in full (or `amount`) and confirms it: the transaction is RESERVED; then every job runs. */
async function fund(f: MoneyFixture, pi: { address: string; transactionId: string }, amount = AMOUNT) {
  await sandboxSend(suite.app, f.apiKeyHeaders, { address: pi.address, amount, assetNetworkId: f.catalog.assetNetworkId });
  await sandboxMine(suite.app, f.apiKeyHeaders, f.catalog.networkId, 1);
  await drainChainSync(suite.app);
  await drainMoneyWork(suite.app);
}

async function settlementsOf(f: MoneyFixture, transactionId: string) {
  const r = await suite.app.gql<{
    transaction: {
      settlements: {
        id: string;
        status: string;
        milestoneId: string | null;
        requestedAmount: string | null;
        grossAmount: string | null;
        allocations: { accountId: string; amount: string; status: string; retainReason: string | null }[];
      }[];
    };
  }>(
    `query($id: ID!) { transaction(id: $id) { settlements { id status milestoneId requestedAmount grossAmount allocations { accountId amount status retainReason } } } }`,
    { id: transactionId },
    f.apiKeyHeaders,
  );
  expect(r.errors).toBeUndefined();
  // Ids are UUIDv7 of the test's manual clock, which stands still: a fixed order instead (largest request first, "everything left" last).
  const key = (x: { requestedAmount: string | null }) => (x.requestedAmount === null ? -1n : BigInt(x.requestedAmount));
  return r.data!.transaction.settlements.sort((a, b) => (key(a) === key(b) ? 0 : key(a) > key(b) ? -1 : 1));
}

/** A transaction's status and money totals (GraphQL: GetTransaction's REST body does not carry the totals). */
async function money(f: MoneyFixture, id: string) {
  const r = await suite.app.gql<{ transaction: { status: string; settledAmount: string; escrowAmount: string } }>(
    `query($id: ID!) { transaction(id: $id) { status settledAmount escrowAmount } }`,
    { id },
    f.apiKeyHeaders,
  );
  expect(r.errors).toBeUndefined();
  return r.data!.transaction;
}

const settledEvents = async (f: MoneyFixture, transactionId: string) =>
  (await eventsOf(suite.app, f.organizationId)).filter((e) => e.type === 'transaction.settled' && e.body.TransactionId === transactionId).map((e) => e.body);

describe('setting and reading a rule', () => {
  test('PUT (API key) sets milestones by percentage and split rules; GET and GraphQL read it; replacing it; audit entry, no event', async () => {
    const f = await fixture();
    const partner = await account(f);
    const pi = await createIntent(suite.app, f, { amount: AMOUNT.toString() });
    const eventsBefore = (await eventsOf(suite.app, f.organizationId)).length;
    const body = {
      milestones: [
        { name: 'Deposit', percentage: '33.333333', conditions: [{ kind: 'APPROVAL', party: 'INTEGRATOR' }] },
        {
          name: 'Delivery',
          percentage: '66.666667',
          mode: 'ANY',
          conditions: [
            { kind: 'APPROVAL', party: 'MEMBER', memberId: f.member.memberId },
            { kind: 'INSPECTION_PERIOD', durationSeconds: 86400 },
          ],
        },
      ],
      splits: [
        { accountId: f.beneficiaryAccountId, percentage: '100' },
        { accountId: partner, fixedAmount: '50000', holdConditions: [{ kind: 'TIME_LOCK', releaseAfter: inHours(2) }] },
      ],
    };
    const put = await ok(putRule(pi.transactionId, body, f.apiKeyHeaders), 200);
    expect(put).toMatchObject({ transactionId: pi.transactionId, templateId: null });
    expect(put.milestones.map((m: any) => [m.position, m.name, m.amount, m.mode, m.status])).toEqual([
      [1, 'Deposit', '333333', 'ALL', 'PENDING'],
      [2, 'Delivery', '666667', 'ANY', 'PENDING'],
    ]);
    expect(put.milestones[1].conditions.map((c: any) => [c.kind, c.party, c.memberId, c.durationSeconds, c.dueAt, c.met])).toEqual([
      ['APPROVAL', 'MEMBER', f.member.memberId, null, null, false],
      ['INSPECTION_PERIOD', null, null, 86400, null, false], // not reserved yet: no due time
    ]);
    expect(put.splits.map((s: any) => [s.accountId, s.percentage, s.fixedAmount, s.allocatedAmount, s.holdConditions.length])).toEqual([
      [f.beneficiaryAccountId, '100', null, '0', 0],
      [partner, null, '50000', '0', 1],
    ]);
    // The partner is a participant now (SPLIT_RECIPIENT); the split rule points at it.
    const t = await txOf(f, pi.transactionId);
    const partnerRow = t.participants.find((p: any) => p.accountId === partner);
    expect(partnerRow).toMatchObject({ role: 'SPLIT_RECIPIENT' });
    const gql = await suite.app.gql<any>(
      `query($id: ID!) { transaction(id: $id) { participants { id accountId } releaseRule { setAt milestones { amount } splits { accountId participantId } } } }`,
      { id: pi.transactionId },
      f.member.headers,
    );
    expect(gql.data.transaction.releaseRule.milestones).toEqual([{ amount: '333333' }, { amount: '666667' }]);
    const partnerParticipant = gql.data.transaction.participants.find((p: any) => p.accountId === partner);
    expect(gql.data.transaction.releaseRule.splits[1]).toEqual({ accountId: partner, participantId: partnerParticipant.id });
    expect(await ok(getRule(pi.transactionId, f.member.headers), 200)).toEqual(put);

    // Replaced: the old milestones, splits and split-only participants go.
    const again = await ok(putRule(pi.transactionId, { milestones: [{ amount: AMOUNT.toString() }] }, f.member.headers), 200);
    expect(again.milestones.map((m: any) => [m.position, m.amount, m.conditions])).toEqual([[1, AMOUNT.toString(), []]]);
    expect(again.splits).toEqual([]);
    expect((await txOf(f, pi.transactionId)).participants.map((p: any) => p.role)).toEqual(['BENEFICIARY']);
    const audits = await suite.app.deps.db.auditLogEntry.findMany({
      where: { entityId: pi.transactionId, action: 'transaction.release_rule_set' },
      orderBy: [{ occurredAt: 'asc' }, { id: 'asc' }],
    });
    expect(audits.map((a) => a.actorType)).toEqual(['API_KEY', 'MEMBER']);
    expect((await eventsOf(suite.app, f.organizationId)).length).toBe(eventsBefore);
  });

  test('validation: 400 with field errors, nothing changed', async () => {
    const f = await fixture();
    const partner = await account(f);
    const other = await signUpMember(suite.app);
    const pi = await createIntent(suite.app, f, { amount: AMOUNT.toString() });
    const stranger = await holderWithAccount(f); // holds an account, but not one of the transaction's
    const removed = await memberOf(f); // removed from the organization (issue 27): no longer a party
    const gone = await suite.app.rest('DELETE', `/v1/organizations/${f.organizationId}/members/${removed.memberId}`, { headers: f.member.headers });
    expect(gone.status, gone.text).toBe(204);
    const cases: [unknown, string, RegExp][] = [
      [
        { milestones: [{ amount: '1000000', conditions: [{ kind: 'APPROVAL', party: 'MEMBER', memberId: removed.memberId }] }] },
        'milestones.0.conditions.0.memberId',
        /member of the organization/,
      ],
      [{ milestones: [{ amount: '400000' }, { amount: '500000' }] }, 'milestones', /add up to the transaction amount 1000000 \(they add up to 900000\)/],
      [{ milestones: [{ percentage: '40' }, { percentage: '50' }] }, 'milestones', /percentages must add up to exactly 100/],
      [{ milestones: [{ percentage: '40' }, { amount: '600000' }] }, 'milestones', /not a mix/],
      [
        { milestones: [{ amount: '1000000', conditions: [{ kind: 'APPROVAL', party: 'MEMBER', memberId: other.memberId }] }] },
        'milestones.0.conditions.0.memberId',
        /member of the organization/,
      ],
      [
        { milestones: [{ amount: '1000000', conditions: [{ kind: 'APPROVAL', party: 'ACCOUNT_HOLDER', accountHolderId: stranger.accountHolderId }] }] },
        'milestones.0.conditions.0.accountHolderId',
        /participant accounts/,
      ],
      [
        { milestones: [{ amount: '1000000', conditions: [{ kind: 'TIME_LOCK', releaseAfter: inHours(-1) }] }] },
        'milestones.0.conditions.0.releaseAfter',
        /must be in the future/,
      ],
      [{ milestones: [{ amount: '1000000', conditions: [{ kind: 'APPROVAL', party: 'PAYER' }] }] }, 'milestones.0.conditions.0.party', /no payer account/],
      [
        { milestones: [{ amount: '1000000', conditions: [{ kind: 'APPROVAL', party: 'BENEFICIARY' }] }] },
        'milestones.0.conditions.0.party',
        /no account holder/,
      ],
      [{ milestones: [{ amount: '1000000', conditions: [{ kind: 'TIME_LOCK' }] }] }, 'milestones.0.conditions.0.releaseAfter', /required/],
      [
        {
          splits: [
            { accountId: partner, percentage: '60' },
            { accountId: f.beneficiaryAccountId, percentage: '30' },
          ],
        },
        'splits',
        /add up to exactly 100/,
      ],
      [
        {
          splits: [
            { accountId: partner, percentage: '50' },
            { accountId: partner, percentage: '50' },
          ],
        },
        'splits.1.accountId',
        /another split rule/,
      ],
      [{ splits: [{ accountId: partner, fixedAmount: '10' }] }, 'splits', /at least one split rule must have a percentage/],
      [{ splits: [{ accountId: partner, percentage: '100', fixedAmount: '10' }] }, 'splits.0.percentage', /exactly one/],
      [
        {
          splits: [
            { accountId: partner, fixedAmount: '2000000' },
            { accountId: f.beneficiaryAccountId, percentage: '100' },
          ],
        },
        'splits',
        /more than the transaction amount/,
      ],
      [{ splits: [{ accountId: crypto.randomUUID(), percentage: '100' }] }, 'splits.0.accountId', /account of the organization/],
      [
        { splits: [{ accountId: partner, percentage: '100', holdConditions: [{ kind: 'INSPECTION_PERIOD', durationSeconds: 60 }] }] },
        'splits.0.holdConditions.0.kind',
        /APPROVAL or TIME_LOCK/,
      ],
      [{ templateId: crypto.randomUUID(), milestones: [] }, 'templateId', /not both/],
      [{ templateId: crypto.randomUUID() }, 'templateId', /template of the transaction's application/],
    ];
    for (const [body, field, message] of cases) {
      const r = await putRule(pi.transactionId, body, f.apiKeyHeaders);
      expect(r.status, `${JSON.stringify(body)}: ${r.text}`).toBe(400);
      expect(r.body.code).toBe('VALIDATION_FAILED');
      const hit = (r.body.errors as { field: string; message: string }[]).find((e) => e.field === field);
      expect(hit, `${JSON.stringify(body)} → ${r.text}`).toBeDefined();
      expect(hit!.message).toMatch(message);
    }
    const rule = await ok(getRule(pi.transactionId, f.apiKeyHeaders), 200);
    expect(rule).toMatchObject({ setAt: null, milestones: [], splits: [] });
    // GraphQL answers the same code and fields.
    const g = await suite.app.gql(
      `mutation($id: ID!, $input: ReleaseRuleInput!) { setTransactionReleaseRule(transactionId: $id, input: $input) { transactionId } }`,
      { id: pi.transactionId, input: { milestones: [{ amount: '1' }] } },
      f.apiKeyHeaders,
    );
    expect(g.errors?.[0]?.extensions).toMatchObject({ code: 'VALIDATION_FAILED', fieldErrors: [{ field: 'milestones' }] });
  });

  test('CreatePaymentIntent sets an inline rule in the same database transaction; an invalid one creates nothing', async () => {
    const f = await fixture();
    const bad = await suite.app.rest('POST', `/v1/organizations/${f.organizationId}/payment-intents`, {
      headers: f.apiKeyHeaders,
      body: {
        assetNetworkId: f.catalog.assetNetworkId,
        amount: '1000000',
        beneficiaryAccountId: f.beneficiaryAccountId,
        releaseRule: { milestones: [{ amount: '999999' }] },
      },
    });
    expect(bad.status, bad.text).toBe(400);
    expect(bad.body.errors).toEqual([
      { field: 'releaseRule.milestones', message: expect.stringMatching(/add up to the transaction amount/), code: expect.any(String) },
    ]);
    expect(await suite.app.deps.db.transaction.count({ where: { organizationId: f.organizationId } })).toBe(0);
    const shape = await suite.app.rest('POST', `/v1/organizations/${f.organizationId}/payment-intents`, {
      headers: f.apiKeyHeaders,
      body: {
        assetNetworkId: f.catalog.assetNetworkId,
        amount: '1000000',
        beneficiaryAccountId: f.beneficiaryAccountId,
        releaseRule: { milestones: [{ amount: '1000000', conditions: [{ kind: 'APPROVAL' }] }] },
      },
    });
    expect(shape.status).toBe(400);
    expect(shape.body.errors).toEqual([
      { field: 'releaseRule.milestones.0.conditions.0.party', message: 'is required for an APPROVAL condition', code: expect.any(String) },
    ]);

    const pi = await createIntent(suite.app, f, {
      releaseRule: { milestones: [{ amount: '400000' }, { amount: '600000', conditions: [{ kind: 'APPROVAL', party: 'INTEGRATOR' }] }] },
    });
    const rule = await ok(getRule(pi.transactionId, f.apiKeyHeaders), 200);
    expect(rule.milestones.map((m: any) => m.amount)).toEqual(['400000', '600000']);
    expect(rule.setAt).toBeTruthy();
  });

  test(
    '409: not AWAITING_FUNDS or RESERVED, or a settlement exists; 404 across organizations and for account holders ' + 'not named; 403 for a viewer',
    async () => {
      const f = await fixture();
      const cancelled = await createIntent(suite.app, f);
      await ok(suite.app.rest('POST', `/v1/transactions/${cancelled.transactionId}/cancel`, { headers: f.apiKeyHeaders }), 204);
      const r1 = await putRule(cancelled.transactionId, { milestones: [] }, f.apiKeyHeaders);
      expect([r1.status, r1.body.code]).toEqual([409, 'INVALID_STATE']);
      const r1a = await approve(cancelled.transactionId, f.apiKeyHeaders);
      expect([r1a.status, r1a.body.detail]).toEqual([409, 'The transaction is CANCELLED: there is nothing to release.']);

      const pi = await createIntent(suite.app, f, {
        amount: AMOUNT.toString(),
        releaseRule: { milestones: [{ percentage: '50' }, { percentage: '50', conditions: [{ kind: 'APPROVAL', party: 'INTEGRATOR' }] }] },
      });
      await fund(f, pi);
      // The first milestone had no condition: released on funding, so a settlement exists.
      expect(statuses(await ok(getRule(pi.transactionId, f.apiKeyHeaders), 200))).toEqual(['RELEASED', 'PENDING']);
      const r2 = await putRule(pi.transactionId, { milestones: [{ amount: AMOUNT.toString() }] }, f.apiKeyHeaders);
      expect([r2.status, r2.body.code]).toEqual([409, 'INVALID_STATE']);
      expect(r2.body.detail).toMatch(/settlement/);

      const other = await signUpMember(suite.app);
      const otherKey = await createApiKey(suite.app, other);
      for (const headers of [other.headers, otherKey.headers]) {
        expect((await getRule(pi.transactionId, headers)).status).toBe(404);
        expect((await putRule(pi.transactionId, { milestones: [] }, headers)).status).toBe(404);
        expect((await approve(pi.transactionId, headers)).status).toBe(404);
      }
      const holder = await holderWithAccount(f);
      expect((await getRule(pi.transactionId, holder.headers)).status).toBe(404);
      expect((await approve(pi.transactionId, holder.headers)).status).toBe(404);
      const viewer = await memberOf(f, 'VIEWER');
      expect((await putRule(pi.transactionId, { milestones: [] }, viewer.headers)).status).toBe(403);
      expect((await getRule(pi.transactionId, viewer.headers)).status).toBe(200);
      // Another environment of the same organization's application: 404 as well.
      const prodKey = await createApiKey(suite.app, f.member, 'PRODUCTION');
      expect((await getRule(pi.transactionId, prodKey.headers)).status).toBe(404);
      expect((await getRule(crypto.randomUUID(), f.apiKeyHeaders)).status).toBe(404);
    },
  );
});

describe('evaluation jobs', () => {
  test('a deposit that reserves a transaction queues its evaluation only when the transaction has a pending milestone; the rule then releases', async () => {
    const f = await fixture();
    const plain = await createIntent(suite.app, f);
    const ruled = await createIntent(suite.app, f, { releaseRule: { milestones: [{ amount: AMOUNT.toString() }] } });
    await fund(f, plain);
    await fund(f, ruled);
    const jobs = await suite.app.deps.db.$queryRaw<{ transactionId: string; state: string }[]>`
      SELECT data->>'transactionId' AS "transactionId", state::text FROM pgboss.job
       WHERE name = 'release.evaluate' AND data->>'transactionId' IN (${plain.transactionId}, ${ruled.transactionId})`;
    // Nothing to release in the plain one: no job (a no-op evaluation per funded transaction otherwise).
    expect(jobs).toEqual([{ transactionId: ruled.transactionId, state: 'completed' }]);
    expect(await txOf(f, plain.transactionId)).toMatchObject({ status: 'RESERVED' });
    expect(statuses(await ok(getRule(ruled.transactionId, f.apiKeyHeaders), 200))).toEqual(['RELEASED']);
    expect(await txOf(f, ruled.transactionId)).toMatchObject({ status: 'SETTLED' });
  });

  test('a rule set while the transaction is RESERVED is evaluated at once (no job needed)', async () => {
    const f = await fixture();
    const pi = await createIntent(suite.app, f);
    await fund(f, pi);
    expect(await txOf(f, pi.transactionId)).toMatchObject({ status: 'RESERVED' });
    const rule = await ok(putRule(pi.transactionId, { milestones: [{ amount: AMOUNT.toString() }] }, f.apiKeyHeaders), 200);
    expect(statuses(rule)).toEqual(['RELEASED']);
    await drainMoneyWork(suite.app);
    expect(await txOf(f, pi.transactionId)).toMatchObject({ status: 'SETTLED' });
  });
});

describe('approvals', () => {
  test('MEMBER: only the named member approves; the milestone releases and its settlement executes (transaction.settled)', async () => {
    const f = await fixture();
    const colleague = await memberOf(f);
    const pi = await createIntent(suite.app, f, {
      releaseRule: { milestones: [{ amount: AMOUNT.toString(), conditions: [{ kind: 'APPROVAL', party: 'MEMBER', memberId: colleague.memberId }] }] },
    });
    await fund(f, pi);
    expect((await txOf(f, pi.transactionId)).status).toBe('RESERVED');
    expect(statuses(await ok(getRule(pi.transactionId, f.apiKeyHeaders), 200))).toEqual(['PENDING']);
    // The owner, the API key: not named (409).
    for (const headers of [f.member.headers, f.apiKeyHeaders]) {
      const r = await approve(pi.transactionId, headers);
      expect([r.status, r.body.code], r.text).toEqual([409, 'INVALID_STATE']);
    }
    expect(await settlementsOf(f, pi.transactionId)).toEqual([]);
    const after = await ok(approve(pi.transactionId, colleague.headers), 200);
    expect(after.milestones[0]).toMatchObject({ status: 'RELEASED', settlementId: expect.any(String) });
    expect(after.milestones[0].conditions[0]).toMatchObject({
      met: true,
      approvedByType: 'MEMBER',
      approvedById: colleague.memberId,
      approvedAt: expect.any(String),
    });
    expect((await approve(pi.transactionId, colleague.headers)).status).toBe(409); // nothing left to approve
    const [s] = await settlementsOf(f, pi.transactionId);
    expect(s).toMatchObject({ id: after.milestones[0].settlementId, status: 'PENDING', milestoneId: after.milestones[0].id, requestedAmount: null });
    await drainMoneyWork(suite.app);
    expect(await settlementsOf(f, pi.transactionId)).toMatchObject([
      {
        status: 'EXECUTED',
        grossAmount: AMOUNT.toString(),
        allocations: [{ accountId: f.beneficiaryAccountId, amount: AMOUNT.toString(), status: 'RELEASED' }],
      },
    ]);
    expect(await money(f, pi.transactionId)).toEqual({ status: 'SETTLED', settledAmount: AMOUNT.toString(), escrowAmount: '0' });
    expect(await settledEvents(f, pi.transactionId)).toEqual([{ TransactionId: pi.transactionId, SettlementId: s!.id, IsTotal: true }]);
    const audit = await suite.app.deps.db.auditLogEntry.findFirst({ where: { entityId: pi.transactionId, action: 'transaction.release_approved' } });
    expect(audit).toMatchObject({ actorType: 'MEMBER', actorId: colleague.memberId });
  });

  test('ACCOUNT_HOLDER (the PAYER shorthand) approves over REST; other holders and principals cannot', async () => {
    const f = await fixture();
    const buyer = await holderWithAccount(f);
    const pi = await createIntent(suite.app, f, {
      payerAccountId: buyer.accountId,
      releaseRule: { milestones: [{ amount: AMOUNT.toString(), conditions: [{ kind: 'APPROVAL', party: 'PAYER' }] }] },
    });
    const rule = await ok(getRule(pi.transactionId, buyer.headers), 200); // the named holder sees the rule
    expect(rule.milestones[0].conditions[0]).toMatchObject({ party: 'ACCOUNT_HOLDER', accountHolderId: buyer.accountHolderId });
    // Approving before funding is recorded; the release waits for the funds.
    await ok(approve(pi.transactionId, buyer.headers), 200);
    expect(statuses(await ok(getRule(pi.transactionId, buyer.headers), 200))).toEqual(['PENDING']);
    const stranger = await holderWithAccount(f);
    expect((await approve(pi.transactionId, stranger.headers)).status).toBe(404);
    await fund(f, pi);
    expect(statuses(await ok(getRule(pi.transactionId, f.apiKeyHeaders), 200))).toEqual(['RELEASED']);
    expect(await txOf(f, pi.transactionId)).toMatchObject({ status: 'SETTLED' });
  });

  test('INTEGRATOR: an API key of the transaction’s environment approves one condition by id (GraphQL); a member cannot', async () => {
    const f = await fixture();
    const pi = await createIntent(suite.app, f, {
      releaseRule: {
        milestones: [
          { percentage: '30', conditions: [{ kind: 'APPROVAL', party: 'INTEGRATOR' }] },
          { percentage: '70', conditions: [{ kind: 'APPROVAL', party: 'INTEGRATOR' }] },
        ],
      },
    });
    await fund(f, pi);
    const rule = await ok(getRule(pi.transactionId, f.apiKeyHeaders), 200);
    expect((await approve(pi.transactionId, f.member.headers)).status).toBe(409);
    const unknown = await approve(pi.transactionId, f.apiKeyHeaders, { conditionId: crypto.randomUUID() });
    expect(unknown.status).toBe(404);
    const second = rule.milestones[1].conditions[0].id;
    const g = await suite.app.gql<any>(
      `mutation($id: ID!, $c: ID) { approveRelease(transactionId: $id, input: { conditionId: $c }) { milestones { status conditions { approvedByType met } } } }`,
      { id: pi.transactionId, c: second },
      f.apiKeyHeaders,
    );
    expect(g.errors).toBeUndefined();
    expect(g.data.approveRelease.milestones).toEqual([
      { status: 'PENDING', conditions: [{ approvedByType: null, met: false }] },
      { status: 'RELEASED', conditions: [{ approvedByType: 'API_KEY', met: true }] },
    ]);
    const again = await approve(pi.transactionId, f.apiKeyHeaders, { conditionId: second });
    expect([again.status, again.body.code]).toEqual([409, 'INVALID_STATE']);
    // Milestone 2 released first: not the last pending one, so it asks for its own amount.
    expect((await settlementsOf(f, pi.transactionId)).map((s) => s.requestedAmount)).toEqual(['700000']);
    // Milestone 1 is the last pending one, but the 700000 is still open: it asks for exactly what is left beside it.
    await ok(approve(pi.transactionId, f.apiKeyHeaders), 200);
    expect((await settlementsOf(f, pi.transactionId)).map((s) => s.requestedAmount)).toEqual(['700000', '300000']);
    await drainMoneyWork(suite.app);
    const settlements = await settlementsOf(f, pi.transactionId);
    expect(settlements.map((s) => [s.status, s.grossAmount])).toEqual([
      ['EXECUTED', '700000'],
      ['EXECUTED', '300000'],
    ]);
    const events = await settledEvents(f, pi.transactionId);
    expect(events.map((e) => e.SettlementId).sort()).toEqual(settlements.map((s) => s.id).sort());
    expect(events.map((e) => e.IsTotal)).toEqual([false, true]); // whichever executed second emptied the escrow
  });
});

describe('time conditions and combinations', () => {
  test('TIME_LOCK: never before releaseAfter (a job that runs early does nothing); released by the sweep a sandbox clock advance triggers', async () => {
    const f = await fixture();
    const pi = await createIntent(suite.app, f, {
      releaseRule: { milestones: [{ amount: AMOUNT.toString(), conditions: [{ kind: 'TIME_LOCK', releaseAfter: inHours(2) }] }] },
    });
    await fund(f, pi); // runs the scheduled evaluation early: nothing
    expect(statuses(await ok(getRule(pi.transactionId, f.apiKeyHeaders), 200))).toEqual(['PENDING']);
    await sandboxAdvanceClock(suite.app, f.apiKeyHeaders, 3600);
    await drainMoneyWork(suite.app);
    const mid = await ok(getRule(pi.transactionId, f.apiKeyHeaders), 200);
    expect(mid.milestones[0]).toMatchObject({ status: 'PENDING', conditions: [{ met: false }] });
    await sandboxAdvanceClock(suite.app, f.apiKeyHeaders, 3600);
    await drainMoneyWork(suite.app);
    const done = await ok(getRule(pi.transactionId, f.apiKeyHeaders), 200);
    expect(done.milestones[0]).toMatchObject({ status: 'RELEASED', conditions: [{ met: true }] });
    expect(await txOf(f, pi.transactionId)).toMatchObject({ status: 'SETTLED' });
  });

  test('INSPECTION_PERIOD counts from the reservation; ANY: the buyer approves OR the period ends (Escrow.com)', async () => {
    const f = await fixture();
    const buyer = await holderWithAccount(f);
    const rule = {
      milestones: [
        {
          amount: AMOUNT.toString(),
          mode: 'ANY',
          conditions: [
            { kind: 'APPROVAL', party: 'PAYER' },
            { kind: 'INSPECTION_PERIOD', durationSeconds: 86400 },
          ],
        },
      ],
    };
    // a) nobody approves: released when the period ends, not before.
    const a = await createIntent(suite.app, f, { payerAccountId: buyer.accountId, releaseRule: rule });
    await sandboxAdvanceClock(suite.app, f.apiKeyHeaders, 600); // the period counts from the reservation, not from the rule
    await fund(f, a);
    const t = await txOf(f, a.transactionId);
    const read = await ok(getRule(a.transactionId, f.apiKeyHeaders), 200);
    expect(read.milestones[0].conditions[1].dueAt).toBe(new Date(new Date(t.reservedAt).getTime() + 86400_000).toISOString());
    await sandboxAdvanceClock(suite.app, f.apiKeyHeaders, 86400 - 60);
    await drainMoneyWork(suite.app);
    expect(statuses(await ok(getRule(a.transactionId, f.apiKeyHeaders), 200))).toEqual(['PENDING']);
    await sandboxAdvanceClock(suite.app, f.apiKeyHeaders, 60);
    await drainMoneyWork(suite.app);
    expect(statuses(await ok(getRule(a.transactionId, f.apiKeyHeaders), 200))).toEqual(['RELEASED']);
    // b) the buyer approves during the period: released at once.
    const b = await createIntent(suite.app, f, { payerAccountId: buyer.accountId, releaseRule: rule });
    await fund(f, b);
    expect(statuses(await ok(getRule(b.transactionId, f.apiKeyHeaders), 200))).toEqual(['PENDING']);
    expect(statuses(await ok(approve(b.transactionId, buyer.headers), 200))).toEqual(['RELEASED']);
    await drainMoneyWork(suite.app);
    expect(await txOf(f, b.transactionId)).toMatchObject({ status: 'SETTLED' });
  });

  test('ALL: a time lock and two approvals, in any order; milestones release partial amounts, the last one what is left', async () => {
    const f = await fixture();
    const colleague = await memberOf(f);
    const pi = await createIntent(suite.app, f, {
      releaseRule: {
        milestones: [
          {
            name: 'Signed',
            amount: '250000',
            conditions: [
              { kind: 'APPROVAL', party: 'MEMBER', memberId: colleague.memberId },
              { kind: 'APPROVAL', party: 'INTEGRATOR' },
            ],
          },
          {
            name: 'Delivered',
            amount: '750000',
            conditions: [
              { kind: 'APPROVAL', party: 'INTEGRATOR' },
              { kind: 'TIME_LOCK', releaseAfter: inHours(1) },
            ],
          },
        ],
      },
    });
    await fund(f, pi, AMOUNT + 5n); // overpaid by 5: the last milestone settles it too
    expect(statuses(await ok(approve(pi.transactionId, colleague.headers), 200))).toEqual(['PENDING', 'PENDING']);
    // The API key approves both INTEGRATOR conditions: milestone 1 is complete, milestone 2 waits for its time lock.
    expect(statuses(await ok(approve(pi.transactionId, f.apiKeyHeaders), 200))).toEqual(['RELEASED', 'PENDING']);
    await drainMoneyWork(suite.app);
    expect(await money(f, pi.transactionId)).toEqual({ status: 'RESERVED', settledAmount: '250000', escrowAmount: '750005' });
    await sandboxAdvanceClock(suite.app, f.apiKeyHeaders, 3600);
    await drainMoneyWork(suite.app);
    expect(statuses(await ok(getRule(pi.transactionId, f.apiKeyHeaders), 200))).toEqual(['RELEASED', 'RELEASED']);
    expect((await settlementsOf(f, pi.transactionId)).map((s) => [s.requestedAmount, s.grossAmount])).toEqual([
      ['250000', '250000'],
      [null, '750005'],
    ]);
    expect(await money(f, pi.transactionId)).toEqual({ status: 'SETTLED', settledAmount: '1000005', escrowAmount: '0' });
  });
});

describe('blockers', () => {
  test('frozen: the approval is recorded, nothing releases until the member unfreezes', async () => {
    const f = await fixture();
    const pi = await createIntent(suite.app, f, {
      releaseRule: { milestones: [{ amount: AMOUNT.toString(), conditions: [{ kind: 'APPROVAL', party: 'INTEGRATOR' }] }] },
    });
    await fund(f, pi);
    await ok(suite.app.rest('POST', `/v1/transactions/${pi.transactionId}/freeze`, { headers: f.member.headers, body: { reason: 'dispute' } }), 204);
    const r = await ok(approve(pi.transactionId, f.apiKeyHeaders), 200);
    expect(r.milestones[0]).toMatchObject({ status: 'PENDING', conditions: [{ met: true }] });
    await drainMoneyWork(suite.app);
    expect(await runReleaseSweep(moneyDeps(suite.app), { organizationId: f.organizationId })).toBe(0);
    expect(await settlementsOf(f, pi.transactionId)).toEqual([]);
    await ok(suite.app.rest('POST', `/v1/transactions/${pi.transactionId}/unfreeze`, { headers: f.member.headers }), 204);
    await drainMoneyWork(suite.app);
    expect(statuses(await ok(getRule(pi.transactionId, f.apiKeyHeaders), 200))).toEqual(['RELEASED']);
    expect(await txOf(f, pi.transactionId)).toMatchObject({ status: 'SETTLED' });
  });

  test('a deposit under review blocks the release; the operator’s resolution releases it', async () => {
    const f = await fixture();
    const pi = await createIntent(suite.app, f, {
      releaseRule: { milestones: [{ amount: AMOUNT.toString(), conditions: [{ kind: 'APPROVAL', party: 'INTEGRATOR' }] }] },
    });
    await fund(f, pi);
    // A second payment to the address, flagged by sandbox screening (amount ending in 666).
    await sandboxSend(suite.app, f.apiKeyHeaders, { address: pi.address, amount: 1666n, assetNetworkId: f.catalog.assetNetworkId });
    await sandboxMine(suite.app, f.apiKeyHeaders, f.catalog.networkId, 1);
    await drainChainSync(suite.app);
    const review = await suite.app.deps.db.deposit.findFirstOrThrow({ where: { transactionId: pi.transactionId, status: 'UNDER_REVIEW' } });
    expect(statuses(await ok(approve(pi.transactionId, f.apiKeyHeaders), 200))).toEqual(['PENDING']);
    await drainMoneyWork(suite.app);
    expect(statuses(await ok(getRule(pi.transactionId, f.apiKeyHeaders), 200))).toEqual(['PENDING']);
    const operator = await createOperator(suite.app);
    await ok(
      suite.app.rest('POST', `/v1/admin/deposits/${review.id}/resolve-under-review`, {
        headers: operator.headers,
        body: { decision: 'REJECT', reason: 'not ours' },
      }),
      204,
    );
    await drainMoneyWork(suite.app);
    expect(statuses(await ok(getRule(pi.transactionId, f.apiKeyHeaders), 200))).toEqual(['RELEASED']);
    expect(await money(f, pi.transactionId)).toEqual({ status: 'SETTLED', settledAmount: AMOUNT.toString(), escrowAmount: '0' });
  });
});

describe('splits', () => {
  test('fixed amount first, percentages share the rest; a hold condition retains a portion until its approver approves', async () => {
    const f = await fixture();
    const partner = await account(f, 'Partner');
    const agent = await account(f, 'Agent');
    const colleague = await memberOf(f);
    const pi = await createIntent(suite.app, f, {
      releaseRule: {
        splits: [
          { accountId: partner, fixedAmount: '100000' },
          { accountId: f.beneficiaryAccountId, percentage: '90' },
          { accountId: agent, percentage: '10', holdConditions: [{ kind: 'APPROVAL', party: 'MEMBER', memberId: colleague.memberId }] },
        ],
        milestones: [{ amount: AMOUNT.toString() }],
      },
    });
    await fund(f, pi);
    const [s] = await settlementsOf(f, pi.transactionId);
    expect(s!.status).toBe('EXECUTED');
    const byAccount = Object.fromEntries(s!.allocations.map((a) => [a.accountId, [a.amount, a.status, a.retainReason]]));
    expect(byAccount).toEqual({
      [partner]: ['100000', 'RELEASED', null],
      [f.beneficiaryAccountId]: ['810000', 'RELEASED', null],
      [agent]: ['90000', 'RETAINED', 'HOLD_CONDITION_NOT_MET'],
    });
    const rule = await ok(getRule(pi.transactionId, f.apiKeyHeaders), 200);
    expect(rule.splits[0].allocatedAmount).toBe('100000');
    // The split hold is approved after the transaction settled: the retained portion is released.
    await ok(approve(pi.transactionId, colleague.headers), 200);
    await drainMoneyWork(suite.app);
    const [after] = await settlementsOf(f, pi.transactionId);
    expect(after!.allocations.find((a) => a.accountId === agent)).toMatchObject({ status: 'RELEASED' });
  });
});

describe('templates', () => {
  test('create (201, Location), read, list, 409 on a duplicate name, 400 on a bad definition, archive (204), tenancy', async () => {
    const f = await fixture();
    const base = `/v1/applications/${f.applicationId}/release-rule-templates`;
    const definition = {
      name: 'Marketplace',
      description: 'Buyer approves or 3 days pass; 10% to the platform account',
      milestones: [
        {
          name: 'All',
          percentage: '100',
          mode: 'ANY',
          conditions: [
            { kind: 'APPROVAL', party: 'PAYER' },
            { kind: 'INSPECTION_PERIOD', durationSeconds: 259200 },
          ],
        },
      ],
      splits: [
        { role: 'BENEFICIARY', percentage: '90' },
        { accountId: await account(f, 'Platform'), percentage: '10' },
      ],
    };
    const created = await suite.app.rest('POST', base, { headers: f.apiKeyHeaders, body: definition });
    expect(created.status, created.text).toBe(201);
    const location = created.headers.get('location')!;
    expect(created.body).toEqual({ id: location.split('/').pop() }); // { id } beside Location
    expect(location).toMatch(/^\/v1\/release-rule-templates\/[0-9a-f-]{36}$/);
    const got = await ok(suite.app.rest('GET', location, { headers: f.member.headers }), 200);
    expect(got).toMatchObject({
      name: 'Marketplace',
      applicationId: f.applicationId,
      archived: false,
      milestones: [{ percentage: '100', mode: 'ANY' }],
      splits: [{ role: 'BENEFICIARY', accountId: null }, { role: null }],
    });
    expect(got.milestones[0].conditions).toEqual([
      { kind: 'APPROVAL', party: 'PAYER', memberId: null, delaySeconds: null, durationSeconds: null },
      { kind: 'INSPECTION_PERIOD', party: null, memberId: null, delaySeconds: null, durationSeconds: 259200 },
    ]);
    const dup = await suite.app.rest('POST', base, { headers: f.member.headers, body: definition });
    expect([dup.status, dup.body.code]).toEqual([409, 'CONFLICT']);
    const bad = await suite.app.rest('POST', base, {
      headers: f.apiKeyHeaders,
      body: { name: 'Bad', milestones: [{ percentage: '60' }, { percentage: '30' }] },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toEqual([{ field: 'milestones', message: 'milestone percentages must add up to exactly 100', code: expect.any(String) }]);
    const badMember = await suite.app.rest('POST', base, {
      headers: f.apiKeyHeaders,
      body: { name: 'Bad', milestones: [{ percentage: '100', conditions: [{ kind: 'APPROVAL', party: 'MEMBER', memberId: crypto.randomUUID() }] }] },
    });
    expect(badMember.body.errors).toEqual([
      { field: 'milestones.0.conditions.0.memberId', message: 'must be a member of the organization', code: expect.any(String) },
    ]);
    expect((await ok(suite.app.rest('GET', base, { headers: f.apiKeyHeaders }), 200)).map((t: any) => t.name)).toEqual(['Marketplace']);
    // Another organization, or another application's API key: 404.
    const other = await signUpMember(suite.app);
    expect((await suite.app.rest('GET', location, { headers: other.headers })).status).toBe(404);
    expect((await suite.app.rest('GET', base, { headers: other.headers })).status).toBe(404);
    const otherApp = await createApiKey(suite.app, f.member);
    expect((await suite.app.rest('GET', location, { headers: otherApp.headers })).status).toBe(404);
    expect((await suite.app.rest('POST', `${location}/archive`, { headers: otherApp.headers })).status).toBe(404);
    // Archive: 204, twice; listed only with includeArchived.
    expect((await suite.app.rest('POST', `${location}/archive`, { headers: f.member.headers })).status).toBe(204);
    expect((await suite.app.rest('POST', `${location}/archive`, { headers: f.member.headers })).status).toBe(204);
    expect(await ok(suite.app.rest('GET', base, { headers: f.apiKeyHeaders }), 200)).toEqual([]);
    expect((await ok(suite.app.rest('GET', `${base}?includeArchived=true`, { headers: f.apiKeyHeaders }), 200))[0]).toMatchObject({
      archived: true,
      archivedAt: expect.any(String),
    });
  });

  test('applied by id at CreatePaymentIntent and by setTransactionReleaseRule; archived templates cannot be applied; the rule then runs', async () => {
    const f = await fixture();
    const buyer = await holderWithAccount(f);
    const platform = await account(f, 'Platform');
    const base = `/v1/applications/${f.applicationId}/release-rule-templates`;
    const created = await suite.app.rest('POST', base, {
      headers: f.apiKeyHeaders,
      body: {
        name: 'Two steps',
        milestones: [
          { percentage: '25', conditions: [{ kind: 'TIME_LOCK', delaySeconds: 3600 }] },
          {
            percentage: '75',
            mode: 'ANY',
            conditions: [
              { kind: 'APPROVAL', party: 'PAYER' },
              { kind: 'INSPECTION_PERIOD', durationSeconds: 86400 },
            ],
          },
        ],
        splits: [
          { role: 'BENEFICIARY', percentage: '100' },
          { accountId: platform, fixedAmount: '1000' },
        ],
      },
    });
    expect(created.status, created.text).toBe(201);
    const templateId = created.headers.get('location')!.split('/').pop()!;
    // Applying it needs a payer with an account holder (the PAYER party): 400 without one.
    const noPayer = await suite.app.rest('POST', `/v1/organizations/${f.organizationId}/payment-intents`, {
      headers: f.apiKeyHeaders,
      body: { assetNetworkId: f.catalog.assetNetworkId, amount: '1000000', beneficiaryAccountId: f.beneficiaryAccountId, releaseRuleTemplateId: templateId },
    });
    expect(noPayer.status).toBe(400);
    expect(noPayer.body.errors).toEqual([
      {
        field: 'releaseRuleTemplateId',
        message: "the template's milestones.1.conditions.0.party: the transaction has no payer account",
        code: expect.any(String),
      },
    ]);

    const pi = await createIntent(suite.app, f, { payerAccountId: buyer.accountId, releaseRuleTemplateId: templateId });
    const rule = await ok(getRule(pi.transactionId, buyer.headers), 200);
    expect(rule.templateId).toBe(templateId);
    expect(rule.milestones.map((m: any) => m.amount)).toEqual(['250000', '750000']);
    expect(new Date(rule.milestones[0].conditions[0].releaseAfter).getTime()).toBe(new Date(rule.setAt).getTime() + 3600_000);
    expect(rule.milestones[1].conditions[0]).toMatchObject({ party: 'ACCOUNT_HOLDER', accountHolderId: buyer.accountHolderId });
    expect(rule.splits.map((s: any) => s.accountId)).toEqual([f.beneficiaryAccountId, platform]);

    await fund(f, pi);
    await ok(approve(pi.transactionId, buyer.headers), 200); // milestone 2 released before milestone 1 (not the last pending: its own amount)
    await sandboxAdvanceClock(suite.app, f.apiKeyHeaders, 3600);
    await drainMoneyWork(suite.app);
    const settlements = await settlementsOf(f, pi.transactionId);
    expect(settlements.map((s) => [s.status, s.requestedAmount, s.grossAmount])).toEqual([
      ['EXECUTED', '750000', '750000'],
      ['EXECUTED', '250000', '250000'],
    ]);
    // The fixed amount is paid once over the transaction, by whichever settlement executed first.
    const toPlatform = settlements.flatMap((s) => s.allocations).filter((a) => a.accountId === platform);
    expect(toPlatform.map((a) => a.amount)).toEqual(['1000']);
    expect(await txOf(f, pi.transactionId)).toMatchObject({ status: 'SETTLED' });

    // By setTransactionReleaseRule (GraphQL), then archived: 409.
    const other = await createIntent(suite.app, f, { payerAccountId: buyer.accountId });
    const g = await suite.app.gql<any>(
      `mutation($id: ID!, $input: ReleaseRuleInput!) { setTransactionReleaseRule(transactionId: $id, input: $input) { templateId milestones { amount } } }`,
      { id: other.transactionId, input: { templateId } },
      f.member.headers,
    );
    expect(g.errors).toBeUndefined();
    expect(g.data.setTransactionReleaseRule).toEqual({ templateId, milestones: [{ amount: '250000' }, { amount: '750000' }] });
    await ok(suite.app.rest('POST', `/v1/release-rule-templates/${templateId}/archive`, { headers: f.apiKeyHeaders }), 204);
    const archived = await putRule(other.transactionId, { templateId }, f.apiKeyHeaders);
    expect([archived.status, archived.body.code]).toEqual([409, 'INVALID_STATE']);
    expect((await ok(getRule(other.transactionId, f.apiKeyHeaders), 200)).templateId).toBe(templateId); // unchanged
    // Another application's template: 400.
    const otherApp = await createApiKey(suite.app, f.member);
    const foreign = await suite.app.rest('POST', `/v1/applications/${otherApp.applicationId}/release-rule-templates`, {
      headers: f.member.headers,
      body: { name: 'Other', milestones: [{ percentage: '100' }] },
    });
    const foreignId = foreign.headers.get('location')!.split('/').pop()!;
    const wrong = await putRule(other.transactionId, { templateId: foreignId }, f.apiKeyHeaders);
    expect(wrong.status).toBe(400);
    expect(wrong.body.errors[0].field).toBe('templateId');
  });
});
