import type { Db } from '../../db/prisma';
import type { DerivedAddress, FeeEstimate, KeyPair, NetworkAdapter, NetworkRef, ObservedTransfer } from '../adapter';
import * as keys from '../secp256k1';
import { observe, tip } from './chain';

/**
 * The NetworkAdapter of SANDBOX networks: keys and addresses as on an EVM chain (secp256k1, keccak
 * addresses, src/chains/secp256k1.ts); the chain itself is the PostgreSQL-persisted sandbox chain
 * (src/chains/sandbox/chain.ts). Reads go through the database handle it was made with.
 */
export function sandboxAdapter(db?: Db): NetworkAdapter {
  const database = (): Db => {
    if (!db) throw new Error("the sandbox adapter reads the chain through a database handle: adapterFor('SANDBOX', db)");
    return db;
  };
  return {
    kind: 'SANDBOX',
    curve: keys.CURVE,
    generateKeyPair(): KeyPair {
      const { publicKey, privateKey } = keys.generateKeyPair();
      return { curve: keys.CURVE, publicKey, privateKey };
    },
    normalizePublicKey: (publicKey) => keys.normalizePublicKey(publicKey),
    validatePublicKey: (curve, publicKey) => curve === keys.CURVE && keys.normalizePublicKey(publicKey) !== null,
    deriveAddress(_network: NetworkRef, wallet: { curve: string; publicKey: string }, index: number): DerivedAddress {
      if (wallet.curve !== keys.CURVE) throw new Error(`sandbox wallets are ${keys.CURVE}, not ${wallet.curve}`);
      const publicKey = keys.derivePublicKey(wallet.publicKey, index);
      return { address: keys.addressOf(publicKey), publicKey };
    },
    validateAddress: (address) => keys.ADDRESS_PATTERN.test(address),
    // The sandbox chain is in our own database: every address is watched already.
    async watchAddresses() {},
    async blockHeight(network) {
      return (await tip(database(), network.id)).height;
    },
    async transfersTo(network, addresses): Promise<ObservedTransfer[]> {
      if (!addresses.length) return [];
      const d = database();
      const { height } = await tip(d, network.id);
      const rows = await d.sandboxTransaction.findMany({ where: { networkId: network.id, toAddress: { in: addresses } }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
      return rows.map((r) => observe(r, height));
    },
    async transaction(network, txHash) {
      const d = database();
      const row = await d.sandboxTransaction.findUnique({ where: { txHash } });
      if (!row || row.networkId !== network.id) return null;
      return observe(row, (await tip(d, network.id)).height);
    },
    async broadcast() {
      // Withdrawals (a later issue) sign and broadcast; the sandbox will accept its own transaction format then.
      throw new Error('the sandbox chain does not accept signed transactions yet');
    },
    async estimateFee(): Promise<FeeEstimate> {
      // A flat, deterministic cost: 21,000 gas at 1 base unit each.
      return { fee: 21_000n, resources: { gas: 21_000n } };
    },
  };
}
