import { describe, expect, test } from 'vitest';
import { randomUUID } from 'node:crypto';
import { checkLedgerInvariants } from './ledger-invariants';
import type { RestResult } from './harness';
import type { ServiceProcess } from './process-harness';
import { crashCase, DEST, expectBalance, fundedPayouts, holdLock, idOf, withdrawalsConfirmed } from './crash-case';

/**
 * A crash inside issue 22's withdrawal broadcast group (the broadcast job works a fetched batch in one
 * database transaction): the service as `npm start` runs it is killed (kill -9 of its process group)
 * while a group waits for the network's sandbox-chain lock (held by the test); after a restart every
 * withdrawal is broadcast once and CONFIRMED within 60 s, each hold posted once (test/crash-case.ts).
 */
describe('crash mid-group of withdrawal broadcasts (issue 22: the broadcast job works a fetched batch in one database transaction)', () => {
  test('kill -9 of the process group while a broadcast group waits for the network lock; restart: every withdrawal broadcast once and CONFIRMED within 60 s, each hold posted once, invariants hold', async () => {
    const N = 8;
    await crashCase({
      name: 'wgroup',
      before: async ({ a, db, ownerUrl }) => {
        const x = await fundedPayouts(a, db);
        const { h, an } = x;

        // The network's sandbox-chain lock held by this test: a broadcast group gets through its reads,
        // re-checks and source choice, then waits to send (the last statements before its commit).
        const blocker = await holdLock(ownerUrl, { advisory: `sandbox-chain ${x.catalog.networkId}` });
        const keys = Array.from({ length: N }, () => randomUUID());
        const ask = (i: number, svc: ServiceProcess) =>
          svc.rest('POST', `/v1/accounts/${x.accountId}/withdrawals`, {
            headers: { ...h, 'idempotency-key': keys[i]! },
            body: { amount: '10000', assetNetworkId: an, withdrawalDestinationId: x.destinationId },
          });
        const first: RestResult[] = [];
        for (let i = 0; i < N; i++) first.push(await ask(i, a));
        for (const r of first) expect(r.status, r.text).toBe(201);
        const ids = first.map(idOf);
        await blocker.waiting('a broadcast group waiting for the network lock');
        expect(await db.withdrawal.count({ where: { id: { in: ids }, status: 'APPROVED' } })).toBe(N);
        return { x, ask, ids, blocker };
      },
      afterCrash: (s) => s.blocker.release(),
      // Each request again with its key: the same withdrawal.
      replay: async (s, { b }) => {
        for (let i = 0; i < N; i++) {
          const again = await s.ask(i, b);
          expect(again.status, again.text).toBe(201);
          expect(idOf(again)).toBe(s.ids[i]);
        }
      },
      terminal: withdrawalsConfirmed,
      verify: async ({ x, ids }, { b, db }) => {
        // Nothing lost, nothing twice: one transfer on the chain, one broadcast event and audit entry, one posting per withdrawal.
        expect(await db.sandboxTransaction.count({ where: { networkId: x.catalog.networkId, toAddress: DEST } })).toBe(N);
        const rows = await db.withdrawal.findMany({ where: { id: { in: ids } }, select: { txHash: true, broadcastAttempts: true } });
        expect(new Set(rows.map((r) => r.txHash)).size).toBe(N);
        expect(rows.every((r) => r.broadcastAttempts === 1)).toBe(true);
        expect(await db.webhookEvent.count({ where: { aggregateId: { in: ids }, eventType: 'withdrawal.broadcast' } })).toBe(N);
        expect(await db.auditLogEntry.count({ where: { entityId: { in: ids }, action: 'withdrawal.broadcast' } })).toBe(N);
        expect(await db.ledgerTransaction.count({ where: { idempotencyKey: { in: ids.map((id) => `withdrawal:${id}:post`) } } })).toBe(N);
        await expectBalance(b, x, String(1_000_000 - N * 10_000));
        await checkLedgerInvariants(db);
      },
    });
  }, 240_000);
});
