import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createApiKey, createTestApp, signUpMember, type TestApp } from './harness';
import { setupSandboxCatalog } from './money-helpers';
import { drainDeliveries, registerEndpoint, sandboxEventDelivery, webhookEnv } from './webhook-helpers';

/**
 * What an integrator does with the verification helper: `npm pack` the workspace package, install
 * the tarball into a project of its own (no network: the package has no dependency), and verify
 * real signed deliveries of the service with plain node, as an ES module and as CommonJS; and the
 * self-contained receiver of docs/webhooks.md, run as written. Then the receiver's backend reads the
 * delivery with its API key to learn the event type.
 */

const root = resolve(__dirname, '..');
let app: TestApp;
let dir: string;
let scratch: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  app = await createTestApp({ env: webhookEnv });
  dir = mkdtempSync(join(tmpdir(), 'ftis-webhooks-'));
  // npm pack runs the package's prepare script (tsc), then writes the tarball.
  execFileSync('npm', ['pack', '--silent', '--pack-destination', dir], { cwd: join(root, 'packages/webhooks'), stdio: ['ignore', 'ignore', 'pipe'] });
  const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz'));
  if (!tarball) throw new Error(`npm pack wrote no tarball in ${dir}`);
  scratch = join(dir, 'receiver');
  mkdirSync(scratch);
  writeFileSync(join(scratch, 'package.json'), JSON.stringify({ name: 'receiver', version: '1.0.0', private: true }));
  execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', join(dir, tarball)], {
    cwd: scratch,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
}, 180_000);

afterAll(async () => {
  for (const c of children) c.kill();
  await app?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((ok) => server.close(() => ok()));
  return port;
}

/** Runs `file` of the scratch project with plain node; resolves once it prints its listening line. */
async function startNode(file: string, env: Record<string, string>): Promise<{ lines: string[] }> {
  const child = spawn(process.execPath, [file], { cwd: scratch, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  const lines: string[] = [];
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  await new Promise<void>((ok, fail) => {
    let buffered = '';
    child.stdout!.on('data', (c: Buffer) => {
      buffered += c.toString();
      const parts = buffered.split('\n');
      buffered = parts.pop()!;
      for (const line of parts) {
        lines.push(line);
        if (line.startsWith('listening')) ok();
      }
    });
    child.on('exit', (code) => fail(new Error(`${file} exited (${code}): ${stderr}`)));
  });
  return { lines };
}

// A receiver written against the installed package; `load` is how its module system imports it.
const packageReceiver = (load: string) => `${load}
const { createServer } = require_('node:http');
const secret = process.env.FTIS_WEBHOOK_SECRET;
createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const raw = Buffer.concat(chunks);
    try {
      const { deliveryId, timestamp } = verifyWebhook(raw, req.headers, secret);
      console.log(JSON.stringify({ deliveryId, timestamp, event: JSON.parse(raw.toString('utf8')) }));
      res.writeHead(204).end();
    } catch (e) {
      console.log(JSON.stringify({ refused: e instanceof WebhookVerificationError ? e.reason : String(e) }));
      res.writeHead(e instanceof WebhookVerificationError ? 400 : 500).end();
    }
  });
}).listen(Number(process.env.PORT), '127.0.0.1', () => console.log('listening'));
`;

test('the packed package verifies real deliveries in ESM and CommonJS; the docs receiver too; the API key reads the event type', async () => {
  // The installed package: compiled JavaScript and declarations only, no dependency.
  const installed = join(scratch, 'node_modules/@ftis/webhooks');
  const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8'));
  expect(manifest.dependencies ?? {}).toEqual({});
  expect(readdirSync(join(installed, 'dist/esm')).sort()).toEqual(['index.d.ts', 'index.js']);
  expect(readdirSync(installed)).not.toContain('src');

  // Its types resolve for a TypeScript receiver (NodeNext resolution, through "exports").
  writeFileSync(
    join(scratch, 'check.ts'),
    `import { verifyWebhook, signWebhook, WebhookVerificationError, type VerifyOptions } from '@ftis/webhooks';
const opts: VerifyOptions = { toleranceSeconds: 60 };
const r: { deliveryId: string; timestamp: number } = verifyWebhook(Buffer.from('{}'), { 'x-webhook-signature': signWebhook('s', 1, '{}') }, 's', opts);
const reason: 'missing_header' | 'invalid_timestamp' | 'timestamp_too_old' | 'timestamp_in_future' | 'invalid_signature' = new WebhookVerificationError('invalid_signature', 'x').reason;
export { r, reason };
`,
  );
  writeFileSync(
    join(scratch, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        noEmit: true,
        lib: ['ES2022', 'DOM'],
        types: [],
        typeRoots: [join(root, 'node_modules/@types')],
      },
      files: ['check.ts'],
    }),
  );
  const tsc = createRequire(join(root, 'package.json')).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', scratch, '--types', 'node'], { cwd: scratch, stdio: ['ignore', 'pipe', 'pipe'] });

  writeFileSync(
    join(scratch, 'esm.mjs'),
    packageReceiver(`import { verifyWebhook, WebhookVerificationError } from '@ftis/webhooks';
import { createRequire } from 'node:module';
const require_ = createRequire(import.meta.url);`),
  );
  writeFileSync(
    join(scratch, 'cjs.cjs'),
    packageReceiver(`const { verifyWebhook, WebhookVerificationError } = require('@ftis/webhooks');
const require_ = require;`),
  );
  const docs = readFileSync(join(root, 'docs/webhooks.md'), 'utf8');
  const snippet = /<!-- receiver\.mjs -->\n```js\n([\s\S]*?)```/.exec(docs);
  expect(snippet, 'docs/webhooks.md has the receiver.mjs block').not.toBeNull();
  writeFileSync(join(scratch, 'docs.mjs'), snippet![1]!);

  // An organization with a sandbox key and a sandbox catalog; one endpoint per receiver.
  const catalog = await setupSandboxCatalog(app);
  const m = await signUpMember(app);
  const key = await createApiKey(app, m, 'SANDBOX');
  const receivers: Record<string, { endpointId: string; lines: string[]; port: number }> = {};
  for (const file of ['esm.mjs', 'cjs.cjs', 'docs.mjs']) {
    const port = await freePort();
    const endpoint = await registerEndpoint(app, m, `http://127.0.0.1:${port}/hooks`);
    const { lines } = await startNode(file, { PORT: String(port), FTIS_WEBHOOK_SECRET: endpoint.secret });
    receivers[file] = { endpointId: endpoint.id, lines, port };
  }

  // A sandbox event: the API key registers a withdrawal destination on the sandbox network.
  const address = `0x${randomBytes(20).toString('hex')}`;
  const reg = await app.rest('POST', `/v1/organizations/${m.organizationId}/withdrawal-destinations`, {
    headers: key.headers,
    body: { networkId: catalog.networkId, address },
  });
  expect(reg.status, reg.text).toBe(201);
  await drainDeliveries(app);

  for (const [file, r] of Object.entries(receivers)) {
    const d = await app.deps.db.webhookDelivery.findFirstOrThrow({ where: { endpointId: r.endpointId } });
    expect(d.status, file).toBe('DELIVERED');
    await expect.poll(() => r.lines.length, { timeout: 5000 }).toBeGreaterThan(1);
    const got = JSON.parse(r.lines[1]!);
    expect(got.deliveryId, file).toBe(d.id);
    expect(got.event).toMatchObject({ Address: address, OrganizationId: m.organizationId });

    // The receiver's backend tells the event apart with its API key.
    const read = await app.rest('GET', `/v1/webhook-deliveries/${got.deliveryId}`, { headers: key.headers });
    expect(read.status, read.text).toBe(200);
    expect(read.body).toMatchObject({ id: d.id, EventType: 'withdrawal_destination.registered', environmentType: 'SANDBOX', status: 'DELIVERED' });
    expect(read.body.attempts).toMatchObject([{ attemptNumber: 1, outcome: 'SUCCESS' }]);
  }

  // A forged delivery is refused by every receiver (400), the package naming the reason.
  for (const [file, r] of Object.entries(receivers)) {
    const forged = await fetch(`http://127.0.0.1:${r.port}/hooks`, {
      method: 'POST',
      body: '{"Address":"0x0"}',
      headers: { 'x-webhook-signature': 'ab'.repeat(32), 'x-webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'x-webhook-delivery-id': 'forged' },
    });
    expect(forged.status, file).toBe(400);
  }
  expect(receivers['esm.mjs']!.lines.at(-1)).toBe(JSON.stringify({ refused: 'invalid_signature' }));
}, 120_000);

test('an API key reads the deliveries of its own mode only; another organization gets 404', async () => {
  const { member: m, key: sandboxKey, endpoint, deliveryId, catalog } = await sandboxEventDelivery(app, 'http://127.0.0.1:9/hooks');
  const productionKey = await createApiKey(app, m, 'PRODUCTION');
  const other = await signUpMember(app);
  const otherKey = await createApiKey(app, other, 'SANDBOX');
  const d = { id: deliveryId };
  const get = (headers: Record<string, string>) => app.rest('GET', `/v1/webhook-deliveries/${d.id}`, { headers });
  expect((await get(sandboxKey.headers)).body.EventType).toBe('withdrawal_destination.registered');
  expect((await get(m.headers)).body.environmentType).toBe('SANDBOX');
  for (const headers of [productionKey.headers, otherKey.headers]) {
    const r = await get(headers);
    expect(r.status).toBe(404);
    expect(r.body.code).toBe('NOT_FOUND');
  }
  // The same through GraphQL; and managing stays with members.
  const gql = await app.gql<{ webhookDelivery: { eventType: string } }>(
    `{ webhookDelivery(id: "${d.id}") { eventType environmentType attempts { outcome } } }`,
    {},
    sandboxKey.headers,
  );
  expect(gql.errors).toBeUndefined();
  expect(gql.data!.webhookDelivery.eventType).toBe('withdrawal_destination.registered');
  expect((await app.rest('GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries`, { headers: sandboxKey.headers })).status).toBe(403);
  expect((await app.rest('POST', `/v1/webhook-deliveries/${d.id}/redeliver`, { headers: sandboxKey.headers })).status).toBe(403);
  // A production event. No production network has an adapter in this version, so no production
  // aggregate can be made through the API: a second destination is registered, then marked PRODUCTION.
  const second = await app.rest('POST', `/v1/organizations/${m.organizationId}/withdrawal-destinations`, {
    headers: sandboxKey.headers,
    body: { networkId: catalog.networkId, address: `0x${randomBytes(20).toString('hex')}` },
  });
  expect(second.status, second.text).toBe(201);
  await app.deps.db.withdrawalDestination.update({ where: { id: second.headers.get('location')!.split('/').pop()! }, data: { environmentType: 'PRODUCTION' } });
  const prod = await app.deps.db.webhookDelivery.findFirstOrThrow({ where: { endpointId: endpoint.id, id: { not: d.id } } });
  const prodRead = await app.rest('GET', `/v1/webhook-deliveries/${prod.id}`, { headers: productionKey.headers });
  expect(prodRead.body).toMatchObject({ EventType: 'withdrawal_destination.registered', environmentType: 'PRODUCTION' });
  expect((await app.rest('GET', `/v1/webhook-deliveries/${prod.id}`, { headers: sandboxKey.headers })).status).toBe(404);
});
