import type { NetworkKind } from '../generated/prisma/enums';
import type { Db } from '../db/prisma';
import { sandboxAdapter } from './sandbox/adapter';
import type { ChainDeps } from './sandbox/chain';

/**
 * The one seam between domain code and a blockchain. Domain code (custody, deposits, withdrawals,
 * treasury) never reads chain tables or calls a node directly: it asks the adapter of the network.
 * One implementation today: the sandbox chain (src/chains/sandbox/), persisted in PostgreSQL.
 * docs/chains.md says how a real chain (an EVM chain through viem) plugs in.
 */
export interface NetworkRef {
  id: string;
  kind: NetworkKind;
  requiredConfirmations: number;
}

/** A key pair for a wallet root (custodial wallets). Private keys leave the adapter only to be sealed. */
export interface KeyPair {
  curve: 'secp256k1' | 'ed25519';
  publicKey: string; // hex, compressed for secp256k1
  privateKey: Uint8Array;
}

export interface DerivedAddress {
  address: string;
  publicKey: string; // hex: the key the address commits to
}

/** A transfer of value to an address, as the chain reports it now. */
export type ObservedStatus = 'PENDING' | 'MINED' | 'ORPHANED' | 'DROPPED' | 'REPLACED' | 'REVERTED';
export interface ObservedTransfer {
  txHash: string;
  fromAddress: string;
  toAddress: string;
  assetNetworkId: string;
  amount: bigint;
  status: ObservedStatus;
  blockHash: string | null;
  blockHeight: number | null;
  /** 0 unless MINED in the canonical chain: tip - blockHeight + 1. */
  confirmations: number;
  /** REPLACED: the transaction that replaced it. */
  replacedByTxHash: string | null;
}

export interface FeeEstimate {
  /** In base units of the network's native asset. */
  fee: bigint;
  /** Named network resources (gas, energy, bandwidth, bytes) and their quantities. */
  resources: Record<string, bigint>;
}

export interface NetworkAdapter {
  readonly kind: NetworkKind;
  /** The curve of the network's keys (wallet roots and deposit addresses). */
  readonly curve: KeyPair['curve'];
  /** `publicKey` (hex) validated and in its canonical form (compressed for secp256k1); null when it is no valid key of the curve. */
  normalizePublicKey(publicKey: string): string | null;
  /** A new root key pair for a custodial wallet. */
  generateKeyPair(): KeyPair;
  /** Whether `publicKey` (hex) is a valid public key for the network's curve (self-custody registration). */
  validatePublicKey(curve: string, publicKey: string): boolean;
  /** The deposit address at `index` under a wallet's root public key (deterministic). */
  deriveAddress(network: NetworkRef, wallet: { curve: string; publicKey: string }, index: number): DerivedAddress;
  /** Whether `address` is well formed for the network. */
  validateAddress(address: string): boolean;
  /** Tells the adapter to report transfers to these addresses (a real adapter subscribes; the sandbox needs nothing). */
  watchAddresses(network: NetworkRef, addresses: string[]): Promise<void>;
  /** The height of the canonical tip. */
  blockHeight(network: NetworkRef): Promise<number>;
  /** Every transfer to any of `addresses`, in its current state (what changed is for the caller to compare). */
  transfersTo(network: NetworkRef, addresses: string[]): Promise<ObservedTransfer[]>;
  /** One transaction by hash, or null when the chain never saw it. */
  transaction(network: NetworkRef, txHash: string): Promise<ObservedTransfer | null>;
  /** Sends a signed transaction; answers its hash. */
  broadcast(network: NetworkRef, signedTransaction: string): Promise<{ txHash: string }>;
  /** What an operation costs on the network now. */
  estimateFee(network: NetworkRef, operation: { kind: 'transfer' | 'sweep'; assetNetworkId: string; amount: bigint }): Promise<FeeEstimate>;
}

/** The reference to a network that adapters take: any row with these fields. */
export function networkRef(network: { id: string; kind: NetworkKind; requiredConfirmations: number }): NetworkRef {
  return { id: network.id, kind: network.kind, requiredConfirmations: network.requiredConfirmations };
}

/** Whether this version has an adapter for the kind (only SANDBOX today; docs/chains.md). */
export function hasAdapter(kind: NetworkKind): boolean {
  return kind === 'SANDBOX';
}

/**
 * The adapter of a network kind. Chain reads (blockHeight, transfersTo, transaction) go through
 * `db`: pass the transaction you work in, so what you read is consistent with what you write.
 * Key and address operations need no database.
 */
export function adapterFor(kind: NetworkKind, db?: Db, deps?: ChainDeps): NetworkAdapter {
  if (kind === 'SANDBOX') return sandboxAdapter(db, deps);
  throw new Error(`no network adapter for ${kind} networks in this version (docs/chains.md)`);
}
