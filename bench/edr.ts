import { spawn } from 'node:child_process';
import { hardhat } from 'viem/chains';
import { nodeOver, type EvmNode } from '../test/evm-node';

/**
 * Hardhat's EDR node for the bench (issue 18, point 7): bench/edr-node.ts started as its own process
 * (as anvil is in the tests) serving JSON-RPC over HTTP on 127.0.0.1, stopped by its pid. The same
 * shape as the tests' anvil node (test/evm-node.ts), so the token deployment and the payers are
 * shared; mining is Hardhat's (hardhat_mine, evm_setAutomine).
 */
export async function startEdr(opts: { chainId?: number } = {}): Promise<EvmNode> {
  const chainId = opts.chainId ?? 31337;
  const child = spawn(process.execPath, ['--import', 'tsx', new URL('./edr-node.ts', import.meta.url).pathname], {
    env: { ...process.env, EDR_CHAIN_ID: String(chainId), EDR_PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += String(d)));
  const rpcUrl = await new Promise<string>((ok, no) => {
    let out = '';
    const timer = setTimeout(() => no(new Error(`EDR node did not start within 60 s: ${stderr}`)), 60_000);
    child.stdout.on('data', (d) => {
      out += String(d);
      const m = /listening (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        ok(m[1]!);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      no(new Error(`EDR node exited (${code}): ${stderr}`));
    });
  });
  return nodeOver(child, rpcUrl, { ...hardhat, id: chainId }, 'hardhat');
}
