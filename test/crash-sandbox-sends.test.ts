import { expect, test } from 'vitest';
import { CHAIN_SYNC_QUEUE } from '../src/kernel/queues';
import type { RestResult } from './harness';
import { checkLedgerInvariants } from './ledger-invariants';
import type { ServiceProcess } from './process-harness';
import { crashCase, createIntents, sandboxIntegrator } from './crash-case';

/**
 * Group commit of sandbox sends (issue 22), killed mid-group: the service as `npm start` runs it
 * gets a stream of `POST /v1/sandbox/deposits`, 64 in flight (first 40 paying payment intents,
 * then plain addresses, a new send as each answers, so some are always in flight), and its process
 * group is killed with SIGKILL once 20 have answered (a fixed set could all answer before the kill
 * landed on a loaded machine, as account-batch-crash's once did). Whatever a
 * group's transaction committed is whole (each transaction with its one audit entry, and the
 * group's chain.sync job), every 201 answered before the kill is on the chain, and no send is
 * there twice. After a restart the sends that never committed are sent again, blocks are mined, and
 * within 60 s of the restart every intent ends SUCCEEDED, credited exactly once, the ledger
 * invariants holding (test/crash-case.ts).
 */
test('kill -9 mid-group: every group whole, every answered send kept, none twice; after a restart every intent paid once', async () => {
  let stopped = false;
  await crashCase({
    name: 'sbsend',
    before: async ({ a, db }) => {
      const x = await sandboxIntegrator(a, db);
      const intents = await createIntents(a, x, 40, { inFlight: 8 });
      // The sends launched, in order: the intents' first, then plain addresses until the first process is dead.
      const sends: { address: string; amount: string }[] = [];
      const payments = intents.map((pi) => ({ address: pi.address, amount: '1000000' }));
      const send = (s: { address: string; amount: string }, via: ServiceProcess) =>
        via.rest('POST', '/v1/sandbox/deposits', { headers: x.h, body: { ...s, assetNetworkId: x.an } });
      const first = new Map<string, RestResult>();
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 10_000);
        const next = (): void => {
          if (stopped || sends.length >= 5_000) return;
          const n = sends.length;
          const s = payments[n] ?? { address: '0x' + (n + 1).toString(16).padStart(40, 'c'), amount: String(100 + n) };
          sends.push(s);
          send(s, a)
            .then((r) => {
              first.set(s.address, r);
              if (first.size >= 20) {
                clearTimeout(timer);
                resolve();
              }
              next();
            })
            .catch(() => {}); // cut by the kill
        };
        for (let i = 0; i < 64; i++) next();
      });
      return { x, intents, sends, send, first, byAddress: new Map<string, string>() };
    },
    // Killed while the stream goes on, which stops once the process is gone.
    crash: async (a) => {
      expect((await a.killGroup('SIGKILL')).signal).toBe('SIGKILL');
      stopped = true;
    },
    afterCrash: async ({ x, sends, first, byAddress }, { db }) => {
      expect(first.size).toBeLessThan(sends.length);
      // Whole groups: each transaction with its one audit entry (with its hash), nothing else; a chain.sync job with them.
      const rows = await db.sandboxTransaction.findMany({ where: { networkId: x.catalog.networkId } });
      const entries = await db.auditLogEntry.findMany({ where: { organizationId: x.f.organizationId, action: 'sandbox.transaction_sent' } });
      expect(entries.map((e) => `${e.entityId} ${(e.after as { txHash: string }).txHash}`).sort()).toEqual(rows.map((t) => `${t.id} ${t.txHash}`).sort());
      if (rows.length)
        expect((await db.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM pgboss.job WHERE name = ${CHAIN_SYNC_QUEUE}`)[0]!.n).toBeGreaterThan(0n);
      // Every 201 answered before the kill is on the chain; no address received twice.
      const answered = [...first.entries()].filter(([, r]) => r.status === 201);
      expect(answered.length).toBeGreaterThan(0);
      for (const t of rows) byAddress.set(t.toAddress, t.txHash);
      expect(byAddress.size).toBe(rows.length);
      for (const [address, r] of answered) expect(byAddress.get(address)).toBe(r.body.txHash);
    },
    // The sends that never landed are sent again; blocks mined.
    replay: async ({ x, sends, send, byAddress }, { b }) => {
      for (const s of sends)
        if (!byAddress.has(s.address)) {
          const r = await send(s, b);
          expect(r.status, r.text).toBe(201);
        }
      const mined = await b.rest('POST', `/v1/sandbox/networks/${x.catalog.networkId}/mine`, { headers: x.h, body: { blocks: 2 } });
      expect(mined.status, mined.text).toBe(200);
    },
    terminal: {
      what: 'every intent SUCCEEDED',
      read: ({ intents }, { db }) => db.paymentIntent.count({ where: { id: { in: intents.map((pi) => pi.id) }, status: 'SUCCEEDED' } }),
      done: (n) => n === 40,
    },
    // Every intent paid once; one transfer per send.
    verify: async ({ x, intents, sends }, { db }) => {
      const all = await db.sandboxTransaction.groupBy({ by: ['toAddress'], where: { networkId: x.catalog.networkId }, _count: true });
      expect(all).toHaveLength(sends.length);
      expect(all.every((g) => g._count === 1)).toBe(true);
      for (const pi of intents) expect(await db.deposit.count({ where: { paymentIntentId: pi.id, status: 'CONFIRMED' } })).toBe(1);
      await checkLedgerInvariants(db);
    },
  });
}, 240_000);
