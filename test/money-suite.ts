import { afterAll, afterEach, beforeAll } from 'vitest';
import { createOperator, createTestApp, type TestApp } from './harness';
import { checkLedgerInvariants } from './ledger-invariants';
import { checkSandboxInvariants } from './sandbox-invariants';

export interface MoneySuite {
  app: TestApp;
  op: { operatorId: string; headers: Record<string, string> };
}

/**
 * The set-up the money test files share (refunds, withdrawals, settlements, the ledger...): one test
 * app for the file (`opts`: createTestApp's, e.g. a webhook environment), an operator, and the
 * ledger invariants checked after each test. `suite.app` and `suite.op` are set once the file's
 * beforeAll ran (call it at the top of the file, before its own hooks).
 */
export function moneySuite(opts: Parameters<typeof createTestApp>[0] = {}): MoneySuite {
  const suite: MoneySuite = { app: undefined as never, op: undefined as never };
  beforeAll(async () => {
    suite.app = await createTestApp(opts);
    suite.op = await createOperator(suite.app);
  });
  afterAll(() => suite.app.close());
  afterEach(() => checkLedgerInvariants(suite.app.deps.db));
  return suite;
}

/**
 * The set-up of the sandbox chain's test files: one test app for the file, handed to `use` once the
 * file's beforeAll ran, and the ledger's and the sandbox chain's invariants checked after each test.
 */
export function sandboxSuite(use: (app: TestApp) => void): void {
  let app: TestApp;
  beforeAll(async () => {
    app = await createTestApp();
    use(app);
  });
  afterAll(() => app.close());
  afterEach(async () => {
    await checkLedgerInvariants(app.deps.db);
    await checkSandboxInvariants(app.deps.db);
  });
}
