import type { EvmNetworkSettings, EvmNetworks } from '../../kernel/evm-settings';

/**
 * The connection settings of EVM networks (issue 18; docs/chains.md), as the process configured them:
 * parsed and validated with the configuration (src/kernel/evm-settings.ts), registered here when
 * the app and the job runner start, read by the EVM adapter and watcher by network id.
 */
export { evmNetworkSettings, evmNetworksSchema, parseEvmNetworks, type EvmNetworkSettings, type EvmNetworks } from '../../kernel/evm-settings';

// ------------------------------------------------------------------------------------------------
// The process's registry (set from the configuration when the app starts)

const registry = new Map<string, EvmNetworkSettings>();

/** Registers the configured EVM networks (createApp does it with config.EVM_NETWORKS); later settings of a network replace earlier ones. */
export function configureEvmNetworks(networks: EvmNetworks): void {
  for (const [id, s] of Object.entries(networks)) registry.set(id.toLowerCase(), s);
}

/** The settings of a configured EVM network, or null. */
export function evmSettingsOf(networkId: string): EvmNetworkSettings | null {
  return registry.get(networkId.toLowerCase()) ?? null;
}

/** The ids of every configured EVM network. */
export function configuredEvmNetworks(): string[] {
  return [...registry.keys()];
}

export class EvmNotConfigured extends Error {
  constructor(readonly networkId: string) {
    super(`EVM network ${networkId} has no connection settings: add it to EVM_NETWORKS (or EVM_NETWORKS_FILE), keyed by its id (docs/chains.md)`);
    this.name = 'EvmNotConfigured';
  }
}

export function requireEvmSettings(networkId: string): EvmNetworkSettings {
  const s = evmSettingsOf(networkId);
  if (!s) throw new EvmNotConfigured(networkId);
  return s;
}
