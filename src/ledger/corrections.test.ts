import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { randomBytes } from 'node:crypto';
import { createOperator, createTestApp, type TestApp } from '../../test/harness';
import { moneyFixture } from '../../test/fixtures/deposits/testing';

/** Issue 26, point 6: a ledger correction never credits an account of one mode in an asset-network of the other environment. */
let app: TestApp;
let op: Record<string, string>;
beforeAll(async () => {
  app = await createTestApp();
  op = (await createOperator(app)).headers;
});
afterAll(() => app.close());

async function productionAssetNetwork(): Promise<string> {
  const tag = randomBytes(4).toString('hex').toUpperCase();
  const asset = await app.rest('POST', '/v1/platform/assets', { headers: op, body: { code: `PRD${tag}`, name: `Prod ${tag}`, decimals: 6 } });
  const network = await app.rest('POST', '/v1/platform/networks', {
    headers: op,
    body: { name: `Mainnet ${tag}`, kind: 'EVM', environmentType: 'PRODUCTION', blockTimeSeconds: 12, requiredConfirmations: 12 },
  });
  expect([asset.status, network.status], network.text).toEqual([201, 201]);
  const idOf = (r: { headers: Headers }) => r.headers.get('location')!.split('/').pop()!;
  const an = await app.rest('POST', '/v1/platform/asset-networks', {
    headers: op,
    body: { assetId: idOf(asset), networkId: idOf(network), decimals: 6, contractReference: '0x' + 'a'.repeat(40), minimumDeposit: '0' },
  });
  expect(an.status, an.text).toBe(201);
  return idOf(an);
}

describe('ledger corrections and environments', () => {
  test('a sandbox account in a production asset-network: 400 on the line, nothing posted; in its own environment: 201', async () => {
    const f = await moneyFixture(app);
    const production = await productionAssetNetwork();
    const correction = (assetNetworkId: string) =>
      app.rest('POST', '/v1/admin/ledger-corrections', {
        headers: op,
        body: {
          reason: 'mode check',
          organizationId: f.organizationId,
          lines: [
            { account: { kind: 'SUSPENSE', assetNetworkId }, direction: 'DEBIT', amount: '100' },
            { account: { kind: 'CUSTOMER', ownerId: f.beneficiaryAccountId, assetNetworkId }, direction: 'CREDIT', amount: '100' },
          ],
        },
      });
    const r = await correction(production);
    expect(r.status, r.text).toBe(400);
    expect(r.body.errors).toEqual([
      { field: 'lines.1.account.assetNetworkId', message: expect.stringMatching(/PRODUCTION asset-network: a SANDBOX account/), code: 'custom' },
    ]);
    expect(await app.deps.db.ledgerCorrection.count({ where: { reason: 'mode check' } })).toBe(0);
    const balances = await app.rest('GET', `/v1/accounts/${f.beneficiaryAccountId}/balances`, { headers: f.apiKeyHeaders });
    expect(JSON.stringify(balances.body)).not.toContain(production);
    expect((await correction(f.catalog.assetNetworkId)).status).toBe(201);
  });
});
