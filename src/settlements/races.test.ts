import { beforeAll, describe, expect, test } from 'vitest';
import { moneySuite } from '../../test/money-suite';
import { moneyDeps, moneyFixture, type MoneyFixture } from '../../test/fixtures/deposits/testing';
import { drainMoneyWork, fundedTransaction } from '../../test/fixtures/settlements/testing';
import { executeSettlement, executeSettlementGroup } from './settlements';
import { executeRefund } from '../refunds/refunds';
import { LedgerError, ledgerAccounts, ledgerMetrics, postLedgerTransaction } from '../ledger/ledger';

/**
 * Racing operations on one transaction never move more than was funded: two settlements, a
 * settlement and a refund, a freeze in the middle, the same job delivered twice. The job handlers
 * run concurrently on separate connections, as two workers would.
 */
const suite = moneySuite();

const AMOUNT = 1_000_000n;

async function funded(f: MoneyFixture, amount = AMOUNT) {
  const { transactionId } = await fundedTransaction(suite.app, amount, f);
  expect((await txOf(f, transactionId)).status).toBe('RESERVED');
  return transactionId;
}

const txOf = async (f: MoneyFixture, id: string) => (await suite.app.rest('GET', `/v1/transactions/${id}`, { headers: f.apiKeyHeaders })).body;
const idOf = (r: { headers: Headers }) => r.headers.get('location')!.split('/').pop()!;

async function pendingSettlement(f: MoneyFixture, transactionId: string, amount: bigint) {
  const r = await suite.app.rest('POST', `/v1/transactions/${transactionId}/settlements`, { headers: f.apiKeyHeaders, body: { amount: amount.toString() } });
  expect(r.status, r.text).toBe(201);
  return idOf(r);
}
async function pendingRefund(f: MoneyFixture, transactionId: string, amount: bigint) {
  const r = await suite.app.rest('POST', `/v1/transactions/${transactionId}/refunds`, { headers: f.apiKeyHeaders, body: { amount: amount.toString() } });
  expect(r.status, r.text).toBe(201);
  return idOf(r);
}
const settlement = async (f: MoneyFixture, id: string) => (await suite.app.rest('GET', `/v1/settlements/${id}`, { headers: f.apiKeyHeaders })).body;
const refund = async (f: MoneyFixture, id: string) => (await suite.app.rest('GET', `/v1/refunds/${id}`, { headers: f.apiKeyHeaders })).body;

/** An account's posted balance in the fixture's asset-network (members read balances). */
async function posted(f: MoneyFixture, accountId: string): Promise<bigint> {
  const r = await suite.app.rest('GET', `/v1/accounts/${accountId}/balances`, { headers: f.member.headers });
  expect(r.status).toBe(200);
  const b = (r.body as { assetNetworkId: string; posted: string }[]).find((x) => x.assetNetworkId === f.catalog.assetNetworkId);
  return b ? BigInt(b.posted) : 0n;
}

/** What left the escrow by the records, which must never exceed what was funded. */
async function moved(f: MoneyFixture, transactionId: string) {
  const t = await txOf(f, transactionId);
  return { t, out: BigInt(t.settledAmount) + BigInt(t.refundedAmount) - BigInt(t.reversedAmount), escrow: BigInt(t.escrowAmount) };
}

describe('races on one transaction', () => {
  let f: MoneyFixture;
  beforeAll(async () => {
    f = await moneyFixture(suite.app, { requiredConfirmations: 1 });
  });

  test('two settlement requests of 60% at once: one is accepted, the other answers 409', async () => {
    const id = await funded(f);
    const ask = () => suite.app.rest('POST', `/v1/transactions/${id}/settlements`, { headers: f.apiKeyHeaders, body: { amount: '600000' } });
    const [a, b] = await Promise.all([ask(), ask()]);
    expect([a.status, b.status].sort()).toEqual([201, 409]);
    await drainMoneyWork(suite.app);
    const { t, out, escrow } = await moved(f, id);
    expect(out).toBe(600_000n);
    expect(escrow).toBe(400_000n);
    expect(t.status).toBe('RESERVED');
  });

  test('a settlement and a refund of 60% each, executed concurrently: exactly one moves money', async () => {
    const id = await funded(f);
    const s = await pendingSettlement(f, id, 600_000n);
    const r = await pendingRefund(f, id, 600_000n);
    const results = await Promise.allSettled([
      executeSettlement(moneyDeps(suite.app), s),
      executeRefund({ ...moneyDeps(suite.app), sealingKey: suite.app.deps.sealingKey } as never, r),
    ]);
    expect(results.map((x) => x.status)).toEqual(['fulfilled', 'fulfilled']);
    await drainMoneyWork(suite.app);
    const [sv, rv] = [await settlement(f, s), await refund(f, r)];
    const outcomes = [sv.status, rv.status].sort();
    expect(outcomes.filter((x) => x === 'EXECUTED')).toHaveLength(1);
    expect(sv.status === 'EXECUTED' ? rv.status : sv.status).toBe(sv.status === 'EXECUTED' ? 'REJECTED' : 'FAILED');
    const { out, escrow } = await moved(f, id);
    expect(out).toBe(600_000n);
    expect(escrow).toBe(400_000n);
  });

  test('the same settlement job delivered twice at once pays once', async () => {
    const id = await funded(f);
    const before = await posted(f, f.beneficiaryAccountId);
    const s = await pendingSettlement(f, id, 250_000n);
    await Promise.all([executeSettlement(moneyDeps(suite.app), s), executeSettlement(moneyDeps(suite.app), s), executeSettlement(moneyDeps(suite.app), s)]);
    await drainMoneyWork(suite.app);
    const sv = await settlement(f, s);
    expect(sv).toMatchObject({ status: 'EXECUTED', attempts: 1, grossAmount: '250000' });
    const { out } = await moved(f, id);
    expect(out).toBe(250_000n);
    expect((await posted(f, f.beneficiaryAccountId)) - before).toBe(BigInt(sv.distributableAmount));
  });

  test("a transaction's settlements execute in request order, whichever job runs first", async () => {
    const id = await funded(f);
    const first = await pendingSettlement(f, id, 300_000n);
    suite.app.clock.advance(1000);
    const second = await pendingSettlement(f, id, 200_000n);
    // The second one's job runs first: it executes the first settlement.
    await executeSettlement(moneyDeps(suite.app), second);
    expect((await settlement(f, first)).status).toBe('EXECUTED');
    expect((await settlement(f, second)).status).toBe('PENDING');
    await executeSettlement(moneyDeps(suite.app), first);
    const [a, b] = [await settlement(f, first), await settlement(f, second)];
    expect([a.status, b.status]).toEqual(['EXECUTED', 'EXECUTED']);
    expect(new Date(a.executedAt).getTime()).toBeLessThanOrEqual(new Date(b.executedAt).getTime());
    expect((await moved(f, id)).out).toBe(500_000n);
  });

  test('a freeze racing the settlement job: either the settlement executed before the freeze, or it failed and moved nothing', async () => {
    for (let i = 0; i < 3; i++) {
      const id = await funded(f);
      const s = await pendingSettlement(f, id, AMOUNT);
      const [, freeze] = await Promise.all([
        executeSettlement(moneyDeps(suite.app), s),
        suite.app.rest('POST', `/v1/transactions/${id}/freeze`, { headers: f.member.headers, body: { reason: 'dispute' } }),
      ]);
      const sv = await settlement(f, s);
      const { t, out } = await moved(f, id);
      if (sv.status === 'EXECUTED') {
        expect(out).toBe(AMOUNT);
        expect(t.status).toBe('SETTLED');
        // A settled transaction is closed: the freeze came after it and is refused.
        expect(freeze.status).toBe(409);
      } else {
        expect(sv).toMatchObject({ status: 'FAILED' });
        expect(freeze.status).toBe(204);
        expect(out).toBe(0n);
        expect(t).toMatchObject({ status: 'RESERVED', frozen: true });
      }
    }
  });

  test('two refunds of 60% executed concurrently: one executes, the other is rejected', async () => {
    const id = await funded(f);
    const a = await pendingRefund(f, id, 600_000n);
    const b = await pendingRefund(f, id, 600_000n);
    const deps = { ...moneyDeps(suite.app), sealingKey: suite.app.deps.sealingKey } as never;
    await Promise.all([executeRefund(deps, a), executeRefund(deps, b)]);
    const statuses = [(await refund(f, a)).status, (await refund(f, b)).status].sort();
    expect(statuses).toEqual(['EXECUTED', 'REJECTED']);
    const { out, escrow } = await moved(f, id);
    expect(out).toBe(600_000n);
    expect(escrow).toBe(400_000n);
  });

  test('settlements executed in groups (as the workers run them), two overlapping groups at once: each pays once, in request order; a frozen one fails alone', async () => {
    const [t1, t2, t3, t4] = [await funded(f), await funded(f), await funded(f), await funded(f)];
    const s1a = await pendingSettlement(f, t1, 400_000n);
    const s1b = await pendingSettlement(f, t1, 600_000n);
    const s2 = await pendingSettlement(f, t2, AMOUNT);
    const s3 = await pendingSettlement(f, t3, 250_000n);
    const s4 = await pendingSettlement(f, t4, AMOUNT);
    expect((await suite.app.rest('POST', `/v1/transactions/${t4}/freeze`, { headers: f.member.headers, body: { reason: 'dispute' } })).status).toBe(204);
    const before = await posted(f, f.beneficiaryAccountId);
    // s2 is in both groups; t1's two settlements are split between them (the later one listed first).
    const [a, b] = await Promise.all([
      executeSettlementGroup(moneyDeps(suite.app), [s1b, s2, s4, 'not-a-uuid']),
      executeSettlementGroup(moneyDeps(suite.app), [s3, s1a, s2]),
    ]);
    for (const r of [...a, ...b]) expect(r).not.toBeInstanceOf(Error);
    expect(a[3]).toEqual({ status: 'SKIPPED' });
    expect([...a, ...b].filter((r) => (r as { status: string }).status === 'EXECUTED')).toHaveLength(4);
    expect(a[2]).toEqual({ status: 'FAILED', reason: 'TRANSACTION_FROZEN' });
    for (const id of [s1a, s1b, s2, s3]) {
      expect(await settlement(f, id)).toMatchObject({ status: 'EXECUTED', attempts: 1 });
      expect(await suite.app.deps.db.ledgerTransaction.count({ where: { idempotencyKey: `settlement:${id}` } })).toBe(1);
    }
    expect(await settlement(f, s4)).toMatchObject({ status: 'FAILED', attempts: 1 });
    // Request order within t1: the 400,000 first (it did not empty the escrow), then the 600,000.
    expect(await settlement(f, s1a)).toMatchObject({ grossAmount: '400000', isTotal: false });
    expect(await settlement(f, s1b)).toMatchObject({ grossAmount: '600000', isTotal: true });
    expect(await moved(f, t1)).toMatchObject({ out: AMOUNT, escrow: 0n });
    expect(await moved(f, t2)).toMatchObject({ out: AMOUNT, escrow: 0n });
    expect(await moved(f, t3)).toMatchObject({ out: 250_000n, escrow: 750_000n });
    expect(await moved(f, t4)).toMatchObject({ out: 0n, escrow: AMOUNT });
    expect((await posted(f, f.beneficiaryAccountId)) - before).toBe(2n * AMOUNT + 250_000n);
    // Each executed settlement has its own events and audit entries, exactly once.
    for (const id of [s1a, s1b, s2, s3]) {
      const events = await suite.app.deps.db.webhookEvent.findMany({ where: { aggregateId: id }, select: { eventType: true } });
      expect(events.map((e) => e.eventType).sort()).toEqual(['settlement.executed', 'settlement.split_portion_released']);
      expect(await suite.app.deps.db.auditLogEntry.count({ where: { entityId: id, action: 'settlement.executed' } })).toBe(1);
    }
  });

  test('a group costs the same statements whatever its size: its reads made once, its writes set-based (issue 22)', async () => {
    const run = async (n: number) => {
      // Funded first: funding drains the money queues, which would execute a settlement already requested.
      const transactions: string[] = [];
      for (let i = 0; i < n; i++) transactions.push(await funded(f));
      const ids: string[] = [];
      for (const t of transactions) ids.push(await pendingSettlement(f, t, AMOUNT));
      const { result, statements } = await suite.app.sqlStatements(() => executeSettlementGroup(moneyDeps(suite.app), ids));
      for (const r of result) expect(r).toEqual({ status: 'EXECUTED', isTotal: true });
      return statements;
    };
    const small = await run(2);
    const large = await run(16);
    // BEGIN, the locks, the group's reads, one write per table, the events' jobs, ledger_post, COMMIT.
    expect(large.length).toBe(small.length);
    expect(large.length).toBeLessThanOrEqual(22);
    // The hot balance rows (PLATFORM_REVENUE, the beneficiaries') are locked by the group's last
    // statement, the ledger posting with the EXECUTED states, and released by the COMMIT right after it.
    const text = (q: unknown) => (typeof q === 'string' ? q : JSON.stringify(q));
    expect(text(large.at(-1))).toBe('COMMIT');
    expect(text(large.at(-2))).toMatch(/ledger_post\(/);
    expect(text(large.at(-2))).toMatch(/UPDATE "Settlement"/);
    expect(large.filter((q) => /ledger_post\(/.test(text(q)))).toHaveLength(1);
  });

  test('a group aborted by a deadlock in its posting runs again whole (its posting has no savepoint): each settlement executed once, as one group', async () => {
    const ts = [await funded(f), await funded(f), await funded(f)];
    const ids: string[] = [];
    for (const t of ts) ids.push(await pendingSettlement(f, t, AMOUNT));
    const db = suite.app.deps.db;
    const [escrow] = await db.$queryRaw<{ id: string }[]>`
      SELECT "id"::text AS "id" FROM "LedgerAccount" WHERE "kind" = 'ESCROW' AND "ownerId" = ${ts[0]}::uuid`;
    const callsBefore = ledgerMetrics.calls;
    let group: ReturnType<typeof executeSettlementGroup> | undefined;
    let otherSideAborted = false;
    try {
      await db.$transaction(
        async (tx) => {
          // Another transaction holds the first escrow's balance row; the group locks its Transaction
          // rows, reads, writes, then waits for that row in its posting...
          await tx.$queryRaw`SELECT 1 FROM "LedgerAccount" WHERE "id" = ${escrow!.id}::uuid FOR UPDATE`;
          group = executeSettlementGroup(moneyDeps(suite.app), ids);
          for (let i = 0; i < 1000; i++) {
            const [w] = await tx.$queryRaw<{ n: number }[]>`
              SELECT count(*)::int AS n FROM pg_stat_activity WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid))`;
            if (w!.n > 0) break;
            await new Promise((ok) => setTimeout(ok, 10));
          }
          // ...and the other transaction now needs a Transaction row the group holds: a cycle.
          await tx.$queryRaw`SELECT 1 FROM "Transaction" WHERE "id" = ${ts[0]}::uuid FOR UPDATE`;
        },
        { timeout: 20_000 },
      );
    } catch {
      otherSideAborted = true; // PostgreSQL chose the other side of the cycle: the group never failed
    }
    const results = await group!;
    for (const r of results) expect(r).toEqual({ status: 'EXECUTED', isTotal: true });
    // One ledger call for the group, one more when PostgreSQL aborted the group and it ran again
    // whole; run one by one after a failure it would be 1 + 3.
    expect(ledgerMetrics.calls - callsBefore).toBe(otherSideAborted ? 1 : 2);
    for (const id of ids) expect(await db.ledgerTransaction.count({ where: { idempotencyKey: `settlement:${id}` } })).toBe(1);
    for (const t of ts) expect(await moved(f, t)).toMatchObject({ out: AMOUNT, escrow: 0n });
  }, 60_000);

  test('a group with a settlement whose posting the ledger refuses: the group rolls back, the others execute alone, that one fails alone and stays PENDING', async () => {
    const [t1, t2, t3] = [await funded(f), await funded(f), await funded(f)];
    const [s1, s2, s3] = [await pendingSettlement(f, t1, AMOUNT), await pendingSettlement(f, t2, AMOUNT), await pendingSettlement(f, t3, AMOUNT)];
    // s2's ledger key already taken by another posting: the ledger refuses s2's (IDEMPOTENCY_CONFLICT).
    const an = f.catalog.assetNetworkId;
    await postLedgerTransaction(suite.app.deps.db, {
      idempotencyKey: `settlement:${s2}`,
      nature: 'test.key-taken',
      organizationId: f.organizationId,
      lines: [
        { account: ledgerAccounts.clearing(an), direction: 'DEBIT', amount: 1n },
        { account: ledgerAccounts.suspense(f.organizationId, an), direction: 'CREDIT', amount: 1n },
      ],
      postedAt: new Date(),
    });
    const [r1, r2, r3] = await executeSettlementGroup(moneyDeps(suite.app), [s1, s2, s3]);
    expect(r1).toEqual({ status: 'EXECUTED', isTotal: true });
    expect(r3).toEqual({ status: 'EXECUTED', isTotal: true });
    expect(r2).toBeInstanceOf(LedgerError);
    expect((r2 as LedgerError).reason).toBe('IDEMPOTENCY_CONFLICT');
    expect(await settlement(f, s2)).toMatchObject({ status: 'PENDING', attempts: 0 });
    expect(await moved(f, t2)).toMatchObject({ out: 0n, escrow: AMOUNT });
    expect(await suite.app.deps.db.settlementAllocation.count({ where: { settlementId: s2 } })).toBe(0);
    expect(await suite.app.deps.db.webhookEvent.count({ where: { aggregateId: s2 } })).toBe(0);
    for (const id of [s1, s3]) expect(await suite.app.deps.db.ledgerTransaction.count({ where: { idempotencyKey: `settlement:${id}` } })).toBe(1);
    // Left PENDING (its job is retried and fails the same way until an operator looks): not part of the invariants below.
    await suite.app.deps.db
      .$executeRaw`UPDATE "Settlement" SET "status" = 'FAILED', "attempts" = 1, "failureReason" = 'test', "failedAt" = now() WHERE "id" = ${s2}::uuid`;
  });
});
