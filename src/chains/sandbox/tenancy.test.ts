import { describe, expect, test } from 'vitest';
import type { TestApp } from '../../../test/harness';
import { sandboxSuite } from '../../../test/money-suite';
import { sandboxDrop, sandboxMine, sandboxReorg, sandboxReplace, sandboxSend, setupIntegrator, setupSandboxCatalog } from '../../../test/money-helpers';
import { createIntent, drainChainSync, eventsOf, type MoneyFixture } from '../../../test/fixtures/deposits/testing';
import { drainMoneyWork } from '../../../test/fixtures/settlements/testing';
import { withdrawalTesting } from '../../../test/fixtures/withdrawals/testing';
import { adapterFor, networkRef } from '../adapter';
import * as keys from '../secp256k1';

/**
 * Issue 14, point 2: the sandbox chain is shared, its transactions are not. Two organizations on one
 * SANDBOX network: B can neither drop nor replace A's deposit or A's withdrawal broadcast (404, as
 * for a hash the chain never saw; nothing changes), and B's reorganizations never orphan A's
 * transactions (A's confirmed deposit stays CONFIRMED, its transaction unfrozen). A's own drop,
 * replace and reorganization work as before. Through REST and GraphQL.
 */
let app: TestApp;
sandboxSuite((a) => (app = a));

/** Two organizations on one SANDBOX network: A with a beneficiary account (deposits to payment intents), B an integrator. */
async function twoOrganizations(requiredConfirmations = 2) {
  const catalog = await setupSandboxCatalog(app, { requiredConfirmations });
  const a = await setupIntegrator(app, catalog);
  const acc = await app.rest('POST', `/v1/organizations/${a.organizationId}/accounts`, { body: { name: 'Seller' }, headers: a.apiKeyHeaders });
  expect(acc.status, acc.text).toBe(201);
  const A: MoneyFixture = { catalog, ...a, beneficiaryAccountId: acc.headers.get('location')!.split('/').pop()! };
  const B = await setupIntegrator(app, catalog);
  return { catalog, A, B };
}

const get = async (headers: Record<string, string>, path: string) => {
  const r = await app.rest('GET', path, { headers });
  expect(r.status, r.text).toBe(200);
  return r.body;
};
async function chainTx(headers: Record<string, string>, txHash: string) {
  const r = await app.gql<{ sandboxTransaction: Record<string, unknown> }>(
    'query($h: String!) { sandboxTransaction(txHash: $h) { status amount blockHash blockHeight confirmations replacedByTxHash } }',
    { h: txHash },
    headers,
  );
  expect(r.errors, JSON.stringify(r.errors)).toBeUndefined();
  return r.data!.sandboxTransaction;
}

/** B's four attempts on a transaction (drop and replace, REST and GraphQL): each must answer not found. */
async function expectForeign(headers: Record<string, string>, txHash: string) {
  const drop = await app.rest('POST', '/v1/sandbox/transactions/drop', { headers, body: { txHash } });
  expect([drop.status, drop.body.code]).toEqual([404, 'NOT_FOUND']);
  const replace = await app.rest('POST', '/v1/sandbox/transactions/replace', {
    headers: { ...headers, 'idempotency-key': crypto.randomUUID() },
    body: { txHash, amount: '1' },
  });
  expect([replace.status, replace.body.code]).toEqual([404, 'NOT_FOUND']);
  // Exactly what a hash the chain never saw answers: nothing tells the two apart.
  const unknown = await app.rest('POST', '/v1/sandbox/transactions/drop', { headers, body: { txHash: '0x' + 'cd'.repeat(32) } });
  expect(drop.body.detail).toBe(unknown.body.detail);
  const gqlDrop = await app.gql('mutation($h: String!) { sandboxDropTransaction(input: { txHash: $h }) { status } }', { h: txHash }, headers);
  expect(gqlDrop.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  const gqlReplace = await app.gql(
    'mutation($h: String!) { sandboxReplaceTransaction(input: { txHash: $h, amount: "5000000" }) { txHash } }',
    { h: txHash },
    headers,
  );
  expect(gqlReplace.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
}

describe('drop and replace: only the organization that sent the transaction', () => {
  test("B cannot drop or replace A's deposit (404, nothing changes); the deposit still confirms; A's own drop and replace work", async () => {
    const { A, B } = await twoOrganizations();
    const pi = await createIntent(app, A, { amount: '1000000' });
    const { txHash } = await sandboxSend(app, A.apiKeyHeaders, {
      address: pi.address,
      amount: 1_000_000n,
      assetNetworkId: A.catalog.assetNetworkId,
      replaceable: true,
    });
    const before = await chainTx(A.apiKeyHeaders, txHash);
    const sandboxTransactions = await app.deps.db.sandboxTransaction.count();

    await expectForeign(B.apiKeyHeaders, txHash);
    // A member of B, naming B's sandbox: the same.
    await expectForeign(B.member.headers, txHash);

    expect(await chainTx(A.apiKeyHeaders, txHash)).toEqual(before);
    expect(await app.deps.db.sandboxTransaction.count()).toBe(sandboxTransactions);
    expect(await app.deps.db.auditLogEntry.count({ where: { organizationId: B.organizationId, action: { startsWith: 'sandbox.transaction_' } } })).toBe(0);

    await sandboxMine(app, B.apiKeyHeaders, A.catalog.networkId, 2);
    await drainChainSync(app);
    expect(await get(A.apiKeyHeaders, `/v1/payment-intents/${pi.id}`)).toMatchObject({ status: 'SUCCEEDED', confirmedAmount: '1000000' });

    // A's own: replace, then drop the replacement.
    const own = await sandboxSend(app, A.apiKeyHeaders, { address: pi.address, amount: 5n, assetNetworkId: A.catalog.assetNetworkId, replaceable: true });
    const replacement = await sandboxReplace(app, A.apiKeyHeaders, own.txHash, 7n);
    await sandboxDrop(app, A.apiKeyHeaders, replacement.txHash);
    expect(await chainTx(A.apiKeyHeaders, own.txHash)).toMatchObject({ status: 'REPLACED', replacedByTxHash: replacement.txHash });
    expect(await chainTx(A.apiKeyHeaders, replacement.txHash)).toMatchObject({ status: 'DROPPED', amount: '7' });
  });

  test("B cannot drop or replace the platform's broadcast of A's withdrawal, nor reorganize it away; it confirms", async () => {
    const w = withdrawalTesting(() => app, '0x00000000000000000000000000000000000000d4');
    const s = await w.setup();
    const B = await setupIntegrator(app, s.f.catalog);
    const r = await app.rest('POST', `/v1/accounts/${s.accountId}/withdrawals`, {
      headers: s.f.apiKeyHeaders,
      body: { amount: '300000', assetNetworkId: s.f.catalog.assetNetworkId, withdrawalDestinationId: s.destinationId },
    });
    expect(r.status, r.text).toBe(201);
    await drainMoneyWork(app);
    const { id, status, txHash } = await w.get(s, w.idOf(r));
    expect(status).toBe('BROADCAST');

    await expectForeign(B.apiKeyHeaders, txHash);
    expect(await chainTx(B.apiKeyHeaders, txHash)).toMatchObject({ status: 'PENDING', amount: '300000' });

    await w.mine(s);
    const mined = await chainTx(B.apiKeyHeaders, txHash);
    expect(mined).toMatchObject({ status: 'MINED', confirmations: 1 });
    // B's reorganization, without re-inclusion, of the block that holds it: A's transfer stays mined at its height.
    await sandboxReorg(app, B.apiKeyHeaders, s.f.catalog.networkId, 1, false);
    expect(await chainTx(B.apiKeyHeaders, txHash)).toMatchObject({ status: 'MINED', blockHeight: mined.blockHeight, confirmations: 2 });
    expect((await w.sweep(s)).CONFIRMED).toBe(1);
    expect(await w.get(s, id)).toMatchObject({ status: 'CONFIRMED', txHash });
    expect(await w.withdrawalEvents(s, id)).toEqual(['requested', 'approved', 'broadcast', 'confirmed']);
  });
});

describe("reorganizations: only the caller's transactions", () => {
  test(
    "B's reorganizations (REST and GraphQL) leave A's confirmed deposit CONFIRMED and its transaction unfrozen; " +
      "B's own are orphaned; A's own reorganization still freezes A's deposit",
    async () => {
      const { A, B } = await twoOrganizations(2);
      const pi = await createIntent(app, A, { amount: '1000000' });
      const a = await sandboxSend(app, A.apiKeyHeaders, { address: pi.address, amount: 1_000_000n, assetNetworkId: A.catalog.assetNetworkId });
      const bAddress = '0x' + 'b0'.repeat(20);
      const b = await sandboxSend(app, B.apiKeyHeaders, { address: bAddress, amount: 40n, assetNetworkId: A.catalog.assetNetworkId });
      await sandboxMine(app, A.apiKeyHeaders, A.catalog.networkId, 2);
      await drainChainSync(app);
      const [depositId] = (await get(A.apiKeyHeaders, `/v1/payment-intents/${pi.id}`)).depositIds;
      expect(await get(A.apiKeyHeaders, `/v1/deposits/${depositId}`)).toMatchObject({ status: 'CONFIRMED', confirmations: 2 });
      const events = (await eventsOf(app, A.organizationId)).length;

      // B, REST: depth 2 without re-inclusion. A's transfer is carried into the replacement block at its height.
      expect(await sandboxReorg(app, B.apiKeyHeaders, A.catalog.networkId, 2, false)).toEqual({ height: 3 });
      expect(await chainTx(A.apiKeyHeaders, a.txHash)).toMatchObject({ status: 'MINED', blockHeight: 1, confirmations: 3 });
      expect(await chainTx(B.apiKeyHeaders, b.txHash)).toMatchObject({ status: 'ORPHANED', confirmations: 0 });
      await drainChainSync(app);
      expect(await get(A.apiKeyHeaders, `/v1/deposits/${depositId}`)).toMatchObject({ status: 'CONFIRMED', creditedTo: 'ESCROW' });
      expect(await get(A.apiKeyHeaders, `/v1/transactions/${pi.transactionId}`)).toMatchObject({ frozen: false, frozenByDepositId: null });

      // B, GraphQL: the same.
      const g = await app.gql<{ sandboxReorg: { height: number } }>(
        'mutation($n: ID!) { sandboxReorg(networkId: $n, input: { depth: 3, includeOrphanedTransactions: false }) { height } }',
        { n: A.catalog.networkId },
        B.apiKeyHeaders,
      );
      expect(g.errors, JSON.stringify(g.errors)).toBeUndefined();
      expect(g.data!.sandboxReorg.height).toBe(4);
      expect(await chainTx(A.apiKeyHeaders, a.txHash)).toMatchObject({ status: 'MINED', blockHeight: 1, confirmations: 4 });
      await drainChainSync(app);
      expect(await get(A.apiKeyHeaders, `/v1/deposits/${depositId}`)).toMatchObject({ status: 'CONFIRMED' });
      expect(await get(A.apiKeyHeaders, `/v1/transactions/${pi.transactionId}`)).toMatchObject({ frozen: false });
      expect((await eventsOf(app, A.organizationId)).slice(events).map((e) => e.type)).not.toContain('deposit.reorg_frozen');

      // A's own reorganization: its deposit is in doubt, as before.
      await sandboxReorg(app, A.apiKeyHeaders, A.catalog.networkId, 4, false);
      expect(await chainTx(A.apiKeyHeaders, a.txHash)).toMatchObject({ status: 'ORPHANED' });
      await drainChainSync(app);
      expect(await get(A.apiKeyHeaders, `/v1/deposits/${depositId}`)).toMatchObject({ status: 'REORG_FROZEN' });
      expect(await get(A.apiKeyHeaders, `/v1/transactions/${pi.transactionId}`)).toMatchObject({ frozen: true, frozenByDepositId: depositId });
    },
  );

  test("a deposit from one organization to another's address is both organizations' money: neither's reorganization orphans it", async () => {
    const { A, B } = await twoOrganizations(1);
    const pi = await createIntent(app, A, { amount: '250' });
    // B's faucet pays A's payment intent.
    const t = await sandboxSend(app, B.apiKeyHeaders, { address: pi.address, amount: 250n, assetNetworkId: A.catalog.assetNetworkId });
    await sandboxMine(app, B.apiKeyHeaders, A.catalog.networkId);
    await drainChainSync(app);
    for (const org of [B, A]) {
      await sandboxReorg(app, org.apiKeyHeaders, A.catalog.networkId, 1, false);
      expect(await chainTx(org.apiKeyHeaders, t.txHash)).toMatchObject({ status: 'MINED', blockHeight: 1 });
    }
    await drainChainSync(app);
    expect(await get(A.apiKeyHeaders, `/v1/payment-intents/${pi.id}`)).toMatchObject({ status: 'SUCCEEDED' });
    // Sent by B: B may drop it while it waits in the mempool (A, whose address receives it, may not).
    const pending = await sandboxSend(app, B.apiKeyHeaders, { address: pi.address, amount: 1n, assetNetworkId: A.catalog.assetNetworkId });
    await expectForeign(A.apiKeyHeaders, pending.txHash);
    await sandboxDrop(app, B.apiKeyHeaders, pending.txHash);
  });

  test("a reorganization that would orphan value another organization's mined transfer spent is refused (409), nothing changes", async () => {
    const { A, B, catalog } = await twoOrganizations(1);
    const network = networkRef(await app.deps.db.network.findUniqueOrThrow({ where: { id: catalog.networkId } }));
    const holder = keys.generateKeyPair();
    const held = keys.addressOf(holder.publicKey);
    // A funds an address (A's transaction only); B's transfer from it spends the funds in the next block.
    await sandboxSend(app, A.apiKeyHeaders, { address: held, amount: 100n, assetNetworkId: catalog.assetNetworkId });
    await sandboxMine(app, A.apiKeyHeaders, catalog.networkId);
    const signed = keys.signTransfer(
      {
        networkId: catalog.networkId,
        assetNetworkId: catalog.assetNetworkId,
        fromAddress: held,
        fromPublicKey: holder.publicKey,
        toAddress: '0x' + 'e1'.repeat(20),
        amount: '100',
        nonce: '1',
      },
      holder.privateKey,
    );
    const spend = await adapterFor('SANDBOX', app.deps.db, { clock: app.clock, boss: app.deps.boss }).broadcast(network, signed, B.organizationId);
    await sandboxMine(app, A.apiKeyHeaders, catalog.networkId);
    const tip = await app.gql<{ sandboxChain: { height: number; tipHash: string } }>(
      'query($n: ID!) { sandboxChain(networkId: $n) { height tipHash } }',
      { n: catalog.networkId },
      A.apiKeyHeaders,
    );
    const refused = await app.rest('POST', `/v1/sandbox/networks/${catalog.networkId}/reorg`, {
      headers: A.apiKeyHeaders,
      body: { depth: 2, includeOrphanedTransactions: false },
    });
    expect([refused.status, refused.body.code]).toEqual([409, 'INVALID_STATE']);
    const after = await app.gql<{ sandboxChain: { height: number; tipHash: string } }>(
      'query($n: ID!) { sandboxChain(networkId: $n) { height tipHash } }',
      { n: catalog.networkId },
      A.apiKeyHeaders,
    );
    expect(after.data).toEqual(tip.data);
    expect(await chainTx(B.apiKeyHeaders, spend.txHash)).toMatchObject({ status: 'MINED', blockHeight: 2 });
    // Re-including its transactions, A may reorganize: nothing is lost.
    expect(await sandboxReorg(app, A.apiKeyHeaders, catalog.networkId, 2)).toEqual({ height: 3 });
  });
});
