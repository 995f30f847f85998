import { createApiKey, signUpMember, type TestApp } from './harness';
import { contractCaseHelpers, type ContractCase } from './contract-case';
import { sandboxMine, sandboxSend, setupIntegrator, setupSandboxCatalog } from './money-helpers';
import { generateKeyPair } from '../src/chains/secp256k1';

/**
 * Contract fixtures (see test/contract.test.ts) of the catalog, custody and sandbox routes. The
 * generator runs each case's setup once for a query and twice for a mutation (REST on one, GraphQL
 * on the other); these setups build fresh catalog entries and integrators every time.
 */
export function chainContractFixtures(getApp: () => TestApp): Record<string, ContractCase[]> {
  const { success, failure, random, operator } = contractCaseHelpers(getApp);
  const tag = () => random().slice(0, 8).toUpperCase();
  const catalog = () => setupSandboxCatalog(getApp());
  const integrator = async () => {
    const c = await catalog();
    return { c, i: await setupIntegrator(getApp(), c) };
  };
  /** A disabled asset-network (asset and network new). */
  async function disabledAssetNetwork() {
    const app = getApp();
    const headers = await operator();
    const t = tag();
    const a = await app.rest('POST', '/v1/platform/assets', { headers, body: { code: `K${t}`, name: 'Contract coin', decimals: 6 } });
    const n = await app.rest('POST', '/v1/platform/networks', {
      headers,
      body: { name: `Contract ${t}`, kind: 'SANDBOX', environmentType: 'SANDBOX', blockTimeSeconds: 5, requiredConfirmations: 1 },
    });
    const an = await app.rest('POST', '/v1/platform/asset-networks', { headers, body: { assetId: a.body.id, networkId: n.body.id, decimals: 6 } });
    return { headers, id: an.body.id as string };
  }
  async function paymentIntent(who: { organizationId: string; applicationId: string; environmentId: string }, assetNetworkId: string) {
    const db = getApp().deps.db;
    const base = {
      organizationId: who.organizationId,
      applicationId: who.applicationId,
      environmentId: who.environmentId,
      environmentType: 'SANDBOX' as const,
      assetNetworkId,
      amount: '500',
    };
    const t = await db.transaction.create({ data: base });
    return (await db.paymentIntent.create({ data: { ...base, transactionId: t.id, expiresAt: new Date(getApp().clock.now().getTime() + 3600_000) } })).id;
  }
  const address = () => '0x' + random().replace(/-/g, '').padEnd(40, '0');

  return {
    // Catalog
    ListAssets: [
      success('assets of the catalog', async () => ({ variables: {}, headers: (await catalog()).operator.headers })),
      failure('no credential', 'UNAUTHENTICATED', async () => ({ variables: {}, headers: {} })),
    ],
    GetAsset: [
      success('by an API key', async () => {
        const { c, i } = await integrator();
        return { variables: { id: c.assetId }, headers: i.apiKeyHeaders };
      }),
      failure('unknown', 'NOT_FOUND', async () => ({ variables: { id: random() }, headers: await operator() })),
    ],
    ListNetworks: [
      success('networks of the catalog', async () => ({ variables: {}, headers: (await signUpMember(getApp())).headers })),
      failure('no credential', 'UNAUTHENTICATED', async () => ({ variables: {}, headers: {} })),
    ],
    GetNetwork: [
      success('a sandbox network', async () => {
        const c = await catalog();
        return { variables: { id: c.networkId }, headers: c.operator.headers };
      }),
      failure('unknown', 'NOT_FOUND', async () => ({ variables: { id: random() }, headers: await operator() })),
    ],
    ListAssetNetworks: [
      success('all', async () => ({ variables: {}, headers: (await catalog()).operator.headers })),
      success('ENABLED only', async () => ({ variables: { status: 'ENABLED' }, headers: (await catalog()).operator.headers })),
      failure('unknown status', 'VALIDATION_FAILED', async () => ({ variables: { status: 'BROKEN' }, headers: await operator() })),
    ],
    GetAssetNetwork: [
      success('an enabled one', async () => {
        const c = await catalog();
        return { variables: { id: c.assetNetworkId }, headers: c.operator.headers };
      }),
      failure('unknown', 'NOT_FOUND', async () => ({ variables: { id: random() }, headers: await operator() })),
    ],
    CreateAsset: [
      success('new code', async () => ({ variables: { input: { code: `C${tag()}`, name: 'Coin', decimals: 6 } }, headers: await operator() })),
      failure('code taken', 'CONFLICT', async () => {
        const headers = await operator();
        const code = `C${tag()}`;
        await getApp().rest('POST', '/v1/platform/assets', { headers, body: { code, name: 'Coin', decimals: 6 } });
        return { variables: { input: { code, name: 'Coin', decimals: 6 } }, headers };
      }),
      failure('a member', 'PRINCIPAL_NOT_ALLOWED', async () => ({
        variables: { input: { code: `C${tag()}`, name: 'Coin', decimals: 6 } },
        headers: (await signUpMember(getApp())).headers,
      })),
    ],
    CreateNetwork: [
      success('an EVM production network', async () => ({
        variables: { input: { name: `Chain ${tag()}`, kind: 'EVM', environmentType: 'PRODUCTION', blockTimeSeconds: 12, requiredConfirmations: 12 } },
        headers: await operator(),
      })),
      failure('a SANDBOX network for production', 'VALIDATION_FAILED', async () => ({
        variables: { input: { name: `Chain ${tag()}`, kind: 'SANDBOX', environmentType: 'PRODUCTION', blockTimeSeconds: 12, requiredConfirmations: 12 } },
        headers: await operator(),
      })),
    ],
    CreateAssetNetwork: [
      success('asset on a network', async () => {
        const headers = await operator();
        const a = await getApp().rest('POST', '/v1/platform/assets', { headers, body: { code: `C${tag()}`, name: 'Coin', decimals: 6 } });
        const n = await getApp().rest('POST', '/v1/platform/networks', {
          headers,
          body: { name: `Chain ${tag()}`, kind: 'SANDBOX', environmentType: 'SANDBOX', blockTimeSeconds: 5, requiredConfirmations: 2 },
        });
        return {
          variables: { input: { assetId: a.body.id, networkId: n.body.id, decimals: 6, minimumDeposit: '100', contractReference: '0xToken' } },
          headers,
        };
      }),
      failure('unknown asset', 'VALIDATION_FAILED', async () => {
        const c = await catalog();
        return { variables: { input: { assetId: random(), networkId: c.networkId, decimals: 6 } }, headers: c.operator.headers };
      }),
    ],
    EnableAssetNetwork: [
      success('disabled', async () => {
        const an = await disabledAssetNetwork();
        return { variables: { id: an.id }, headers: an.headers };
      }),
      failure('unknown', 'NOT_FOUND', async () => ({ variables: { id: random() }, headers: await operator() })),
    ],
    PauseAssetNetwork: [
      success('enabled', async () => {
        const c = await catalog();
        return { variables: { id: c.assetNetworkId, input: { reason: 'maintenance' } }, headers: c.operator.headers };
      }),
      failure('disabled', 'INVALID_STATE', async () => {
        const an = await disabledAssetNetwork();
        return { variables: { id: an.id, input: { reason: 'maintenance' } }, headers: an.headers };
      }),
      failure('no reason', 'VALIDATION_FAILED', async () => {
        const c = await catalog();
        return { variables: { id: c.assetNetworkId, input: { reason: '' } }, headers: c.operator.headers };
      }),
    ],
    DisableAssetNetwork: [
      success('enabled', async () => {
        const c = await catalog();
        return { variables: { id: c.assetNetworkId }, headers: c.operator.headers };
      }),
      failure('unknown', 'NOT_FOUND', async () => ({ variables: { id: random() }, headers: await operator() })),
    ],

    // Custody
    RegisterWallet: [
      success('custodial, by an API key', async () => {
        const { c, i } = await integrator();
        return { variables: { applicationId: i.applicationId, input: { networkId: c.networkId, custodyMode: 'CUSTODIAL' } }, headers: i.apiKeyHeaders };
      }),
      success('self-custody, by a member', async () => {
        const { c, i } = await integrator();
        const input = {
          networkId: c.networkId,
          custodyMode: 'SELF_CUSTODY',
          publicKey: generateKeyPair().publicKey,
          environmentId: i.environmentId,
          label: 'Cold',
        };
        return { variables: { applicationId: i.applicationId, input }, headers: i.member.headers };
      }),
      failure('invalid public key', 'VALIDATION_FAILED', async () => {
        const { c, i } = await integrator();
        return {
          variables: { applicationId: i.applicationId, input: { networkId: c.networkId, custodyMode: 'SELF_CUSTODY', publicKey: '02' + '00'.repeat(32) } },
          headers: i.apiKeyHeaders,
        };
      }),
      failure('another organization', 'NOT_FOUND', async () => {
        const { c, i } = await integrator();
        const other = await createApiKey(getApp(), await signUpMember(getApp()));
        return { variables: { applicationId: i.applicationId, input: { networkId: c.networkId, custodyMode: 'CUSTODIAL' } }, headers: other.headers };
      }),
    ],
    AllocateDepositAddress: [
      success('awaiting payment', async () => {
        const { c, i } = await integrator();
        const pi = await paymentIntent(i, c.assetNetworkId);
        return {
          variables: { applicationId: i.applicationId, input: { walletId: i.walletId, assetNetworkId: c.assetNetworkId, paymentIntentId: pi } },
          headers: i.apiKeyHeaders,
        };
      }),
      failure('unknown payment intent', 'NOT_FOUND', async () => {
        const { c, i } = await integrator();
        return {
          variables: { applicationId: i.applicationId, input: { walletId: i.walletId, assetNetworkId: c.assetNetworkId, paymentIntentId: random() } },
          headers: i.apiKeyHeaders,
        };
      }),
      failure('paused asset-network', 'INVALID_STATE', async () => {
        const { c, i } = await integrator();
        const pi = await paymentIntent(i, c.assetNetworkId);
        await getApp().rest('POST', `/v1/platform/asset-networks/${c.assetNetworkId}/pause`, { headers: c.operator.headers, body: { reason: 'contract' } });
        return {
          variables: { applicationId: i.applicationId, input: { walletId: i.walletId, assetNetworkId: c.assetNetworkId, paymentIntentId: pi } },
          headers: i.apiKeyHeaders,
        };
      }),
    ],
    GetWallet: [
      success('own wallet', async () => {
        const { i } = await integrator();
        return { variables: { id: i.walletId }, headers: i.apiKeyHeaders };
      }),
      failure('unknown', 'NOT_FOUND', async () => ({ variables: { id: random() }, headers: (await integrator()).i.apiKeyHeaders })),
    ],
    GetWalletPublicMaterial: [
      success('own wallet, by a member', async () => {
        const { i } = await integrator();
        return { variables: { id: i.walletId }, headers: i.member.headers };
      }),
      failure('another organization', 'NOT_FOUND', async () => {
        const { i } = await integrator();
        return { variables: { id: i.walletId }, headers: (await signUpMember(getApp())).headers };
      }),
    ],

    // Sandbox chain
    SandboxSendDeposit: [
      success('to an address', async () => {
        const { c, i } = await integrator();
        return { variables: { input: { address: address(), amount: '1000', assetNetworkId: c.assetNetworkId } }, headers: i.apiKeyHeaders };
      }),
      success('with an idempotency key', async () => {
        const { c, i } = await integrator();
        return {
          variables: { input: { address: address(), amount: '1', assetNetworkId: c.assetNetworkId, replaceable: true }, idempotencyKey: `k-${random()}` },
          headers: i.apiKeyHeaders,
        };
      }),
      failure('zero amount', 'VALIDATION_FAILED', async () => {
        const { c, i } = await integrator();
        return { variables: { input: { address: address(), amount: '0', assetNetworkId: c.assetNetworkId } }, headers: i.apiKeyHeaders };
      }),
      failure('production key', 'NOT_FOUND', async () => {
        const c = await catalog();
        const live = await createApiKey(getApp(), await signUpMember(getApp()), 'PRODUCTION');
        return { variables: { input: { address: address(), amount: '1', assetNetworkId: c.assetNetworkId } }, headers: live.headers };
      }),
    ],
    SandboxSendDeposits: [
      success('two transfers in one request', async () => {
        const { c, i } = await integrator();
        const item = () => ({ address: address(), amount: '1000', assetNetworkId: c.assetNetworkId });
        return { variables: { input: { deposits: [item(), item()] } }, headers: i.apiKeyHeaders };
      }),
      failure('a zero amount in one item', 'VALIDATION_FAILED', async () => {
        const { c, i } = await integrator();
        return {
          variables: {
            input: {
              deposits: [
                { address: address(), amount: '1', assetNetworkId: c.assetNetworkId },
                { address: address(), amount: '0', assetNetworkId: c.assetNetworkId },
              ],
            },
          },
          headers: i.apiKeyHeaders,
        };
      }),
      failure('production key', 'NOT_FOUND', async () => {
        const c = await catalog();
        const live = await createApiKey(getApp(), await signUpMember(getApp()), 'PRODUCTION');
        return { variables: { input: { deposits: [{ address: address(), amount: '1', assetNetworkId: c.assetNetworkId }] } }, headers: live.headers };
      }),
    ],
    SandboxMineBlocks: [
      success('two blocks', async () => {
        const { c, i } = await integrator();
        return { variables: { networkId: c.networkId, input: { blocks: 2 } }, headers: i.apiKeyHeaders };
      }),
      success('no input: one block', async () => {
        const { c, i } = await integrator();
        return { variables: { networkId: c.networkId }, headers: i.member.headers };
      }),
      failure('unknown network', 'NOT_FOUND', async () => ({
        variables: { networkId: random(), input: { blocks: 1 } },
        headers: (await integrator()).i.apiKeyHeaders,
      })),
    ],
    SandboxReorg: [
      success('depth 1', async () => {
        const { c, i } = await integrator();
        await sandboxMine(getApp(), i.apiKeyHeaders, c.networkId, 2);
        return { variables: { networkId: c.networkId, input: { depth: 1, includeOrphanedTransactions: false } }, headers: i.apiKeyHeaders };
      }),
      failure('deeper than the chain', 'INVALID_STATE', async () => {
        const { c, i } = await integrator();
        return { variables: { networkId: c.networkId, input: { depth: 1 } }, headers: i.apiKeyHeaders };
      }),
    ],
    SandboxDropTransaction: [
      success('pending', async () => {
        const { c, i } = await integrator();
        const { txHash } = await sandboxSend(getApp(), i.apiKeyHeaders, { address: address(), amount: 5n, assetNetworkId: c.assetNetworkId });
        return { variables: { input: { txHash } }, headers: i.apiKeyHeaders };
      }),
      failure('mined', 'INVALID_STATE', async () => {
        const { c, i } = await integrator();
        const { txHash } = await sandboxSend(getApp(), i.apiKeyHeaders, { address: address(), amount: 5n, assetNetworkId: c.assetNetworkId });
        await sandboxMine(getApp(), i.apiKeyHeaders, c.networkId);
        return { variables: { input: { txHash } }, headers: i.apiKeyHeaders };
      }),
    ],
    SandboxReplaceTransaction: [
      success('pending and replaceable', async () => {
        const { c, i } = await integrator();
        const { txHash } = await sandboxSend(getApp(), i.apiKeyHeaders, {
          address: address(),
          amount: 5n,
          assetNetworkId: c.assetNetworkId,
          replaceable: true,
        });
        return { variables: { input: { txHash, amount: '4' } }, headers: i.apiKeyHeaders };
      }),
      failure('not replaceable', 'INVALID_STATE', async () => {
        const { c, i } = await integrator();
        const { txHash } = await sandboxSend(getApp(), i.apiKeyHeaders, { address: address(), amount: 5n, assetNetworkId: c.assetNetworkId });
        return { variables: { input: { txHash } }, headers: i.apiKeyHeaders };
      }),
    ],
    SandboxAdvanceClock: [
      success('an hour', async () => ({ variables: { input: { seconds: 3600 } }, headers: (await integrator()).i.apiKeyHeaders })),
      failure('zero seconds', 'VALIDATION_FAILED', async () => ({ variables: { input: { seconds: 0 } }, headers: (await integrator()).i.apiKeyHeaders })),
    ],
  };
}
