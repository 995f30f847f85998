import { readFileSync } from 'node:fs';
import { z } from 'zod';

/**
 * The settings of EVM networks (issue 18; docs/chains.md "Adding a network"), keyed by the catalog
 * network's id, as the process configuration reads them (src/config.ts: EVM_NETWORKS as JSON, or
 * EVM_NETWORKS_FILE naming a JSON file). Kernel-level (configuration); the registry the EVM adapter
 * reads them from is src/chains/evm/config.ts. Never in catalog rows integrators can read: an RPC URL
 * often carries a provider key.
 */
const hexAddress = z
  .string()
  .regex(/^0x[0-9a-fA-F]{40}$/, 'must be an EVM address (0x and 40 hex digits)')
  .transform((a) => a.toLowerCase());
const rpcUrl = (schemes: string[]) =>
  z.string().refine(
    (s) => {
      try {
        return schemes.includes(new URL(s).protocol);
      } catch {
        return false;
      }
    },
    `must be a URL (${schemes.join(' or ')})`,
  );

export const evmNetworkSettings = z.strictObject({
  /** JSON-RPC over HTTP(S): every read and broadcast. */
  rpcUrl: rpcUrl(['http:', 'https:']),
  /** Optional websocket endpoint: each worker subscribes to new heads and queues a watch at each (polling still runs). */
  wsUrl: rpcUrl(['ws:', 'wss:']).optional(),
  /** The chain id the node must answer (eth_chainId): a wrong node is refused, never followed. */
  chainId: z.number().int().positive(),
  /**
   * Blocks after which a block is final for the watcher: it keeps this many block hashes to detect a
   * reorganization by parent hash and rewind, and a deeper one stops the watcher (logged at error).
   * Default 64 (two Ethereum epochs: finalized). Deposit confirmations are the catalog's requiredConfirmations.
   */
  finalityDepth: z.number().int().min(1).max(10_000).default(64),
  /** How often the watcher polls the node for new blocks (ms). */
  pollIntervalMs: z.number().int().min(50).max(600_000).default(4000),
  /** Blocks read per watcher step at most (one eth_getLogs range). */
  blockRange: z.number().int().min(1).max(10_000).default(100),
  /** The first block to follow when the network has no cursor yet; default: the head at the first step. */
  startBlock: z.number().int().min(0).optional(),
  /** The ERC-20 contract of each token asset-network of the network (asset-network id → address). */
  tokens: z.record(z.uuid({ message: 'each key must be an asset-network id (UUID)' }), hexAddress).default({}),
  /** Gas limit of an ERC-20 transfer this service signs (a native transfer is 21,000). */
  tokenTransferGas: z.number().int().min(21_000).max(1_000_000).default(100_000),
  /**
   * Gas bumping (docs/chains.md "Stuck transactions"): a transaction the platform signed (custodial
   * withdrawal, refund, sweep, treasury payout) still not mined this many seconds after it (or its
   * last replacement) was sent is replaced at the same nonce with higher fees. 0: never bump.
   */
  bumpAfterSeconds: z.number().int().min(0).max(86_400).default(180),
  /** The highest maxFeePerGas (wei, decimal string) a replacement may carry: beyond it, no more bumps. Default 500 gwei. */
  maxFeePerGasCap: z
    .string()
    .regex(/^[1-9][0-9]{0,30}$/, 'must be a positive whole number of wei (decimal string)')
    .default('500000000000'),
});
export type EvmNetworkSettings = z.infer<typeof evmNetworkSettings>;

export const evmNetworksSchema = z.record(z.uuid({ message: 'each key must be a network id (UUID)' }), evmNetworkSettings);
export type EvmNetworks = z.infer<typeof evmNetworksSchema>;

/** EVM_NETWORKS (JSON text) or EVM_NETWORKS_FILE (a JSON file), as a zod step of the configuration. */
export function parseEvmNetworks(text: string | undefined, file: string | undefined, ctx: z.RefinementCtx): EvmNetworks {
  if (text && file) {
    ctx.addIssue({ code: 'custom', path: ['EVM_NETWORKS_FILE'], message: 'set EVM_NETWORKS or EVM_NETWORKS_FILE, not both' });
    return {};
  }
  const source = file ? 'EVM_NETWORKS_FILE' : 'EVM_NETWORKS';
  let raw: unknown = {};
  try {
    if (file) raw = JSON.parse(readFileSync(file, 'utf8'));
    else if (text?.trim()) raw = JSON.parse(text);
  } catch (e) {
    ctx.addIssue({ code: 'custom', path: [source], message: `must be JSON: ${(e as Error).message.split('\n')[0]}` });
    return {};
  }
  const r = evmNetworksSchema.safeParse(raw);
  if (r.success) return r.data;
  for (const i of r.error.issues) ctx.addIssue({ code: 'custom', path: [source, ...i.path.map(String)], message: i.message });
  return {};
}
