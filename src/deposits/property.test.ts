import fc from 'fast-check';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createOperator, createTestApp, type TestApp } from '../../test/harness';
import { checkLedgerInvariants } from '../../test/ledger-invariants';
import { sandboxAdvanceClock, sandboxDrop, sandboxMine, sandboxReorg, sandboxReplace, sandboxSend } from '../../test/money-helpers';
import { balanceOf } from '../ledger/ledger';
import { ledgerAccounts } from '../ledger/ledger';
import { isCovered } from './rules';
import { createIntent, drainChainSync, eventsOf, moneyFixture, sweepExpiries, type MoneyFixture } from '../../test/fixtures/deposits/testing';

/**
 * Random sequences of chain and operator actions (sends, mines, reorganizations, drops,
 * replacements, clock advances, cancels, review and reorg resolutions) against one payment
 * intent, each followed by a chain sync; after every step the records are checked against the
 * chain and a simple model of the rules, and the ledger against its invariants. At the end every
 * open question is settled (blocks mined, operators resolve) and the money on the chain must be
 * exactly the money credited: nothing created, nothing lost.
 *
 * Deterministic by default (FC_SEED, FC_RUNS to explore more).
 */

let app: TestApp;
let operator: { headers: Record<string, string> };
beforeAll(async () => {
  app = await createTestApp();
  operator = await createOperator(app);
});
afterAll(() => app.close());

const REQUIRED = 2;
const AMOUNT = 1_000_000n;
const MINIMUM = 100n;

type Action =
  | { t: 'send'; amount: bigint; replaceable: boolean; revert: boolean }
  | { t: 'mine'; n: number }
  | { t: 'reorg'; depth: number; include: boolean }
  | { t: 'drop'; pick: number }
  | { t: 'replace'; pick: number; amount: bigint }
  | { t: 'advance'; seconds: number }
  | { t: 'cancel' }
  | { t: 'review'; pick: number; decision: 'ACCEPT' | 'REJECT' }
  | { t: 'resolveReorg'; pick: number; outcome: 'REMINED' | 'GONE' };

const amounts = fc.constantFrom(400_000n, 600_000n, 1_000_000n, 1_500_000n, 1_666n, 50n);
const action: fc.Arbitrary<Action> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      t: fc.constant('send' as const),
      amount: amounts,
      replaceable: fc.boolean(),
      revert: fc.integer({ min: 0, max: 5 }).map((n) => n === 0),
    }),
  },
  { weight: 8, arbitrary: fc.record({ t: fc.constant('mine' as const), n: fc.integer({ min: 1, max: 3 }) }) },
  {
    weight: 4,
    arbitrary: fc.record({
      t: fc.constant('reorg' as const),
      depth: fc.integer({ min: 1, max: 4 }),
      include: fc.integer({ min: 0, max: 2 }).map((n) => n === 0),
    }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('drop' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('replace' as const), pick: fc.nat(), amount: amounts }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('advance' as const), seconds: fc.constantFrom(300, 1200) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('cancel' as const) }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('review' as const), pick: fc.nat(), decision: fc.constantFrom('ACCEPT' as const, 'REJECT' as const) }) },
  {
    weight: 4,
    arbitrary: fc.record({ t: fc.constant('resolveReorg' as const), pick: fc.nat(), outcome: fc.constantFrom('REMINED' as const, 'GONE' as const) }),
  },
);

interface World {
  f: MoneyFixture;
  pi: { id: string; transactionId: string; address: string };
  /** Deposits an operator resolved REMINED (each adds one deposit.confirmed). */
  remined: Map<string, number>;
}

async function chain(w: World) {
  const txs = await app.deps.db.sandboxTransaction.findMany({
    where: { networkId: w.f.catalog.networkId, toAddress: w.pi.address },
    orderBy: { createdAt: 'asc' },
  });
  const tip =
    (await app.deps.db.sandboxBlock.findFirst({ where: { networkId: w.f.catalog.networkId, canonical: true }, orderBy: { height: 'desc' } }))?.height ?? 0;
  return txs.map((t) => ({ ...t, amount: BigInt(t.amount.toFixed()), confirmations: t.status === 'MINED' ? tip - t.blockHeight! + 1 : 0 }));
}
const deposits = (w: World) => app.deps.db.deposit.findMany({ where: { paymentIntentId: w.pi.id }, orderBy: { id: 'asc' } });
const sum = (xs: { amount: { toFixed(): string } }[]) => xs.reduce((n, d) => n + BigInt(d.amount.toFixed()), 0n);

async function step(w: World, a: Action): Promise<void> {
  const h = w.f.apiKeyHeaders;
  const c = await chain(w);
  const ds = await deposits(w);
  switch (a.t) {
    case 'send':
      await sandboxSend(app, h, {
        address: w.pi.address,
        amount: a.amount,
        assetNetworkId: w.f.catalog.assetNetworkId,
        replaceable: a.replaceable,
        revert: a.revert,
      });
      break;
    case 'mine':
      await sandboxMine(app, h, w.f.catalog.networkId, a.n);
      break;
    case 'reorg': {
      const height = await app.deps.db.sandboxBlock.count({ where: { networkId: w.f.catalog.networkId, canonical: true } });
      if (a.depth <= height) await sandboxReorg(app, h, w.f.catalog.networkId, a.depth, a.include);
      break;
    }
    case 'drop': {
      const droppable = c.filter((t) => t.status === 'PENDING' || t.status === 'ORPHANED');
      if (droppable.length) await sandboxDrop(app, h, droppable[a.pick % droppable.length]!.txHash);
      break;
    }
    case 'replace': {
      const replaceable = c.filter((t) => t.status === 'PENDING' && t.replaceable);
      if (replaceable.length) await sandboxReplace(app, h, replaceable[a.pick % replaceable.length]!.txHash, a.amount);
      break;
    }
    case 'advance':
      await sandboxAdvanceClock(app, h, a.seconds);
      await sweepExpiries(app, w.f.organizationId);
      break;
    case 'cancel': {
      const before = await app.deps.db.paymentIntent.findUniqueOrThrow({ where: { id: w.pi.id }, include: { transaction: true } });
      const r = await app.rest('POST', `/v1/payment-intents/${w.pi.id}/cancel`, { headers: h });
      const after = await app.deps.db.paymentIntent.findUniqueOrThrow({ where: { id: w.pi.id } });
      if (r.status === 204) {
        expect(before.status).toBe('AWAITING_PAYMENT');
        expect(before.transaction.frozen).toBe(false);
        expect(after.status).toBe('CANCELLED');
      } else {
        // Refused: something was detected, it is frozen, expired (maybe just now) or already cancelled.
        expect(r.status, r.text).toBe(409);
        expect(before.status === 'CANCELLED' || after.status !== 'CANCELLED').toBe(true);
        if (before.status === 'AWAITING_PAYMENT' && !before.transaction.frozen) expect(after.status).toBe('EXPIRED');
      }
      break;
    }
    case 'review': {
      const held = ds.filter((d) => d.status === 'UNDER_REVIEW');
      if (!held.length) break;
      const d = held[a.pick % held.length]!;
      const r = await app.rest('POST', `/v1/admin/deposits/${d.id}/resolve-under-review`, {
        body: { decision: a.decision, reason: 'prop' },
        headers: operator.headers,
      });
      const onChain = c.find((t) => t.txHash === d.txHash)!;
      const gone = ['DROPPED', 'REPLACED', 'REVERTED'].includes(onChain.status);
      expect(r.status, r.text).toBe(a.decision === 'ACCEPT' && gone ? 409 : 204);
      break;
    }
    case 'resolveReorg': {
      const frozen = ds.filter((d) => d.status === 'REORG_FROZEN');
      if (!frozen.length) break;
      const d = frozen[a.pick % frozen.length]!;
      let t = c.find((x) => x.txHash === d.txHash)!;
      // GONE: the transaction leaves the mempool for good first, when it still can (every other pick).
      if (a.outcome === 'GONE' && (t.status === 'ORPHANED' || t.status === 'PENDING') && a.pick % 2 === 0) {
        await sandboxDrop(app, h, t.txHash);
        await drainChainSync(app);
        t = (await chain(w)).find((x) => x.txHash === d.txHash)!;
      }
      const r = await app.rest('POST', `/v1/admin/deposits/${d.id}/resolve-reorg`, { body: { outcome: a.outcome, reason: 'prop' }, headers: operator.headers });
      const allowed = a.outcome === 'REMINED' ? t.status === 'MINED' && t.confirmations >= REQUIRED : ['DROPPED', 'REPLACED', 'REVERTED'].includes(t.status);
      expect(r.status, `${a.outcome} with the chain at ${t.status}/${t.confirmations}: ${r.text}`).toBe(allowed ? 204 : 409);
      if (allowed && a.outcome === 'REMINED') w.remined.set(d.id, (w.remined.get(d.id) ?? 0) + 1);
      break;
    }
  }
  await drainChainSync(app);
}

/** The records against the chain and the rules (after a sync). */
async function check(w: World): Promise<void> {
  await checkLedgerInvariants(app.deps.db);
  const c = await chain(w);
  const ds = await deposits(w);
  const byHash = new Map(ds.map((d) => [d.txHash, d]));
  for (const t of c) {
    const d = byHash.get(t.txHash);
    const gone = t.status === 'DROPPED' || t.status === 'REPLACED' || t.status === 'REVERTED';
    if (!d) {
      // Only a transfer that moved no value may be unrecorded (never seen before it was gone).
      expect(gone, `${t.txHash} ${t.status} has no deposit`).toBe(true);
      continue;
    }
    expect(d.amount.toFixed()).toBe(t.amount.toString());
    const deep = t.status === 'MINED' && t.confirmations >= REQUIRED;
    if (gone) expect(['REJECTED', 'REORG_FROZEN', 'REVERSED'], `${d.status} for a ${t.status} transfer`).toContain(d.status);
    else if (!deep)
      expect(['DETECTED', 'CONFIRMING', 'UNDER_REVIEW', 'REORG_FROZEN', 'REJECTED'], `${d.status} for ${t.status}/${t.confirmations}`).toContain(d.status);
    else expect(['CONFIRMED', 'UNDER_REVIEW', 'REORG_FROZEN', 'REJECTED'], `${d.status} for a deep transfer`).toContain(d.status);
    if (d.status === 'DETECTED' || d.status === 'CONFIRMING') {
      expect(d.confirmations).toBe(t.confirmations);
      expect(d.status).toBe(t.confirmations > 0 ? 'CONFIRMING' : 'DETECTED');
    }
    // Rejected while the chain has it: by review or the minimum; or reverted, then orphaned (it may still revert again).
    if (d.status === 'REJECTED' && !gone)
      expect(d.reason).toMatch(t.status === 'MINED' ? /^(REVIEW_REJECTED|BELOW_MINIMUM)/ : /^(REVIEW_REJECTED|BELOW_MINIMUM|REVERTED)/);
    if (d.status === 'REVERSED') expect(gone).toBe(true);
  }
  // Money: the ledger holds exactly the credited deposits, where they were credited.
  const credited = ds.filter((d) => d.status === 'CONFIRMED' || d.status === 'REORG_FROZEN');
  for (const d of ds)
    expect(d.creditedTo !== null, `${d.status} creditedTo ${d.creditedTo}`).toBe(
      d.status === 'CONFIRMED' || d.status === 'REORG_FROZEN' || d.status === 'REVERSED',
    );
  const an = w.f.catalog.assetNetworkId;
  const escrow = (await balanceOf(app.deps.db, ledgerAccounts.escrow({ id: w.pi.transactionId, organizationId: w.f.organizationId, assetNetworkId: an })))
    .posted;
  const suspense = (await balanceOf(app.deps.db, ledgerAccounts.suspense(w.f.organizationId, an))).posted;
  const clearing = (await balanceOf(app.deps.db, ledgerAccounts.clearing(an))).posted;
  expect(escrow).toBe(sum(credited.filter((d) => d.creditedTo === 'ESCROW')));
  expect(suspense).toBe(sum(credited.filter((d) => d.creditedTo === 'SUSPENSE')));
  expect(clearing).toBe(sum(credited));
  const postings = await app.deps.db.ledgerTransaction.groupBy({ by: ['nature'], where: { referenceId: { in: ds.map((d) => d.id) } }, _count: { _all: true } });
  const count = (prefix: string) => postings.filter((p) => p.nature.startsWith(prefix)).reduce((n, p) => n + p._count._all, 0);
  expect(count('deposit.confirmed')).toBe(credited.length + ds.filter((d) => d.status === 'REVERSED').length);
  expect(count('deposit.reversed')).toBe(ds.filter((d) => d.status === 'REVERSED').length);

  // The intent and its transaction follow the rules.
  const pi = await app.deps.db.paymentIntent.findUniqueOrThrow({ where: { id: w.pi.id }, include: { transaction: true } });
  const own = ds.filter((d) => !d.late);
  const ownCredited = sum(own.filter((d) => d.status === 'CONFIRMED' || d.status === 'REORG_FROZEN'));
  const live = own.filter((d) => ['DETECTED', 'CONFIRMING', 'CONFIRMED', 'UNDER_REVIEW', 'REORG_FROZEN'].includes(d.status));
  const undecided = own.filter((d) => ['DETECTED', 'CONFIRMING', 'UNDER_REVIEW', 'REORG_FROZEN'].includes(d.status));
  const now = new Date(
    app.clock.now().getTime() + Number((await app.deps.db.sandboxClock.findUnique({ where: { organizationId: w.f.organizationId } }))?.offsetMs ?? 0n),
  );
  const t = pi.transaction;
  if (pi.status === 'EXPIRED' || pi.status === 'CANCELLED') {
    expect(t.status).toBe(pi.status);
    expect(BigInt(t.fundedAmount.toFixed())).toBe(0n);
    expect(escrow).toBe(0n);
    expect(ds.filter((d) => d.late).every((d) => d.creditedTo === null || d.creditedTo === 'SUSPENSE')).toBe(true);
  } else {
    expect(ds.every((d) => !d.late)).toBe(true);
    const expected = isCovered(ownCredited, AMOUNT) ? 'SUCCEEDED' : live.length ? 'PROCESSING' : 'AWAITING_PAYMENT';
    expect(pi.status).toBe(expected);
    expect(t.status).toBe(expected === 'SUCCEEDED' ? 'RESERVED' : 'AWAITING_FUNDS');
    expect(BigInt(t.fundedAmount.toFixed())).toBe(escrow);
    expect(BigInt(pi.confirmedAmount.toFixed())).toBe(ownCredited);
    expect(BigInt(pi.detectedAmount.toFixed())).toBe(sum(live));
    expect(pi.overpaid).toBe(ownCredited > AMOUNT);
    // Not expired only while covered, not yet due, or something is undecided.
    if (expected !== 'SUCCEEDED' && now >= pi.expiresAt) expect(undecided.length).toBeGreaterThan(0);
  }
  const frozenBy = ds.filter((d) => d.status === 'REORG_FROZEN' && d.creditedTo === 'ESCROW').map((d) => d.id);
  expect(t.frozen).toBe(frozenBy.length > 0);
  if (frozenBy.length) expect(frozenBy).toContain(t.frozenByDepositId);
  else expect(t.frozenByDepositId).toBeNull();

  // Events: every deposit.confirmed is a credit (or a REMINED resolution); none for a deposit never credited.
  const events = await eventsOf(app, w.f.organizationId);
  for (const d of ds) {
    const confirmedEvents = events.filter((e) => e.type === 'deposit.confirmed' && e.body.DepositId === d.id).length;
    const everCredited = d.creditedTo !== null ? 1 : 0;
    expect(confirmedEvents, `deposit.confirmed events of a ${d.status} deposit`).toBe(everCredited + (w.remined.get(d.id) ?? 0));
  }
}

/** Settles everything: blocks mined past every depth, every question resolved; then chain money = credited money. */
async function settle(w: World): Promise<void> {
  const h = w.f.apiKeyHeaders;
  // Half the deposits in doubt lose their transaction for good (dropped from the mempool): GONE.
  const before = await chain(w);
  for (const d of await deposits(w))
    if (d.status === 'REORG_FROZEN' && parseInt(d.id.slice(-1), 16) % 2 === 0) {
      const t = before.find((x) => x.txHash === d.txHash)!;
      if (t.status === 'ORPHANED' || t.status === 'PENDING') await sandboxDrop(app, h, t.txHash);
    }
  await drainChainSync(app);
  for (let round = 0; round < 6; round++) {
    await sandboxMine(app, h, w.f.catalog.networkId, REQUIRED + 1);
    await drainChainSync(app);
    const c = await chain(w);
    for (const d of await deposits(w)) {
      const t = c.find((x) => x.txHash === d.txHash)!;
      if (d.status === 'UNDER_REVIEW' && !['DROPPED', 'REPLACED', 'REVERTED'].includes(t.status))
        expect(
          (
            await app.rest('POST', `/v1/admin/deposits/${d.id}/resolve-under-review`, {
              body: { decision: 'ACCEPT', reason: 'settle' },
              headers: operator.headers,
            })
          ).status,
        ).toBe(204);
      if (d.status === 'REORG_FROZEN') {
        const outcome = t.status === 'MINED' ? 'REMINED' : 'GONE';
        const r = await app.rest('POST', `/v1/admin/deposits/${d.id}/resolve-reorg`, { body: { outcome, reason: 'settle' }, headers: operator.headers });
        if (r.status === 204 && outcome === 'REMINED') w.remined.set(d.id, (w.remined.get(d.id) ?? 0) + 1);
      }
    }
    await drainChainSync(app);
  }
  await check(w);
  const c = await chain(w);
  const ds = await deposits(w);
  expect(ds.filter((d) => !['CONFIRMED', 'REJECTED', 'REVERSED'].includes(d.status)).map((d) => d.status)).toEqual([]);
  // Every deep transfer of the right asset, at or above the minimum, is credited once: nothing lost, nothing created.
  const reviewRejected = new Set(ds.filter((d) => d.reason?.startsWith('REVIEW_REJECTED')).map((d) => d.txHash));
  const deep = c.filter((t) => t.status === 'MINED' && t.confirmations >= REQUIRED && t.amount >= MINIMUM && !reviewRejected.has(t.txHash));
  const confirmed = ds.filter((d) => d.status === 'CONFIRMED');
  expect(confirmed.map((d) => d.txHash).sort()).toEqual(deep.map((t) => t.txHash).sort());
  const clearing = (await balanceOf(app.deps.db, ledgerAccounts.clearing(w.f.catalog.assetNetworkId))).posted;
  expect(clearing).toBe(deep.reduce((n, t) => n + t.amount, 0n));
}

test('random chains: records follow the chain and the rules, the ledger balances, nothing is lost', async () => {
  const seed = Number(process.env.FC_SEED ?? 20261121);
  const numRuns = Number(process.env.FC_RUNS ?? 15);
  await fc.assert(
    fc.asyncProperty(fc.array(action, { minLength: 6, maxLength: 24 }), async (actions) => {
      const f = await moneyFixture(app, { requiredConfirmations: REQUIRED, minimumDeposit: MINIMUM });
      const pi = await createIntent(app, f, { amount: AMOUNT.toString(), expiresInSeconds: 900 });
      const w: World = { f, pi, remined: new Map() };
      for (const a of actions) {
        await step(w, a);
        await check(w);
      }
      await settle(w);
    }),
    { seed, numRuns, endOnFailure: true },
  );
}, 600_000);
