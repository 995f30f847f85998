import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Receiver-side verification of FTIS webhooks, published to integrators: keep it dependency-free
 * (node:crypto only). Scheme: X-Webhook-Signature = lowercase hex HMAC-SHA256(secret,
 * "<X-Webhook-Timestamp>.<raw body bytes>"), X-Webhook-Timestamp = unix seconds.
 *
 *   const { deliveryId } = verifyWebhook(rawBodyBuffer, req.headers, process.env.FTIS_WEBHOOK_SECRET);
 *
 * Pass the body exactly as received (before any JSON parsing): re-serialized JSON will not verify.
 */

export interface VerifyOptions {
  /** Maximum distance, in seconds, between the timestamp and now, either way. Default 300. */
  toleranceSeconds?: number;
  /** Default new Date(). */
  now?: Date;
}

export type WebhookVerificationReason = 'missing_header' | 'invalid_timestamp' | 'timestamp_too_old' | 'timestamp_in_future' | 'invalid_signature';

export class WebhookVerificationError extends Error {
  constructor(
    public reason: WebhookVerificationReason,
    message: string,
  ) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

const SIGNATURE_HEADER = 'x-webhook-signature';
const TIMESTAMP_HEADER = 'x-webhook-timestamp';
const DELIVERY_ID_HEADER = 'x-webhook-delivery-id';
const DEFAULT_TOLERANCE_SECONDS = 300;

function requireSecret(secret: string): void {
  // An empty key would make every signature forgeable: a configuration error, not a bad request.
  if (typeof secret !== 'string' || secret.length === 0) throw new TypeError('webhook secret must be a non-empty string');
}

/** Lowercase hex HMAC-SHA256 over `${timestamp}.` followed by the raw body bytes. */
export function signWebhook(secret: string, timestampSeconds: number, rawBody: string | Uint8Array): string {
  requireSecret(secret);
  if (!Number.isSafeInteger(timestampSeconds) || timestampSeconds < 0) throw new TypeError('timestamp must be a non-negative integer (unix seconds)');
  return hmacHex(secret, String(timestampSeconds), rawBody);
}

// The timestamp is signed as the exact header text, so any change to it breaks the signature.
function hmacHex(secret: string, timestampText: string, rawBody: string | Uint8Array): string {
  return createHmac('sha256', secret).update(`${timestampText}.`, 'utf8').update(rawBody).digest('hex');
}

/**
 * Case-insensitive header lookup. Several values (a string[] or differently-cased keys) are joined
 * with ', ', as fetch's Headers does, so both forms behave alike: a duplicated signature or
 * timestamp then fails its format check instead of one copy being picked silently.
 */
function header(headers: Headers | Record<string, string | string[] | undefined>, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const values: string[] = [];
  for (const [key, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (key.toLowerCase() !== name || value === undefined) continue;
    values.push(...(Array.isArray(value) ? value : [value]));
  }
  return values.length === 0 ? undefined : values.join(', ');
}

/** Verifies a delivery: rawBody is the exact received bytes (string or Uint8Array/Buffer), headers a Headers object or a plain record (case-insensitive lookup of x-webhook-signature, x-webhook-timestamp, x-webhook-delivery-id). Returns { deliveryId, timestamp }. Throws WebhookVerificationError. */
export function verifyWebhook(
  rawBody: string | Uint8Array,
  headers: Headers | Record<string, string | string[] | undefined>,
  secret: string,
  opts: VerifyOptions = {},
): { deliveryId: string; timestamp: number } {
  requireSecret(secret);
  const tolerance = opts.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (!Number.isFinite(tolerance) || tolerance < 0) throw new TypeError('toleranceSeconds must be a non-negative number');
  if (opts.now !== undefined && !Number.isFinite(opts.now.getTime())) throw new TypeError('now must be a valid Date');

  const signature = header(headers, SIGNATURE_HEADER);
  const timestampText = header(headers, TIMESTAMP_HEADER);
  const deliveryId = header(headers, DELIVERY_ID_HEADER)?.trim();
  if (!signature) throw new WebhookVerificationError('missing_header', 'X-Webhook-Signature header is missing');
  if (!timestampText) throw new WebhookVerificationError('missing_header', 'X-Webhook-Timestamp header is missing');
  if (!deliveryId) throw new WebhookVerificationError('missing_header', 'X-Webhook-Delivery-Id header is missing');

  if (!/^\d{1,15}$/.test(timestampText)) throw new WebhookVerificationError('invalid_timestamp', 'X-Webhook-Timestamp is not unix seconds');
  const timestamp = Number(timestampText);

  // The format check keeps timingSafeEqual's equal-length requirement from ever throwing, and
  // rejects uppercase hex or prefixes outright: the scheme is exact lowercase hex.
  const expected = Buffer.from(hmacHex(secret, timestampText, rawBody), 'hex');
  if (!/^[0-9a-f]{64}$/.test(signature) || !timingSafeEqual(expected, Buffer.from(signature, 'hex'))) {
    throw new WebhookVerificationError('invalid_signature', 'X-Webhook-Signature does not match the body');
  }

  // Checked after the signature, so a stale or future timestamp is reported only for authentic
  // messages; a valid signature does not save either (replay protection).
  const now = Math.floor((opts.now ?? new Date()).getTime() / 1000);
  if (now - timestamp > tolerance) throw new WebhookVerificationError('timestamp_too_old', `timestamp is more than ${tolerance} s old`);
  if (timestamp - now > tolerance) throw new WebhookVerificationError('timestamp_in_future', `timestamp is more than ${tolerance} s in the future`);
  return { deliveryId, timestamp };
}
