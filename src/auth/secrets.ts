import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** A random base62 string with `length` characters (~5.95 bits each, unbiased). */
export function randomToken(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const b of randomBytes(length)) {
      if (b < 248 && out.length < length) out += alphabet[b % 62];
    }
  }
  return out;
}

/** SHA-256 hex. Stored instead of high-entropy secrets (API keys, refresh and one-time tokens). */
export function sha256(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

export function constantTimeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}

/** API keys: `sk_test_` (sandbox) or `sk_live_` (production) then 40 base62 characters (~238 bits). */
export const apiKeyPrefix = { SANDBOX: 'sk_test_', PRODUCTION: 'sk_live_' } as const;
export function newApiKey(mode: keyof typeof apiKeyPrefix): { key: string; displayPrefix: string; keyHash: string } {
  const key = apiKeyPrefix[mode] + randomToken(40);
  return { key, displayPrefix: key.slice(0, apiKeyPrefix[mode].length + 4), keyHash: sha256(key) };
}
export const apiKeyPattern = /^sk_(test|live)_[0-9A-Za-z]{40}$/;

/** Operator keys: `op_` then 40 base62 characters. */
export const operatorKeyPattern = /^op_[0-9A-Za-z]{40}$/;
export function newOperatorKey(): { key: string; keyHash: string } {
  const key = 'op_' + randomToken(40);
  return { key, keyHash: sha256(key) };
}

/** Opaque one-time tokens (refresh, password reset, invitation): a prefix and 43 base62 characters. */
export function newOpaqueToken(prefix: string): { token: string; tokenHash: string } {
  const token = `${prefix}_${randomToken(43)}`;
  return { token, tokenHash: sha256(token) };
}
