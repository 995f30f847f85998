import { describe, expect, test } from 'vitest';
import fc from 'fast-check';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import {
  addressOf,
  bytesToHex,
  canonicalTransferJson,
  generateKeyPair,
  hexToBytes,
  nobleEcdsa,
  signTransfer,
  verifySignedTransfer,
  type TransferPayload,
} from './secp256k1';

/**
 * The sandbox's signed-transfer scheme (docs/catalog-custody.md): ECDSA secp256k1 over SHA-256 of the
 * payload's canonical JSON, compact r||s, low-s. The service signs and the sandbox verifies with
 * libsecp256k1 (issue 22); these properties hold it to the same signatures (RFC 6979, byte for byte)
 * and the same answers as @noble/curves' sign and verify, which integrators' libraries follow.
 */
const N = secp256k1.Point.Fn.ORDER;
const keys = Array.from({ length: 4 }, () => generateKeyPair());
const payloadOf = (k: { publicKey: string }, amount: bigint, nonce: string): TransferPayload => ({
  networkId: '01a21be0-c6cf-703a-a3e2-66d787a73898',
  assetNetworkId: '01a21be0-ca50-743c-8de1-10290efecadb',
  fromAddress: addressOf(k.publicKey),
  fromPublicKey: k.publicKey,
  toAddress: '0x00000000000000000000000000000000000000b1',
  amount: amount.toString(),
  nonce,
});
const nobleAccepts = (signature: string, p: TransferPayload) => {
  try {
    return secp256k1.verify(Buffer.from(signature, 'hex'), new TextEncoder().encode(canonicalTransferJson(p)), Buffer.from(p.fromPublicKey, 'hex'));
  } catch {
    return false;
  }
};
const digestOf = (p: TransferPayload) => sha256(new TextEncoder().encode(canonicalTransferJson(p)));
const fallbackAccepts = (signature: string, p: TransferPayload) => {
  try {
    return nobleEcdsa.verify(hexToBytes(signature), digestOf(p), hexToBytes(p.fromPublicKey));
  } catch {
    return false;
  }
};
const accepts = (signature: string, p: TransferPayload) => {
  try {
    verifySignedTransfer(JSON.stringify({ payload: p, signature }));
    return true;
  } catch (e) {
    expect(e).toBeInstanceOf(RangeError);
    return false;
  }
};

describe('signed transfers', () => {
  test('signing is RFC 6979 deterministic: byte for byte the signature @noble makes, the same again for the same transfer', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: keys.length - 1 }),
        fc.bigInt({ min: 1n, max: 10n ** 30n }),
        fc.string({ minLength: 1, maxLength: 40 }),
        (k, amount, nonce) => {
          const p = payloadOf(keys[k]!, amount, nonce);
          const signed = signTransfer(p, keys[k]!.privateKey);
          const noble = bytesToHex(secp256k1.sign(new TextEncoder().encode(canonicalTransferJson(p)), keys[k]!.privateKey));
          expect(JSON.parse(signed)).toEqual({ payload: p, signature: noble });
          // The fallback where the native addon does not load signs the same.
          expect(bytesToHex(nobleEcdsa.sign(digestOf(p), keys[k]!.privateKey))).toBe(noble);
          expect(signTransfer(p, keys[k]!.privateKey)).toBe(signed);
        },
      ),
      { numRuns: 200 },
    );
  });

  test('libsecp256k1 verification answers as @noble does: a valid signature, its high-s twin, a changed byte, another key, another payload', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: keys.length - 1 }),
        fc.bigInt({ min: 1n, max: 10n ** 30n }),
        fc.string({ minLength: 1, maxLength: 40 }),
        fc.integer({ min: 0, max: 127 }),
        fc.integer({ min: 1, max: 15 }),
        (k, amount, nonce, at, delta) => {
          const p = payloadOf(keys[k]!, amount, nonce);
          const { signature } = JSON.parse(signTransfer(p, keys[k]!.privateKey)) as { signature: string };
          const s = BigInt('0x' + signature.slice(64));
          const highS = signature.slice(0, 64) + (N - s).toString(16).padStart(64, '0');
          const flipped = signature.slice(0, at) + ((parseInt(signature[at]!, 16) + delta) % 16).toString(16) + signature.slice(at + 1);
          const other = JSON.parse(signTransfer(p, keys[(k + 1) % keys.length]!.privateKey)).signature as string;
          const changed = { ...p, amount: (amount + 1n).toString() };
          const cases: [string, TransferPayload, boolean][] = [
            [signature, p, true],
            [highS, p, false],
            [flipped, p, false],
            [other, p, false],
            [signature, changed, false],
          ];
          for (const [sig, payload, expected] of cases) {
            expect(nobleAccepts(sig, payload)).toBe(expected);
            expect(fallbackAccepts(sig, payload)).toBe(expected);
            expect(accepts(sig, payload)).toBe(expected);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  test('signatures out of range and keys off the curve are refused, never thrown past the RangeError', () => {
    const p = payloadOf(keys[0]!, 5n, 'n');
    for (const signature of ['0'.repeat(128), 'f'.repeat(128), bytesToHex(new Uint8Array(64).fill(1)) + '', N.toString(16) + '0'.repeat(63) + '1'])
      expect(accepts(signature, p)).toBe(false);
    expect(() => verifySignedTransfer(JSON.stringify({ payload: { ...p, fromPublicKey: '02' + 'f'.repeat(64) }, signature: '1'.repeat(128) }))).toThrow(
      /does not own/,
    );
  });
});
