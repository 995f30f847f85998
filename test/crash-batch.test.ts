import { describe, expect, test } from 'vitest';
import { crashCase, errorsOf, type CrashStart } from './crash-case';
import { fireMixedBatch, prepareMixedBatch, retryAndVerifyMixedBatch, type MixedBatch } from './crash-mixed-batch';

/**
 * Crash and shutdown (issue 15), through the public interfaces of the service as `npm start` runs it
 * (test/process-harness.ts), on the shared test server: a batch of settlements, refunds, withdrawals
 * and sandbox deposits is fired through REST with Idempotency-Keys; the service is killed mid-batch
 * (kill -9 of its process group; or SIGTERM); a new process starts on the same database; every
 * request is sent again with its key. Then, within 60 s of the restart: every operation terminal,
 * each replay answering what the first answer said, balances exact, each settlement and refund posted
 * once, one deposit per send, ledger and chain invariants (test/crash-mixed-batch.ts).
 * The same with the embedded PostgreSQL: test/crash-embedded.test.ts.
 */
const mixedBatch = async ({ a, db }: CrashStart): Promise<MixedBatch> => {
  const p = await prepareMixedBatch(a, db);
  await fireMixedBatch(a, p, 12);
  return p;
};

describe('crash and restart on the shared test server (DATABASE_URL)', () => {
  test('kill -9 of the process group mid-batch; restart; every request retried with its key: all terminal within 60 s, nothing twice', async () => {
    await crashCase({
      name: 'crash',
      before: mixedBatch,
      verify: (p, { b, db, restartedAt }) => retryAndVerifyMixedBatch(b, db, p, restartedAt),
    });
  }, 240_000);

  test('SIGTERM mid-batch: exit 0, no error logged, nothing unhandled; restart; all terminal within 60 s, nothing twice', async () => {
    await crashCase({
      name: 'term',
      env: { SHUTDOWN_TIMEOUT_MS: '10000' },
      before: mixedBatch,
      crash: async (a) => {
        const stopped = await a.stop(30_000); // SIGTERM to the Node process
        expect(stopped).toEqual({ code: 0, signal: null });
        expect(a.logs().map((l) => l.msg)).toEqual(expect.arrayContaining(['shutting down', 'stopped']));
        expect(errorsOf(a)).toEqual([]);
        expect(a.rawOutput()).not.toMatch(/unhandled|uncaught|57P01|terminating connection/i);
      },
      verify: (p, { b, db, restartedAt }) => retryAndVerifyMixedBatch(b, db, p, restartedAt),
      // A graceful stop loses no attempt: the restart logs no error either.
      errors: errorsOf,
    });
  }, 240_000);
});
