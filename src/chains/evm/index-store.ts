import type { Db } from '../../db/prisma';
import { requireEvmSettings } from './config';

/** The watcher's cursor: the highest block it followed (null before its first step). */
export async function cursorOf(db: Db, networkId: string): Promise<{ height: number; hash: string } | null> {
  return db.evmBlock.findFirst({ where: { networkId }, orderBy: { height: 'desc' }, select: { height: true, hash: true } });
}

/**
 * The network's asset-networks as the watcher sees them: each configured token contract (lower-case)
 * → its asset-network, and the native coin's asset-network (the one without a contract in the
 * catalog and without a configured token; null when the catalog has none).
 */
export async function assetNetworksOf(db: Db, networkId: string): Promise<{ tokens: Map<string, string>; native: string | null }> {
  const s = requireEvmSettings(networkId);
  const rows = await db.assetNetwork.findMany({ where: { networkId }, select: { id: true, contractReference: true }, orderBy: { id: 'asc' } });
  const tokens = new Map<string, string>();
  let native: string | null = null;
  for (const r of rows) {
    const contract = s.tokens[r.id];
    if (contract) tokens.set(contract, r.id);
    else if (r.contractReference === null) native ??= r.id;
  }
  return { tokens, native };
}

/** The lock that serializes a network's watcher steps (any process): transaction-scoped. */
export async function lockEvmNetwork(tx: Db, networkId: string): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${'evm-watch:' + networkId}, 0))`;
}
