import { describe, expect, test } from 'vitest';
import { randomUUID } from 'node:crypto';
import { checkLedgerInvariants } from './ledger-invariants';
import { checkSandboxInvariants } from './sandbox-invariants';
import type { RestResult } from './harness';
import { pollUntil, type ServiceProcess } from './process-harness';
import { accountPosted, crashCase, createIntents, fund, holdLock, idOf, sandboxIntegrator, type Intent } from './crash-case';

/**
 * Crashes inside issue 22's set-based work (one database transaction per group): the service as
 * `npm start` runs it is killed (kill -9 of its process group) while a group of settlements, or a
 * sync chunk of deposit confirmations, waits in its ledger posting (a balance row locked by the
 * test); after a restart every operation is terminal within 60 s, each posted once, invariants hold
 * (test/crash-case.ts). The withdrawal broadcast group: test/crash-broadcast-group.test.ts.
 */
describe('crash mid-group of settlements (issue 22: settlements execute in groups, one database transaction each)', () => {
  test('kill -9 of the process group while a group of settlements waits in its ledger posting; restart: every settlement EXECUTED within 60 s, each posted once, invariants hold', async () => {
    const N = 16;
    await crashCase({
      name: 'group',
      before: async ({ a, db, ownerUrl }) => {
        const x = await sandboxIntegrator(a, db);
        const intents = await createIntents(a, x, N + 1);
        await fund(a, x, intents);
        // One settled first: the seller's balance row exists.
        expect((await a.rest('POST', `/v1/transactions/${intents[0]!.transactionId}/settlements`, { headers: x.h })).status).toBe(201);
        await accountPosted(a, x, '1000000');

        // The seller's balance row locked by this test: a group gets through its per-settlement writes and
        // then waits in its ledger posting (the last statements before its commit).
        const blocker = await holdLock(ownerUrl, {
          rowSql: `SELECT "id" FROM "LedgerAccount" WHERE "kind" = 'CUSTOMER' AND "ownerId" = $1 FOR UPDATE`,
          params: [x.accountId],
        });
        const rest = intents.slice(1);
        const keys = rest.map(() => randomUUID());
        const ask = (i: number, svc: ServiceProcess) =>
          svc.rest('POST', `/v1/transactions/${rest[i]!.transactionId}/settlements`, {
            headers: { ...x.h, 'idempotency-key': keys[i]! },
            body: { amount: '600000' },
          });
        const first = await Promise.all(rest.map((_pi, i) => ask(i, a)));
        for (const r of first) expect(r.status, r.text).toBe(201);
        await blocker.waiting('a group waiting in its ledger posting');
        // Their allocations are written, uncommitted: nothing is visible yet.
        expect(await db.settlement.count({ where: { transactionId: { in: rest.map((pi) => pi.transactionId) }, status: 'EXECUTED' } })).toBe(0);
        return { x, rest, ask, first, blocker, ids: first.map(idOf) };
      },
      afterCrash: (s) => s.blocker.release(),
      // Each request again with its key: the same settlement.
      replay: async (s, { b }) => {
        for (const [i, r] of s.first.entries()) {
          const again = await s.ask(i, b);
          expect(again.status, again.text).toBe(201);
          expect(idOf(again)).toBe(idOf(r));
        }
      },
      terminal: {
        what: 'every settlement EXECUTED',
        read: (s, { b }) => Promise.all(s.ids.map(async (id) => (await b.rest('GET', `/v1/settlements/${id}`, { headers: s.x.h })).body.status as string)),
        done: (v) => v.every((st) => st === 'EXECUTED'),
      },
      verify: async ({ x, rest, ids }, { b, db }) => {
        // Nothing lost, nothing twice: one posting, one allocation, one executed event and audit entry per settlement.
        expect(await db.ledgerTransaction.count({ where: { idempotencyKey: { in: ids.map((id) => `settlement:${id}`) } } })).toBe(N);
        expect(await db.settlementAllocation.count({ where: { settlementId: { in: ids } } })).toBe(N);
        expect(await db.webhookEvent.count({ where: { aggregateId: { in: ids }, eventType: 'settlement.executed' } })).toBe(N);
        expect(await db.auditLogEntry.count({ where: { entityId: { in: ids }, action: 'settlement.executed' } })).toBe(N);
        const balances = (await b.rest('GET', `/v1/accounts/${x.accountId}/balances`, { headers: x.f.member.headers })).body as { posted: string }[];
        expect(balances.map((v) => v.posted)).toEqual([String(1_000_000 + N * 600_000)]);
        for (const pi of rest) expect((await db.transaction.findUniqueOrThrow({ where: { id: pi.transactionId } })).settledAmount.toFixed()).toBe('600000');
        await checkLedgerInvariants(db);
      },
    });
  }, 240_000);
});

describe('crash mid-chunk of deposit confirmations (issue 22: a sync chunk confirms its deposits set-based, one database transaction)', () => {
  test('kill -9 of the process group while a sync chunk waits in its one ledger posting; restart: every deposit CONFIRMED within 60 s, each credited once, invariants hold', async () => {
    const N = 12;
    const status = (svc: ServiceProcess, h: Record<string, string>, pis: Intent[]) =>
      Promise.all(pis.map(async (pi) => (await svc.rest('GET', `/v1/payment-intents/${pi.id}`, { headers: h })).body.status as string));
    await crashCase({
      name: 'deposits',
      // No produced blocks: the test mines the blocks that confirm, when the chunk is to wait.
      env: { SANDBOX_BLOCK_INTERVAL_MS: '0' },
      before: async ({ a, db, ownerUrl }) => {
        const x = await sandboxIntegrator(a, db);
        const { h, an } = x;
        const intents = await createIntents(a, x, N + 1);
        const mine = (svc: ServiceProcess) => svc.rest('POST', `/v1/sandbox/networks/${x.catalog.networkId}/mine`, { headers: h, body: { blocks: 1 } });
        const send = (pi: Intent) =>
          a.rest('POST', '/v1/sandbox/deposits', { headers: h, body: { address: pi.address, amount: '1000000', assetNetworkId: an } });
        // The first one paid and confirmed: CHAIN_CLEARING's balance row exists.
        expect((await send(intents[0]!)).status).toBe(201);
        expect((await mine(a)).status).toBe(200);
        await pollUntil(
          'the first confirmed',
          () => status(a, h, [intents[0]!]),
          (s) => s[0] === 'SUCCEEDED',
          60_000,
          200,
        );
        const rest = intents.slice(1);
        for (const pi of rest) expect((await send(pi)).status).toBe(201);
        await pollUntil(
          'all detected',
          () => status(a, h, rest),
          (s) => s.every((v) => v === 'PROCESSING'),
          60_000,
          200,
        );

        // CHAIN_CLEARING's balance row locked by this test: the chunk confirming the block's deposits gets
        // through its reads and decisions and waits in its one ledger_post (before the deposits' writes).
        const blocker = await holdLock(ownerUrl, {
          rowSql: `SELECT "id" FROM "LedgerAccount" WHERE "kind" = 'CHAIN_CLEARING' AND "assetNetworkId" = $1 FOR UPDATE`,
          params: [an],
        });
        expect((await mine(a)).status).toBe(200);
        await blocker.waiting('a sync chunk waiting in its ledger posting');
        expect(await db.deposit.count({ where: { paymentIntentId: { in: rest.map((pi) => pi.id) }, status: 'CONFIRMED' } })).toBe(0);
        return { x, rest, blocker };
      },
      afterCrash: (s) => s.blocker.release(),
      terminal: {
        what: 'every intent SUCCEEDED',
        read: (s, { b }) => status(b, s.x.h, s.rest),
        done: (v) => v.every((st) => st === 'SUCCEEDED'),
      },
      verify: async ({ x, rest }, { db }) => {
        // Nothing lost, nothing twice: one deposit, one credit, one deposit.confirmed and one audit entry per send.
        const deposits = await db.deposit.findMany({ where: { paymentIntentId: { in: rest.map((pi) => pi.id) } } });
        expect(deposits.map((d) => d.status)).toEqual(rest.map(() => 'CONFIRMED'));
        const ids = deposits.map((d) => d.id);
        expect(await db.ledgerTransaction.count({ where: { idempotencyKey: { in: ids.map((id) => `deposit:${id}:confirmed`) } } })).toBe(N);
        expect(await db.webhookEvent.count({ where: { organizationId: x.f.organizationId, eventType: 'deposit.confirmed' } })).toBe(N + 1);
        expect(await db.auditLogEntry.count({ where: { entityId: { in: ids }, action: 'deposit.confirmed' } })).toBe(N);
        for (const pi of rest) expect((await db.transaction.findUniqueOrThrow({ where: { id: pi.transactionId } })).status).toBe('RESERVED');
        await checkLedgerInvariants(db);
        await checkSandboxInvariants(db);
      },
    });
  }, 240_000);
});
