import { randomBytes } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { restResultOf, type RestResult } from './harness';
import { sandboxMine } from './money-helpers';
import { eventsOf, moneyFixture, type MoneyFixture } from './fixtures/deposits/testing';
import { drainMoneyWork, fundedTransaction } from './fixtures/settlements/testing';
import {
  app,
  attack,
  auditOf,
  BAD_AMOUNTS,
  balanceOf,
  DEST,
  expectOwnAudit,
  hostileBodies,
  idOf,
  op,
  remember,
  requested,
  send,
  shuffle,
  TWO_256,
  useAttackApp,
  wt,
  type Req,
} from './attack-kit';
import type { WithdrawalSetup } from './fixtures/withdrawals/testing';

/**
 * Attacks on the group-committed money paths from outside (issue 22, point 5): withdrawal requests,
 * settlements executed in groups, period limits across groups, one key on every grouped operation,
 * the statement count that proves the bursts land in groups, and clients cancelling mid-flight over
 * a real socket. Helpers and the per-test checks in test/attack-kit.ts.
 */
useAttackApp();

describe('withdrawal requests in groups', () => {
  test('a burst draining one account (exactly what it holds is accepted), another organization\u2019s requests, foreign accounts and destinations, a blocked destination, a frozen and an empty account, hostile bodies: each answered as alone', async () => {
    const [sa, sb, sc] = await Promise.all([wt.setup(1_000_000n), wt.setup(1_000_000n), wt.setup(500_000n)]);
    for (const s of [sa, sb, sc]) remember(s.f);
    const an = (s: WithdrawalSetup) => s.f.catalog.assetNetworkId;
    const body = (s: WithdrawalSetup, amount: bigint, extra: Record<string, unknown> = {}) => ({
      amount: amount.toString(),
      assetNetworkId: an(s),
      withdrawalDestinationId: s.destinationId,
      ...extra,
    });
    const path = (accountId: string) => `/v1/accounts/${accountId}/withdrawals`;
    // An empty account of A's, a blocked destination of A's, C's account frozen.
    const empty = await app.rest('POST', `/v1/organizations/${sa.f.organizationId}/accounts`, { headers: sa.f.apiKeyHeaders, body: { name: 'Empty' } });
    expect(empty.status).toBe(201);
    const blockedDest = await app.rest('POST', `/v1/organizations/${sa.f.organizationId}/withdrawal-destinations`, {
      headers: sa.f.apiKeyHeaders,
      body: { networkId: sa.f.catalog.networkId, address: `0x${randomBytes(20).toString('hex')}` },
    });
    expect(blockedDest.status, blockedDest.text).toBe(201);
    const block = await app.rest('POST', `/v1/admin/withdrawal-destinations/${idOf(blockedDest)}/block`, {
      headers: op.headers,
      body: { reason: 'sanctioned' },
    });
    expect(block.status, block.text).toBe(204);
    expect((await app.rest('POST', `/v1/accounts/${sc.accountId}/freeze`, { headers: sc.f.member.headers, body: { reason: 'attack' } })).status).toBe(204);
    const insufficient = await app.rest('POST', path(idOf(empty)), { headers: sa.f.apiKeyHeaders, body: body(sa, 1n) });
    expect(insufficient.status, insufficient.text).toBe(409);

    const reqs: Req[] = [
      ...Array.from({ length: 4 }, (_, i): Req => ({
        label: `B valid ${i}`,
        path: path(sb.accountId),
        headers: sb.f.apiKeyHeaders,
        body: body(sb, 50_000n),
        kind: 'ok',
      })),
      { label: 'B valid member', path: path(sb.accountId), headers: sb.f.member.headers, body: body(sb, 50_000n), kind: 'ok' },
      // Tenant crossings.
      { label: "A's key on B's account", path: path(sb.accountId), headers: sa.f.apiKeyHeaders, body: body(sb, 1n), kind: 'refused' },
      { label: "A's member on B's account", path: path(sb.accountId), headers: sa.f.member.headers, body: body(sb, 1n), kind: 'refused' },
      {
        label: "A's account to B's destination",
        path: path(sa.accountId),
        headers: sa.f.apiKeyHeaders,
        body: body(sa, 1n, { withdrawalDestinationId: sb.destinationId }),
        kind: 'refused',
      },
      {
        label: "A's account with B's asset-network",
        path: path(sa.accountId),
        headers: sa.f.apiKeyHeaders,
        body: body(sa, 1n, { assetNetworkId: an(sb) }),
        kind: 'refused',
      },
      {
        label: "A's account from B's wallet",
        path: path(sa.accountId),
        headers: sa.f.apiKeyHeaders,
        body: body(sa, 1n, { walletId: sb.f.walletId, sourceIndex: 0 }),
        kind: 'refused',
      },
      // Business refusals.
      { label: 'empty account', path: path(idOf(empty)), headers: sa.f.apiKeyHeaders, body: body(sa, 1n), kind: 'refused' },
      {
        label: 'blocked destination',
        path: path(sa.accountId),
        headers: sa.f.apiKeyHeaders,
        body: body(sa, 1n, { withdrawalDestinationId: idOf(blockedDest) }),
        kind: 'refused',
      },
      { label: 'frozen account', path: path(sc.accountId), headers: sc.f.apiKeyHeaders, body: body(sc, 1n), kind: 'refused' },
      { label: 'amount 2^256-1', path: path(idOf(empty)), headers: sa.f.apiKeyHeaders, body: body(sa, TWO_256 - 1n), kind: 'refused' },
      {
        label: 'unknown destination',
        path: path(sa.accountId),
        headers: sa.f.apiKeyHeaders,
        body: body(sa, 1n, { withdrawalDestinationId: '00000000-0000-7000-8000-0000000000ac' }),
        kind: 'refused',
      },
      { label: 'unknown account', path: path('00000000-0000-7000-8000-0000000000ad'), headers: sa.f.apiKeyHeaders, body: body(sa, 1n), kind: 'refused' },
      ...hostileBodies(body(sa, 1n), {
        amountField: 'amount',
        textField: 'withdrawalDestinationId',
        requiredField: 'withdrawalDestinationId',
        idField: 'assetNetworkId',
      }).map((h): Req => ({ label: `hostile ${h.label}`, path: path(sa.accountId), headers: sa.f.apiKeyHeaders, body: h.body, raw: h.raw, kind: 'refused' })),
    ];
    // A's 16 requests of 100,000 against 1,000,000: ten are accepted, six refused as an empty account is.
    const drain = Array.from({ length: 16 }, (_, i): Req => ({
      label: `A drain ${i}`,
      path: path(sa.accountId),
      headers: sa.f.apiKeyHeaders,
      body: body(sa, 100_000n),
      kind: 'ok',
    }));
    const [answers, drained] = await Promise.all([attack(reqs), Promise.all(drain.map(send))]);
    expect(drained.filter((r) => r.status === 201)).toHaveLength(10);
    for (const r of drained.filter((x) => x.status !== 201)) expect([r.status, r.body?.code], r.text).toEqual([409, insufficient.body.code]);

    const idsA = drained.filter((r) => r.status === 201).map(idOf);
    const idsB = [...answers.entries()].filter(([, r]) => r.status === 201).map(([, r]) => idOf(r));
    expect(idsB).toHaveLength(5);
    expect(await balanceOf(sa)).toEqual({ posted: 1_000_000n, available: 0n });
    expect(await balanceOf(sb)).toEqual({ posted: 1_000_000n, available: 750_000n });
    expect(await balanceOf(sc)).toEqual({ posted: 500_000n, available: 500_000n });
    expect((await requested(sa)).sort()).toEqual([...idsA].sort());
    expect((await requested(sb)).sort()).toEqual([...idsB].sort());
    expect(await requested(sc)).toEqual([]);
    for (const [r, res] of [...answers.entries(), ...drained.map((d, i) => [drain[i]!, d] as const)]) {
      if (res.status !== 201) continue;
      const member = r.headers === sb.f.member.headers;
      const org = r.path.includes(sa.accountId) ? sa.f.organizationId : sb.f.organizationId;
      const e = await expectOwnAudit(
        idOf(res),
        res,
        { organizationId: org, actorType: member ? 'MEMBER' : 'API_KEY', actorId: member ? sb.f.member.memberId : undefined },
        'withdrawal.requested',
      );
      expect(e.after).toMatchObject({ amount: (r.body as { amount: string }).amount });
    }
    for (const id of idsA) {
      expect(await wt.get(sa, id)).toMatchObject({ status: 'APPROVED', amount: '100000', toAddress: DEST });
      expect((await app.rest('GET', `/v1/withdrawals/${id}`, { headers: sb.f.apiKeyHeaders })).status).toBe(404);
    }
    // Broadcast, mined, confirmed: each accepted withdrawal moved once.
    await drainMoneyWork(app);
    await wt.mine(sa);
    await wt.mine(sb);
    await drainMoneyWork(app);
    for (const id of idsA) expect((await wt.get(sa, id)).status).toBe('CONFIRMED');
    for (const id of idsB) expect((await wt.get(sb, id)).status).toBe('CONFIRMED');
    expect(await balanceOf(sa)).toEqual({ posted: 0n, available: 0n });
    expect(await balanceOf(sb)).toEqual({ posted: 750_000n, available: 750_000n });
  });

  test('Idempotency-Key on withdrawals: one key 8 times at once holds once, another body on the key 409, the same key in two organizations, later bursts; two requests for the last funds: one wins', async () => {
    const [sa, sb] = await Promise.all([wt.setup(1_000_000n), wt.setup(1_000_000n)]);
    for (const s of [sa, sb]) remember(s.f);
    const key = `wk-${randomBytes(6).toString('hex')}`;
    const req = (s: WithdrawalSetup, amount: bigint, k?: string) =>
      app.rest('POST', `/v1/accounts/${s.accountId}/withdrawals`, {
        headers: k ? { ...s.f.apiKeyHeaders, 'idempotency-key': k } : s.f.apiKeyHeaders,
        body: { amount: amount.toString(), assetNetworkId: s.f.catalog.assetNetworkId, withdrawalDestinationId: s.destinationId },
      });
    const jobs = [
      ...Array.from({ length: 8 }, () => ({ g: 'A same', run: () => req(sa, 100_000n, key) })),
      ...Array.from({ length: 4 }, () => ({ g: 'A other', run: () => req(sa, 200_000n, key) })),
      ...Array.from({ length: 4 }, () => ({ g: 'B same', run: () => req(sb, 100_000n, key) })),
      ...Array.from({ length: 6 }, () => ({ g: 'A unkeyed', run: () => req(sa, 10_000n) })),
    ];
    const answers = await Promise.all(shuffle(jobs).map(async (j) => ({ g: j.g, res: await j.run() })));
    const of = (g: string) => answers.filter((x) => x.g === g).map((x) => x.res);
    const winner = of('A same')[0]!.status === 201 ? 'A same' : 'A other';
    const loser = winner === 'A same' ? 'A other' : 'A same';
    expect(new Set(of(winner).map((r) => `${r.status} ${r.text}`)).size, JSON.stringify(of(winner).map((r) => r.text))).toBe(1);
    expect(of(winner)[0]!.status).toBe(201);
    for (const r of of(loser)) expect([r.status, r.body?.code], r.text).toEqual([409, 'IDEMPOTENCY_KEY_REUSED']);
    expect(new Set(of('B same').map((r) => `${r.status} ${r.text}`)).size).toBe(1);
    expect(idOf(of('B same')[0]!)).not.toBe(idOf(of(winner)[0]!));
    for (const r of of('A unkeyed')) expect(r.status, r.text).toBe(201);
    const held = winner === 'A same' ? 100_000n : 200_000n;
    expect(await balanceOf(sa)).toEqual({ posted: 1_000_000n, available: 1_000_000n - held - 60_000n });
    expect(await requested(sa)).toHaveLength(7);
    expect(await requested(sb)).toHaveLength(1);
    // A later burst replays the key.
    for (const r of await Promise.all([0, 1, 2].map(() => req(sa, winner === 'A same' ? 100_000n : 200_000n, key))))
      expect([r.status, r.text]).toEqual([201, of(winner)[0]!.text]);
    // The last funds asked for twice at once (keyed and not): exactly one is accepted.
    const rest = (await balanceOf(sa)).available;
    const race = await Promise.all([req(sa, rest), req(sa, rest, `${key}-last`), req(sa, rest), req(sa, rest, `${key}-last2`)]);
    expect(
      race.filter((r) => r.status === 201),
      JSON.stringify(race.map((r) => r.text)),
    ).toHaveLength(1);
    for (const r of race.filter((x) => x.status !== 201)) expect(r.status, r.text).toBe(409);
    expect(await balanceOf(sa)).toEqual({ posted: 1_000_000n, available: 0n });
    expect(await requested(sa)).toHaveLength(8);
    await drainMoneyWork(app);
  });
});

// ------------------------------------------------------------------------------------------------

describe('settlements executed in groups', () => {
  test('one group of two organizations\u2019 settlements, one to a frozen account, one asked twice at once, foreign and hostile requests: each settles as it would alone', async () => {
    const fa = remember(await moneyFixture(app, { requiredConfirmations: 1 }));
    const fb = remember(await moneyFixture(app, { requiredConfirmations: 1 }));
    const fc = remember(await moneyFixture(app, { requiredConfirmations: 1 }));
    const t1 = await fundedTransaction(app, 1_000n, fa);
    const t2 = await fundedTransaction(app, 2_000n, fa);
    const t3 = await fundedTransaction(app, 3_000n, fb);
    const t4 = await fundedTransaction(app, 4_000n, fc);
    // Refused requests go to a transaction no valid request of the burst touches (their answers must not depend on the burst's order).
    const t5 = await fundedTransaction(app, 500n, fa);
    expect((await app.rest('POST', `/v1/accounts/${fc.beneficiaryAccountId}/freeze`, { headers: fc.member.headers, body: { reason: 'attack' } })).status).toBe(
      204,
    );
    const path = (t: { transactionId: string }) => `/v1/transactions/${t.transactionId}/settlements`;
    const reqs: Req[] = [
      { label: 't2', path: path(t2), headers: fa.apiKeyHeaders, body: {}, kind: 'ok' },
      { label: 't3', path: path(t3), headers: fb.apiKeyHeaders, body: { amount: '3000' }, kind: 'ok' },
      { label: 't4 (frozen beneficiary)', path: path(t4), headers: fc.apiKeyHeaders, body: {}, kind: 'ok' },
      { label: "A's key on B's transaction", path: path(t3), headers: fa.apiKeyHeaders, body: {}, kind: 'refused' },
      { label: "A's member on B's transaction", path: path(t3), headers: fa.member.headers, body: {}, kind: 'refused' },
      { label: 'more than the escrow', path: path(t5), headers: fa.apiKeyHeaders, body: { amount: '501' }, kind: 'refused' },
      ...BAD_AMOUNTS.filter(([, v]) => v !== null).map(([label, v]): Req => ({
        label: `amount ${label}`,
        path: path(t5),
        headers: fa.apiKeyHeaders,
        body: { amount: v },
        kind: 'refused',
      })),
      { label: 'unknown field', path: path(t5), headers: fa.apiKeyHeaders, body: { amount: '1', to: fb.beneficiaryAccountId }, kind: 'refused' },
      { label: 'raw null', path: path(t5), headers: fa.apiKeyHeaders, raw: 'null', kind: 'refused' },
    ];
    const twice = [0, 1].map((): Req => ({ label: 't1 twice', path: path(t1), headers: fa.apiKeyHeaders, body: {}, kind: 'ok' }));
    const [, twiceAnswers] = await Promise.all([attack(reqs), Promise.all(twice.map(send))]);
    for (const r of twiceAnswers) expect(r.status, r.text).toBeLessThan(500);
    // Every settlement job of the burst runs as one group (the test driver fetches them together).
    await drainMoneyWork(app);
    const bal = async (f: MoneyFixture) => {
      const r = await app.rest('GET', `/v1/accounts/${f.beneficiaryAccountId}/balances`, { headers: f.member.headers });
      return BigInt((r.body as { assetNetworkId: string; posted: string }[]).find((x) => x.assetNetworkId === f.catalog.assetNetworkId)?.posted ?? 0);
    };
    // t1 is settled once however many times it was asked; t2 and t3 in full; t4 not paid to a frozen account.
    expect(await bal(fa)).toBe(3_000n);
    expect(await bal(fb)).toBe(3_000n);
    expect(await bal(fc)).toBe(0n);
    const tx = async (f: MoneyFixture, t: { transactionId: string }) =>
      (await app.rest('GET', `/v1/transactions/${t.transactionId}`, { headers: f.apiKeyHeaders })).body;
    expect((await tx(fa, t1)).status).toBe((await tx(fa, t2)).status);
    const settled = async (f: MoneyFixture, t: { transactionId: string }) =>
      ((await app.rest('GET', path(t), { headers: f.apiKeyHeaders })).body as { status: string }[]).map((s) => s.status);
    expect((await settled(fa, t1)).filter((s) => s === 'EXECUTED')).toHaveLength(1);
    expect(await settled(fa, t2)).toEqual(['EXECUTED']);
    expect(await settled(fb, t3)).toEqual(['EXECUTED']);
    const executedEvents = async (f: MoneyFixture) => (await eventsOf(app, f.organizationId)).filter((e) => e.type === 'settlement.executed').length;
    expect(await executedEvents(fa)).toBe(2);
    expect(await executedEvents(fb)).toBe(1);
  });
});

describe('harder attacks on the money groups', () => {
  test('a period limit across concurrent groups: the accepted requests never sum past it, every refusal is the limit\u2019s own, approvals waiting count', async () => {
    const s = await wt.setup(1_000_000n);
    remember(s.f);
    const configured = await app.rest('POST', `/v1/admin/organizations/${s.f.organizationId}/withdrawal-policy`, {
      headers: op.headers,
      body: { periodLimit: '500000', periodSeconds: 86_400, approvalThreshold: '80000' },
    });
    expect(configured.status, configured.text).toBe(204);
    const req = (amount: bigint) =>
      app.rest('POST', `/v1/accounts/${s.accountId}/withdrawals`, {
        headers: s.f.apiKeyHeaders,
        body: { amount: amount.toString(), assetNetworkId: s.f.catalog.assetNetworkId, withdrawalDestinationId: s.destinationId },
      });
    const amounts = shuffle([...Array.from({ length: 24 }, () => 50_000n), ...Array.from({ length: 6 }, () => 90_000n)]);
    const answers = await Promise.all(amounts.map(req));
    for (const r of answers) expect([201, 409], r.text).toContain(r.status);
    const sum = amounts.filter((_, i) => answers[i]!.status === 201).reduce((x, y) => x + y, 0n);
    expect(sum <= 500_000n, String(sum)).toBe(true);
    for (const [i, r] of answers.entries()) if (r.status === 409) expect(sum + amounts[i]! > 500_000n, `refused ${amounts[i]} with ${sum} accepted`).toBe(true);
    const codes = new Set(answers.filter((r) => r.status === 409).map((r) => r.body.code));
    expect(codes.size).toBeLessThanOrEqual(1);
    // Alone, a request over the limit answers the same.
    const alone = await req(50_000n);
    expect(alone.status).toBe(409);
    // The same refusal (its message names the sum withdrawn when it was decided, which the burst moves).
    const shape = (r: RestResult) => ({
      status: r.status,
      code: r.body.code,
      title: r.body.title,
      detail: String(r.body.detail).replace(/\d+ already withdrawn/, 'N already withdrawn'),
    });
    for (const r of answers.filter((x) => x.status === 409)) expect(shape(r)).toEqual(shape(alone));
    expect(await balanceOf(s)).toEqual({ posted: 1_000_000n, available: 1_000_000n - sum });
    const statuses = await Promise.all(answers.filter((r) => r.status === 201).map(async (r) => (await wt.get(s, idOf(r))).status));
    expect(statuses.filter((x) => x === 'PENDING_APPROVAL')).toHaveLength(amounts.filter((a, i) => a === 90_000n && answers[i]!.status === 201).length);
    expect(await requested(s)).toHaveLength(answers.filter((r) => r.status === 201).length);
  });

  test('one Idempotency-Key on every grouped operation of one caller at once: scoped per operation, each written once', async () => {
    const s = await wt.setup(1_000_000n);
    remember(s.f);
    const key = `all-${randomBytes(6).toString('hex')}`;
    const h = { ...s.f.apiKeyHeaders, 'idempotency-key': key };
    const ops = () => [
      app.rest('POST', `/v1/organizations/${s.f.organizationId}/accounts`, { headers: h, body: { name: 'Same key' } }),
      app.rest('POST', `/v1/organizations/${s.f.organizationId}/payment-intents`, {
        headers: h,
        body: { assetNetworkId: s.f.catalog.assetNetworkId, amount: '1000', beneficiaryAccountId: s.accountId, walletId: s.f.walletId },
      }),
      app.rest('POST', '/v1/sandbox/deposits', { headers: h, body: { address: DEST, amount: '5', assetNetworkId: s.f.catalog.assetNetworkId } }),
      app.rest('POST', `/v1/accounts/${s.accountId}/withdrawals`, {
        headers: h,
        body: { amount: '1000', assetNetworkId: s.f.catalog.assetNetworkId, withdrawalDestinationId: s.destinationId },
      }),
    ];
    const rounds = await Promise.all([ops(), ops(), ops()].map((r) => Promise.all(r)));
    for (const op of [0, 1, 2, 3]) {
      const answers = rounds.map((r) => r[op]!);
      for (const a of answers) expect(a.status, a.text).toBe(201);
      expect(new Set(answers.map((a) => a.text + a.headers.get('location'))).size, `operation ${op}`).toBe(1);
    }
    expect(await balanceOf(s)).toEqual({ posted: 1_000_000n, available: 999_000n });
    expect(await requested(s)).toHaveLength(1);
    await sandboxMine(app, s.f.apiKeyHeaders, s.f.catalog.networkId, 1);
    await drainMoneyWork(app);
  });

  test('one address registered as a destination by two organizations, blocked for one: the other’s requests in the same groups go through', async () => {
    const [sa, sb] = await Promise.all([wt.setup(1_000_000n), wt.setup(1_000_000n)]);
    for (const s of [sa, sb]) remember(s.f);
    const blocked = await app.rest('POST', `/v1/admin/withdrawal-destinations/${sb.destinationId}/block`, {
      headers: op.headers,
      body: { reason: 'sanctioned' },
    });
    expect(blocked.status, blocked.text).toBe(204);
    const req = (s: WithdrawalSetup, i: number): Req => ({
      label: `${s === sa ? 'A' : 'B'} ${i}`,
      path: `/v1/accounts/${s.accountId}/withdrawals`,
      headers: s.f.apiKeyHeaders,
      body: { amount: '1000', assetNetworkId: s.f.catalog.assetNetworkId, withdrawalDestinationId: s.destinationId },
      kind: s === sa ? 'ok' : 'refused',
    });
    await attack([...Array.from({ length: 10 }, (_, i) => req(sa, i)), ...Array.from({ length: 6 }, (_, i) => req(sb, i))]);
    expect(await balanceOf(sa)).toEqual({ posted: 1_000_000n, available: 990_000n });
    expect(await balanceOf(sb)).toEqual({ posted: 1_000_000n, available: 1_000_000n });
    expect(await requested(sb)).toEqual([]);
    await drainMoneyWork(app);
  });
});

// ------------------------------------------------------------------------------------------------

describe('requests cancelled mid-flight', () => {
  test('clients that abort while their group writes: nothing half-written; a cancelled key answers the one resource afterwards (replayed at once or later)', async () => {
    const server = await app.listen();
    const s = await wt.setup(1_000_000n);
    remember(s.f);
    const f = s.f;
    const an = f.catalog.assetNetworkId;
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    /** A POST over a real socket, aborted after `abortMs` (null: the client gave up before an answer). */
    async function call(path: string, body: unknown, headers: Record<string, string>, abortMs?: number): Promise<RestResult | null> {
      const ac = new AbortController();
      const timer = abortMs === undefined ? undefined : setTimeout(() => ac.abort(), abortMs);
      try {
        const res = await fetch(new URL(path, server.url), {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify(body),
          signal: ac.signal,
        });
        return await restResultOf(res);
      } catch (err) {
        if ((err as Error).name === 'AbortError') return null;
        throw err;
      } finally {
        clearTimeout(timer);
      }
    }
    const tag = randomBytes(4).toString('hex');
    const key = (kind: string, i: number) => ({ ...f.apiKeyHeaders, 'idempotency-key': `abort-${tag}-${kind}-${i}` });
    const abortAt = (i: number) => ((i >> 1) % 2 === 0 ? i * 4 : undefined); // half of them cancelled, after 0-60 ms
    const to = `0x${randomBytes(20).toString('hex')}`;
    const paths = {
      account: `/v1/organizations/${f.organizationId}/accounts`,
      intent: `/v1/organizations/${f.organizationId}/payment-intents`,
      send: '/v1/sandbox/deposits',
      withdrawal: `/v1/accounts/${s.accountId}/withdrawals`,
    };
    const bodies = {
      account: (i: number) => ({ name: `abort-${tag}-${i}` }),
      intent: (i: number) => ({
        assetNetworkId: an,
        amount: String(1000 + i),
        beneficiaryAccountId: s.accountId,
        walletId: f.walletId,
        reference: `abort-${tag}-${i}`,
      }),
      send: (i: number) => ({ address: to, amount: (1n << BigInt(i)).toString(), assetNetworkId: an }),
      withdrawal: () => ({ amount: '10000', assetNetworkId: an, withdrawalDestinationId: s.destinationId }),
    };
    type Kind = keyof typeof paths;
    const kinds = Object.keys(paths) as Kind[];
    const N = 16; // per kind: even i unkeyed, odd i keyed; half of each cancelled
    const sent = kinds.flatMap((kind) => Array.from({ length: N }, (_, i) => ({ kind, i, keyed: i % 2 === 1 })));
    const answers = await Promise.all(
      shuffle(sent).map(async (x) => ({
        ...x,
        res: await call(paths[x.kind], bodies[x.kind](x.i), x.keyed ? key(x.kind, x.i) : f.apiKeyHeaders, abortAt(x.i)),
      })),
    );
    // GraphQL clients giving up too (the same creations through /graphql).
    const gqlCancelled = await Promise.all(
      Array.from({ length: 12 }, async (_, i) => {
        const ac = new AbortController();
        const timer = setTimeout(() => ac.abort(), i * 3);
        try {
          const res = await fetch(new URL('/graphql', server.url), {
            method: 'POST',
            headers: { 'content-type': 'application/json', ...f.apiKeyHeaders },
            body: JSON.stringify({
              query: 'mutation($o: ID!, $i: CreateAccountInput!) { createAccount(organizationId: $o, input: $i) { id } }',
              variables: { o: f.organizationId, i: { name: `abort-${tag}-gql-${i}` } },
            }),
            signal: ac.signal,
          });
          return res.status;
        } catch (err) {
          if ((err as Error).name === 'AbortError') return null;
          throw err;
        } finally {
          clearTimeout(timer);
        }
      }),
    );
    for (const status of gqlCancelled) if (status !== null) expect(status).toBe(200);
    // The attack happened: some clients gave up before their answer.
    const cancelled = answers.filter((x) => !x.res).length;
    console.log(`cancelled before an answer: ${cancelled} of ${answers.length}`);
    expect(cancelled).toBeGreaterThan(0);
    expect(cancelled).toBeLessThan(answers.length);
    // A keyed request cancelled is replayed at once (its first attempt may still be in its group), and again later.
    const replay = () =>
      Promise.all(sent.filter((x) => x.keyed).map(async (x) => ({ ...x, res: (await call(paths[x.kind], bodies[x.kind](x.i), key(x.kind, x.i)))! })));
    const first = await replay();
    await sleep(300);
    const second = await replay();
    for (const x of [...answers, ...first, ...second]) if (x.res) expect(x.res.status, `${x.kind} ${x.i}: ${x.res.text}`).toBeLessThan(500);
    for (const x of answers) if (x.res) expect(x.res.status, `${x.kind} ${x.i}: ${x.res.text}`).toBe(201);
    const answerOf = (r: RestResult) => (r.body?.txHash as string | undefined) ?? idOf(r);
    for (const [i, x] of first.entries()) {
      expect(x.res.status, `${x.kind} ${x.i}: ${x.res.text}`).toBe(201);
      expect(answerOf(second[i]!.res), `${x.kind} ${x.i}`).toBe(answerOf(x.res));
      const original = answers.find((a) => a.kind === x.kind && a.i === x.i)!.res;
      if (original) expect(answerOf(original), `${x.kind} ${x.i}`).toBe(answerOf(x.res));
    }
    await sleep(300);
    const ok = (kind: Kind) => answers.filter((x) => x.kind === kind && x.res).map((x) => answerOf(x.res!));
    const keyedIds = (kind: Kind) => first.filter((x) => x.kind === kind).map((x) => answerOf(x.res));

    // Accounts: every one whole (one audit entry), each keyed one once, every answered one there.
    const accounts = (
      (await app.rest('GET', `/v1/organizations/${f.organizationId}/accounts?limit=200`, { headers: f.member.headers })).body as { id: string; name: string }[]
    ).filter((a) => a.name.startsWith(`abort-${tag}-`));
    expect(new Set(accounts.map((a) => a.name)).size).toBe(accounts.length);
    for (const id of [...ok('account'), ...keyedIds('account')]) expect(accounts.map((a) => a.id)).toContain(id);
    for (const a of accounts) expect(await auditOf(a.id), a.name).toHaveLength(1);

    // Intents: each with its transaction, address and one event; references unique, so never two of one request.
    const intentEvents = (await eventsOf(app, f.organizationId))
      .filter((e) => e.type === 'payment_intent.created')
      .map((e) => e.body.PaymentIntentId as string);
    expect(new Set(intentEvents).size).toBe(intentEvents.length);
    for (const id of [...ok('intent'), ...keyedIds('intent')]) expect(intentEvents).toContain(id);
    for (const id of intentEvents) {
      const got = await app.rest('GET', `/v1/payment-intents/${id}`, { headers: f.apiKeyHeaders });
      expect(got.status).toBe(200);
      if (got.body.reference?.startsWith(`abort-${tag}-`)) expect(got.body.address, id).toMatch(/^0x[0-9a-f]{40}$/);
      expect((await app.rest('GET', `/v1/transactions/${got.body.transactionId}`, { headers: f.apiKeyHeaders })).status).toBe(200);
    }

    // Withdrawals: the holds are exactly the requested withdrawals', each keyed one once.
    const withdrawals = await requested(s);
    expect(new Set(withdrawals).size).toBe(withdrawals.length);
    for (const id of [...ok('withdrawal'), ...keyedIds('withdrawal')]) expect(withdrawals).toContain(id);
    expect(new Set(keyedIds('withdrawal')).size).toBe(N / 2);
    expect(await balanceOf(s)).toEqual({ posted: 1_000_000n, available: 1_000_000n - 10_000n * BigInt(withdrawals.length) });
    for (const id of withdrawals) expect((await wt.get(s, id)).status).toBe('APPROVED');

    // Sends: amounts are distinct powers of two, so the mined balance names the sends that exist (each at most once).
    await sandboxMine(app, f.apiKeyHeaders, f.catalog.networkId, 1);
    const bal = await app.gql<{ sandboxBalance: { balance: string } }>(
      'query($a: String!, $n: ID!) { sandboxBalance(address: $a, assetNetworkId: $n) { balance } }',
      { a: to, n: an },
      f.apiKeyHeaders,
    );
    const mined = BigInt(bal.data!.sandboxBalance.balance);
    expect(mined < 1n << BigInt(N), 'no send twice').toBe(true);
    for (const x of [...answers.filter((a) => a.kind === 'send' && a.res), ...first.filter((a) => a.kind === 'send')])
      expect((mined >> BigInt(x.i)) & 1n, `send ${x.i}`).toBe(1n);
    // From outside, the service counted no 5xx for any of it (REST or GraphQL).
    const metrics = await (await fetch(new URL('/metrics', server.url))).text();
    expect(metrics.split('\n').filter((l) => /^http_requests_total\{.*status="5\d\d"/.test(l))).toEqual([]);
    await drainMoneyWork(app);
  });
});
