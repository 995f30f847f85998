import { createCipheriv, createDecipheriv, hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

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

/**
 * SHA-256 hex. Stored instead of high-entropy secrets (API keys, refresh and one-time tokens).
 * crypto.hash, the one-shot form: no Hash object per call (every API key request hashes its key).
 */
export function sha256(value: string): string {
  return hash('sha256', value, 'hex');
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

/**
 * Secrets we must read back (webhook signing secrets) are sealed with AES-256-GCM: a random
 * 12-byte nonce, the 16-byte tag, then the ciphertext. The associated data binds a sealed value
 * to its row, so a ciphertext copied onto another endpoint does not open.
 */
export function seal(key: Buffer, plaintext: string, associatedData: string): Uint8Array<ArrayBuffer> {
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  cipher.setAAD(Buffer.from(associatedData));
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return new Uint8Array(Buffer.concat([nonce, cipher.getAuthTag(), body]));
}

export function unseal(key: Buffer, sealed: Uint8Array, associatedData: string): string {
  const buf = Buffer.from(sealed);
  const decipher = createDecipheriv('aes-256-gcm', key, buf.subarray(0, 12));
  decipher.setAAD(Buffer.from(associatedData));
  decipher.setAuthTag(buf.subarray(12, 28));
  return Buffer.concat([decipher.update(buf.subarray(28)), decipher.final()]).toString('utf8');
}

/** The sealing key: WEBHOOK_SECRET_KEY (base64, 32 bytes), else one created once under DATA_DIR (mode 0600). */
export function loadSealingKey(config: { WEBHOOK_SECRET_KEY?: string; DATA_DIR: string }): Buffer {
  let key: Buffer;
  if (config.WEBHOOK_SECRET_KEY) key = Buffer.from(config.WEBHOOK_SECRET_KEY, 'base64');
  else {
    const file = resolve(config.DATA_DIR, 'keys/webhook-secrets.aes256');
    if (existsSync(file)) key = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
    else {
      key = randomBytes(32);
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, key.toString('base64'), { mode: 0o600 });
    }
  }
  if (key.length !== 32) throw new Error('WEBHOOK_SECRET_KEY must be 32 bytes, base64-encoded');
  return key;
}

/** Webhook signing secrets: `whsec_` then 43 base62 characters (~256 bits); the HMAC key is the whole string's UTF-8 bytes. */
export function newWebhookSecret(): string {
  return 'whsec_' + randomToken(43);
}
