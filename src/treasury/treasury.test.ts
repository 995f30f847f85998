import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { createApiKey, createOperator, createTestApp, signUpMember, type RestResult, type TestApp } from '../../test/harness';
import { checkLedgerInvariants } from '../../test/ledger-invariants';
import { webhookEnv } from '../../test/webhook-helpers';
import { sandboxMine, sandboxSend } from '../../test/money-helpers';
import { createIntent, moneyFixture, type MoneyFixture } from '../../test/fixtures/deposits/testing';
import { drainMoneyWork, fundedTransaction } from '../../test/fixtures/settlements/testing';
import { generateKeyPair } from '../chains/secp256k1';
import { planMoves } from './treasury';

/** Treasury (docs/treasury.md): controlled addresses, overview, liquidity policy and rebalance plan, sweeps; REST and GraphQL against PostgreSQL. */

let app: TestApp;
let op: Record<string, string>;
beforeAll(async () => {
  app = await createTestApp({ env: webhookEnv });
  op = (await createOperator(app)).headers;
});
afterAll(() => app.close());
afterEach(() => checkLedgerInvariants(app.deps.db));

const idOf = (r: RestResult) => r.headers.get('location')!.split('/').pop()!;

async function register(body: Record<string, unknown>, expected = 201): Promise<RestResult> {
  const r = await app.rest('POST', '/v1/admin/treasury/controlled-addresses', { body, headers: op });
  expect(r.status, r.text).toBe(expected);
  return r;
}
async function controlled(assetNetworkId: string, tier: 'HOT' | 'WARM' | 'COLD', label = `${tier} wallet`) {
  const r = await register({ assetNetworkIds: [assetNetworkId], tier, control: 'GENERATED', label });
  const id = idOf(r);
  const got = await app.rest('GET', `/v1/admin/treasury/controlled-addresses/${id}`, { headers: op });
  expect(got.status, got.text).toBe(200);
  return got.body as { id: string; address: string; tier: string; control: string; publicKey: string | null; active: boolean };
}
async function overviewOf(assetNetworkId: string) {
  const r = await app.rest('GET', '/v1/admin/treasury-overview', { headers: op });
  expect(r.status, r.text).toBe(200);
  return (r.body.assetNetworks as Record<string, any>[]).find((a) => a.assetNetworkId === assetNetworkId)!;
}
async function chainBalance(f: MoneyFixture, address: string): Promise<string> {
  const r = await app.gql<{ sandboxBalance: { balance: string } }>(
    'query($a: ID!, $x: String!) { sandboxBalance(assetNetworkId: $a, address: $x) { balance } }',
    { a: f.catalog.assetNetworkId, x: address },
    f.apiKeyHeaders,
  );
  expect(r.errors).toBeUndefined();
  return r.data!.sandboxBalance.balance;
}
async function depositAddressIdOf(address: string): Promise<string> {
  return (await app.deps.db.depositAddress.findFirstOrThrow({ where: { address }, select: { id: true } })).id;
}
async function fund(f: MoneyFixture, address: string, amount: bigint) {
  await sandboxSend(app, f.apiKeyHeaders, { address, amount, assetNetworkId: f.catalog.assetNetworkId });
}

describe('controlled addresses', () => {
  let f: MoneyFixture;
  beforeAll(async () => {
    f = await moneyFixture(app, { requiredConfirmations: 1 });
  });

  test('GENERATED: key generated and sealed here, address derived by the adapter; Location reads it back; audited', async () => {
    const r = await register({ assetNetworkIds: [f.catalog.assetNetworkId], tier: 'HOT', control: 'GENERATED', label: 'Hot 1' });
    expect(r.headers.get('location')).toMatch(/^\/v1\/admin\/treasury\/controlled-addresses\/[0-9a-f-]{36}$/);
    const got = await app.rest('GET', r.headers.get('location')!, { headers: op });
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({
      tier: 'HOT',
      control: 'GENERATED',
      label: 'Hot 1',
      active: true,
      assetNetworkIds: [f.catalog.assetNetworkId],
      networkId: f.catalog.networkId,
    });
    expect(got.body.address).toMatch(/^0x[0-9a-f]{40}$/);
    expect(got.body.publicKey).toMatch(/^0[23][0-9a-f]{64}$/);
    expect(JSON.stringify(got.body)).not.toMatch(/sealed|private/i);
    const audit = await app.rest('GET', `/v1/admin/audit-log?entityId=${got.body.id}`, { headers: op });
    expect(audit.body.items.map((e: { action: string }) => e.action)).toEqual(['treasury.controlled_address.registered']);
  });

  test('WATCH_ONLY: the address is validated by the adapter (400), normalized, and unique on the network (409)', async () => {
    const base = { assetNetworkIds: [f.catalog.assetNetworkId], tier: 'COLD', control: 'WATCH_ONLY', label: 'Vault' };
    const bad = await register({ ...base, address: '0x1234' }, 400);
    expect(bad.body.errors).toEqual([expect.objectContaining({ field: 'address' })]);
    await register({ ...base }, 400);
    const gen = await register({ ...base, control: 'GENERATED', address: '0x' + 'a'.repeat(40) }, 400);
    expect(gen.body.errors[0].field).toBe('address');
    const address = '0x' + 'AB'.repeat(20);
    const ok = await register({ ...base, address });
    const got = await app.rest('GET', `/v1/admin/treasury/controlled-addresses/${idOf(ok)}`, { headers: op });
    expect(got.body).toMatchObject({ address: address.toLowerCase(), control: 'WATCH_ONLY', publicKey: null });
    await register({ ...base, address: address.toLowerCase() }, 409);
    // Not a deposit address either.
    const pi = await createIntent(app, f);
    await register({ ...base, address: pi.address }, 409);
    // Asset-networks must exist and be on one network; the tier must be known.
    await register({ ...base, address: '0x' + 'cd'.repeat(20), assetNetworkIds: [crypto.randomUUID()] }, 400);
    const other = await moneyFixture(app);
    await register({ ...base, address: '0x' + 'cd'.repeat(20), assetNetworkIds: [f.catalog.assetNetworkId, other.catalog.assetNetworkId] }, 400);
    await register({ ...base, tier: 'LUKEWARM', address: '0x' + 'cd'.repeat(20) }, 400);
  });

  test('list by asset-network with activeOnly; deactivate (idempotent); GraphQL agrees', async () => {
    const g = await moneyFixture(app);
    const a = await controlled(g.catalog.assetNetworkId, 'HOT');
    const b = await controlled(g.catalog.assetNetworkId, 'WARM');
    const d1 = await app.rest('POST', `/v1/admin/treasury/controlled-addresses/${a.id}/deactivate`, { headers: op });
    expect(d1.status, d1.text).toBe(204);
    expect((await app.rest('POST', `/v1/admin/treasury/controlled-addresses/${a.id}/deactivate`, { headers: op })).status).toBe(204);
    const all = await app.rest('GET', `/v1/admin/treasury/${g.catalog.assetNetworkId}/controlled-addresses`, { headers: op });
    expect(all.status).toBe(200);
    expect(all.body.map((x: { id: string }) => x.id)).toEqual([a.id, b.id]);
    expect(all.body.map((x: { active: boolean }) => x.active)).toEqual([false, true]);
    expect(all.body[0].deactivatedAt).not.toBeNull();
    expect(all.body.every((x: { balance: string }) => x.balance === '0')).toBe(true);
    const active = await app.rest('GET', `/v1/admin/treasury/${g.catalog.assetNetworkId}/controlled-addresses?activeOnly=true`, { headers: op });
    expect(active.body.map((x: { id: string }) => x.id)).toEqual([b.id]);
    const gql = await app.gql<{ treasuryControlledAddresses: { id: string }[] }>(
      'query($a: ID!) { treasuryControlledAddresses(assetNetworkId: $a, activeOnly: true) { id } }',
      { a: g.catalog.assetNetworkId },
      op,
    );
    expect(gql.data!.treasuryControlledAddresses.map((x) => x.id)).toEqual([b.id]);
    expect((await app.rest('GET', `/v1/admin/treasury/${crypto.randomUUID()}/controlled-addresses`, { headers: op })).status).toBe(404);
    expect((await app.rest('POST', `/v1/admin/treasury/controlled-addresses/${crypto.randomUUID()}/deactivate`, { headers: op })).status).toBe(404);
    // Another asset-network's list does not show them.
    const none = await app.rest('GET', `/v1/admin/treasury/${f.catalog.assetNetworkId}/controlled-addresses`, { headers: op });
    expect(none.body.map((x: { id: string }) => x.id)).not.toContain(a.id);
  });
});

describe('sweeps and the overview', () => {
  test('a funded transaction, then a sweep: liabilities unchanged, the value moved between addresses on chain, the ledger untouched', async () => {
    const { f, transactionId, intent } = await fundedTransaction(app, 1_000_000n);
    const an = f.catalog.assetNetworkId;
    const hot = await controlled(an, 'HOT');
    const before = await overviewOf(an);
    expect(before).toMatchObject({
      customerLiabilities: '1000000',
      liabilities: { customer: '0', escrow: '1000000', suspense: '0', retained: '0' },
      platformFunds: '0',
      chainClearing: '1000000',
      depositAddressHoldings: '1000000',
      assetsHeld: '1000000',
      difference: '0',
      clearingDifference: '0',
    });
    expect(before.controlledHoldings).toEqual([
      { tier: 'HOT', addresses: 1, balance: '0' },
      { tier: 'WARM', addresses: 0, balance: '0' },
      { tier: 'COLD', addresses: 0, balance: '0' },
    ]);
    const ledgerBefore = await app.deps.db.ledgerTransaction.count();

    const depositAddressId = await depositAddressIdOf(intent.address);
    const s = await app.rest('POST', '/v1/admin/treasury/sweeps', {
      body: { assetNetworkId: an, fromDepositAddressId: depositAddressId, toControlledAddressId: hot.id },
      headers: { ...op, 'idempotency-key': 'sweep-1-' + depositAddressId },
    });
    expect(s.status, s.text).toBe(201);
    expect(s.headers.get('location')).toMatch(/^\/v1\/admin\/treasury\/sweeps\/[0-9a-f-]{36}$/);
    const sweep = await app.rest('GET', s.headers.get('location')!, { headers: op });
    expect(sweep.status).toBe(200);
    expect(sweep.body).toMatchObject({
      assetNetworkId: an,
      organizationId: f.organizationId,
      depositAddressId,
      fromAddress: intent.address,
      toControlledAddressId: hot.id,
      toAddress: hot.address,
      amount: '1000000',
      networkCost: '21000',
      chainStatus: 'PENDING',
      confirmations: 0,
    });
    // The same Idempotency-Key answers the same sweep.
    const again = await app.rest('POST', '/v1/admin/treasury/sweeps', {
      body: { assetNetworkId: an, fromDepositAddressId: depositAddressId, toControlledAddressId: hot.id },
      headers: { ...op, 'idempotency-key': 'sweep-1-' + depositAddressId },
    });
    expect(again.status).toBe(201);
    expect(again.headers.get('location')).toBe(s.headers.get('location'));
    // Pending: nothing left to spend, so a second sweep is refused.
    const second = await app.rest('POST', '/v1/admin/treasury/sweeps', {
      body: { assetNetworkId: an, fromDepositAddressId: depositAddressId, toControlledAddressId: hot.id },
      headers: op,
    });
    expect(second.status, second.text).toBe(409);

    await sandboxMine(app, f.apiKeyHeaders, f.catalog.networkId, 1);
    await drainMoneyWork(app);
    const after = await overviewOf(an);
    expect(after).toMatchObject({
      customerLiabilities: '1000000',
      chainClearing: '1000000',
      depositAddressHoldings: '0',
      assetsHeld: '1000000',
      difference: '0',
      clearingDifference: '0',
    });
    expect(after.controlledHoldings[0]).toEqual({ tier: 'HOT', addresses: 1, balance: '1000000' });
    expect(await chainBalance(f, intent.address)).toBe('0');
    expect(await chainBalance(f, hot.address)).toBe('1000000');
    expect((await app.rest('GET', s.headers.get('location')!, { headers: op })).body).toMatchObject({ chainStatus: 'MINED', confirmations: 1 });
    // No ledger transaction; the transaction still holds its escrow; the sweep is audited under the organization.
    expect(await app.deps.db.ledgerTransaction.count()).toBe(ledgerBefore);
    const t = await app.rest('GET', `/v1/transactions/${transactionId}`, { headers: f.apiKeyHeaders });
    expect(t.body.status).toBe('RESERVED');
    const audit = await app.rest('GET', `/v1/admin/audit-log?organizationId=${f.organizationId}&entityType=TreasurySweep`, { headers: op });
    expect(audit.body.items.map((e: { action: string }) => e.action)).toEqual(['treasury.sweep.executed']);
    // The controlled address now lists its balance.
    const list = await app.rest('GET', `/v1/admin/treasury/${an}/controlled-addresses`, { headers: op });
    expect(list.body.find((x: { id: string }) => x.id === hot.id).balance).toBe('1000000');
    // The new HOT balance can pay: hotAddressFor finds it (for withdrawals).
    const { hotAddressFor, signFromControlledAddress } = await import('./treasury');
    expect((await hotAddressFor(app.deps.db, an, 1_000_000n))?.id).toBe(hot.id);
    expect(await hotAddressFor(app.deps.db, an, 1_000_001n)).toBeNull();
    const signed = await signFromControlledAddress(app.deps.db, app.deps, hot.id, { assetNetworkId: an, toAddress: intent.address, amount: 5n, nonce: 'n1' });
    const { verifySignedTransfer } = await import('../chains/secp256k1');
    expect(verifySignedTransfer(signed)).toMatchObject({ fromAddress: hot.address, amount: '5' });
  });

  test('sweep refusals: COLD (400), another asset-network (400), unknown (404), inactive (409), nothing to sweep (409), self-custody (409)', async () => {
    const { f, intent } = await fundedTransaction(app, 500n);
    const an = f.catalog.assetNetworkId;
    const depositAddressId = await depositAddressIdOf(intent.address);
    const cold = await controlled(an, 'COLD');
    const warm = await controlled(an, 'WARM');
    const sweep = (body: Record<string, unknown>) =>
      app.rest('POST', '/v1/admin/treasury/sweeps', {
        body: { assetNetworkId: an, fromDepositAddressId: depositAddressId, toControlledAddressId: warm.id, ...body },
        headers: op,
      });
    expect((await sweep({ toControlledAddressId: cold.id })).status).toBe(400);
    expect((await sweep({ toControlledAddressId: crypto.randomUUID() })).status).toBe(404);
    expect((await sweep({ fromDepositAddressId: crypto.randomUUID() })).status).toBe(404);
    expect((await sweep({ amount: '501' })).status).toBe(409);
    expect((await sweep({ amount: '-1' })).status).toBe(400);
    const other = await moneyFixture(app);
    const otherWarm = await controlled(other.catalog.assetNetworkId, 'WARM');
    expect((await sweep({ toControlledAddressId: otherWarm.id })).status).toBe(400);
    expect((await sweep({ assetNetworkId: other.catalog.assetNetworkId, toControlledAddressId: otherWarm.id })).status).toBe(400);
    // A partial sweep to a WATCH_ONLY WARM address is fine.
    const watch = await register({ assetNetworkIds: [an], tier: 'WARM', control: 'WATCH_ONLY', label: 'Exchange', address: '0x' + '5e'.repeat(20) });
    const part = await sweep({ toControlledAddressId: idOf(watch), amount: '200' });
    expect(part.status, part.text).toBe(201);
    await app.rest('POST', `/v1/admin/treasury/controlled-addresses/${warm.id}/deactivate`, { headers: op });
    const inactive = await sweep({});
    expect(inactive.status).toBe(409);

    // A SELF_CUSTODY wallet's deposit address: the service cannot sign.
    const { publicKey } = generateKeyPair();
    const w = await app.rest('POST', `/v1/applications/${f.applicationId}/wallets`, {
      headers: f.apiKeyHeaders,
      body: { networkId: f.catalog.networkId, custodyMode: 'SELF_CUSTODY', publicKey },
    });
    expect(w.status, w.text).toBe(201);
    const pi = await createIntent(app, f, { walletId: idOf(w), amount: '300' });
    await fund(f, pi.address, 300n);
    await sandboxMine(app, f.apiKeyHeaders, f.catalog.networkId, 1);
    await drainMoneyWork(app);
    const hot = await controlled(an, 'HOT');
    const self = await sweep({ fromDepositAddressId: await depositAddressIdOf(pi.address), toControlledAddressId: hot.id });
    expect(self.status, self.text).toBe(409);
    expect(self.body.detail).toMatch(/SELF_CUSTODY/);
    expect(await chainBalance(f, pi.address)).toBe('300');
  });

  test("the sweep's network cost is consumed from the network's resource reserve; a short reserve refuses it (409 RESERVE_EXHAUSTED)", async () => {
    const { f, intent } = await fundedTransaction(app, 700n);
    const an = f.catalog.assetNetworkId;
    const hot = await controlled(an, 'HOT');
    const seed = async (amount: string) => {
      const r = await app.rest('POST', '/v1/admin/network-resource-reserve/seed', { body: { assetNetworkId: an, amount }, headers: op });
      expect(r.status, r.text).toBe(200);
    };
    await seed('1000');
    const body = { assetNetworkId: an, fromDepositAddressId: await depositAddressIdOf(intent.address), toControlledAddressId: hot.id };
    const short = await app.rest('POST', '/v1/admin/treasury/sweeps', { body, headers: op });
    expect(short.status, short.text).toBe(409);
    expect(short.body.detail).toMatch(/^RESERVE_EXHAUSTED/);
    expect(await app.deps.db.treasurySweep.count({ where: { assetNetworkId: an } })).toBe(0);
    await seed('50000');
    const ok = await app.rest('POST', '/v1/admin/treasury/sweeps', { body, headers: op });
    expect(ok.status, ok.text).toBe(201);
    const reserve = await app.deps.db.networkResourceReserve.findUniqueOrThrow({ where: { networkId: f.catalog.networkId } });
    expect(reserve.balance.toString()).toBe('30000');
  });

  test('SearchTreasurySweeps: newest first, filtered, exact total; paging bounds answer 400', async () => {
    const { f, intent } = await fundedTransaction(app, 900n);
    const an = f.catalog.assetNetworkId;
    const hot = await controlled(an, 'HOT');
    const from = await depositAddressIdOf(intent.address);
    const ids: string[] = [];
    for (const amount of ['100', '200', '300']) {
      const r = await app.rest('POST', '/v1/admin/treasury/sweeps', {
        body: { assetNetworkId: an, fromDepositAddressId: from, toControlledAddressId: hot.id, amount },
        headers: op,
      });
      expect(r.status, r.text).toBe(201);
      ids.push(idOf(r));
    }
    const all = await app.rest('GET', `/v1/admin/treasury/sweeps?assetNetworkId=${an}`, { headers: op });
    expect(all.status, all.text).toBe(200);
    expect(all.body).toMatchObject({ skip: 0, take: 50, total: 3 });
    expect(all.body.items.map((s: { id: string }) => s.id)).toEqual([...ids].reverse());
    expect(all.body.items.map((s: { amount: string }) => s.amount)).toEqual(['300', '200', '100']);
    const page = await app.rest('GET', `/v1/admin/treasury/sweeps?assetNetworkId=${an}&skip=1&take=1`, { headers: op });
    expect(page.body).toMatchObject({ skip: 1, take: 1, total: 3 });
    expect(page.body.items.map((s: { id: string }) => s.id)).toEqual([ids[1]]);
    const everything = await app.rest('GET', '/v1/admin/treasury/sweeps?take=500', { headers: op });
    expect(everything.body.total).toBeGreaterThanOrEqual(3);
    for (const q of ['take=0', 'take=501', 'skip=-1', 'skip=100001', 'assetNetworkId=nope']) {
      const r = await app.rest('GET', `/v1/admin/treasury/sweeps?${q}`, { headers: op });
      expect(r.status, q).toBe(400);
    }
    const gql = await app.gql<{ treasurySweeps: { totalCount: number; nodes: { id: string }[] } }>(
      'query($a: ID) { treasurySweeps(assetNetworkId: $a, first: 2) { totalCount nodes { id } } }',
      { a: an },
      op,
    );
    expect(gql.data!.treasurySweeps).toEqual({ totalCount: 3, nodes: [{ id: ids[2] }, { id: ids[1] }] });
  });
});

describe('liquidity policy and rebalance plan', () => {
  test('a skewed distribution: HOT refilled from WARM, then WARM excess to COLD; versions; validation', async () => {
    const f = await moneyFixture(app, { requiredConfirmations: 1 });
    const an = f.catalog.assetNetworkId;
    const hot = await controlled(an, 'HOT');
    const warm = await controlled(an, 'WARM');
    const cold = await controlled(an, 'COLD');
    await fund(f, hot.address, 100n);
    await fund(f, warm.address, 9000n);
    await sandboxMine(app, f.apiKeyHeaders, f.catalog.networkId, 1);
    await drainMoneyWork(app);

    const none = await app.rest('GET', `/v1/admin/treasury/${an}/rebalance-plan`, { headers: op });
    expect(none.status, none.text).toBe(200);
    expect(none.body).toMatchObject({ policyId: null, moves: [] });
    expect(none.body.notes[0]).toMatch(/No liquidity policy/);

    const configure = (body: Record<string, unknown>) => app.rest('POST', '/v1/admin/treasury/liquidity-policy', { body, headers: op });
    const tiers = [
      { tier: 'WARM', min: '1000', target: '2000', max: '4000' },
      { tier: 'HOT', min: '1000', target: '2000', max: '3000' },
      { tier: 'COLD', min: '0', target: '0' },
    ];
    expect((await configure({ assetNetworkId: an, tiers: [{ tier: 'HOT', min: '5', target: '4' }] })).status).toBe(400);
    expect((await configure({ assetNetworkId: an, tiers: [{ tier: 'HOT', min: '1', target: '4', max: '3' }] })).status).toBe(400);
    expect(
      (
        await configure({
          assetNetworkId: an,
          tiers: [
            { tier: 'HOT', min: '1', target: '4' },
            { tier: 'HOT', min: '1', target: '4' },
          ],
        })
      ).status,
    ).toBe(400);
    expect((await configure({ assetNetworkId: an, tiers: [{ tier: 'HOT', min: '1.5', target: '4' }] })).status).toBe(400);
    expect((await configure({ assetNetworkId: an, tiers: [] })).status).toBe(400);
    expect((await configure({ assetNetworkId: crypto.randomUUID(), tiers })).status).toBe(404);
    const v1 = await configure({ assetNetworkId: an, tiers: [{ tier: 'HOT', min: '1', target: '2' }] });
    expect(v1.status, v1.text).toBe(204);
    expect(v1.text).toBe('');
    expect((await configure({ assetNetworkId: an, tiers })).status).toBe(204);

    const plan = await app.rest('GET', `/v1/admin/treasury/${an}/rebalance-plan`, { headers: op });
    expect(plan.status, plan.text).toBe(200);
    expect(plan.body.policyVersion).toBe(2);
    expect(plan.body.tiers).toEqual([
      { tier: 'HOT', balance: '100', movable: '100', min: '1000', target: '2000', max: '3000', position: 'BELOW_MIN' },
      { tier: 'WARM', balance: '9000', movable: '9000', min: '1000', target: '2000', max: '4000', position: 'ABOVE_MAX' },
      { tier: 'COLD', balance: '0', movable: '0', min: '0', target: '0', max: null, position: 'WITHIN' },
    ]);
    expect(plan.body.moves.map((m: Record<string, string>) => [m.fromControlledAddressId, m.toControlledAddressId, m.amount])).toEqual([
      [warm.id, hot.id, '1900'],
      [warm.id, cold.id, '5100'],
    ]);
    expect(plan.body.moves[0].reason).toMatch(/HOT is below its minimum/);
    expect(plan.body.moves[1].reason).toMatch(/WARM is above its maximum/);
    // Read-only: nothing was sent.
    expect(await chainBalance(f, warm.address)).toBe('9000');
    const gql = await app.gql<{ treasuryRebalancePlan: { moves: { amount: string }[] } }>(
      'query($a: ID!) { treasuryRebalancePlan(assetNetworkId: $a) { moves { amount } } }',
      { a: an },
      op,
    );
    expect(gql.data!.treasuryRebalancePlan.moves).toEqual([{ amount: '1900' }, { amount: '5100' }]);
    expect((await app.rest('GET', `/v1/admin/treasury/${crypto.randomUUID()}/rebalance-plan`, { headers: op })).status).toBe(404);
    const audit = await app.rest('GET', '/v1/admin/audit-log?entityType=TreasuryLiquidityPolicy&take=2', { headers: op });
    expect(audit.body.items[0].after).toMatchObject({ assetNetworkId: an, version: 2 });
  });

  test('planMoves: WATCH_ONLY addresses receive but never send; shortfalls are noted', () => {
    const policy = {
      id: 'p',
      assetNetworkId: 'a',
      version: 1,
      operatorId: 'o',
      createdAt: new Date(0),
      tiers: [
        { tier: 'HOT' as const, min: '1000', target: '2000', max: null },
        { tier: 'WARM' as const, min: '0', target: '0', max: null },
      ],
    };
    const { moves, notes } = planMoves(
      [
        { id: '1', tier: 'HOT', address: 'h', generated: true, balance: 0n, spendable: 0n },
        { id: '2', tier: 'WARM', address: 'w', generated: false, balance: 5000n, spendable: 5000n },
        { id: '3', tier: 'WARM', address: 'x', generated: true, balance: 700n, spendable: 500n },
      ],
      policy,
    );
    expect(moves.map((m) => [m.fromControlledAddressId, m.toControlledAddressId, m.amount])).toEqual([['3', '1', '500']]);
    expect(notes.join(' ')).toMatch(/HOT stays short of its target by 1500/);
  });
});

describe('authorization', () => {
  test('every treasury route is for platform operators only (members and API keys: 403; none: 401)', async () => {
    const m = await signUpMember(app);
    const key = await createApiKey(app, m);
    const id = crypto.randomUUID();
    const calls: [string, string, unknown?][] = [
      ['GET', '/v1/admin/treasury-overview'],
      ['GET', `/v1/admin/treasury/${id}/controlled-addresses?activeOnly=true`],
      ['GET', `/v1/admin/treasury/${id}/rebalance-plan`],
      ['GET', '/v1/admin/treasury/sweeps'],
      ['GET', `/v1/admin/treasury/sweeps/${id}`],
      ['POST', '/v1/admin/treasury/sweeps', { assetNetworkId: id, fromDepositAddressId: id, toControlledAddressId: id }],
      ['POST', '/v1/admin/treasury/controlled-addresses', { assetNetworkIds: [id], tier: 'HOT', control: 'GENERATED', label: 'x' }],
      ['GET', `/v1/admin/treasury/controlled-addresses/${id}`],
      ['POST', `/v1/admin/treasury/controlled-addresses/${id}/deactivate`],
      ['POST', '/v1/admin/treasury/liquidity-policy', { assetNetworkId: id, tiers: [{ tier: 'HOT', min: '0', target: '0' }] }],
    ];
    for (const [method, path, body] of calls) {
      for (const headers of [m.headers, key.headers]) {
        const r = await app.rest(method, path, { headers, ...(body ? { body } : {}) });
        expect(r.status, `${method} ${path}`).toBe(403);
      }
      expect((await app.rest(method, path, body ? { body } : {})).status, `${method} ${path}`).toBe(401);
    }
    const gql = await app.gql('{ treasuryOverview { generatedAt } }', {}, m.headers);
    expect(gql.errors?.[0]?.extensions?.code).toBe('PRINCIPAL_NOT_ALLOWED');
    const mut = await app.gql('mutation($id: ID!) { adminDeactivateControlledAddress(id: $id) { id } }', { id }, key.headers);
    expect(mut.errors?.[0]?.extensions?.code).toBe('PRINCIPAL_NOT_ALLOWED');
  });
});
