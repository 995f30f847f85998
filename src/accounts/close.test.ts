import { describe, expect, test } from 'vitest';
import { moneySuite } from '../../test/money-suite';
import { drainMoneyWork, fundedTransaction } from '../../test/fixtures/settlements/testing';
import { moneyFixture } from '../../test/fixtures/deposits/testing';
import { postLedgerTransaction } from '../ledger/ledger';
import { withdrawalTesting } from '../../test/fixtures/withdrawals/testing';

/**
 * Issue 25, point 2: closing (DELETE /v1/accounts/{id}, terminal) refuses with 409 an account that
 * holds or awaits money, and says what: a non-zero posted or pending balance, a pending hold, an open
 * withdrawal, settlement or refund naming it, a retained portion. The check is made after the status
 * change in the close's transaction, so a posting in flight is either seen or refused.
 */
const suite = moneySuite();

const DEST = '0x00000000000000000000000000000000000000c7';
const { idOf, setup, sweep, balance, get, mine } = withdrawalTesting(() => suite.app, DEST);

const closeAccount = (accountId: string, headers: Record<string, string>) => suite.app.rest('DELETE', `/v1/accounts/${accountId}`, { headers });
const statusOf = async (accountId: string) => (await suite.app.deps.db.account.findUniqueOrThrow({ where: { id: accountId } })).status;

describe('closing an account that holds or awaits money', () => {
  test('a posted balance, then an open withdrawal awaiting approval: 409 saying which; closed (204) once empty and finished', async () => {
    const s = await setup();
    const c1 = await closeAccount(s.accountId, s.f.member.headers);
    expect([c1.status, c1.body.code]).toEqual([409, 'INVALID_STATE']);
    expect(c1.body.detail).toMatch(new RegExp(`balance: asset-network ${s.f.catalog.assetNetworkId} posted 1000000`));
    expect(await statusOf(s.accountId)).toBe('ACTIVE');

    const policy = await suite.app.rest('POST', `/v1/admin/organizations/${s.f.organizationId}/withdrawal-policy`, {
      headers: suite.op.headers,
      body: { approvalThreshold: '500000' },
    });
    expect(policy.status).toBe(204);
    const big = await suite.app.rest('POST', `/v1/accounts/${s.accountId}/withdrawals`, {
      headers: s.f.apiKeyHeaders,
      body: { amount: '1000000', assetNetworkId: s.f.catalog.assetNetworkId, withdrawalDestinationId: s.destinationId },
    });
    expect(big.status, big.text).toBe(201);
    const id = idOf(big);
    const c2 = await closeAccount(s.accountId, s.f.member.headers);
    expect(c2.status).toBe(409);
    expect(c2.body.detail).toContain(`open withdrawal: ${id} (PENDING_APPROVAL)`);
    expect(c2.body.detail).toMatch(/pending out 1000000/);
    expect(c2.body.detail).toMatch(/pending hold: /);
    expect(await statusOf(s.accountId)).toBe('ACTIVE');

    // The operator approves it; it is sent from the ACTIVE account and confirmed; nothing is left: 204.
    expect((await suite.app.rest('POST', `/v1/admin/withdrawals/${id}/approve`, { headers: suite.op.headers })).status).toBe(204);
    await drainMoneyWork(suite.app);
    await mine(s);
    await sweep(s);
    expect((await get(s, id)).status).toBe('CONFIRMED');
    expect(await balance(s)).toEqual({ posted: 0n, available: 0n });
    const c3 = await closeAccount(s.accountId, s.f.member.headers);
    expect([c3.status, c3.text]).toEqual([204, '']);
    expect(await statusOf(s.accountId)).toBe('CLOSED');
  });

  test('a pending settlement, a pending refund or a retained portion naming it: 409 saying which', async () => {
    // A settlement requested, not executed yet.
    const a = await fundedTransaction(suite.app, 500_000n);
    const s = await suite.app.rest('POST', `/v1/transactions/${a.transactionId}/settlements`, { headers: a.f.apiKeyHeaders });
    expect(s.status, s.text).toBe(201);
    const c1 = await closeAccount(a.f.beneficiaryAccountId, a.f.member.headers);
    expect([c1.status, c1.body.detail]).toEqual([409, expect.stringContaining(`open settlement: ${idOf(s)} (PENDING)`)]);
    expect(c1.body.detail).not.toMatch(/balance/);
    await drainMoneyWork(suite.app);

    // A refund requested, not executed yet.
    const b = await fundedTransaction(suite.app, 500_000n);
    const r = await suite.app.rest('POST', `/v1/transactions/${b.transactionId}/refunds`, { headers: b.f.apiKeyHeaders, body: { amount: '100000' } });
    expect(r.status, r.text).toBe(201);
    const c2 = await closeAccount(b.f.beneficiaryAccountId, b.f.member.headers);
    expect([c2.status, c2.body.detail]).toEqual([409, expect.stringContaining(`pending refund: ${idOf(r)}`)]);
    await drainMoneyWork(suite.app);

    // A portion retained while the account was frozen; unfrozen, but the release job has not run yet.
    const c = await fundedTransaction(suite.app, 500_000n);
    const acc = c.f.beneficiaryAccountId;
    expect((await suite.app.rest('POST', `/v1/accounts/${acc}/freeze`, { headers: c.f.member.headers, body: { reason: 'review' } })).status).toBe(204);
    expect((await suite.app.rest('POST', `/v1/transactions/${c.transactionId}/settlements`, { headers: c.f.apiKeyHeaders })).status).toBe(201);
    await drainMoneyWork(suite.app);
    expect((await suite.app.rest('POST', `/v1/accounts/${acc}/unfreeze`, { headers: c.f.member.headers })).status).toBe(204);
    const c3 = await closeAccount(acc, c.f.member.headers);
    expect([c3.status, c3.body.detail]).toEqual([409, expect.stringMatching(/retained portion: allocation [0-9a-f-]{36} of 500000 \(ACCOUNT_FROZEN\)/)]);
    await drainMoneyWork(suite.app); // released to the account: now its balance keeps it open
    const c4 = await closeAccount(acc, c.f.member.headers);
    expect([c4.status, c4.body.detail]).toEqual([409, expect.stringMatching(/balance: .* posted 500000/)]);
    expect(c4.body.detail).not.toMatch(/retained/);
  });

  test('a credit in flight when the close comes: the close waits for it and refuses (never a CLOSED account holding money)', async () => {
    const f = await moneyFixture(suite.app, { requiredConfirmations: 1 });
    const acc = f.beneficiaryAccountId;
    const an = f.catalog.assetNetworkId;
    let close: ReturnType<typeof closeAccount> | undefined;
    // A posting that credits the account (as a settlement or a retained release does), held open
    // while the close request arrives.
    await suite.app.deps.db.$transaction(async (tx) => {
      await postLedgerTransaction(tx, {
        idempotencyKey: `test:close-race:${acc}`,
        nature: 'test.credit',
        organizationId: f.organizationId,
        postedAt: suite.app.clock.now(),
        lines: [
          { account: { kind: 'CHAIN_CLEARING', ownerId: null, organizationId: null, assetNetworkId: an }, direction: 'DEBIT', amount: 5n },
          { account: { kind: 'CUSTOMER', ownerId: acc, organizationId: f.organizationId, assetNetworkId: an }, direction: 'CREDIT', amount: 5n },
        ],
      });
      close = closeAccount(acc, f.member.headers);
      await new Promise((ok) => setTimeout(ok, 500));
    });
    const r = await close!;
    expect([r.status, r.body.detail]).toEqual([409, expect.stringMatching(/balance: .* posted 5,/)]);
    expect(await statusOf(acc)).toBe('ACTIVE');
  });

  test('an empty account closes (204)', async () => {
    const f = await moneyFixture(suite.app, { requiredConfirmations: 1 });
    const c = await closeAccount(f.beneficiaryAccountId, f.member.headers);
    expect(c.status, c.text).toBe(204);
    expect(await statusOf(f.beneficiaryAccountId)).toBe('CLOSED');
  });
});
