import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { createApiKey, createTestApp, signUpMember, type TestApp } from '../../../test/harness';
import { checkSandboxInvariants } from '../../../test/sandbox-invariants';
import {
  sandboxAdvanceClock,
  sandboxDrop,
  sandboxMine,
  sandboxReorg,
  sandboxReplace,
  sandboxSend,
  setupIntegrator,
  setupSandboxCatalog,
} from '../../../test/money-helpers';
import { adapterFor, networkRef } from '../adapter';
import * as keys from '../secp256k1';
import { CHAIN_SYNC_QUEUE } from '../../kernel/queues';
import { blockHash, payerAddress, sendTransactions, transactionHash } from './chain';
import { MAX_AMOUNT } from '../../money';
import { sandboxNow } from './clock';
import { produceSandboxBlocks } from './producer';
import { sendGroupStats } from './service';

let app: TestApp;
let catalog: Awaited<ReturnType<typeof setupSandboxCatalog>>;
let integ: Awaited<ReturnType<typeof setupIntegrator>>;
let h: Record<string, string>;

beforeAll(async () => {
  app = await createTestApp();
  catalog = await setupSandboxCatalog(app);
  integ = await setupIntegrator(app, catalog);
  h = integ.apiKeyHeaders;
});
afterAll(() => app.close());
// Every test ends with the chain's money invariants: balances are what the faucets put in.
afterEach(() => checkSandboxInvariants(app.deps.db));

let addressSeq = 0;
const address = () => '0x' + (++addressSeq).toString(16).padStart(40, 'a');

/** A fresh SANDBOX network with an enabled asset-network: tests that count blocks start from height 0. */
const freshChain = () => setupSandboxCatalog(app);

/** A fresh sandbox chain, its adapter, a sender key pair with its address, and a recipient address. */
async function adapterChain() {
  const c = await freshChain();
  const network = networkRef(await app.deps.db.network.findUniqueOrThrow({ where: { id: c.networkId } }));
  const adapter = adapterFor('SANDBOX', app.deps.db, { clock: app.clock, boss: app.deps.boss });
  const sender = keys.generateKeyPair();
  return { c, network, adapter, sender, from: keys.addressOf(sender.publicKey), to: address() };
}

async function tx(txHash: string) {
  const r = await app.gql<{ sandboxTransaction: Record<string, unknown> }>(
    'query($h: String!) { sandboxTransaction(txHash: $h) { txHash status amount blockHash blockHeight ' +
      'confirmations replacedByTxHash fromAddress toAddress willRevert } }',
    { h: txHash },
    h,
  );
  expect(r.errors, JSON.stringify(r.errors)).toBeUndefined();
  return r.data!.sandboxTransaction as {
    status: string;
    amount: string;
    blockHash: string | null;
    blockHeight: number | null;
    confirmations: number;
    replacedByTxHash: string | null;
    fromAddress: string;
    toAddress: string;
  };
}
async function balance(assetNetworkId: string, addr: string) {
  const r = await app.gql<{ sandboxBalance: { balance: string } }>(
    'query($a: ID!, $x: String!) { sandboxBalance(assetNetworkId: $a, address: $x) { balance } }',
    { a: assetNetworkId, x: addr },
    h,
  );
  expect(r.errors).toBeUndefined();
  return BigInt(r.data!.sandboxBalance.balance);
}
const syncJobs = async (networkId: string) => (await app.deps.boss!.findJobs(CHAIN_SYNC_QUEUE, { data: { networkId } })).length;

describe('sending and mining', () => {
  test('send: 201 {txHash, status PENDING} from the organization payer; mining confirms; confirmations = tip - height + 1; balances per address', async () => {
    const c = await freshChain();
    const to = address();
    const r = await app.rest('POST', '/v1/sandbox/deposits', {
      headers: h,
      body: { address: to.toUpperCase().replace('0X', '0x'), amount: '2500000', assetNetworkId: c.assetNetworkId },
    });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({ txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/), status: 'PENDING' });
    const sent = await tx(r.body.txHash);
    expect(sent).toMatchObject({
      status: 'PENDING',
      amount: '2500000',
      blockHash: null,
      confirmations: 0,
      fromAddress: payerAddress(integ.organizationId),
      toAddress: to,
    });
    expect(await balance(c.assetNetworkId, to)).toBe(0n);

    expect(await sandboxMine(app, h, c.networkId)).toEqual({ height: 1 });
    expect(await tx(r.body.txHash)).toMatchObject({ status: 'MINED', blockHeight: 1, confirmations: 1 });
    expect(await balance(c.assetNetworkId, to)).toBe(2_500_000n);
    expect(await sandboxMine(app, h, c.networkId, 5)).toEqual({ height: 6 });
    expect((await tx(r.body.txHash)).confirmations).toBe(6);

    const second = await sandboxSend(app, h, { address: to, amount: 500n, assetNetworkId: c.assetNetworkId });
    await sandboxMine(app, h, c.networkId);
    expect(await tx(second.txHash)).toMatchObject({ blockHeight: 7, confirmations: 1 });
    expect(await balance(c.assetNetworkId, to)).toBe(2_500_500n);
    expect(await balance(c.assetNetworkId, address())).toBe(0n);

    // A body-less mine mines one block; the tip is readable through GraphQL.
    const bare = await app.rest('POST', `/v1/sandbox/networks/${c.networkId}/mine`, { headers: h });
    expect([bare.status, bare.body]).toEqual([200, { height: 8 }]);
    const tip = await app.gql<{ sandboxChain: { height: number; tipHash: string } }>(
      'query($n: ID!) { sandboxChain(networkId: $n) { height tipHash } }',
      { n: c.networkId },
      h,
    );
    expect(tip.data!.sandboxChain.height).toBe(8);
  });

  test('revert: mined REVERTED, no value moves, no confirmations', async () => {
    const c = await freshChain();
    const to = address();
    const { txHash } = await sandboxSend(app, h, { address: to, amount: 10n, assetNetworkId: c.assetNetworkId, revert: true });
    await sandboxMine(app, h, c.networkId, 2);
    expect(await tx(txHash)).toMatchObject({ status: 'REVERTED', blockHeight: 1, confirmations: 0, willRevert: true });
    expect(await balance(c.assetNetworkId, to)).toBe(0n);
  });

  test('block hashes chain and recompute from parent, height, fork and transactions', async () => {
    const c = await freshChain();
    await sandboxSend(app, h, { address: address(), amount: 1n, assetNetworkId: c.assetNetworkId });
    await sandboxSend(app, h, { address: address(), amount: 2n, assetNetworkId: c.assetNetworkId });
    await sandboxMine(app, h, c.networkId, 3);
    await sandboxSend(app, h, { address: address(), amount: 3n, assetNetworkId: c.assetNetworkId });
    await sandboxReorg(app, h, c.networkId, 2);
    const blocks = await app.deps.db.sandboxBlock.findMany({ where: { networkId: c.networkId, canonical: true }, orderBy: { height: 'asc' } });
    expect(blocks.map((b) => b.height)).toEqual([1, 2, 3, 4]);
    for (const [i, b] of blocks.entries()) {
      expect(b.parentHash).toBe(i === 0 ? null : blocks[i - 1]!.hash);
      const txs = (await app.deps.db.sandboxTransaction.findMany({ where: { blockHash: b.hash } })).map((t) => t.txHash);
      const seen = await app.deps.db.sandboxBlock.count({ where: { networkId: c.networkId, height: b.height } });
      const forks = Array.from({ length: seen }, (_x, f) => blockHash(c.networkId, b.height, b.parentHash, f, txs));
      expect(forks, `block ${b.height}`).toContain(b.hash);
    }
    expect(blocks[0]!.hash).toBe(
      blockHash(
        c.networkId,
        1,
        null,
        0,
        (await app.deps.db.sandboxTransaction.findMany({ where: { blockHeight: 1, networkId: c.networkId } })).map((t) => t.txHash),
      ),
    );
  });
});

describe('concurrent sends (issue 22: no network-wide lock)', () => {
  test('sends to many addresses at once: every one PENDING with its own nonce 0..n-1 from the network’s sequence (hash as the chain defines it)', async () => {
    const c = await freshChain();
    const targets = Array.from({ length: 6 }, () => address());
    const n = 24;
    const sent = await Promise.all(
      Array.from({ length: n }, async (_x, i) => {
        const to = targets[i % targets.length]!;
        const amount = BigInt(100 + i);
        const r = await sandboxSend(app, h, { address: to, amount, assetNetworkId: c.assetNetworkId });
        return { ...r, to, amount };
      }),
    );
    const nonces = sent.map((s) => {
      const t = {
        fromAddress: payerAddress(integ.organizationId),
        toAddress: s.to,
        assetNetworkId: c.assetNetworkId,
        amount: s.amount,
        replaceable: false,
        revert: false,
      };
      return Array.from({ length: n }, (_x, k) => k).find((k) => transactionHash(c.networkId, k, t) === s.txHash);
    });
    // Nothing refused or rolled back: the network's sequence gave exactly 0..n-1.
    expect(nonces.sort((a, b) => a! - b!)).toEqual(Array.from({ length: n }, (_x, k) => k));
    await sandboxMine(app, h, c.networkId, 1);
    for (const to of targets) expect(await balance(c.assetNetworkId, to)).toBe(sent.filter((s) => s.to === to).reduce((a, s) => a + s.amount, 0n));
  });

  test('two sends to one address at once that together exceed 2^256 - 1: one 201, one 409 (the recipient lock)', async () => {
    const c = await freshChain();
    const to = address();
    const half = MAX_AMOUNT / 2n + 1n;
    const body = { address: to, amount: half.toString(), assetNetworkId: c.assetNetworkId };
    const answers = await Promise.all([0, 1, 2].map(() => app.rest('POST', '/v1/sandbox/deposits', { headers: h, body })));
    expect(answers.map((r) => r.status).sort()).toEqual([201, 409, 409]);
    await sandboxMine(app, h, c.networkId, 1);
    expect(await balance(c.assetNetworkId, to)).toBe(half);
  });
});

describe('sends in groups (issue 22: one transaction per group of concurrent sends)', () => {
  test('concurrent sends, some refused (a recipient at 2^256 - 1, an asset-network of another network): each refused one fails alone, the others land with consecutive nonces', async () => {
    const c = await freshChain();
    const full = address();
    // Nonce 0: the full address holds 2^256 - 1 (pending counts).
    await sandboxSend(app, h, { address: full, amount: MAX_AMOUNT, assetNetworkId: c.assetNetworkId });
    const before = { ...(sendGroupStats(app.deps.db) ?? { groups: 0, items: 0 }) };
    const bodies = Array.from({ length: 20 }, (_x, i) => {
      if (i % 5 === 2) return { kind: 'bound', body: { address: full, amount: String(i + 1), assetNetworkId: c.assetNetworkId } };
      if (i === 9)
        return {
          kind: 'catalog',
          body: { address: address(), amount: '5', assetNetworkId: catalog.assetNetworkId.replace(/.$/, (x) => (x === '0' ? '1' : '0')) },
        };
      return { kind: 'ok', body: { address: address(), amount: String(1000 + i), assetNetworkId: c.assetNetworkId } };
    });
    const answers = await Promise.all(bodies.map((b) => app.rest('POST', '/v1/sandbox/deposits', { headers: h, body: b.body })));
    const after = sendGroupStats(app.deps.db)!;
    // Written in groups: fewer groups than sends.
    expect(after.items - before.items).toBe(19);
    expect(after.groups - before.groups).toBeLessThan(19);
    const accepted: { txHash: string; to: string; amount: bigint }[] = [];
    for (const [i, b] of bodies.entries()) {
      const r = answers[i]!;
      if (b.kind === 'bound') {
        expect([r.status, r.body.code], r.text).toEqual([409, 'INVALID_STATE']);
        expect(r.body.detail).toMatch(/would hold more than 2\^256 - 1 base units .* it holds or awaits \d+, so it can receive at most 0 more/);
      } else if (b.kind === 'catalog') {
        expect([r.status, r.body.errors?.[0]?.field], r.text).toEqual([400, 'assetNetworkId']);
      } else {
        expect(r.status, r.text).toBe(201);
        expect(r.body).toEqual({ status: 'PENDING', txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
        accepted.push({ txHash: r.body.txHash, to: b.body.address, amount: BigInt(b.body.amount) });
      }
    }
    expect(accepted).toHaveLength(15);
    // The refused ones took no nonce: the accepted have exactly 1..15.
    const nonces = accepted.map((t) =>
      Array.from({ length: 40 }, (_x, k) => k).find(
        (k) =>
          transactionHash(c.networkId, k, {
            fromAddress: payerAddress(integ.organizationId),
            toAddress: t.to,
            assetNetworkId: c.assetNetworkId,
            amount: t.amount,
            replaceable: false,
            revert: false,
          }) === t.txHash,
      ),
    );
    expect(nonces.sort((a, b) => a! - b!)).toEqual(Array.from({ length: 15 }, (_x, k) => k + 1));
    // Each accepted send has its one audit entry (with its hash); the refused ones none.
    const rows = await app.deps.db.sandboxTransaction.findMany({ where: { networkId: c.networkId } });
    expect(rows).toHaveLength(16);
    const entries = await app.deps.db.auditLogEntry.findMany({ where: { action: 'sandbox.transaction_sent', entityId: { in: rows.map((x) => x.id) } } });
    expect(entries.map((e) => (e.after as { txHash: string }).txHash).sort()).toEqual(rows.map((x) => x.txHash).sort());
    await sandboxMine(app, h, c.networkId, 1);
    for (const t of accepted) expect(await balance(c.assetNetworkId, t.to)).toBe(t.amount);
    expect(await balance(c.assetNetworkId, full)).toBe(MAX_AMOUNT);
  });

  test('a group that outlasts its 5 s bound (a recipient lock held elsewhere) answers 503 with Retry-After, and nothing of it is written', async () => {
    const c = await freshChain();
    const to = address();
    let held!: () => void;
    const locked = new Promise<void>((resolve) => (held = resolve));
    // Another transaction holds the recipient's lock for longer than a send group may last.
    const holder = app.deps.db.$transaction(
      async (t) => {
        await t.$queryRaw`SELECT pg_advisory_xact_lock(hashtextextended(${'sandbox-chain ' + c.networkId + ' to ' + to}::text, 0))::text`;
        held();
        await new Promise((resolve) => setTimeout(resolve, 6_500));
      },
      { timeout: 20_000 },
    );
    await locked;
    const r = await app.rest('POST', '/v1/sandbox/deposits', { headers: h, body: { address: to, amount: '7', assetNetworkId: c.assetNetworkId } });
    expect([r.status, r.body.code], r.text).toEqual([503, 'SERVICE_UNAVAILABLE']);
    expect(r.headers.get('retry-after')).toBe('1');
    await holder;
    expect(await app.deps.db.sandboxTransaction.count({ where: { networkId: c.networkId, toAddress: to } })).toBe(0);
    // The chain takes the next send to that address as usual.
    const again = await app.rest('POST', '/v1/sandbox/deposits', { headers: h, body: { address: to, amount: '7', assetNetworkId: c.assetNetworkId } });
    expect(again.status, again.text).toBe(201);
  });

  test('statements per send: 4 alone in 3 round trips (BEGIN with the locks, one insert checking the bound with nonces, audit entries and the job, COMMIT); a fixed number per group at n = 16', async () => {
    const c = await freshChain();
    const send = () => app.rest('POST', '/v1/sandbox/deposits', { headers: h, body: { address: address(), amount: '7', assetNetworkId: c.assetNetworkId } });
    await send(); // the asset-network's catalog read, once per process
    const one = await app.sqlStatements(() => send());
    expect(one.result.status).toBe(201);
    expect(one.statements).toHaveLength(4);
    expect([one.statements[0], one.statements.at(-1)]).toEqual(['BEGIN', 'COMMIT']);
    // The locks have no parameters (sent with BEGIN in one simple query); the insert writes the job.
    expect(one.statements[1]).toMatch(/pg_advisory_xact_lock/);
    expect(one.statements[1]).not.toMatch(/\$\d/);
    expect(one.statements[2]).toMatch(/"sync_job" AS \(\s*INSERT INTO pgboss\./);
    const before = { ...sendGroupStats(app.deps.db)! };
    const sixteen = await app.sqlStatements(() => Promise.all(Array.from({ length: 16 }, () => send())));
    expect(sixteen.result.map((r) => r.status)).toEqual(Array(16).fill(201));
    const groups = sendGroupStats(app.deps.db)!.groups - before.groups;
    // Four statements per group, whatever its size: 16 sends in fewer than 16 groups.
    expect(sixteen.statements).toHaveLength(4 * groups);
    expect(groups).toBeLessThan(16);
  });

  test('an address with a NUL byte or a quote: 400 at the door, and never cut short or unquoted in the locks written without parameters', async () => {
    const c = await freshChain();
    for (const bad of ['0x' + '0'.repeat(39) + '\u0000', "0x'); SELECT pg_sleep(5); --" + '0'.repeat(20)]) {
      const r = await app.rest('POST', '/v1/sandbox/deposits', { headers: h, body: { address: bad, amount: '7', assetNetworkId: c.assetNetworkId } });
      expect(r.status, r.text).toBe(400);
      expect(r.body.errors).toEqual([expect.objectContaining({ field: 'address' })]);
    }
    // Past the door (a caller of the chain itself): a quote is a quote, a NUL refused before anything is sent.
    const send = (toAddress: string) =>
      app.deps.db.$transaction((t) =>
        sendTransactions(t, { clock: app.clock, boss: app.deps.boss }, c.networkId, [
          { assetNetworkId: c.assetNetworkId, fromAddress: address(), toAddress, amount: 7n, replaceable: false, revert: false, senderOrganizationId: null },
        ]),
      );
    const quoted = "0x'quoted\\" + '0'.repeat(30);
    expect((await send(quoted))[0]).toMatchObject({ toAddress: quoted, status: 'PENDING' });
    await expect(send('0xab\u0000cd')).rejects.toThrow(/NUL byte/);
    expect(await app.deps.db.sandboxTransaction.count({ where: { networkId: c.networkId } })).toBe(1);
  });
});

describe('reorganizations', () => {
  test('orphaned transactions are re-included by default: mined again in a new block, confirmations restart', async () => {
    const c = await freshChain();
    const to = address();
    const a = await sandboxSend(app, h, { address: to, amount: 100n, assetNetworkId: c.assetNetworkId });
    await sandboxMine(app, h, c.networkId);
    const b = await sandboxSend(app, h, { address: to, amount: 20n, assetNetworkId: c.assetNetworkId });
    await sandboxMine(app, h, c.networkId, 2);
    const before = await tx(b.txHash);
    expect(before).toMatchObject({ status: 'MINED', blockHeight: 2, confirmations: 2 });

    expect(await sandboxReorg(app, h, c.networkId, 2)).toEqual({ height: 4 });
    const after = await tx(b.txHash);
    expect(after).toMatchObject({ status: 'MINED', blockHeight: 2, confirmations: 3 });
    expect(after.blockHash).not.toBe(before.blockHash);
    expect(await tx(a.txHash)).toMatchObject({ status: 'MINED', blockHeight: 1, confirmations: 4 });
    expect(await balance(c.assetNetworkId, to)).toBe(120n);
    expect(await app.deps.db.sandboxBlock.count({ where: { networkId: c.networkId, canonical: false } })).toBe(2);
  });

  test('without re-inclusion they stay ORPHANED (no balance, no confirmations) until mined again or dropped', async () => {
    const c = await freshChain();
    const to = address();
    const a = await sandboxSend(app, h, { address: to, amount: 7n, assetNetworkId: c.assetNetworkId });
    const b = await sandboxSend(app, h, { address: to, amount: 5n, assetNetworkId: c.assetNetworkId });
    await sandboxMine(app, h, c.networkId, 3);
    expect(await balance(c.assetNetworkId, to)).toBe(12n);

    expect(await sandboxReorg(app, h, c.networkId, 3, false)).toEqual({ height: 4 });
    expect(await tx(a.txHash)).toMatchObject({ status: 'ORPHANED', confirmations: 0 });
    expect(await balance(c.assetNetworkId, to)).toBe(0n);

    await sandboxDrop(app, h, b.txHash);
    expect((await tx(b.txHash)).status).toBe('DROPPED');
    await sandboxMine(app, h, c.networkId);
    expect(await tx(a.txHash)).toMatchObject({ status: 'MINED', blockHeight: 5, confirmations: 1 });
    expect((await tx(b.txHash)).status).toBe('DROPPED');
    expect(await balance(c.assetNetworkId, to)).toBe(7n);
  });

  test('depth beyond the height: 409; outside 1..100: 400; a non-sandbox or unknown network: 404', async () => {
    const c = await freshChain();
    await sandboxMine(app, h, c.networkId, 2);
    const deep = await app.rest('POST', `/v1/sandbox/networks/${c.networkId}/reorg`, { headers: h, body: { depth: 3 } });
    expect([deep.status, deep.body.code]).toEqual([409, 'INVALID_STATE']);
    for (const depth of [0, 101, 1.5])
      expect((await app.rest('POST', `/v1/sandbox/networks/${c.networkId}/reorg`, { headers: h, body: { depth } })).status).toBe(400);
    for (const blocks of [0, 101])
      expect((await app.rest('POST', `/v1/sandbox/networks/${c.networkId}/mine`, { headers: h, body: { blocks } })).status).toBe(400);
    const evm = await app.rest('POST', '/v1/platform/networks', {
      headers: c.operator.headers,
      body: { name: `Mainnet ${crypto.randomUUID()}`, kind: 'EVM', environmentType: 'PRODUCTION', blockTimeSeconds: 12, requiredConfirmations: 2 },
    });
    expect((await app.rest('POST', `/v1/sandbox/networks/${evm.body.id}/mine`, { headers: h, body: {} })).status).toBe(404);
    expect((await app.rest('POST', `/v1/sandbox/networks/${crypto.randomUUID()}/reorg`, { headers: h, body: { depth: 1 } })).status).toBe(404);
    expect((await sandboxMine(app, h, c.networkId)).height).toBe(3);
  });
});

describe('drop and replace', () => {
  test('drop: PENDING or ORPHANED only, else 409; unknown hash 404; malformed 400', async () => {
    const c = await freshChain();
    const p = await sandboxSend(app, h, { address: address(), amount: 1n, assetNetworkId: c.assetNetworkId });
    const m = await sandboxSend(app, h, { address: address(), amount: 1n, assetNetworkId: c.assetNetworkId });
    await sandboxMine(app, h, c.networkId);
    const minedDrop = await app.rest('POST', '/v1/sandbox/transactions/drop', { headers: h, body: { txHash: m.txHash } });
    expect([minedDrop.status, minedDrop.body.code]).toEqual([409, 'INVALID_STATE']);
    const p2 = await sandboxSend(app, h, { address: address(), amount: 1n, assetNetworkId: c.assetNetworkId });
    const d = await app.rest('POST', '/v1/sandbox/transactions/drop', { headers: h, body: { txHash: p2.txHash } });
    expect([d.status, d.body]).toEqual([200, { txHash: p2.txHash, status: 'DROPPED' }]);
    expect((await app.rest('POST', '/v1/sandbox/transactions/drop', { headers: h, body: { txHash: p2.txHash } })).status).toBe(409);
    await sandboxMine(app, h, c.networkId);
    expect((await tx(p2.txHash)).status).toBe('DROPPED');
    expect((await tx(p.txHash)).status).toBe('MINED');
    expect((await app.rest('POST', '/v1/sandbox/transactions/drop', { headers: h, body: { txHash: '0x' + 'ab'.repeat(32) } })).status).toBe(404);
    expect((await app.rest('POST', '/v1/sandbox/transactions/drop', { headers: h, body: { txHash: 'abc' } })).status).toBe(400);
  });

  test('replace: a PENDING replaceable transaction becomes REPLACED by a new PENDING one; anything else 409', async () => {
    const c = await freshChain();
    const to = address();
    const plain = await sandboxSend(app, h, { address: to, amount: 5n, assetNetworkId: c.assetNetworkId });
    const refused = await app.rest('POST', '/v1/sandbox/transactions/replace', { headers: h, body: { txHash: plain.txHash } });
    expect([refused.status, refused.body.code]).toEqual([409, 'INVALID_STATE']);

    const rbf = await sandboxSend(app, h, { address: to, amount: 100n, assetNetworkId: c.assetNetworkId, replaceable: true });
    const r = await app.rest('POST', '/v1/sandbox/transactions/replace', { headers: h, body: { txHash: rbf.txHash, amount: '90' } });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/), status: 'PENDING' });
    expect(r.body.txHash).not.toBe(rbf.txHash);
    expect(await tx(rbf.txHash)).toMatchObject({ status: 'REPLACED', replacedByTxHash: r.body.txHash });
    expect(await tx(r.body.txHash)).toMatchObject({ status: 'PENDING', amount: '90', toAddress: to });
    expect((await app.rest('POST', '/v1/sandbox/transactions/replace', { headers: h, body: { txHash: rbf.txHash } })).status).toBe(409);
    expect((await app.rest('POST', '/v1/sandbox/transactions/replace', { headers: h, body: { txHash: r.body.txHash, amount: '0' } })).status).toBe(400);

    // The replacement is replaceable again (same amount by default); mined, only it moves value.
    const again = await sandboxReplace(app, h, r.body.txHash);
    await sandboxMine(app, h, c.networkId);
    expect(await tx(again.txHash)).toMatchObject({ status: 'MINED', amount: '90' });
    expect((await tx(r.body.txHash)).status).toBe('REPLACED');
    expect(await balance(c.assetNetworkId, to)).toBe(95n);
    expect((await app.rest('POST', '/v1/sandbox/transactions/replace', { headers: h, body: { txHash: again.txHash } })).status).toBe(409);
  });

  test(
    'replacing a broadcast is checked as a broadcast: never more than the sender can spend nor than the transfer ' + 'it re-sends (409, nothing changes)',
    async () => {
      const { c, network, adapter, sender, from, to } = await adapterChain();
      await sandboxSend(app, h, { address: from, amount: 1_000_000n, assetNetworkId: c.assetNetworkId });
      await sandboxMine(app, h, c.networkId);
      const signed = keys.signTransfer(
        {
          networkId: c.networkId,
          assetNetworkId: c.assetNetworkId,
          fromAddress: from,
          fromPublicKey: sender.publicKey,
          toAddress: to,
          amount: '500000',
          nonce: '1',
        },
        sender.privateKey,
      );
      const { txHash } = await adapter.broadcast(network, signed, integ.organizationId);
      const count = await app.deps.db.sandboxTransaction.count({ where: { networkId: c.networkId } });
      const replace = (amount: string) => app.rest('POST', '/v1/sandbox/transactions/replace', { headers: h, body: { txHash, amount } });
      // 5,000,000 from an address that holds 1,000,000: refused, nothing written.
      const more = await replace('5000000');
      expect([more.status, more.body.code, more.body.detail]).toEqual([409, 'INVALID_STATE', expect.stringContaining('insufficient funds')]);
      const gql = await app.gql('mutation($h: String!) { sandboxReplaceTransaction(input: { txHash: $h, amount: "5000000" }) { txHash } }', { h: txHash }, h);
      expect(gql.errors?.[0]?.extensions?.code).toBe('INVALID_STATE');
      // Within the balance but more than the transfer it re-sends: refused too.
      const larger = await replace('900000');
      expect([larger.status, larger.body.detail]).toEqual([409, expect.stringContaining('at most 500000')]);
      expect(await tx(txHash)).toMatchObject({ status: 'PENDING', amount: '500000', replacedByTxHash: null });
      expect(await app.deps.db.sandboxTransaction.count({ where: { networkId: c.networkId } })).toBe(count);
      // A smaller replacement goes through; mined, only it moves value.
      const smaller = await replace('400000');
      expect(smaller.status).toBe(200);
      await sandboxMine(app, h, c.networkId);
      expect(await tx(smaller.body.txHash)).toMatchObject({ status: 'MINED', amount: '400000' });
      expect([await balance(c.assetNetworkId, from), await balance(c.assetNetworkId, to)]).toEqual([600_000n, 400_000n]);
    },
  );

  test('mining a transfer its sender cannot pay reverts it: no value is created', async () => {
    const { c, network, adapter, sender, from, to } = await adapterChain();
    const funding = await sandboxSend(app, h, { address: from, amount: 600n, assetNetworkId: c.assetNetworkId });
    await sandboxMine(app, h, c.networkId);
    const signed = keys.signTransfer(
      {
        networkId: c.networkId,
        assetNetworkId: c.assetNetworkId,
        fromAddress: from,
        fromPublicKey: sender.publicKey,
        toAddress: to,
        amount: '600',
        nonce: '1',
      },
      sender.privateKey,
    );
    const { txHash } = await adapter.broadcast(network, signed, integ.organizationId);
    // The funding is reorganized away (not re-included); the replacement blocks take the transfer it paid for.
    await sandboxReorg(app, h, c.networkId, 1, false);
    expect(await tx(funding.txHash)).toMatchObject({ status: 'ORPHANED' });
    expect(await tx(txHash)).toMatchObject({ status: 'REVERTED', confirmations: 0 });
    expect([await balance(c.assetNetworkId, from), await balance(c.assetNetworkId, to)]).toEqual([0n, 0n]);
    await sandboxMine(app, h, c.networkId);
    expect([await balance(c.assetNetworkId, from), await balance(c.assetNetworkId, to)]).toEqual([600n, 0n]);
  });
});

describe('the sandbox API itself', () => {
  test('deposits: validation (amount, address, asset-network) answers 400 and sends nothing', async () => {
    const c = await freshChain();
    const before = await app.deps.db.sandboxTransaction.count();
    const post = (body: Record<string, unknown>) =>
      app.rest('POST', '/v1/sandbox/deposits', { headers: h, body: { address: address(), amount: '1', assetNetworkId: c.assetNetworkId, ...body } });
    for (const [body, field] of [
      [{ amount: '0' }, 'amount'],
      [{ amount: '1.5' }, 'amount'],
      [{ amount: '-3' }, 'amount'],
      [{ address: '0x123' }, 'address'],
      [{ address: 'bc1qxyz' }, 'address'],
      [{ assetNetworkId: crypto.randomUUID() }, 'assetNetworkId'],
    ] as const) {
      const r = await post(body);
      expect([r.status, r.body.errors?.[0]?.field], JSON.stringify(body)).toEqual([400, field]);
    }
    expect((await post({ amount: 1 })).status).toBe(400);
    expect(await app.deps.db.sandboxTransaction.count()).toBe(before);
    // An asset-network of a non-sandbox network: 400.
    const evm = await app.rest('POST', '/v1/platform/networks', {
      headers: c.operator.headers,
      body: { name: `Mainnet ${crypto.randomUUID()}`, kind: 'EVM', environmentType: 'PRODUCTION', blockTimeSeconds: 12, requiredConfirmations: 2 },
    });
    const an = await app.rest('POST', '/v1/platform/asset-networks', {
      headers: c.operator.headers,
      body: { assetId: c.assetId, networkId: evm.body.id, decimals: 6 },
    });
    const r = await post({ assetNetworkId: an.body.id });
    expect([r.status, r.body.errors?.[0]?.field]).toEqual([400, 'assetNetworkId']);
  });

  test('production: a production API key, or a member naming a production environment, gets 404 on every sandbox route', async () => {
    const c = await freshChain();
    const m = await signUpMember(app);
    const live = await createApiKey(app, m, 'PRODUCTION');
    const sandboxKey = await createApiKey(app, m, 'SANDBOX');
    const calls: [string, string, Record<string, unknown>][] = [
      ['POST', '/v1/sandbox/deposits', { address: address(), amount: '1', assetNetworkId: c.assetNetworkId }],
      ['POST', `/v1/sandbox/networks/${c.networkId}/mine`, { blocks: 1 }],
      ['POST', `/v1/sandbox/networks/${c.networkId}/reorg`, { depth: 1 }],
      ['POST', '/v1/sandbox/transactions/drop', { txHash: '0x' + '12'.repeat(32) }],
      ['POST', '/v1/sandbox/transactions/replace', { txHash: '0x' + '12'.repeat(32) }],
      ['POST', '/v1/sandbox/clock/advance', { seconds: 60 }],
    ];
    for (const [method, path, body] of calls) {
      const k = await app.rest(method, path, { headers: live.headers, body });
      expect([k.status, k.body.code], `${path} by a production key`).toEqual([404, 'NOT_FOUND']);
      const named = await app.rest(method, path, { headers: m.headers, body: { ...body, environmentId: live.environmentId } });
      expect(named.status, `${path} by a member naming production`).toBe(404);
    }
    expect(await app.deps.db.sandboxTransaction.count({ where: { networkId: c.networkId } })).toBe(0);
    // A member naming the sandbox environment, or none, acts on the sandbox.
    const ok = await app.rest('POST', `/v1/sandbox/networks/${c.networkId}/mine`, { headers: m.headers, body: { environmentId: sandboxKey.environmentId } });
    expect([ok.status, ok.body]).toEqual([200, { height: 1 }]);
    expect((await app.rest('POST', `/v1/sandbox/networks/${c.networkId}/mine`, { headers: m.headers, body: {} })).body).toEqual({ height: 2 });
    // Another organization's environment: 404 as well.
    expect(
      (await app.rest('POST', `/v1/sandbox/networks/${c.networkId}/mine`, { headers: m.headers, body: { environmentId: integ.environmentId } })).status,
    ).toBe(404);
    const gql = await app.gql('query($h: String!) { sandboxTransaction(txHash: $h) { status } }', { h: '0x' + '12'.repeat(32) }, live.headers);
    expect(gql.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  });

  test('Idempotency-Key: the same request answers the first answer and changes nothing; another request 409', async () => {
    const c = await freshChain();
    const to = address();
    const key = { ...h, 'idempotency-key': `dep-${crypto.randomUUID()}` };
    const body = { address: to, amount: '42', assetNetworkId: c.assetNetworkId };
    const first = await app.rest('POST', '/v1/sandbox/deposits', { headers: key, body });
    const second = await app.rest('POST', '/v1/sandbox/deposits', { headers: key, body });
    expect([second.status, second.body]).toEqual([201, first.body]);
    expect(await app.deps.db.sandboxTransaction.count({ where: { toAddress: to } })).toBe(1);
    const other = await app.rest('POST', '/v1/sandbox/deposits', { headers: key, body: { ...body, amount: '43' } });
    expect([other.status, other.body.code]).toEqual([409, 'IDEMPOTENCY_KEY_REUSED']);

    const mineKey = { ...h, 'idempotency-key': `mine-${crypto.randomUUID()}` };
    const m1 = await app.rest('POST', `/v1/sandbox/networks/${c.networkId}/mine`, { headers: mineKey, body: { blocks: 2 } });
    const m2 = await app.rest('POST', `/v1/sandbox/networks/${c.networkId}/mine`, { headers: mineKey, body: { blocks: 2 } });
    expect([m1.body, m2.body]).toEqual([{ height: 2 }, { height: 2 }]);

    const p = await sandboxSend(app, h, { address: to, amount: 1n, assetNetworkId: c.assetNetworkId });
    const dropKey = { ...h, 'idempotency-key': `drop-${crypto.randomUUID()}` };
    const d1 = await app.rest('POST', '/v1/sandbox/transactions/drop', { headers: dropKey, body: { txHash: p.txHash } });
    const d2 = await app.rest('POST', '/v1/sandbox/transactions/drop', { headers: dropKey, body: { txHash: p.txHash } });
    expect([d1.status, d2.status, d2.body]).toEqual([200, 200, d1.body]);
    // Without the key, dropping again is an illegal prior state.
    expect((await app.rest('POST', '/v1/sandbox/transactions/drop', { headers: h, body: { txHash: p.txHash } })).status).toBe(409);

    const reorgKey = { ...h, 'idempotency-key': `reorg-${crypto.randomUUID()}` };
    const r1 = await app.rest('POST', `/v1/sandbox/networks/${c.networkId}/reorg`, { headers: reorgKey, body: { depth: 1 } });
    const r2 = await app.rest('POST', `/v1/sandbox/networks/${c.networkId}/reorg`, { headers: reorgKey, body: { depth: 1 } });
    expect([r1.body, r2.body]).toEqual([{ height: 3 }, { height: 3 }]);
    expect(await app.deps.db.sandboxBlock.count({ where: { networkId: c.networkId, canonical: false } })).toBe(1);

    const clockKey = { ...h, 'idempotency-key': `clock-${crypto.randomUUID()}` };
    const c1 = await app.rest('POST', '/v1/sandbox/clock/advance', { headers: clockKey, body: { seconds: 30 } });
    const c2 = await app.rest('POST', '/v1/sandbox/clock/advance', { headers: clockKey, body: { seconds: 30 } });
    expect([c1.status, c2.body]).toEqual([200, c1.body]);
    const rbf = await sandboxSend(app, h, { address: to, amount: 9n, assetNetworkId: c.assetNetworkId, replaceable: true });
    const replaceKey = { ...h, 'idempotency-key': `rbf-${crypto.randomUUID()}` };
    const x1 = await app.rest('POST', '/v1/sandbox/transactions/replace', { headers: replaceKey, body: { txHash: rbf.txHash } });
    const x2 = await app.rest('POST', '/v1/sandbox/transactions/replace', { headers: replaceKey, body: { txHash: rbf.txHash } });
    expect([x1.status, x2.status, x2.body]).toEqual([200, 200, x1.body]);
  });

  test('every change queues a chain.sync job {networkId} in its transaction; a refused change queues none', async () => {
    const c = await freshChain();
    const counts: number[] = [await syncJobs(c.networkId)];
    const step = async (f: () => Promise<unknown>) => {
      await f();
      counts.push(await syncJobs(c.networkId));
    };
    const p = await sandboxSend(app, h, { address: address(), amount: 3n, assetNetworkId: c.assetNetworkId, replaceable: true });
    counts.push(await syncJobs(c.networkId));
    await step(() => sandboxMine(app, h, c.networkId, 3));
    await step(() => sandboxReorg(app, h, c.networkId, 1));
    const q = await sandboxSend(app, h, { address: address(), amount: 3n, assetNetworkId: c.assetNetworkId, replaceable: true });
    counts.push(await syncJobs(c.networkId));
    let replacement = '';
    await step(async () => (replacement = (await sandboxReplace(app, h, q.txHash)).txHash));
    await step(() => sandboxDrop(app, h, replacement));
    await step(() => app.rest('POST', '/v1/sandbox/transactions/drop', { headers: h, body: { txHash: p.txHash } })); // MINED: 409
    expect(counts).toEqual([0, 1, 2, 3, 4, 5, 6, 6]);
    // A send's job also names its recipients (issue 22: a sync of sends alone reconciles only them); the others name the network alone.
    const jobs = await app.deps.boss!.findJobs(CHAIN_SYNC_QUEUE, { data: { networkId: c.networkId } });
    expect(jobs).toHaveLength(6);
    for (const job of jobs) {
      const { addresses, ...rest } = job.data as { networkId: string; addresses?: string[] };
      expect(rest).toEqual({ networkId: c.networkId });
      if (addresses !== undefined) expect(addresses).toEqual([expect.stringMatching(/^0x[0-9a-f]{40}$/)]);
    }
    expect(jobs.filter((j) => (j.data as { addresses?: string[] }).addresses === undefined).length).toBeGreaterThan(0);
  });

  test('the sandbox clock: advanced per organization, read by sandboxNow', async () => {
    const other = await setupIntegrator(app, catalog);
    const start = app.clock.now().getTime();
    const a = await sandboxAdvanceClock(app, other.apiKeyHeaders, 3600);
    expect(a.now).toBe(new Date(start + 3600_000).toISOString());
    const b = await sandboxAdvanceClock(app, other.apiKeyHeaders, 60);
    expect(b.now).toBe(new Date(start + 3660_000).toISOString());
    expect((await sandboxNow(app.deps.db, app.clock, other.organizationId)).toISOString()).toBe(b.now);
    expect((await sandboxNow(app.deps.db, app.clock, integ.organizationId)).getTime()).toBeLessThan(start + 3600_000);
    for (const seconds of [0, -5, 1.5, 366 * 86_400 + 1])
      expect((await app.rest('POST', '/v1/sandbox/clock/advance', { headers: other.apiKeyHeaders, body: { seconds } })).status).toBe(400);
    const entries = await app.deps.db.auditLogEntry.findMany({ where: { organizationId: other.organizationId, action: 'sandbox.clock_advanced' } });
    expect(entries).toHaveLength(2);
  });

  test('GraphQL mutations match REST; the viewer-like principals are refused', async () => {
    const c = await freshChain();
    const to = address();
    const s = await app.gql<{ sandboxSendDeposit: { txHash: string; status: string; amount: string; networkId: string } }>(
      'mutation($i: SandboxDepositInput!) { sandboxSendDeposit(input: $i) { txHash status amount networkId } }',
      { i: { address: to, amount: '77', assetNetworkId: c.assetNetworkId } },
      h,
    );
    expect(s.data!.sandboxSendDeposit).toMatchObject({ status: 'PENDING', amount: '77', networkId: c.networkId });
    const m = await app.gql<{ sandboxMineBlocks: { height: number } }>(
      'mutation($n: ID!) { sandboxMineBlocks(networkId: $n, input: { blocks: 2 }) { height } }',
      { n: c.networkId },
      h,
    );
    expect(m.data!.sandboxMineBlocks.height).toBe(2);
    const r = await app.gql<{ sandboxReorg: { height: number } }>(
      'mutation($n: ID!) { sandboxReorg(networkId: $n, input: { depth: 2, includeOrphanedTransactions: false }) { height } }',
      { n: c.networkId },
      h,
    );
    expect(r.data!.sandboxReorg.height).toBe(3);
    const d = await app.gql<{ sandboxDropTransaction: { status: string } }>(
      'mutation($h: String!) { sandboxDropTransaction(input: { txHash: $h }) { status } }',
      { h: s.data!.sandboxSendDeposit.txHash },
      h,
    );
    expect(d.data!.sandboxDropTransaction.status).toBe('DROPPED');
    const denied = await app.gql('mutation($n: ID!) { sandboxMineBlocks(networkId: $n) { height } }', { n: c.networkId }, c.operator.headers);
    expect(denied.errors?.[0]?.extensions?.code).toBe('PRINCIPAL_NOT_ALLOWED');
    const audit = await app.deps.db.auditLogEntry.findMany({ where: { organizationId: integ.organizationId, entityId: c.networkId }, orderBy: { id: 'asc' } });
    expect(audit.map((e) => e.action)).toEqual(['sandbox.blocks_mined', 'sandbox.reorganized']);
  });
});

describe('the network adapter over the sandbox chain', () => {
  test('blockHeight, transfersTo and transaction report what the chain holds', async () => {
    const c = await freshChain();
    const network = networkRef(await app.deps.db.network.findUniqueOrThrow({ where: { id: c.networkId } }));
    const adapter = adapterFor('SANDBOX', app.deps.db);
    const to = address();
    const a = await sandboxSend(app, h, { address: to, amount: 11n, assetNetworkId: c.assetNetworkId });
    await sandboxMine(app, h, c.networkId, 2);
    const b = await sandboxSend(app, h, { address: to, amount: 12n, assetNetworkId: c.assetNetworkId });
    expect(await adapter.blockHeight(network)).toBe(2);
    const seen = await adapter.transfersTo(network, [to, address()]);
    expect(seen.map((t) => [t.txHash, t.status, t.amount, t.confirmations])).toEqual([
      [a.txHash, 'MINED', 11n, 2],
      [b.txHash, 'PENDING', 12n, 0],
    ]);
    expect(await adapter.transaction(network, b.txHash)).toMatchObject({ toAddress: to, assetNetworkId: c.assetNetworkId, blockHeight: null });
    expect(await adapter.transaction(network, '0x' + '00'.repeat(32))).toBeNull();
    expect(await adapter.transfersTo(network, [])).toEqual([]);
    expect(adapter.validateAddress(to)).toBe(true);
    expect(adapter.validateAddress('0xABC')).toBe(false);
    expect(() => adapterFor('TRON')).toThrow(/no network adapter/);
    await expect(adapterFor('SANDBOX').blockHeight(network)).rejects.toThrow(/database handle/);
  });

  test(
    'broadcast: a signed transfer from a funded address goes PENDING, is mined and moves balances; a bad ' +
      'signature, another network or an overspend writes nothing',
    async () => {
      const { c, network, adapter, sender, from, to } = await adapterChain();
      await sandboxSend(app, h, { address: from, amount: 100n, assetNetworkId: c.assetNetworkId });
      await sandboxMine(app, h, c.networkId, 1);
      const transfer = (amount: string, nonce: string, networkId = c.networkId): keys.TransferPayload => ({
        networkId,
        assetNetworkId: c.assetNetworkId,
        fromAddress: from,
        fromPublicKey: sender.publicKey,
        toAddress: to,
        amount,
        nonce,
      });
      const before = await app.deps.db.sandboxTransaction.count({ where: { networkId: c.networkId } });
      const syncBefore = await syncJobs(c.networkId);
      // Tampered: the amount changed after signing.
      const signed = JSON.parse(keys.signTransfer(transfer('60', '1'), sender.privateKey));
      signed.payload.amount = '61';
      await expect(adapter.broadcast(network, JSON.stringify(signed), integ.organizationId)).rejects.toThrow(/does not verify/);
      // Signed by another key than the one that owns fromAddress.
      await expect(adapter.broadcast(network, keys.signTransfer(transfer('60', '1'), keys.generateKeyPair().privateKey), integ.organizationId)).rejects.toThrow(
        /does not verify/,
      );
      // The same signature made malleable (s -> n - s, the high half): refused like any other that does not
      // verify (the sandbox verifies with OpenSSL, which accepts both halves: the low-s rule is checked apart).
      const good = JSON.parse(keys.signTransfer(transfer('60', '1'), sender.privateKey));
      const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
      const highS = (N - BigInt('0x' + good.signature.slice(64))).toString(16).padStart(64, '0');
      await expect(
        adapter.broadcast(network, JSON.stringify({ ...good, signature: good.signature.slice(0, 64) + highS }), integ.organizationId),
      ).rejects.toThrow(/does not verify/);
      // r or s out of range, a key that is not on the curve, a sender whose key does not own the address.
      for (const signature of ['0'.repeat(128), 'f'.repeat(128), good.signature.slice(0, 64) + '0'.repeat(64)])
        await expect(adapter.broadcast(network, JSON.stringify({ ...good, signature }), integ.organizationId)).rejects.toThrow(/does not verify/);
      await expect(
        adapter.broadcast(network, JSON.stringify({ ...good, payload: { ...good.payload, fromPublicKey: '02' + 'f'.repeat(64) } }), integ.organizationId),
      ).rejects.toThrow(/does not own/);
      await expect(
        adapter.broadcast(
          network,
          JSON.stringify({ ...good, payload: { ...good.payload, fromPublicKey: keys.generateKeyPair().publicKey } }),
          integ.organizationId,
        ),
      ).rejects.toThrow(/does not own/);
      await expect(
        adapter.broadcast(network, keys.signTransfer(transfer('60', '1', catalog.networkId), sender.privateKey), integ.organizationId),
      ).rejects.toThrow(/another network/);
      await expect(adapter.broadcast(network, 'not json', integ.organizationId)).rejects.toThrow(/JSON/);
      expect(await app.deps.db.sandboxTransaction.count({ where: { networkId: c.networkId } })).toBe(before);
      const { txHash } = await adapter.broadcast(network, keys.signTransfer(transfer('60', '1'), sender.privateKey), integ.organizationId);
      expect(await adapter.transaction(network, txHash)).toMatchObject({ status: 'PENDING', fromAddress: from, toAddress: to, amount: 60n });
      // 100 mined, 60 pending: 41 more is an overspend.
      await expect(adapter.broadcast(network, keys.signTransfer(transfer('41', '2'), sender.privateKey), integ.organizationId)).rejects.toThrow(
        /insufficient funds/,
      );
      expect((await syncJobs(c.networkId)) - syncBefore).toBe(1);
      await sandboxMine(app, h, c.networkId, 1);
      expect(await adapter.transaction(network, txHash)).toMatchObject({ status: 'MINED', confirmations: 1 });
      expect(await balance(c.assetNetworkId, from)).toBe(40n);
      expect(await balance(c.assetNetworkId, to)).toBe(60n);
    },
  );
});

describe('the adapter balance read', () => {
  test('balances: mined from canonical blocks, spendable less PENDING and ORPHANED outgoing transfers; every address answered', async () => {
    const { c, network, adapter, sender, from, to } = await adapterChain();
    const unknown = address();
    const read = async (addresses: string[], assetNetworkId = c.assetNetworkId) =>
      Object.fromEntries([...(await adapter.balances(network, assetNetworkId, addresses))].map(([a, b]) => [a, [b.mined, b.spendable]]));
    expect(await adapter.balances(network, c.assetNetworkId, [])).toEqual(new Map());

    await sandboxSend(app, h, { address: from, amount: 100n, assetNetworkId: c.assetNetworkId });
    // Not mined yet: nothing to spend; an incoming PENDING transfer counts for neither.
    expect(await read([from, to, unknown])).toEqual({ [from]: [0n, 0n], [to]: [0n, 0n], [unknown]: [0n, 0n] });
    await sandboxMine(app, h, c.networkId, 1);
    const signed = keys.signTransfer(
      { networkId: c.networkId, assetNetworkId: c.assetNetworkId, fromAddress: from, fromPublicKey: sender.publicKey, toAddress: to, amount: '30', nonce: '1' },
      sender.privateKey,
    );
    const { txHash } = await adapter.broadcast(network, signed, integ.organizationId);
    // PENDING outgoing: mined unchanged, spendable less it (what broadcast accepts); duplicates answered once.
    expect(await read([from, to, unknown, from])).toEqual({ [from]: [100n, 70n], [to]: [0n, 0n], [unknown]: [0n, 0n] });
    // Another asset-network of the addresses: nothing.
    expect(await read([from], catalog.assetNetworkId)).toEqual({ [from]: [0n, 0n] });

    await sandboxMine(app, h, c.networkId, 1);
    expect(await read([from, to])).toEqual({ [from]: [70n, 70n], [to]: [30n, 30n] });
    // Reorganized away without re-inclusion: ORPHANED, back in the mined balance, still not spendable.
    await sandboxReorg(app, h, c.networkId, 1, false);
    expect(await adapter.transaction(network, txHash)).toMatchObject({ status: 'ORPHANED' });
    expect(await read([from, to])).toEqual({ [from]: [100n, 70n], [to]: [0n, 0n] });
    await sandboxDrop(app, h, txHash);
    expect(await read([from, to])).toEqual({ [from]: [100n, 100n], [to]: [0n, 0n] });
    await expect(adapterFor('SANDBOX').balances(network, c.assetNetworkId, [from])).rejects.toThrow(/database handle/);
  });
});

describe('block production', () => {
  test('the job handler mines one block per SANDBOX network per interval, by the app clock, each with its chain.sync', async () => {
    const c = await freshChain();
    const deps = { db: app.deps.db, clock: app.clock, log: app.deps.log, boss: app.deps.boss, intervalMs: 5000 };
    const syncBefore = await syncJobs(c.networkId);
    const first = await produceSandboxBlocks(deps);
    expect(first).toContainEqual({ networkId: c.networkId, height: 1 });
    // Every SANDBOX network, and only those.
    const sandboxNetworks = await app.deps.db.network.count({ where: { kind: 'SANDBOX' } });
    expect(first).toHaveLength(sandboxNetworks);
    expect(await produceSandboxBlocks(deps)).toEqual([]);
    app.clock.advance(5000);
    const { txHash } = await sandboxSend(app, h, { address: address(), amount: 1n, assetNetworkId: c.assetNetworkId });
    expect(await produceSandboxBlocks(deps)).toContainEqual({ networkId: c.networkId, height: 2 });
    expect(await tx(txHash)).toMatchObject({ status: 'MINED', blockHeight: 2 });
    // Two produced blocks and the send: three chain.sync jobs.
    expect((await syncJobs(c.networkId)) - syncBefore).toBe(3);
    const evm = await app.deps.db.network.findFirst({ where: { kind: { not: 'SANDBOX' } } });
    if (evm) expect(await app.deps.db.sandboxBlock.count({ where: { networkId: evm.id } })).toBe(0);
  });
});

describe('batch sends (POST /v1/sandbox/deposits/batch, issue 22)', () => {
  const batch = (body: Record<string, unknown>, headers = h) => app.rest('POST', '/v1/sandbox/deposits/batch', { headers, body });

  test('each item its own PENDING transaction, nonces consecutive in list order, audited each; mined like sends alone', async () => {
    const c = await freshChain();
    const targets = [address(), address(), address()];
    const items = Array.from({ length: 5 }, (_x, i) => ({ address: targets[i % 3]!, amount: String(1_000 + i), assetNetworkId: c.assetNetworkId }));
    const r = await batch({ deposits: items });
    expect(r.status, r.text).toBe(201);
    expect(r.body.transactions).toHaveLength(5);
    const from = payerAddress(integ.organizationId);
    const hashOf = (i: number, nonce: number) =>
      transactionHash(c.networkId, nonce, {
        fromAddress: from,
        toAddress: items[i]!.address,
        assetNetworkId: c.assetNetworkId,
        amount: BigInt(items[i]!.amount),
        replaceable: false,
        revert: false,
      });
    // A fresh network: nonces 0..4 in the order of the items.
    expect(r.body.transactions).toEqual(items.map((_x, i) => ({ txHash: hashOf(i, i), status: 'PENDING' })));
    const audits = await app.deps.db.auditLogEntry.count({
      where: {
        action: 'sandbox.transaction_sent',
        entityId: { in: (await app.deps.db.sandboxTransaction.findMany({ where: { networkId: c.networkId } })).map((t) => t.id) },
      },
    });
    expect(audits).toBe(5);
    // One chain.sync job naming the recipients.
    const jobs = await app.deps.db.$queryRaw<{ data: { networkId: string; addresses?: string[] } }[]>`
      SELECT data FROM pgboss.job WHERE name = ${CHAIN_SYNC_QUEUE} AND data->>'networkId' = ${c.networkId}`;
    expect(jobs.map((j) => [...(j.data.addresses ?? [])].sort())).toEqual([[...targets].sort()]);
    await sandboxMine(app, h, c.networkId, 1);
    for (const [k, to] of targets.entries())
      expect(await balance(c.assetNetworkId, to)).toBe(items.filter((_x, i) => i % 3 === k).reduce((a, x) => a + BigInt(x.amount), 0n));
  });

  test('validation per item: every invalid field answered at once (400, deposits.<i>.<field>), nothing sent; 1 to 100 items', async () => {
    const c = await freshChain();
    const before = await app.deps.db.sandboxTransaction.count();
    const ok = () => ({ address: address(), amount: '1', assetNetworkId: c.assetNetworkId });
    const fields = (r: { body: { errors?: { field: string }[] } }) => (r.body.errors ?? []).map((e) => e.field).sort();
    // The input's own rules (amounts), each item's field named.
    const r1 = await batch({ deposits: [ok(), { ...ok(), amount: '0' }, ok(), { ...ok(), amount: '1.5' }] });
    expect([r1.status, fields(r1)]).toEqual([400, ['deposits.1.amount', 'deposits.3.amount']]);
    // The catalog and the address format, each item's field named.
    const r2 = await batch({ deposits: [{ ...ok(), address: '0x123' }, ok(), { ...ok(), assetNetworkId: crypto.randomUUID() }] });
    expect([r2.status, fields(r2)]).toEqual([400, ['deposits.0.address', 'deposits.2.assetNetworkId']]);
    const r3 = await batch({ deposits: [] });
    expect([r3.status, fields(r3)]).toEqual([400, ['deposits']]);
    const r4 = await batch({ deposits: Array.from({ length: 101 }, ok) });
    expect([r4.status, fields(r4)]).toEqual([400, ['deposits']]);
    const r5 = await batch({ deposits: 'nope' });
    expect(r5.status).toBe(400);
    expect(await app.deps.db.sandboxTransaction.count()).toBe(before);
  });

  test('an item the chain refuses (its recipient beyond 2^256 - 1) answers 409 naming it, and nothing of the batch is sent', async () => {
    const c = await freshChain();
    const full = address();
    await sandboxSend(app, h, { address: full, amount: MAX_AMOUNT, assetNetworkId: c.assetNetworkId });
    const before = await app.deps.db.sandboxTransaction.count({ where: { networkId: c.networkId } });
    const other = address();
    const r = await batch({
      deposits: [
        { address: other, amount: '5', assetNetworkId: c.assetNetworkId },
        { address: full, amount: '1', assetNetworkId: c.assetNetworkId },
      ],
    });
    expect([r.status, r.body.code]).toEqual([409, 'INVALID_STATE']);
    expect(r.body.detail).toMatch(/^deposits\.1: /);
    expect(await app.deps.db.sandboxTransaction.count({ where: { networkId: c.networkId } })).toBe(before);
    expect(await app.deps.db.sandboxTransaction.count({ where: { toAddress: other } })).toBe(0);
  });

  test('GraphQL matches REST; Idempotency-Key: the same batch answers the first answer and sends nothing more; another batch 409', async () => {
    const c = await freshChain();
    const to = address();
    const g = await app.gql<{ sandboxSendDeposits: { transactions: { txHash: string; status: string; amount: string; toAddress: string }[] } }>(
      'mutation($i: SandboxDepositsInput!) { sandboxSendDeposits(input: $i) { transactions { txHash status amount toAddress } } }',
      {
        i: {
          deposits: [
            { address: to, amount: '7', assetNetworkId: c.assetNetworkId },
            { address: to, amount: '8', assetNetworkId: c.assetNetworkId },
          ],
        },
      },
      h,
    );
    expect(g.errors, JSON.stringify(g.errors)).toBeUndefined();
    expect(g.data!.sandboxSendDeposits.transactions.map((t) => [t.status, t.amount, t.toAddress])).toEqual([
      ['PENDING', '7', to],
      ['PENDING', '8', to],
    ]);
    const bad = await app.gql(
      'mutation($i: SandboxDepositsInput!) { sandboxSendDeposits(input: $i) { transactions { txHash } } }',
      {
        i: { deposits: [{ address: to, amount: '-1', assetNetworkId: c.assetNetworkId }] },
      },
      h,
    );
    expect(bad.errors?.[0]?.extensions).toMatchObject({ code: 'VALIDATION_FAILED', fieldErrors: [{ field: 'deposits.0.amount' }] });

    const key = { ...h, 'idempotency-key': `batch-${crypto.randomUUID()}` };
    const body = { deposits: [{ address: to, amount: '9', assetNetworkId: c.assetNetworkId }] };
    const first = await batch(body, key);
    const second = await batch(body, key);
    expect(first.status).toBe(201);
    expect([second.status, second.body]).toEqual([201, first.body]);
    expect(await app.deps.db.sandboxTransaction.count({ where: { toAddress: to } })).toBe(3);
    const other = await batch({ deposits: [{ address: to, amount: '10', assetNetworkId: c.assetNetworkId }] }, key);
    expect([other.status, other.body.code]).toEqual([409, 'IDEMPOTENCY_KEY_REUSED']);
  });
});
