import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import {
  createPublicClient,
  createTestClient,
  createWalletClient,
  http,
  type Chain,
  type Hex,
  type PublicClient,
  type TestClient,
  type WalletClient,
} from 'viem';
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { foundry } from 'viem/chains';
import { loadTestToken } from './evm-token';

/**
 * A real EVM node for tests: anvil (Foundry), from the npm package @foundry-rs/anvil (its Linux
 * binary ships in @foundry-rs/anvil-linux-amd64), started on 127.0.0.1 on a free port and stopped
 * by its pid. The service talks to it over JSON-RPC on HTTP, as it would to a production node.
 * Mining is manual (`--no-mining`): a test mines with `mine(n)`, so confirmations are deterministic.
 */
export interface EvmNode {
  rpcUrl: string;
  chainId: number;
  pid: number;
  public: PublicClient;
  test: TestClient<'anvil'>;
  /** Funded accounts of anvil's default mnemonic (10,000 ETH each). */
  accounts: PrivateKeyAccount[];
  wallet(account: PrivateKeyAccount): WalletClient;
  mine(blocks?: number): Promise<void>;
  stop(): Promise<void>;
}

/** anvil's default development keys (its well-known mnemonic "test test … junk"), accounts 0-3. */
const DEV_KEYS: Hex[] = [
  '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
  '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
  '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3faf9872cbb0b8ad',
  '0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6',
];

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

function anvilBinary(): string {
  const require = createRequire(import.meta.url);
  return path.join(path.dirname(require.resolve('@foundry-rs/anvil-linux-amd64/package.json')), 'bin', 'anvil');
}

export async function startAnvil(
  opts: { chainId?: number; /** Seconds between blocks mined by anvil itself; default: manual mining. */ blockTime?: number } = {},
): Promise<EvmNode> {
  const chainId = opts.chainId ?? 31337;
  const port = await freePort();
  const child: ChildProcess = spawn(
    anvilBinary(),
    [
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      '--chain-id',
      String(chainId),
      ...(opts.blockTime ? ['--block-time', String(opts.blockTime)] : ['--no-mining']),
      '--silent',
    ],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += String(d)));
  const rpcUrl = `http://127.0.0.1:${port}`;
  const chain = { ...foundry, id: chainId };
  const pub = createPublicClient({ chain, cacheTime: 0, transport: http(rpcUrl) }) as PublicClient;
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`anvil exited (${child.exitCode}): ${stderr}`);
    try {
      if ((await pub.getChainId()) === chainId) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`anvil did not answer on ${rpcUrl} within 20 s: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return nodeOver(child, rpcUrl, chain, 'anvil');
}

/** The EvmNode of a node process answering at rpcUrl (anvil here; Hardhat's EDR in bench/edr.ts): its clients, the dev accounts, mining, stop by pid. */
export function nodeOver(child: ChildProcess, rpcUrl: string, chain: Chain, mode: 'anvil' | 'hardhat'): EvmNode {
  const test = createTestClient({ chain, mode, transport: http(rpcUrl) });
  return {
    rpcUrl,
    chainId: chain.id,
    pid: child.pid!,
    public: createPublicClient({ chain, cacheTime: 0, transport: http(rpcUrl) }) as PublicClient,
    test: test as TestClient<'anvil'>,
    accounts: DEV_KEYS.map((k) => privateKeyToAccount(k)),
    wallet: (account) => createWalletClient({ account, chain, transport: http(rpcUrl) }),
    mine: async (blocks = 1) => test.mine({ blocks }),
    stop: () => stopNode(child),
  };
}

/** Stops a node process started here by its pid: SIGTERM, then SIGKILL after 3 s. */
export async function stopNode(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  process.kill(child.pid!, 'SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
  if (child.exitCode === null) process.kill(child.pid!, 'SIGKILL');
}

/** Deploys the test ERC-20 (TestToken, OpenZeppelin ERC20) minting `supply` to `account`; mines it; answers its address. */
export async function deployTestToken(node: EvmNode, account: PrivateKeyAccount, opts: { decimals?: number; supply?: bigint } = {}): Promise<Hex> {
  const t = loadTestToken();
  const hash = await node.wallet(account).deployContract({
    abi: t.abi as never,
    bytecode: t.bytecode,
    args: ['Test USD', 'TUSD', opts.decimals ?? 6, opts.supply ?? 10n ** 30n],
    account,
    chain: node.public.chain,
  });
  await node.mine(1);
  const receipt = await node.public.getTransactionReceipt({ hash });
  if (receipt.status !== 'success' || !receipt.contractAddress) throw new Error('TestToken deployment failed');
  return receipt.contractAddress;
}
