import { expect } from 'vitest';
import { erc20Abi, type Hex } from 'viem';
import { createApiKey, createOperator, createTestApp, signUpMember, type TestApp } from './harness';
import { deployTestToken, startAnvil, type EvmNode } from './evm-node';
import { drainChainSync } from './fixtures/deposits/testing';
import { watchNetwork } from '../src/chains/evm/watcher';

/**
 * The service on a real EVM chain, for tests (issue 18): anvil with the test ERC-20 deployed, a
 * catalog made by an operator through REST (an EVM PRODUCTION network, a token and a native
 * asset-network, enabled), then the service started with EVM_NETWORKS for that network (the
 * catalog's app made it before the settings existed, as an operator would), and its watcher's first
 * step taken (it follows the chain from its head).
 */
export interface EvmService {
  node: EvmNode;
  /** The service configured with the network's settings. */
  app: TestApp;
  token: Hex;
  networkId: string;
  tokenAn: string;
  nativeAn: string;
  operator: Record<string, string>;
  requiredConfirmations: number;
  /** The watcher's job, then the chain.sync jobs it queued. */
  follow(): ReturnType<typeof watchNetwork>;
  /** A member of a new organization, a PRODUCTION API key, a CUSTODIAL wallet on the network and an account. */
  integrator(): Promise<EvmIntegrator>;
  payToken(to: string, amount: bigint, from?: EvmNode['accounts'][number]): Promise<Hex>;
  payNative(to: string, value: bigint, from?: EvmNode['accounts'][number]): Promise<Hex>;
  close(): Promise<void>;
}

export interface EvmIntegrator {
  member: Awaited<ReturnType<typeof signUpMember>>;
  key: Awaited<ReturnType<typeof createApiKey>>;
  organizationId: string;
  walletId: string;
  accountId: string;
}

const id = (r: { headers: Headers }) => r.headers.get('location')!.split('/').pop()!;

export async function startEvmService(opts: { requiredConfirmations?: number; tokenMinimumDeposit?: bigint } = {}): Promise<EvmService> {
  const requiredConfirmations = opts.requiredConfirmations ?? 3;
  const node = await startAnvil();
  const token = await deployTestToken(node, node.accounts[0]!);
  const setup = await createTestApp();
  const operator = (await createOperator(setup)).headers;
  const tag = Date.now().toString(36).toUpperCase();
  const usd = await setup.rest('POST', '/v1/platform/assets', { headers: operator, body: { code: `TUSD${tag}`, name: 'Test USD', decimals: 6 } });
  const eth = await setup.rest('POST', '/v1/platform/assets', { headers: operator, body: { code: `ETH${tag}`, name: 'Ether', decimals: 18 } });
  const net = await setup.rest('POST', '/v1/platform/networks', {
    headers: operator,
    body: { name: `Anvil ${tag}`, kind: 'EVM', environmentType: 'PRODUCTION', blockTimeSeconds: 1, requiredConfirmations },
  });
  expect(net.status, net.text).toBe(201);
  const networkId = id(net);
  const an = async (assetId: string, decimals: number, contractReference: string | null, minimumDeposit: bigint) => {
    const r = await setup.rest('POST', '/v1/platform/asset-networks', {
      headers: operator,
      body: { assetId, networkId, decimals, contractReference, minimumDeposit: minimumDeposit.toString() },
    });
    expect(r.status, r.text).toBe(201);
    expect((await setup.rest('POST', `/v1/platform/asset-networks/${id(r)}/enable`, { headers: operator })).status).toBe(204);
    return id(r);
  };
  const tokenAn = await an(id(usd), 6, token, opts.tokenMinimumDeposit ?? 1000n);
  const nativeAn = await an(id(eth), 18, null, 1n);
  // The service as an operator runs it: the network's connection settings in its configuration.
  const app = await createTestApp({
    databaseUrl: setup.databaseUrl,
    env: {
      EVM_NETWORKS: JSON.stringify({
        [networkId]: { rpcUrl: node.rpcUrl, chainId: node.chainId, finalityDepth: 16, blockRange: 5, tokens: { [tokenAn]: token } },
      }),
    },
  });
  const follow = async () => {
    const w = await watchNetwork({ db: app.deps.db, boss: app.deps.boss }, networkId);
    await drainChainSync(app);
    return w;
  };
  await follow();
  return {
    node,
    app,
    token,
    networkId,
    tokenAn,
    nativeAn,
    operator,
    requiredConfirmations,
    follow,
    async integrator() {
      const member = await signUpMember(app);
      const key = await createApiKey(app, member, 'PRODUCTION');
      const wallet = await app.rest('POST', `/v1/applications/${key.applicationId}/wallets`, {
        headers: key.headers,
        body: { networkId, custodyMode: 'CUSTODIAL', label: 'Deposits' },
      });
      expect(wallet.status, wallet.text).toBe(201);
      const acc = await app.rest('POST', `/v1/organizations/${member.organizationId}/accounts`, { headers: key.headers, body: { name: 'Seller' } });
      expect(acc.status, acc.text).toBe(201);
      return { member, key, organizationId: member.organizationId, walletId: id(wallet), accountId: id(acc) };
    },
    payToken: (to, amount, from = node.accounts[0]!) =>
      node
        .wallet(from)
        .writeContract({ address: token, abi: erc20Abi, functionName: 'transfer', args: [to as Hex, amount], account: from, chain: node.public.chain }),
    payNative: (to, value, from = node.accounts[1]!) => node.wallet(from).sendTransaction({ to: to as Hex, value, account: from, chain: node.public.chain }),
    async close() {
      await app.close();
      await setup.close();
      await node.stop();
    },
  };
}
