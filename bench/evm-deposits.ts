import { encodeFunctionData, erc20Abi, type Hex } from 'viem';
import type { Deps } from '../src/context';
import { configureEvmNetworks, evmNetworksSchema } from '../src/chains/evm/config';
import { deployTestToken } from '../test/evm-node';
import { startEdr } from './edr';
import { env, setupBenchIntegrator, type Call } from './setup';
import type { DepositChain } from './deposits';

/**
 * The chain of the `evm-deposits` scenario (issue 18, point 7): Hardhat's EDR node served over HTTP
 * (bench/edr.ts), the test ERC-20 (OpenZeppelin ERC20, compiled with solc) deployed on it, an EVM
 * PRODUCTION network in the catalog with the token as its asset-network, the process's EVM settings
 * for it registered as EVM_NETWORKS would (the job runner's watcher follows it), and a PRODUCTION
 * environment. A deposit is an ERC-20 `transfer` to the intent's address (eth_sendTransaction from
 * a funded account of the node); automine is off, so a round's sends wait in the node's pool and are
 * mined together, block after block until the pool is empty, then `requiredConfirmations` blocks.
 *
 * The watcher's settings (BENCH_EVM_POLL_MS, 250; BENCH_EVM_BLOCK_RANGE, 100; finality depth 16)
 * are what an operator would give a chain with 1-second blocks (docs/chains.md).
 */
export async function evmDepositChain(deps: Deps, call: Call, requiredConfirmations: number, say: (m: string) => void): Promise<DepositChain> {
  const node = await startEdr();
  try {
    const payer = node.accounts[0]!;
    const token = await deployTestToken(node, payer);
    const rpc = (method: string, params: unknown[] = []) => node.public.request({ method, params } as never) as Promise<unknown>;
    await rpc('evm_setAutomine', [false]);
    const integrator = await setupBenchIntegrator(deps, call, 'evm-deposits', { code: 'BE', requiredConfirmations, evm: { contract: token } });
    const settings = {
      rpcUrl: node.rpcUrl,
      chainId: node.chainId,
      pollIntervalMs: env('BENCH_EVM_POLL_MS', 250),
      blockRange: env('BENCH_EVM_BLOCK_RANGE', 100),
      finalityDepth: 16,
      tokens: { [integrator.assetNetworkId]: token },
    };
    configureEvmNetworks(evmNetworksSchema.parse({ [integrator.networkId]: settings }));
    say(`evm-deposits: EDR node at ${node.rpcUrl} (pid ${node.pid}), token ${token}, poll ${settings.pollIntervalMs} ms, block range ${settings.blockRange}`);
    const nonce = (tag: 'latest' | 'pending') => node.public.getTransactionCount({ address: payer.address, blockTag: tag });
    return {
      integrator,
      async send(address, amount) {
        await rpc('eth_sendTransaction', [
          {
            from: payer.address,
            to: token,
            gas: '0x186a0',
            data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [address as Hex, amount] }),
          },
        ]);
      },
      async settle() {
        // Every send mined (as many blocks as the node's gas limit needs), then the required depth.
        while ((await nonce('latest')) < (await nonce('pending'))) await rpc('evm_mine');
        await rpc('hardhat_mine', [`0x${requiredConfirmations.toString(16)}`]);
      },
      close: () => node.stop(),
    };
  } catch (e) {
    await node.stop();
    throw e;
  }
}
