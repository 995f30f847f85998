import { secp256k1 } from '@noble/curves/secp256k1.js';
import { hmac } from '@noble/hashes/hmac.js';
import { sha512 } from '@noble/hashes/sha2.js';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { cpuUsage } from 'node:process';
import { deriveChildWithAddress, deriveChildrenWithAddress, generateKeyPair, chainCodeOf, hexToBytes } from '../src/chains/secp256k1';

/**
 * The CPU of a deposit address's derivation (issue 22, point 1): µs of process CPU per derivation,
 * as the code derived before the change (same run, for the ratio), alone (deriveChildWithAddress)
 * and in groups of 8 and 25 (deriveChildrenWithAddress), then its parts one by one (HMAC-SHA512,
 * the base-point multiply with noble's 6-bit window and with the 8-bit one the derivation uses, the
 * add, an affine conversion, toBytes(false), keccak).
 * Short (a few seconds); repeat it for rounds (BENCH_DERIVATION_ROUNDS, default 3).
 *
 *   npx tsx bench/derivation.ts
 */
const ROUNDS = Number(process.env.BENCH_DERIVATION_ROUNDS ?? 3);
const PER_CASE = 4000;
const roots = Array.from({ length: 16 }, () => generateKeyPair().publicKey);

/** µs of CPU (user + system) per unit of `run(units)`. */
function cpuPer(units: number, run: () => void): number {
  const before = cpuUsage();
  run();
  const d = cpuUsage(before);
  return (d.user + d.system) / units;
}

/** The derivation as it was before issue 22 point 1's change (noble's BASE, toHex(true) then toBytes(false)), for the same run's comparison. */
const previousRoots = new Map(
  roots.map((r) => [r, { point: secp256k1.Point.fromBytes(hexToBytes(r)), bytes: hexToBytes(r), chainCode: hexToBytes(chainCodeOf(r)) }]),
);
function previous(rootPublicKey: string, index: number): { publicKey: string; address: string } {
  const root = previousRoots.get(rootPublicKey)!;
  const data = new Uint8Array(37);
  data.set(root.bytes, 0);
  new DataView(data.buffer).setUint32(33, index, false);
  const il = BigInt('0x' + Buffer.from(hmac(sha512, root.chainCode, data).subarray(0, 32)).toString('hex'));
  const child = secp256k1.Point.BASE.multiplyUnsafe(il).add(root.point);
  return { publicKey: child.toHex(true), address: '0x' + Buffer.from(keccak_256(child.toBytes(false).subarray(1)).subarray(12)).toString('hex') };
}

let next = 1000;
const fmt = (n: number) => n.toFixed(1).padStart(7);
for (let round = 1; round <= ROUNDS; round++) {
  const before = cpuPer(PER_CASE, () => {
    for (let i = 0; i < PER_CASE; i++) previous(roots[i % roots.length]!, next++);
  });
  const alone = cpuPer(PER_CASE, () => {
    for (let i = 0; i < PER_CASE; i++) deriveChildWithAddress(roots[i % roots.length]!, next++);
  });
  const group = (size: number) =>
    cpuPer(PER_CASE, () => {
      for (let i = 0; i < PER_CASE / size; i++)
        deriveChildrenWithAddress(Array.from({ length: size }, (_, j) => [roots[(i + j) % roots.length]!, next++] as const));
    });
  const g8 = group(8);
  const g25 = group(25);

  // The parts, on one root.
  const root = roots[0]!;
  const rootPoint = secp256k1.Point.fromBytes(hexToBytes(root));
  const chainCode = hexToBytes(chainCodeOf(root));
  const data = new Uint8Array(37);
  data.set(hexToBytes(root), 0);
  const tweaks: bigint[] = [];
  const hmacUs = cpuPer(PER_CASE, () => {
    for (let i = 0; i < PER_CASE; i++) {
      new DataView(data.buffer).setUint32(33, next++, false);
      const h = hmac(sha512, chainCode, data);
      tweaks.push(BigInt('0x' + Buffer.from(h.subarray(0, 32)).toString('hex')) % secp256k1.Point.Fn.ORDER);
    }
  });
  const products: InstanceType<typeof secp256k1.Point>[] = [];
  const mulUs = cpuPer(PER_CASE, () => {
    for (const t of tweaks) products.push(secp256k1.Point.BASE.multiplyUnsafe(t));
  });
  const G8 = secp256k1.Point.fromAffine(secp256k1.Point.BASE.toAffine()).precompute(8);
  const mul8Us = cpuPer(PER_CASE, () => {
    for (const t of tweaks) G8.multiplyUnsafe(t);
  });
  const children: InstanceType<typeof secp256k1.Point>[] = [];
  const addUs = cpuPer(PER_CASE, () => {
    for (const p of products) children.push(p.add(rootPoint));
  });
  const affineUs = cpuPer(PER_CASE, () => {
    for (const c of children) c.toAffine();
  });
  const encodeUs = cpuPer(PER_CASE, () => {
    for (const c of children) c.toBytes(false);
  });
  const uncompressed = children.map((c) => c.toBytes(false).subarray(1));
  const keccakUs = cpuPer(PER_CASE, () => {
    for (const u of uncompressed) keccak_256(u);
  });
  console.log(
    `round ${round}: µs CPU per derivation: before (previous code) ${fmt(before)}  alone ${fmt(alone)}  group of 8 ${fmt(g8)}  group of 25 ${fmt(g25)}` +
      ` | parts: hmac-sha512 ${fmt(hmacUs)}  G·t ${fmt(mulUs)} (window 8: ${fmt(mul8Us)})  +root ${fmt(addUs)}  toAffine ${fmt(affineUs)}  toBytes(false) ${fmt(encodeUs)}  keccak ${fmt(keccakUs)}`,
  );
}
