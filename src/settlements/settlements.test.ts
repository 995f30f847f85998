import { describe, expect, test } from 'vitest';
import { createApiKey, signUpMember } from '../../test/harness';
import { moneySuite } from '../../test/money-suite';
import { sandboxAdvanceClock, sandboxMine, sandboxSend, setupIntegrator, setupSandboxCatalog } from '../../test/money-helpers';
import { createIntent, drainChainSync, eventsOf, moneyDeps, moneyFixture, type MoneyFixture } from '../../test/fixtures/deposits/testing';
import { balanceOf, type LedgerAccountRef } from '../ledger/ledger';
import { parsePercentage } from '../money';
import { allocate, SplitRulesInvalid } from './allocation';
import { releaseRetained } from './retained';
import { executeSettlement } from './settlements';
import { drainMoneyWork } from '../../test/fixtures/settlements/testing';

/**
 * Settlements end to end, through REST and GraphQL against PostgreSQL, with the real job handlers
 * (drainMoneyWork): requests, execution with the platform fee and the split, the rounding rule,
 * retained portions and their release, failures and the operator's retry, the admin routes.
 * Balances are read from the ledger; events from the organization's outbox, in emission order.
 */

const suite = moneySuite();

// ---------------------------------------------------------------------------------------------
// Helpers (all through the public surface, but the ledger reads)

type Fixture = MoneyFixture;
const idOf = (r: { headers: Headers }) => r.headers.get('location')!.split('/').pop()!;

/** A sandbox catalog (1 confirmation), an integrator and a beneficiary account; `decimals` for another asset. */
async function fixture(opts: { decimals?: number } = {}): Promise<Fixture> {
  if (opts.decimals === undefined) return moneyFixture(suite.app, { requiredConfirmations: 1 });
  const catalog = await setupSandboxCatalog(suite.app, { requiredConfirmations: 1, decimals: opts.decimals });
  const integrator = await setupIntegrator(suite.app, catalog);
  const acc = await suite.app.rest('POST', `/v1/organizations/${integrator.organizationId}/accounts`, {
    body: { name: 'Seller' },
    headers: integrator.apiKeyHeaders,
  });
  return { catalog, ...integrator, beneficiaryAccountId: idOf(acc) };
}

/** An account of the fixture's organization: made by the API key (authorized for its application) or by the member (not authorized). */
async function account(f: Fixture, name: string, by: 'apiKey' | 'member' = 'apiKey'): Promise<string> {
  const r = await suite.app.rest('POST', `/v1/organizations/${f.organizationId}/accounts`, {
    body: by === 'member' ? { name, mode: 'SANDBOX' } : { name },
    headers: by === 'member' ? f.member.headers : f.apiKeyHeaders,
  });
  expect(r.status, r.text).toBe(201);
  return idOf(r);
}

async function gql<T = any>(query: string, variables: Record<string, unknown>, headers: Record<string, string>): Promise<T> {
  const r = await suite.app.gql<T>(query, variables, headers);
  if (r.errors?.length) throw new Error(`GraphQL: ${JSON.stringify(r.errors)}`);
  return r.data!;
}

const SET_RULE = `mutation($transactionId: ID!, $input: ReleaseRuleInput!) {
  setTransactionReleaseRule(transactionId: $transactionId, input: $input) { splits { id accountId participantId allocatedAmount holdConditions { id } } }
}`;
type Split = { accountId: string; percentage?: string; fixedAmount?: string; holdConditions?: Record<string, unknown>[] };

/** A transaction of `amount` paid on the sandbox chain and RESERVED, with the split rules set before funding. */
async function fundedTransaction(f: Fixture, amount: bigint, splits?: Split[]): Promise<string> {
  const pi = await createIntent(suite.app, f, { amount: amount.toString() });
  if (splits) await gql(SET_RULE, { transactionId: pi.transactionId, input: { splits } }, f.apiKeyHeaders);
  await sandboxSend(suite.app, f.apiKeyHeaders, { address: pi.address, amount, assetNetworkId: f.catalog.assetNetworkId });
  await sandboxMine(suite.app, f.apiKeyHeaders, f.catalog.networkId, 1);
  await drainChainSync(suite.app);
  await drainMoneyWork(suite.app);
  expect((await getTransaction(f, pi.transactionId)).status).toBe('RESERVED');
  return pi.transactionId;
}

/** The transaction as GraphQL shows it (its escrow totals and participant ids). */
const getTransaction = async (f: Fixture, id: string) =>
  (
    await gql(
      'query($id: ID!) { transaction(id: $id) { id status frozen settledAmount escrowAmount participants { id accountId role } } }',
      { id },
      f.apiKeyHeaders,
    )
  ).transaction;
const getSettlement = async (f: Fixture, id: string) => {
  const r = await suite.app.rest('GET', `/v1/settlements/${id}`, { headers: f.apiKeyHeaders });
  expect(r.status, r.text).toBe(200);
  return r.body;
};

/** POST /v1/transactions/{id}/settlements (201, Location); answers the settlement id. */
async function requestSettlement(f: Fixture, transactionId: string, amount?: bigint, headers: Record<string, string> = f.apiKeyHeaders): Promise<string> {
  const r = await suite.app.rest('POST', `/v1/transactions/${transactionId}/settlements`, {
    headers,
    ...(amount === undefined ? {} : { body: { amount: amount.toString() } }),
  });
  expect(r.status, r.text).toBe(201);
  expect(r.headers.get('location')).toMatch(/^\/v1\/settlements\/[0-9a-f-]{36}$/);
  expect(r.body).toEqual({ id: idOf(r) }); // { id } beside Location
  return idOf(r);
}

/** Requests and executes (the settlement job); answers the settlement as GET shows it. */
async function settle(f: Fixture, transactionId: string, amount?: bigint) {
  const id = await requestSettlement(f, transactionId, amount);
  await drainMoneyWork(suite.app);
  return getSettlement(f, id);
}

async function configurePricing(f: Fixture, body: Record<string, unknown>): Promise<string> {
  const r = await suite.app.rest('POST', '/v1/admin/pricing-policy', { headers: f.catalog.operator.headers, body });
  expect(r.status, r.text).toBe(204);
  const list = await gql<{ pricingPolicies: { id: string }[] }>(
    'query($an: ID) { pricingPolicies(assetNetworkId: $an) { id } }',
    { an: body.assetNetworkId ?? null },
    f.catalog.operator.headers,
  );
  return list.pricingPolicies.at(-1)!.id;
}

const ref = (f: Fixture, kind: LedgerAccountRef['kind'], ownerId: string | null): LedgerAccountRef => ({
  kind,
  ownerId,
  organizationId: ownerId === null ? null : f.organizationId,
  assetNetworkId: f.catalog.assetNetworkId,
});
const balance = async (f: Fixture, kind: LedgerAccountRef['kind'], ownerId: string | null) =>
  (await balanceOf(suite.app.deps.db, ref(f, kind, ownerId))).posted;
const escrow = (f: Fixture, transactionId: string) => balance(f, 'ESCROW', transactionId);
const customer = (f: Fixture, accountId: string) => balance(f, 'CUSTOMER', accountId);
const retained = (f: Fixture, allocationId: string) => balance(f, 'RETAINED', allocationId);
const revenue = (f: Fixture) => balance(f, 'PLATFORM_REVENUE', null);
/** An account's CUSTOMER balance through REST (members), "0" before its first posting. */
async function restBalance(f: Fixture, accountId: string): Promise<string> {
  const r = await suite.app.rest('GET', `/v1/accounts/${accountId}/balances`, { headers: f.member.headers });
  expect(r.status, r.text).toBe(200);
  return (r.body as { assetNetworkId: string; posted: string }[]).find((b) => b.assetNetworkId === f.catalog.assetNetworkId)?.posted ?? '0';
}

/** The settlement events of the organization (and transaction.settled), in emission order. */
async function settlementEvents(f: Fixture) {
  return (await eventsOf(suite.app, f.organizationId)).filter((e) => e.type.startsWith('settlement.') || e.type === 'transaction.settled');
}
const types = (events: { type: string }[]) => events.map((e) => e.type);

// ---------------------------------------------------------------------------------------------

describe('the split arithmetic (pure)', () => {
  const rules = (...xs: [string | null, string | null][]) =>
    xs.map(([p, fixed], i) => ({
      id: `r${i}`,
      position: i,
      participantId: `p${i}`,
      accountId: `a${i}`,
      percentage: p === null ? null : parsePercentage(p),
      fixedAmount: fixed === null ? null : BigInt(fixed),
      allocatedAmount: 0n,
    }));
  const amounts = (d: bigint, r: ReturnType<typeof rules>) => allocate(d, r, null).portions.map((p) => [p.accountId, p.amount]);

  test('largest remainder, ties to the earlier position, zero portions dropped', () => {
    expect(amounts(100n, rules(['33.333333', null], ['33.333333', null], ['33.333334', null]))).toEqual([
      ['a0', 33n],
      ['a1', 33n],
      ['a2', 34n],
    ]);
    expect(amounts(7n, rules(['10', null], ['20', null], ['70', null]))).toEqual([
      ['a0', 1n],
      ['a1', 1n],
      ['a2', 5n],
    ]);
    expect(amounts(1n, rules(['50', null], ['50', null]))).toEqual([['a0', 1n]]);
    expect(amounts(1000000000000000001n, rules(['33.333333', null], ['33.333333', null], ['33.333334', null]))).toEqual([
      ['a0', 333333330000000000n],
      ['a1', 333333330000000000n],
      ['a2', 333333340000000001n],
    ]);
  });

  test('fixed amounts first (what is left of them), percentages share the rest; no rule: all to the beneficiary', () => {
    const r = rules([null, '300'], ['60', null], ['40', null]);
    expect(amounts(200n, r)).toEqual([['a0', 200n]]);
    r[0]!.allocatedAmount = 200n;
    const second = allocate(500n, r, null);
    expect(second.portions.map((p) => p.amount)).toEqual([100n, 240n, 160n]);
    expect([...second.fixedAllocated]).toEqual([['r0', 300n]]);
    expect(allocate(5n, [], { participantId: 'p', accountId: 'b' }).portions).toEqual([{ splitRuleId: null, participantId: 'p', accountId: 'b', amount: 5n }]);
    expect(allocate(0n, [], { participantId: 'p', accountId: 'b' }).portions).toEqual([]);
    expect(() => allocate(500n, rules([null, '300']), null)).toThrow(SplitRulesInvalid);
  });
});

describe('settlements', () => {
  test('a total settlement without split rules pays the beneficiary everything, in one ledger transaction', async () => {
    const f = await fixture();
    const transactionId = await fundedTransaction(f, 1_000_000n);
    const id = await requestSettlement(f, transactionId);
    const pending = await getSettlement(f, id);
    expect(pending).toMatchObject({ id, status: 'PENDING', transactionId, requestedAmount: null, grossAmount: null, attempts: 0, allocations: [] });

    await drainMoneyWork(suite.app);
    const s = await getSettlement(f, id);
    const beneficiary = (await getTransaction(f, transactionId)).participants.find((p: { role: string }) => p.role === 'BENEFICIARY');
    expect(s).toMatchObject({
      status: 'EXECUTED',
      grossAmount: '1000000',
      feeAmount: '0',
      distributableAmount: '1000000',
      pricingPolicyId: null,
      feePercentage: null,
      isTotal: true,
      attempts: 1,
      failureReason: null,
    });
    expect(s.allocations).toEqual([
      expect.objectContaining({
        accountId: f.beneficiaryAccountId,
        participantId: beneficiary.id,
        splitRuleId: null,
        amount: '1000000',
        status: 'RELEASED',
        retainReason: null,
        reversedAmount: '0',
      }),
    ]);
    expect(await getTransaction(f, transactionId)).toMatchObject({ status: 'SETTLED', settledAmount: '1000000', escrowAmount: '0' });
    expect(await escrow(f, transactionId)).toBe(0n);
    expect(await restBalance(f, f.beneficiaryAccountId)).toBe('1000000');
    const ledger = await suite.app.deps.db.ledgerTransaction.findMany({ where: { idempotencyKey: `settlement:${id}` } });
    expect(ledger.map((l) => l.id)).toEqual([s.ledgerTransactionId]);

    const events = await settlementEvents(f);
    expect(events).toEqual([
      {
        type: 'settlement.split_portion_released',
        body: { SettlementId: id, AllocationId: s.allocations[0].id, AccountId: f.beneficiaryAccountId, Amount: '1000000' },
      },
      {
        type: 'settlement.executed',
        body: {
          SettlementId: id,
          TransactionId: transactionId,
          AssetNetworkId: f.catalog.assetNetworkId,
          GrossAmount: '1000000',
          DistributableAmount: '1000000',
          PlatformFeeAmount: '0',
          ExecutedAt: s.executedAt,
        },
      },
      { type: 'transaction.settled', body: { TransactionId: transactionId, SettlementId: id, IsTotal: true } },
    ]);
    const audit = await suite.app.deps.db.auditLogEntry.findMany({
      where: { entityType: 'Settlement', entityId: id },
      orderBy: [{ occurredAt: 'asc' }, { id: 'asc' }],
    });
    expect(audit.map((a) => [a.action, a.actorType])).toEqual([
      ['settlement.requested', 'API_KEY'],
      ['settlement.executed', 'SYSTEM'],
    ]);

    // GraphQL: the transaction's settlements, and nothing more to settle.
    const data = await gql(
      'query($id: ID!) { transaction(id: $id) { status settlements { id status grossAmount allocations { accountId amount status } } } }',
      { id: transactionId },
      f.member.headers,
    );
    expect(data.transaction).toEqual({
      status: 'SETTLED',
      settlements: [
        { id, status: 'EXECUTED', grossAmount: '1000000', allocations: [{ accountId: f.beneficiaryAccountId, amount: '1000000', status: 'RELEASED' }] },
      ],
    });
    const again = await suite.app.rest('POST', `/v1/transactions/${transactionId}/settlements`, { headers: f.apiKeyHeaders });
    expect(again.status).toBe(409);
  });

  test('partial settlements with a platform fee; pending requests count against the escrow; Idempotency-Key', async () => {
    const f = await fixture();
    const policyId = await configurePricing(f, { scope: 'PLATFORM', assetNetworkId: f.catalog.assetNetworkId, percentage: '1.5' });
    const transactionId = await fundedTransaction(f, 1_000_000n);
    const post = (body: unknown, key?: string) =>
      suite.app.rest('POST', `/v1/transactions/${transactionId}/settlements`, {
        headers: { ...f.apiKeyHeaders, ...(key ? { 'idempotency-key': key } : {}) },
        body,
      });

    const first = await post({ amount: '400000' }, 'settle-1');
    expect(first.status, first.text).toBe(201);
    const replay = await post({ amount: '400000' }, 'settle-1');
    expect(replay.status).toBe(201);
    expect(replay.headers.get('location')).toBe(first.headers.get('location'));
    expect((await post({ amount: '400001' }, 'settle-1')).body.code).toBe('IDEMPOTENCY_KEY_REUSED');
    // 1,000,000 in escrow, 400,000 asked by the pending settlement: 600,001 is too much.
    const tooMuch = await post({ amount: '600001' });
    expect(tooMuch.status).toBe(409);
    expect(tooMuch.body.code).toBe('INVALID_STATE');

    await drainMoneyWork(suite.app);
    const s1 = await getSettlement(f, idOf(first));
    expect(s1).toMatchObject({
      status: 'EXECUTED',
      requestedAmount: '400000',
      grossAmount: '400000',
      feeAmount: '6000',
      distributableAmount: '394000',
      pricingPolicyId: policyId,
      feePercentage: '1.5',
      isTotal: false,
    });
    expect(await getTransaction(f, transactionId)).toMatchObject({ status: 'RESERVED', settledAmount: '400000', escrowAmount: '600000' });
    expect(await escrow(f, transactionId)).toBe(600_000n);
    expect(await customer(f, f.beneficiaryAccountId)).toBe(394_000n);
    expect(await revenue(f)).toBe(6_000n);

    const s2 = await settle(f, transactionId);
    expect(s2).toMatchObject({ requestedAmount: null, grossAmount: '600000', feeAmount: '9000', distributableAmount: '591000', isTotal: true });
    expect(await getTransaction(f, transactionId)).toMatchObject({ status: 'SETTLED', settledAmount: '1000000', escrowAmount: '0' });
    expect(await escrow(f, transactionId)).toBe(0n);
    expect(await customer(f, f.beneficiaryAccountId)).toBe(985_000n);
    expect(await revenue(f)).toBe(15_000n);

    const events = await settlementEvents(f);
    expect(types(events)).toEqual([
      'settlement.fee_applied',
      'settlement.split_portion_released',
      'settlement.executed',
      'transaction.settled',
      'settlement.fee_applied',
      'settlement.split_portion_released',
      'settlement.executed',
      'transaction.settled',
    ]);
    expect(events[0]!.body).toEqual({ SettlementId: s1.id, PricingPolicyId: policyId, FeeAmount: '6000', FeePercentageApplied: '1.5' });
    expect(events[1]!.body).toEqual({ SettlementId: s1.id, AllocationId: s1.allocations[0].id, AccountId: f.beneficiaryAccountId, Amount: '394000' });
    expect(events[2]!.body).toMatchObject({ GrossAmount: '400000', DistributableAmount: '394000', PlatformFeeAmount: '6000' });
    expect(events[3]!.body).toEqual({ TransactionId: transactionId, SettlementId: s1.id, IsTotal: false });
    expect(events[4]!.body).toMatchObject({ SettlementId: s2.id, FeeAmount: '9000' });
    expect(events[7]!.body).toEqual({ TransactionId: transactionId, SettlementId: s2.id, IsTotal: true });
  });

  test('three-way splits with awkward amounts: the largest-remainder rule, exactly, down to 18-decimal amounts', async () => {
    const f = await fixture();
    const [a, b, c] = [await account(f, 'A'), await account(f, 'B'), await account(f, 'C')];
    const thirds = [
      { accountId: a, percentage: '33.333333' },
      { accountId: b, percentage: '33.333333' },
      { accountId: c, percentage: '33.333334' },
    ];
    const portions = async (s: { allocations: { accountId: string; amount: string }[] }) => s.allocations.map((x) => [x.accountId, x.amount]);

    const t100 = await fundedTransaction(f, 100n, thirds);
    expect(await portions(await settle(f, t100))).toEqual([
      [a, '33'],
      [b, '33'],
      [c, '34'],
    ]);
    const t7 = await fundedTransaction(f, 7n, [
      { accountId: a, percentage: '10' },
      { accountId: b, percentage: '20' },
      { accountId: c, percentage: '70' },
    ]);
    expect(await portions(await settle(f, t7))).toEqual([
      [a, '1'],
      [b, '1'],
      [c, '5'],
    ]);
    // 1 base unit between two equal shares: the earlier position takes it; the other gets no allocation at all.
    const t1 = await fundedTransaction(f, 1n, [
      { accountId: a, percentage: '50' },
      { accountId: b, percentage: '50' },
    ]);
    const s1 = await settle(f, t1);
    expect(await portions(s1)).toEqual([[a, '1']]);
    expect(types(await settlementEvents(f)).filter((t) => t === 'settlement.split_portion_released')).toHaveLength(7);
    expect(await customer(f, a)).toBe(35n);
    expect(await customer(f, b)).toBe(34n);
    expect(await customer(f, c)).toBe(39n);

    // An 18-decimal asset, with a fee of 0.3% (half up): 1,000,000,000,000,000,001 base units.
    const g = await fixture({ decimals: 18 });
    const [x, y, z] = [await account(g, 'X'), await account(g, 'Y'), await account(g, 'Z')];
    await configurePricing(g, { scope: 'PLATFORM', assetNetworkId: g.catalog.assetNetworkId, percentage: '0.3' });
    const big = await fundedTransaction(g, 1_000_000_000_000_000_001n, [
      { accountId: x, percentage: '33.333333' },
      { accountId: y, percentage: '33.333333' },
      { accountId: z, percentage: '33.333334' },
    ]);
    const s = await settle(g, big);
    expect(s).toMatchObject({ grossAmount: '1000000000000000001', feeAmount: '3000000000000000', distributableAmount: '997000000000000001' });
    expect(await portions(s)).toEqual([
      [x, '332333330010000000'],
      [y, '332333330010000000'],
      [z, '332333339980000001'],
    ]);
    expect(await customer(g, z)).toBe(332_333_339_980_000_001n);
    expect(await revenue(g)).toBe(3_000_000_000_000_000n);
  });

  test('fixed amounts and percentages across partial settlements: the fixed amount is paid once, first', async () => {
    const f = await fixture();
    const [a, b, c] = [await account(f, 'Fixed'), await account(f, 'Sixty'), await account(f, 'Forty')];
    const transactionId = await fundedTransaction(f, 1_000_000n, [
      { accountId: a, fixedAmount: '300000' },
      { accountId: b, percentage: '60' },
      { accountId: c, percentage: '40' },
    ]);
    const amounts = (s: { allocations: { accountId: string; amount: string }[] }) => s.allocations.map((x) => [x.accountId, x.amount]);
    const allocated = async () =>
      (await gql('query($id: ID!) { transaction(id: $id) { releaseRule { splits { accountId allocatedAmount } } } }', { id: transactionId }, f.apiKeyHeaders))
        .transaction.releaseRule.splits;

    expect(amounts(await settle(f, transactionId, 200_000n))).toEqual([[a, '200000']]);
    expect((await allocated())[0]).toEqual({ accountId: a, allocatedAmount: '200000' });
    expect(amounts(await settle(f, transactionId, 500_000n))).toEqual([
      [a, '100000'],
      [b, '240000'],
      [c, '160000'],
    ]);
    expect((await allocated())[0]).toEqual({ accountId: a, allocatedAmount: '300000' });
    const last = await settle(f, transactionId);
    expect(amounts(last)).toEqual([
      [b, '180000'],
      [c, '120000'],
    ]);
    expect(last.isTotal).toBe(true);
    expect([await customer(f, a), await customer(f, b), await customer(f, c)]).toEqual([300_000n, 420_000n, 280_000n]);
    expect(await customer(f, f.beneficiaryAccountId)).toBe(0n);
  });

  test('the fee: the most specific policy in force, its minimum and maximum, and a future version only once it is due', async () => {
    const f = await fixture();
    const an = f.catalog.assetNetworkId;
    const transactionId = await fundedTransaction(f, 1_300_000n);
    const fee = async (amount: bigint) => {
      const s = await settle(f, transactionId, amount);
      expect(s.status).toBe('EXECUTED');
      return [s.pricingPolicyId, s.feePercentage, s.feeAmount];
    };
    const platform = await configurePricing(f, { scope: 'PLATFORM', assetNetworkId: an, percentage: '10' });
    expect(await fee(100_000n)).toEqual([platform, '10', '10000']);
    // The organization's policy (every asset-network) beats the platform's for this asset-network.
    const organization = await configurePricing(f, { scope: 'ORGANIZATION', organizationId: f.organizationId, percentage: '5' });
    expect(await fee(100_000n)).toEqual([organization, '5', '5000']);
    // The application's beats both: 2%, at least 3,000, at most 8,000.
    const application = await configurePricing(f, {
      scope: 'APPLICATION',
      applicationId: f.applicationId,
      assetNetworkId: an,
      percentage: '2',
      minimumAmount: '3000',
      maximumAmount: '8000',
    });
    // Its next version is due tomorrow: not in force yet.
    const tomorrow = new Date(suite.app.clock.now().getTime() + 24 * 3600_000).toISOString();
    const next = await configurePricing(f, {
      scope: 'APPLICATION',
      applicationId: f.applicationId,
      assetNetworkId: an,
      percentage: '50',
      effectiveFrom: tomorrow,
    });
    expect(await fee(100_000n)).toEqual([application, '2', '3000']); // 2,000 raised to the minimum
    expect(await fee(900_000n)).toEqual([application, '2', '8000']); // 18,000 capped at the maximum
    // Two days later on the organization's sandbox clock, the new version applies.
    await sandboxAdvanceClock(suite.app, f.apiKeyHeaders, 2 * 24 * 3600);
    expect(await fee(100_000n)).toEqual([next, '50', '50000']);
    expect(await revenue(f)).toBe(10_000n + 5_000n + 3_000n + 8_000n + 50_000n);
    expect(await customer(f, f.beneficiaryAccountId)).toBe(1_300_000n - 76_000n);
    const versions = await gql(
      'query($an: ID) { pricingPolicies(assetNetworkId: $an, scope: APPLICATION) { id version percentage minimumAmount maximumAmount } }',
      { an },
      f.catalog.operator.headers,
    );
    expect(versions.pricingPolicies).toEqual([
      { id: application, version: 1, percentage: '2', minimumAmount: '3000', maximumAmount: '8000' },
      { id: next, version: 2, percentage: '50', minimumAmount: '0', maximumAmount: null },
    ]);
  });

  test('a fee above the gross fails the settlement and moves nothing; a fee equal to it leaves nothing to split', async () => {
    const f = await fixture();
    const policyId = await configurePricing(f, { scope: 'PLATFORM', assetNetworkId: f.catalog.assetNetworkId, fixedAmount: '2000' });
    const transactionId = await fundedTransaction(f, 100_000n);
    const failed = await settle(f, transactionId, 1_000n);
    expect(failed).toMatchObject({ status: 'FAILED', attempts: 1, grossAmount: null, allocations: [] });
    expect(failed.failureReason).toMatch(/^FEE_EXCEEDS_GROSS: /);
    expect(await escrow(f, transactionId)).toBe(100_000n);
    expect(await revenue(f)).toBe(0n);
    expect(await getTransaction(f, transactionId)).toMatchObject({ status: 'RESERVED', settledAmount: '0' });
    expect(await settlementEvents(f)).toEqual([
      { type: 'settlement.failed', body: { SettlementId: failed.id, TransactionId: transactionId, Reason: failed.failureReason, FailedAt: failed.failedAt } },
    ]);
    expect(await suite.app.deps.db.ledgerTransaction.count({ where: { idempotencyKey: `settlement:${failed.id}` } })).toBe(0);

    const exact = await settle(f, transactionId, 2_000n);
    expect(exact).toMatchObject({
      status: 'EXECUTED',
      grossAmount: '2000',
      feeAmount: '2000',
      distributableAmount: '0',
      pricingPolicyId: policyId,
      allocations: [],
    });
    expect(await revenue(f)).toBe(2_000n);
    expect(types(await settlementEvents(f))).toEqual(['settlement.failed', 'settlement.fee_applied', 'settlement.executed', 'transaction.settled']);
  });

  test('portions retained for each reason, each released when its cause clears (never while the transaction is frozen)', async () => {
    const f = await fixture();
    const frozen = await account(f, 'Frozen');
    const unauthorized = await account(f, 'Not authorized', 'member');
    const closed = await account(f, 'Closed');
    const timed = await account(f, 'Time hold');
    const approval = await account(f, 'Approval hold');
    // A new organization's sandbox clock is the service's clock.
    const inAnHour = new Date(suite.app.clock.now().getTime() + 3600_000);
    const pi = await createIntent(suite.app, f, { amount: '1000000' });
    const rule = await gql(
      SET_RULE,
      {
        transactionId: pi.transactionId,
        input: {
          splits: [
            { accountId: frozen, percentage: '20' },
            { accountId: unauthorized, percentage: '20' },
            { accountId: closed, percentage: '20' },
            { accountId: timed, percentage: '20', holdConditions: [{ kind: 'TIME_LOCK', releaseAfter: inAnHour.toISOString() }] },
            { accountId: approval, percentage: '20', holdConditions: [{ kind: 'APPROVAL', party: 'INTEGRATOR' }] },
          ],
        },
      },
      f.apiKeyHeaders,
    );
    const participantOf = new Map<string, string>(
      rule.setTransactionReleaseRule.splits.map((s: { accountId: string; participantId: string }) => [s.accountId, s.participantId]),
    );
    expect((await suite.app.rest('POST', `/v1/accounts/${frozen}/freeze`, { headers: f.member.headers, body: { reason: 'KYC review' } })).status).toBe(204);
    expect((await suite.app.rest('DELETE', `/v1/accounts/${closed}`, { headers: f.member.headers })).status).toBe(204);
    await sandboxSend(suite.app, f.apiKeyHeaders, { address: pi.address, amount: 1_000_000n, assetNetworkId: f.catalog.assetNetworkId });
    await sandboxMine(suite.app, f.apiKeyHeaders, f.catalog.networkId, 1);
    await drainChainSync(suite.app);
    const transactionId = pi.transactionId;

    // Half now: every portion is retained, each for its reason.
    const s = await settle(f, transactionId, 500_000n);
    expect(s.status).toBe('EXECUTED');
    const byAccount = new Map<string, { id: string; status: string; retainReason: string; amount: string; participantId: string }>(
      s.allocations.map((a: { accountId: string }) => [a.accountId, a]),
    );
    expect(
      [frozen, unauthorized, closed, timed, approval].map((acc) => [byAccount.get(acc)!.status, byAccount.get(acc)!.retainReason, byAccount.get(acc)!.amount]),
    ).toEqual([
      ['RETAINED', 'ACCOUNT_FROZEN', '100000'],
      ['RETAINED', 'ACCOUNT_NOT_AUTHORIZED', '100000'],
      ['RETAINED', 'ACCOUNT_CLOSED', '100000'],
      ['RETAINED', 'HOLD_CONDITION_NOT_MET', '100000'],
      ['RETAINED', 'HOLD_CONDITION_NOT_MET', '100000'],
    ]);
    for (const a of s.allocations) {
      expect(a.participantId).toBe(participantOf.get(a.accountId));
      expect(await retained(f, a.id)).toBe(100_000n);
      expect(await customer(f, a.accountId)).toBe(0n);
    }
    const events = await settlementEvents(f);
    expect(types(events)).toEqual([...Array(5).fill('settlement.split_portion_retained'), 'settlement.executed', 'transaction.settled']);
    expect(events[0]!.body).toEqual({
      SettlementId: s.id,
      AllocationId: byAccount.get(frozen)!.id,
      ParticipantId: participantOf.get(frozen),
      AccountId: frozen,
      Amount: '100000',
      Reason: 'ACCOUNT_FROZEN',
    });
    const releasedEvents = async () => (await settlementEvents(f)).filter((e) => e.type === 'settlement.split_portion_released').map((e) => e.body);

    // A frozen transaction releases nothing, even when the account's cause clears.
    expect((await suite.app.rest('POST', `/v1/transactions/${transactionId}/freeze`, { headers: f.member.headers, body: { reason: 'dispute' } })).status).toBe(
      204,
    );
    expect((await suite.app.rest('POST', `/v1/accounts/${frozen}/unfreeze`, { headers: f.member.headers })).status).toBe(204);
    await drainMoneyWork(suite.app);
    expect((await getSettlement(f, s.id)).allocations.find((a: { accountId: string }) => a.accountId === frozen).status).toBe('RETAINED');
    expect(await releasedEvents()).toEqual([]);
    // Unfrozen: the job the unfreeze queues releases it (and a sweep after finds nothing left to do).
    expect((await suite.app.rest('POST', `/v1/transactions/${transactionId}/unfreeze`, { headers: f.member.headers })).status).toBe(204);
    await drainMoneyWork(suite.app);
    expect(await releaseRetained(moneyDeps(suite.app))).toMatchObject({ released: 0 });
    expect(await customer(f, frozen)).toBe(100_000n);
    expect(await retained(f, byAccount.get(frozen)!.id)).toBe(0n);
    expect(await releasedEvents()).toEqual([{ SettlementId: s.id, AllocationId: byAccount.get(frozen)!.id, AccountId: frozen, Amount: '100000' }]);

    // Authorizing the account for the application releases its portion (the job the authorization queues).
    const auth = await suite.app.rest('POST', `/v1/organizations/${f.organizationId}/accounts/${unauthorized}/authorize-application`, {
      headers: f.member.headers,
      body: { applicationId: f.applicationId },
    });
    expect(auth.status, auth.text).toBe(204);
    await drainMoneyWork(suite.app);
    expect(await customer(f, unauthorized)).toBe(100_000n);

    // The integrator's approval of the hold condition.
    const approve = await suite.app.rest('POST', `/v1/transactions/${transactionId}/release-approvals`, { headers: f.apiKeyHeaders, body: {} });
    expect(approve.status, approve.text).toBe(200);
    await drainMoneyWork(suite.app);
    expect(await customer(f, approval)).toBe(100_000n);

    // The time hold: not before its time, released once the sandbox clock passes it.
    expect(await customer(f, timed)).toBe(0n);
    await releaseRetained(moneyDeps(suite.app), { organizationId: f.organizationId });
    expect(await customer(f, timed)).toBe(0n);
    // The advance queues a re-check of the organization's retained portions in its transaction.
    await sandboxAdvanceClock(suite.app, f.apiKeyHeaders, 2 * 3600);
    await drainMoneyWork(suite.app);
    expect(await customer(f, timed)).toBe(100_000n);

    // The rest of the escrow: released at once to the accounts whose causes cleared; the closed account's portion stays retained.
    const rest = await settle(f, transactionId);
    expect(rest.allocations.map((a: { accountId: string; status: string; retainReason: string | null }) => [a.accountId, a.status, a.retainReason])).toEqual([
      [frozen, 'RELEASED', null],
      [unauthorized, 'RELEASED', null],
      [closed, 'RETAINED', 'ACCOUNT_CLOSED'],
      [timed, 'RELEASED', null],
      [approval, 'RELEASED', null],
    ]);
    await releaseRetained(moneyDeps(suite.app));
    const after = await getSettlement(f, s.id);
    expect(after.allocations.map((a: { accountId: string; status: string; retainReason: string | null }) => [a.accountId, a.status, a.retainReason])).toEqual([
      [frozen, 'RELEASED', null],
      [unauthorized, 'RELEASED', null],
      [closed, 'RETAINED', 'ACCOUNT_CLOSED'],
      [timed, 'RELEASED', null],
      [approval, 'RELEASED', null],
    ]);
    for (const acc of [frozen, unauthorized, timed, approval]) expect(await customer(f, acc)).toBe(200_000n);
    expect(await retained(f, byAccount.get(closed)!.id)).toBe(100_000n);
    expect(await escrow(f, transactionId)).toBe(0n);
    const ledger = await suite.app.deps.db.ledgerTransaction.count({
      where: { idempotencyKey: { startsWith: 'settlement-allocation:' }, organizationId: f.organizationId },
    });
    expect(ledger).toBe(4);
  });

  test('a failed settlement (frozen between request and execution) is retried by an operator and pays exactly once', async () => {
    const f = await fixture();
    const op = f.catalog.operator.headers;
    const transactionId = await fundedTransaction(f, 1_000_000n);
    const id = await requestSettlement(f, transactionId, undefined, f.member.headers);
    expect(
      (await suite.app.rest('POST', `/v1/transactions/${transactionId}/freeze`, { headers: f.member.headers, body: { reason: 'chargeback' } })).status,
    ).toBe(204);
    await drainMoneyWork(suite.app);
    const failed = await getSettlement(f, id);
    expect(failed).toMatchObject({ status: 'FAILED', attempts: 1 });
    expect(failed.failureReason).toMatch(/^TRANSACTION_FROZEN: /);
    expect(await escrow(f, transactionId)).toBe(1_000_000n);
    expect(await customer(f, f.beneficiaryAccountId)).toBe(0n);

    // Still frozen: the retry fails again.
    expect((await suite.app.rest('POST', `/v1/admin/settlements/${id}/retry`, { headers: op })).status).toBe(204);
    expect((await getSettlement(f, id)).status).toBe('PENDING');
    await drainMoneyWork(suite.app);
    expect(await getSettlement(f, id)).toMatchObject({ status: 'FAILED', attempts: 2 });

    expect((await suite.app.rest('POST', `/v1/transactions/${transactionId}/unfreeze`, { headers: f.member.headers })).status).toBe(204);
    const retry = await suite.app.rest('POST', `/v1/admin/settlements/${id}/retry`, { headers: op });
    expect(retry.status, retry.text).toBe(204);
    expect(retry.text).toBe('');
    await drainMoneyWork(suite.app);
    const done = await getSettlement(f, id);
    expect(done).toMatchObject({ status: 'EXECUTED', attempts: 3, grossAmount: '1000000', isTotal: true, failureReason: null, failedAt: null });
    // The same job again, a retry of an executed settlement: nothing more moves.
    expect(await executeSettlement(moneyDeps(suite.app), id)).toEqual({ status: 'SKIPPED' });
    const again = await suite.app.rest('POST', `/v1/admin/settlements/${id}/retry`, { headers: op });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('INVALID_STATE');
    const viaGql = await suite.app.gql('mutation($id: ID!) { adminRetrySettlement(id: $id) { id } }', { id }, op);
    expect(viaGql.errors?.[0]?.extensions?.code).toBe('INVALID_STATE');
    expect(await customer(f, f.beneficiaryAccountId)).toBe(1_000_000n);
    expect(await escrow(f, transactionId)).toBe(0n);
    expect(await suite.app.deps.db.ledgerTransaction.count({ where: { idempotencyKey: `settlement:${id}` } })).toBe(1);
    expect(types(await settlementEvents(f))).toEqual([
      'settlement.failed',
      'settlement.failed',
      'settlement.split_portion_released',
      'settlement.executed',
      'transaction.settled',
    ]);
    const audit = await suite.app.deps.db.auditLogEntry.findMany({
      where: { entityType: 'Settlement', entityId: id },
      orderBy: [{ occurredAt: 'asc' }, { id: 'asc' }],
    });
    expect(audit.map((a) => a.action)).toEqual([
      'settlement.requested',
      'settlement.failed',
      'settlement.retry_requested',
      'settlement.failed',
      'settlement.retry_requested',
      'settlement.executed',
    ]);
    expect((await suite.app.rest('POST', `/v1/admin/settlements/${crypto.randomUUID()}/retry`, { headers: op })).status).toBe(404);
  });

  test('requests are refused: not reserved, frozen, governed by milestones, bad amounts; other tenants get 404', async () => {
    const f = await fixture();
    const post = (transactionId: string, body?: unknown, headers = f.apiKeyHeaders) =>
      suite.app.rest('POST', `/v1/transactions/${transactionId}/settlements`, { headers, ...(body === undefined ? {} : { body }) });
    const unpaid = await createIntent(suite.app, f, { amount: '5000' });
    expect((await post(unpaid.transactionId)).status).toBe(409);

    const transactionId = await fundedTransaction(f, 100_000n);
    for (const amount of ['0', '-1', '1.5', 'abc', '']) {
      const r = await post(transactionId, { amount });
      expect(r.status, amount).toBe(400);
      expect(r.body.errors).toEqual([expect.objectContaining({ field: 'amount' })]);
    }
    expect((await post(transactionId, { amount: '100001' })).status).toBe(409);
    expect((await post(transactionId, { other: 1 })).status).toBe(400);
    await suite.app.rest('POST', `/v1/transactions/${transactionId}/freeze`, { headers: f.member.headers, body: { reason: 'hold' } });
    const frozen = await post(transactionId);
    expect(frozen.status).toBe(409);
    expect(frozen.body.detail).toMatch(/frozen/);
    await suite.app.rest('POST', `/v1/transactions/${transactionId}/unfreeze`, { headers: f.member.headers });

    // A rule with milestones governs the release: no direct request.
    const pi = await createIntent(suite.app, f, { amount: '5000' });
    await gql(
      SET_RULE,
      { transactionId: pi.transactionId, input: { milestones: [{ amount: '5000', conditions: [{ kind: 'APPROVAL', party: 'INTEGRATOR' }] }] } },
      f.apiKeyHeaders,
    );
    await sandboxSend(suite.app, f.apiKeyHeaders, { address: pi.address, amount: 5000n, assetNetworkId: f.catalog.assetNetworkId });
    await sandboxMine(suite.app, f.apiKeyHeaders, f.catalog.networkId, 1);
    await drainChainSync(suite.app);
    await drainMoneyWork(suite.app);
    const governed = await post(pi.transactionId);
    expect(governed.status).toBe(409);
    expect(governed.body.detail).toMatch(/milestones/);

    // GraphQL, with the member: the same rules.
    const viaGql = await suite.app.gql(
      'mutation($t: ID!, $a: String) { requestSettlement(transactionId: $t, input: { amount: $a }) { id status requestedAmount } }',
      { t: transactionId, a: '40000' },
      f.member.headers,
    );
    expect(viaGql.errors).toBeUndefined();
    expect(viaGql.data).toMatchObject({ requestSettlement: { status: 'PENDING', requestedAmount: '40000' } });
    const settlementId = (viaGql.data as { requestSettlement: { id: string } }).requestSettlement.id;
    await drainMoneyWork(suite.app);

    // Tenant isolation: another organization, another environment of the same organization.
    const other = await signUpMember(suite.app);
    expect((await suite.app.rest('GET', `/v1/settlements/${settlementId}`, { headers: other.headers })).status).toBe(404);
    expect((await post(transactionId, undefined, other.headers)).status).toBe(404);
    expect((await suite.app.rest('GET', `/v1/transactions/${transactionId}/settlements`, { headers: other.headers })).status).toBe(404);
    expect((await suite.app.gql('query($id: ID!) { settlement(id: $id) { id } }', { id: settlementId }, other.headers)).errors?.[0]?.extensions?.code).toBe(
      'NOT_FOUND',
    );
    const otherEnvironment = await createApiKey(suite.app, f.member);
    expect((await suite.app.rest('GET', `/v1/settlements/${settlementId}`, { headers: otherEnvironment.headers })).status).toBe(404);
    expect((await suite.app.rest('GET', `/v1/settlements/not-a-uuid`, { headers: f.apiKeyHeaders })).status).toBe(404);
    // The owner's views.
    const list = await suite.app.rest('GET', `/v1/transactions/${transactionId}/settlements`, { headers: f.apiKeyHeaders });
    expect(list.status).toBe(200);
    expect(list.body.map((s: { id: string; status: string }) => [s.id, s.status])).toEqual([[settlementId, 'EXECUTED']]);
    expect((await suite.app.rest('GET', `/v1/settlements/${settlementId}`, { headers: f.catalog.operator.headers })).status).toBe(200);
  });

  test('operator-only routes refuse other principals; revenue destinations are versioned and validated', async () => {
    const f = await fixture();
    const op = f.catalog.operator.headers;
    const an = f.catalog.assetNetworkId;
    const destination = { assetNetworkId: an, address: '0x' + '12'.repeat(20), label: 'Cold wallet' };
    const adminCalls: [string, unknown][] = [
      [`/v1/admin/settlements/${crypto.randomUUID()}/retry`, undefined],
      ['/v1/admin/pricing-policy', { scope: 'PLATFORM', assetNetworkId: an, percentage: '1' }],
      ['/v1/admin/global-revenue-account/execution-destination', destination],
    ];
    for (const [path, body] of adminCalls) {
      const opts = body === undefined ? {} : { body };
      expect((await suite.app.rest('POST', path, { headers: f.member.headers, ...opts })).body.code, path).toBe('PRINCIPAL_NOT_ALLOWED');
      expect((await suite.app.rest('POST', path, { headers: f.apiKeyHeaders, ...opts })).body.code, path).toBe('PRINCIPAL_NOT_ALLOWED');
      expect((await suite.app.rest('POST', path, opts)).status, path).toBe(401);
    }
    const denied = await suite.app.gql('{ globalRevenueAccount { assetNetworkId } }', {}, f.member.headers);
    expect(denied.errors?.[0]?.extensions?.code).toBe('PRINCIPAL_NOT_ALLOWED');
    expect(await suite.app.deps.db.pricingPolicy.count({ where: { assetNetworkId: an } })).toBe(0);

    const bad = await suite.app.rest('POST', '/v1/admin/global-revenue-account/execution-destination', {
      headers: op,
      body: { ...destination, address: '0xnothex' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toEqual([expect.objectContaining({ field: 'address' })]);
    const unknown = await suite.app.rest('POST', '/v1/admin/global-revenue-account/execution-destination', {
      headers: op,
      body: { ...destination, assetNetworkId: crypto.randomUUID() },
    });
    expect(unknown.body.errors).toEqual([expect.objectContaining({ field: 'assetNetworkId' })]);
    const badPolicy = await suite.app.rest('POST', '/v1/admin/pricing-policy', {
      headers: op,
      body: { scope: 'PLATFORM', assetNetworkId: an, minimumAmount: '10', maximumAmount: '5' },
    });
    expect(badPolicy.status).toBe(400);

    expect((await suite.app.rest('POST', '/v1/admin/global-revenue-account/execution-destination', { headers: op, body: destination })).status).toBe(204);
    const second = { assetNetworkId: an, address: '0x' + '34'.repeat(20) };
    const r2 = await suite.app.rest('POST', '/v1/admin/global-revenue-account/execution-destination', { headers: op, body: second });
    expect(r2.status).toBe(204);
    expect(r2.text).toBe('');

    await configurePricing(f, { scope: 'PLATFORM', assetNetworkId: an, percentage: '2.5' });
    const transactionId = await fundedTransaction(f, 200_000n);
    await settle(f, transactionId);
    const overview = await gql('{ globalRevenueAccount { assetNetworkId balance destination { version address label } } }', {}, op);
    expect(overview.globalRevenueAccount.find((r: { assetNetworkId: string }) => r.assetNetworkId === an)).toEqual({
      assetNetworkId: an,
      balance: '5000',
      destination: { version: 2, address: second.address, label: null },
    });
    const audit = await suite.app.deps.db.auditLogEntry.findMany({
      where: { entityType: 'RevenueExecutionDestination' },
      orderBy: [{ occurredAt: 'asc' }, { id: 'asc' }],
    });
    expect(audit.filter((a) => (a.after as { assetNetworkId?: string }).assetNetworkId === an).map((a) => [a.action, a.actorType])).toEqual([
      ['revenue_destination.registered', 'OPERATOR'],
      ['revenue_destination.registered', 'OPERATOR'],
    ]);
  });
});
