import type { NetworkKind } from '../generated/prisma/enums';
import type { Db } from '../db/prisma';
import { sandboxAdapter } from './sandbox/adapter';
import type { ChainDeps } from './sandbox/chain';
import type { TransferPayload } from './secp256k1';
import { evmAdapter } from './evm/adapter';
import { configuredEvmNetworks, evmSettingsOf, EvmNotConfigured } from './evm/config';

/**
 * The one seam between domain code and a blockchain. Domain code (custody, deposits, withdrawals,
 * treasury) never reads chain tables or calls a node directly: it asks the adapter of the network.
 * Two implementations: the sandbox chain (src/chains/sandbox/), persisted in PostgreSQL, and EVM
 * chains on viem over JSON-RPC (src/chains/evm/, issue 18). docs/chains.md.
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
  /**
   * REPLACED by the platform's own fee bump of the same transfer (same sender, nonce, recipient and
   * amount, higher fees; docs/chains.md "Stuck transactions"): the operation follows the replacement.
   * Absent or false: replaced by someone else (the operation goes to reconciliation).
   */
  feeBump?: boolean;
  /** MINED or REVERTED, a transaction the platform sent: the network fee it actually paid (native base units). */
  feePaid?: bigint;
}

/** A platform transaction waiting for a fee bump (or, recorded but unknown to the node, to be sent again). */
export interface StuckTransaction {
  txHash: string;
  fromAddress: string;
  /** Every transaction of its nonce the platform sent (the original and its fee bumps), oldest first. */
  family: string[];
  /** A fee bump recorded but unknown to the node (a crash between recording and sending): to be sent again, not bumped. */
  unsent: boolean;
}

/** How far a sync followed a chain: a height and the hash of the canonical block there (null: no block yet). */
export interface ChainCursor {
  height: number;
  hash: string | null;
}

/** What may have changed on a chain since a sync cursor (NetworkAdapter.changedSince). */
export interface ChainChanges {
  /** The canonical tip now: the next cursor once the caller reconciled `addresses`. */
  tip: ChainCursor;
  /**
   * The lowest height whose block may differ from what the cursor saw: the cursor's own height (its
   * block is examined again), or the fork point when a reorganization replaced the block it saw.
   */
  from: number;
  /**
   * The addresses (spelled as `deriveAddress` spells them) receiving a transfer in a block at or
   * above `from`, or in no block (pending, orphaned): a set bounded by what happened since, never by
   * history.
   */
  addresses: string[];
}

/** The balance of one address in one asset-network (base units). */
export interface AddressBalance {
  mined: bigint;
  spendable: bigint;
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
  /** deriveAddress for many (wallet, index) pairs at once, in their order (issue 22: a payment-intents group); throws as any one would alone. */
  deriveAddresses(network: NetworkRef, pairs: readonly { wallet: { curve: string; publicKey: string }; index: number }[]): DerivedAddress[];
  /** Whether `address` is well formed for the network. */
  validateAddress(address: string): boolean;
  /** Tells the adapter to report transfers to these addresses (a real adapter subscribes; the sandbox needs nothing). */
  watchAddresses(network: NetworkRef, addresses: string[]): Promise<void>;
  /** The height of the canonical tip. */
  blockHeight(network: NetworkRef): Promise<number>;
  /** Every transfer to any of `addresses`, in its current state (what changed is for the caller to compare). */
  transfersTo(network: NetworkRef, addresses: string[]): Promise<ObservedTransfer[]>;
  /**
   * What may have changed since `cursor` (null: never synced: every block), for chain.sync (issue 22):
   * the tip, the fork-safe height to re-examine from, and the addresses receiving transfers there or
   * outside any block. Set-based: one read of the transfers by height and status, whatever the
   * number of addresses ever watched.
   */
  changedSince(network: NetworkRef, cursor: ChainCursor | null): Promise<ChainChanges>;
  /** One transaction by hash, or null when the chain never saw it. */
  transaction(network: NetworkRef, txHash: string): Promise<ObservedTransfer | null>;
  /** `transaction` for many hashes in one read (absent: one `transaction` call each); a hash the chain never saw is not in the map. */
  transactions?(network: NetworkRef, txHashes: readonly string[]): Promise<Map<string, ObservedTransfer>>;
  /**
   * Signs a transfer with the sending address's private key, for `broadcast` (custodial withdrawals,
   * refunds, sweeps, treasury payouts). The sandbox: the signed-transfer JSON (src/chains/secp256k1.ts
   * signTransfer). EVM: an EIP-1559 transaction (native value, or the token's transfer(to, amount))
   * with the sender's next nonce, taken under a row lock held by the caller's transaction (so two
   * workers never sign one nonce), and the node's fees now. `payload.nonce` is the sandbox's; EVM
   * chains number transactions per sender themselves.
   */
  signTransfer(network: NetworkRef, payload: TransferPayload, privateKey: Uint8Array): Promise<string>;
  /**
   * A SELF_CUSTODY signing request for a transfer: the payload stored and shown, the exact text the
   * integrator signs (`canonical`) and its digest (hex). The sandbox: the canonical JSON of the
   * payload and its SHA-256. EVM: the unsigned EIP-1559 transaction (0x RLP, with the sender's next
   * nonce and the fees now) and its keccak-256, the transaction's signing hash.
   */
  signingRequest(network: NetworkRef, payload: TransferPayload): Promise<{ payload: Record<string, unknown>; canonical: string; digest: string }>;
  /**
   * The signed transaction for `broadcast`, from a stored signing request and the integrator's
   * 64-byte compact signature (r||s, hex). RangeError when it does not verify for the payload's
   * sending address; nothing is sent.
   */
  assembleSigned(network: NetworkRef, request: { payload: Record<string, unknown>; canonical: string }, signature: string): Promise<string>;
  /**
   * Sends a signed transaction; answers its hash. `organizationId`: the organization whose transfer it
   * is (its withdrawal, refund or sweep; null for none). A real chain cannot record it; the sandbox
   * does, so that only that organization may drop, replace or reorganize the transfer (docs/chains.md).
   */
  broadcast(network: NetworkRef, signedTransaction: string, organizationId: string | null): Promise<{ txHash: string }>;
  /**
   * Sends several signed transactions of one network at once, in the caller's transaction (a broadcast
   * group, issue 22): each answers its hash or its refusal (a RangeError, nothing of it sent), as
   * `broadcast` called for each in list order would; one network lock and set-based writes for all.
   * Absent: the caller broadcasts them one by one.
   */
  broadcastMany?(
    network: NetworkRef,
    items: readonly { signedTransaction: string; organizationId: string | null }[],
  ): Promise<({ txHash: string } | RangeError)[]>;
  /**
   * The balances of `addresses` in one asset-network, in base units: `mined` is the canonical mined
   * balance; `spendable` is `mined` less the address's outgoing transfers not mined (PENDING or
   * ORPHANED): what `broadcast` accepts from the address now. Every requested address is in the map
   * (0 when the chain never saw it). Set-based: one read for any number of addresses.
   */
  balances(network: NetworkRef, assetNetworkId: string, addresses: readonly string[]): Promise<Map<string, AddressBalance>>;
  /**
   * Fee bumping (EVM; absent: the network has none). The platform's transactions still not mined
   * `bumpAfterSeconds` after they (or their last bump) were sent, at `now`, and the recorded bumps the
   * node does not know (to be sent again).
   */
  stuckTransactions?(network: NetworkRef, now: Date): Promise<StuckTransaction[]>;
  /**
   * Records, in the caller's transaction, a replacement of the platform's transaction `txHash` at the
   * same nonce with higher fees, signed with `privateKey`; `sendRecorded` sends it once that
   * transaction committed (so a crash never loses the replacement's hash). Skipped (nothing recorded)
   * when it is no longer the newest of its nonce, is mined, or the fees would pass the network's cap.
   */
  prepareFeeBump?(network: NetworkRef, txHash: string, privateKey: Uint8Array, now: Date): Promise<{ txHash: string } | { skipped: string }>;
  /** Sends a recorded transaction (again): `refused` when the node refuses it (the record of an unsent bump is then forgotten). */
  sendRecorded?(network: NetworkRef, txHash: string): Promise<{ sent: true } | { refused: string }>;
  /** What an operation costs on the network now. */
  estimateFee(network: NetworkRef, operation: { kind: 'transfer' | 'sweep'; assetNetworkId: string; amount: bigint }): Promise<FeeEstimate>;
}

/** The reference to a network that adapters take: any row with these fields. */
export function networkRef(network: { id: string; kind: NetworkKind; requiredConfirmations: number }): NetworkRef {
  return { id: network.id, kind: network.kind, requiredConfirmations: network.requiredConfirmations };
}

/** How many replacements of one transaction are followed (replace-by-fee chains are short). */
export const MAX_REPLACEMENT_LINKS = 16;

/**
 * A transaction and its replacements, in order, as the chain reports them now (seen null: unknown
 * to the chain): its hash, then each `replacedByTxHash` of a REPLACED one. At most
 * MAX_REPLACEMENT_LINKS + 1 links (`truncated` when there were more); a cycle ends the chain.
 */
export async function replacementChain(
  adapter: NetworkAdapter,
  ref: NetworkRef,
  first: string,
): Promise<{ links: { txHash: string; seen: ObservedTransfer | null }[]; truncated: boolean }> {
  const links: { txHash: string; seen: ObservedTransfer | null }[] = [];
  let hash: string | null = first;
  while (hash && !links.some((l) => l.txHash === hash)) {
    if (links.length > MAX_REPLACEMENT_LINKS) return { links, truncated: true };
    const seen = await adapter.transaction(ref, hash);
    links.push({ txHash: hash, seen });
    hash = seen?.status === 'REPLACED' ? seen.replacedByTxHash : null;
  }
  return { links, truncated: false };
}

/**
 * Whether this version has an adapter for the kind: SANDBOX, and EVM when the process has EVM
 * networks configured (EVM_NETWORKS; docs/chains.md). UTXO, TRON and SOLANA have none.
 */
export function hasAdapter(kind: NetworkKind): boolean {
  return kind === 'SANDBOX' || (kind === 'EVM' && configuredEvmNetworks().length > 0);
}

/**
 * Whether this process can read this network's chain: a SANDBOX network always, an EVM network when
 * EVM_NETWORKS holds its settings. A process that cannot must not complete the network's work as if
 * the chain had shown nothing (chain.sync fails instead, and is retried: issue 18).
 */
export function chainReadable(network: { id: string; kind: NetworkKind }): boolean {
  return network.kind === 'SANDBOX' || (network.kind === 'EVM' && evmSettingsOf(network.id) !== null);
}

/** Throws EvmNotConfigured (naming the setting to add) for an EVM network this process has no settings for. */
export function assertChainReadable(network: { id: string; kind: NetworkKind }): void {
  if (network.kind === 'EVM' && !chainReadable(network)) throw new EvmNotConfigured(network.id);
}

/**
 * The adapter of a network kind. Chain reads (blockHeight, transfersTo, transaction, balances) go through
 * `db`: pass the transaction you work in, so what you read is consistent with what you write.
 * Key and address operations need no database.
 */
export function adapterFor(kind: NetworkKind, db?: Db, deps?: ChainDeps): NetworkAdapter {
  if (kind === 'SANDBOX') return sandboxAdapter(db, deps);
  if (kind === 'EVM' && configuredEvmNetworks().length > 0) return evmAdapter(db, deps?.clock);
  throw new Error(`no network adapter for ${kind} networks in this version (docs/chains.md)`);
}
