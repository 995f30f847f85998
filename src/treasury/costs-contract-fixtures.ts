import { contractCaseHelpers, type ContractCase } from '../../test/contract-case';
import type { TestApp } from '../../test/harness';
import { createApiKey, signUpMember } from '../../test/harness';
import { setupSandboxCatalog } from '../../test/money-helpers';

/**
 * Contract fixtures (test/contract.test.ts) of the network cost and resource reserve routes
 * (docs/network-costs.md). Each case builds its own sandbox (or TRON) catalog through REST.
 */
export function networkCostContractFixtures(getApp: () => TestApp): Record<string, ContractCase[]> {
  const app = () => getApp();
  const { success, failure, operator, random, ok } = contractCaseHelpers(getApp);

  let seq = 0;
  async function tronNetwork(headers: Record<string, string>) {
    const tag = `${process.pid}${++seq}${Date.now() % 100000}`;
    const r = await ok(
      app().rest('POST', '/v1/platform/networks', { headers, body: { name: `Tron contract ${tag}`, kind: 'TRON', environmentType: 'PRODUCTION', blockTimeSeconds: 3, requiredConfirmations: 19 } }),
      201, 'tron network',
    );
    return r.headers.get('location')!.split('/').pop()!;
  }
  async function seeded() {
    const catalog = await setupSandboxCatalog(app());
    await ok(app().rest('POST', '/v1/admin/network-resource-reserve/seed', { headers: catalog.operator.headers, body: { assetNetworkId: catalog.assetNetworkId, amount: '5000' } }), 200, 'seed');
    return catalog;
  }

  return {
    GetNetworkExecutionQuote: [
      success('sandbox withdrawal, API key of the environment', async () => {
        const catalog = await setupSandboxCatalog(app());
        const key = await createApiKey(app(), await signUpMember(app()), 'SANDBOX');
        return { variables: { environmentId: key.environmentId, input: { assetNetworkId: catalog.assetNetworkId, operation: 'WITHDRAWAL', amount: '1000' } }, headers: key.headers };
      }),
      failure('another environment', 'NOT_FOUND', async () => {
        const catalog = await setupSandboxCatalog(app());
        const m = await signUpMember(app());
        const [key, other] = [await createApiKey(app(), m, 'SANDBOX'), await createApiKey(app(), m, 'SANDBOX')];
        return { variables: { environmentId: key.environmentId, input: { assetNetworkId: catalog.assetNetworkId, operation: 'WITHDRAWAL', amount: '1000' } }, headers: other.headers };
      }),
      failure('zero amount', 'VALIDATION_FAILED', async () => {
        const catalog = await setupSandboxCatalog(app());
        const key = await createApiKey(app(), await signUpMember(app()), 'SANDBOX');
        return { variables: { environmentId: key.environmentId, input: { assetNetworkId: catalog.assetNetworkId, operation: 'SWEEP', amount: '0' } }, headers: key.headers };
      }),
    ],
    AdminConfigureTronResourceCostTable: [
      success('a TRON network', async () => {
        const headers = await operator();
        return { variables: { input: { networkId: await tronNetwork(headers), energyPrice: '210', bandwidthPrice: '1000' } }, headers };
      }),
      failure('a sandbox network', 'VALIDATION_FAILED', async () => {
        const catalog = await setupSandboxCatalog(app());
        return { variables: { input: { networkId: catalog.networkId, energyPrice: '1', bandwidthPrice: '1' } }, headers: catalog.operator.headers };
      }),
      failure('member', 'PRINCIPAL_NOT_ALLOWED', async () => ({
        variables: { input: { networkId: random(), energyPrice: '1', bandwidthPrice: '1' } }, headers: (await signUpMember(app())).headers,
      })),
    ],
    AdminConfigureNetworkExecutionMarginPolicy: [
      success('one asset-network, percentage and fixed', async () => {
        const catalog = await setupSandboxCatalog(app());
        return { variables: { input: { assetNetworkId: catalog.assetNetworkId, percentage: '12.5', fixedAmount: '100' } }, headers: catalog.operator.headers };
      }),
      failure('a fixed amount for every asset-network', 'VALIDATION_FAILED', async () => ({ variables: { input: { fixedAmount: '10' } }, headers: await operator() })),
    ],
    AdminSeedNetworkResourceReserve: [
      success('a sandbox network', async () => {
        const catalog = await setupSandboxCatalog(app());
        return { variables: { input: { assetNetworkId: catalog.assetNetworkId, amount: '250000' } }, headers: catalog.operator.headers };
      }),
      failure('unknown asset-network', 'VALIDATION_FAILED', async () => ({ variables: { input: { assetNetworkId: random(), amount: '1' } }, headers: await operator() })),
      failure('API key', 'PRINCIPAL_NOT_ALLOWED', async () => {
        const key = await createApiKey(app(), await signUpMember(app()), 'SANDBOX');
        return { variables: { input: { assetNetworkId: random(), amount: '1' } }, headers: key.headers };
      }),
    ],
    AdminGetNetworkResourceReserveBalance: [
      success('a seeded reserve', async () => {
        const catalog = await seeded();
        return { variables: { assetNetworkId: catalog.assetNetworkId }, headers: catalog.operator.headers };
      }),
      failure('unknown asset-network', 'NOT_FOUND', async () => ({ variables: { assetNetworkId: random() }, headers: await operator() })),
      failure('member', 'PRINCIPAL_NOT_ALLOWED', async () => ({ variables: { assetNetworkId: random() }, headers: (await signUpMember(app())).headers })),
    ],
    AdminConfigureResourceReservePolicy: [
      success('threshold and target', async () => {
        const catalog = await seeded();
        return { variables: { input: { assetNetworkId: catalog.assetNetworkId, lowThreshold: '1000', targetBalance: '10000' } }, headers: catalog.operator.headers };
      }),
      failure('target below threshold', 'VALIDATION_FAILED', async () => {
        const catalog = await seeded();
        return { variables: { input: { assetNetworkId: catalog.assetNetworkId, lowThreshold: '1000', targetBalance: '10' } }, headers: catalog.operator.headers };
      }),
    ],
    AdminConfigureReplenishmentRoute: [
      success('sandbox faucet', async () => {
        const catalog = await seeded();
        return { variables: { input: { assetNetworkId: catalog.assetNetworkId, source: 'SANDBOX_FAUCET', maxTopUpAmount: '100000' } }, headers: catalog.operator.headers };
      }),
      failure('faucet with an address', 'VALIDATION_FAILED', async () => {
        const catalog = await seeded();
        return { variables: { input: { assetNetworkId: catalog.assetNetworkId, source: 'SANDBOX_FAUCET', address: '0x' + 'ab'.repeat(20) } }, headers: catalog.operator.headers };
      }),
    ],
  };
}
