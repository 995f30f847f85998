import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import https from 'node:https';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { sendAttempt } from './sender';
import type { DestinationPolicy } from './destination';

/** Real receivers on 127.0.0.1; each records what reached it. */
interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}
interface Receiver {
  server: http.Server;
  port: number;
  received: Received[];
  connections: number;
  close(): Promise<void>;
}

const receivers: Receiver[] = [];
async function receiver(
  handler: (req: http.IncomingMessage, res: http.ServerResponse, body: Buffer) => void,
  server: http.Server = http.createServer(),
): Promise<Receiver> {
  const r: Receiver = {
    server,
    port: 0,
    received: [],
    connections: 0,
    close: () =>
      new Promise((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
  server.on('connection', () => {
    r.connections++;
  });
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      r.received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      handler(req, res, body);
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  r.port = (server.address() as AddressInfo).port;
  receivers.push(r);
  return r;
}
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
});

const local: DestinationPolicy = { requireHttps: false, allowlist: ['127.0.0.1/32'] };
const loopbacks: DestinationPolicy = { requireHttps: false, allowlist: ['127.0.0.1/32', '::1/128'] };
const SECRET_SIGNATURE = 'a'.repeat(64);
const webhookHeaders = { 'X-Webhook-Signature': SECRET_SIGNATURE, 'X-Webhook-Timestamp': '1700000000', 'X-Webhook-Delivery-Id': 'dlv_123' };
const send = (url: string, extra: Partial<Parameters<typeof sendAttempt>[0]> = {}) =>
  sendAttempt({ url, body: '{"ok":true}', headers: webhookHeaders, timeoutMs: 5000, policy: local, ...extra });

describe('sendAttempt over http', () => {
  it('POSTs the exact body bytes with the webhook headers and reports 200 as SUCCESS', async () => {
    const r = await receiver((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('thanks'));
    const body = '{"Amount":"10.50","Note":"é€😀","Nested":{"a":[1,2,3]}}  ';
    const result = await sendAttempt({ url: `http://127.0.0.1:${r.port}/hooks/in?tenant=t1`, body, headers: webhookHeaders, timeoutMs: 5000, policy: local });
    expect(result).toMatchObject({ outcome: 'SUCCESS', statusCode: 200, responseBody: 'thanks', error: null });
    expect(Number.isInteger(result.latencyMs) && result.latencyMs >= 0).toBe(true);
    expect(r.received).toHaveLength(1);
    const got = r.received[0]!;
    expect(got.method).toBe('POST');
    expect(got.url).toBe('/hooks/in?tenant=t1');
    expect(got.body.equals(Buffer.from(body, 'utf8'))).toBe(true);
    expect(got.headers).toMatchObject({
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
      'user-agent': 'ftis-webhooks/1',
      'x-webhook-signature': SECRET_SIGNATURE,
      'x-webhook-timestamp': '1700000000',
      'x-webhook-delivery-id': 'dlv_123',
      host: `127.0.0.1:${r.port}`,
    });
    expect(got.headers['transfer-encoding']).toBeUndefined();
  });

  it('does not let caller headers override the transport-owned ones', async () => {
    const r = await receiver((_req, res) => res.writeHead(200).end());
    const result = await send(`http://127.0.0.1:${r.port}/`, {
      headers: { ...webhookHeaders, 'Content-Type': 'text/plain', Host: 'evil.example', 'Content-Length': '1' },
    });
    expect(result.outcome).toBe('SUCCESS');
    expect(r.received[0]!.headers).toMatchObject({ 'content-type': 'application/json', host: `127.0.0.1:${r.port}`, 'content-length': '11' });
    expect(r.received[0]!.body.toString()).toBe('{"ok":true}');
  });

  it('reports 204 as SUCCESS with an empty body', async () => {
    const r = await receiver((_req, res) => res.writeHead(204).end());
    expect(await send(`http://127.0.0.1:${r.port}/`)).toMatchObject({ outcome: 'SUCCESS', statusCode: 204, responseBody: '', error: null });
  });

  it('never follows redirects: 302 is an HTTP_ERROR and the target is never hit', async () => {
    const target = await receiver((_req, res) => res.writeHead(200).end('target'));
    const r = await receiver((_req, res) => res.writeHead(302, { location: `http://127.0.0.1:${target.port}/stolen` }).end('moved'));
    const result = await send(`http://127.0.0.1:${r.port}/`);
    expect(result).toMatchObject({ outcome: 'HTTP_ERROR', statusCode: 302, responseBody: 'moved' });
    expect(result.error).toContain('302');
    await new Promise((ok) => setTimeout(ok, 50));
    expect(target.received).toHaveLength(0);
    expect(target.connections).toBe(0);
  });

  it('captures the body of a 404', async () => {
    const r = await receiver((_req, res) => res.writeHead(404).end('no such hook'));
    expect(await send(`http://127.0.0.1:${r.port}/`)).toMatchObject({
      outcome: 'HTTP_ERROR',
      statusCode: 404,
      responseBody: 'no such hook',
      error: 'HTTP 404 Not Found',
    });
  });

  it('truncates a 100 KB error body at 16384 bytes', async () => {
    const big = Buffer.alloc(100_000);
    for (let i = 0; i < big.length; i++) big[i] = 0x61 + (i % 26);
    const r = await receiver((_req, res) => res.writeHead(500).end(big));
    const result = await send(`http://127.0.0.1:${r.port}/`);
    expect(result).toMatchObject({ outcome: 'HTTP_ERROR', statusCode: 500 });
    expect(result.responseBody).toBe(big.subarray(0, 16384).toString('utf8'));
    const small = await send(`http://127.0.0.1:${r.port}/`, { maxResponseBytes: 10 });
    expect(small.responseBody).toBe('abcdefghij');
  });

  it('stops reading an endless 200 body at the limit without waiting for the timeout', async () => {
    let receiverSawClose = false;
    const r = await receiver((_req, res) => {
      res.writeHead(200);
      const chunk = Buffer.alloc(8192, 'x');
      const timer = setInterval(() => res.write(chunk), 1);
      res.on('close', () => {
        clearInterval(timer);
        receiverSawClose = true;
      });
    });
    const result = await send(`http://127.0.0.1:${r.port}/`, { timeoutMs: 5000 });
    expect(result).toMatchObject({ outcome: 'SUCCESS', statusCode: 200 });
    expect(result.responseBody).toHaveLength(16384);
    expect(result.latencyMs).toBeLessThan(4000);
    await expect.poll(() => receiverSawClose).toBe(true);
  });

  it('reports TIMEOUT within the budget when the receiver never answers', async () => {
    const r = await receiver(() => {
      /* never answers */
    });
    const result = await send(`http://127.0.0.1:${r.port}/`, { timeoutMs: 300 });
    expect(result).toMatchObject({ outcome: 'TIMEOUT', statusCode: null, responseBody: null });
    expect(result.latencyMs).toBeGreaterThanOrEqual(295);
    expect(result.latencyMs).toBeLessThan(1000);
    expect(result.error).not.toContain(SECRET_SIGNATURE);
  });

  it('counts the body read in the budget: headers then a stalled body is a TIMEOUT', async () => {
    const r = await receiver((_req, res) => {
      res.writeHead(200, { 'content-length': '100' });
      res.write('partial');
    });
    const result = await send(`http://127.0.0.1:${r.port}/`, { timeoutMs: 300 });
    expect(result).toMatchObject({ outcome: 'TIMEOUT', statusCode: 200, responseBody: 'partial' });
    expect(result.latencyMs).toBeLessThan(1000);
  });

  it('reports CONNECTION_ERROR when the receiver destroys the socket', async () => {
    const r = await receiver((req) => req.socket.destroy());
    const result = await send(`http://127.0.0.1:${r.port}/`);
    expect(result).toMatchObject({ outcome: 'CONNECTION_ERROR', statusCode: null, responseBody: null });
    expect(result.error).toBeTruthy();
    expect(r.received).toHaveLength(1);
  });

  it('reports CONNECTION_ERROR when the body breaks off mid-response', async () => {
    const r = await receiver((req, res) => {
      res.writeHead(200, { 'content-length': '100' });
      res.write('partial', () => req.socket.destroy());
    });
    expect(await send(`http://127.0.0.1:${r.port}/`)).toMatchObject({ outcome: 'CONNECTION_ERROR', statusCode: 200 });
  });

  it('reports CONNECTION_REFUSED on a closed port', async () => {
    const s = http.createServer();
    await new Promise<void>((ok) => s.listen(0, '127.0.0.1', ok));
    const port = (s.address() as AddressInfo).port;
    await new Promise((ok) => s.close(ok));
    const result = await send(`http://127.0.0.1:${port}/`);
    expect(result).toMatchObject({ outcome: 'CONNECTION_REFUSED', statusCode: null, responseBody: null });
    expect(result.error).toContain('ECONNREFUSED');
  });

  it('reports DNS_ERROR for a name that does not resolve', async () => {
    const result = await send('http://nonexistent.invalid/hook');
    expect(result).toMatchObject({ outcome: 'DNS_ERROR', statusCode: null });
    expect(result.error).toMatch(/ENOTFOUND|EAI_AGAIN|ENODATA/);
  });

  it('never throws: an invalid header value becomes a failed attempt that does not echo the value', async () => {
    const r = await receiver((_req, res) => res.writeHead(200).end());
    const result = await send(`http://127.0.0.1:${r.port}/`, { headers: { 'X-Webhook-Signature': 'secret\r\nX-Injected: 1' } });
    expect(result.outcome).toBe('CONNECTION_ERROR');
    expect(result.error).not.toContain('secret');
    expect(r.received).toHaveLength(0);
  });
});

describe('sendAttempt SSRF guard', () => {
  it('blocks 127.0.0.1 without an allowlist before any request reaches the receiver', async () => {
    const r = await receiver((_req, res) => res.writeHead(200).end());
    for (const url of [`http://127.0.0.1:${r.port}/`, `http://[::ffff:127.0.0.1]:${r.port}/`, `http://2130706433:${r.port}/`]) {
      const result = await send(url, { policy: { requireHttps: false, allowlist: [] } });
      expect(result).toMatchObject({ outcome: 'BLOCKED_DESTINATION', statusCode: null, responseBody: null });
    }
    await new Promise((ok) => setTimeout(ok, 50));
    expect(r.connections).toBe(0);
  });

  it('blocks metadata, private and non-http(s) destinations without network I/O', async () => {
    for (const url of [
      'http://169.254.169.254/latest/meta-data/',
      'http://[fd00:ec2::254]/',
      'http://[::1]/',
      'http://10.0.0.1/',
      'ftp://example.com/',
      'not a url',
      'http://localhost/',
    ]) {
      const result = await send(url, { policy: { requireHttps: false, allowlist: [] }, timeoutMs: 50_000 });
      expect(result.outcome).toBe('BLOCKED_DESTINATION');
      expect(result.latencyMs).toBeLessThan(100);
    }
  });

  it('blocks http when https is required, without network I/O', async () => {
    const r = await receiver((_req, res) => res.writeHead(200).end());
    const result = await send(`http://127.0.0.1:${r.port}/`, { policy: { requireHttps: true, allowlist: ['127.0.0.1/32'] } });
    expect(result).toMatchObject({ outcome: 'BLOCKED_DESTINATION', error: 'URL must use https' });
    expect(r.connections).toBe(0);
  });

  it('checks the resolved address at connect time: a name resolving to loopback is blocked', async () => {
    const r = await receiver((_req, res) => res.writeHead(200).end());
    // A non-empty allowlist that does not cover loopback: the URL passes the syntax check, so
    // only the socket's guarded lookup stands between the request and 127.0.0.1.
    const result = await send(`http://localhost:${r.port}/`, { policy: { requireHttps: false, allowlist: ['10.0.0.0/8'] } });
    expect(result).toMatchObject({ outcome: 'BLOCKED_DESTINATION', statusCode: null });
    expect(result.error).toMatch(/localhost resolves to (127\.0\.0\.1|::1)/);
    expect(r.connections).toBe(0);
  });

  it('connects through the guarded lookup when the resolved addresses are allowlisted, keeping the hostname in Host', async () => {
    const r = await receiver((_req, res) => res.writeHead(200).end('ok'));
    expect(await send(`http://localhost:${r.port}/`, { policy: loopbacks })).toMatchObject({ outcome: 'SUCCESS', statusCode: 200 });
    expect(r.received[0]!.headers.host).toBe(`localhost:${r.port}`);
  });

  it('reuses keep-alive connections, but never across policies', async () => {
    const r = await receiver((_req, res) => res.writeHead(200).end('ok'));
    expect((await send(`http://localhost:${r.port}/`, { policy: { ...loopbacks } })).outcome).toBe('SUCCESS');
    expect((await send(`http://localhost:${r.port}/`, { policy: { ...loopbacks } })).outcome).toBe('SUCCESS');
    expect(r.connections).toBe(1);
    // A pooled socket to localhost exists now; a stricter policy must not ride on it.
    const strict = await send(`http://localhost:${r.port}/`, { policy: { requireHttps: false, allowlist: ['10.0.0.0/8'] } });
    expect(strict.outcome).toBe('BLOCKED_DESTINATION');
    expect(r.received).toHaveLength(2);
  });
});

describe('sendAttempt over https', () => {
  let dir: string;
  let tls: Receiver;
  let other: Receiver;
  let cert: string;
  let otherCert: string;
  const servernames: (string | false | null)[] = [];

  /** A throwaway self-signed certificate for 127.0.0.1 (IP SAN) with the given CN. */
  function makeCert(name: string, cn: string): { key: Buffer; cert: string } {
    execFileSync(
      '/usr/bin/openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
        '-subj',
        `/CN=${cn}`,
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        join(dir, `${name}.key`),
        '-out',
        join(dir, `${name}.pem`),
      ],
      { stdio: 'pipe' },
    );
    return { key: readFileSync(join(dir, `${name}.key`)), cert: readFileSync(join(dir, `${name}.pem`), 'utf8') };
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'webhook-tls-'));
    const main = makeCert('main', 'localhost');
    cert = main.cert;
    const server = https.createServer(main);
    server.on('secureConnection', (socket) => servernames.push(socket.servername));
    tls = await receiver((_req, res) => res.writeHead(200).end('secure'), server);
    const second = makeCert('other', 'other.example');
    otherCert = second.cert;
    other = await receiver((_req, res) => res.writeHead(200).end(), https.createServer(second));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('reports TLS_ERROR for a self-signed certificate', async () => {
    const result = await send(`https://127.0.0.1:${tls.port}/`);
    expect(result).toMatchObject({ outcome: 'TLS_ERROR', statusCode: null, responseBody: null });
    expect(result.error).toMatch(/DEPTH_ZERO_SELF_SIGNED_CERT|self-signed/);
    expect(tls.received).toHaveLength(0);
  });

  it('succeeds when the certificate is trusted through `ca`', async () => {
    const result = await send(`https://127.0.0.1:${tls.port}/`, { ca: cert, policy: { requireHttps: true, allowlist: ['127.0.0.1/32'] } });
    expect(result).toMatchObject({ outcome: 'SUCCESS', statusCode: 200, responseBody: 'secure', error: null });
    expect(tls.received.at(-1)!.body.toString()).toBe('{"ok":true}');
  });

  it('keeps the URL hostname for SNI and certificate checks while connecting to the checked address', async () => {
    const result = await send(`https://localhost:${tls.port}/`, { ca: cert, policy: { requireHttps: true, allowlist: ['127.0.0.1/32', '::1/128'] } });
    expect(result.outcome).toBe('SUCCESS');
    expect(servernames.at(-1)).toBe('localhost');
    expect(tls.received.at(-1)!.headers.host).toBe(`localhost:${tls.port}`);
    // Same address, certificate valid for 127.0.0.1 but not for the name: refused.
    const mismatch = await send(`https://localhost:${other.port}/`, { ca: otherCert, policy: loopbacks });
    expect(mismatch.outcome).toBe('TLS_ERROR');
    expect(mismatch.error).toMatch(/ERR_TLS_CERT_ALTNAME_INVALID/);
    expect((await send(`https://127.0.0.1:${other.port}/`, { ca: otherCert })).outcome).toBe('SUCCESS');
  });

  it('guards https connections with the same lookup', async () => {
    const before = tls.connections;
    const result = await send(`https://localhost:${tls.port}/`, { ca: cert, policy: { requireHttps: true, allowlist: ['10.0.0.0/8'] } });
    expect(result).toMatchObject({ outcome: 'BLOCKED_DESTINATION', statusCode: null });
    expect(tls.connections).toBe(before);
  });

  it('reports TLS_ERROR when the receiver speaks plain http on an https URL', async () => {
    const r = await receiver((_req, res) => res.writeHead(200).end());
    expect((await send(`https://127.0.0.1:${r.port}/`)).outcome).toBe('TLS_ERROR');
  });
});
