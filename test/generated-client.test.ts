import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import openapiTS, { astToString } from 'openapi-typescript';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createTestApp, type TestApp } from './harness';
import { setupIntegrator, setupSandboxCatalog } from './money-helpers';
import type { RunningServer } from '../src/server';

/**
 * An integrator's view of the contract: a typed client generated from the document the server
 * serves (openapi-typescript), a short integrator script (examples/generated-client/first-payment.ts)
 * type-checked against it with tsc, then run against the real server with openapi-fetch, so the
 * types and the answers cannot drift apart.
 */

const run = promisify(execFile);
const root = resolve(import.meta.dirname, '..');
const example = join(root, 'examples/generated-client/first-payment.ts');

let app: TestApp;
let server: RunningServer;
let dir: string;

beforeAll(async () => {
  app = await createTestApp();
  server = await app.listen();
  dir = mkdtempSync(join(tmpdir(), 'generated-client-'));
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir');
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await app.close();
});

test(
  'a client generated from /v1/openapi.json type-checks the integrator script and runs a first payment against the server',
  { timeout: 300_000 },
  async () => {
    // 1. Generate the types from the served document, as an integrator does.
    const res = await fetch(`${server.url}/v1/openapi.json`);
    expect(res.status).toBe(200);
    const types = astToString(await openapiTS(await res.json()));
    writeFileSync(join(dir, 'api.d.ts'), types);
    for (const name of ['CreateAccountRequest', 'PaymentIntentResponse', 'CreatedResourceResponse', 'TokenResult']) expect(types).toContain(`${name}: {`);

    // 2. Type-check the script against them (strict; the generated file is checked too).
    copyFileSync(example, join(dir, 'first-payment.ts'));
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ private: true, type: 'module' }));
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2023',
          module: 'ESNext',
          moduleResolution: 'bundler',
          lib: ['ES2023', 'DOM'],
          types: ['node'],
          strict: true,
          noUncheckedIndexedAccess: true,
          noEmit: true,
        },
        files: ['first-payment.ts'],
      }),
    );
    const tsc = await run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(dir, 'tsconfig.json')], { cwd: dir }).catch(
      (err: { stdout?: string; stderr?: string }) => ({ stdout: `${err.stdout ?? ''}${err.stderr ?? ''}` || String(err), failed: true }),
    );
    expect('failed' in tsc ? tsc.stdout : '', 'tsc --noEmit on the integrator script').toBe('');

    // 3. Run it against the server with a sandbox API key: every id it read through the types is real.
    const catalog = await setupSandboxCatalog(app);
    const integrator = await setupIntegrator(app, catalog);
    const { stdout } = await run(process.execPath, ['--import', 'tsx', join(dir, 'first-payment.ts')], {
      cwd: root,
      env: {
        ...process.env,
        BASE_URL: server.url,
        API_KEY: integrator.apiKeyHeaders['x-api-key']!,
        ORGANIZATION_ID: integrator.organizationId,
        APPLICATION_ID: integrator.applicationId,
        NETWORK_ID: catalog.networkId,
        ASSET_NETWORK_ID: catalog.assetNetworkId,
      },
    });
    const out = JSON.parse(stdout.trim().split('\n').pop()!);
    expect(out).toMatchObject({ accountStatus: 'ACTIVE', amount: '1000000', paymentIntentStatus: 'AWAITING_PAYMENT' });
    const db = app.deps.db;
    expect(await db.wallet.findUnique({ where: { id: out.walletId } })).toMatchObject({ applicationId: integrator.applicationId });
    expect(await db.account.findUnique({ where: { id: out.accountId } })).toMatchObject({ organizationId: integrator.organizationId });
    expect(await db.paymentIntent.findUnique({ where: { id: out.paymentIntentId } })).toMatchObject({ transactionId: out.transactionId });
    expect(await db.withdrawalDestination.findUnique({ where: { id: out.withdrawalDestinationId } })).toMatchObject({
      organizationId: integrator.organizationId,
    });
  },
);
