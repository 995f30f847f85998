import { describe, expect, test } from 'vitest';
import fc from 'fast-check';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { hmac } from '@noble/hashes/hmac.js';
import { sha256, sha512 } from '@noble/hashes/sha2.js';
import { keccak_256 } from '@noble/hashes/sha3.js';
import {
  addressOf,
  bytesToHex,
  derivePrivateKey,
  derivePublicKey,
  deriveChildWithAddress,
  deriveChildrenWithAddress,
  generateKeyPair,
  hexToBytes,
  MAX_DERIVATION_INDEX,
  nobleDerivation,
  publicKeyOf,
  secp256k1Backend,
} from './secp256k1';

/**
 * Deposit addresses are where customers send money (issue 22, point 1): the faster derivation (a
 * private 8-bit window for G, one affine conversion, one field inversion per group) must answer
 * exactly what the derivation answered before it. `reference` is that derivation as it was (noble's
 * BASE, toHex(true), then toBytes(false) hashed), written out from the scheme in docs/catalog-custody.md.
 */
function reference(rootPublicKey: string, index: number): { publicKey: string; address: string } {
  const rootBytes = hexToBytes(rootPublicKey);
  const chainCode = sha256(new Uint8Array([...new TextEncoder().encode('ftis/v1/chain-code'), ...rootBytes]));
  const data = new Uint8Array(37);
  data.set(rootBytes, 0);
  new DataView(data.buffer).setUint32(33, index, false);
  const il = BigInt('0x' + bytesToHex(hmac(sha512, chainCode, data).subarray(0, 32)));
  const child = secp256k1.Point.BASE.multiplyUnsafe(il).add(secp256k1.Point.fromBytes(rootBytes));
  return { publicKey: child.toHex(true), address: '0x' + bytesToHex(keccak_256(child.toBytes(false).subarray(1)).subarray(12)) };
}

const index = fc.oneof(fc.integer({ min: 0, max: MAX_DERIVATION_INDEX }), fc.integer({ min: 0, max: 64 }), fc.constant(MAX_DERIVATION_INDEX));
// Any valid root: a random private key in [1, n-1] (fast-check shrinks it), its compressed public key.
const root = fc.bigInt({ min: 1n, max: secp256k1.Point.Fn.ORDER - 1n }).map((k) => publicKeyOf(hexToBytes(k.toString(16).padStart(64, '0'))));

test('on linux-x64 the native libsecp256k1 derives, signs and verifies (the prebuilt addon of the secp256k1 package loads)', () => {
  if (process.platform === 'linux' && process.arch === 'x64') expect(secp256k1Backend()).toBe('native');
});

// The native libsecp256k1 (the process's own derivation on these machines) and @noble/curves (where the addon does not load), held to one reference.
describe.each([
  ['the process’s derivation', { deriveChildWithAddress, deriveChildrenWithAddress }],
  ['@noble/curves', nobleDerivation],
])('address derivation (issue 22, point 1): the same keys and addresses as before, by %s', (_name, { deriveChildWithAddress, deriveChildrenWithAddress }) => {
  test('known vectors, computed by the derivation before the change', () => {
    // [root private key, index, child public key, address], from main at ca394d0.
    const vectors: [string, number, string, string][] = [
      ['01'.repeat(32), 0, '03a5ca42022e982fce6383ff6977990117ff857e32a2379da9fb1f303003ca1656', '0xa40de8bf967fbd100c46882cfbbd6eb2b101f730'],
      ['01'.repeat(32), 1, '0368f8045a3288f0d0d43b7ddbb2ab876edfc5633fc5b7351184264dd5f6a27dab', '0x0ef7405b02172f49ffddcf3c85cba04a7ca41abb'],
      ['01'.repeat(32), 7, '028125dc468b1d42d6f0234e6fb1a391b3ac8eec5828a0e61fb5b40bcb90aa003c', '0x5943cd1f7f67b04e3ed40a15dd5e53bb552d0e6f'],
      [
        '01'.repeat(32),
        MAX_DERIVATION_INDEX,
        '02fe9f034551ade5a8f38eab2cad4e51e19891bd1d17d5b02dc7f841ffb20605c5',
        '0xf8fec1d69d7f9d5571b1426a63b4f313cce045a8',
      ],
      ['fe'.repeat(31) + '01', 0, '0395ce79a998f55bf289d2ded04e4c3f76f3050bbb969f95c27c8ce99e13063499', '0x7d43385031eb0902da70a3ba9815345b325d18bb'],
      ['fe'.repeat(31) + '01', 7, '034db389e72be6c2fedae8f8049906a114f6e130fe70ed1085b781cbb9434e7f7d', '0xe5906b95a65498ee24fb9f1a551626352db0f0a6'],
      ['00'.repeat(31) + '03', 1, '0368c13dfdd8f29eff9776828ae88fc01b2283f70a6fd59f72abcefb0a017476d8', '0xc09d431f3ae655a3c13a02e918c570d0408fc317'],
      [
        '00'.repeat(31) + '03',
        MAX_DERIVATION_INDEX,
        '032a52228cc2674cdb622a2fc96262014b1e5c18f8c5c537d0e408e4506f12af49',
        '0x42ee045b693c52103e1a24bf82cc7da8715c0c66',
      ],
    ];
    const pairs = vectors.map(([k, i]) => [publicKeyOf(hexToBytes(k)), i] as const);
    const expected = vectors.map(([, , publicKey, address]) => ({ publicKey, address }));
    expect(pairs.map(([r, i]) => deriveChildWithAddress(r, i))).toEqual(expected);
    expect(deriveChildrenWithAddress(pairs)).toEqual(expected);
  });

  test('one at a time: the reference answer, derivePublicKey and addressOf agree, and so does the private key', () => {
    fc.assert(
      fc.property(root, index, (r, i) => {
        const got = deriveChildWithAddress(r, i);
        expect(got).toEqual(reference(r, i));
        expect(derivePublicKey(r, i)).toBe(got.publicKey);
        expect(addressOf(got.publicKey)).toBe(got.address);
      }),
      { numRuns: 400 },
    );
    for (let n = 0; n < 20; n++) {
      const kp = generateKeyPair();
      const i = n * 104729;
      expect(deriveChildWithAddress(kp.publicKey, i).publicKey).toBe(publicKeyOf(derivePrivateKey(kp.privateKey, i)));
    }
  });

  test('a group (1 to 40 pairs, roots repeated and mixed): each answer as derived alone, in order', () => {
    fc.assert(
      fc.property(fc.array(root, { minLength: 1, maxLength: 4 }), fc.array(fc.tuple(fc.nat(), index), { minLength: 1, maxLength: 40 }), (roots, picks) => {
        const pairs = picks.map(([r, i]) => [roots[r % roots.length]!, i] as const);
        expect(deriveChildrenWithAddress(pairs)).toEqual(pairs.map(([r, i]) => reference(r, i)));
      }),
      { numRuns: 60 },
    );
    expect(deriveChildrenWithAddress([])).toEqual([]);
  });

  test('an index out of range fails the group as it fails alone', () => {
    const r = generateKeyPair().publicKey;
    for (const bad of [-1, MAX_DERIVATION_INDEX + 1, 1.5, Number.NaN]) {
      expect(() => deriveChildWithAddress(r, bad)).toThrow(RangeError);
      expect(() =>
        deriveChildrenWithAddress([
          [r, 0],
          [r, bad],
        ]),
      ).toThrow(RangeError);
    }
  });
});
