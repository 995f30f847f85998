import { contractCaseHelpers, type ContractCase } from '../../test/contract-case';
import type { TestApp } from '../../test/harness';
import { createApiKey, signUpMember } from '../../test/harness';
import { moneyFixture } from '../deposits/testing';
import { fundedTransaction } from '../settlements/testing';

/**
 * Contract fixtures (test/contract.test.ts) of the treasury routes (docs/treasury.md): every
 * success case runs as a platform operator; data is created through the public REST surface.
 */
export function treasuryContractFixtures(getApp: () => TestApp): Record<string, ContractCase[]> {
  const app = () => getApp();
  const { success, failure, operator, random, ok } = contractCaseHelpers(getApp);
  const idOf = (r: { headers: Headers }) => r.headers.get('location')!.split('/').pop()!;

  async function controlled(headers: Record<string, string>, assetNetworkId: string, tier: 'HOT' | 'WARM' | 'COLD' = 'HOT') {
    const r = await ok(
      app().rest('POST', '/v1/admin/treasury/controlled-addresses', { headers, body: { assetNetworkIds: [assetNetworkId], tier, control: 'GENERATED', label: `${tier} contract` } }),
      201,
      'controlled address',
    );
    return idOf(r);
  }

  /** A funded deposit address and a HOT controlled address of its asset-network. */
  async function sweepable() {
    const headers = await operator();
    const { f, intent } = await fundedTransaction(app(), 1_000n);
    const hot = await controlled(headers, f.catalog.assetNetworkId);
    const from = await app().deps.db.depositAddress.findFirstOrThrow({ where: { address: intent.address }, select: { id: true } });
    return { headers, assetNetworkId: f.catalog.assetNetworkId, fromDepositAddressId: from.id, toControlledAddressId: hot };
  }

  async function swept() {
    const s = await sweepable();
    const r = await ok(
      app().rest('POST', '/v1/admin/treasury/sweeps', {
        headers: s.headers, body: { assetNetworkId: s.assetNetworkId, fromDepositAddressId: s.fromDepositAddressId, toControlledAddressId: s.toControlledAddressId, amount: '400' },
      }),
      201,
      'sweep',
    );
    return { ...s, sweepId: idOf(r) };
  }

  return {
    GetTreasuryOverview: [
      success('operator', async () => {
        await sweepable();
        return { variables: {}, headers: await operator() };
      }),
      failure('member', 'PRINCIPAL_NOT_ALLOWED', async () => ({ variables: {}, headers: (await signUpMember(app())).headers })),
    ],
    GetTreasuryControlledAddresses: [
      success('all, with balances', async () => {
        const s = await swept();
        return { variables: { assetNetworkId: s.assetNetworkId }, headers: s.headers };
      }),
      success('active only', async () => {
        const headers = await operator();
        const f = await moneyFixture(app());
        const id = await controlled(headers, f.catalog.assetNetworkId, 'WARM');
        await controlled(headers, f.catalog.assetNetworkId, 'COLD');
        await ok(app().rest('POST', `/v1/admin/treasury/controlled-addresses/${id}/deactivate`, { headers }), 204, 'deactivate');
        return { variables: { assetNetworkId: f.catalog.assetNetworkId, activeOnly: true }, headers };
      }),
      failure('unknown asset-network', 'NOT_FOUND', async () => ({ variables: { assetNetworkId: random() }, headers: await operator() })),
    ],
    AdminGetControlledAddress: [
      success('a GENERATED address', async () => {
        const headers = await operator();
        const f = await moneyFixture(app());
        return { variables: { id: await controlled(headers, f.catalog.assetNetworkId) }, headers };
      }),
      failure('unknown', 'NOT_FOUND', async () => ({ variables: { id: random() }, headers: await operator() })),
    ],
    AdminRegisterControlledAddress: [
      success('GENERATED HOT', async () => {
        const f = await moneyFixture(app());
        return { variables: { input: { assetNetworkIds: [f.catalog.assetNetworkId], tier: 'HOT', control: 'GENERATED', label: 'Hot' } }, headers: await operator() };
      }),
      failure('WATCH_ONLY with a malformed address', 'VALIDATION_FAILED', async () => {
        const f = await moneyFixture(app());
        return {
          variables: { input: { assetNetworkIds: [f.catalog.assetNetworkId], tier: 'COLD', control: 'WATCH_ONLY', label: 'Vault', address: '0xnope' } },
          headers: await operator(),
        };
      }),
      failure('API key', 'PRINCIPAL_NOT_ALLOWED', async () => {
        const m = await signUpMember(app());
        return { variables: { input: { assetNetworkIds: [random()], tier: 'HOT', control: 'GENERATED', label: 'x' } }, headers: (await createApiKey(app(), m)).headers };
      }),
    ],
    AdminDeactivateControlledAddress: [
      success('an active address', async () => {
        const headers = await operator();
        const f = await moneyFixture(app());
        return { variables: { id: await controlled(headers, f.catalog.assetNetworkId) }, headers };
      }),
      failure('unknown', 'NOT_FOUND', async () => ({ variables: { id: random() }, headers: await operator() })),
    ],
    AdminConfigureTreasuryLiquidityPolicy: [
      success('HOT and WARM targets', async () => {
        const f = await moneyFixture(app());
        return {
          variables: {
            input: {
              assetNetworkId: f.catalog.assetNetworkId,
              tiers: [
                { tier: 'HOT', min: '1000', target: '2000', max: '3000' },
                { tier: 'WARM', min: '0', target: '5000' },
              ],
            },
          },
          headers: await operator(),
        };
      }),
      failure('min above target', 'VALIDATION_FAILED', async () => {
        const f = await moneyFixture(app());
        return { variables: { input: { assetNetworkId: f.catalog.assetNetworkId, tiers: [{ tier: 'HOT', min: '3', target: '2' }] } }, headers: await operator() };
      }),
      failure('unknown asset-network', 'NOT_FOUND', async () => ({
        variables: { input: { assetNetworkId: random(), tiers: [{ tier: 'HOT', min: '1', target: '2' }] } },
        headers: await operator(),
      })),
    ],
    GetTreasuryRebalancePlan: [
      success('HOT below its minimum, WARM above its target', async () => {
        const headers = await operator();
        const s = await swept();
        await controlled(headers, s.assetNetworkId, 'WARM');
        await ok(
          app().rest('POST', '/v1/admin/treasury/liquidity-policy', {
            headers, body: { assetNetworkId: s.assetNetworkId, tiers: [{ tier: 'HOT', min: '500', target: '600' }, { tier: 'WARM', min: '0', target: '0' }] },
          }),
          204,
          'policy',
        );
        return { variables: { assetNetworkId: s.assetNetworkId }, headers };
      }),
      success('no policy', async () => {
        const f = await moneyFixture(app());
        return { variables: { assetNetworkId: f.catalog.assetNetworkId }, headers: await operator() };
      }),
      failure('unknown asset-network', 'NOT_FOUND', async () => ({ variables: { assetNetworkId: random() }, headers: await operator() })),
    ],
    SearchTreasurySweeps: [
      success("one asset-network's sweeps", async () => {
        const s = await swept();
        return { variables: { assetNetworkId: s.assetNetworkId }, headers: s.headers };
      }),
      success('a page of one', async () => {
        await swept();
        return { variables: { skip: 0, take: 1 }, headers: await operator() };
      }),
      failure('take above 500', 'VALIDATION_FAILED', async () => ({ variables: { take: 501 }, headers: await operator() })),
    ],
    AdminGetTreasurySweep: [
      success('a sweep', async () => {
        const s = await swept();
        return { variables: { id: s.sweepId }, headers: s.headers };
      }),
      failure('unknown', 'NOT_FOUND', async () => ({ variables: { id: random() }, headers: await operator() })),
    ],
    AdminExecuteSandboxSweep: [
      success('a deposit address to HOT', async () => {
        const s = await sweepable();
        return {
          variables: { input: { assetNetworkId: s.assetNetworkId, fromDepositAddressId: s.fromDepositAddressId, toControlledAddressId: s.toControlledAddressId } },
          headers: s.headers,
        };
      }),
      failure('more than the address holds', 'INVALID_STATE', async () => {
        const s = await sweepable();
        return {
          variables: { input: { assetNetworkId: s.assetNetworkId, fromDepositAddressId: s.fromDepositAddressId, toControlledAddressId: s.toControlledAddressId, amount: '1001' } },
          headers: s.headers,
        };
      }),
      failure('unknown deposit address', 'NOT_FOUND', async () => {
        const s = await sweepable();
        return { variables: { input: { assetNetworkId: s.assetNetworkId, fromDepositAddressId: random(), toControlledAddressId: s.toControlledAddressId } }, headers: s.headers };
      }),
    ],
  };
}
