import { FpInvertBatch } from '@noble/curves/abstract/modular.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { hmac } from '@noble/hashes/hmac.js';
import { sha256, sha512 } from '@noble/hashes/sha2.js';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { MAX_AMOUNT } from '../money';

/**
 * secp256k1 key material for wallets, chain-agnostic (an EVM adapter would reuse it as is).
 *
 * Deposit addresses derive from a wallet's ROOT public key with BIP32 non-hardened public
 * derivation (CKDpub) at path m/<index>, so anyone holding the root public key derives the same
 * addresses and a SELF_CUSTODY integrator derives their private keys from its own root key:
 *
 *   chainCode = SHA-256(utf8("ftis/v1/chain-code") || rootPublicKey33)
 *   I         = HMAC-SHA512(key = chainCode, data = rootPublicKey33 || uint32be(index))
 *   child     = parse256(I[0..32])·G + rootPoint          (child private key: parse256(I[0..32]) + k mod n)
 *   address   = "0x" + hex(keccak256(uncompressed(child)[1..65])[12..32])   (the EVM address form, lowercase)
 *
 * The chain code is a function of the public key (not a secret) because the API registers a bare
 * public key; docs/catalog-custody.md gives the scheme to integrators.
 */
export const CURVE = 'secp256k1' as const;
export const DERIVATION_SCHEME = 'BIP32_CKDPUB_SHA256_CHAIN_CODE' as const;
export const ADDRESS_FORMAT = 'EVM_KECCAK256_HEX' as const;
const N = secp256k1.Point.Fn.ORDER;
const CHAIN_CODE_TAG = new TextEncoder().encode('ftis/v1/chain-code');
export const MAX_DERIVATION_INDEX = 0x7fffffff;

const HEX = /^[0-9a-fA-F]+$/;

/** A valid public key (33-byte compressed or 65-byte uncompressed SEC1, hex, optional 0x) in compressed hex; null when it is not a point of the curve. */
export function normalizePublicKey(hex: string): string | null {
  const h = hex.startsWith('0x') || hex.startsWith('0X') ? hex.slice(2) : hex;
  if (!HEX.test(h) || (h.length !== 66 && h.length !== 130)) return null;
  try {
    const point = secp256k1.Point.fromBytes(hexToBytes(h.toLowerCase()));
    point.assertValidity();
    return point.toHex(true);
  } catch {
    return null;
  }
}

/** A new random root key pair: the private key (32 bytes) and the compressed public key (hex). */
export function generateKeyPair(): { publicKey: string; privateKey: Uint8Array } {
  const { secretKey, publicKey } = secp256k1.keygen();
  return { publicKey: bytesToHex(publicKey), privateKey: secretKey };
}

/**
 * The key operations of a NetworkAdapter whose keys are secp256k1 (the sandbox and EVM adapters):
 * root key generation and public-key validation, the same for both. Addresses differ (derive).
 */
export const secp256k1KeyOps = {
  curve: CURVE,
  generateKeyPair(): { curve: typeof CURVE; publicKey: string; privateKey: Uint8Array } {
    return { curve: CURVE, ...generateKeyPair() };
  },
  normalizePublicKey: (publicKey: string) => normalizePublicKey(publicKey),
  validatePublicKey: (curve: string, publicKey: string) => curve === CURVE && normalizePublicKey(publicKey) !== null,
  /** The child public key at `index` under a wallet's root (throws for a root of another curve). */
  deriveChild(family: string, wallet: { curve: string; publicKey: string }, index: number): string {
    return secp256k1KeyOps.deriveChildWithAddress(family, wallet, index).publicKey;
  },
  /** The child public key at `index` under a wallet's root and its EVM-form address (lowercase). */
  deriveChildWithAddress(family: string, wallet: { curve: string; publicKey: string }, index: number): { publicKey: string; address: string } {
    if (wallet.curve !== CURVE) throw new Error(`${family} wallets are ${CURVE}, not ${wallet.curve}`);
    return deriveChildWithAddress(wallet.publicKey, index);
  },
  /** deriveChildWithAddress for many (wallet, index) pairs, with one field inversion for them all (deriveChildrenWithAddress). */
  deriveChildrenWithAddress(
    family: string,
    pairs: readonly { wallet: { curve: string; publicKey: string }; index: number }[],
  ): { publicKey: string; address: string }[] {
    const other = pairs.find((p) => p.wallet.curve !== CURVE);
    if (other) throw new Error(`${family} wallets are ${CURVE}, not ${other.wallet.curve}`);
    return deriveChildrenWithAddress(pairs.map((p) => [p.wallet.publicKey, p.index] as const));
  },
};

export function publicKeyOf(privateKey: Uint8Array): string {
  return bytesToHex(secp256k1.getPublicKey(privateKey, true));
}

export function chainCodeOf(rootPublicKey: string): string {
  return bytesToHex(sha256(concat(CHAIN_CODE_TAG, hexToBytes(rootPublicKey))));
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/**
 * A root public key parsed once (issue 22: a payment intent's address derivation was ~2 ms of CPU,
 * most of it decompressing the root point and then the child's again): its point, its bytes and its
 * chain code, per root, for the most recently used roots.
 */
interface ParsedRoot {
  point: InstanceType<typeof secp256k1.Point>;
  bytes: Uint8Array;
  /** The point's uncompressed SEC1 bytes (libsecp256k1 parses them without a square root). */
  uncompressed: Uint8Array;
  chainCode: Uint8Array;
}
/** A cache of the `size` most recently used answers of `compute` (a null answer is not cached). */
function recentlyUsed<V>(size: number, compute: (key: string) => V | null): (key: string) => V | null {
  const entries = new Map<string, V>();
  return (key) => {
    const hit = entries.get(key);
    if (hit !== undefined) {
      entries.delete(key); // most recently used last
      entries.set(key, hit);
      return hit;
    }
    const value = compute(key);
    if (value === null) return null;
    entries.set(key, value);
    if (entries.size > size) entries.delete(entries.keys().next().value!);
    return value;
  };
}
const parsedRoots = recentlyUsed<ParsedRoot>(1024, (rootPublicKey) => {
  const bytes = hexToBytes(rootPublicKey);
  const point = secp256k1.Point.fromBytes(bytes);
  return { point, bytes, uncompressed: point.toBytes(false), chainCode: hexToBytes(chainCodeOf(rootPublicKey)) };
});
const parsedRoot = (rootPublicKey: string): ParsedRoot => parsedRoots(rootPublicKey)!;

/** The tweak of the child at `index`: IL of BIP32's HMAC-SHA512, as a number and as its 32 bytes. */
function tweakOf(
  rootPublicKey: string,
  index: number,
  root: Pick<ParsedRoot, 'bytes' | 'chainCode'> = parsedRoot(rootPublicKey),
): { il: bigint; bytes: Uint8Array } {
  if (!Number.isInteger(index) || index < 0 || index > MAX_DERIVATION_INDEX) throw new RangeError(`derivation index out of range: ${index}`);
  const data = new Uint8Array(37);
  data.set(root.bytes, 0);
  new DataView(data.buffer).setUint32(33, index, false);
  const bytes = hmac(sha512, root.chainCode, data).subarray(0, 32);
  const il = BigInt('0x' + bytesToHex(bytes));
  // BIP32: such an index is invalid (probability below 2^-127); the caller never gets an address for it.
  if (il === 0n || il >= N) throw new RangeError(`derivation index ${index} is invalid for this key`);
  return { il, bytes };
}

/**
 * The base point G with its own precomputed table (issue 22, point 1): a copy of G, so noble's BASE
 * (signing, key generation) keeps its tables, with a window of 8 bits instead of noble's 6: 33 point
 * additions per multiply instead of 44 (~165 µs instead of ~215 µs), for a table of 4,224 points
 * built on the first derivation (~35 ms of CPU, under 1 MiB). Windows of 10 and 12 bits measured
 * 146 and 156 µs for 123 and 405 ms of table: not worth it (bench/derivation.ts).
 */
const G = secp256k1.Point.fromAffine(secp256k1.Point.BASE.toAffine()).precompute(8);
const Fp = secp256k1.Point.Fp;

function childPoint(rootPublicKey: string, index: number, root: ParsedRoot = parsedRoot(rootPublicKey)) {
  // multiplyUnsafe (not constant-time) is sound here: the scalar is a function of the root PUBLIC key
  // and the index, nothing secret, so timing reveals nothing (issue 22: the blinded constant-time
  // multiply was half of a payment intent's derivation). derivePrivateKey keeps constant-time arithmetic.
  const child = G.multiplyUnsafe(tweakOf(rootPublicKey, index, root).il).add(root.point);
  if (child.equals(secp256k1.Point.ZERO)) throw new RangeError(`derivation index ${index} is invalid for this key`);
  return child;
}

/**
 * The child at m/<index> by libsecp256k1 (root + IL·G), its compressed key and EVM-form address, or
 * null without the native addon. libsecp256k1 checks the tweak and refuses a point at infinity.
 */
function nativeChild(rootPublicKey: string, index: number): { publicKey: string; address: string } | null {
  const native = nativeSecp256k1();
  if (!native) return null;
  const root = parsedRoot(rootPublicKey);
  const { bytes } = tweakOf(rootPublicKey, index, root);
  let child: Uint8Array;
  try {
    child = native.publicKeyTweakAdd(root.uncompressed, bytes, false);
  } catch {
    throw new RangeError(`derivation index ${index} is invalid for this key`);
  }
  const xy = child.subarray(1);
  return { publicKey: (xy[63]! & 1 ? '03' : '02') + bytesToHex(xy.subarray(0, 32)), address: '0x' + bytesToHex(keccak_256(xy).subarray(12)) };
}

/** The child public key (compressed hex) at m/<index> under a root public key (compressed hex). */
export function derivePublicKey(rootPublicKey: string, index: number): string {
  return deriveChildWithAddress(rootPublicKey, index).publicKey;
}

/**
 * The compressed key and the EVM-form address of a projective point, from ONE affine conversion
 * (`invertedZ`: 1/Z, computed for a whole group by deriveChildrenWithAddress) — SEC1 encoding spelled
 * out (02/03 || x, and 04 || x || y for the hash) where toHex(true) then toBytes(false) converted twice.
 * The point is checked on the curve (y² = x³ + 7) before it is encoded, as toBytes checks it.
 */
function encodeChild(child: InstanceType<typeof secp256k1.Point>, invertedZ: bigint): { publicKey: string; address: string } {
  const { x, y } = child.toAffine(invertedZ);
  if (!Fp.eql(Fp.sqr(y), Fp.add(Fp.mul(Fp.sqr(x), x), 7n))) throw new Error('derived point is not on the curve');
  const xHex = x.toString(16).padStart(64, '0');
  const xy = hexToBytes(xHex + y.toString(16).padStart(64, '0'));
  return { publicKey: ((y & 1n) === 0n ? '02' : '03') + xHex, address: '0x' + bytesToHex(keccak_256(xy).subarray(12)) };
}

/** The child public key at m/<index> and its EVM-form address, from one point (as addressOf(derivePublicKey(...)) without parsing the key back). */
export function deriveChildWithAddress(rootPublicKey: string, index: number): { publicKey: string; address: string } {
  return nativeChild(rootPublicKey, index) ?? nobleDerivation.deriveChildWithAddress(rootPublicKey, index);
}

/** The derivation by @noble/curves, where the native addon does not load (exported for the tests, which hold it to the reference too). */
export const nobleDerivation = {
  deriveChildWithAddress(rootPublicKey: string, index: number): { publicKey: string; address: string } {
    const child = childPoint(rootPublicKey, index);
    return encodeChild(child, Fp.inv(child.Z));
  },
  /** For many pairs: one field inversion for them all (Montgomery's trick, FpInvertBatch). */
  deriveChildrenWithAddress(pairs: readonly (readonly [rootPublicKey: string, index: number])[]): { publicKey: string; address: string }[] {
    const children = pairs.map(([rootPublicKey, index]) => childPoint(rootPublicKey, index));
    const inverses = FpInvertBatch(
      Fp,
      children.map((c) => c.Z),
      true,
    );
    return children.map((c, i) => encodeChild(c, inverses[i]!));
  },
};

/**
 * deriveChildWithAddress for many (root, index) pairs at once, answers in their order (issue 22: a
 * payment-intents group derives its addresses together): one libsecp256k1 call per pair, or by
 * @noble/curves one field inversion for the group (Montgomery's trick, FpInvertBatch) instead of one
 * per child. Throws as deriveChildWithAddress
 * would for any pair (an index out of range, or invalid for its key): the caller derives alone then.
 */
export function deriveChildrenWithAddress(pairs: readonly (readonly [rootPublicKey: string, index: number])[]): { publicKey: string; address: string }[] {
  if (nativeSecp256k1()) return pairs.map(([rootPublicKey, index]) => nativeChild(rootPublicKey, index)!);
  return nobleDerivation.deriveChildrenWithAddress(pairs);
}

/** The child private key at m/<index> under a root private key. */
export function derivePrivateKey(rootPrivateKey: Uint8Array, index: number): Uint8Array {
  const root = publicKeyOf(rootPrivateKey);
  const k = (BigInt('0x' + bytesToHex(rootPrivateKey)) + tweakOf(root, index).il) % N;
  return hexToBytes(k.toString(16).padStart(64, '0'));
}

/** The EVM-form address of a public key (compressed or uncompressed hex). */
export function addressOf(publicKey: string): string {
  const uncompressed = secp256k1.Point.fromBytes(hexToBytes(publicKey)).toBytes(false);
  return '0x' + bytesToHex(keccak_256(uncompressed.subarray(1)).subarray(12));
}

export const ADDRESS_PATTERN = /^0x[0-9a-f]{40}$/;

/** Keccak-256 hex of UTF-8 text (deterministic sandbox values). */
export function keccakHex(text: string): string {
  return bytesToHex(keccak_256(new TextEncoder().encode(text)));
}
export { bytesToHex, hexToBytes };

/**
 * A signed transfer, as the sandbox chain accepts it for broadcast (the "raw transaction" of the
 * sandbox): JSON `{ "payload": {...}, "signature": "<64-byte compact r||s, hex>" }`. The signature is
 * ECDSA secp256k1 over SHA-256 of the payload's canonical JSON (keys sorted, amount a decimal string),
 * made with the private key of `payload.fromPublicKey`, whose address must be `payload.fromAddress`.
 * The nonce makes two equal transfers two transactions.
 */
export interface TransferPayload {
  networkId: string;
  assetNetworkId: string;
  fromAddress: string;
  fromPublicKey: string;
  toAddress: string;
  amount: string;
  nonce: string;
}

/** The canonical JSON of a transfer payload (keys sorted, no spaces): what is signed. */
export const canonicalTransferJson = (p: TransferPayload): string =>
  JSON.stringify(Object.fromEntries(Object.entries(p).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))));
/** SHA-256 of the payload's canonical JSON (UTF-8): the 32 bytes that are signed, in one native call. */
const digestOf = (p: TransferPayload): Buffer => createHash('sha256').update(canonicalTransferJson(p), 'utf8').digest();

/**
 * libsecp256k1 (Bitcoin Core's C library) for the signed transfers' ECDSA and the addresses'
 * derivation, natively: the `secp256k1` package's N-API addon, prebuilt in the package for linux-x64,
 * darwin-arm64 and win32-x64 (nothing is compiled at install: `node-gyp-build` finds the prebuilt
 * binary), loaded on first use. Measured on the
 * 2-core machines (issue 22, session 15; bench/derivation.ts for the derivation): signing 31 µs against
 * 83 µs for libsecp256k1 as WebAssembly (the `tiny-secp256k1` package used before) and ~500 µs for
 * @noble/curves; verifying 38 µs against 159 µs (OpenSSL ~400 µs, @noble ~1,400 µs); a child key
 * 26 µs against 112-147 µs. Where the addon does not load (another platform), @noble/curves does the
 * same work, slower. Both sign RFC 6979 deterministically with low-s (src/chains/signed-transfer.test.ts
 * holds the signatures byte for byte equal to @noble's), so a transfer signed again is the same
 * transaction, and both verify strictly: r and s in [1, n-1], s in the lower half of the order.
 */
interface NativeSecp256k1 {
  ecdsaSign(message: Uint8Array, privateKey: Uint8Array): { signature: Uint8Array; recid: number };
  ecdsaVerify(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean;
  publicKeyTweakAdd(publicKey: Uint8Array, tweak: Uint8Array, compressed?: boolean): Uint8Array;
}
let nativeSecp: NativeSecp256k1 | null | undefined;
/** Which libsecp256k1 this process uses: the native addon, or @noble/curves where it does not load. */
export const secp256k1Backend = (): 'native' | '@noble' => (nativeSecp256k1() ? 'native' : '@noble');
/** The native addon, or null where it does not load. */
function nativeSecp256k1(): NativeSecp256k1 | null {
  if (nativeSecp === undefined)
    try {
      nativeSecp = createRequire(import.meta.url)('secp256k1/bindings') as NativeSecp256k1;
    } catch {
      nativeSecp = null;
    }
  return nativeSecp;
}

/** ECDSA over a SHA-256 digest by @noble/curves, where the native addon does not load (exported for the tests, which hold it to the native one). */
export const nobleEcdsa = {
  sign: (digest: Uint8Array, privateKey: Uint8Array): Uint8Array => secp256k1.sign(digest, privateKey, { prehash: false }),
  verify: (signature: Uint8Array, digest: Uint8Array, publicKey: Uint8Array): boolean => secp256k1.verify(signature, digest, publicKey, { prehash: false }),
};

/** Signs a transfer (integrators' SELF_CUSTODY signing does this on their side; tests and custodial wallets here). */
export function signTransfer(payload: TransferPayload, privateKey: Uint8Array): string {
  const digest = digestOf(payload);
  const native = nativeSecp256k1();
  const signature = native ? native.ecdsaSign(digest, privateKey).signature : nobleEcdsa.sign(digest, privateKey);
  return JSON.stringify({ payload, signature: Buffer.from(signature).toString('hex') });
}

/**
 * A sender's public key as a signed transfer names it, checked once (issue 22: parsing the point twice
 * and hashing it to an address was ~0.25 ms of CPU per transfer): its compressed form, its address and
 * its uncompressed SEC1 bytes (libsecp256k1 verifies ~20% faster with them than with the compressed
 * form, which it would decompress each time), for the most recently seen keys. Public material only
 * (nothing secret is cached); a key that is not a point of the curve is not cached.
 */
interface SenderKey {
  publicKey: string;
  address: string;
  uncompressed: Uint8Array;
}
const senderKey = recentlyUsed<SenderKey>(1024, (fromPublicKey) => {
  const publicKey = normalizePublicKey(fromPublicKey);
  if (!publicKey) return null;
  const uncompressed = secp256k1.Point.fromBytes(hexToBytes(publicKey)).toBytes(false);
  return { publicKey, address: '0x' + bytesToHex(keccak_256(uncompressed.subarray(1)).subarray(12)), uncompressed };
});

/**
 * ECDSA secp256k1 verification of a compact (r||s, 64 bytes) signature over a SHA-256 digest by
 * libsecp256k1, with the same rules as @noble's `verify` by default: r and s in [1, n-1] and s in the
 * lower half of the order (strict: the other half is the same signature made malleable).
 */
function verifyCompact(signature: Uint8Array, digest: Uint8Array, key: Uint8Array): boolean {
  const native = nativeSecp256k1();
  try {
    // libsecp256k1 refuses a high s (not normalized), as @noble does by default (lowS).
    return native ? native.ecdsaVerify(signature, digest, key) : nobleEcdsa.verify(signature, digest, key);
  } catch {
    return false; // r or s not below the order
  }
}

/** Parses and verifies a signed transfer; throws a RangeError saying what is wrong. */
export function verifySignedTransfer(signed: string): TransferPayload {
  let parsed: { payload?: Partial<TransferPayload>; signature?: unknown };
  try {
    parsed = JSON.parse(signed);
  } catch {
    throw new RangeError('not a signed transfer (JSON expected)');
  }
  const p = parsed?.payload;
  const fields = ['networkId', 'assetNetworkId', 'fromAddress', 'fromPublicKey', 'toAddress', 'amount', 'nonce'] as const;
  if (!p || typeof p !== 'object' || fields.some((f) => typeof p[f] !== 'string') || Object.keys(p).length !== fields.length)
    throw new RangeError(`the payload must have exactly these string fields: ${fields.join(', ')}`);
  const payload = p as TransferPayload;
  if (!/^[1-9]\d{0,77}$/.test(payload.amount) || BigInt(payload.amount) > MAX_AMOUNT)
    throw new RangeError('amount must be a positive integer of base units, at most 2^256 - 1');
  if (!ADDRESS_PATTERN.test(payload.toAddress) || !ADDRESS_PATTERN.test(payload.fromAddress)) throw new RangeError('malformed address');
  const sender = senderKey(payload.fromPublicKey);
  if (!sender || sender.address !== payload.fromAddress) throw new RangeError('fromPublicKey does not own fromAddress');
  if (typeof parsed.signature !== 'string' || !/^[0-9a-f]{128}$/.test(parsed.signature)) throw new RangeError('signature must be 64 bytes of hex');
  if (!verifyCompact(hexToBytes(parsed.signature), digestOf(payload), sender.uncompressed)) throw new RangeError('the signature does not verify');
  return payload;
}
