import { describe, expect, test } from 'vitest';
import { randomUUID } from 'node:crypto';
import { checkLedgerInvariants } from './ledger-invariants';
import { pollUntil, type ServiceProcess } from './process-harness';
import { crashCase, DEST, expectBalance, fundedPayouts, holdLock, idOf, withdrawalsConfirmed } from './crash-case';

/**
 * Crash mid-group of withdrawal requests (issue 22, point 5), through the service as `npm start`
 * runs it: concurrent keyed requests are gathered in groups, one database transaction each
 * (src/withdrawals/requests.ts); the service is killed (kill -9 of its process group) while its
 * groups wait for the asset-network's CHAIN_CLEARING balance row, which this test holds locked. After
 * the restart every request is sent again with its key: each answers 201, one withdrawal per key
 * (nothing of the killed groups committed, nothing twice), each held once, broadcast and CONFIRMED
 * within 60 s, the balance exact and the ledger invariants hold (test/crash-case.ts).
 */
describe('crash mid-group of withdrawal requests (issue 22: concurrent requests written in one transaction per group)', () => {
  test('kill -9 of the process group while request groups wait for the CHAIN_CLEARING row; restart, replay each key: one withdrawal per key, each CONFIRMED within 60 s, held and posted once, invariants hold', async () => {
    const N = 12;
    const keys = Array.from({ length: N }, () => randomUUID());
    await crashCase({
      name: 'wrequests',
      before: async ({ a, db, ownerUrl }) => {
        const x = await fundedPayouts(a, db);
        const { h, an } = x;

        // The asset-network's CHAIN_CLEARING balance row held by this test: the request groups get
        // through their reads and locks, then wait for it (the group's ledger lock, before any write).
        const blocker = await holdLock(ownerUrl, {
          rowSql: `SELECT 1 FROM "LedgerAccount" WHERE "kind" = 'CHAIN_CLEARING' AND "ownerId" IS NULL AND "assetNetworkId" = $1::uuid FOR UPDATE`,
          params: [an],
        });
        const ask = (i: number, svc: ServiceProcess) =>
          svc.rest('POST', `/v1/accounts/${x.accountId}/withdrawals`, {
            headers: { ...h, 'idempotency-key': keys[i]! },
            body: { amount: '10000', assetNetworkId: an, withdrawalDestinationId: x.destinationId },
          });
        // Fired together: none can be answered before the kill (each waits for its group's commit).
        const inFlight = keys.map((_k, i) =>
          ask(i, a).then(
            (r) => r.status,
            () => 'no answer',
          ),
        );
        await pollUntil(
          'request groups waiting for the CHAIN_CLEARING row',
          async () =>
            // the group in flight waits for this test's lock (one group in flight: the other requests
            // wait in the process for the next group, and are lost with it)
            (
              await blocker.client.query(
                `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND cardinality(pg_blocking_pids(pid)) > 0`,
              )
            ).rows[0].n as number,
          (n) => n >= 1,
          30_000,
          100,
        );
        return { x, ask, inFlight, blocker, ids: [] as string[] };
      },
      afterCrash: async (s, { db }) => {
        expect(new Set(await Promise.all(s.inFlight))).toEqual(new Set(['no answer']));
        await s.blocker.release();
        // Nothing of the killed groups committed.
        expect(await db.withdrawal.count({ where: { accountId: s.x.accountId } })).toBe(0);
      },
      // Each request again with its key (concurrently: groups again), then once more: the same withdrawal each time.
      replay: async (s, { b }) => {
        const again = await Promise.all(keys.map((_k, i) => s.ask(i, b)));
        for (const r of again) expect(r.status, r.text).toBe(201);
        s.ids.push(...again.map(idOf));
        expect(new Set(s.ids).size).toBe(N);
        for (let i = 0; i < N; i++) expect(idOf(await s.ask(i, b))).toBe(s.ids[i]);
      },
      terminal: withdrawalsConfirmed,
      verify: async ({ x, ids }, { b, db }) => {
        // Nothing lost, nothing twice: one withdrawal, hold, posting, transfer, requested event and audit entry per key.
        expect(await db.withdrawal.count({ where: { accountId: x.accountId } })).toBe(N);
        expect(await db.ledgerTransaction.count({ where: { idempotencyKey: { in: ids.map((id) => `withdrawal:${id}:hold`) } } })).toBe(N);
        expect(await db.ledgerTransaction.count({ where: { idempotencyKey: { in: ids.map((id) => `withdrawal:${id}:post`) } } })).toBe(N);
        expect(await db.sandboxTransaction.count({ where: { networkId: x.catalog.networkId, toAddress: DEST } })).toBe(N);
        expect(await db.webhookEvent.count({ where: { aggregateId: { in: ids }, eventType: 'withdrawal.requested' } })).toBe(N);
        expect(await db.auditLogEntry.count({ where: { entityId: { in: ids }, action: 'withdrawal.requested' } })).toBe(N);
        expect(await db.idempotencyRecord.count({ where: { key: { in: keys } } })).toBe(N);
        await expectBalance(b, x, String(1_000_000 - N * 10_000));
        await checkLedgerInvariants(db);
      },
    });
  }, 240_000);
});
