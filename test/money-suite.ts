import { afterAll, afterEach, beforeAll } from 'vitest';
import { createOperator, createTestApp, type TestApp } from './harness';
import { checkLedgerInvariants } from './ledger-invariants';

export interface MoneySuite {
  app: TestApp;
  op: { operatorId: string; headers: Record<string, string> };
}

/**
 * The set-up the money test files share (refunds, withdrawals...): one test app for the file, an
 * operator, and the ledger invariants checked after each test. `suite.app` and `suite.op` are set
 * once the file's beforeAll ran (call it at the top of the file, before its own hooks).
 */
export function moneySuite(): MoneySuite {
  const suite: MoneySuite = { app: undefined as never, op: undefined as never };
  beforeAll(async () => {
    suite.app = await createTestApp();
    suite.op = await createOperator(suite.app);
  });
  afterAll(() => suite.app.close());
  afterEach(() => checkLedgerInvariants(suite.app.deps.db));
  return suite;
}
