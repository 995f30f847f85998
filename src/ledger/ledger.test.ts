import { randomUUID } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import fc from 'fast-check';
import { createApiKey, createOperator, signUpMember } from '../../test/harness';
import { checkLedgerInvariants } from '../../test/ledger-invariants';
import { moneySuite } from '../../test/money-suite';
import { routes } from '../../rest/routes';
import { startJobs, stopJobs } from '../../jobs/index';
import {
  balanceOf,
  createHold,
  createLedgerBatcher,
  expireHolds,
  LedgerError,
  ledgerMetrics,
  postHold,
  postLedgerTransaction,
  voidHold,
  type LedgerAccountRef,
  type PostInput,
  type PostingLine,
} from './ledger';
import { EXPIRE_HOLDS_QUEUE } from '../kernel/queues';
import { retryingTransaction } from '../kernel/service';
import { poolOf } from '../db/prisma';
import { accountBalancesPolicy } from './ledger.graphql';

// One test app for the file, an operator; every test leaves a ledger that satisfies every invariant.
const suite = moneySuite();

type Member = Awaited<ReturnType<typeof signUpMember>>;
const db = () => suite.app.deps.db;
const now = () => suite.app.clock.now();

let catalogSeq = 0;
/** An asset-network (with its asset and network), straight in the database. */
async function assetNetwork(): Promise<string> {
  const tag = `${process.pid}${Date.now()}${++catalogSeq}`;
  const asset = await db().asset.create({ data: { code: `L${tag}`, name: `Ledger test ${tag}`, decimals: 6 } });
  const network = await db().network.create({
    data: { name: `ledger-${tag}`, kind: 'SANDBOX', environmentType: 'SANDBOX', blockTimeSeconds: 5, requiredConfirmations: 1 },
  });
  const an = await db().assetNetwork.create({ data: { assetId: asset.id, networkId: network.id, decimals: 6, minimumDeposit: '0', status: 'ENABLED' } });
  return an.id;
}

/** A customer Account, created through REST. */
async function account(m: Member, name = 'Ledger'): Promise<string> {
  const r = await suite.app.rest('POST', `/v1/organizations/${m.organizationId}/accounts`, { body: { name, mode: 'SANDBOX' }, headers: m.headers });
  expect(r.status).toBe(201);
  return r.headers.get('location')!.split('/').pop()!;
}

const customer = (m: Member, accountId: string, an: string): LedgerAccountRef => ({
  kind: 'CUSTOMER',
  ownerId: accountId,
  organizationId: m.organizationId,
  assetNetworkId: an,
});
const clearing = (an: string): LedgerAccountRef => ({ kind: 'CHAIN_CLEARING', ownerId: null, organizationId: null, assetNetworkId: an });
const fees = (an: string): LedgerAccountRef => ({ kind: 'FEES', ownerId: null, organizationId: null, assetNetworkId: an });
const debit = (account: LedgerAccountRef, amount: bigint): PostingLine => ({ account, direction: 'DEBIT', amount });
const credit = (account: LedgerAccountRef, amount: bigint): PostingLine => ({ account, direction: 'CREDIT', amount });
const key = (what = 'k') => `test:${what}:${randomUUID()}`;

const posting = (lines: PostingLine[], extra: Partial<PostInput> = {}): PostInput => ({
  idempotencyKey: key(),
  nature: 'test.posting',
  lines,
  postedAt: now(),
  ...extra,
});
/** Funds a customer account from the chain. */
const fund = (to: LedgerAccountRef, amount: bigint) =>
  postLedgerTransaction(db(), posting([debit(clearing(to.assetNetworkId), amount), credit(to, amount)], { nature: 'deposit.confirmed' }));

async function refused(p: Promise<unknown>): Promise<LedgerError> {
  const e = await p.then(
    () => {
      throw new Error('expected a refusal');
    },
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(LedgerError);
  return e as LedgerError;
}

/** Counts of ledger rows, to prove a refusal wrote nothing. */
async function ledgerCounts() {
  const [transactions, entries, holds] = await Promise.all([db().ledgerTransaction.count(), db().ledgerEntry.count(), db().ledgerHold.count()]);
  const totals = await db().$queryRawUnsafe<{ t: string }[]>(
    `SELECT coalesce(sum("debitsPosted" + "creditsPosted" + "debitsPending" + "creditsPending" + "version"), 0)::text AS t FROM "LedgerAccount"`,
  );
  return { transactions, entries, holds, totals: totals[0]!.t };
}

describe('postings', () => {
  test('a balanced posting: entries with versions, running totals, the transaction record', async () => {
    const m = await signUpMember(suite.app);
    const an = await assetNetwork();
    const a = customer(m, await account(m), an);
    const referenceId = randomUUID();
    const r = await postLedgerTransaction(
      db(),
      posting([debit(clearing(an), 1_500_000n), credit(a, 1_500_000n)], {
        nature: 'deposit.confirmed',
        organizationId: m.organizationId,
        referenceType: 'Deposit',
        referenceId,
        metadata: { txHash: '0xabc' },
      }),
    );
    expect(r.replayed).toBe(false);
    expect(await balanceOf(db(), a)).toEqual({ posted: 1_500_000n, pendingDebits: 0n, pendingCredits: 0n, available: 1_500_000n, version: 1n });
    // CHAIN_CLEARING is debit-normal: value on the chain.
    expect(await balanceOf(db(), clearing(an))).toEqual({ posted: 1_500_000n, pendingDebits: 0n, pendingCredits: 0n, available: 1_500_000n, version: 1n });
    const t = await db().ledgerTransaction.findUniqueOrThrow({ where: { id: r.ledgerTransactionId }, include: { entries: { orderBy: { direction: 'asc' } } } });
    expect(t).toMatchObject({
      nature: 'deposit.confirmed',
      organizationId: m.organizationId,
      referenceType: 'Deposit',
      referenceId,
      metadata: { txHash: '0xabc' },
    });
    expect(t.postedAt.getTime()).toBe(now().getTime());
    expect(t.entries.map((e) => [e.direction, e.amount.toFixed(), e.accountVersion, e.pending])).toEqual([
      ['DEBIT', '1500000', 1n, false],
      ['CREDIT', '1500000', 1n, false],
    ]);
    // A second posting: versions continue per account.
    const b = customer(m, await account(m), an);
    const r2 = await postLedgerTransaction(db(), posting([debit(a, 400_000n), credit(b, 300_000n), credit(fees(an), 100_000n)], { nature: 'transfer' }));
    const entries = await db().ledgerEntry.findMany({ where: { ledgerTransactionId: r2.ledgerTransactionId } });
    expect(entries).toHaveLength(3);
    expect(await balanceOf(db(), a)).toMatchObject({ posted: 1_100_000n, available: 1_100_000n, version: 2n });
    expect(await balanceOf(db(), b)).toMatchObject({ posted: 300_000n, version: 1n });
    expect(await balanceOf(db(), fees(an))).toMatchObject({ posted: 100_000n, version: 1n });
    // No row yet: zeros.
    expect(await balanceOf(db(), customer(m, randomUUID(), an))).toEqual({ posted: 0n, pendingDebits: 0n, pendingCredits: 0n, available: 0n, version: 0n });
  });

  test('free text (keys, nature, reference type, metadata) is stored exactly, quotes, braces and backslashes included', async () => {
    const m = await signUpMember(suite.app);
    const an = await assetNetwork();
    const a = customer(m, await account(m), an);
    const k = `odd key "with" {braces}, commas \\ and NULL ${randomUUID()}`;
    const metadata = { note: 'a "quoted", {braced} \\ back\\slash, NULL, ünïcode ✓', nested: { list: [1, 'two', null] } };
    const r = await postLedgerTransaction(
      db(),
      posting([debit(clearing(an), 3n), credit(a, 3n)], { idempotencyKey: k, nature: 'odd "nature", {x}', referenceType: 'Odd\\Type', metadata }),
    );
    const t = await db().ledgerTransaction.findUniqueOrThrow({ where: { id: r.ledgerTransactionId } });
    expect([t.idempotencyKey, t.nature, t.referenceType, t.metadata]).toEqual([k, 'odd "nature", {x}', 'Odd\\Type', metadata]);
    expect(
      await postLedgerTransaction(
        db(),
        posting([debit(clearing(an), 3n), credit(a, 3n)], { idempotencyKey: k, nature: 'odd "nature", {x}', referenceType: 'Odd\\Type', metadata }),
      ),
    ).toEqual({ ...r, replayed: true });
  });

  test('amounts beyond 2^64 stay exact (NUMERIC(78,0) and bigint, never floats)', async () => {
    const m = await signUpMember(suite.app);
    const an = await assetNetwork();
    const a = customer(m, await account(m), an);
    const big = 2n ** 200n + 12345n;
    await fund(a, big);
    await postLedgerTransaction(db(), posting([debit(a, 2n ** 199n), credit(fees(an), 2n ** 199n)]));
    expect((await balanceOf(db(), a)).posted).toBe(big - 2n ** 199n);
  });

  test('unbalanced or malformed postings are refused (400 VALIDATION_FAILED) and write nothing', async () => {
    const m = await signUpMember(suite.app);
    const an = await assetNetwork();
    const an2 = await assetNetwork();
    const a = customer(m, await account(m), an);
    await fund(a, 1000n);
    const before = await ledgerCounts();
    const cases: [string, PostingLine[]][] = [
      ['one line', [credit(a, 10n)]],
      ['no lines', []],
      ['debits <> credits', [debit(clearing(an), 10n), credit(a, 9n)]],
      ['zero amount', [debit(clearing(an), 0n), credit(a, 0n)]],
      ['negative amount', [debit(clearing(an), -5n), credit(a, -5n)]],
      // The totals match, but not per asset-network.
      ['balanced only across asset-networks', [debit(clearing(an), 10n), credit(customer(m, a.ownerId!, an2), 10n)]],
      ['a system account with an owner', [debit({ ...clearing(an), ownerId: randomUUID() }, 10n), credit(a, 10n)]],
      [
        'a suspense account of another owner',
        [debit(clearing(an), 10n), credit({ kind: 'SUSPENSE', ownerId: randomUUID(), organizationId: m.organizationId, assetNetworkId: an }, 10n)],
      ],
      ['not a uuid', [debit(clearing('nope'), 10n), credit(a, 10n)]],
    ];
    for (const [name, lines] of cases) {
      const e = await refused(postLedgerTransaction(db(), posting(lines)));
      expect(e.code, name).toBe('VALIDATION_FAILED');
      expect(e.reason, name).toBe('INVALID_POSTING');
    }
    // Amounts that are not bigint (a float would lose base units).
    const e = await refused(postLedgerTransaction(db(), posting([debit(clearing(an), 1.5 as unknown as bigint), credit(a, 1.5 as unknown as bigint)])));
    expect(e.message).toMatch(/bigint/);
    // References that name nothing, found by the database.
    const nowhere = randomUUID();
    const unknownAn = await refused(postLedgerTransaction(db(), posting([debit(clearing(nowhere), 10n), credit(fees(nowhere), 10n)])));
    expect([unknownAn.code, unknownAn.reason]).toEqual(['VALIDATION_FAILED', 'UNKNOWN_ASSET_NETWORK']);
    const unknownAccount = await refused(postLedgerTransaction(db(), posting([debit(clearing(an), 10n), credit(customer(m, randomUUID(), an), 10n)])));
    expect(unknownAccount.reason).toBe('UNKNOWN_ACCOUNT');
    const other = await signUpMember(suite.app);
    const wrongOrg = await refused(
      postLedgerTransaction(db(), posting([debit(clearing(an), 10n), credit({ ...a, organizationId: other.organizationId }, 10n)])),
    );
    expect(wrongOrg.reason).toBe('UNKNOWN_ACCOUNT');
    expect(await ledgerCounts()).toEqual(before);
  });

  test('insufficient funds: refused (409 INVALID_STATE), nothing written, the balance unchanged', async () => {
    const m = await signUpMember(suite.app);
    const an = await assetNetwork();
    const a = customer(m, await account(m), an);
    const b = customer(m, await account(m), an);
    await fund(a, 100n);
    const before = await ledgerCounts();
    const e = await refused(postLedgerTransaction(db(), posting([debit(a, 101n), credit(b, 101n)])));
    expect([e.code, e.reason]).toEqual(['INVALID_STATE', 'INSUFFICIENT_FUNDS']);
    expect(e.message).toMatch(/exceeds its available balance by 1/);
    // A customer account never credited has no funds (and gets no balance row).
    const fresh = customer(m, await account(m), an);
    expect((await refused(postLedgerTransaction(db(), posting([debit(fresh, 1n), credit(a, 1n)])))).reason).toBe('INSUFFICIENT_FUNDS');
    // Pending debits count: a hold makes the held part unavailable.
    await createHold(db(), { idempotencyKey: key('hold'), nature: 'test.hold', debit: a, credit: b, amount: 60n, postedAt: now() });
    const afterHold = await ledgerCounts();
    expect((await refused(postLedgerTransaction(db(), posting([debit(a, 41n), credit(b, 41n)])))).reason).toBe('INSUFFICIENT_FUNDS');
    expect(await ledgerCounts()).toEqual(afterHold);
    expect(afterHold.transactions).toBe(before.transactions + 1);
    expect(await balanceOf(db(), a)).toEqual({ posted: 100n, pendingDebits: 60n, pendingCredits: 0n, available: 40n, version: 2n });
    expect(await db().ledgerAccount.count({ where: { ownerId: fresh.ownerId } })).toBe(0);
    // Exactly the available amount may go.
    await postLedgerTransaction(db(), posting([debit(a, 40n), credit(b, 40n)]));
    expect((await balanceOf(db(), a)).available).toBe(0n);
  });
});

describe('idempotency', () => {
  test('the same key and payload replays the same transaction; another payload is refused (409 CONFLICT)', async () => {
    const m = await signUpMember(suite.app);
    const an = await assetNetwork();
    const a = customer(m, await account(m), an);
    const k = key('idem');
    const lines = [debit(clearing(an), 500n), credit(a, 500n)];
    const first = await postLedgerTransaction(db(), posting(lines, { idempotencyKey: k, metadata: { n: 1 } }));
    suite.app.clock.advance(60_000);
    // Later (another postedAt), lines in another order: the same posting.
    const again = await postLedgerTransaction(db(), posting([...lines].reverse(), { idempotencyKey: k, metadata: { n: 1 } }));
    expect(again).toEqual({ ledgerTransactionId: first.ledgerTransactionId, replayed: true });
    const before = await ledgerCounts();
    for (const changed of [
      posting([debit(clearing(an), 501n), credit(a, 501n)], { idempotencyKey: k, metadata: { n: 1 } }),
      posting(lines, { idempotencyKey: k, metadata: { n: 2 } }),
      posting(lines, { idempotencyKey: k, metadata: { n: 1 }, nature: 'other' }),
    ]) {
      const e = await refused(postLedgerTransaction(db(), changed));
      expect([e.code, e.reason]).toEqual(['CONFLICT', 'IDEMPOTENCY_CONFLICT']);
    }
    expect(await ledgerCounts()).toEqual(before);
    expect(await balanceOf(db(), a)).toMatchObject({ posted: 500n, version: 1n });
  });

  test('concurrent calls with one key: one posting, every caller gets its id', async () => {
    const m = await signUpMember(suite.app);
    const an = await assetNetwork();
    const a = customer(m, await account(m), an);
    const k = key('race');
    const results = await Promise.all(
      Array.from({ length: 16 }, () => postLedgerTransaction(db(), posting([debit(clearing(an), 7n), credit(a, 7n)], { idempotencyKey: k }))),
    );
    expect(new Set(results.map((r) => r.ledgerTransactionId)).size).toBe(1);
    expect(results.filter((r) => !r.replayed)).toHaveLength(1);
    expect(await balanceOf(db(), a)).toMatchObject({ posted: 7n, version: 1n });
  });
});

describe('holds', () => {
  async function setup(funds = 1000n) {
    const m = await signUpMember(suite.app);
    const an = await assetNetwork();
    const payer = customer(m, await account(m, 'payer'), an);
    const payee = customer(m, await account(m, 'payee'), an);
    await fund(payer, funds);
    return { m, an, payer, payee };
  }
  const hold = (d: LedgerAccountRef, c: LedgerAccountRef, amount: bigint, expiresAt: Date | null = null) =>
    createHold(db(), { idempotencyKey: key('hold'), nature: 'test.hold', debit: d, credit: c, amount, expiresAt, postedAt: now() });

  test('create then post in full: pending totals move to posted, exactly once', async () => {
    const { payer, payee } = await setup();
    const h = await hold(payer, payee, 300n);
    expect(await balanceOf(db(), payer)).toEqual({ posted: 1000n, pendingDebits: 300n, pendingCredits: 0n, available: 700n, version: 2n });
    expect(await balanceOf(db(), payee)).toEqual({ posted: 0n, pendingDebits: 0n, pendingCredits: 300n, available: 0n, version: 1n });
    const k = key('post');
    const p = await postHold(db(), { holdId: h.holdId, idempotencyKey: k, nature: 'hold.posted', postedAt: now() });
    expect(p.replayed).toBe(false);
    expect(await balanceOf(db(), payer)).toEqual({ posted: 700n, pendingDebits: 0n, pendingCredits: 0n, available: 700n, version: 3n });
    expect(await balanceOf(db(), payee)).toEqual({ posted: 300n, pendingDebits: 0n, pendingCredits: 0n, available: 300n, version: 2n });
    expect(await db().ledgerHold.findUniqueOrThrow({ where: { id: h.holdId } })).toMatchObject({
      status: 'POSTED',
      resolvedByLedgerTransactionId: p.ledgerTransactionId,
    });
    // The same key replays; any other resolution is refused.
    expect(await postHold(db(), { holdId: h.holdId, idempotencyKey: k, nature: 'hold.posted', postedAt: now() })).toEqual({ ...p, replayed: true });
    const before = await ledgerCounts();
    const again = await refused(postHold(db(), { holdId: h.holdId, idempotencyKey: key(), nature: 'hold.posted', postedAt: now() }));
    expect([again.code, again.reason]).toEqual(['INVALID_STATE', 'HOLD_RESOLVED']);
    expect((await refused(voidHold(db(), { holdId: h.holdId, idempotencyKey: key(), nature: 'hold.voided', postedAt: now() }))).reason).toBe('HOLD_RESOLVED');
    expect(await ledgerCounts()).toEqual(before);
    // The database refuses a second resolution too.
    await expect(db().$executeRawUnsafe(`UPDATE "LedgerHold" SET "status" = 'VOIDED' WHERE "id" = $1::uuid`, h.holdId)).rejects.toThrow(/exactly once/);
  });

  test('partial post: the remainder is released', async () => {
    const { payer, payee } = await setup();
    const h = await hold(payer, payee, 300n);
    await postHold(db(), { holdId: h.holdId, amount: 120n, idempotencyKey: key(), nature: 'hold.posted', postedAt: now() });
    expect(await balanceOf(db(), payer)).toEqual({ posted: 880n, pendingDebits: 0n, pendingCredits: 0n, available: 880n, version: 3n });
    expect(await balanceOf(db(), payee)).toMatchObject({ posted: 120n, pendingCredits: 0n });
    const row = await db().ledgerHold.findUniqueOrThrow({ where: { id: h.holdId } });
    expect([row.status, row.postedAmount.toFixed()]).toEqual(['POSTED', '120']);
    // More than held, or nothing: refused.
    const h2 = await hold(payer, payee, 50n);
    expect((await refused(postHold(db(), { holdId: h2.holdId, amount: 51n, idempotencyKey: key(), nature: 'hold.posted', postedAt: now() }))).reason).toBe(
      'INVALID_POSTING',
    );
    expect((await refused(postHold(db(), { holdId: h2.holdId, amount: 0n, idempotencyKey: key(), nature: 'hold.posted', postedAt: now() }))).reason).toBe(
      'INVALID_POSTING',
    );
    expect((await refused(postHold(db(), { holdId: randomUUID(), idempotencyKey: key(), nature: 'hold.posted', postedAt: now() }))).code).toBe('NOT_FOUND');
  });

  test('void releases everything; a hold beyond the available balance is refused', async () => {
    const { payer, payee } = await setup(100n);
    expect((await refused(hold(payer, payee, 101n))).reason).toBe('INSUFFICIENT_FUNDS');
    const h = await hold(payer, payee, 100n);
    expect((await balanceOf(db(), payer)).available).toBe(0n);
    const v = await voidHold(db(), { holdId: h.holdId, idempotencyKey: key(), nature: 'hold.voided', postedAt: now() });
    expect(await balanceOf(db(), payer)).toEqual({ posted: 100n, pendingDebits: 0n, pendingCredits: 0n, available: 100n, version: 2n });
    expect(await balanceOf(db(), payee)).toMatchObject({ posted: 0n, pendingCredits: 0n });
    const row = await db().ledgerHold.findUniqueOrThrow({ where: { id: h.holdId } });
    expect([row.status, row.resolvedByLedgerTransactionId]).toEqual(['VOIDED', v.ledgerTransactionId]);
    expect((await refused(postHold(db(), { holdId: h.holdId, idempotencyKey: key(), nature: 'hold.posted', postedAt: now() }))).reason).toBe('HOLD_RESOLVED');
  });

  test('expiry: refused to post or void from expiresAt on; expireHolds releases it once', async () => {
    const { payer, payee } = await setup();
    const h = await hold(payer, payee, 400n, new Date(now().getTime() + 60_000));
    const never = await hold(payer, payee, 100n);
    expect(await expireHolds(db(), now())).toBe(0);
    suite.app.clock.advance(60_000);
    expect((await refused(postHold(db(), { holdId: h.holdId, idempotencyKey: key(), nature: 'hold.posted', postedAt: now() }))).reason).toBe('HOLD_EXPIRED');
    expect((await refused(voidHold(db(), { holdId: h.holdId, idempotencyKey: key(), nature: 'hold.voided', postedAt: now() }))).reason).toBe('HOLD_EXPIRED');
    expect((await balanceOf(db(), payer)).pendingDebits).toBe(500n);
    expect(await expireHolds(db(), now())).toBe(1);
    expect(await expireHolds(db(), now())).toBe(0);
    expect(await balanceOf(db(), payer)).toMatchObject({ posted: 1000n, pendingDebits: 100n, available: 900n });
    expect((await db().ledgerHold.findUniqueOrThrow({ where: { id: h.holdId } })).status).toBe('EXPIRED');
    expect((await db().ledgerHold.findUniqueOrThrow({ where: { id: never.holdId } })).status).toBe('PENDING');
  });

  test('the expiry job (pg-boss) expires due holds with the service clock', async () => {
    const { payer, payee } = await setup();
    const h = await hold(payer, payee, 250n, new Date(now().getTime() + 1000));
    suite.app.clock.advance(5000);
    const worker = await startJobs(
      suite.app.databaseUrl,
      { db: db(), clock: suite.app.clock, log: suite.app.deps.log, config: suite.app.deps.config, sealingKey: suite.app.deps.sealingKey },
      { work: true },
    );
    try {
      const jobId = await worker.send(EXPIRE_HOLDS_QUEUE, {});
      let state: string | undefined;
      for (let i = 0; i < 100 && state !== 'completed'; i++) {
        await new Promise((r) => setTimeout(r, 100));
        state = (await worker.getJobById(EXPIRE_HOLDS_QUEUE, jobId!))?.state;
      }
      expect(state).toBe('completed');
    } finally {
      await stopJobs(worker, { graceful: false });
    }
    expect((await db().ledgerHold.findUniqueOrThrow({ where: { id: h.holdId } })).status).toBe('EXPIRED');
    expect((await balanceOf(db(), payer)).available).toBe(1000n);
  });

  test('concurrent resolutions of one hold: exactly one wins', async () => {
    const { payer, payee } = await setup();
    const h = await hold(payer, payee, 300n);
    const attempts = Array.from({ length: 12 }, (_v, i) =>
      (i % 2
        ? voidHold(db(), { holdId: h.holdId, idempotencyKey: key(), nature: 'hold.voided', postedAt: now() })
        : postHold(db(), { holdId: h.holdId, idempotencyKey: key(), nature: 'hold.posted', postedAt: now() })
      ).then(
        () => 'ok',
        (e: LedgerError) => e.reason,
      ),
    );
    const outcomes = await Promise.all(attempts);
    expect(outcomes.filter((o) => o === 'ok')).toHaveLength(1);
    expect(outcomes.filter((o) => o === 'HOLD_RESOLVED')).toHaveLength(11);
    expect(await db().ledgerTransaction.count({ where: { referenceId: h.holdId } })).toBe(1);
  });
});

describe('frozen and closed accounts', () => {
  test('FROZEN refuses debits (and posting its holds) but accepts credits; CLOSED refuses both', async () => {
    const m = await signUpMember(suite.app);
    const an = await assetNetwork();
    const id = await account(m);
    const a = customer(m, id, an);
    const b = customer(m, await account(m), an);
    await fund(a, 1000n);
    await fund(b, 1000n);
    const h = await createHold(db(), { idempotencyKey: key(), nature: 'test.hold', debit: a, credit: b, amount: 100n, postedAt: now() });
    const h2 = await createHold(db(), { idempotencyKey: key(), nature: 'test.hold', debit: a, credit: b, amount: 100n, postedAt: now() });
    expect((await suite.app.rest('POST', `/v1/accounts/${id}/freeze`, { body: { reason: 'investigation' }, headers: m.headers })).status).toBe(204);

    const before = await ledgerCounts();
    const out = await refused(postLedgerTransaction(db(), posting([debit(a, 10n), credit(b, 10n)])));
    expect([out.code, out.reason]).toEqual(['INVALID_STATE', 'ACCOUNT_FROZEN']);
    expect((await refused(createHold(db(), { idempotencyKey: key(), nature: 'test.hold', debit: a, credit: b, amount: 1n, postedAt: now() }))).reason).toBe(
      'ACCOUNT_FROZEN',
    );
    expect((await refused(postHold(db(), { holdId: h.holdId, idempotencyKey: key(), nature: 'hold.posted', postedAt: now() }))).reason).toBe('ACCOUNT_FROZEN');
    expect(await ledgerCounts()).toEqual(before);
    // Money in is fine, and releasing a hold moves nothing out.
    await postLedgerTransaction(db(), posting([debit(b, 10n), credit(a, 10n)]));
    await voidHold(db(), { holdId: h.holdId, idempotencyKey: key(), nature: 'hold.voided', postedAt: now() });
    expect(await balanceOf(db(), a)).toMatchObject({ posted: 1010n, pendingDebits: 100n, available: 910n });

    expect((await suite.app.rest('POST', `/v1/accounts/${id}/unfreeze`, { headers: m.headers })).status).toBe(204);
    await postHold(db(), { holdId: h2.holdId, idempotencyKey: key(), nature: 'hold.posted', postedAt: now() });
    await postLedgerTransaction(db(), posting([debit(a, 910n), credit(b, 910n)]));

    expect((await suite.app.rest('DELETE', `/v1/accounts/${id}`, { headers: m.headers })).status).toBe(204);
    const closedBefore = await ledgerCounts();
    expect((await refused(postLedgerTransaction(db(), posting([debit(b, 10n), credit(a, 10n)])))).reason).toBe('ACCOUNT_CLOSED');
    expect((await refused(postLedgerTransaction(db(), posting([debit(a, 1n), credit(b, 1n)])))).reason).toBe('ACCOUNT_CLOSED');
    // A hold crediting a closed account cannot be posted.
    const c = customer(m, await account(m), an);
    await fund(c, 10n);
    expect((await refused(createHold(db(), { idempotencyKey: key(), nature: 'test.hold', debit: c, credit: a, amount: 5n, postedAt: now() }))).reason).toBe(
      'ACCOUNT_CLOSED',
    );
    expect((await ledgerCounts()).transactions).toBe(closedBefore.transactions + 1);
  });
});

describe('postings and status changes', () => {
  test('a freeze waits for the postings in flight; the postings after it see it', async () => {
    const m = await signUpMember(suite.app);
    const an = await assetNetwork();
    const id = await account(m);
    const a = customer(m, id, an);
    const b = customer(m, await account(m), an);
    await fund(a, 100n);
    let answered = false;
    let freeze: Promise<{ status: number }> | undefined;
    await db().$transaction(
      async (tx) => {
        await postLedgerTransaction(tx, posting([debit(a, 30n), credit(b, 30n)]));
        freeze = suite.app.rest('POST', `/v1/accounts/${id}/freeze`, { body: { reason: 'race' }, headers: m.headers }).then((r) => {
          answered = true;
          return r;
        });
        let waiting = 0;
        for (let i = 0; i < 300 && !waiting; i++) {
          await new Promise((r) => setTimeout(r, 10));
          const rows = await tx.$queryRawUnsafe<{ n: bigint }[]>(
            `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'advisory'`,
          );
          waiting = Number(rows[0]!.n);
        }
        // The freeze is waiting for this posting's transaction.
        expect(waiting).toBe(1);
        expect(answered).toBe(false);
      },
      { timeout: 20_000 },
    );
    expect((await freeze!).status).toBe(204);
    expect(await balanceOf(db(), a)).toMatchObject({ posted: 70n });
    expect((await refused(postLedgerTransaction(db(), posting([debit(a, 1n), credit(b, 1n)])))).reason).toBe('ACCOUNT_FROZEN');
  });
});

describe('append-only', () => {
  test('entries and transactions refuse UPDATE, DELETE and TRUNCATE; balance rows only grow; holds resolve once', async () => {
    const m = await signUpMember(suite.app);
    const an = await assetNetwork();
    const a = customer(m, await account(m), an);
    const r = await fund(a, 100n);
    const entry = await db().ledgerEntry.findFirstOrThrow({ where: { ledgerTransactionId: r.ledgerTransactionId, direction: 'CREDIT' } });
    const statements = [
      [`UPDATE "LedgerEntry" SET "amount" = 1 WHERE "id" = $1::uuid`, entry.id],
      [`DELETE FROM "LedgerEntry" WHERE "id" = $1::uuid`, entry.id],
      [`TRUNCATE "LedgerEntry" CASCADE`],
      [`UPDATE "LedgerTransaction" SET "nature" = 'x' WHERE "id" = $1::uuid`, r.ledgerTransactionId],
      [`DELETE FROM "LedgerTransaction" WHERE "id" = $1::uuid`, r.ledgerTransactionId],
      [`TRUNCATE "LedgerTransaction" CASCADE`],
      [`UPDATE "LedgerAccount" SET "creditsPosted" = 0 WHERE "id" = $1::uuid`, entry.ledgerAccountId],
      [`UPDATE "LedgerAccount" SET "version" = 0 WHERE "id" = $1::uuid`, entry.ledgerAccountId],
      [`UPDATE "LedgerAccount" SET "ownerId" = gen_random_uuid() WHERE "id" = $1::uuid`, entry.ledgerAccountId],
      [`DELETE FROM "LedgerAccount" WHERE "id" = $1::uuid`, entry.ledgerAccountId],
    ] as const;
    // As the owner: the service's role may not even try most of these (test/db-roles.test.ts); the triggers refuse them to the owner too.
    for (const [sql, ...params] of statements)
      await expect(suite.app.ownerDb.$executeRawUnsafe(sql, ...params), sql).rejects.toThrow(/append-only|never removed|immutable|only grow/);
    expect(await balanceOf(db(), a)).toMatchObject({ posted: 100n, version: 1n });
  });
});

describe('concurrency', () => {
  test('64 concurrent postings between the same accounts lose and duplicate nothing', async () => {
    const m = await signUpMember(suite.app);
    const an = await assetNetwork();
    const [a, b, c] = [customer(m, await account(m), an), customer(m, await account(m), an), customer(m, await account(m), an)];
    await fund(a, 10_000n);
    await fund(b, 10_000n);
    await fund(c, 10_000n);
    const accounts = [a, b, c];
    // Every direction, on the client and inside callers' transactions (the savepoint path).
    const moves = Array.from({ length: 64 }, (_v, i) => ({
      from: accounts[i % 3]!,
      to: accounts[(i + 1 + (i % 2)) % 3]!,
      amount: BigInt(i + 2),
      inTx: i % 4 === 0,
    }));
    const results = await Promise.all(
      moves.map((mv) => {
        const input = posting([debit(mv.from, mv.amount), credit(mv.to, mv.amount - 1n), credit(fees(an), 1n)]);
        return mv.inTx ? db().$transaction((tx) => postLedgerTransaction(tx, input)) : postLedgerTransaction(db(), input);
      }),
    );
    expect(new Set(results.map((r) => r.ledgerTransactionId)).size).toBe(64);
    const expected = new Map(accounts.map((x) => [x.ownerId, 10_000n]));
    for (const mv of moves) {
      expected.set(mv.from.ownerId, expected.get(mv.from.ownerId)! - mv.amount);
      expected.set(mv.to.ownerId, expected.get(mv.to.ownerId)! + mv.amount - 1n);
    }
    for (const x of accounts) {
      const bal = await balanceOf(db(), x);
      expect(bal.posted).toBe(expected.get(x.ownerId));
      // One entry for the funding, one per move touching it.
      expect(bal.version).toBe(1n + BigInt(moves.filter((mv) => mv.from === x || mv.to === x).length));
    }
    expect(await balanceOf(db(), fees(an))).toMatchObject({ posted: 64n, version: 64n });
  });

  test('a deadlock is retried: both postings complete, nothing lost', async () => {
    const m = await signUpMember(suite.app);
    const an = await assetNetwork();
    // Balance rows are locked in id order (UUIDv7: creation order): c's row before a's.
    const c = customer(m, await account(m), an);
    const a = customer(m, await account(m), an);
    const b = customer(m, await account(m), an);
    await fund(c, 1000n);
    await fund(a, 1000n);
    await fund(b, 1000n);
    const retriesBefore = ledgerMetrics.retries;
    let second: Promise<unknown> | undefined;
    let attempts = 0;
    await retryingTransaction(
      db(),
      async (tx) => {
        attempts++;
        // The caller's transaction holds a's and b's rows...
        await postLedgerTransaction(tx, posting([debit(a, 10n), credit(b, 10n)]));
        if (!second) {
          // ...while another posting locks c's, then waits for a's.
          second = postLedgerTransaction(db(), posting([debit(c, 20n), credit(a, 20n)]));
          for (let i = 0; i < 200; i++) {
            const waiting = await tx.$queryRawUnsafe<{ n: bigint }[]>(
              `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
            );
            if (Number(waiting[0]!.n) > 0) break;
            await new Promise((r) => setTimeout(r, 10));
          }
        }
        // Now the caller needs c's row: a cycle. One side is aborted and retried.
        await postLedgerTransaction(tx, posting([debit(c, 30n), credit(a, 30n)]));
      },
      { timeout: 20_000 },
    );
    await second;
    // PostgreSQL detected the cycle (after deadlock_timeout) and aborted one side: the autocommitted
    // posting is retried in place, the caller's transaction is run again whole by its retry.
    expect(ledgerMetrics.retries > retriesBefore || attempts === 2).toBe(true);
    expect(await balanceOf(db(), a)).toMatchObject({ posted: 1040n, version: 4n });
    expect(await balanceOf(db(), b)).toMatchObject({ posted: 1010n, version: 2n });
    expect(await balanceOf(db(), c)).toMatchObject({ posted: 950n, version: 3n });
  }, 30_000);
  test("a deadlock whose victim is a caller's transaction aborts it whole, and the caller's retry runs it again (never a retry in place in an aborted transaction: 25P02)", async () => {
    const m = await signUpMember(suite.app);
    const an = await assetNetwork();
    const [a, b, c] = [customer(m, await account(m), an), customer(m, await account(m), an), customer(m, await account(m), an)];
    await fund(a, 1000n);
    await fund(b, 1000n);
    await fund(c, 1000n);
    const rowOf = async (x: LedgerAccountRef) =>
      (
        await db().$queryRawUnsafe<{ id: string }[]>(
          `SELECT "id"::text AS id FROM "LedgerAccount" WHERE "kind" = 'CUSTOMER' AND "ownerId" = $1::uuid`,
          x.ownerId,
        )
      )[0]!.id;
    const [aRow, cRow] = [await rowOf(a), await rowOf(c)];
    const other = await poolOf(db())!.connect();
    let attempts = 0;
    try {
      // Another session holds c's row; the caller's transaction holds a's (and b's), then waits for
      // c's first; the other session then asks for a's: the caller waited first, so it is the victim.
      await other.query('BEGIN');
      await other.query('SELECT 1 FROM "LedgerAccount" WHERE "id" = $1::uuid FOR UPDATE', [cRow]);
      let otherDone: Promise<unknown> | undefined;
      await retryingTransaction(db(), async (tx) => {
        attempts++;
        await postLedgerTransaction(tx, posting([debit(a, 10n), credit(b, 10n)]));
        if (attempts === 1) {
          otherDone = (async () => {
            for (let i = 0; i < 500; i++) {
              const w = await db().$queryRawUnsafe<{ n: bigint }[]>(
                `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
              );
              if (Number(w[0]!.n) > 0) break;
              await new Promise((r) => setTimeout(r, 10));
            }
            await new Promise((r) => setTimeout(r, 200)); // the caller has waited longer: its deadlock check runs first
            await other.query('SELECT 1 FROM "LedgerAccount" WHERE "id" = $1::uuid FOR UPDATE', [aRow]);
            await other.query('COMMIT');
          })();
        }
        await postLedgerTransaction(tx, posting([debit(c, 30n), credit(a, 30n)]));
      });
      await otherDone;
    } finally {
      other.release();
    }
    // The first attempt was aborted whole by the deadlock; the second committed both postings once.
    expect(attempts).toBe(2);
    expect(await balanceOf(db(), a)).toMatchObject({ posted: 1020n, version: 3n });
    expect(await balanceOf(db(), b)).toMatchObject({ posted: 1010n, version: 2n });
    expect(await balanceOf(db(), c)).toMatchObject({ posted: 970n, version: 2n });
  }, 30_000);
});

describe('the batcher', () => {
  test('one transaction for the batch; a refused posting fails alone; each caller gets its own answer', async () => {
    const m = await signUpMember(suite.app);
    const an = await assetNetwork();
    const [a, b] = [customer(m, await account(m), an), customer(m, await account(m), an)];
    await fund(a, 100n);
    const used = key('used');
    await postLedgerTransaction(db(), posting([debit(clearing(an), 1n), credit(b, 1n)], { idempotencyKey: used }));
    const batcher = createLedgerBatcher(db(), { maxBatch: 64, maxWaitMs: 50, concurrency: 1 });
    const inputs = [
      posting([debit(clearing(an), 5n), credit(a, 5n)]),
      posting([debit(a, 1000n), credit(b, 1000n)]), // insufficient funds
      posting([debit(a, 50n), credit(b, 50n)]),
      posting([debit(clearing(an), 2n), credit(b, 2n)], { idempotencyKey: used }), // key used for another payload
      posting([debit(a, 55n), credit(b, 55n)]), // exactly what is left after the others (100 + 5 - 50)
      posting([debit(a, 1n), credit(b, 1n)]), // now nothing is left
    ];
    const outcomes = await Promise.all(
      inputs.map((i) =>
        batcher.post(i).then(
          (r) => r,
          (e: LedgerError) => e,
        ),
      ),
    );
    await batcher.close();
    expect(outcomes.map((o) => (o instanceof LedgerError ? o.reason : 'ok'))).toEqual([
      'ok',
      'INSUFFICIENT_FUNDS',
      'ok',
      'IDEMPOTENCY_CONFLICT',
      'ok',
      'INSUFFICIENT_FUNDS',
    ]);
    const ids = outcomes.filter((o): o is { ledgerTransactionId: string; replayed: boolean } => !(o instanceof LedgerError)).map((o) => o.ledgerTransactionId);
    // The three committed together: one database transaction.
    const xmins = await db().$queryRawUnsafe<{ n: bigint }[]>(
      `SELECT count(DISTINCT xmin::text) AS n FROM "LedgerTransaction" WHERE "id" = ANY($1::uuid[])`,
      ids,
    );
    expect(Number(xmins[0]!.n)).toBe(1);
    expect(await balanceOf(db(), a)).toMatchObject({ posted: 0n, version: 4n });
    expect(await balanceOf(db(), b)).toMatchObject({ posted: 106n });
    // Invalid input is refused at once, and a closed batcher refuses.
    await expect(batcher.post(posting([debit(a, 1n)]))).rejects.toThrow(/closed/);
    const b2 = createLedgerBatcher(db());
    await expect(b2.post(posting([debit(a, 1n)]))).rejects.toMatchObject({ reason: 'INVALID_POSTING' });
    await b2.close();
  });

  test('same key twice in one batch: one posting, the second caller replays it', async () => {
    const m = await signUpMember(suite.app);
    const an = await assetNetwork();
    const a = customer(m, await account(m), an);
    const batcher = createLedgerBatcher(db(), { maxWaitMs: 50 });
    const k = key('dup');
    const input = posting([debit(clearing(an), 9n), credit(a, 9n)], { idempotencyKey: k });
    const [x, y] = await Promise.all([batcher.post(input), batcher.post(input)]);
    await batcher.close();
    expect(x.ledgerTransactionId).toBe(y.ledgerTransactionId);
    expect([x.replayed, y.replayed]).toEqual([false, true]);
    expect(await balanceOf(db(), a)).toMatchObject({ posted: 9n, version: 1n });
  });

  test('a posting that breaks the whole batch (numeric overflow) is isolated: the others commit', async () => {
    const m = await signUpMember(suite.app);
    const an = await assetNetwork();
    const other = await assetNetwork();
    const a = customer(m, await account(m), other);
    const max = 2n ** 256n - 1n; // the largest amount; eight of them still fit NUMERIC(78,0), nine do not
    for (let i = 0; i < 8; i++) await postLedgerTransaction(db(), posting([debit(clearing(an), max), credit(fees(an), max)]));
    const batcher = createLedgerBatcher(db(), { maxWaitMs: 50 });
    const outcomes = await Promise.all(
      [
        batcher.post(posting([debit(clearing(other), 3n), credit(a, 3n)])),
        batcher.post(posting([debit(clearing(an), max), credit(fees(an), max)])), // totals would exceed NUMERIC(78,0)
        batcher.post(posting([debit(clearing(other), 4n), credit(a, 4n)])),
      ].map((p) =>
        p.then(
          () => 'ok',
          (e: Error) => e.message,
        ),
      ),
    );
    await batcher.close();
    expect(outcomes[0]).toBe('ok');
    expect(outcomes[1]).toMatch(/overflow/i);
    expect(outcomes[2]).toBe('ok');
    expect(await balanceOf(db(), a)).toMatchObject({ posted: 7n, version: 2n });
  });

  test('64 concurrent callers through the batcher: exact sums and versions', async () => {
    const m = await signUpMember(suite.app);
    const an = await assetNetwork();
    const a = customer(m, await account(m), an);
    const b = customer(m, await account(m), an);
    await fund(a, 1_000_000n);
    const batcher = createLedgerBatcher(db(), { maxBatch: 32, maxWaitMs: 1 });
    let moved = 0n;
    await Promise.all(
      Array.from({ length: 64 }, async (_v, caller) => {
        for (let i = 0; i < 5; i++) {
          const amount = BigInt(caller * 10 + i + 1);
          await batcher.post(posting([debit(a, amount), credit(b, amount)]));
          moved += amount;
        }
      }),
    );
    await batcher.close();
    expect(await balanceOf(db(), a)).toMatchObject({ posted: 1_000_000n - moved, version: 321n });
    expect(await balanceOf(db(), b)).toMatchObject({ posted: moved, version: 320n });
  });

  test('batches in flight side by side (disjoint accounts, a shared fee account): exact sums and versions', async () => {
    const m = await signUpMember(suite.app);
    const an = await assetNetwork();
    const accounts = await Promise.all(Array.from({ length: 12 }, async () => customer(m, await account(m), an)));
    for (const x of accounts) await fund(x, 10_000n);
    const batcher = createLedgerBatcher(db(), { maxWaitMs: 1, concurrency: 3 });
    const expected = new Map(accounts.map((x) => [x.ownerId, 10_000n]));
    const touched = new Map(accounts.map((x) => [x.ownerId, 1n]));
    let fee = 0n;
    await Promise.all(
      Array.from({ length: 48 }, async (_v, caller) => {
        for (let i = 0; i < 4; i++) {
          const from = accounts[(caller + i) % 12]!;
          const to = accounts[(caller * 7 + i + 1) % 12]!;
          if (from === to) continue;
          const withFee = (caller + i) % 5 === 0;
          await batcher.post(posting([debit(from, 10n), credit(to, withFee ? 9n : 10n), ...(withFee ? [credit(fees(an), 1n)] : [])]));
          expected.set(from.ownerId, expected.get(from.ownerId)! - 10n);
          expected.set(to.ownerId, expected.get(to.ownerId)! + (withFee ? 9n : 10n));
          touched.set(from.ownerId, touched.get(from.ownerId)! + 1n);
          touched.set(to.ownerId, touched.get(to.ownerId)! + 1n);
          if (withFee) fee++;
        }
      }),
    );
    await batcher.close();
    for (const x of accounts) expect(await balanceOf(db(), x)).toMatchObject({ posted: expected.get(x.ownerId), version: touched.get(x.ownerId) });
    expect(await balanceOf(db(), fees(an))).toMatchObject({ posted: fee, version: fee });
  });
});

describe('balances over GraphQL and REST', () => {
  test('members with account-read and operators read them; other organizations get 404; API keys 403', async () => {
    const m = await signUpMember(suite.app);
    const an = await assetNetwork();
    const an2 = await assetNetwork();
    const id = await account(m);
    await fund(customer(m, id, an), 700n);
    await fund(customer(m, id, an2), 2n ** 70n);
    await createHold(db(), { idempotencyKey: key(), nature: 'test.hold', debit: customer(m, id, an), credit: fees(an), amount: 200n, postedAt: now() });
    const expected = [
      { assetNetworkId: an, posted: '700', pendingDebits: '200', pendingCredits: '0', available: '500', version: '2' },
      { assetNetworkId: an2, posted: (2n ** 70n).toString(), pendingDebits: '0', pendingCredits: '0', available: (2n ** 70n).toString(), version: '1' },
    ].sort((x, y) => x.assetNetworkId.localeCompare(y.assetNetworkId));
    const query = `query($id: ID!) { accountBalances(accountId: $id) { assetNetworkId posted pendingDebits pendingCredits available version updatedAt } }`;
    const g = await suite.app.gql<{ accountBalances: Record<string, unknown>[] }>(query, { id }, m.headers);
    expect(g.errors).toBeUndefined();
    expect(g.data!.accountBalances.map(({ updatedAt: _u, ...rest }) => rest)).toEqual(expected);
    const r = await suite.app.rest('GET', `/v1/accounts/${id}/balances`, { headers: m.headers });
    expect(r.status).toBe(200);
    expect(r.body).toEqual(g.data!.accountBalances);
    const op = await createOperator(suite.app);
    expect((await suite.app.rest('GET', `/v1/accounts/${id}/balances`, { headers: op.headers })).body).toEqual(r.body);
    // A new account has none.
    expect((await suite.app.rest('GET', `/v1/accounts/${await account(m)}/balances`, { headers: m.headers })).body).toEqual([]);
    const other = await signUpMember(suite.app);
    for (const path of [`/v1/accounts/${id}/balances`, `/v1/accounts/${randomUUID()}/balances`, '/v1/accounts/nope/balances']) {
      const x = await suite.app.rest('GET', path, { headers: other.headers });
      expect([x.status, x.body.code]).toEqual([404, 'NOT_FOUND']);
    }
    const k = await createApiKey(suite.app, m);
    expect((await suite.app.rest('GET', `/v1/accounts/${id}/balances`, { headers: k.headers })).status).toBe(403);
    expect((await suite.app.rest('GET', `/v1/accounts/${id}/balances`)).status).toBe(401);
    // The route and the field share one policy.
    expect(routes.find((x) => x.operationId === 'GetAccountBalances')?.policy).toEqual(accountBalancesPolicy);
  });
});

describe('property: random postings and holds agree with a model', () => {
  type Cmd =
    | { t: 'deposit'; to: number; amount: bigint }
    | { t: 'transfer'; from: number; to: number; amount: bigint; fee: bigint }
    | { t: 'hold'; from: number; to: number; amount: bigint; ttl: number | null }
    | { t: 'post'; h: number; amount: bigint | null }
    | { t: 'void'; h: number }
    | { t: 'advance'; seconds: number }
    | { t: 'replay'; k: number }
    | { t: 'conflict'; k: number };
  const amount = fc.bigInt({ min: 1n, max: 400n });
  const who = fc.integer({ min: 0, max: 2 });
  const cmd: fc.Arbitrary<Cmd> = fc.oneof(
    fc.record({ t: fc.constant('deposit' as const), to: who, amount }),
    fc.record({ t: fc.constant('transfer' as const), from: who, to: who, amount, fee: fc.bigInt({ min: 0n, max: 5n }) }),
    fc.record({ t: fc.constant('hold' as const), from: who, to: who, amount, ttl: fc.option(fc.integer({ min: 1, max: 120 }), { nil: null }) }),
    fc.record({ t: fc.constant('post' as const), h: fc.nat(), amount: fc.option(amount, { nil: null }) }),
    fc.record({ t: fc.constant('void' as const), h: fc.nat() }),
    fc.record({ t: fc.constant('advance' as const), seconds: fc.integer({ min: 1, max: 90 }) }),
    fc.record({ t: fc.constant('replay' as const), k: fc.nat() }),
    fc.record({ t: fc.constant('conflict' as const), k: fc.nat() }),
  );

  test('balances, pending totals, outcomes and invariants', async () => {
    const m = await signUpMember(suite.app);
    const ids = [await account(m, 'p0'), await account(m, 'p1'), await account(m, 'p2')];
    await fc.assert(
      fc.asyncProperty(fc.array(cmd, { minLength: 1, maxLength: 40 }), async (cmds) => {
        const an = await assetNetwork();
        const refs = ids.map((id) => customer(m, id, an));
        // The model: per customer posted/pending, fees, clearing; holds; successful operations (for replays).
        const bal = refs.map(() => ({ posted: 0n, pendingDebits: 0n, pendingCredits: 0n, version: 0n }));
        let feesPosted = 0n;
        let clearingPosted = 0n;
        const holds: { id: string; from: number; to: number; amount: bigint; expiresAt: number | null; status: string }[] = [];
        const done: { run: (k: string) => Promise<{ ledgerTransactionId: string }>; key: string; id: string; conflict: (k: string) => Promise<unknown> }[] = [];
        const available = (i: number) => bal[i]!.posted - bal[i]!.pendingDebits;
        for (const c of cmds) {
          const at = now();
          switch (c.t) {
            case 'deposit': {
              const run = (k: string) =>
                postLedgerTransaction(db(), {
                  idempotencyKey: k,
                  nature: 'deposit',
                  lines: [debit(clearing(an), c.amount), credit(refs[c.to]!, c.amount)],
                  postedAt: at,
                });
              const k = key();
              const r = await run(k);
              bal[c.to]!.posted += c.amount;
              bal[c.to]!.version++;
              clearingPosted += c.amount;
              done.push({
                run,
                key: k,
                id: r.ledgerTransactionId,
                conflict: (k2) =>
                  postLedgerTransaction(db(), {
                    idempotencyKey: k2,
                    nature: 'deposit',
                    lines: [debit(clearing(an), c.amount + 1n), credit(refs[c.to]!, c.amount + 1n)],
                    postedAt: at,
                  }),
              });
              break;
            }
            case 'transfer': {
              if (c.from === c.to) break;
              const lines = [debit(refs[c.from]!, c.amount + c.fee), credit(refs[c.to]!, c.amount), ...(c.fee ? [credit(fees(an), c.fee)] : [])];
              const run = (k: string) => postLedgerTransaction(db(), { idempotencyKey: k, nature: 'transfer', lines, postedAt: at });
              const k = key();
              const outcome = await run(k).then(
                (r) => r,
                (e: LedgerError) => e,
              );
              if (available(c.from) >= c.amount + c.fee) {
                expect(outcome).not.toBeInstanceOf(LedgerError);
                bal[c.from]!.posted -= c.amount + c.fee;
                bal[c.to]!.posted += c.amount;
                bal[c.from]!.version++;
                bal[c.to]!.version++;
                feesPosted += c.fee;
                done.push({
                  run,
                  key: k,
                  id: (outcome as { ledgerTransactionId: string }).ledgerTransactionId,
                  conflict: (k2) => postLedgerTransaction(db(), { idempotencyKey: k2, nature: 'transfer.other', lines, postedAt: at }),
                });
              } else expect((outcome as LedgerError).reason).toBe('INSUFFICIENT_FUNDS');
              break;
            }
            case 'hold': {
              if (c.from === c.to) break;
              const expiresAt = c.ttl === null ? null : new Date(at.getTime() + c.ttl * 1000);
              const outcome = await createHold(db(), {
                idempotencyKey: key(),
                nature: 'hold',
                debit: refs[c.from]!,
                credit: refs[c.to]!,
                amount: c.amount,
                expiresAt,
                postedAt: at,
              }).then(
                (r) => r,
                (e: LedgerError) => e,
              );
              if (available(c.from) >= c.amount) {
                expect(outcome).not.toBeInstanceOf(LedgerError);
                holds.push({
                  id: (outcome as { holdId: string }).holdId,
                  from: c.from,
                  to: c.to,
                  amount: c.amount,
                  expiresAt: expiresAt?.getTime() ?? null,
                  status: 'PENDING',
                });
                bal[c.from]!.pendingDebits += c.amount;
                bal[c.to]!.pendingCredits += c.amount;
                bal[c.from]!.version++;
                bal[c.to]!.version++;
              } else expect((outcome as LedgerError).reason).toBe('INSUFFICIENT_FUNDS');
              break;
            }
            case 'post':
            case 'void': {
              if (!holds.length) break;
              const h = holds[c.h % holds.length]!;
              const postAmount = c.t === 'post' ? c.amount : null;
              const outcome = await (
                c.t === 'post'
                  ? postHold(db(), {
                      holdId: h.id,
                      idempotencyKey: key(),
                      nature: 'hold.posted',
                      postedAt: at,
                      ...(postAmount === null ? {} : { amount: postAmount }),
                    })
                  : voidHold(db(), { holdId: h.id, idempotencyKey: key(), nature: 'hold.voided', postedAt: at })
              ).then(
                (r) => r,
                (e: LedgerError) => e,
              );
              const expected =
                h.status !== 'PENDING'
                  ? 'HOLD_RESOLVED'
                  : h.expiresAt !== null && at.getTime() >= h.expiresAt
                    ? 'HOLD_EXPIRED'
                    : postAmount !== null && postAmount > h.amount
                      ? 'INVALID_POSTING'
                      : 'ok';
              expect(outcome instanceof LedgerError ? outcome.reason : 'ok').toBe(expected);
              if (expected === 'ok') {
                bal[h.from]!.pendingDebits -= h.amount;
                bal[h.to]!.pendingCredits -= h.amount;
                if (c.t === 'post') {
                  const p = postAmount ?? h.amount;
                  bal[h.from]!.posted -= p;
                  bal[h.to]!.posted += p;
                  bal[h.from]!.version++;
                  bal[h.to]!.version++;
                  h.status = 'POSTED';
                } else h.status = 'VOIDED';
              }
              break;
            }
            case 'advance': {
              suite.app.clock.advance(c.seconds * 1000);
              const t = now().getTime();
              const due = holds.filter((h) => h.status === 'PENDING' && h.expiresAt !== null && h.expiresAt <= t);
              // Holds of earlier runs may expire here too: count only this run's.
              await expireHolds(db(), now());
              for (const h of due) {
                h.status = 'EXPIRED';
                bal[h.from]!.pendingDebits -= h.amount;
                bal[h.to]!.pendingCredits -= h.amount;
              }
              const statuses = await db().ledgerHold.findMany({ where: { id: { in: holds.map((h) => h.id) } }, select: { id: true, status: true } });
              for (const s of statuses) expect(s.status).toBe(holds.find((h) => h.id === s.id)!.status);
              break;
            }
            case 'replay': {
              if (!done.length) break;
              const d = done[c.k % done.length]!;
              expect(await d.run(d.key)).toEqual({ ledgerTransactionId: d.id, replayed: true });
              break;
            }
            case 'conflict': {
              if (!done.length) break;
              const d = done[c.k % done.length]!;
              expect((await refused(d.conflict(d.key))).reason).toBe('IDEMPOTENCY_CONFLICT');
              break;
            }
          }
        }
        for (let i = 0; i < refs.length; i++) {
          const actual = await balanceOf(db(), refs[i]!);
          const b = bal[i]!;
          expect(actual).toEqual({
            posted: b.posted,
            pendingDebits: b.pendingDebits,
            pendingCredits: b.pendingCredits,
            available: b.posted - b.pendingDebits,
            version: b.version,
          });
        }
        expect((await balanceOf(db(), fees(an))).posted).toBe(feesPosted);
        expect((await balanceOf(db(), clearing(an))).posted).toBe(clearingPosted);
        await checkLedgerInvariants(db());
      }),
      { numRuns: 50 },
    );
  }, 120_000);
});
