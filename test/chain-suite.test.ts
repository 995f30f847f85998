import { afterAll, beforeAll } from 'vitest';
import { createTestApp, type TestApp } from './harness';
import { sandboxMine, sandboxReorg, sandboxSend, setupIntegrator, setupSandboxCatalog } from './money-helpers';
import { drainChainSync } from './fixtures/deposits/testing';
import { startEvmService, type EvmService } from './evm-service';
import { chainScenarios } from './chain-suite';

/** The shared money-in scenarios (test/chain-suite.ts) on both adapters: the sandbox chain and a real EVM node. */
const REQUIRED = 3;
const MINIMUM = 1000n;
let sandbox: TestApp;
let catalog: Awaited<ReturnType<typeof setupSandboxCatalog>>;
let evm: EvmService;

beforeAll(async () => {
  sandbox = await createTestApp();
  catalog = await setupSandboxCatalog(sandbox, { requiredConfirmations: REQUIRED, minimumDeposit: MINIMUM });
  evm = await startEvmService({ requiredConfirmations: REQUIRED, tokenMinimumDeposit: MINIMUM });
}, 120_000);
afterAll(async () => {
  await sandbox?.close();
  await evm?.close();
});

const location = (r: { headers: Headers }) => r.headers.get('location')!.split('/').pop()!;

chainScenarios({
  name: 'the sandbox chain (SANDBOX environment)',
  app: () => sandbox,
  requiredConfirmations: REQUIRED,
  minimumDeposit: MINIMUM,
  assetNetworkId: () => catalog.assetNetworkId,
  async integrator() {
    const i = await setupIntegrator(sandbox, catalog);
    const acc = await sandbox.rest('POST', `/v1/organizations/${i.organizationId}/accounts`, { headers: i.apiKeyHeaders, body: { name: 'Seller' } });
    return { organizationId: i.organizationId, headers: i.apiKeyHeaders, walletId: i.walletId, accountId: location(acc) };
  },
  pay: async (payer, address, amount) => (await sandboxSend(sandbox, payer.headers, { address, amount, assetNetworkId: catalog.assetNetworkId })).txHash,
  async mine(payer, blocks) {
    await sandboxMine(sandbox, payer.headers, catalog.networkId, blocks);
    await drainChainSync(sandbox);
  },
  async reorg(payer, depth) {
    await sandboxReorg(sandbox, payer.headers, catalog.networkId, depth, false);
    await drainChainSync(sandbox);
  },
  orphanedBeforeConfirmation: 'DETECTED',
});

chainScenarios({
  name: 'a real EVM node (anvil, ERC-20, PRODUCTION environment)',
  app: () => evm.app,
  requiredConfirmations: REQUIRED,
  minimumDeposit: MINIMUM,
  assetNetworkId: () => evm.tokenAn,
  async integrator() {
    const i = await evm.integrator();
    return { organizationId: i.organizationId, headers: i.key.headers, walletId: i.walletId, accountId: i.accountId };
  },
  pay: (_payer, address, amount) => evm.payToken(address, amount),
  async mine(_payer, blocks) {
    await evm.node.mine(blocks);
    await evm.follow();
  },
  async reorg(_payer, depth) {
    await evm.node.test.request({ method: 'anvil_reorg' as never, params: [depth, []] as never });
    await evm.follow();
  },
  orphanedBeforeConfirmation: 'REJECTED',
});
