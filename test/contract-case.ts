import { createOperator, type TestApp } from './harness';

/**
 * A contract case (test/contract.test.ts): how to set up a route's call and what it must answer.
 * Every domain's fixture file builds its cases with these helpers.
 */
export interface ContractCase {
  name: string;
  expect: 'success' | { code: string };
  setup: () => Promise<{ variables: Record<string, unknown>; headers: Record<string, string> }>;
}

export function contractCaseHelpers(getApp: () => TestApp) {
  return {
    success: (name: string, setup: ContractCase['setup']): ContractCase => ({ name, expect: 'success', setup }),
    failure: (name: string, code: string, setup: ContractCase['setup']): ContractCase => ({ name, expect: { code }, setup }),
    operator: async () => (await createOperator(getApp())).headers,
    random: () => crypto.randomUUID(),
    /** Awaits a REST call that must answer `status`; throws with the body otherwise. */
    ok: async <R extends { status: number; text: string }>(r: Promise<R>, status: number, what: string): Promise<R> => {
      const res = await r;
      if (res.status !== status) throw new Error(`fixture ${what}: ${res.status} ${res.text}`);
      return res;
    },
  };
}
