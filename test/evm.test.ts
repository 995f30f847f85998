import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { erc20Abi, getAddress, isAddress, keccak256, parseEther, parseTransaction, type Hex } from 'viem';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { addressOf, bytesToHex, derivePrivateKey, derivePublicKey, generateKeyPair, hexToBytes } from '../src/chains/secp256k1';
import { createApiKey, createTestApp, signUpMember, type TestApp } from './harness';
import type { EvmNode } from './evm-node';
import { startEvmService, type EvmIntegrator, type EvmService } from './evm-service';
import { drainMoneyWork } from './fixtures/settlements/testing';
import { ConfigError, evmNetworksOf, loadConfig } from '../src/config';
import { configureEvmNetworks } from '../src/chains/evm/config';
import { startEvmWatchTicker } from '../src/chains/evm/watcher';
import { EVM_WATCH_QUEUE } from '../src/kernel/queues';
import { pollUntil } from './process-harness';
import { bumpStuckTransactions } from '../src/treasury/fee-bumps';
import { adapterFor } from '../src/chains/adapter';

/**
 * Issue 18: EVM networks through the adapter on viem, against a real EVM node (anvil, started here
 * on 127.0.0.1, spoken to over JSON-RPC on HTTP) and an ERC-20 compiled from OpenZeppelin's ERC20
 * with solc. Everything integrators do goes through the public REST API of a PRODUCTION
 * environment; the chain is driven as payers and miners would (transfers, blocks, reorganizations).
 * The watcher and chain.sync run as their jobs would (watchNetwork, drainChainSync).
 */
let evm: EvmService;
let node: EvmNode;
let app: TestApp; // the service configured with EVM_NETWORKS for the network
let token: Hex;
let networkId: string;
let tokenAn: string;
let nativeAn: string;
let operator: Record<string, string>;
let follow: EvmService['follow'];
let integrator: EvmService['integrator'];
let payToken: EvmService['payToken'];
let payNative: EvmService['payNative'];
const REQUIRED = 3;

const id = (r: { headers: Headers }) => r.headers.get('location')!.split('/').pop()!;

beforeAll(async () => {
  evm = await startEvmService({ requiredConfirmations: REQUIRED });
  ({ node, app, token, networkId, tokenAn, nativeAn, operator, follow, integrator, payToken, payNative } = evm);
}, 120_000);

afterAll(() => evm?.close());

type Integrator = EvmIntegrator;

async function intent(f: Integrator, assetNetworkId: string, amount: bigint) {
  const r = await app.rest('POST', `/v1/organizations/${f.organizationId}/payment-intents`, {
    headers: f.key.headers,
    body: { assetNetworkId, amount: amount.toString(), beneficiaryAccountId: f.accountId, walletId: f.walletId, expiresInSeconds: 3600 },
  });
  expect(r.status, r.text).toBe(201);
  return get(f, `/v1/payment-intents/${id(r)}`);
}
const get = async (f: Integrator, path: string) => {
  const r = await app.rest('GET', path, { headers: f.key.headers });
  expect(r.status, r.text).toBe(200);
  return r.body;
};

// The scenarios shared with the sandbox (full payment, under- and overpayment, below the minimum, reorganizations before and
// after confirmation) run on both adapters in test/chain-suite.test.ts; here, what only a real EVM chain has.
describe('payment intents paid on a real EVM chain (production environment)', () => {
  test('an ERC-20 payment: seen in a block, confirmed at the network depth, credited; the intent SUCCEEDED', async () => {
    const f = await integrator();
    const pi = await intent(f, tokenAn, 1_500_000n);
    expect(isAddress(pi.address, { strict: true }) && getAddress(pi.address) === pi.address).toBe(true); // EIP-55
    const hash = await payToken(pi.address, 1_500_000n);
    await follow();
    expect((await get(f, `/v1/payment-intents/${pi.id}`)).status).toBe('AWAITING_PAYMENT'); // in the pool: nothing mined yet
    await node.mine(1);
    await follow();
    let got = await get(f, `/v1/payment-intents/${pi.id}`);
    expect(got.status).toBe('PROCESSING');
    const dep = await get(f, `/v1/deposits/${got.depositIds[0]}`);
    expect(dep).toMatchObject({ txHash: hash, amount: '1500000', status: 'CONFIRMING', confirmations: 1, assetNetworkId: tokenAn });
    await node.mine(REQUIRED - 1);
    await follow();
    got = await get(f, `/v1/payment-intents/${pi.id}`);
    expect(got).toMatchObject({ status: 'SUCCEEDED', confirmedAmount: '1500000' });
    expect(await get(f, `/v1/deposits/${got.depositIds[0]}`)).toMatchObject({ status: 'CONFIRMED', confirmations: REQUIRED });
    expect((await get(f, `/v1/transactions/${got.transactionId}`)).status).toBe('RESERVED');
  });

  test('a native-coin payment: the same through a value transfer', async () => {
    const f = await integrator();
    const amount = parseEther('0.25');
    const pi = await intent(f, nativeAn, amount);
    const hash = await payNative(pi.address, amount);
    await node.mine(REQUIRED);
    await follow();
    const got = await get(f, `/v1/payment-intents/${pi.id}`);
    expect(got).toMatchObject({ status: 'SUCCEEDED', confirmedAmount: amount.toString() });
    expect(await get(f, `/v1/deposits/${got.depositIds[0]}`)).toMatchObject({ txHash: hash, status: 'CONFIRMED', assetNetworkId: nativeAn });
  });
});

describe('reorganizations', () => {
  /** A signed token transfer to `to` from the token holder, sent to the node's pool: its raw bytes and hash. */
  async function signedPayment(to: string, amount: bigint) {
    const from = node.accounts[0]!;
    const request = await node.wallet(from).prepareTransactionRequest({ to: token, data: encodeTransfer(to, amount), account: from, chain: node.public.chain });
    const raw = await node.wallet(from).signTransaction(request as never);
    const hash = await node.public.sendRawTransaction({ serializedTransaction: raw });
    return { raw, hash };
  }
  const reorg = (depth: number, txs: [Hex, number][] = []) => node.test.request({ method: 'anvil_reorg' as never, params: [depth, txs] as never });

  test('before confirmation, moved to another block: the deposit follows it (new block, still CONFIRMING), then is confirmed', async () => {
    const f = await integrator();
    const pi = await intent(f, tokenAn, 1_000_000n);
    const { raw, hash } = await signedPayment(pi.address, 1_000_000n);
    await node.mine(1);
    await follow();
    const depositId = (await get(f, `/v1/payment-intents/${pi.id}`)).depositIds[0];
    const first = await get(f, `/v1/deposits/${depositId}`);
    expect(first).toMatchObject({ status: 'CONFIRMING', confirmations: 1 });
    // The tip block is replaced by one that includes the same transaction (as on mainnet).
    await reorg(1, [[raw, 0]]);
    const w = await follow();
    expect(w.reorgs).toBe(1);
    const moved = await get(f, `/v1/deposits/${depositId}`);
    expect(moved).toMatchObject({ txHash: hash, status: 'CONFIRMING', confirmations: 1 });
    expect(moved.blockHash).not.toBe(first.blockHash);
    await node.mine(REQUIRED - 1);
    await follow();
    expect((await get(f, `/v1/payment-intents/${pi.id}`)).status).toBe('SUCCEEDED');
    expect(await get(f, `/v1/deposits/${depositId}`)).toMatchObject({ txHash: hash, status: 'CONFIRMED' });
  });

  test('before confirmation, gone from the chain and the node: REJECTED (DROPPED), the intent waits again; mined later: detected as new and credited', async () => {
    const f = await integrator();
    const pi = await intent(f, tokenAn, 1_000_000n);
    const { raw, hash } = await signedPayment(pi.address, 1_000_000n);
    await node.mine(1);
    await follow();
    const depositId = (await get(f, `/v1/payment-intents/${pi.id}`)).depositIds[0];
    expect(await get(f, `/v1/deposits/${depositId}`)).toMatchObject({ status: 'CONFIRMING', confirmations: 1 });
    // The block is replaced by an empty one and the node forgets the transaction.
    await reorg(1);
    expect(await follow()).toMatchObject({ reorgs: 1 });
    expect(await get(f, `/v1/deposits/${depositId}`)).toMatchObject({ status: 'REJECTED' });
    expect((await get(f, `/v1/deposits/${depositId}`)).reason).toMatch(/DROPPED/);
    expect((await get(f, `/v1/payment-intents/${pi.id}`)).status).toBe('AWAITING_PAYMENT');
    // The payer's transaction is mined after all (re-broadcast): seen again, confirmed and credited.
    await reorg(1, [[raw, 0]]);
    await node.mine(REQUIRED - 1);
    await follow();
    expect((await get(f, `/v1/payment-intents/${pi.id}`)).status).toBe('SUCCEEDED');
    expect(await get(f, `/v1/deposits/${depositId}`)).toMatchObject({ txHash: hash, status: 'CONFIRMED' });
  });

  test('a payment dropped from the pool, or replaced before it is mined, is never recorded: only what a block holds counts', async () => {
    const f = await integrator();
    const pi = await intent(f, tokenAn, 1_000_000n);
    const dropped = await signedPayment(pi.address, 1_000_000n);
    await node.test.request({ method: 'anvil_dropTransaction' as never, params: [dropped.hash] as never });
    await node.mine(REQUIRED);
    await follow();
    expect(await get(f, `/v1/payment-intents/${pi.id}`)).toMatchObject({ status: 'AWAITING_PAYMENT', depositIds: [] });
    // Replaced: the same nonce again with a higher fee and another amount; the first never reaches a block.
    const from = node.accounts[0]!;
    const low = await node
      .wallet(from)
      .prepareTransactionRequest({ to: token, data: encodeTransfer(pi.address, 400_000n), account: from, chain: node.public.chain });
    const first = await node.public.sendRawTransaction({ serializedTransaction: await node.wallet(from).signTransaction(low as never) });
    const bump = {
      ...low,
      data: encodeTransfer(pi.address, 1_000_000n),
      maxFeePerGas: low.maxFeePerGas! * 2n,
      maxPriorityFeePerGas: low.maxPriorityFeePerGas! * 2n,
    };
    const replacement = await node.public.sendRawTransaction({ serializedTransaction: await node.wallet(from).signTransaction(bump as never) });
    await node.mine(REQUIRED);
    await follow();
    const got = await get(f, `/v1/payment-intents/${pi.id}`);
    expect(got).toMatchObject({ status: 'SUCCEEDED', confirmedAmount: '1000000' });
    expect(got.depositIds).toHaveLength(1);
    expect((await get(f, `/v1/deposits/${got.depositIds[0]}`)).txHash).toBe(replacement);
    expect(first).not.toBe(replacement);
  });
});

describe('money out: custodial transactions signed and broadcast on the EVM chain', () => {
  const balanceOf = (address: string) => node.public.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [address as Hex] });
  let hot: { id: string; address: string } | null = null;
  /** A HOT treasury address (key generated and sealed by the service), funded on chain with tokens and gas. */
  async function hotWallet() {
    if (hot) return hot;
    const r = await app.rest('POST', '/v1/admin/treasury/controlled-addresses', {
      headers: operator,
      body: { assetNetworkIds: [tokenAn], tier: 'HOT', control: 'GENERATED', label: 'Hot' },
    });
    expect(r.status, r.text).toBe(201);
    const got = await app.rest('GET', `/v1/admin/treasury/controlled-addresses/${id(r)}`, { headers: operator });
    await payToken(got.body.address, 50_000_000n);
    await payNative(got.body.address, parseEther('1'));
    await node.mine(1);
    return (hot = { id: id(r), address: got.body.address as string });
  }
  /** An integrator whose account holds `amount` (TUSD, or ETH): an intent paid on chain, confirmed, settled to the account. */
  async function funded(amount: bigint, assetNetworkId = tokenAn) {
    const f = await integrator();
    const pi = await intent(f, assetNetworkId, amount);
    if (assetNetworkId === tokenAn) await payToken(pi.address, amount);
    else await payNative(pi.address, amount);
    await node.mine(REQUIRED);
    await follow();
    expect(await get(f, `/v1/payment-intents/${pi.id}`)).toMatchObject({ status: 'SUCCEEDED' });
    const s = await app.rest('POST', `/v1/transactions/${pi.transactionId}/settlements`, { headers: f.key.headers });
    expect(s.status, s.text).toBe(201);
    await drainMoneyWork(app);
    return { f, pi };
  }

  test('a withdrawal: signed from the HOT treasury address (EIP-1559, its next nonce), broadcast, mined, CONFIRMED at depth; the tokens arrive', async () => {
    const h = await hotWallet();
    const { f } = await funded(1_000_000n);
    const dest = node.accounts[3]!.address;
    const d = await app.rest('POST', `/v1/organizations/${f.organizationId}/withdrawal-destinations`, {
      headers: f.key.headers,
      body: { networkId, address: dest },
    });
    expect(d.status, d.text).toBe(201);
    const before = await balanceOf(dest);
    const w = await app.rest('POST', `/v1/accounts/${f.accountId}/withdrawals`, {
      headers: f.key.headers,
      body: { amount: '400000', assetNetworkId: tokenAn, withdrawalDestinationId: id(d) },
    });
    expect(w.status, w.text).toBe(201);
    await drainMoneyWork(app);
    const sent = await get(f, `/v1/withdrawals/${id(w)}`);
    expect(sent, JSON.stringify(sent)).toMatchObject({ status: 'BROADCAST' });
    expect(sent.fromAddress.toLowerCase()).toBe(h.address.toLowerCase());
    const tx = await node.public.getTransaction({ hash: sent.txHash });
    expect(tx).toMatchObject({ type: 'eip1559', to: token.toLowerCase(), chainId: node.chainId });
    await node.mine(REQUIRED);
    await follow();
    await drainMoneyWork(app);
    expect(await get(f, `/v1/withdrawals/${id(w)}`)).toMatchObject({ status: 'CONFIRMED', txHash: sent.txHash });
    expect(await balanceOf(dest)).toBe(before + 400_000n);
  });

  test('two withdrawals signed back to back take consecutive nonces (the sender nonce survives in the node and the row lock)', async () => {
    const h = await hotWallet();
    const { f } = await funded(1_000_000n);
    const d = await app.rest('POST', `/v1/organizations/${f.organizationId}/withdrawal-destinations`, {
      headers: f.key.headers,
      body: { networkId, address: node.accounts[2]!.address },
    });
    const ids: string[] = [];
    for (const amount of ['100000', '200000']) {
      const w = await app.rest('POST', `/v1/accounts/${f.accountId}/withdrawals`, {
        headers: f.key.headers,
        body: { amount, assetNetworkId: tokenAn, withdrawalDestinationId: id(d) },
      });
      expect(w.status, w.text).toBe(201);
      ids.push(id(w));
    }
    await drainMoneyWork(app);
    const hashes = await Promise.all(ids.map(async (w) => (await get(f, `/v1/withdrawals/${w}`)).txHash as Hex));
    const nonces = (await Promise.all(hashes.map(async (hash) => (await node.public.getTransaction({ hash })).nonce))).sort((a, b) => a - b);
    expect(nonces[1]).toBe(nonces[0]! + 1);
    expect(await node.public.getTransactionCount({ address: getAddress(h.address), blockTag: 'pending' })).toBe(nonces[1]! + 1);
    await node.mine(REQUIRED);
    await follow();
    await drainMoneyWork(app);
    for (const w of ids) expect((await get(f, `/v1/withdrawals/${w}`)).status).toBe('CONFIRMED');
  });

  test('a withdrawal whose transaction leaves the pool (dropped) goes to REQUIRES_RECONCILIATION; an operator resolves it FAILED and the hold is released', async () => {
    await hotWallet();
    const { f } = await funded(500_000n);
    const d = await app.rest('POST', `/v1/organizations/${f.organizationId}/withdrawal-destinations`, {
      headers: f.key.headers,
      body: { networkId, address: node.accounts[2]!.address },
    });
    const w = await app.rest('POST', `/v1/accounts/${f.accountId}/withdrawals`, {
      headers: f.key.headers,
      body: { amount: '300000', assetNetworkId: tokenAn, withdrawalDestinationId: id(d) },
    });
    expect(w.status, w.text).toBe(201);
    await drainMoneyWork(app);
    const sent = await get(f, `/v1/withdrawals/${id(w)}`);
    expect(sent.status).toBe('BROADCAST');
    const droppedNonce = (await node.public.getTransaction({ hash: sent.txHash })).nonce;
    await node.test.request({ method: 'anvil_dropTransaction' as never, params: [sent.txHash] as never });
    await node.mine(1);
    await follow();
    await drainMoneyWork(app);
    const stuck = await get(f, `/v1/withdrawals/${id(w)}`);
    expect(stuck, JSON.stringify(stuck)).toMatchObject({ status: 'REQUIRES_RECONCILIATION' });
    expect(stuck.failureReason).toMatch(/DROPPED/);
    const r = await app.rest('POST', `/v1/admin/withdrawals/${id(w)}/resolve-reconciliation`, {
      headers: operator,
      body: { outcome: 'FAILED', reason: 'dropped from the pool' },
    });
    expect(r.status, r.text).toBe(204);
    expect((await get(f, `/v1/withdrawals/${id(w)}`)).status).toBe('FAILED');
    // The nonce the dropped transaction had is free again: the next transfer from the HOT address takes it (no gap).
    const again = await app.rest('POST', `/v1/accounts/${f.accountId}/withdrawals`, {
      headers: f.key.headers,
      body: { amount: '300000', assetNetworkId: tokenAn, withdrawalDestinationId: id(d) },
    });
    await drainMoneyWork(app);
    const next = await get(f, `/v1/withdrawals/${id(again)}`);
    expect((await node.public.getTransaction({ hash: next.txHash })).nonce).toBe(droppedNonce);
    await node.mine(REQUIRED);
    await follow();
    await drainMoneyWork(app);
    expect((await get(f, `/v1/withdrawals/${id(again)}`)).status).toBe('CONFIRMED');
  });

  test('a stuck withdrawal transaction is replaced with higher fees at its nonce (fee bump): the original REPLACED, the withdrawal CONFIRMED once, one debit', async () => {
    const h = await hotWallet();
    const { f } = await funded(600_000n);
    const posted = async () => {
      const r = await app.rest('GET', `/v1/accounts/${f.accountId}/balances`, { headers: f.member.headers });
      expect(r.status, r.text).toBe(200);
      return (r.body as { posted: string; available: string }[]).map((b) => [b.posted, b.available]);
    };
    const funds = await posted();
    const dest = node.accounts[3]!.address;
    const d = await app.rest('POST', `/v1/organizations/${f.organizationId}/withdrawal-destinations`, {
      headers: f.key.headers,
      body: { networkId, address: dest },
    });
    expect(d.status, d.text).toBe(201);
    const w = await app.rest('POST', `/v1/accounts/${f.accountId}/withdrawals`, {
      headers: f.key.headers,
      body: { amount: '250000', assetNetworkId: tokenAn, withdrawalDestinationId: id(d) },
    });
    expect(w.status, w.text).toBe(201);
    await drainMoneyWork(app);
    const sent = await get(f, `/v1/withdrawals/${id(w)}`);
    expect(sent.status).toBe('BROADCAST');
    const original = sent.txHash as Hex;
    const first = await node.public.getTransaction({ hash: original });
    // No block takes it (mining is manual here; on a busy chain: fees below what blocks ask. anvil evicts a transaction
    // whose maxFeePerGas falls below the base fee, so the base fee is not used to hold it).
    await follow();
    await drainMoneyWork(app);
    expect((await node.public.getTransaction({ hash: original })).blockNumber).toBeNull();
    expect((await get(f, `/v1/withdrawals/${id(w)}`)).status).toBe('BROADCAST');
    const before = await balanceOf(dest);

    // The fee-bump job (as `npm start` schedules it): nothing before bumpAfterSeconds (180 s by default), then one replacement.
    const bumpDeps = { db: app.deps.db, clock: app.clock, sealingKey: app.deps.sealingKey, boss: app.deps.boss };
    expect((await bumpStuckTransactions(bumpDeps, { networkId })).bumped).toEqual([]);
    app.clock.advance(181_000);
    // With a cap the next fee would pass: no bump, it stays pending (the withdrawal rules' hour then apply).
    const settings = evmNetworksOf(app.deps.config)[networkId]!;
    configureEvmNetworks({ [networkId]: { ...settings, maxFeePerGasCap: first.maxFeePerGas!.toString() } });
    try {
      const capped = await bumpStuckTransactions(bumpDeps, { networkId });
      expect(capped.bumped).toEqual([]);
      expect(capped.skipped).toEqual([{ txHash: original, why: expect.stringMatching(/maxFeePerGasCap/) }]);
    } finally {
      configureEvmNetworks(evmNetworksOf(app.deps.config));
    }
    const run = await bumpStuckTransactions(bumpDeps, { networkId });
    expect(run.bumped, JSON.stringify(run)).toHaveLength(1);
    const replacement = run.bumped[0]!.replacement as Hex;
    expect(run.bumped[0]!.txHash).toBe(original);
    // Run again at once: not due (its own age counts from its sending), nothing more signed.
    expect((await bumpStuckTransactions(bumpDeps, { networkId })).bumped).toEqual([]);
    const second = await node.public.getTransaction({ hash: replacement });
    expect([second.from, second.nonce, second.to, second.input, second.value]).toEqual([first.from, first.nonce, first.to, first.input, first.value]);
    expect(second.maxFeePerGas! >= first.maxFeePerGas! + first.maxFeePerGas! / 8n).toBe(true);
    expect(second.maxPriorityFeePerGas! >= first.maxPriorityFeePerGas! + first.maxPriorityFeePerGas! / 8n).toBe(true);
    // A crash between recording the replacement and sending it: the node does not know it (dropped here); the next run sends the same bytes again.
    await node.test.request({ method: 'anvil_dropTransaction' as never, params: [replacement] as never });
    const again = await bumpStuckTransactions(bumpDeps, { networkId });
    expect([again.resent, again.bumped]).toEqual([[replacement], []]);

    await node.mine(REQUIRED);
    await follow();
    await drainMoneyWork(app);
    const done = await get(f, `/v1/withdrawals/${id(w)}`);
    expect(done).toMatchObject({ status: 'CONFIRMED', txHash: replacement });
    expect(await balanceOf(dest)).toBe(before + 250_000n);
    expect(await node.public.getTransactionCount({ address: getAddress(h.address), blockTag: 'latest' })).toBe(first.nonce + 1);
    // The original, as the chain view reports it: REPLACED by the platform's own bump.
    const seen = await adapterFor('EVM', app.deps.db).transaction({ id: networkId, kind: 'EVM', requiredConfirmations: REQUIRED }, original);
    expect(seen).toMatchObject({ status: 'REPLACED', replacedByTxHash: replacement, feeBump: true });
    // The ledger: exactly one debit of the account, for the amount; the balance follows.
    const entries = await app.rest('GET', `/v1/admin/ledger-entries?assetNetworkId=${tokenAn}&take=500`, { headers: operator });
    const debits = (entries.body.items as { ownerId: string; accountKind: string; direction: string; amount: string; pending: boolean }[]).filter(
      (e) => e.ownerId === f.accountId && e.accountKind === 'CUSTOMER' && e.direction === 'DEBIT' && !e.pending,
    );
    expect(debits.map((e) => e.amount)).toEqual(['250000']);
    const after = await posted();
    expect(after).toEqual([[(BigInt(funds[0]![0]!) - 250_000n).toString(), (BigInt(funds[0]![0]!) - 250_000n).toString()]]);
    // The audit trail: the bump, then the confirmation naming the replaced transaction and the fee actually paid.
    const audit = await app.rest('GET', `/v1/admin/audit-log?entityType=Withdrawal&entityId=${id(w)}&take=50`, { headers: operator });
    const actions = (audit.body.items as { action: string; after: Record<string, unknown> }[]).map((e) => [e.action, e.after]);
    expect(actions.filter(([a]) => a === 'chain.fee_bumped')).toEqual([
      ['chain.fee_bumped', expect.objectContaining({ txHash: replacement, replaces: original })],
    ]);
    const receipt = await node.public.getTransactionReceipt({ hash: replacement });
    expect(actions.find(([a]) => a === 'withdrawal.confirmed')?.[1]).toMatchObject({
      txHash: replacement,
      replaced: original,
      networkFeePaid: (receipt.gasUsed * receipt.effectiveGasPrice).toString(),
    });
    // Nothing more to bump once mined.
    app.clock.advance(181_000);
    expect(await bumpStuckTransactions(bumpDeps, { networkId })).toMatchObject({ bumped: [], resent: [] });
  });

  test('SELF_CUSTODY: the signing request carries the unsigned EIP-1559 transaction; a wrong signature is refused (400), the right one is broadcast and confirmed', async () => {
    const { f } = await funded(parseEther('0.3'), nativeAn);
    const root = generateKeyPair();
    const wallet = await app.rest('POST', `/v1/applications/${f.key.applicationId}/wallets`, {
      headers: f.key.headers,
      body: { networkId, custodyMode: 'SELF_CUSTODY', publicKey: root.publicKey },
    });
    expect(wallet.status, wallet.text).toBe(201);
    const from = getAddress(addressOf(derivePublicKey(root.publicKey, 7)));
    await payNative(from, parseEther('1')); // the integrator's own address holds the coins it sends (and the gas)
    await node.mine(1);
    const dest = node.accounts[2]!.address;
    const d = await app.rest('POST', `/v1/organizations/${f.organizationId}/withdrawal-destinations`, {
      headers: f.key.headers,
      body: { networkId, address: dest },
    });
    const amount = parseEther('0.2');
    const w = await app.rest('POST', `/v1/accounts/${f.accountId}/withdrawals`, {
      headers: f.key.headers,
      body: { amount: amount.toString(), assetNetworkId: nativeAn, withdrawalDestinationId: id(d), walletId: id(wallet), sourceIndex: 7 },
    });
    expect(w.status, w.text).toBe(201);
    await drainMoneyWork(app);
    expect((await get(f, `/v1/withdrawals/${id(w)}`)).status).toBe('AWAITING_SIGNATURE');
    const c = await app.rest('POST', `/v1/environments/${f.key.environmentId}/signing-requests`, { headers: f.key.headers, body: { withdrawalId: id(w) } });
    expect(c.status, c.text).toBe(201);
    const sr = await get(f, `/v1/signing-requests/${id(c)}`);
    // What the integrator signs: an unsigned EIP-1559 transaction of the network's chain, from its address, for the amount; digest = its signing hash.
    const unsigned = parseTransaction(sr.canonicalPayload as Hex);
    expect(unsigned).toMatchObject({ type: 'eip1559', chainId: node.chainId, to: dest.toLowerCase(), value: amount });
    expect(sr.digest).toBe(keccak256(sr.canonicalPayload as Hex).slice(2));
    const sign = (k: Uint8Array) => bytesToHex(secp256k1.sign(hexToBytes(sr.digest), k, { prehash: false }));
    const submit = (signature: string) => app.rest('POST', `/v1/signing-requests/${id(c)}/signature`, { headers: f.key.headers, body: { signature } });
    const wrong = await submit(sign(generateKeyPair().privateKey));
    expect([wrong.status, wrong.body.errors?.[0]?.field]).toEqual([400, 'signature']);
    const ok = await submit(sign(derivePrivateKey(root.privateKey, 7)));
    expect(ok.status, ok.text).toBeLessThan(300);
    const sent = await get(f, `/v1/withdrawals/${id(w)}`);
    expect(sent.status).toBe('BROADCAST');
    const tx = await node.public.getTransaction({ hash: sent.txHash });
    expect([tx.from, tx.to, tx.value]).toEqual([from.toLowerCase(), dest.toLowerCase(), amount]);
    const before = await node.public.getBalance({ address: dest });
    // Stuck past bumpAfterSeconds: never bumped, the service holds no key for the integrator's address.
    app.clock.advance(181_000);
    const bumps = await bumpStuckTransactions({ db: app.deps.db, clock: app.clock, sealingKey: app.deps.sealingKey, boss: app.deps.boss }, { networkId });
    expect(bumps.bumped).toEqual([]);
    expect(bumps.skipped).toContainEqual({ txHash: sent.txHash, why: expect.stringMatching(/SELF_CUSTODY/) });
    await node.mine(REQUIRED);
    await follow();
    await drainMoneyWork(app);
    expect((await get(f, `/v1/withdrawals/${id(w)}`)).status).toBe('CONFIRMED');
    expect(await node.public.getBalance({ address: dest })).toBe(before + amount);
  });

  test('a sweep of a deposit address to the HOT treasury address: a real transaction, its chain status read back', async () => {
    const r = await app.rest('POST', '/v1/admin/treasury/controlled-addresses', {
      headers: operator,
      body: { assetNetworkIds: [nativeAn], tier: 'HOT', control: 'GENERATED', label: 'Hot ETH' },
    });
    expect(r.status, r.text).toBe(201);
    const to = (await app.rest('GET', `/v1/admin/treasury/controlled-addresses/${id(r)}`, { headers: operator })).body.address as string;
    const f = await integrator();
    const amount = parseEther('0.5');
    const pi = await intent(f, nativeAn, amount);
    await payNative(pi.address, amount);
    await node.mine(REQUIRED);
    await follow();
    expect((await get(f, `/v1/payment-intents/${pi.id}`)).status).toBe('SUCCEEDED');
    // Everything but what the gas may cost (21,000 gas at the fee estimate, with room).
    const sweep = parseEther('0.49');
    const s = await app.rest('POST', '/v1/admin/treasury/sweeps', {
      headers: operator,
      body: { assetNetworkId: nativeAn, fromDepositAddressId: pi.depositAddressId, toControlledAddressId: id(r), amount: sweep.toString() },
    });
    expect(s.status, s.text).toBe(201);
    const view = async () => (await app.rest('GET', `/v1/admin/treasury/sweeps/${id(s)}`, { headers: operator })).body;
    expect(await view()).toMatchObject({ chainStatus: 'PENDING', amount: sweep.toString() });
    await node.mine(REQUIRED);
    expect(await view()).toMatchObject({ chainStatus: 'MINED', confirmations: REQUIRED });
    expect(await node.public.getBalance({ address: to as Hex })).toBe(sweep);
  });

  test('a refund goes back to the payer on chain, mined and confirmed', async () => {
    await hotWallet();
    const { f, pi } = await funded(700_000n);
    // A second intent, not settled, refunded in full: the payer is the token holder (account 0).
    const p2 = await intent(f, tokenAn, 300_000n);
    await payToken(p2.address, 300_000n, node.accounts[0]!);
    await node.mine(REQUIRED);
    await follow();
    void pi;
    const payer = node.accounts[0]!.address;
    const before = await balanceOf(payer);
    const r = await app.rest('POST', `/v1/transactions/${p2.transactionId}/refunds`, { headers: f.key.headers, body: { reason: 'customer asked' } });
    expect(r.status, r.text).toBe(201);
    await drainMoneyWork(app);
    const refund = await get(f, `/v1/refunds/${id(r)}`);
    expect(refund, JSON.stringify(refund)).toMatchObject({ status: 'EXECUTED' });
    expect(refund.toAddress.toLowerCase()).toBe(payer.toLowerCase());
    await node.mine(REQUIRED);
    expect((await node.public.getTransactionReceipt({ hash: refund.txHash })).status).toBe('success');
    expect(await balanceOf(payer)).toBe(before + BigInt(refund.netAmount));
  });
});

describe('reconciliation', () => {
  test('the ledger is compared with the EVM chain (not skipped) after the money moved above', async () => {
    const r = await app.rest('POST', '/v1/admin/reconciliations/execute', { headers: operator });
    expect(r.status, r.text).toBe(201);
    const mine = r.body.summaries.filter((x: { assetNetworkId: string }) => x.assetNetworkId === tokenAn || x.assetNetworkId === nativeAn);
    expect(mine.length).toBe(2);
    for (const x of mine) expect(x.skipped).toBe(false);
  });
});

describe('environments and networks (issue 18 point 5)', () => {
  test('sandbox environments refuse real networks and production environments refuse sandbox ones, with 400 naming the field', async () => {
    const m = await signUpMember(app);
    const sandboxKey = await createApiKey(app, m, 'SANDBOX');
    const w = await app.rest('POST', `/v1/applications/${sandboxKey.applicationId}/wallets`, {
      headers: sandboxKey.headers,
      body: { networkId, custodyMode: 'CUSTODIAL' },
    });
    expect([w.status, w.body.errors?.[0]?.field]).toEqual([400, 'networkId']);
    const n = await app.rest('POST', '/v1/platform/networks', {
      headers: operator,
      body: { name: `Testnet ${Date.now()}`, kind: 'EVM', environmentType: 'SANDBOX', blockTimeSeconds: 12, requiredConfirmations: 2 },
    });
    expect([n.status, n.body.errors?.[0]?.field]).toEqual([400, 'environmentType']);
    const sb = await app.rest('POST', '/v1/platform/networks', {
      headers: operator,
      body: { name: `Sb ${Date.now()}`, kind: 'SANDBOX', environmentType: 'SANDBOX', blockTimeSeconds: 5, requiredConfirmations: 2 },
    });
    const prodKey = await createApiKey(app, m, 'PRODUCTION');
    const w2 = await app.rest('POST', `/v1/applications/${prodKey.applicationId}/wallets`, {
      headers: prodKey.headers,
      body: { networkId: id(sb), custodyMode: 'CUSTODIAL' },
    });
    expect([w2.status, w2.body.errors?.[0]?.field]).toEqual([400, 'networkId']);
  });
});

describe('configuration and readiness (issue 18 point 2)', () => {
  test('EVM_NETWORKS is validated at start: a missing or malformed setting is named', () => {
    const nid = crypto.randomUUID();
    const bad = (v: unknown) => () => loadConfig({ EVM_NETWORKS: JSON.stringify(v) });
    expect(bad({ [nid]: { chainId: 1 } })).toThrow(new RegExp(`EVM_NETWORKS\\.${nid}\\.rpcUrl`));
    expect(bad({ [nid]: { rpcUrl: 'ftp://x', chainId: 1 } })).toThrow(/rpcUrl: must be a URL/);
    expect(bad({ [nid]: { rpcUrl: 'http://x', chainId: 1, tokens: { [crypto.randomUUID()]: '0x12' } } })).toThrow(/tokens/);
    expect(bad({ 'not-a-uuid': { rpcUrl: 'http://x', chainId: 1 } })).toThrow(ConfigError);
    expect(() => loadConfig({ EVM_NETWORKS: '{oops' })).toThrow(/EVM_NETWORKS: must be JSON/);
    expect(loadConfig({ EVM_NETWORKS: JSON.stringify({ [nid]: { rpcUrl: 'http://127.0.0.1:1', chainId: 1 } }) }).EVM_NETWORKS).toBeTruthy();
  });

  test('with a wsUrl, a new head announced over the websocket queues a watch at once (polling set to 10 minutes)', async () => {
    const settings = evmNetworksOf(app.deps.config)[networkId]!;
    const wsUrl = node.rpcUrl.replace(/^http/, 'ws');
    const other = await createTestApp({
      databaseUrl: app.databaseUrl,
      env: { EVM_NETWORKS: JSON.stringify({ [networkId]: { ...settings, wsUrl, pollIntervalMs: 600_000 } }) },
    });
    const boss = other.deps.boss!;
    const ticker = startEvmWatchTicker(boss, other.deps.log);
    try {
      const next = () =>
        pollUntil(
          'an evm.watch job',
          () => boss.fetch<{ networkId: string }>(EVM_WATCH_QUEUE),
          (jobs) => jobs.length > 0,
          10_000,
          50,
        );
      const first = await next(); // the ticker's first ask, at start
      await boss.complete(
        EVM_WATCH_QUEUE,
        first.map((j) => j.id),
      );
      await new Promise((r) => setTimeout(r, 300));
      expect(await boss.fetch(EVM_WATCH_QUEUE)).toEqual([]); // nothing more without a block: the poll is 10 minutes away
      await node.mine(1);
      const jobs = await next();
      expect(jobs.map((j) => j.data)).toEqual([{ networkId }]);
      await boss.complete(
        EVM_WATCH_QUEUE,
        jobs.map((j) => j.id),
      );
    } finally {
      ticker.stop();
      await other.close();
      configureEvmNetworks(evmNetworksOf(app.deps.config)); // this file's settings again
    }
  });

  test('/readyz names each EVM network and whether its node answers; one unreachable node does not make the service unready', async () => {
    const down = crypto.randomUUID();
    const other = await createTestApp({
      databaseUrl: app.databaseUrl,
      env: { EVM_NETWORKS: JSON.stringify({ [down]: { rpcUrl: 'http://127.0.0.1:9/secret-key', chainId: 1 } }) },
    });
    try {
      const r = await other.rest('GET', '/readyz');
      expect(r.status).toBe(200);
      expect(r.body.evmNetworks[networkId]).toBe('ok');
      expect(r.body.evmNetworks[down]).toMatch(/^unreachable/);
      expect(r.text).not.toContain('secret-key');
    } finally {
      await other.close();
    }
  });
});

function encodeTransfer(to: string, amount: bigint): Hex {
  return ('0xa9059cbb' + to.slice(2).toLowerCase().padStart(64, '0') + amount.toString(16).padStart(64, '0')) as Hex;
}
