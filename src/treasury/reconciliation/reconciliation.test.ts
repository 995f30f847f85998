import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { createApiKey, createOperator, createTestApp, signUpMember, type TestApp } from '../../../test/harness';
import { checkLedgerInvariants } from '../../../test/ledger-invariants';
import { sandboxMine, sandboxReorg, sandboxSend } from '../../../test/money-helpers';
import { createIntent, drainChainSync, moneyDeps } from '../../../test/fixtures/deposits/testing';
import { drainMoneyWork, fundedTransaction } from '../../../test/fixtures/settlements/testing';
import { reconcileJob } from './reconciliation';

/** Reconciliation (docs/reconciliation.md), through REST and GraphQL against PostgreSQL. */

let app: TestApp;
let op: Record<string, string>;
beforeAll(async () => {
  app = await createTestApp();
  op = (await createOperator(app)).headers;
});
afterAll(() => app.close());
afterEach(() => checkLedgerInvariants(app.deps.db));

interface Divergence {
  id: string;
  reconciliationId: string;
  assetNetworkId: string;
  kind: string;
  expected: string;
  observed: string;
  difference: string;
  details: Record<string, unknown>;
  status: string;
  resolution: string | null;
  resolutionReason: string | null;
  resolvedByOperatorId: string | null;
  ledgerCorrectionId: string | null;
  resolvedAt: string | null;
}
interface Run {
  id: string;
  trigger: string;
  operatorId: string | null;
  status: string;
  divergenceCount: number;
  summaries: {
    assetNetworkId: string;
    skipped: boolean;
    ledger: string;
    chain: string;
    inFlightOut: string;
    pendingIn: string;
    rejectedIn: string;
    observed: string;
    addresses: number;
    divergences: number;
  }[];
  divergences: Divergence[];
}

async function execute(headers = op): Promise<Run> {
  const r = await app.rest('POST', '/v1/admin/reconciliations/execute', { headers });
  expect(r.status, r.text).toBe(201);
  expect(r.headers.get('location')).toBe(`/v1/admin/reconciliations/${r.body.id}`);
  return r.body as Run;
}
const summaryOf = (run: Run, assetNetworkId: string) => run.summaries.find((s) => s.assetNetworkId === assetNetworkId)!;
const divergencesOf = (run: Run, assetNetworkId: string) => run.divergences.filter((d) => d.assetNetworkId === assetNetworkId);
const resolve = (reconciliationId: string, body: unknown, headers = op) =>
  app.rest('POST', `/v1/admin/reconciliations/${reconciliationId}/resolve-divergence`, { body, headers });
const clearing = (assetNetworkId: string) => ({ kind: 'CHAIN_CLEARING', assetNetworkId });

describe('AdminExecuteReconciliation', () => {
  test('a clean run after normal deposits finds nothing; GET and the search show it; audited', async () => {
    const { f } = await fundedTransaction(app, 1_000_000n);
    const run = await execute();
    expect(run).toMatchObject({ trigger: 'OPERATOR', status: 'COMPLETED' });
    expect(run.operatorId).toBeTruthy();
    expect(summaryOf(run, f.catalog.assetNetworkId)).toMatchObject({
      skipped: false,
      ledger: '1000000',
      chain: '1000000',
      inFlightOut: '0',
      pendingIn: '0',
      rejectedIn: '0',
      observed: '1000000',
      addresses: 1,
      divergences: 0,
    });
    expect(divergencesOf(run, f.catalog.assetNetworkId)).toEqual([]);

    const got = await app.rest('GET', `/v1/admin/reconciliations/${run.id}`, { headers: op });
    expect(got.status, got.text).toBe(200);
    expect(got.body).toEqual(run);
    const page = await app.rest('GET', '/v1/admin/reconciliations?take=1', { headers: op });
    expect(page.status, page.text).toBe(200);
    expect(page.body).toMatchObject({ skip: 0, take: 1, items: [{ id: run.id }] });
    expect(page.body.total).toBeGreaterThanOrEqual(1);
    expect((await app.rest('GET', '/v1/admin/reconciliations?take=501', { headers: op })).status).toBe(400);

    const audit = await app.rest('GET', `/v1/admin/audit-log?entityType=Reconciliation&entityId=${run.id}`, { headers: op });
    expect(audit.body.items).toMatchObject([{ action: 'reconciliation.executed', actorType: 'OPERATOR', organizationId: null }]);

    // A deposit in progress (mined below the required depth) is explained, not a divergence.
    const fx = (await fundedTransaction(app, 10n)).f; // requiredConfirmations 1
    const pi = await createIntent(app, fx, { amount: '700' });
    await sandboxSend(app, fx.apiKeyHeaders, { address: pi.address, amount: 700n, assetNetworkId: fx.catalog.assetNetworkId });
    await sandboxMine(app, fx.apiKeyHeaders, fx.catalog.networkId, 1);
    await drainChainSync(app); // DETECTED -> CONFIRMED at 1 confirmation: credited
    expect(divergencesOf(await execute(), fx.catalog.assetNetworkId)).toEqual([]);
  });

  test('a refund broadcast but not mined is in flight, not a divergence; once mined the chain agrees', async () => {
    const { f, transactionId } = await fundedTransaction(app, 1_000_000n);
    const an = f.catalog.assetNetworkId;
    const r = await app.rest('POST', `/v1/transactions/${transactionId}/refunds`, { headers: f.apiKeyHeaders, body: { amount: '250000' } });
    expect(r.status, r.text).toBe(201);
    await drainMoneyWork(app);
    const refund = await app.deps.db.refund.findFirstOrThrow({ where: { transactionId } });
    expect(refund.status).toBe('EXECUTED');
    const net = refund.netAmount!.toFixed(0);
    const left = (1_000_000n - BigInt(net)).toString();

    const run = await execute();
    expect(divergencesOf(run, an)).toEqual([]);
    expect(summaryOf(run, an)).toMatchObject({ ledger: left, chain: '1000000', inFlightOut: net, outMinedNotPosted: '0', observed: left });

    await sandboxMine(app, f.apiKeyHeaders, f.catalog.networkId, 1);
    const mined = await execute();
    expect(divergencesOf(mined, an)).toEqual([]);
    expect(summaryOf(mined, an)).toMatchObject({ ledger: left, chain: left, inFlightOut: '0', observed: left });
  });

  test('a sweep to a treasury controlled address moves value between platform addresses: never a divergence', async () => {
    const { f, intent } = await fundedTransaction(app, 1_000_000n);
    const an = f.catalog.assetNetworkId;
    const hot = await app.rest('POST', '/v1/admin/treasury/controlled-addresses', {
      headers: op,
      body: { assetNetworkIds: [an], tier: 'HOT', control: 'GENERATED', label: 'hot' },
    });
    expect(hot.status, hot.text).toBe(201);
    const hotId = hot.headers.get('location')!.split('/').pop()!;
    const da = await app.deps.db.depositAddress.findFirstOrThrow({ where: { address: intent.address } });
    const sweep = await app.rest('POST', '/v1/admin/treasury/sweeps', {
      headers: op,
      body: { assetNetworkId: an, fromDepositAddressId: da.id, toControlledAddressId: hotId },
    });
    expect(sweep.status, sweep.text).toBe(201);

    const pending = await execute();
    expect(divergencesOf(pending, an)).toEqual([]);
    expect(summaryOf(pending, an)).toMatchObject({ ledger: '1000000', chain: '1000000', observed: '1000000', addresses: 2 });

    await sandboxMine(app, f.apiKeyHeaders, f.catalog.networkId, 1);
    await drainMoneyWork(app);
    const mined = await execute();
    expect(divergencesOf(mined, an)).toEqual([]);
    expect(summaryOf(mined, an)).toMatchObject({ ledger: '1000000', chain: '1000000', observed: '1000000', addresses: 2 });
  });

  test('a ledger correction that moves CHAIN_CLEARING without the chain: BALANCE_MISMATCH, resolved by a correction, then clean', async () => {
    const { f } = await fundedTransaction(app, 1_000_000n);
    const an = f.catalog.assetNetworkId;
    const planted = await app.rest('POST', '/v1/admin/ledger-corrections', {
      headers: op,
      body: {
        reason: 'planted',
        organizationId: f.organizationId,
        lines: [
          { account: clearing(an), direction: 'DEBIT', amount: '250' },
          { account: { kind: 'SUSPENSE', assetNetworkId: an }, direction: 'CREDIT', amount: '250' },
        ],
      },
    });
    expect(planted.status, planted.text).toBe(201);

    const run = await execute();
    const found = divergencesOf(run, an);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({
      kind: 'BALANCE_MISMATCH',
      expected: '1000250',
      observed: '1000000',
      difference: '-250',
      status: 'OPEN',
      resolution: null,
    });
    expect(found[0]!.details).toMatchObject({ chain: '1000000', inFlightOut: '0', uncreditedTransfers: '0', creditedNotOnChain: '0' });
    expect(summaryOf(run, an)).toMatchObject({ ledger: '1000250', observed: '1000000', divergences: 1 });

    // The dashboard shows the latest run's open divergences.
    const dash = await app.rest('GET', '/v1/admin/dashboard', { headers: op });
    expect(dash.body.openDivergences).toContainEqual({
      reconciliationId: run.id,
      id: found[0]!.id,
      assetNetworkId: an,
      kind: 'BALANCE_MISMATCH',
      difference: '-250',
    });

    // Validation: nothing changes.
    const lines = [
      { account: { kind: 'SUSPENSE', assetNetworkId: an }, direction: 'DEBIT', amount: '250' },
      { account: clearing(an), direction: 'CREDIT', amount: '250' },
    ];
    const bad = await resolve(run.id, { divergenceId: found[0]!.id, resolution: 'CORRECTION', reason: 'x' });
    expect(bad.status, bad.text).toBe(400);
    expect(bad.body.errors).toEqual([{ field: 'lines', message: 'are required for a CORRECTION', code: expect.any(String) }]);
    expect((await resolve(run.id, { divergenceId: found[0]!.id, resolution: 'ACCEPT_CHAIN', reason: 'x', lines })).status).toBe(400);
    expect((await resolve(run.id, { divergenceId: found[0]!.id, resolution: 'MAYBE', reason: 'x' })).status).toBe(400);
    const unbalanced = await resolve(run.id, {
      divergenceId: found[0]!.id,
      resolution: 'CORRECTION',
      reason: 'x',
      organizationId: f.organizationId,
      lines: [lines[0], { ...lines[1], amount: '249' }],
    });
    expect(unbalanced.status, unbalanced.text).toBe(400);
    const ledgerBefore = await app.deps.db.ledgerTransaction.count();

    const ok = await resolve(run.id, {
      divergenceId: found[0]!.id,
      resolution: 'CORRECTION',
      reason: 'undo the planted correction',
      organizationId: f.organizationId,
      lines,
    });
    expect(ok.status, ok.text).toBe(204);
    expect(await app.deps.db.ledgerTransaction.count()).toBe(ledgerBefore + 1);
    const after = (await app.rest('GET', `/v1/admin/reconciliations/${run.id}`, { headers: op })).body as Run;
    const resolved = after.divergences.find((d) => d.id === found[0]!.id)!;
    expect(resolved).toMatchObject({ status: 'RESOLVED', resolution: 'CORRECTION', resolutionReason: 'undo the planted correction' });
    expect(resolved.resolvedByOperatorId).toBeTruthy();
    const correction = await app.rest('GET', `/v1/admin/ledger-corrections/${resolved.ledgerCorrectionId}`, { headers: op });
    expect(correction.status, correction.text).toBe(200);
    expect(correction.body).toMatchObject({
      organizationId: f.organizationId,
      idempotencyKey: `reconciliation-divergence:${resolved.id}`,
      reason: `reconciliation divergence ${resolved.id}: undo the planted correction`,
      operatorId: resolved.resolvedByOperatorId,
    });
    const audit = await app.rest('GET', `/v1/admin/audit-log?entityType=ReconciliationDivergence&entityId=${resolved.id}`, { headers: op });
    expect(audit.body.items).toMatchObject([
      { action: 'reconciliation.divergence.resolved', after: { resolution: 'CORRECTION', ledgerCorrectionId: resolved.ledgerCorrectionId } },
    ]);

    // 409 when already resolved (either way), nothing posted.
    const again = await resolve(run.id, { divergenceId: found[0]!.id, resolution: 'ACCEPT_CHAIN', reason: 'again' });
    expect(again.status, again.text).toBe(409);
    expect(again.body.code).toBe('INVALID_STATE');
    expect(await app.deps.db.ledgerTransaction.count()).toBe(ledgerBefore + 1);

    // Run again: the ledger and the chain agree.
    const next = await execute();
    expect(divergencesOf(next, an)).toEqual([]);
    expect(summaryOf(next, an)).toMatchObject({ ledger: '1000000', observed: '1000000' });

    // 404: a divergence of another reconciliation; an unknown reconciliation.
    expect((await resolve(next.id, { divergenceId: found[0]!.id, resolution: 'ACCEPT_CHAIN', reason: 'x' })).status).toBe(404);
    expect((await resolve(crypto.randomUUID(), { divergenceId: found[0]!.id, resolution: 'ACCEPT_CHAIN', reason: 'x' })).status).toBe(404);
    expect((await app.rest('GET', `/v1/admin/reconciliations/${crypto.randomUUID()}`, { headers: op })).status).toBe(404);
  });

  test('a mined transfer no deposit records: UNCREDITED_TRANSFER with its amount, accepted without a ledger change', async () => {
    const { f } = await fundedTransaction(app, 1_000_000n);
    const an = f.catalog.assetNetworkId;
    const pi = await createIntent(app, f, { amount: '5000' });
    const { txHash } = await sandboxSend(app, f.apiKeyHeaders, { address: pi.address, amount: 5000n, assetNetworkId: an });
    await sandboxMine(app, f.apiKeyHeaders, f.catalog.networkId, 1); // at depth; chain.sync not run yet

    const run = await execute();
    const found = divergencesOf(run, an);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ kind: 'UNCREDITED_TRANSFER', expected: '0', observed: '5000', difference: '5000' });
    expect(found[0]!.details).toMatchObject({ txHash, toAddress: pi.address, depositId: null, depositStatus: null, confirmations: 1 });
    expect(summaryOf(run, an)).toMatchObject({ ledger: '1000000', chain: '1005000', observed: '1000000', addresses: 2 });

    const ledgerBefore = await app.deps.db.ledgerTransaction.count();
    const ok = await resolve(run.id, { divergenceId: found[0]!.id, resolution: 'ACCEPT_CHAIN', reason: 'chain.sync had not run yet' });
    expect(ok.status, ok.text).toBe(204);
    expect(await app.deps.db.ledgerTransaction.count()).toBe(ledgerBefore);
    const g = await app.gql(`query($id: ID!) { reconciliation(id: $id) { divergences { id status resolution ledgerCorrectionId } } }`, { id: run.id }, op);
    expect((g.data as { reconciliation: { divergences: unknown[] } }).reconciliation.divergences).toContainEqual({
      id: found[0]!.id,
      status: 'RESOLVED',
      resolution: 'ACCEPT_CHAIN',
      ledgerCorrectionId: null,
    });

    await drainMoneyWork(app); // the deposit is credited
    const next = await execute();
    expect(divergencesOf(next, an)).toEqual([]);
    expect(summaryOf(next, an)).toMatchObject({ ledger: '1005000', chain: '1005000' });
  });

  test('a credited deposit reorganized away before chain.sync: DEPOSIT_NOT_ON_CHAIN (and no balance mismatch)', async () => {
    const { f } = await fundedTransaction(app, 300_000n);
    const an = f.catalog.assetNetworkId;
    await sandboxReorg(app, f.apiKeyHeaders, f.catalog.networkId, 1, false);

    const run = await execute();
    const found = divergencesOf(run, an);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ kind: 'DEPOSIT_NOT_ON_CHAIN', expected: '300000', observed: '0', difference: '-300000' });
    expect(found[0]!.details).toMatchObject({ depositStatus: 'CONFIRMED', chainStatus: 'ORPHANED', organizationId: f.organizationId });
    expect(summaryOf(run, an)).toMatchObject({ ledger: '300000', chain: '0', observed: '300000' });

    const ok = await resolve(run.id, { divergenceId: found[0]!.id, resolution: 'ACCEPT_CHAIN', reason: 'reorg: AdminResolveDepositReorg decides' });
    expect(ok.status, ok.text).toBe(204);
  });

  test('the scheduled job runs the same reconciliation, by the schedule', async () => {
    const { f } = await fundedTransaction(app, 42n);
    const run = await reconcileJob(moneyDeps(app));
    expect(run).toMatchObject({ trigger: 'SCHEDULE', operatorId: null, status: 'COMPLETED' });
    const got = (await app.rest('GET', `/v1/admin/reconciliations/${run.id}`, { headers: op })).body as Run;
    expect(summaryOf(got, f.catalog.assetNetworkId)).toMatchObject({ ledger: '42', chain: '42', observed: '42', divergences: 0 });
    const audit = await app.rest('GET', `/v1/admin/audit-log?entityType=Reconciliation&entityId=${run.id}`, { headers: op });
    expect(audit.body.items).toMatchObject([{ action: 'reconciliation.executed', actorType: 'SYSTEM' }]);
  });

  test('operators only, on every route and field', async () => {
    const m = await signUpMember(app);
    const key = await createApiKey(app, m);
    const run = await execute();
    const calls = [
      () => ['POST', '/v1/admin/reconciliations/execute', undefined],
      () => ['POST', `/v1/admin/reconciliations/${run.id}/resolve-divergence`, { divergenceId: crypto.randomUUID(), resolution: 'ACCEPT_CHAIN', reason: 'x' }],
      () => ['GET', '/v1/admin/reconciliations', undefined],
      () => ['GET', `/v1/admin/reconciliations/${run.id}`, undefined],
    ] as const;
    const before = await app.deps.db.reconciliation.count();
    for (const [who, headers, status] of [
      ['member', m.headers, 403],
      ['API key', key.headers, 403],
      ['nobody', {}, 401],
    ] as const) {
      for (const c of calls) {
        const [method, path, body] = c() as unknown as readonly [string, string, unknown];
        const r = await app.rest(method as 'GET', path, { headers, ...(body ? { body } : {}) });
        expect(r.status, `${who} ${method} ${path}`).toBe(status);
      }
      for (const q of [
        'mutation { adminExecuteReconciliation { id } }',
        `query { reconciliation(id: "${run.id}") { id } }`,
        'query { reconciliations(first: 1) { totalCount } }',
        `mutation { adminResolveReconciliationDivergence(reconciliationId: "${run.id}", input: { divergenceId: "${crypto.randomUUID()}", resolution: "ACCEPT_CHAIN", reason: "x" }) { id } }`,
      ]) {
        const g = await app.gql(q, {}, headers);
        expect(g.data, `${who} ${q}`).toBeNull();
        expect(g.errors?.[0]?.extensions?.code).toBe(status === 401 ? 'UNAUTHENTICATED' : 'PRINCIPAL_NOT_ALLOWED');
      }
    }
    expect(await app.deps.db.reconciliation.count()).toBe(before);
  });
});
