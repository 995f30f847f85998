import { createPublicClient, http, type PublicClient } from 'viem';
import { requireEvmSettings } from './config';

/**
 * One viem PublicClient per configured EVM network, over JSON-RPC on HTTP (requests made together are
 * sent as one JSON-RPC batch). Made again when the network's RPC URL changes.
 */
const clients = new Map<string, { url: string; client: PublicClient; chainChecked: boolean }>();

export function clientOf(networkId: string): PublicClient {
  return entryOf(networkId).client;
}

function entryOf(networkId: string) {
  const s = requireEvmSettings(networkId);
  let e = clients.get(networkId);
  if (!e || e.url !== s.rpcUrl) {
    e = {
      url: s.rpcUrl,
      client: createPublicClient({ cacheTime: 0, transport: http(s.rpcUrl, { batch: { batchSize: 200 }, retryCount: 2, timeout: 15_000 }) }),
      chainChecked: false,
    };
    clients.set(networkId, e);
  }
  return e;
}

/** Throws unless the node answers the configured chain id (checked once per client): a wrong node is never followed. */
export async function checkedClientOf(networkId: string): Promise<PublicClient> {
  const e = entryOf(networkId);
  if (!e.chainChecked) {
    const expected = requireEvmSettings(networkId).chainId;
    const got = await e.client.getChainId();
    if (got !== expected) throw new Error(`EVM network ${networkId}: the node at its rpcUrl answers chain id ${got}, configured ${expected}`);
    e.chainChecked = true;
  }
  return e.client;
}
