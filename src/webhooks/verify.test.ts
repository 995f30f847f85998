import { describe, expect, it } from 'vitest';
import { createHmac } from 'node:crypto';
import { signWebhook, verifyWebhook, WebhookVerificationError, type WebhookVerificationReason } from './verify';

const secret = 'whsec_test_3f9a1c';
const ts = 1_700_000_000;
const now = new Date(ts * 1000);
const body = '{"TransactionId":"txn_1","Amount":"12.34","Note":"é€"}';

function headersFor(signature: string, timestamp: string | number = ts, deliveryId = 'dlv_1'): Record<string, string> {
  return { 'X-Webhook-Signature': signature, 'X-Webhook-Timestamp': String(timestamp), 'X-Webhook-Delivery-Id': deliveryId };
}

function reasonOf(fn: () => unknown): WebhookVerificationReason | 'no error' {
  try {
    fn();
    return 'no error';
  } catch (err) {
    expect(err).toBeInstanceOf(WebhookVerificationError);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).name).toBe('WebhookVerificationError');
    return (err as WebhookVerificationError).reason;
  }
}

describe('signWebhook', () => {
  it('is lowercase hex HMAC-SHA256 over "<ts>.<raw body>", identical to an independent computation', () => {
    const expected = createHmac('sha256', secret).update(`${ts}.${body}`).digest('hex');
    expect(signWebhook(secret, ts, body)).toBe(expected);
    expect(signWebhook(secret, ts, body)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('signs raw bytes, not a re-decoded string', () => {
    const bytes = new Uint8Array([0x7b, 0xff, 0xfe, 0x00, 0x7d]); // not valid utf-8
    const expected = createHmac('sha256', secret)
      .update(Buffer.concat([Buffer.from(`${ts}.`, 'ascii'), bytes]))
      .digest('hex');
    expect(signWebhook(secret, ts, bytes)).toBe(expected);
    expect(signWebhook(secret, ts, Buffer.from(body, 'utf8'))).toBe(signWebhook(secret, ts, body));
  });

  it('refuses an empty secret and non-integer timestamps', () => {
    expect(() => signWebhook('', ts, body)).toThrow(TypeError);
    expect(() => signWebhook(secret, 1.5, body)).toThrow(TypeError);
    expect(() => signWebhook(secret, -1, body)).toThrow(TypeError);
  });
});

describe('verifyWebhook', () => {
  const good = signWebhook(secret, ts, body);

  it('round-trips with a plain record, a Headers object and a Buffer body', () => {
    expect(verifyWebhook(body, headersFor(good), secret, { now })).toEqual({ deliveryId: 'dlv_1', timestamp: ts });
    expect(verifyWebhook(body, new Headers(headersFor(good)), secret, { now })).toEqual({ deliveryId: 'dlv_1', timestamp: ts });
    expect(verifyWebhook(Buffer.from(body), headersFor(good), secret, { now })).toEqual({ deliveryId: 'dlv_1', timestamp: ts });
    // Node's req.headers: lowercase keys.
    const lower = { 'x-webhook-signature': good, 'x-webhook-timestamp': String(ts), 'x-webhook-delivery-id': 'dlv_1', host: 'example.com' };
    expect(verifyWebhook(body, lower, secret, { now })).toEqual({ deliveryId: 'dlv_1', timestamp: ts });
    expect(verifyWebhook(body, { ...lower, 'x-webhook-signature': [good] }, secret, { now }).deliveryId).toBe('dlv_1');
  });

  it('accepts a signature computed independently with createHmac', () => {
    const independent = createHmac('sha256', secret).update(`${ts}.${body}`, 'utf8').digest('hex');
    expect(verifyWebhook(body, headersFor(independent), secret, { now }).timestamp).toBe(ts);
  });

  it('defaults now to the current time', () => {
    const t = Math.floor(Date.now() / 1000);
    expect(verifyWebhook(body, headersFor(signWebhook(secret, t, body), t), secret).timestamp).toBe(t);
  });

  it('rejects a tampered body, a wrong secret and a re-signed timestamp', () => {
    expect(reasonOf(() => verifyWebhook(body.replace('12.34', '99.34'), headersFor(good), secret, { now }))).toBe('invalid_signature');
    expect(reasonOf(() => verifyWebhook(`${body} `, headersFor(good), secret, { now }))).toBe('invalid_signature');
    expect(reasonOf(() => verifyWebhook(body, headersFor(good), 'whsec_other', { now }))).toBe('invalid_signature');
    expect(reasonOf(() => verifyWebhook(body, headersFor(good, ts + 1), secret, { now }))).toBe('invalid_signature');
  });

  it('accepts only the exact lowercase hex signature', () => {
    for (const sig of [
      good.toUpperCase(),
      `sha256=${good}`,
      good.slice(0, 63),
      `${good}0`,
      good.slice(0, 32),
      'zz'.repeat(32),
      ` ${good}`,
      `${good}, ${good}`,
    ]) {
      expect(reasonOf(() => verifyWebhook(body, headersFor(sig), secret, { now }))).toBe('invalid_signature');
    }
    expect(
      reasonOf(() =>
        verifyWebhook(
          body,
          { ...headersFor(good), 'X-Webhook-Signature': undefined as unknown as string, 'x-webhook-signature': [good, good] } as Record<
            string,
            string | string[]
          >,
          secret,
          { now },
        ),
      ),
    ).toBe('invalid_signature');
  });

  it('rejects timestamps more than the tolerance away, either way, even with a valid signature', () => {
    const at = (seconds: number) => ({ now: new Date((ts + seconds) * 1000) });
    expect(reasonOf(() => verifyWebhook(body, headersFor(good), secret, at(301)))).toBe('timestamp_too_old');
    expect(reasonOf(() => verifyWebhook(body, headersFor(good), secret, at(-301)))).toBe('timestamp_in_future');
    // Boundary: exactly 300 s away is accepted.
    expect(verifyWebhook(body, headersFor(good), secret, at(300)).timestamp).toBe(ts);
    expect(verifyWebhook(body, headersFor(good), secret, at(-300)).timestamp).toBe(ts);
    expect(reasonOf(() => verifyWebhook(body, headersFor(good), secret, { ...at(61), toleranceSeconds: 60 }))).toBe('timestamp_too_old');
    expect(verifyWebhook(body, headersFor(good), secret, { ...at(60), toleranceSeconds: 60 }).timestamp).toBe(ts);
  });

  it('reports a bad signature before a stale timestamp', () => {
    expect(reasonOf(() => verifyWebhook(body, headersFor('0'.repeat(64)), secret, { now: new Date((ts + 10_000) * 1000) }))).toBe('invalid_signature');
  });

  it('rejects missing headers', () => {
    for (const name of ['X-Webhook-Signature', 'X-Webhook-Timestamp', 'X-Webhook-Delivery-Id']) {
      const h: Record<string, string | undefined> = headersFor(good);
      delete h[name];
      expect(reasonOf(() => verifyWebhook(body, h, secret, { now }))).toBe('missing_header');
      expect(reasonOf(() => verifyWebhook(body, { ...headersFor(good), [name]: '' }, secret, { now }))).toBe('missing_header');
      expect(reasonOf(() => verifyWebhook(body, new Headers(h as Record<string, string>), secret, { now }))).toBe('missing_header');
    }
    expect(reasonOf(() => verifyWebhook(body, {}, secret, { now }))).toBe('missing_header');
    expect(reasonOf(() => verifyWebhook(body, { ...headersFor(good), 'X-Webhook-Signature': [] }, secret, { now }))).toBe('missing_header');
  });

  it('rejects malformed timestamps', () => {
    for (const t of ['abc', '1.7e9', '1700000000.5', '-1700000000', ' 1700000000', '+1700000000', '0x6553f100', '1'.repeat(16)]) {
      const sig = createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
      expect(reasonOf(() => verifyWebhook(body, headersFor(sig, t), secret, { now }))).toBe('invalid_timestamp');
    }
  });

  it('refuses an empty secret and invalid options as programming errors', () => {
    expect(() => verifyWebhook(body, headersFor(good), '', { now })).toThrow(TypeError);
    expect(() => verifyWebhook(body, headersFor(good), secret, { now, toleranceSeconds: -1 })).toThrow(TypeError);
    expect(() => verifyWebhook(body, headersFor(good), secret, { now: new Date(Number.NaN) })).toThrow(TypeError);
  });
});
