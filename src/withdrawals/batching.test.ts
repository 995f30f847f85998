import { describe, expect, test } from 'vitest';
import { drainMoneyWork } from '../../test/fixtures/settlements/testing';
import { moneyDeps } from '../../test/fixtures/deposits/testing';
import { withdrawalSuite, type WithdrawalSetup } from '../../test/fixtures/withdrawals/testing';
import { withdrawalHandlers } from './withdrawals.jobs';
import { followNetworkWithdrawals, RESERVE_RETRY_MS, type WithdrawalBroadcastJob } from './withdrawals';
import { withdrawalRequestGroupStats } from './requests';
import { WITHDRAWAL_BROADCAST_QUEUE } from '../kernel/queues';
import { liveJobKeys } from '../operations/recovery';
import { setupIntegrator } from '../../test/money-helpers';

/**
 * Withdrawals at database speed (issue 22): the statements one withdrawal costs at request, at
 * broadcast and at confirmation (load-independent); the groups requests are written in (one
 * transaction per group, each refused alone), and the groups the broadcast job and the chain.sync
 * confirmation work in.
 */
const DEST = '0x00000000000000000000000000000000000000e1';
const t = withdrawalSuite(DEST);
const { idOf, setup, get, mine, sweptToHot, sweep, balance, withdrawalEvents } = t;
const deps = () => ({ ...moneyDeps(t.app), sealingKey: t.app.deps.sealingKey });

async function withdraw(s: WithdrawalSetup, amount: bigint): Promise<string> {
  const r = await t.app.rest('POST', `/v1/accounts/${s.accountId}/withdrawals`, {
    headers: s.f.apiKeyHeaders,
    body: { amount: amount.toString(), assetNetworkId: s.f.catalog.assetNetworkId, withdrawalDestinationId: s.destinationId },
  });
  expect(r.status, r.text).toBe(201);
  return idOf(r);
}

const ask = (s: WithdrawalSetup, amount: bigint, headers: Record<string, string> = {}) =>
  t.app.rest('POST', `/v1/accounts/${s.accountId}/withdrawals`, {
    headers: { ...s.f.apiKeyHeaders, ...headers },
    body: { amount: amount.toString(), assetNetworkId: s.f.catalog.assetNetworkId, withdrawalDestinationId: s.destinationId },
  });

/**
 * Requests gathered into groups: the asset-network's CHAIN_CLEARING balance row is held locked (as a
 * long group would hold it) while `fire` sends them, so the first groups wait for it and the requests
 * after them queue up; once they all queued, the row is released and they are written in groups.
 */
async function gathered<T>(s: WithdrawalSetup, fire: () => Promise<T>[]): Promise<T[]> {
  let release!: () => void;
  const released = new Promise<void>((ok) => (release = ok));
  let holder!: (pid: number) => void;
  const pid = new Promise<number>((ok) => (holder = ok));
  const held = t.app.deps.db.$transaction(
    async (tx) => {
      const [me] = await tx.$queryRaw<{ pid: number }[]>`
        SELECT pg_backend_pid() AS "pid" FROM "LedgerAccount"
         WHERE "kind" = 'CHAIN_CLEARING' AND "ownerId" IS NULL AND "assetNetworkId" = ${s.f.catalog.assetNetworkId}::uuid FOR UPDATE`;
      holder(me!.pid);
      await released;
    },
    { timeout: 60_000 },
  );
  const blocker = await pid;
  const answers = fire();
  const waiting = async () =>
    (
      await t.app.deps.db.$queryRaw<{ n: number }[]>`
        SELECT count(*)::int AS "n" FROM pg_stat_activity WHERE ${blocker}::int = ANY(pg_blocking_pids(pid))`
    )[0]!.n;
  while ((await waiting()) < 1) await new Promise((ok) => setTimeout(ok, 50));
  await new Promise((ok) => setTimeout(ok, 1_000)); // the others reach the queue
  release();
  await held;
  return Promise.all(answers);
}

/** A HOT treasury address holding what the setup's deposit address held (swept, mined), and a seeded reserve. */
async function hotTreasury(s: WithdrawalSetup, reserve = 10n ** 9n): Promise<{ id: string; address: string }> {
  const hot = await sweptToHot(s, t.op.headers);
  await drainMoneyWork(t.app);
  const seed = await t.app.rest('POST', '/v1/admin/network-resource-reserve/seed', {
    headers: t.op.headers,
    body: { assetNetworkId: s.f.catalog.assetNetworkId, amount: reserve.toString() },
  });
  expect(seed.status, seed.text).toBe(200);
  return hot;
}

/** The queued broadcast jobs, taken off the queue (the withdrawal ids they name), to run them as the worker does. */
async function takeBroadcastJobs(): Promise<string[]> {
  return (await takeBroadcastJobData()).flatMap((d) => d.withdrawalIds ?? [d.withdrawalId!]);
}
async function takeBroadcastJobData(): Promise<WithdrawalBroadcastJob[]> {
  const jobs = await t.app.deps.boss!.fetch<WithdrawalBroadcastJob>(WITHDRAWAL_BROADCAST_QUEUE, { batchSize: 1000, ignoreStartAfter: true });
  for (const j of jobs) await t.app.deps.boss!.complete(WITHDRAWAL_BROADCAST_QUEUE, j.id);
  return jobs.map((j) => j.data);
}

describe('statements per withdrawal', () => {
  test("request, broadcast and confirmation, 1 and 16 at once: requests share their group's statements; a broadcast group and a confirmation group do not grow with their size", async () => {
    const s = await setup(10_000_000n);
    await hotTreasury(s);
    const run = async (n: number) => {
      const groupsBefore = withdrawalRequestGroupStats(t.app.deps)?.groups ?? 0;
      const request = await t.app.sqlStatements(async () => {
        // One alone; 16 at once, gathered (groups of up to 64: 2 groups of one wait for the
        // CHAIN_CLEARING row, the 14 others queue and then go in 2 groups).
        const answers = n === 1 ? [await ask(s, 1_000n)] : await gathered(s, () => Array.from({ length: n }, (_x, i) => ask(s, 1_000n + BigInt(i))));
        for (const r of answers) expect(r.status, r.text).toBe(201);
        return answers.map(idOf);
      });
      const groups = withdrawalRequestGroupStats(t.app.deps)!.groups - groupsBefore;
      const ids = request.result;
      const queued = await takeBroadcastJobs();
      expect(queued.sort()).toEqual([...ids].sort());
      const broadcast = await t.app.sqlStatements(() =>
        withdrawalHandlers[WITHDRAWAL_BROADCAST_QUEUE](
          deps(),
          queued.map((withdrawalId) => ({ data: { withdrawalId } })),
        ),
      );
      for (const id of ids) expect((await get(s, id)).status).toBe('BROADCAST');
      // One transaction, straight on the pool (issue 22): never begun again through Prisma.
      expect(broadcast.statements.filter((q) => q === 'BEGIN')).toHaveLength(1);
      await mine(s);
      const confirmation = await t.app.sqlStatements(() => followNetworkWithdrawals(deps(), s.f.catalog.networkId));
      for (const id of ids) expect((await get(s, id)).status).toBe('CONFIRMED');
      await drainMoneyWork(t.app);
      return {
        groups,
        request: request.statements.length / n,
        broadcast: broadcast.statements.length,
        confirmation: confirmation.statements.length,
      };
    };
    const small = await run(1);
    const large = await run(16);
    const per = {
      alone: small.request,
      grouped: large.request,
      broadcast: (large.broadcast - small.broadcast) / 15,
      confirmation: (large.confirmation - small.confirmation) / 15,
    };
    console.info('statements per withdrawal', { ...per, groupsOf16: large.groups, broadcastGroupOf1: small.broadcast, confirmationOf1: small.confirmation });
    // Before issue 22: 17 per request, 44 per broadcast and 13 per confirmation, each withdrawal its own
    // transaction; then 15 per request. Now a request alone is a group of one (6 statements since
    // session 12, the broadcast job in the holds' statement; 7 since session 10, 10 before: the
    // ledger's locks in the group's first statement, the events in its holds'); 16 at once
    // share up to 4 groups' transactions (3.9-4.5 per request: 2 reads each — the account, the
    // asset-network with its network in one statement — the groups' statements shared; since session
    // 16 about 1: the accounts read by the group, each with its principal's visibility, and the
    // asset-network read once per process); a broadcast group and a block's confirmations cost the
    // same statements for 1 withdrawal as for 16.
    expect(small.groups).toBe(1);
    expect(large.groups).toBeLessThanOrEqual(4);
    expect(per.alone).toBeLessThanOrEqual(6);
    expect(per.grouped).toBeLessThanOrEqual(1.5);
    expect(per.broadcast).toBeLessThanOrEqual(1);
    expect(per.confirmation).toBeLessThanOrEqual(1);
  });
});

describe('request groups', () => {
  test('a group where one request is refused (insufficient balance): that one 409 alone, holding nothing; the others written, each held once with its event and audit entry', async () => {
    const s = await setup(100_000n);
    const before = { ...withdrawalRequestGroupStats(t.app.deps) };
    const answers = await gathered(s, () => [
      ...[1, 2, 3].map((i) => ask(s, 1_000n * BigInt(i))),
      ask(s, 10n ** 12n), // more than the account holds: refused alone
      ...[4, 5, 6, 7].map((i) => ask(s, 1_000n * BigInt(i))),
    ]);
    const after = withdrawalRequestGroupStats(t.app.deps)!;
    expect(after.items - (before.items ?? 0)).toBe(8);
    expect(after.groups - (before.groups ?? 0)).toBeLessThanOrEqual(4); // 2 alone, the 6 queued behind them in 1 or 2 groups
    expect(after.isolated).toBe(before.isolated ?? 0); // no group failed as a whole
    const refused = answers[3]!;
    expect(refused.status, refused.text).toBe(409);
    expect(refused.body).toMatchObject({
      code: 'INVALID_STATE',
      detail: expect.stringMatching(/^insufficient funds in account .*: the posting exceeds its available balance by \d+$/),
    });
    const ids = answers
      .filter((_r, i) => i !== 3)
      .map((r) => {
        expect(r.status, r.text).toBe(201);
        return idOf(r);
      });
    expect(await balance(s)).toEqual({ posted: 100_000n, available: 100_000n - 28_000n });
    expect(await t.app.deps.db.withdrawal.count({ where: { accountId: s.accountId } })).toBe(7);
    const holds = await t.app.deps.db.ledgerTransaction.findMany({
      where: { idempotencyKey: { in: ids.map((id) => `withdrawal:${id}:hold`) } },
      select: { id: true },
    });
    expect(holds).toHaveLength(7);
    for (const id of ids) {
      const w = await t.app.deps.db.withdrawal.findUniqueOrThrow({ where: { id } });
      const audit = await t.app.deps.db.auditLogEntry.findFirstOrThrow({ where: { entityId: id, action: 'withdrawal.requested' } });
      expect(audit.after).toMatchObject({ status: 'APPROVED', holdId: w.holdId, amount: w.amount.toFixed() });
      expect(await withdrawalEvents(s, id)).toEqual(['requested', 'approved']);
    }
    // Each is broadcast and confirmed as any other.
    await drainMoneyWork(t.app);
    await mine(s);
    expect(await followNetworkWithdrawals(deps(), s.f.catalog.networkId)).toEqual({ CONFIRMED: 7 });
    expect(await balance(s)).toEqual({ posted: 100_000n - 28_000n, available: 100_000n - 28_000n });
  });

  test("one broadcast job per request group, naming the group's withdrawals: the recovery sweep sees each as queued; a job whose one withdrawal throws fails alone and its retry skips the others", async () => {
    const s = await setup(100_000n);
    await hotTreasury(s);
    const answers = await gathered(s, () => [1, 2, 3, 4, 5, 6].map((i) => ask(s, 1_000n * BigInt(i))));
    const ids = answers.map((r) => {
      expect(r.status, r.text).toBe(201);
      return idOf(r);
    });
    // The jobs in pg-boss's table: fewer than the withdrawals (one per group), together naming each once.
    const rows = await t.app.deps.db.$queryRaw<{ data: WithdrawalBroadcastJob }[]>`
      SELECT data FROM pgboss.job WHERE name = ${WITHDRAWAL_BROADCAST_QUEUE} AND state = 'created' AND data->'withdrawalIds' ?| ${ids}::text[]`;
    expect(rows.length).toBeLessThan(ids.length);
    expect(rows.flatMap((r) => r.data.withdrawalIds!).sort()).toEqual([...ids].sort());
    expect([...(await liveJobKeys(t.app.deps.db, WITHDRAWAL_BROADCAST_QUEUE, 'withdrawalId', ids))].sort()).toEqual([...ids].sort());
    const data = await takeBroadcastJobData();
    expect(await liveJobKeys(t.app.deps.db, WITHDRAWAL_BROADCAST_QUEUE, 'withdrawalId', ids)).toEqual(new Set());
    // One job naming every withdrawal, one of which the database refuses to mark BROADCAST (a trigger
    // of this test's): that one throws in the group, runs again alone and throws; the job answers its
    // error (pg-boss retries the job), the others are BROADCAST once.
    const broken = ids[2]!;
    const job = { data: { withdrawalIds: data.flatMap((d) => d.withdrawalIds!) } };
    await t.app.ownerDb.$executeRawUnsafe(`
      CREATE FUNCTION test_refuse_broadcast() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW."id" = '${broken}'::uuid AND NEW."status" = 'BROADCAST' THEN RAISE EXCEPTION 'test: this withdrawal cannot be marked'; END IF;
        RETURN NEW;
      END $$`);
    await t.app.ownerDb.$executeRawUnsafe(
      `CREATE TRIGGER test_refuse_broadcast BEFORE UPDATE ON "Withdrawal" FOR EACH ROW EXECUTE FUNCTION test_refuse_broadcast()`,
    );
    try {
      const [answer] = await withdrawalHandlers[WITHDRAWAL_BROADCAST_QUEUE](deps(), [job]);
      expect(answer).toBeInstanceOf(Error);
      for (const id of ids) expect((await get(s, id)).status).toBe(id === broken ? 'APPROVED' : 'BROADCAST');
      // The retry (the same job): the broken one throws again, the others are skipped, never sent twice.
      const [again] = await withdrawalHandlers[WITHDRAWAL_BROADCAST_QUEUE](deps(), [job]);
      expect(again).toBeInstanceOf(Error);
    } finally {
      await t.app.ownerDb.$executeRawUnsafe(`DROP TRIGGER test_refuse_broadcast ON "Withdrawal"`);
      await t.app.ownerDb.$executeRawUnsafe(`DROP FUNCTION test_refuse_broadcast()`);
    }
    const attempts = await t.app.deps.db.withdrawal.findMany({ where: { id: { in: ids } }, select: { id: true, broadcastAttempts: true } });
    expect(attempts.map((w) => [w.id, w.broadcastAttempts]).sort()).toEqual(ids.map((id) => [id, id === broken ? 0 : 1]).sort());
    // The cause gone, the job's next retry broadcasts it and skips the others; each outcome in the job's answer.
    expect(await withdrawalHandlers[WITHDRAWAL_BROADCAST_QUEUE](deps(), [job])).toEqual([
      job.data.withdrawalIds.map((id) => (id === broken ? 'BROADCAST' : 'SKIPPED')),
    ]);
    expect(
      await t.app.deps.db.sandboxTransaction.count({
        where: { toAddress: DEST, txHash: { in: (await Promise.all(ids.map((id) => get(s, id)))).map((w) => w.txHash as string) } },
      }),
    ).toBe(6);
    await mine(s);
    expect(await followNetworkWithdrawals(deps(), s.f.catalog.networkId)).toEqual({ CONFIRMED: 6 });
    expect(await balance(s)).toEqual({ posted: 100_000n - 21_000n, available: 100_000n - 21_000n });
  });

  test('groups at once on one account: each reads the balance the group before it left (never spendable twice, never refused while it covers)', async () => {
    const s = await setup(20_000n);
    const answers = await Promise.all(Array.from({ length: 24 }, () => ask(s, 1_000n)));
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((x) => x === 201)).toHaveLength(20);
    expect(statuses.filter((x) => x === 409)).toHaveLength(4);
    for (const r of answers.filter((x) => x.status === 409)) expect(r.body).toMatchObject({ detail: expect.stringMatching(/^insufficient funds/) });
    expect(await balance(s)).toEqual({ posted: 20_000n, available: 0n });
  });

  test("a group with requests on accounts its principal may not see (another organization's, an unknown id): those 404 in the group, locking nothing of them; the others written", async () => {
    const s = await setup(100_000n);
    // Another organization on the same asset-network: its account holds funds there (its balance row
    // is one a group of `s` would lock, were the account read for the hold).
    const integrator = await setupIntegrator(t.app, s.f.catalog);
    const acc = await t.app.rest('POST', `/v1/organizations/${integrator.organizationId}/accounts`, {
      body: { name: 'Other' },
      headers: integrator.apiKeyHeaders,
    });
    expect(acc.status, acc.text).toBe(201);
    const o = await setup(100_000n, { catalog: s.f.catalog, ...integrator, beneficiaryAccountId: idOf(acc) });
    expect(o.f.catalog.assetNetworkId).toBe(s.f.catalog.assetNetworkId);
    const onAccount = (accountId: string, amount: bigint) =>
      t.app.rest('POST', `/v1/accounts/${accountId}/withdrawals`, {
        headers: s.f.apiKeyHeaders,
        body: { amount: amount.toString(), assetNetworkId: s.f.catalog.assetNetworkId, withdrawalDestinationId: s.destinationId },
      });
    // The other organization's balance row held locked by another transaction throughout: a group
    // that locked it (or read it for a hold) would wait for it, and the answers would never come.
    let release!: () => void;
    const released = new Promise<void>((ok) => (release = ok));
    let locked!: () => void;
    const isLocked = new Promise<void>((ok) => (locked = ok));
    const held = t.app.deps.db.$transaction(
      async (tx) => {
        await tx.$queryRaw`
          SELECT 1 FROM "LedgerAccount" WHERE "kind" = 'CUSTOMER' AND "ownerId" = ${o.accountId}::uuid
             AND "assetNetworkId" = ${s.f.catalog.assetNetworkId}::uuid FOR UPDATE`;
        locked();
        await released;
      },
      { timeout: 60_000 },
    );
    await isLocked;
    const before = { ...withdrawalRequestGroupStats(t.app.deps) };
    const answers = await Promise.race([
      gathered(s, () => [
        ask(s, 1_000n),
        onAccount(o.accountId, 1_000n), // the other organization's account, with this organization's key
        ask(s, 2_000n),
        onAccount(crypto.randomUUID(), 1_000n), // no such account
        ask(s, 3_000n),
      ]),
      new Promise<never>((_ok, fail) => setTimeout(() => fail(new Error('a request waited for a row it may not see')), 20_000)),
    ]).catch(async (e) => {
      release();
      await held;
      throw e;
    });
    release();
    await held;
    expect(answers.map((r) => r.status)).toEqual([201, 404, 201, 404, 201]);
    for (const i of [1, 3]) expect(answers[i]!.body).toMatchObject({ code: 'NOT_FOUND' });
    const after = withdrawalRequestGroupStats(t.app.deps)!;
    expect(after.isolated).toBe(before.isolated ?? 0); // no group failed as a whole
    expect(await balance(s)).toEqual({ posted: 100_000n, available: 100_000n - 6_000n });
    expect(await balance(o)).toEqual({ posted: 100_000n, available: 100_000n });
    expect(await t.app.deps.db.withdrawal.count({ where: { accountId: o.accountId } })).toBe(0);
    await drainMoneyWork(t.app);
  });

  test('keyed requests replayed inside a group and across groups answer the same withdrawal; the key with another request 409; one withdrawal and one hold per key', async () => {
    const s = await setup(100_000n);
    const k1 = { 'idempotency-key': `k1-${s.accountId}` };
    const k2 = { 'idempotency-key': `k2-${s.accountId}` };
    const answers = await gathered(s, () => [
      ask(s, 1_000n),
      ask(s, 1_000n),
      ask(s, 5_000n, k1),
      ask(s, 5_000n, k1), // the same request again, in the same group: replays the first
      ask(s, 7_000n, k2),
      ask(s, 7_000n, k2),
    ]);
    for (const r of answers) expect(r.status, r.text).toBe(201);
    const w1 = idOf(answers[2]!);
    const w2 = idOf(answers[4]!);
    expect(idOf(answers[3]!)).toBe(w1);
    expect(idOf(answers[5]!)).toBe(w2);
    // Across groups: later, alone, and two at once.
    const later = await Promise.all([ask(s, 5_000n, k1), ask(s, 7_000n, k2), ask(s, 5_000n, k1)]);
    expect(later.map((r) => [r.status, idOf(r)])).toEqual([
      [201, w1],
      [201, w2],
      [201, w1],
    ]);
    // The key with another request: 409, nothing written.
    for (const r of await Promise.all([ask(s, 6_000n, k1), ask(s, 6_000n, k2)])) expect(r.body).toMatchObject({ status: 409, code: 'IDEMPOTENCY_KEY_REUSED' });
    expect(await t.app.deps.db.withdrawal.count({ where: { accountId: s.accountId } })).toBe(4);
    expect(await t.app.deps.db.ledgerTransaction.count({ where: { idempotencyKey: { in: [w1, w2].map((id) => `withdrawal:${id}:hold`) } } })).toBe(2);
    expect(await t.app.deps.db.idempotencyRecord.count({ where: { key: { in: [k1, k2].map((k) => k['idempotency-key']) } } })).toBe(2);
    expect(await balance(s)).toEqual({ posted: 100_000n, available: 100_000n - 14_000n });
  });
});

describe('broadcast groups', () => {
  test('one group, per-item outcomes: two networks, a reserve that pays for two of three (the third waits alone), an id already broadcast and a bad id skipped; then each confirms once', async () => {
    const s = await setup(10_000_000n);
    const hot = await hotTreasury(s, 42_000n); // the sandbox network cost is 21,000: two broadcasts
    const other = await setup(1_000_000n); // another organization, another network, no HOT address: paid from its deposit address
    const w1 = await withdraw(s, 1_000n);
    const w2 = await withdraw(s, 2_000n);
    const w3 = await withdraw(s, 3_000n);
    const o1 = await withdraw(other, 4_000n);
    const queued = await takeBroadcastJobs();
    expect(queued.sort()).toEqual([w1, w2, w3, o1].sort());
    const results = await withdrawalHandlers[WITHDRAWAL_BROADCAST_QUEUE](
      deps(),
      [w1, 'not-a-uuid', w2, w3, o1].map((withdrawalId) => ({ data: { withdrawalId } })),
    );
    expect(results).toEqual(['BROADCAST', 'SKIPPED', 'BROADCAST', 'DEFERRED', 'BROADCAST']);
    expect(await get(s, w1)).toMatchObject({ status: 'BROADCAST', fromAddress: hot.address, broadcastAttempts: 1 });
    expect(await get(s, w2)).toMatchObject({ status: 'BROADCAST', fromAddress: hot.address, broadcastAttempts: 1 });
    expect(await get(s, w3)).toMatchObject({
      status: 'APPROVED',
      broadcastAttempts: 0,
      txHash: null,
      lastBroadcastError: expect.stringMatching(/^RESERVE_EXHAUSTED/),
    });
    expect(await get(other, o1)).toMatchObject({ status: 'BROADCAST', fromAddress: other.depositAddress, broadcastAttempts: 1 });
    // The two HOT transfers: consecutive nonces (the sandbox's hash covers the nonce), in list order.
    const sent = await t.app.deps.db.sandboxTransaction.findMany({
      where: { fromAddress: hot.address, toAddress: DEST },
      orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
      select: { txHash: true, amount: true },
    });
    expect(sent.map((t) => t.amount.toString())).toEqual(['1000', '2000']);
    expect(sent.map((t) => t.txHash)).toEqual([(await get(s, w1)).txHash, (await get(s, w2)).txHash]);
    // A job run again (a retried group) changes nothing: each withdrawal is broadcast once.
    expect(await withdrawalHandlers[WITHDRAWAL_BROADCAST_QUEUE](deps(), [{ data: { withdrawalId: w1 } }, { data: { withdrawalId: o1 } }])).toEqual([
      'SKIPPED',
      'SKIPPED',
    ]);

    // Topped up: the waiting one is sent by the sweep's retry, then all confirm at the next block, each hold posted once.
    const seed = await t.app.rest('POST', '/v1/admin/network-resource-reserve/seed', {
      headers: t.op.headers,
      body: { assetNetworkId: s.f.catalog.assetNetworkId, amount: '21000' },
    });
    expect(seed.status, seed.text).toBe(200);
    t.app.clock.advance(RESERVE_RETRY_MS);
    await sweep(s);
    expect(await get(s, w3)).toMatchObject({ status: 'BROADCAST', fromAddress: hot.address, broadcastAttempts: 1 });
    await mine(s);
    await mine(other);
    expect(await followNetworkWithdrawals(deps(), s.f.catalog.networkId)).toEqual({ CONFIRMED: 3 });
    expect(await followNetworkWithdrawals(deps(), other.f.catalog.networkId)).toEqual({ CONFIRMED: 1 });
    expect(await followNetworkWithdrawals(deps(), s.f.catalog.networkId)).toEqual({});
    for (const [x, id] of [
      [s, w1],
      [s, w2],
      [s, w3],
      [other, o1],
    ] as const) {
      expect(await get(x, id)).toMatchObject({ status: 'CONFIRMED' });
      expect(await withdrawalEvents(x, id)).toEqual(['requested', 'approved', 'broadcast', 'confirmed']);
    }
    const ids = [w1, w2, w3, o1];
    expect(await t.app.deps.db.ledgerTransaction.count({ where: { idempotencyKey: { in: ids.map((id) => `withdrawal:${id}:post`) } } })).toBe(4);
    const consumed = await t.app.deps.db.networkResourceReserveMovement.findMany({
      where: { referenceType: 'Withdrawal', referenceId: { in: ids.map((id) => `${id}:1`) } },
      select: { kind: true, amount: true },
    });
    expect(consumed.map((m) => [m.kind, m.amount.toString()])).toEqual([
      ['CONSUME', '21000'],
      ['CONSUME', '21000'],
      ['CONSUME', '21000'],
    ]);
    expect(await balance(s)).toEqual({ posted: 10_000_000n - 6_000n, available: 10_000_000n - 6_000n });
    const audits = await t.app.deps.db.auditLogEntry.count({
      where: { entityId: { in: ids }, action: { in: ['withdrawal.broadcast', 'withdrawal.confirmed'] } },
    });
    expect(audits).toBe(8);
  });

  test('confirmation: a mined withdrawal of a frozen account waits (BROADCAST, hold kept) and confirms once unfrozen, posted once', async () => {
    const s = await setup(1_000_000n);
    const w = await withdraw(s, 10_000n);
    await drainMoneyWork(t.app);
    expect((await get(s, w)).status).toBe('BROADCAST');
    const freeze = await t.app.rest('POST', `/v1/accounts/${s.accountId}/freeze`, { headers: s.f.member.headers, body: { reason: 'review' } });
    expect(freeze.status, freeze.text).toBe(204);
    await mine(s);
    expect(await followNetworkWithdrawals(deps(), s.f.catalog.networkId)).toEqual({ WAITING: 1 });
    expect((await get(s, w)).status).toBe('BROADCAST');
    const unfreeze = await t.app.rest('POST', `/v1/accounts/${s.accountId}/unfreeze`, { headers: s.f.member.headers });
    expect(unfreeze.status, unfreeze.text).toBe(204);
    expect(await followNetworkWithdrawals(deps(), s.f.catalog.networkId)).toEqual({ CONFIRMED: 1 });
    expect(await balance(s)).toEqual({ posted: 990_000n, available: 990_000n });
    expect(await t.app.deps.db.ledgerTransaction.count({ where: { idempotencyKey: `withdrawal:${w}:post` } })).toBe(1);
  });
});
