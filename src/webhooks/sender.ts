import http from 'node:http';
import https from 'node:https';
import { rootCertificates } from 'node:tls';
import type { LookupFunction } from 'node:net';
import { BLOCKED_CODE, DNS_ERROR_CODES, checkUrlSyntax, resolveCheckedHost, type DestinationPolicy } from './destination';

/** One delivery attempt: a single POST, no redirects, no retries (the scheduler owns retries). */

export type AttemptOutcome =
  'SUCCESS' | 'HTTP_ERROR' | 'TIMEOUT' | 'CONNECTION_REFUSED' | 'CONNECTION_ERROR' | 'DNS_ERROR' | 'TLS_ERROR' | 'BLOCKED_DESTINATION';
export interface AttemptResult {
  outcome: AttemptOutcome;
  statusCode: number | null; // the HTTP status when a response arrived
  latencyMs: number; // integer, from start to end of the attempt
  responseBody: string | null; // first maxResponseBytes of the response body, utf-8 decoded; null when no response
  error: string | null; // short human-readable reason for failures (never includes the request headers/secret)
}

const USER_AGENT = 'ftis-webhooks/1';
const DEFAULT_MAX_RESPONSE_BYTES = 16_384;
const MAX_ERROR_LENGTH = 300;
// Headers the transport owns: a caller-supplied Host or Content-Length could desynchronize the request.
const MANAGED_HEADERS = new Set(['host', 'content-type', 'content-length', 'transfer-encoding', 'connection', 'user-agent']);
const TLS_ERROR_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'HOSTNAME_MISMATCH',
  'EPROTO',
]);

/**
 * Keep-alive agents, one pair per allowlist. A pooled socket skips `lookup`, so it must only be
 * reused under the policy it was checked against: keying by the allowlist keeps a socket opened
 * while 127.0.0.1 was allowed from serving a later delivery under a stricter policy. The map stays
 * tiny (the policy comes from configuration). Idle sockets are unref'd by the agent and closed
 * after `timeout` (or sooner when the receiver's Keep-Alive header says so).
 */
const pools = new Map<string, { http: http.Agent; https: https.Agent; lookup: LookupFunction }>();
function poolFor(policy: DestinationPolicy) {
  const key = JSON.stringify([...policy.allowlist].sort());
  let pool = pools.get(key);
  if (!pool) {
    const agentOptions = { keepAlive: true, maxSockets: 256, maxFreeSockets: 64, timeout: 30_000 };
    pool = { http: new http.Agent(agentOptions), https: new https.Agent(agentOptions), lookup: guardedLookup({ ...policy, allowlist: [...policy.allowlist] }) };
    pools.set(key, pool);
  }
  return pool;
}

/**
 * The socket's DNS lookup: resolves every record, refuses (code BLOCKED_CODE) when any is not
 * allowed, and hands net only checked addresses, so the connect goes where the check looked.
 * Honors `all` (net asks for every address when it races IPv4/IPv6) and a requested family.
 */
function guardedLookup(policy: DestinationPolicy): LookupFunction {
  return (hostname, options, callback) => {
    const family = options.family === 4 || options.family === 'IPv4' ? 4 : options.family === 6 || options.family === 'IPv6' ? 6 : 0;
    resolveCheckedHost(hostname, policy).then(
      (all) => {
        const usable = family ? all.filter((a) => a.family === family) : all;
        const first = usable[0];
        // nextTick: let net's callback run outside the promise chain, like dns.lookup's own callbacks.
        if (!first) process.nextTick(callback, Object.assign(new Error(`${hostname} has no IPv${family} address`), { code: 'ENODATA' }), '', 0);
        else if (options.all) process.nextTick(callback, null, usable);
        else process.nextTick(callback, null, first.address, first.family);
      },
      (err: NodeJS.ErrnoException) => process.nextTick(callback, err, '', 0),
    );
  };
}

function errorCode(err: unknown): string | undefined {
  const e = err as { code?: unknown; errors?: unknown[] };
  if (typeof e?.code === 'string') return e.code;
  // When net races several addresses and all fail, it raises an AggregateError of the per-address errors.
  return Array.isArray(e?.errors) ? errorCode(e.errors[0]) : undefined;
}

function classify(err: unknown): AttemptOutcome {
  const code = errorCode(err) ?? '';
  if (code === BLOCKED_CODE) return 'BLOCKED_DESTINATION';
  if (code === 'ECONNREFUSED') return 'CONNECTION_REFUSED';
  if (DNS_ERROR_CODES.has(code)) return 'DNS_ERROR';
  if (TLS_ERROR_CODES.has(code) || /^(CERT_|ERR_TLS_|ERR_SSL_)/.test(code)) return 'TLS_ERROR';
  return 'CONNECTION_ERROR';
}

/** Node's socket/TLS/DNS messages name the peer, never our request headers; still cap the length. */
function describe(err: unknown): string {
  const code = errorCode(err);
  const message = err instanceof Error && err.message ? err.message : String(err);
  const text = code && code !== BLOCKED_CODE && !message.includes(code) ? `${code}: ${message}` : message;
  return text.length > MAX_ERROR_LENGTH ? `${text.slice(0, MAX_ERROR_LENGTH - 1)}…` : text;
}

export async function sendAttempt(opts: {
  url: string;
  body: string; // raw JSON, sent byte-exact
  headers: Record<string, string>; // the X-Webhook-* headers
  timeoutMs: number; // total budget for the attempt (connect + response + body read)
  policy: DestinationPolicy;
  maxResponseBytes?: number; // default 16384
  ca?: string | Buffer; // extra trusted CA, for tests only
}): Promise<AttemptResult> {
  const start = performance.now();
  const latency = () => Math.round(performance.now() - start);
  const checked = checkUrlSyntax(opts.url, opts.policy);
  // Covers non-http(s) schemes, http under requireHttps and IP literals (net skips `lookup` for those), before any I/O.
  if (!checked.ok) return { outcome: 'BLOCKED_DESTINATION', statusCode: null, latencyMs: latency(), responseBody: null, error: checked.reason };
  const url = checked.url;
  const maxBytes = Math.max(0, Math.floor(opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES));
  const timeoutMs = Math.max(1, Math.floor(opts.timeoutMs));
  const payload = Buffer.from(opts.body, 'utf8');
  const pool = poolFor(opts.policy);
  const secure = url.protocol === 'https:';

  return new Promise<AttemptResult>((resolve) => {
    let settled = false;
    let statusCode: number | null = null;
    const chunks: Buffer[] = [];
    let size = 0;
    let req: http.ClientRequest | undefined;
    const settle = (outcome: AttemptOutcome, error: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      const responseBody = statusCode === null ? null : Buffer.concat(chunks, size).toString('utf8');
      resolve({ outcome, statusCode, latencyMs: latency(), responseBody, error });
    };
    // One timer for the whole attempt (lookup, connect, TLS, response, body): the budget cannot be stretched phase by phase.
    const timer = setTimeout(() => {
      settle('TIMEOUT', `no complete response within ${timeoutMs} ms${statusCode === null ? '' : ` (status ${statusCode} received, body incomplete)`}`);
      req?.destroy();
    }, timeoutMs);

    try {
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(opts.headers)) if (!MANAGED_HEADERS.has(name.toLowerCase())) headers[name] = value;
      Object.assign(headers, { 'content-type': 'application/json', 'content-length': String(payload.length), 'user-agent': USER_AGENT });
      const options: https.RequestOptions = {
        method: 'POST',
        // Host header and TLS SNI/verification use this name; only the socket address comes from the guarded lookup.
        hostname: url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname,
        port: url.port === '' ? undefined : Number(url.port),
        path: `${url.pathname}${url.search}`,
        headers,
        agent: secure ? pool.https : pool.http,
        lookup: pool.lookup,
      };
      // `ca` alone would replace the public roots; the test CA is added to them instead.
      if (secure && opts.ca !== undefined) options.ca = [...rootCertificates, opts.ca.toString()];
      req = (secure ? https : http).request(options);
      req.on('error', (err) => settle(classify(err), describe(err)));
      req.on('response', (res) => {
        statusCode = res.statusCode ?? null;
        const ok = statusCode !== null && statusCode >= 200 && statusCode < 300;
        // Redirects are never followed: a 3xx is just a non-2xx answer.
        const outcome: AttemptOutcome = ok ? 'SUCCESS' : 'HTTP_ERROR';
        const error = ok ? null : `HTTP ${statusCode}${res.statusMessage ? ` ${res.statusMessage.slice(0, 100)}` : ''}`;
        res.on('data', (chunk: Buffer) => {
          if (settled) return;
          if (chunk.length <= maxBytes - size) {
            chunks.push(chunk);
            size += chunk.length;
            return;
          }
          // Enough: keep the prefix and drop the connection rather than drain an endless or huge body.
          chunks.push(chunk.subarray(0, maxBytes - size));
          size = maxBytes;
          settle(outcome, error);
          res.destroy();
        });
        res.on('end', () => settle(outcome, error));
        // The body broke off: the receiver's answer is incomplete, so the attempt failed (a retry is safe, deliveries are idempotent).
        res.on('error', (err) => settle('CONNECTION_ERROR', describe(err)));
        res.on('close', () => settle('CONNECTION_ERROR', 'connection closed before the response body was complete'));
      });
      req.end(payload);
    } catch (err) {
      // Synchronous throws (e.g. an invalid header value): report the code only, some messages quote the value.
      settle('CONNECTION_ERROR', `request could not be built (${errorCode(err) ?? 'error'})`);
      req?.destroy();
    }
  });
}
