import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { bearer, createApiKey, createOperator, createTestApp, PASSWORD, signUpMember, uniqueEmail, type TestApp } from '../../test/harness';

let app: TestApp;
let op: Record<string, string>;
let member: Awaited<ReturnType<typeof signUpMember>>;
let key: Record<string, string>;
let holder: Record<string, string>;
let n = 0;
const code = () => `CAT${process.pid % 1000}${++n}`;

beforeAll(async () => {
  app = await createTestApp();
  op = (await createOperator(app)).headers;
  member = await signUpMember(app);
  key = (await createApiKey(app, member)).headers;
  const h = await app.rest('POST', '/v1/account-holders/signup', { body: { email: uniqueEmail('holder'), password: PASSWORD, name: 'Holder' } });
  holder = bearer(h.body.accessToken);
});
afterAll(() => app.close());

async function asset(body: Record<string, unknown> = {}) {
  const r = await app.rest('POST', '/v1/platform/assets', { headers: op, body: { code: code(), name: 'Test coin', decimals: 6, ...body } });
  expect(r.status, r.text).toBe(201);
  return r;
}
async function network(body: Record<string, unknown> = {}) {
  const r = await app.rest('POST', '/v1/platform/networks', {
    headers: op,
    body: { name: `Net ${code()}`, kind: 'SANDBOX', environmentType: 'SANDBOX', blockTimeSeconds: 5, requiredConfirmations: 2, ...body },
  });
  expect(r.status, r.text).toBe(201);
  return r.body.id as string;
}
async function assetNetwork(body: Record<string, unknown> = {}) {
  const assetId = (await asset()).body.id as string;
  const networkId = await network();
  const r = await app.rest('POST', '/v1/platform/asset-networks', { headers: op, body: { assetId, networkId, decimals: 6, minimumDeposit: '1000', ...body } });
  expect(r.status, r.text).toBe(201);
  return { id: r.body.id as string, assetId, networkId };
}
const auditOf = (entityId: string) => app.deps.db.auditLogEntry.findMany({ where: { entityId }, orderBy: { id: 'asc' } });

describe('assets', () => {
  test('an operator creates one: 201, {id}, Location; every principal reads it', async () => {
    const c = code();
    const r = await app.rest('POST', '/v1/platform/assets', { headers: op, body: { code: c, name: 'USD Coin', decimals: 6 } });
    expect(r.status).toBe(201);
    expect(Object.keys(r.body)).toEqual(['id']);
    expect(r.headers.get('location')).toBe(`/v1/assets/${r.body.id}`);
    for (const headers of [op, member.headers, key, holder]) {
      const g = await app.rest('GET', `/v1/assets/${r.body.id}`, { headers });
      expect(g.status).toBe(200);
      expect(g.body).toEqual({ id: r.body.id, code: c, name: 'USD Coin', decimals: 6, createdAt: app.clock.now().toISOString() });
    }
    const list = await app.rest('GET', '/v1/assets', { headers: key });
    expect(list.status).toBe(200);
    expect(list.body.map((a: { id: string }) => a.id)).toContain(r.body.id);
    const [entry] = await auditOf(r.body.id);
    expect(entry).toMatchObject({ action: 'asset.created', actorType: 'OPERATOR', organizationId: null, after: { code: c, name: 'USD Coin', decimals: 6 } });
    expect((await app.rest('GET', `/v1/assets/${r.body.id}`)).status).toBe(401);
  });

  test('only operators create; duplicates 409; bad input 400 with field errors and nothing created', async () => {
    const body = { code: code(), name: 'X', decimals: 2 };
    expect((await app.rest('POST', '/v1/platform/assets', { headers: member.headers, body })).body.code).toBe('PRINCIPAL_NOT_ALLOWED');
    expect((await app.rest('POST', '/v1/platform/assets', { headers: key, body })).status).toBe(403);
    expect((await app.rest('POST', '/v1/platform/assets', { headers: op, body })).status).toBe(201);
    const dup = await app.rest('POST', '/v1/platform/assets', { headers: op, body });
    expect([dup.status, dup.body.code]).toEqual([409, 'CONFLICT']);
    const before = await app.deps.db.asset.count();
    const bad = await app.rest('POST', '/v1/platform/assets', { headers: op, body: { code: 'lower case', name: '', decimals: 40 } });
    expect(bad.status).toBe(400);
    expect(bad.body.errors.map((e: { field: string }) => e.field).sort()).toEqual(['code', 'decimals', 'name']);
    const extra = await app.rest('POST', '/v1/platform/assets', { headers: op, body: { ...body, code: code(), color: 'blue' } });
    expect(extra.status).toBe(400);
    expect(await app.deps.db.asset.count()).toBe(before);
  });

  test('unknown or malformed ids: 404', async () => {
    expect((await app.rest('GET', `/v1/assets/${crypto.randomUUID()}`, { headers: key })).status).toBe(404);
    expect((await app.rest('GET', '/v1/assets/nope', { headers: key })).status).toBe(404);
  });
});

describe('networks', () => {
  test('create and read; a SANDBOX kind serves SANDBOX environments only; names are unique', async () => {
    const name = `Chain ${code()}`;
    const r = await app.rest('POST', '/v1/platform/networks', {
      headers: op,
      body: { name, kind: 'EVM', environmentType: 'PRODUCTION', blockTimeSeconds: 12, requiredConfirmations: 12 },
    });
    expect(r.status).toBe(201);
    expect(r.headers.get('location')).toBe(`/v1/networks/${r.body.id}`);
    const g = await app.rest('GET', `/v1/networks/${r.body.id}`, { headers: holder });
    expect(g.body).toMatchObject({ name, kind: 'EVM', environmentType: 'PRODUCTION', blockTimeSeconds: 12, requiredConfirmations: 12 });
    const dup = await app.rest('POST', '/v1/platform/networks', {
      headers: op,
      body: { name, kind: 'EVM', environmentType: 'PRODUCTION', blockTimeSeconds: 12, requiredConfirmations: 1 },
    });
    expect(dup.status).toBe(409);
    const wrong = await app.rest('POST', '/v1/platform/networks', {
      headers: op,
      body: { name: `x ${code()}`, kind: 'SANDBOX', environmentType: 'PRODUCTION', blockTimeSeconds: 1, requiredConfirmations: 1 },
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.errors).toEqual([{ field: 'environmentType', message: expect.stringContaining('SANDBOX'), code: expect.any(String) }]);
    const kind = await app.rest('POST', '/v1/platform/networks', {
      headers: op,
      body: { name: 'y', kind: 'BITCOINISH', environmentType: 'SANDBOX', blockTimeSeconds: 1, requiredConfirmations: 1 },
    });
    expect(kind.status).toBe(400);
    expect((await app.rest('GET', '/v1/networks', { headers: member.headers })).body.some((x: { id: string }) => x.id === r.body.id)).toBe(true);
    expect((await app.rest('GET', `/v1/networks/${crypto.randomUUID()}`, { headers: member.headers })).status).toBe(404);
  });
});

describe('asset-networks', () => {
  test('created DISABLED with its fields; references must exist; one per asset and network', async () => {
    const assetId = (await asset()).body.id as string;
    const networkId = await network();
    const unknown = await app.rest('POST', '/v1/platform/asset-networks', { headers: op, body: { assetId: crypto.randomUUID(), networkId, decimals: 6 } });
    expect([unknown.status, unknown.body.errors?.[0]?.field]).toEqual([400, 'assetId']);
    const badMin = await app.rest('POST', '/v1/platform/asset-networks', { headers: op, body: { assetId, networkId, decimals: 6, minimumDeposit: '1.5' } });
    expect([badMin.status, badMin.body.errors?.[0]?.field]).toEqual([400, 'minimumDeposit']);
    const huge = '1' + '0'.repeat(70);
    const r = await app.rest('POST', '/v1/platform/asset-networks', {
      headers: op,
      body: { assetId, networkId, decimals: 18, contractReference: '0xToken', minimumDeposit: huge },
    });
    expect(r.status).toBe(201);
    expect(r.headers.get('location')).toBe(`/v1/asset-networks/${r.body.id}`);
    const g = await app.rest('GET', `/v1/asset-networks/${r.body.id}`, { headers: key });
    expect(g.body).toMatchObject({
      assetId,
      networkId,
      decimals: 18,
      contractReference: '0xToken',
      minimumDeposit: huge,
      status: 'DISABLED',
      statusReason: null,
    });
    const dup = await app.rest('POST', '/v1/platform/asset-networks', { headers: op, body: { assetId, networkId, decimals: 6 } });
    expect(dup.status).toBe(409);
    const dflt = await assetNetwork({ minimumDeposit: undefined, contractReference: undefined });
    expect((await app.rest('GET', `/v1/asset-networks/${dflt.id}`, { headers: key })).body).toMatchObject({ minimumDeposit: '0', contractReference: null });
  });

  test('enable, pause (reason) and disable: 204, idempotent, pausing a disabled one 409, audited', async () => {
    const { id } = await assetNetwork();
    const post = (move: string, body?: unknown) => app.rest('POST', `/v1/platform/asset-networks/${id}/${move}`, { headers: op, ...(body ? { body } : {}) });
    const status = async () => (await app.rest('GET', `/v1/asset-networks/${id}`, { headers: key })).body;

    const refused = await post('pause', { reason: 'maintenance' });
    expect([refused.status, refused.body.code]).toEqual([409, 'INVALID_STATE']);
    expect((await status()).status).toBe('DISABLED');

    expect((await post('enable')).status).toBe(204);
    expect((await status()).status).toBe('ENABLED');
    expect((await post('enable')).status).toBe(204);

    expect((await post('pause')).status).toBe(400);
    expect((await post('pause', { reason: '  ' })).status).toBe(400);
    expect((await status()).status).toBe('ENABLED');
    const p = await post('pause', { reason: 'node upgrade' });
    expect([p.status, p.text]).toEqual([204, '']);
    expect(await status()).toMatchObject({ status: 'PAUSED', statusReason: 'node upgrade' });
    expect((await post('pause', { reason: 'again' })).status).toBe(204);
    expect((await status()).statusReason).toBe('node upgrade');

    expect((await post('disable')).status).toBe(204);
    expect(await status()).toMatchObject({ status: 'DISABLED', statusReason: null });
    expect((await post('disable')).status).toBe(204);
    expect((await post('enable')).status).toBe(204);

    const actions = (await auditOf(id)).map((e) => [
      e.action,
      (e.before as { status?: string } | null)?.status ?? null,
      (e.after as { status: string }).status,
    ]);
    expect(actions).toEqual([
      ['asset_network.created', null, 'DISABLED'],
      ['asset_network.enabled', 'DISABLED', 'ENABLED'],
      ['asset_network.paused', 'ENABLED', 'PAUSED'],
      ['asset_network.disabled', 'PAUSED', 'DISABLED'],
      ['asset_network.enabled', 'DISABLED', 'ENABLED'],
    ]);
  });

  test('status moves: operators only; unknown ids 404', async () => {
    const { id } = await assetNetwork();
    expect((await app.rest('POST', `/v1/platform/asset-networks/${id}/enable`, { headers: member.headers })).status).toBe(403);
    expect((await app.rest('POST', `/v1/platform/asset-networks/${id}/enable`, { headers: key })).status).toBe(403);
    expect((await app.rest('POST', `/v1/platform/asset-networks/${crypto.randomUUID()}/enable`, { headers: op })).status).toBe(404);
    expect((await app.rest('POST', `/v1/platform/asset-networks/${crypto.randomUUID()}/pause`, { headers: op, body: { reason: 'x' } })).status).toBe(404);
  });

  test('GET /v1/asset-networks?status= filters; an unknown status is 400', async () => {
    const enabled = await assetNetwork();
    const paused = await assetNetwork();
    const disabled = await assetNetwork();
    await app.rest('POST', `/v1/platform/asset-networks/${enabled.id}/enable`, { headers: op });
    await app.rest('POST', `/v1/platform/asset-networks/${paused.id}/enable`, { headers: op });
    await app.rest('POST', `/v1/platform/asset-networks/${paused.id}/pause`, { headers: op, body: { reason: 'r' } });
    const ids = async (q: string) => (await app.rest('GET', `/v1/asset-networks${q}`, { headers: holder })).body.map((a: { id: string; status: string }) => a);
    const byStatus = async (s: string) => {
      const rows = await ids(`?status=${s}`);
      expect(rows.every((r: { status: string }) => r.status === s)).toBe(true);
      return rows.map((r: { id: string }) => r.id);
    };
    expect(await byStatus('ENABLED')).toContain(enabled.id);
    expect(await byStatus('ENABLED')).not.toContain(paused.id);
    expect(await byStatus('PAUSED')).toEqual(expect.arrayContaining([paused.id]));
    expect(await byStatus('DISABLED')).toContain(disabled.id);
    const all = (await ids('')).map((r: { id: string }) => r.id);
    expect(all).toEqual(expect.arrayContaining([enabled.id, paused.id, disabled.id]));
    const bad = await app.rest('GET', '/v1/asset-networks?status=BROKEN', { headers: key });
    expect([bad.status, bad.body.code]).toEqual([400, 'VALIDATION_FAILED']);
  });
});

describe('GraphQL', () => {
  test('queries with nested asset and network; operator mutations; others refused', async () => {
    const an = await assetNetwork();
    const q = await app.gql<{ assetNetworks: { id: string; asset: { id: string }; network: { id: string; kind: string } }[] }>(
      'query($s: AssetNetworkStatus) { assetNetworks(status: $s) { id asset { id } network { id kind } } }',
      { s: 'DISABLED' },
      key,
    );
    expect(q.errors).toBeUndefined();
    expect(q.data!.assetNetworks.find((x) => x.id === an.id)).toEqual({ id: an.id, asset: { id: an.assetId }, network: { id: an.networkId, kind: 'SANDBOX' } });

    const c = code();
    const created = await app.gql<{ createAsset: { code: string; decimals: number } }>(
      'mutation($i: CreateAssetInput!) { createAsset(input: $i) { code decimals } }',
      { i: { code: c, name: 'Gql coin', decimals: 8 } },
      op,
    );
    expect(created.data?.createAsset).toEqual({ code: c, decimals: 8 });
    const denied = await app.gql(
      'mutation($i: CreateAssetInput!) { createAsset(input: $i) { id } }',
      { i: { code: code(), name: 'x', decimals: 1 } },
      member.headers,
    );
    expect(denied.errors?.[0]?.extensions?.code).toBe('PRINCIPAL_NOT_ALLOWED');

    const paused = await app.gql<{ enableAssetNetwork: { status: string } }>(
      'mutation($id: ID!) { enableAssetNetwork(id: $id) { status } }',
      { id: an.id },
      op,
    );
    expect(paused.data?.enableAssetNetwork.status).toBe('ENABLED');
    const p = await app.gql<{ pauseAssetNetwork: { status: string; statusReason: string } }>(
      'mutation($id: ID!) { pauseAssetNetwork(id: $id, input: { reason: "audit" }) { status statusReason } }',
      { id: an.id },
      op,
    );
    expect(p.data?.pauseAssetNetwork).toEqual({ status: 'PAUSED', statusReason: 'audit' });
  });
});
