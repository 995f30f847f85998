import { describe, expect, test } from 'vitest';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPrisma } from '../src/db/prisma';
import { checkLedgerInvariants } from './ledger-invariants';
import { freePort, serviceEnv, startService } from './process-harness';
import { atTestEnd, errorsOf, unexpectedErrors } from './crash-case';
import { fireMixedBatch, prepareMixedBatch, retryAndVerifyMixedBatch } from './crash-mixed-batch';

/**
 * Crash and restart (issue 15) with the service's embedded PostgreSQL (no DATABASE_URL): the mixed
 * batch of test/crash-mixed-batch.ts cut by a kill -9 of the whole process group (PostgreSQL
 * included), then a kill -9 of the Node process alone (its PostgreSQL orphaned), then Ctrl-C.
 */
describe('crash and restart with the embedded PostgreSQL (no DATABASE_URL)', () => {
  test(
    'kill -9 of the process group (PostgreSQL included) mid-batch; restart; then kill -9 of the Node process alone ' +
      '(PostgreSQL orphaned); restart: all terminal, nothing twice',
    async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'ftis-crash-'));
      chmodSync(dataDir, 0o755); // the postgres OS user (when run as root) traverses it
      atTestEnd(() => rmSync(dataDir, { recursive: true, force: true }));
      const port = await freePort();
      const env = await serviceEnv();
      const start = async () => {
        const svc = await startService({ env, embedded: { dataDir, port }, detached: true, startTimeoutMs: 180_000 });
        atTestEnd(() => svc.stop());
        return svc;
      };
      const a = await start();
      const credentials = JSON.parse(readFileSync(join(dataDir, 'postgres-credentials.json'), 'utf8')) as { owner: string };
      const ownerUrl = `postgresql://postgres:${encodeURIComponent(credentials.owner)}@127.0.0.1:${port}/ftis`;
      let db = createPrisma(ownerUrl, 4);
      const p = await prepareMixedBatch(a, db);
      await db.$disconnect();
      await fireMixedBatch(a, p, 12);
      await a.killGroup('SIGKILL');
      const restartedAt = Date.now();
      const b = await start();
      db = createPrisma(ownerUrl, 4);
      atTestEnd(() => db.$disconnect());
      await retryAndVerifyMixedBatch(b, db, p, restartedAt);
      expect(unexpectedErrors(b)).toEqual([]);

      // The Node process alone: its PostgreSQL keeps running, orphaned; the next start stops it and starts its own.
      await db.$disconnect();
      process.kill(b.nodePid, 'SIGKILL');
      await b.exited;
      const c = await start();
      expect(c.rawOutput() + JSON.stringify(c.logs())).not.toMatch(/lock file|already exists/);
      db = createPrisma(ownerUrl, 4);
      atTestEnd(() => db.$disconnect());
      await checkLedgerInvariants(db);
      expect((await c.rest('GET', '/readyz')).status).toBe(200);
      // SIGINT (Ctrl-C to the Node process) is a graceful stop too: exit 0, the database stopped last.
      c.child.kill('SIGINT');
      expect(await c.exited).toEqual({ code: 0, signal: null });
      expect(c.logs().map((l) => l.msg)).toEqual(expect.arrayContaining(['shutting down', 'stopped']));
      expect(errorsOf(c)).toEqual([]);
    },
    300_000,
  );
});
