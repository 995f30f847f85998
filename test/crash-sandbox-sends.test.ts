import { afterAll, expect, test } from 'vitest';
import { createPrisma } from '../src/db/prisma';
import { CHAIN_SYNC_QUEUE } from '../src/kernel/queues';
import type { RestApp, RestResult, TestApp } from './harness';
import { checkLedgerInvariants } from './ledger-invariants';
import { setupIntegrator, setupSandboxCatalog } from './money-helpers';
import { createIntent, type MoneyFixture } from './fixtures/deposits/testing';
import { cloneTemplateDatabase, ownerUrlOf, pollUntil, serviceEnv, startService } from './process-harness';

/**
 * Group commit of sandbox sends (issue 22), killed mid-group: the service as `npm start` runs it
 * gets 200 concurrent `POST /v1/sandbox/deposits` (40 paying payment intents, 160 to plain
 * addresses) and its process group is killed with SIGKILL once some have answered. Whatever a
 * group's transaction committed is whole (each transaction with its one audit entry, and the
 * group's chain.sync job), every 201 answered before the kill is on the chain, and no send is
 * there twice. After a restart the sends that never committed are sent again, blocks are mined, and
 * every intent ends SUCCEEDED, credited exactly once, the ledger invariants holding.
 */
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

test('kill -9 mid-group: every group whole, every answered send kept, none twice; after a restart every intent paid once', async () => {
  const databaseUrl = await cloneTemplateDatabase('sbsend');
  const db = createPrisma(ownerUrlOf(databaseUrl), 4);
  cleanups.push(() => db.$disconnect());
  const env = await serviceEnv();
  const a = await startService({ databaseUrl, env, detached: true });
  cleanups.push(() => a.stop());
  const app = { rest: a.rest, deps: { db } } as unknown as RestApp & TestApp;
  const catalog = await setupSandboxCatalog(app, { requiredConfirmations: 1 });
  const integrator = await setupIntegrator(app, catalog);
  const acc = await a.rest('POST', `/v1/organizations/${integrator.organizationId}/accounts`, { body: { name: 'Seller' }, headers: integrator.apiKeyHeaders });
  expect(acc.status, acc.text).toBe(201);
  const f = { catalog, ...integrator, beneficiaryAccountId: acc.headers.get('location')!.split('/').pop()! } as MoneyFixture;
  const intents = [];
  for (let i = 0; i < 40; i += 8) intents.push(...(await Promise.all(Array.from({ length: 8 }, () => createIntent(app, f)))));
  const plain = Array.from({ length: 160 }, (_x, i) => '0x' + (i + 1).toString(16).padStart(40, 'c'));
  const sends = [...intents.map((pi) => ({ address: pi.address, amount: '1000000' })), ...plain.map((address, i) => ({ address, amount: String(100 + i) }))];
  const send = (s: (typeof sends)[number], via = a) =>
    via.rest('POST', '/v1/sandbox/deposits', { headers: f.apiKeyHeaders, body: { ...s, assetNetworkId: catalog.assetNetworkId } });

  const first = new Map<string, RestResult>();
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 10_000);
    for (const s of sends)
      send(s)
        .then((r) => {
          first.set(s.address, r);
          if (first.size >= 20) {
            clearTimeout(timer);
            resolve();
          }
        })
        .catch(() => {}); // cut by the kill
  });
  expect((await a.killGroup('SIGKILL')).signal).toBe('SIGKILL');
  expect(first.size).toBeLessThan(sends.length);

  // Whole groups: each transaction with its one audit entry (with its hash), nothing else; a chain.sync job with them.
  const rows = await db.sandboxTransaction.findMany({ where: { networkId: catalog.networkId } });
  const entries = await db.auditLogEntry.findMany({ where: { organizationId: f.organizationId, action: 'sandbox.transaction_sent' } });
  expect(entries.map((e) => `${e.entityId} ${(e.after as { txHash: string }).txHash}`).sort()).toEqual(rows.map((t) => `${t.id} ${t.txHash}`).sort());
  if (rows.length)
    expect((await db.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM pgboss.job WHERE name = ${CHAIN_SYNC_QUEUE}`)[0]!.n).toBeGreaterThan(0n);
  // Every 201 answered before the kill is on the chain; no address received twice.
  const answered = [...first.entries()].filter(([, r]) => r.status === 201);
  expect(answered.length).toBeGreaterThan(0);
  const byAddress = new Map(rows.map((t) => [t.toAddress, t.txHash]));
  expect(byAddress.size).toBe(rows.length);
  for (const [address, r] of answered) expect(byAddress.get(address)).toBe(r.body.txHash);

  // Restart; the sends that never landed are sent again; blocks mined: every intent paid once.
  const b = await startService({ databaseUrl, env, detached: true });
  cleanups.push(() => b.stop());
  for (const s of sends)
    if (!byAddress.has(s.address)) {
      const r = await send(s, b);
      expect(r.status, r.text).toBe(201);
    }
  const mined = await b.rest('POST', `/v1/sandbox/networks/${catalog.networkId}/mine`, { headers: f.apiKeyHeaders, body: { blocks: 2 } });
  expect(mined.status, mined.text).toBe(200);
  const ids = intents.map((pi) => pi.id);
  await pollUntil(
    'every intent SUCCEEDED',
    () => db.paymentIntent.count({ where: { id: { in: ids }, status: 'SUCCEEDED' } }),
    (n) => n === ids.length,
    60_000,
    250,
  );
  const all = await db.sandboxTransaction.groupBy({ by: ['toAddress'], where: { networkId: catalog.networkId }, _count: true });
  expect(all).toHaveLength(sends.length);
  expect(all.every((g) => g._count === 1)).toBe(true);
  for (const pi of intents) expect(await db.deposit.count({ where: { paymentIntentId: pi.id, status: 'CONFIRMED' } })).toBe(1);
  await checkLedgerInvariants(db);
}, 240_000);
