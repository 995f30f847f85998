import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bearer, createApiKey, createTestApp, PASSWORD, signUpMember, uniqueEmail, type TestApp } from '../../test/harness';
import { setupIntegrator, setupSandboxCatalog } from '../../test/money-helpers';
import * as secp from '../chains/secp256k1';
import { allocateAddressInTx } from './addresses';
import { custodialRootKey } from './wallets';

let app: TestApp;
let catalog: Awaited<ReturnType<typeof setupSandboxCatalog>>;
let integ: Awaited<ReturnType<typeof setupIntegrator>>;
let productionNetworkId: string;

beforeAll(async () => {
  app = await createTestApp();
  catalog = await setupSandboxCatalog(app);
  integ = await setupIntegrator(app, catalog);
  const p = await app.rest('POST', '/v1/platform/networks', {
    headers: catalog.operator.headers,
    body: { name: `Mainnet ${crypto.randomUUID()}`, kind: 'EVM', environmentType: 'PRODUCTION', blockTimeSeconds: 12, requiredConfirmations: 12 },
  });
  productionNetworkId = p.body.id;
});
afterAll(() => app.close());

const walletIdOf = (r: { headers: Headers }) => r.headers.get('location')!.split('/').pop()!;

/** A known root key pair (self-custody), so tests can derive what the service must derive. */
function keyPair() {
  const { privateKey, publicKey } = secp.generateKeyPair();
  return { privateKey, publicKey };
}

/** A PaymentIntent row (and its Transaction) straight in the database: the payment-intent routes are another helper's. */
async function paymentIntent(
  who: { organizationId: string; applicationId: string; environmentId: string },
  assetNetworkId: string,
  status: 'AWAITING_PAYMENT' | 'PROCESSING' | 'CANCELLED' = 'AWAITING_PAYMENT',
) {
  const db = app.deps.db;
  const env = await db.environment.findUniqueOrThrow({ where: { id: who.environmentId } });
  const base = {
    organizationId: who.organizationId,
    applicationId: who.applicationId,
    environmentId: env.id,
    environmentType: env.type,
    assetNetworkId,
    amount: '1000000',
  };
  const t = await db.transaction.create({ data: base });
  const pi = await db.paymentIntent.create({ data: { ...base, transactionId: t.id, status, expiresAt: new Date(app.clock.now().getTime() + 3600_000) } });
  return pi.id;
}

const allocate = (applicationId: string, headers: Record<string, string>, body: Record<string, unknown>) =>
  app.rest('POST', `/v1/applications/${applicationId}/wallets/deposit-addresses`, { headers, body });

describe('RegisterWallet', () => {
  test('CUSTODIAL by an API key: 201 without body, Location; a real secp256k1 key, sealed; no private material in any answer', async () => {
    const r = await app.rest('POST', `/v1/applications/${integ.applicationId}/wallets`, {
      headers: integ.apiKeyHeaders,
      body: { networkId: catalog.networkId, custodyMode: 'CUSTODIAL', label: 'Hot' },
    });
    expect([r.status, r.text]).toEqual([201, '']);
    const id = walletIdOf(r);
    expect(r.headers.get('location')).toBe(`/v1/wallets/${id}`);
    const g = await app.rest('GET', `/v1/wallets/${id}`, { headers: integ.apiKeyHeaders });
    expect(g.status).toBe(200);
    expect(g.body).toEqual({
      id,
      organizationId: integ.organizationId,
      applicationId: integ.applicationId,
      environmentId: integ.environmentId,
      environmentType: 'SANDBOX',
      networkId: catalog.networkId,
      custodyMode: 'CUSTODIAL',
      label: 'Hot',
      curve: 'secp256k1',
      publicKey: expect.stringMatching(/^0[23][0-9a-f]{64}$/),
      nextDerivationIndex: 0,
      createdAt: app.clock.now().toISOString(),
    });
    const row = await app.deps.db.wallet.findUniqueOrThrow({ where: { id } });
    expect(row.sealedPrivateKey).not.toBeNull();
    const root = await custodialRootKey(app.deps.db, app.deps.sealingKey, id);
    expect(secp.publicKeyOf(root)).toBe(g.body.publicKey);
    const hex = secp.bytesToHex(root);
    // The private key appears nowhere readable: not in answers, not in the audit entry, not in clear in the row.
    const m = await app.rest('GET', `/v1/wallets/${id}/public-material`, { headers: integ.apiKeyHeaders });
    const [entry] = await app.deps.db.auditLogEntry.findMany({ where: { entityId: id } });
    for (const text of [g.text, m.text, JSON.stringify(entry)]) expect(text).not.toContain(hex);
    expect(Buffer.from(row.sealedPrivateKey!).toString('hex')).not.toContain(hex);
    expect(entry).toMatchObject({ action: 'wallet.registered', actorType: 'API_KEY', organizationId: integ.organizationId });
    // Sealed to its own row: the ciphertext does not open as another wallet's.
    await app.deps.db.wallet.update({ where: { id: integ.walletId }, data: { sealedPrivateKey: row.sealedPrivateKey } });
    await expect(custodialRootKey(app.deps.db, app.deps.sealingKey, integ.walletId)).rejects.toThrow();
  });

  test('CUSTODIAL refuses a publicKey; SELF_CUSTODY needs a valid one (compressed or uncompressed, stored compressed)', async () => {
    const post = (body: Record<string, unknown>) =>
      app.rest('POST', `/v1/applications/${integ.applicationId}/wallets`, { headers: integ.apiKeyHeaders, body: { networkId: catalog.networkId, ...body } });
    const kp = keyPair();
    const c = await post({ custodyMode: 'CUSTODIAL', publicKey: kp.publicKey });
    expect([c.status, c.body.errors]).toEqual([400, [{ field: 'publicKey', message: expect.stringContaining('omitted'), code: 'custom' }]]);
    for (const bad of [undefined, 'zz', '02' + '00'.repeat(32), '04' + '00'.repeat(64), kp.publicKey.slice(0, 64), '05' + kp.publicKey.slice(2)]) {
      const r = await post({ custodyMode: 'SELF_CUSTODY', ...(bad === undefined ? {} : { publicKey: bad }) });
      expect([r.status, r.body.errors?.[0]?.field], String(bad)).toEqual([400, 'publicKey']);
    }
    const uncompressed = secp256k1.Point.fromBytes(secp.hexToBytes(kp.publicKey)).toHex(false);
    const ok = await post({ custodyMode: 'SELF_CUSTODY', publicKey: '0x' + uncompressed.toUpperCase() });
    expect(ok.status).toBe(201);
    const w = await app.deps.db.wallet.findUniqueOrThrow({ where: { id: walletIdOf(ok) } });
    expect([w.publicKey, w.sealedPrivateKey, w.custodyMode]).toEqual([kp.publicKey, null, 'SELF_CUSTODY']);
    // One root key per network: another wallet with it would derive the same addresses.
    const dup = await post({ custodyMode: 'SELF_CUSTODY', publicKey: kp.publicKey });
    expect([dup.status, dup.body.code]).toEqual([409, 'CONFLICT']);
    const other = await signUpMember(app);
    const otherKey = await createApiKey(app, other);
    const dup2 = await app.rest('POST', `/v1/applications/${otherKey.applicationId}/wallets`, {
      headers: otherKey.headers,
      body: { networkId: catalog.networkId, custodyMode: 'SELF_CUSTODY', publicKey: kp.publicKey },
    });
    expect(dup2.status).toBe(409);
  });

  test('the environment: an API key its own, a member names one; sandbox environments use SANDBOX networks only', async () => {
    const url = `/v1/applications/${integ.applicationId}/wallets`;
    const m = integ.member.headers;
    const noEnv = await app.rest('POST', url, { headers: m, body: { networkId: catalog.networkId, custodyMode: 'CUSTODIAL' } });
    expect([noEnv.status, noEnv.body.errors?.[0]?.field]).toEqual([400, 'environmentId']);
    const foreignEnv = await app.rest('POST', url, {
      headers: m,
      body: { networkId: catalog.networkId, custodyMode: 'CUSTODIAL', environmentId: crypto.randomUUID() },
    });
    expect([foreignEnv.status, foreignEnv.body.errors?.[0]?.field]).toEqual([400, 'environmentId']);
    const byMember = await app.rest('POST', url, {
      headers: m,
      body: { networkId: catalog.networkId, custodyMode: 'CUSTODIAL', environmentId: integ.environmentId },
    });
    expect(byMember.status).toBe(201);
    expect((await app.deps.db.auditLogEntry.findFirst({ where: { entityId: walletIdOf(byMember) } }))?.actorType).toBe('MEMBER');

    const prodNet = await app.rest('POST', url, { headers: integ.apiKeyHeaders, body: { networkId: productionNetworkId, custodyMode: 'CUSTODIAL' } });
    expect([prodNet.status, prodNet.body.errors?.[0]?.field]).toEqual([400, 'networkId']);
    const unknownNet = await app.rest('POST', url, { headers: integ.apiKeyHeaders, body: { networkId: crypto.randomUUID(), custodyMode: 'CUSTODIAL' } });
    expect([unknownNet.status, unknownNet.body.errors?.[0]?.field]).toEqual([400, 'networkId']);
    const ownEnvMismatch = await app.rest('POST', url, {
      headers: integ.apiKeyHeaders,
      body: { networkId: catalog.networkId, custodyMode: 'CUSTODIAL', environmentId: crypto.randomUUID() },
    });
    expect(ownEnvMismatch.status).toBe(400);

    // A production environment: SANDBOX networks refused; the EVM production network has no adapter yet.
    const prod = await app.rest('POST', `/v1/applications/${integ.applicationId}/environments`, { headers: m, body: { type: 'PRODUCTION' } });
    const prodKey = await app.rest('POST', `/v1/environments/${prod.body.id}/api-keys`, { headers: m });
    const live = { 'x-api-key': prodKey.body.apiKey as string };
    const sandboxNet = await app.rest('POST', url, { headers: live, body: { networkId: catalog.networkId, custodyMode: 'CUSTODIAL' } });
    expect([sandboxNet.status, sandboxNet.body.errors?.[0]?.message]).toEqual([400, expect.stringContaining('PRODUCTION networks only')]);
    const evm = await app.rest('POST', url, { headers: m, body: { networkId: productionNetworkId, custodyMode: 'CUSTODIAL', environmentId: prod.body.id } });
    expect([evm.status, evm.body.errors?.[0]?.message]).toEqual([400, expect.stringContaining('no adapter')]);
  });

  test('another organization, another application, a suspended application, the wrong principal', async () => {
    const body = { networkId: catalog.networkId, custodyMode: 'CUSTODIAL' };
    const other = await signUpMember(app);
    const otherKey = await createApiKey(app, other);
    expect((await app.rest('POST', `/v1/applications/${integ.applicationId}/wallets`, { headers: otherKey.headers, body })).status).toBe(404);
    expect(
      (
        await app.rest('POST', `/v1/applications/${integ.applicationId}/wallets`, {
          headers: other.headers,
          body: { ...body, environmentId: integ.environmentId },
        })
      ).status,
    ).toBe(404);
    // A second application of the same organization: its key does not register wallets for the first.
    const sibling = await createApiKey(app, integ.member);
    expect((await app.rest('POST', `/v1/applications/${integ.applicationId}/wallets`, { headers: sibling.headers, body })).status).toBe(404);
    expect((await app.rest('GET', `/v1/wallets/${integ.walletId}`, { headers: sibling.headers })).status).toBe(404);
    expect((await app.rest('GET', `/v1/wallets/${integ.walletId}`, { headers: other.headers })).status).toBe(404);
    expect((await app.rest('GET', `/v1/wallets/${integ.walletId}/public-material`, { headers: otherKey.headers })).status).toBe(404);
    expect((await app.rest('GET', `/v1/wallets/${integ.walletId}`, { headers: integ.member.headers })).status).toBe(200);
    const holder = await app.rest('POST', '/v1/account-holders/signup', { body: { email: uniqueEmail('h'), password: PASSWORD, name: 'H' } });
    expect((await app.rest('GET', `/v1/wallets/${integ.walletId}`, { headers: bearer(holder.body.accessToken) })).status).toBe(403);
    expect((await app.rest('POST', `/v1/applications/${integ.applicationId}/wallets`, { headers: catalog.operator.headers, body })).status).toBe(403);

    await app.rest('POST', `/v1/applications/${sibling.applicationId}/suspend`, { headers: integ.member.headers, body: { reason: 'test' } });
    const suspended = await app.rest('POST', `/v1/applications/${sibling.applicationId}/wallets`, {
      headers: integ.member.headers,
      body: { ...body, environmentId: sibling.environmentId },
    });
    expect([suspended.status, suspended.body.code]).toEqual([409, 'INVALID_STATE']);
  });
});

describe('GetWalletPublicMaterial', () => {
  test('curve, key, chain code, scheme and format: enough to derive every address', async () => {
    const kp = keyPair();
    const r = await app.rest('POST', `/v1/applications/${integ.applicationId}/wallets`, {
      headers: integ.apiKeyHeaders,
      body: { networkId: catalog.networkId, custodyMode: 'SELF_CUSTODY', publicKey: kp.publicKey },
    });
    const id = walletIdOf(r);
    const m = await app.rest('GET', `/v1/wallets/${id}/public-material`, { headers: integ.apiKeyHeaders });
    expect(m.status).toBe(200);
    expect(m.body).toEqual({
      walletId: id,
      networkId: catalog.networkId,
      custodyMode: 'SELF_CUSTODY',
      curve: 'secp256k1',
      publicKey: kp.publicKey,
      publicKeyFormat: 'SEC1_COMPRESSED_HEX',
      chainCode: secp.chainCodeOf(kp.publicKey),
      derivationScheme: 'BIP32_CKDPUB_SHA256_CHAIN_CODE',
      derivationPath: 'm/{index}',
      addressFormat: 'EVM_KECCAK256_HEX',
      nextDerivationIndex: 0,
    });
    expect((await app.rest('GET', `/v1/wallets/${crypto.randomUUID()}/public-material`, { headers: integ.apiKeyHeaders })).status).toBe(404);
  });
});

describe('AllocateDepositAddress', () => {
  test('derives at the next index, sets the payment intent, emits deposit.address_generated in the same transaction; idempotent', async () => {
    const kp = keyPair();
    const w = await app.rest('POST', `/v1/applications/${integ.applicationId}/wallets`, {
      headers: integ.apiKeyHeaders,
      body: { networkId: catalog.networkId, custodyMode: 'SELF_CUSTODY', publicKey: kp.publicKey },
    });
    const walletId = walletIdOf(w);
    const pi = await paymentIntent(integ, catalog.assetNetworkId);
    const body = { walletId, assetNetworkId: catalog.assetNetworkId, paymentIntentId: pi };
    const r = await allocate(integ.applicationId, integ.apiKeyHeaders, body);
    expect(r.status).toBe(200);
    // The integrator derives the same key and address from its own root private key (BIP32 CKDpub/CKDpriv at m/0).
    const child = secp.derivePrivateKey(kp.privateKey, 0);
    expect(r.body).toEqual({
      id: expect.any(String),
      address: secp.addressOf(secp.publicKeyOf(child)),
      assetNetworkId: catalog.assetNetworkId,
      networkId: catalog.networkId,
      walletId,
      paymentIntentId: pi,
      derivationIndex: 0,
      publicKey: secp.publicKeyOf(child),
    });
    expect((await app.deps.db.paymentIntent.findUniqueOrThrow({ where: { id: pi } })).depositAddressId).toBe(r.body.id);
    const events = await app.deps.db.webhookEvent.findMany({ where: { aggregateId: pi } });
    expect(events.map((e) => [e.eventType, JSON.parse(e.body)])).toEqual([
      ['deposit.address_generated', { PaymentIntentId: pi, Address: r.body.address, AssetNetworkId: catalog.assetNetworkId }],
    ]);
    expect(await app.deps.db.auditLogEntry.count({ where: { entityId: r.body.id, action: 'deposit_address.allocated' } })).toBe(1);

    const again = await allocate(integ.applicationId, integ.apiKeyHeaders, body);
    expect([again.status, again.body]).toEqual([200, r.body]);
    expect(await app.deps.db.webhookEvent.count({ where: { aggregateId: pi } })).toBe(1);

    const pi2 = await paymentIntent(integ, catalog.assetNetworkId);
    const second = await allocate(integ.applicationId, integ.member.headers, { ...body, paymentIntentId: pi2 });
    expect(second.body.derivationIndex).toBe(1);
    expect(second.body.address).toBe(secp.addressOf(secp.publicKeyOf(secp.derivePrivateKey(kp.privateKey, 1))));
    expect(second.body.address).not.toBe(r.body.address);
    expect((await app.rest('GET', `/v1/wallets/${walletId}`, { headers: integ.apiKeyHeaders })).body.nextDerivationIndex).toBe(2);
  });

  test('a suspended application allocates no deposit address (409), as it creates nothing else (issue 26)', async () => {
    const own = await setupIntegrator(app, catalog);
    const pi = await paymentIntent(own, catalog.assetNetworkId);
    const s = await app.rest('POST', `/v1/applications/${own.applicationId}/suspend`, { headers: own.member.headers, body: { reason: 'review' } });
    expect(s.status, s.text).toBeLessThan(300);
    const r = await allocate(own.applicationId, own.member.headers, { walletId: own.walletId, assetNetworkId: catalog.assetNetworkId, paymentIntentId: pi });
    expect([r.status, r.body.code, r.body.detail]).toEqual([409, 'INVALID_STATE', expect.stringMatching(/suspended/)]);
    expect((await app.deps.db.paymentIntent.findUniqueOrThrow({ where: { id: pi } })).depositAddressId).toBeNull();
  });

  test('the states and references it refuses, and nothing changes', async () => {
    const url = integ.applicationId;
    const h = integ.apiKeyHeaders;
    const base = { walletId: integ.walletId, assetNetworkId: catalog.assetNetworkId };
    const processing = await paymentIntent(integ, catalog.assetNetworkId, 'PROCESSING');
    const p = await allocate(url, h, { ...base, paymentIntentId: processing });
    expect([p.status, p.body.code]).toEqual([409, 'INVALID_STATE']);
    expect((await allocate(url, h, { ...base, paymentIntentId: crypto.randomUUID() })).status).toBe(404);
    expect((await allocate(url, h, { ...base, paymentIntentId: 'nope' })).status).toBe(404);
    expect(
      (await allocate(url, h, { ...base, walletId: crypto.randomUUID(), paymentIntentId: await paymentIntent(integ, catalog.assetNetworkId) })).status,
    ).toBe(404);

    // Another organization's payment intent and wallet: 404 both ways.
    const other = await setupIntegrator(app, catalog);
    const foreignPi = await paymentIntent(other, catalog.assetNetworkId);
    expect((await allocate(url, h, { ...base, paymentIntentId: foreignPi })).status).toBe(404);
    expect((await allocate(url, h, { ...base, walletId: other.walletId, paymentIntentId: await paymentIntent(integ, catalog.assetNetworkId) })).status).toBe(
      404,
    );
    expect((await allocate(other.applicationId, h, { ...base, paymentIntentId: foreignPi })).status).toBe(404);

    // An asset-network of another network than the wallet's: 400. One that is not the payment intent's: 400.
    const second = await setupSandboxCatalog(app);
    const onOther = await paymentIntent(integ, second.assetNetworkId);
    const wrongNet = await allocate(url, h, { walletId: integ.walletId, assetNetworkId: second.assetNetworkId, paymentIntentId: onOther });
    expect([wrongNet.status, wrongNet.body.errors?.[0]?.field]).toEqual([400, 'assetNetworkId']);
    const notItsAsset = await allocate(url, h, { ...base, paymentIntentId: onOther });
    expect([notItsAsset.status, notItsAsset.body.errors?.[0]?.field]).toEqual([400, 'assetNetworkId']);

    // Paused and disabled asset-networks allocate nothing.
    const third = await setupSandboxCatalog(app);
    const w3 = await app.rest('POST', `/v1/applications/${url}/wallets`, { headers: h, body: { networkId: third.networkId, custodyMode: 'CUSTODIAL' } });
    const pi3 = await paymentIntent(integ, third.assetNetworkId);
    const b3 = { walletId: walletIdOf(w3), assetNetworkId: third.assetNetworkId, paymentIntentId: pi3 };
    await app.rest('POST', `/v1/platform/asset-networks/${third.assetNetworkId}/pause`, { headers: third.operator.headers, body: { reason: 'r' } });
    expect((await allocate(url, h, b3)).status).toBe(409);
    await app.rest('POST', `/v1/platform/asset-networks/${third.assetNetworkId}/disable`, { headers: third.operator.headers });
    expect((await allocate(url, h, b3)).status).toBe(409);
    await app.rest('POST', `/v1/platform/asset-networks/${third.assetNetworkId}/enable`, { headers: third.operator.headers });
    const ok = await allocate(url, h, b3);
    expect([ok.status, ok.body.derivationIndex]).toEqual([200, 0]);
    // The payment intent has its address: asking with another wallet is a conflict, not a second address.
    const conflict = await allocate(url, h, { ...b3, walletId: integ.walletId });
    expect(conflict.status).toBe(409);

    expect(await app.deps.db.depositAddress.count({ where: { paymentIntentId: { in: [processing, onOther, foreignPi] } } })).toBe(0);
    expect(await app.deps.db.webhookEvent.count({ where: { aggregateId: { in: [processing, onOther, foreignPi] } } })).toBe(0);
  });

  test('a production key cannot reach a sandbox payment intent (another environment): 404', async () => {
    const prod = await createApiKey(app, integ.member, 'PRODUCTION');
    const pi = await paymentIntent(integ, catalog.assetNetworkId);
    expect(
      (await allocate(prod.applicationId, prod.headers, { walletId: integ.walletId, assetNetworkId: catalog.assetNetworkId, paymentIntentId: pi })).status,
    ).toBe(404);
  });

  test('concurrent allocations: distinct indexes on one wallet, one address per payment intent', async () => {
    const w = await app.rest('POST', `/v1/applications/${integ.applicationId}/wallets`, {
      headers: integ.apiKeyHeaders,
      body: { networkId: catalog.networkId, custodyMode: 'CUSTODIAL' },
    });
    const walletId = walletIdOf(w);
    const pis = await Promise.all(Array.from({ length: 6 }, () => paymentIntent(integ, catalog.assetNetworkId)));
    const answers = await Promise.all(
      [...pis, pis[0]!, pis[0]!].map((paymentIntentId) =>
        allocate(integ.applicationId, integ.apiKeyHeaders, { walletId, assetNetworkId: catalog.assetNetworkId, paymentIntentId }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    const indexes = answers
      .slice(0, 6)
      .map((a) => a.body.derivationIndex)
      .sort();
    expect(indexes).toEqual([0, 1, 2, 3, 4, 5]);
    expect(new Set(answers.map((a) => a.body.address)).size).toBe(6);
    expect(answers[6]!.body).toEqual(answers[0]!.body);
    expect(await app.deps.db.webhookEvent.count({ where: { aggregateId: pis[0]!, eventType: 'deposit.address_generated' } })).toBe(1);
  });

  test('an address is never handed out twice on a network: the database refuses it', async () => {
    const existing = await app.deps.db.depositAddress.findFirstOrThrow({ where: { networkId: catalog.networkId } });
    await expect(
      app.deps.db.depositAddress.create({
        data: {
          organizationId: existing.organizationId,
          applicationId: existing.applicationId,
          walletId: existing.walletId,
          networkId: existing.networkId,
          assetNetworkId: existing.assetNetworkId,
          address: existing.address,
          derivationIndex: 9999,
          publicKey: existing.publicKey,
        },
      }),
    ).rejects.toMatchObject({ code: 'P2002' });
  });

  test('GraphQL, and allocateAddressInTx for domain code (same transaction as the caller)', async () => {
    const pi = await paymentIntent(integ, catalog.assetNetworkId);
    const g = await app.gql<{ allocateDepositAddress: { address: string; derivationIndex: number; paymentIntentId: string } }>(
      'mutation($a: ID!, $i: AllocateDepositAddressInput!) { allocateDepositAddress(applicationId: $a, input: $i) { ' +
        'address derivationIndex paymentIntentId } }',
      { a: integ.applicationId, i: { walletId: integ.walletId, assetNetworkId: catalog.assetNetworkId, paymentIntentId: pi } },
      integ.apiKeyHeaders,
    );
    expect(g.errors).toBeUndefined();
    expect(g.data!.allocateDepositAddress.paymentIntentId).toBe(pi);

    const pi2 = await paymentIntent(integ, catalog.assetNetworkId);
    const args = {
      organizationId: integ.organizationId,
      applicationId: integ.applicationId,
      walletId: integ.walletId,
      assetNetworkId: catalog.assetNetworkId,
      paymentIntentId: pi2,
    };
    // A rollback of the caller's transaction leaves no address, no event, no index used.
    const before = (await app.deps.db.wallet.findUniqueOrThrow({ where: { id: integ.walletId } })).nextAddressIndex;
    await expect(
      app.deps.db.$transaction(async (tx) => {
        await allocateAddressInTx(tx, app.deps, args);
        throw new Error('caller fails');
      }),
    ).rejects.toThrow('caller fails');
    expect(await app.deps.db.depositAddress.count({ where: { paymentIntentId: pi2 } })).toBe(0);
    expect(await app.deps.db.webhookEvent.count({ where: { aggregateId: pi2 } })).toBe(0);
    expect((await app.deps.db.wallet.findUniqueOrThrow({ where: { id: integ.walletId } })).nextAddressIndex).toBe(before);
    const a = await app.deps.db.$transaction((tx) => allocateAddressInTx(tx, app.deps, args));
    expect(a).toMatchObject({ paymentIntentId: pi2, derivationIndex: before, walletId: integ.walletId });
  });
});
