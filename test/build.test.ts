import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { buildAll, entryPoints } from '../scripts/build';
import { projectRoot } from '../src/root';
import { cloneTemplateDatabase, ERROR_LEVEL, serviceEnv, startService, type ServiceProcess } from './process-harness';

// The production build (issue 17): `npm run build` output started as `npm run start:prod` runs it
// (`node dist/main.js`), on an existing (migrated) database: ready, and answering REST.
// Built into a folder of its own under .data/, so a developer's dist/ is left alone.
const outdir = join(projectRoot, '.data', `build-test-${process.pid}`);
let svc: ServiceProcess | undefined;
afterAll(async () => {
  await svc?.stop();
  rmSync(outdir, { recursive: true, force: true });
});

test('the built server starts on an existing database, is ready and serves REST', async () => {
  await buildAll({ outdir, quiet: true });
  for (const name of Object.keys(entryPoints)) expect(existsSync(join(outdir, `${name}.js`)), name).toBe(true);
  // Our code is compiled in; packages stay imports from node_modules.
  expect(readdirSync(join(outdir, 'bundle')).filter((f) => f.endsWith('.ts'))).toEqual([]);

  svc = await startService({
    databaseUrl: await cloneTemplateDatabase('build'),
    env: await serviceEnv(),
    args: [relative(projectRoot, join(outdir, 'main.js'))],
  });
  const ready = await svc.rest('GET', '/readyz');
  expect(ready.status).toBe(200);
  expect(ready.body).toMatchObject({ status: 'ready', checks: { database: 'ok', jobs: 'ok' } });
  // One REST call through the route table, its operation documents read from rest/operations.
  const signup = await svc.rest('POST', '/v1/auth/signup', {
    body: { email: `built-${process.pid}@example.com`, password: 'correct horse battery', name: 'Ann', organizationName: 'Built' },
  });
  expect(signup.status, JSON.stringify(signup.body)).toBe(201);
  expect(signup.body).toMatchObject({ organizationId: expect.any(String), memberId: expect.any(String) });
  expect((await svc.rest('GET', '/v1/openapi.json')).status).toBe(200);
  // The bundled packages at work: a session (argon2, jose), GraphQL over HTTP, the API reference and its assets.
  const login = await svc.rest('POST', '/v1/auth/login', { body: { email: `built-${process.pid}@example.com`, password: 'correct horse battery' } });
  expect(login.status, JSON.stringify(login.body)).toBe(200);
  const token = (login.body as { accessToken: string }).accessToken;
  const me = await svc.rest('POST', '/graphql', { headers: { authorization: `Bearer ${token}` }, body: { query: '{ viewer { email } }' } });
  expect(me.body).toEqual({ data: { viewer: { email: `built-${process.pid}@example.com` } } });
  const docs = await svc.rest('GET', '/docs', { headers: { accept: 'text/html' } });
  expect(docs.status).toBe(200);
  for (const asset of docs.text.match(/\/assets\/[^"']+/g) ?? []) expect((await svc.rest('GET', asset)).status, asset).toBe(200);
  // The operator console (issue 23): its assets are compiled into the bundle, not read from console/ or src/.
  const consolePage = await svc.rest('GET', '/console', { headers: { accept: 'text/html' } });
  expect(consolePage.status).toBe(200);
  const consoleAssets = consolePage.text.match(/\/assets\/console\.[^"']+/g) ?? [];
  expect(consoleAssets).toHaveLength(2);
  for (const asset of consoleAssets) expect((await svc.rest('GET', asset)).status, asset).toBe(200);
  expect(svc.logs().filter((l) => l.level >= ERROR_LEVEL)).toEqual([]);
  expect(await svc.stop()).toMatchObject({ code: 0 });
  svc = undefined;
}, 180_000);
