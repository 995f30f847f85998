import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { createOperator, createTestApp, type TestApp } from '../../test/harness';
import { checkLedgerInvariants } from '../../test/ledger-invariants';
import { sandboxDrop, sandboxReplace } from '../../test/money-helpers';
import { eventsOf } from '../../test/fixtures/deposits/testing';
import { drainMoneyWork } from '../../test/fixtures/settlements/testing';
import { STUCK_AFTER_MS } from './withdrawals';
import { withdrawalTesting, type WithdrawalSetup } from '../../test/fixtures/withdrawals/testing';

/**
 * AdminResolveWithdrawalReconciliation through REST and GraphQL: withdrawals brought to
 * REQUIRES_RECONCILIATION on the sandbox chain (dropped, replaced, stuck), then resolved by an
 * operator, each decision checked against the chain. Every test ends with the ledger invariants.
 */
let app: TestApp;
let op: { operatorId: string; headers: Record<string, string> };
beforeAll(async () => {
  app = await createTestApp();
  op = await createOperator(app);
});
afterAll(() => app.close());
afterEach(() => checkLedgerInvariants(app.deps.db));

// ------------------------------------------------------------------------------------------------
// Helpers (the fixtures of withdrawals.test.ts)

const DEST = '0x00000000000000000000000000000000000000d3';
const { idOf, setup, sweep, balance, get, withdrawalEvents, mine } = withdrawalTesting(() => app, DEST);
type Setup = WithdrawalSetup;
/** A custodial withdrawal of `amount`, broadcast; answers its id and transaction hash. */
async function broadcast(s: Setup, amount: bigint): Promise<{ id: string; txHash: string }> {
  const r = await app.rest('POST', `/v1/accounts/${s.accountId}/withdrawals`, {
    headers: s.f.apiKeyHeaders,
    body: { amount: amount.toString(), assetNetworkId: s.f.catalog.assetNetworkId, withdrawalDestinationId: s.destinationId },
  });
  expect(r.status, r.text).toBe(201);
  await drainMoneyWork(app);
  const w = await get(s, idOf(r));
  expect(w.status).toBe('BROADCAST');
  return { id: w.id, txHash: w.txHash };
}
const resolve = (id: string, body: Record<string, unknown>, headers: Record<string, string> = op.headers) =>
  app.rest('POST', `/v1/admin/withdrawals/${id}/resolve-reconciliation`, { headers, body });
const resolveGql = (id: string, input: Record<string, unknown>, headers: Record<string, string> = op.headers) =>
  app.gql<any>(
    'mutation($id: ID!, $i: ResolveWithdrawalReconciliationInput!) { ' +
      'adminResolveWithdrawalReconciliation(withdrawalId: $id, input: $i) { id status txHash failureReason } }',
    { id, i: input },
    headers,
  );
const resolutionAudits = (id: string) =>
  app.deps.db.auditLogEntry.findMany({
    where: { entityType: 'Withdrawal', entityId: id, action: 'withdrawal.reconciliation_resolved' },
    orderBy: { id: 'asc' },
  });

// ------------------------------------------------------------------------------------------------

describe('resolve FAILED', () => {
  test('dropped -> REQUIRES_RECONCILIATION -> FAILED: the hold is released, withdrawal.failed; CONFIRMED refused first; a second resolution 409', async () => {
    const s = await setup();
    const { id, txHash } = await broadcast(s, 300_000n);
    await sandboxDrop(app, s.f.apiKeyHeaders, txHash);
    expect((await sweep(s)).REQUIRES_RECONCILIATION).toBe(1);
    expect(await balance(s)).toEqual({ posted: 1_000_000n, available: 700_000n });

    // Nothing was mined: CONFIRMED is refused with the chain's state, nothing changes.
    const confirmed = await resolve(id, { outcome: 'CONFIRMED', reason: 'the customer says it arrived' });
    expect([confirmed.status, confirmed.body.code, confirmed.body.detail]).toEqual([
      409,
      'INVALID_STATE',
      expect.stringContaining('DROPPED on the chain, not MINED'),
    ]);
    expect((await get(s, id)).status).toBe('REQUIRES_RECONCILIATION');

    const r = await resolve(id, { outcome: 'FAILED', reason: 'dropped from the mempool' });
    expect([r.status, r.text]).toEqual([204, '']);
    expect(await get(s, id)).toMatchObject({ status: 'FAILED', txHash, failureReason: 'RECONCILED_FAILED: dropped from the mempool' });
    expect(await balance(s)).toEqual({ posted: 1_000_000n, available: 1_000_000n });
    expect(await withdrawalEvents(s, id)).toEqual(['requested', 'approved', 'broadcast', 'requires_reconciliation', 'failed']);
    const failed = (await eventsOf(app, s.f.organizationId)).find((e) => e.type === 'withdrawal.failed' && e.body.WithdrawalId === id);
    expect(failed!.body).toEqual({ WithdrawalId: id, Reason: 'RECONCILED_FAILED: dropped from the mempool' });
    const [audit, ...more] = await resolutionAudits(id);
    expect(more).toEqual([]);
    expect(audit).toMatchObject({
      actorType: 'OPERATOR',
      actorId: op.operatorId,
      organizationId: s.f.organizationId,
      before: { status: 'REQUIRES_RECONCILIATION', txHash },
      after: {
        status: 'FAILED',
        outcome: 'FAILED',
        reason: 'dropped from the mempool',
        operatorId: op.operatorId,
        originalTxHash: txHash,
        txHash,
        chain: [{ txHash, status: 'DROPPED' }],
      },
    });

    // Resolved once: again 409 (either outcome), nothing changes.
    for (const outcome of ['FAILED', 'CONFIRMED']) {
      const again = await resolve(id, { outcome, reason: 'again' });
      expect([again.status, again.body.detail]).toEqual([409, expect.stringContaining('this one is FAILED')]);
    }
    expect(await balance(s)).toEqual({ posted: 1_000_000n, available: 1_000_000n });
    expect(await withdrawalEvents(s, id)).toHaveLength(5);
  });

  test('stuck (still pending): FAILED 409 "drop it or wait", CONFIRMED 409; once dropped, FAILED through GraphQL', async () => {
    const s = await setup();
    const { id, txHash } = await broadcast(s, 200_000n);
    app.clock.advance(STUCK_AFTER_MS);
    expect((await sweep(s)).REQUIRES_RECONCILIATION).toBe(1);
    expect(await get(s, id)).toMatchObject({ status: 'REQUIRES_RECONCILIATION', failureReason: expect.stringMatching(/^STUCK/) });

    const pending = await resolve(id, { outcome: 'FAILED', reason: 'stuck for an hour' });
    expect([pending.status, pending.body.detail]).toEqual([409, expect.stringContaining('still pending on the chain (PENDING): drop it or wait')]);
    const notMined = await resolve(id, { outcome: 'CONFIRMED', reason: 'x' });
    expect([notMined.status, notMined.body.detail]).toEqual([409, expect.stringContaining('PENDING on the chain, not MINED')]);
    expect((await get(s, id)).status).toBe('REQUIRES_RECONCILIATION');
    expect(await balance(s)).toEqual({ posted: 1_000_000n, available: 800_000n });
    expect(await resolutionAudits(id)).toEqual([]);

    await sandboxDrop(app, s.f.apiKeyHeaders, txHash);
    const g = await resolveGql(id, { outcome: 'FAILED', reason: 'dropped after the deadline' });
    expect(g.errors).toBeUndefined();
    expect(g.data!.adminResolveWithdrawalReconciliation).toEqual({
      id,
      status: 'FAILED',
      txHash,
      failureReason: 'RECONCILED_FAILED: dropped after the deadline',
    });
    expect(await balance(s)).toEqual({ posted: 1_000_000n, available: 1_000_000n });
    expect(await withdrawalEvents(s, id)).toEqual(['requested', 'approved', 'broadcast', 'requires_reconciliation', 'failed']);
  });
});

describe('resolve FAILED and the network resource reserve', () => {
  test("nothing was mined, so no gas was paid: the withdrawal's reserve consumption is released (once)", async () => {
    const s = await setup();
    const reserve = async () =>
      (await app.rest('GET', `/v1/admin/network-resource-reserve/${s.f.catalog.assetNetworkId}/balance`, { headers: op.headers })).body;
    const seeded = await app.rest('POST', '/v1/admin/network-resource-reserve/seed', {
      headers: op.headers,
      body: { assetNetworkId: s.f.catalog.assetNetworkId, amount: '1000000' },
    });
    expect(seeded.status, seeded.text).toBe(200);
    const { id, txHash } = await broadcast(s, 50_000n);
    // The broadcast consumed the network cost (reference Withdrawal/<id>:1).
    expect(BigInt((await reserve()).balance)).toBeLessThan(1_000_000n);
    await sandboxDrop(app, s.f.apiKeyHeaders, txHash);
    await sweep(s);
    expect((await resolve(id, { outcome: 'FAILED', reason: 'dropped' })).status).toBe(204);
    expect((await reserve()).balance).toBe('1000000');
    const releases = await app.deps.db.networkResourceReserveMovement.findMany({
      where: { referenceType: 'Withdrawal', referenceId: `${id}:1`, kind: 'RELEASE' },
    });
    expect(releases).toHaveLength(1);
    expect((await resolutionAudits(id))[0]!.after).toMatchObject({ reserveReleased: expect.not.stringMatching(/^0$/) });
  });
});

describe('resolve CONFIRMED', () => {
  test('replaced -> the replacement mined -> CONFIRMED with its hash: the hold posted once, withdrawal.confirmed carries the replacement hash', async () => {
    const s = await setup();
    const { id, txHash } = await broadcast(s, 400_000n);
    const replacement = await sandboxReplace(app, s.f.apiKeyHeaders, txHash);
    expect((await sweep(s)).REQUIRES_RECONCILIATION).toBe(1);
    expect(await get(s, id)).toMatchObject({ status: 'REQUIRES_RECONCILIATION', failureReason: expect.stringMatching(/^REPLACED/) });

    // Not mined yet: both outcomes refused.
    const early = await resolve(id, { outcome: 'CONFIRMED', reason: 'x', txHash: replacement.txHash });
    expect([early.status, early.body.detail]).toEqual([409, expect.stringContaining('PENDING on the chain, not MINED')]);
    expect((await resolve(id, { outcome: 'FAILED', reason: 'x' })).body.detail).toContain(`${replacement.txHash} is still pending`);

    await mine(s);
    // The default hash is the replaced original: refused, naming the replacement.
    const original = await resolve(id, { outcome: 'CONFIRMED', reason: 'x' });
    expect([original.status, original.body.detail]).toEqual([409, expect.stringContaining(`replaced by ${replacement.txHash}: name that one`)]);
    // The value left: FAILED is refused.
    const failed = await resolve(id, { outcome: 'FAILED', reason: 'x' });
    expect([failed.status, failed.body.detail]).toEqual([409, expect.stringContaining('was MINED')]);
    expect(await balance(s)).toEqual({ posted: 1_000_000n, available: 600_000n });
    // Reconciliation follows the replacement: mined, not posted yet, so the ledger and the chain agree.
    const run = await app.rest('POST', '/v1/admin/reconciliations/execute', { headers: op.headers });
    expect(run.status, run.text).toBe(201);
    const summary = (run.body.summaries as Record<string, any>[]).find((x) => x.assetNetworkId === s.f.catalog.assetNetworkId)!;
    expect(summary).toMatchObject({ outMinedNotPosted: '400000', divergences: 0 });

    const g = await resolveGql(id, { outcome: 'CONFIRMED', reason: 'fee-bumped; the replacement was mined', txHash: replacement.txHash });
    expect(g.errors).toBeUndefined();
    expect(g.data!.adminResolveWithdrawalReconciliation).toEqual({ id, status: 'CONFIRMED', txHash: replacement.txHash, failureReason: null });
    expect(await get(s, id)).toMatchObject({ status: 'CONFIRMED', txHash: replacement.txHash, confirmedAt: expect.any(String) });
    expect(await balance(s)).toEqual({ posted: 600_000n, available: 600_000n });
    expect(await withdrawalEvents(s, id)).toEqual(['requested', 'approved', 'broadcast', 'requires_reconciliation', 'confirmed']);
    const events = (await eventsOf(app, s.f.organizationId)).filter((e) => e.body.WithdrawalId === id);
    expect(events[2]!.body).toEqual({ WithdrawalId: id, TechnicalReference: txHash });
    expect(events[4]!.body).toEqual({ WithdrawalId: id, TechnicalReference: replacement.txHash });
    const [audit] = await resolutionAudits(id);
    expect(audit).toMatchObject({
      actorType: 'OPERATOR',
      actorId: op.operatorId,
      before: { status: 'REQUIRES_RECONCILIATION', txHash, failureReason: expect.stringMatching(/^REPLACED/) },
      after: {
        status: 'CONFIRMED',
        outcome: 'CONFIRMED',
        reason: 'fee-bumped; the replacement was mined',
        operatorId: op.operatorId,
        originalTxHash: txHash,
        txHash: replacement.txHash,
        confirmations: 1,
      },
    });

    // Once: again 409, and the sweep does not touch it.
    expect((await resolve(id, { outcome: 'CONFIRMED', reason: 'x', txHash: replacement.txHash })).status).toBe(409);
    expect((await sweep(s)).CONFIRMED).toBe(0);
    expect(await balance(s)).toEqual({ posted: 600_000n, available: 600_000n });
  });

  test(
    "the chain must match the withdrawal: a replacement of another amount, or another withdrawal's transaction, is " + 'refused (409) and nothing changes',
    async () => {
      const s = await setup();
      const other = await broadcast(s, 100_000n);
      const { id, txHash } = await broadcast(s, 100_000n);
      const smaller = await sandboxReplace(app, s.f.apiKeyHeaders, txHash, 99_000n);
      await mine(s);
      const counts = await sweep(s);
      expect([counts.REQUIRES_RECONCILIATION, counts.CONFIRMED]).toEqual([1, 1]);
      expect((await get(s, other.id)).status).toBe('CONFIRMED');

      const short = await resolve(id, { outcome: 'CONFIRMED', reason: 'x', txHash: smaller.txHash });
      expect([short.status, short.body.detail]).toEqual([
        409,
        expect.stringMatching(/moves 99000 of asset-network .* the withdrawal is 100000 .* does not settle this withdrawal/),
      ]);
      // Another withdrawal's mined transaction (same figures): not this withdrawal's chain.
      const foreign = await resolve(id, { outcome: 'CONFIRMED', reason: 'x', txHash: other.txHash });
      expect([foreign.status, foreign.body.detail]).toEqual([409, expect.stringContaining("neither the withdrawal's transaction")]);
      // Value left (99,000): FAILED refused too; it stays for a ledger correction.
      expect((await resolve(id, { outcome: 'FAILED', reason: 'x' })).status).toBe(409);
      expect(await get(s, id)).toMatchObject({ status: 'REQUIRES_RECONCILIATION', txHash });
      expect(await balance(s)).toEqual({ posted: 900_000n, available: 800_000n });
      expect(await withdrawalEvents(s, id)).toEqual(['requested', 'approved', 'broadcast', 'requires_reconciliation']);
      expect(await resolutionAudits(id)).toEqual([]);
    },
  );
});

describe('refusals', () => {
  test('operators only (members and API keys 403, REST and GraphQL); another state 409; unknown 404; bad bodies 400 and nothing changed', async () => {
    const s = await setup();
    const { id, txHash } = await broadcast(s, 100_000n);
    // BROADCAST, not REQUIRES_RECONCILIATION: 409.
    const early = await resolve(id, { outcome: 'FAILED', reason: 'x' });
    expect([early.status, early.body.detail]).toEqual([409, expect.stringContaining('this one is BROADCAST')]);
    await sandboxDrop(app, s.f.apiKeyHeaders, txHash);
    await sweep(s);

    for (const headers of [s.f.member.headers, s.f.apiKeyHeaders]) {
      const r = await resolve(id, { outcome: 'FAILED', reason: 'x' }, headers);
      expect([r.status, r.body.code]).toEqual([403, 'PRINCIPAL_NOT_ALLOWED']);
      const g = await resolveGql(id, { outcome: 'FAILED', reason: 'x' }, headers);
      expect(g.errors?.[0]?.extensions?.code).toBe('PRINCIPAL_NOT_ALLOWED');
    }
    expect((await resolve(crypto.randomUUID(), { outcome: 'FAILED', reason: 'x' })).status).toBe(404);
    expect((await resolve('not-an-id', { outcome: 'FAILED', reason: 'x' })).status).toBe(404);

    for (const body of [
      { outcome: 'MAYBE', reason: 'x' },
      { outcome: 'FAILED', reason: ' ' },
      { outcome: 'FAILED', reason: 'x'.repeat(1001) },
      { outcome: 'FAILED' },
      { outcome: 'FAILED', reason: 'x', txHash },
      { outcome: 'CONFIRMED', reason: 'x', txHash: 'two words' },
      { outcome: 'FAILED', reason: 'x', extra: 1 },
    ]) {
      const r = await resolve(id, body);
      expect([r.status, r.body.code], JSON.stringify(body)).toEqual([400, 'VALIDATION_FAILED']);
    }
    const field = await resolve(id, { outcome: 'FAILED', reason: 'x', txHash });
    expect(field.body.errors).toEqual([{ field: 'txHash', message: expect.stringContaining('only with outcome CONFIRMED'), code: expect.any(String) }]);
    expect((await resolve(id, {})).status).toBe(400);
    expect(await get(s, id)).toMatchObject({ status: 'REQUIRES_RECONCILIATION' });
    expect(await balance(s)).toEqual({ posted: 1_000_000n, available: 900_000n });
    expect(await resolutionAudits(id)).toEqual([]);
  });
});
