import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { createApiKey, createOperator, createTestApp, signUpMember, type TestApp } from '../../../test/harness';
import { checkLedgerInvariants } from '../../../test/ledger-invariants';
import { setupSandboxCatalog } from '../../../test/money-helpers';
import { drainQueue } from '../../../test/fixtures/settlements/testing';
import { marginOf, priceResources, quoteNetworkExecution } from './costs';
import { consumeReserveInTx, releaseReserveInTx } from './reserve';
import { RESERVE_REPLENISH_QUEUE } from '../../kernel/queues';

/** Network execution costs and resource reserves (docs/network-costs.md), through REST and GraphQL against PostgreSQL. */

let app: TestApp;
let op: Record<string, string>;
beforeAll(async () => {
  app = await createTestApp();
  op = (await createOperator(app)).headers;
});
afterAll(() => app.close());
afterEach(() => checkLedgerInvariants(app.deps.db));

let seq = 0;
async function tronCatalog() {
  const tag = `${process.pid}${++seq}${Date.now() % 100000}`;
  const asset = await app.rest('POST', '/v1/platform/assets', { headers: op, body: { code: `USDT${tag}`, name: 'Tether', decimals: 6 } });
  expect(asset.status, asset.text).toBe(201);
  const net = await app.rest('POST', '/v1/platform/networks', {
    headers: op,
    body: { name: `Tron ${tag}`, kind: 'TRON', environmentType: 'PRODUCTION', blockTimeSeconds: 3, requiredConfirmations: 19 },
  });
  expect(net.status, net.text).toBe(201);
  const assetId = asset.headers.get('location')!.split('/').pop()!;
  const networkId = net.headers.get('location')!.split('/').pop()!;
  const an = await app.rest('POST', '/v1/platform/asset-networks', {
    headers: op,
    body: { assetId, networkId, decimals: 6, contractReference: 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t', minimumDeposit: '0' },
  });
  expect(an.status, an.text).toBe(201);
  return { networkId, assetNetworkId: an.headers.get('location')!.split('/').pop()! };
}

const quote = (environmentId: string, headers: Record<string, string>, body: Record<string, unknown>) =>
  app.rest('POST', `/v1/environments/${environmentId}/network-execution-quote`, { headers, body });

const GENERIC_TABLE = `mutation($input: ConfigureNetworkResourceCostTableInput!) { adminConfigureNetworkResourceCostTable(input: $input) { id version prices { resource unitPrice } } }`;

describe('arithmetic', () => {
  test('resources x prices; margin percentage rounds half up, plus fixed', () => {
    expect(
      priceResources(
        { energy: 65_000n, bandwidth: 345n },
        {
          version: 1,
          prices: [
            { resource: 'energy', unitPrice: '210' },
            { resource: 'bandwidth', unitPrice: '1000' },
          ],
        },
      ),
    ).toBe(65_000n * 210n + 345_000n);
    expect(() => priceResources({ gas: 1n }, { version: 3, prices: [{ resource: 'energy', unitPrice: '1' }] })).toThrow(/no price for the resource "gas"/);
    // 21000 x 0.002381% = 0.50001 -> 1; 21000 x 0.00238% = 0.4998 -> 0
    expect(marginOf(21_000n, { percentage: '0.002381', fixedAmount: '0' }).margin).toBe(1n);
    expect(marginOf(21_000n, { percentage: '0.00238', fixedAmount: '0' }).margin).toBe(0n);
    expect(marginOf(63_000n, { percentage: '2.5', fixedAmount: '7' }).margin).toBe(1_575n + 7n);
    expect(marginOf(63_000n, null).margin).toBe(0n);
  });
});

describe('GetNetworkExecutionQuote (sandbox)', () => {
  test('adapter fee, then a cost table and margins, versioned; expiry 60 s', async () => {
    const catalog = await setupSandboxCatalog(app);
    const m = await signUpMember(app);
    const key = await createApiKey(app, m, 'SANDBOX');
    const body = { assetNetworkId: catalog.assetNetworkId, operation: 'WITHDRAWAL', amount: '1000000' };

    const q1 = await quote(key.environmentId, key.headers, body);
    expect(q1.status, q1.text).toBe(200);
    expect(q1.body).toMatchObject({
      assetNetworkId: catalog.assetNetworkId,
      networkId: catalog.networkId,
      operation: 'WITHDRAWAL',
      amount: '1000000',
      resources: { gas: '21000' },
      networkCost: '21000',
      margin: '0',
      total: '21000',
      costSource: 'ADAPTER',
      costTableVersion: null,
      marginPolicyVersion: null,
    });
    expect(q1.body.quoteId).toMatch(/^[0-9a-f-]{36}$/);
    const now = (await app.deps.db.networkExecutionQuote.findUniqueOrThrow({ where: { id: q1.body.quoteId } })).createdAt;
    expect(new Date(q1.body.expiresAt).getTime() - now.getTime()).toBeGreaterThanOrEqual(60_000);
    expect(new Date(q1.body.expiresAt).getTime() - now.getTime()).toBeLessThan(61_000);

    // A cost table for the sandbox (GraphQL only) and a global margin of 10%.
    const t1 = await app.gql<{ adminConfigureNetworkResourceCostTable: { version: number } }>(
      GENERIC_TABLE,
      { input: { networkId: catalog.networkId, prices: [{ resource: 'gas', unitPrice: '3' }] } },
      op,
    );
    expect(t1.errors).toBeUndefined();
    expect(t1.data!.adminConfigureNetworkResourceCostTable.version).toBe(1);
    const g = await app.rest('POST', '/v1/admin/network-execution-margin-policy', { headers: op, body: { percentage: '10' } });
    expect(g.status, g.text).toBe(204);
    const q2 = await quote(key.environmentId, m.headers, { ...body, operation: 'SWEEP' });
    expect(q2.status, q2.text).toBe(200);
    expect(q2.body).toMatchObject({ operation: 'SWEEP', networkCost: '63000', margin: '6300', total: '69300', costSource: 'COST_TABLE', costTableVersion: 1 });
    const globalVersion = q2.body.marginPolicyVersion as number;

    // The asset-network's own margin wins over the global one: 2.5% + 7.
    app.clock.advance(1000);
    const own = await app.rest('POST', '/v1/admin/network-execution-margin-policy', {
      headers: op,
      body: { assetNetworkId: catalog.assetNetworkId, percentage: '2.5', fixedAmount: '7' },
    });
    expect(own.status, own.text).toBe(204);
    const beforeV2 = app.clock.now();
    app.clock.advance(1000);
    const t2 = await app.gql<{ adminConfigureNetworkResourceCostTable: { version: number } }>(
      GENERIC_TABLE,
      { input: { networkId: catalog.networkId, prices: [{ resource: 'gas', unitPrice: '5' }] } },
      op,
    );
    expect(t2.data!.adminConfigureNetworkResourceCostTable.version).toBe(2);
    const q3 = await quote(key.environmentId, key.headers, body);
    expect(q3.body).toMatchObject({
      networkCost: '105000',
      margin: String(2_625n + 7n),
      total: String(105_000n + 2_632n),
      costTableVersion: 2,
      marginPolicyVersion: 1,
    });

    // Versions in force at an earlier time: table v1, the global margin.
    const earlier = await quoteNetworkExecution(app.deps.db, { assetNetworkId: catalog.assetNetworkId, operation: 'WITHDRAWAL', amount: 1n, at: beforeV2 });
    expect(earlier).toMatchObject({ networkCost: 63_000n, costTableVersion: 1, marginPolicyVersion: 1, margin: 1_575n + 7n });
    expect(globalVersion).toBeGreaterThanOrEqual(1);

    // A fixed margin needs an asset-network.
    const bad = await app.rest('POST', '/v1/admin/network-execution-margin-policy', { headers: op, body: { fixedAmount: '5' } });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('fixedAmount');
  });

  test('validation, tenancy and principals', async () => {
    const catalog = await setupSandboxCatalog(app);
    const m = await signUpMember(app);
    const key = await createApiKey(app, m, 'SANDBOX');
    const other = await createApiKey(app, m, 'SANDBOX');
    const stranger = await signUpMember(app);
    const body = { assetNetworkId: catalog.assetNetworkId, operation: 'WITHDRAWAL', amount: '5' };
    expect((await quote(key.environmentId, other.headers, body)).status).toBe(404);
    expect((await quote(key.environmentId, stranger.headers, body)).status).toBe(404);
    expect((await quote(key.environmentId, op, body)).status).toBe(403);
    expect((await quote(key.environmentId, {}, body)).status).toBe(401);
    const zero = await quote(key.environmentId, key.headers, { ...body, amount: '0' });
    expect(zero.status).toBe(400);
    const op2 = await quote(key.environmentId, key.headers, { ...body, operation: 'DEPOSIT' });
    expect(op2.status).toBe(400);
    // A production environment cannot quote a sandbox network.
    const prod = await createApiKey(app, m, 'PRODUCTION');
    const wrong = await quote(prod.environmentId, prod.headers, body);
    expect(wrong.status, wrong.text).toBe(400);
    expect(wrong.text).toContain('assetNetworkId');
  });
});

describe('AdminConfigureTronResourceCostTable', () => {
  test('prices energy and bandwidth of TRON networks; other networks are refused', async () => {
    const tron = await tronCatalog();
    const m = await signUpMember(app);
    const prod = await createApiKey(app, m, 'PRODUCTION');
    const body = { assetNetworkId: tron.assetNetworkId, operation: 'WITHDRAWAL', amount: '1000000' };
    const none = await quote(prod.environmentId, prod.headers, body);
    expect(none.status, none.text).toBe(409);

    const r = await app.rest('POST', '/v1/admin/tron-resource-cost-table', {
      headers: op,
      body: { networkId: tron.networkId, energyPrice: '210', bandwidthPrice: '1000' },
    });
    expect(r.status, r.text).toBe(204);
    const q = await quote(prod.environmentId, prod.headers, body);
    expect(q.status, q.text).toBe(200);
    expect(q.body).toMatchObject({
      resources: { energy: '65000', bandwidth: '345' },
      networkCost: String(65_000n * 210n + 345n * 1000n),
      costTableVersion: 1,
      costSource: 'COST_TABLE',
    });

    const sandbox = await setupSandboxCatalog(app);
    const refused = await app.rest('POST', '/v1/admin/tron-resource-cost-table', {
      headers: op,
      body: { networkId: sandbox.networkId, energyPrice: '1', bandwidthPrice: '1' },
    });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('TRON');
    const negative = await app.rest('POST', '/v1/admin/tron-resource-cost-table', {
      headers: op,
      body: { networkId: tron.networkId, energyPrice: '-1', bandwidthPrice: '1' },
    });
    expect(negative.status).toBe(400);
    const audit = await app.deps.db.auditLogEntry.findMany({ where: { action: 'network_cost_table.configured', entityType: 'NetworkResourceCostTable' } });
    expect(audit.some((a) => (a.after as { networkId: string }).networkId === tron.networkId)).toBe(true);
  });
});

describe('network resource reserve', () => {
  test('seed, balance, policy, route; consumption to exhaustion; release; replenishment job', async () => {
    const catalog = await setupSandboxCatalog(app);
    const balancePath = `/v1/admin/network-resource-reserve/${catalog.assetNetworkId}/balance`;
    const empty = await app.rest('GET', balancePath, { headers: op });
    expect(empty.status, empty.text).toBe(200);
    expect(empty.body).toMatchObject({ networkId: catalog.networkId, assetNetworkId: catalog.assetNetworkId, configured: false, balance: '0' });

    const seeded = await app.rest('POST', '/v1/admin/network-resource-reserve/seed', {
      headers: op,
      body: { assetNetworkId: catalog.assetNetworkId, amount: '100000' },
    });
    expect(seeded.status, seeded.text).toBe(200);
    expect(seeded.body).toMatchObject({ configured: true, balance: '100000', lowThreshold: null, belowThreshold: false });
    const again = await app.rest('POST', '/v1/admin/network-resource-reserve/seed', {
      headers: op,
      body: { assetNetworkId: catalog.assetNetworkId, amount: '20000' },
    });
    expect(again.body.balance).toBe('120000');

    expect(
      (
        await app.rest('POST', '/v1/admin/network-resource-reserve/policy', {
          headers: op,
          body: { assetNetworkId: catalog.assetNetworkId, lowThreshold: '50000', targetBalance: '200000' },
        })
      ).status,
    ).toBe(204);
    const badPolicy = await app.rest('POST', '/v1/admin/network-resource-reserve/policy', {
      headers: op,
      body: { assetNetworkId: catalog.assetNetworkId, lowThreshold: '5', targetBalance: '4' },
    });
    expect(badPolicy.status).toBe(400);
    expect(
      (
        await app.rest('POST', '/v1/admin/network-resource-reserve/replenishment-route', {
          headers: op,
          body: { assetNetworkId: catalog.assetNetworkId, source: 'SANDBOX_FAUCET', maxTopUpAmount: '150000' },
        })
      ).status,
    ).toBe(204);
    const tron = await tronCatalog();
    const faucetOnTron = await app.rest('POST', '/v1/admin/network-resource-reserve/replenishment-route', {
      headers: op,
      body: { assetNetworkId: tron.assetNetworkId, source: 'SANDBOX_FAUCET' },
    });
    expect(faucetOnTron.status).toBe(400);

    const b = await app.rest('GET', balancePath, { headers: op });
    expect(b.body).toMatchObject({
      balance: '120000',
      lowThreshold: '50000',
      targetBalance: '200000',
      replenishmentSource: 'SANDBOX_FAUCET',
      maxTopUpAmount: '150000',
      belowThreshold: false,
    });

    // GraphQL answers what REST answers.
    const g = await app.gql<{ networkResourceReserveBalance: Record<string, unknown> }>(
      `query($id: ID!) { networkResourceReserveBalance(assetNetworkId: $id) { networkId networkName assetNetworkId configured balance lowThreshold targetBalance belowThreshold replenishmentSource replenishmentAddress maxTopUpAmount updatedAt } }`,
      { id: catalog.assetNetworkId },
      op,
    );
    expect(g.data!.networkResourceReserveBalance).toEqual(b.body);

    // Consumption: 3 x 40000 fits 120000 exactly; the 4th is exhausted.
    const deps = { clock: app.clock, boss: app.deps.boss };
    const consume = (ref: string, amount = 40_000n) =>
      app.deps.db.$transaction((tx) =>
        consumeReserveInTx(tx, deps, { assetNetworkId: catalog.assetNetworkId, amount, referenceType: 'Withdrawal', referenceId: ref }),
      );
    expect(await consume('w1')).toMatchObject({ ok: true, managed: true, replayed: false, balance: 80_000n });
    expect(await consume('w1')).toMatchObject({ ok: true, replayed: true, balance: 80_000n });
    expect(await consume('w2')).toMatchObject({ ok: true, balance: 40_000n });
    expect(await consume('w3')).toMatchObject({ ok: true, balance: 0n });
    expect(await consume('w4')).toEqual({ ok: false, reason: 'RESERVE_EXHAUSTED', balance: 0n });

    // A release gives a consumption back, once.
    const rel = (ref: string) =>
      app.deps.db.$transaction((tx) => releaseReserveInTx(tx, deps, { networkId: catalog.networkId, referenceType: 'Withdrawal', referenceId: ref }));
    expect(await rel('w3')).toEqual({ released: 40_000n });
    expect(await rel('w3')).toEqual({ released: 40_000n });
    expect(await rel('never')).toEqual({ released: 0n });
    expect((await app.rest('GET', balancePath, { headers: op })).body).toMatchObject({ balance: '40000', belowThreshold: true });

    // The replenish job tops up to the target, at most maxTopUpAmount per run.
    expect(await drainQueue(app, RESERVE_REPLENISH_QUEUE)).toBeGreaterThanOrEqual(1);
    const after = await app.rest('GET', balancePath, { headers: op });
    expect(after.body).toMatchObject({ balance: '190000', belowThreshold: false });
    // Idempotent: above the threshold, nothing more happens.
    await app.deps.db.$transaction((tx) => import('./reserve').then((r) => r.sendReserveReplenish(tx, app.deps.boss, catalog.networkId)));
    await drainQueue(app, RESERVE_REPLENISH_QUEUE);
    expect((await app.rest('GET', balancePath, { headers: op })).body.balance).toBe('190000');

    // The movements explain the balance.
    const reserve = await app.deps.db.networkResourceReserve.findUniqueOrThrow({
      where: { networkId: catalog.networkId },
      include: { movements: { orderBy: { createdAt: 'asc' } } },
    });
    const kinds = reserve.movements.map((mv) => mv.kind);
    expect(kinds.filter((k) => k === 'CONSUME')).toHaveLength(3);
    expect(kinds).toContain('RELEASE');
    expect(kinds).toContain('REPLENISH');
    const sum = reserve.movements.reduce((s, mv) => s + (mv.kind === 'CONSUME' ? -1n : 1n) * BigInt(mv.amount.toFixed(0)), 0n);
    expect(sum).toBe(BigInt(reserve.balance.toFixed(0)));
    const replenished = await app.deps.db.auditLogEntry.findFirst({ where: { entityId: reserve.id, action: 'network_reserve.replenished' } });
    expect(replenished?.actorType).toBe('SYSTEM');

    // The dashboard shows the level.
    const d = await app.rest('GET', '/v1/admin/dashboard', { headers: op });
    expect(d.status).toBe(200);
    expect(d.body.reserveLevels).toEqual(
      expect.arrayContaining([expect.objectContaining({ networkId: catalog.networkId, balance: '190000', targetBalance: '200000' })]),
    );

    // A network without a reserve is not metered.
    expect(
      await app.deps.db.$transaction((tx) =>
        consumeReserveInTx(tx, deps, { networkId: tron.networkId, amount: 5n, referenceType: 'Sweep', referenceId: 's1' }),
      ),
    ).toEqual({ ok: true, managed: false, replayed: false, balance: null });
  });

  test('operator routes refuse every other principal', async () => {
    const catalog = await setupSandboxCatalog(app);
    const m = await signUpMember(app);
    const key = await createApiKey(app, m, 'SANDBOX');
    const holder = await app.rest('POST', '/v1/account-holders/signup', {
      body: { email: `h${Date.now()}@example.com`, password: 'correct horse battery staple', name: 'H' },
    });
    const holderHeaders = { authorization: `Bearer ${holder.body.accessToken}` };
    const calls: [string, string, unknown][] = [
      ['POST', '/v1/admin/tron-resource-cost-table', { networkId: catalog.networkId, energyPrice: '1', bandwidthPrice: '1' }],
      ['POST', '/v1/admin/network-execution-margin-policy', { percentage: '1' }],
      ['POST', '/v1/admin/network-resource-reserve/seed', { assetNetworkId: catalog.assetNetworkId, amount: '1' }],
      ['GET', `/v1/admin/network-resource-reserve/${catalog.assetNetworkId}/balance`, undefined],
      ['POST', '/v1/admin/network-resource-reserve/policy', { assetNetworkId: catalog.assetNetworkId, lowThreshold: '1', targetBalance: '2' }],
      ['POST', '/v1/admin/network-resource-reserve/replenishment-route', { assetNetworkId: catalog.assetNetworkId, source: 'SANDBOX_FAUCET' }],
    ];
    for (const [method, path, body] of calls) {
      for (const headers of [m.headers, key.headers, holderHeaders]) {
        const r = await app.rest(method, path, { headers, ...(body ? { body } : {}) });
        expect(r.status, `${method} ${path}: ${r.text}`).toBe(403);
      }
      expect((await app.rest(method, path, { ...(body ? { body } : {}) })).status).toBe(401);
    }
    expect(await app.deps.db.networkResourceReserve.count({ where: { networkId: catalog.networkId } })).toBe(0);
    const unknown = await app.rest('GET', `/v1/admin/network-resource-reserve/${crypto.randomUUID()}/balance`, { headers: op });
    expect(unknown.status).toBe(404);
  });
});
