import { expect, onTestFinished } from 'vitest';
import pg from 'pg';
import { createPrisma, type PrismaClient } from '../src/db/prisma';
import { setupIntegrator, setupSandboxCatalog } from './money-helpers';
import { cloneTemplateDatabase, ERROR_LEVEL, ownerUrlOf, pollUntil, serviceEnv, startService, type ServiceProcess } from './process-harness';

/**
 * The shape shared by the crash tests (test/crash-*.test.ts, test/account-batch-crash.test.ts): the
 * service as `npm start` runs it on a fresh clone of the template database; the case's set-up and
 * workload on that first process; the process ends (kill -9 of its process group by default); a
 * second process starts on the same database; the case's replays; every operation terminal within
 * RECOVERY_BOUND_MS of the restart; the case's checks of the books; and no error logged by the
 * second process but the lost attempts a kill leaves.
 *
 * Everything a case starts (processes, clients) is stopped when its test ends (`onTestFinished`),
 * not when its file ends: a restarted service left running would produce blocks and sweep for the
 * rest of the file, on the CPU the next case measures its recovery with.
 */
export const RECOVERY_BOUND_MS = 60_000;

export const idOf = (r: { headers: Headers }) => r.headers.get('location')!.split('/').pop()!;
/** A withdrawal destination on the sandbox network. */
export const DEST = '0x00000000000000000000000000000000000000c7';

/** Runs `fn` when the current test ends (passed or failed), after those registered later. */
export function atTestEnd(fn: () => Promise<unknown> | unknown): void {
  onTestFinished(async () => {
    await fn();
  });
}

export const errorsOf = (svc: ServiceProcess) => svc.logs().filter((l) => l.level >= ERROR_LEVEL);
/** A lost attempt is logged at error on the restart after a kill (src/kernel/work.ts): expected; anything else at error is not. */
export const unexpectedErrors = (svc: ServiceProcess) => errorsOf(svc).filter((l) => !String(l.msg).startsWith('job attempt lost'));

/** A cloned database and an owner's Prisma client on it (closed at the test's end). */
export async function crashDatabase(prefix: string): Promise<{ databaseUrl: string; ownerUrl: string; db: PrismaClient }> {
  const databaseUrl = await cloneTemplateDatabase(prefix);
  const ownerUrl = ownerUrlOf(databaseUrl);
  const db = createPrisma(ownerUrl, 4);
  atTestEnd(() => db.$disconnect());
  return { databaseUrl, ownerUrl, db };
}

/** A service process on `databaseUrl`, in its own process group, stopped at the test's end. */
export async function startCrashService(databaseUrl: string, env: Record<string, string>): Promise<ServiceProcess> {
  const svc = await startService({ databaseUrl, env, detached: true });
  atTestEnd(() => svc.stop());
  return svc;
}

/** A sandbox catalog and an integrator (API key, wallet) made through REST on `svc`, and an account of theirs. */
export async function sandboxIntegrator(svc: ServiceProcess, db: PrismaClient, opts: { accountName?: string } = {}) {
  const app = { rest: svc.rest, deps: { db } };
  const catalog = await setupSandboxCatalog(app, { requiredConfirmations: 1 });
  const f = await setupIntegrator(app, catalog);
  const h = f.apiKeyHeaders;
  const acc = await svc.rest('POST', `/v1/organizations/${f.organizationId}/accounts`, { body: { name: opts.accountName ?? 'Seller' }, headers: h });
  expect(acc.status, acc.text).toBe(201);
  return { catalog, f, h, an: catalog.assetNetworkId, accountId: idOf(acc) };
}
export type SandboxIntegrator = Awaited<ReturnType<typeof sandboxIntegrator>>;
export interface Intent {
  id: string;
  transactionId: string;
  address: string;
}

/**
 * `n` payment intents of 1,000,000 for the integrator's account, read back (their deposit address and
 * transaction), in order; `inFlight` of them created at a time (default one).
 */
export async function createIntents(svc: ServiceProcess, x: SandboxIntegrator, n: number, opts: { inFlight?: number } = {}): Promise<Intent[]> {
  const one = async () => {
    const pi = await svc.rest('POST', `/v1/organizations/${x.f.organizationId}/payment-intents`, {
      headers: x.h,
      body: { assetNetworkId: x.an, amount: '1000000', beneficiaryAccountId: x.accountId, walletId: x.f.walletId },
    });
    expect(pi.status, pi.text).toBe(201);
    return (await svc.rest('GET', `/v1/payment-intents/${idOf(pi)}`, { headers: x.h })).body as Intent;
  };
  const intents: Intent[] = [];
  const step = opts.inFlight ?? 1;
  for (let i = 0; i < n; i += step) intents.push(...(await Promise.all(Array.from({ length: Math.min(step, n - i) }, one))));
  return intents;
}

/** Pays each intent in full on the sandbox chain and waits until every transaction is RESERVED. */
export async function fund(svc: ServiceProcess, x: SandboxIntegrator, intents: Intent[]): Promise<void> {
  for (const pi of intents) {
    const d = await svc.rest('POST', '/v1/sandbox/deposits', { headers: x.h, body: { address: pi.address, amount: '1000000', assetNetworkId: x.an } });
    expect(d.status, d.text).toBe(201);
  }
  await pollUntil(
    'funded',
    async () => Promise.all(intents.map(async (pi) => (await svc.rest('GET', `/v1/transactions/${pi.transactionId}`, { headers: x.h })).body.status)),
    (s) => s.every((v) => v === 'RESERVED'),
    60_000,
    200,
  );
}

/** Waits until the integrator's account has `posted` on its balance. */
export async function accountPosted(svc: ServiceProcess, x: SandboxIntegrator, posted: string): Promise<void> {
  await pollUntil(
    `account posted ${posted}`,
    async () => (await svc.rest('GET', `/v1/accounts/${x.accountId}/balances`, { headers: x.f.member.headers })).body,
    (b) => b.some((r: { posted: string }) => r.posted === posted),
    30_000,
    200,
  );
}

/**
 * The withdrawal cases' start: the integrator's account (named Payouts) holding 1,000,000 (a payment
 * intent paid and settled in full: its deposit address holds it on the chain) and a withdrawal
 * destination of theirs at DEST.
 */
export async function fundedPayouts(svc: ServiceProcess, db: PrismaClient) {
  const x = await sandboxIntegrator(svc, db, { accountName: 'Payouts' });
  const intents = await createIntents(svc, x, 1);
  await fund(svc, x, intents);
  expect((await svc.rest('POST', `/v1/transactions/${intents[0]!.transactionId}/settlements`, { headers: x.h })).status).toBe(201);
  await accountPosted(svc, x, '1000000');
  const dest = await svc.rest('POST', `/v1/organizations/${x.f.organizationId}/withdrawal-destinations`, {
    headers: x.h,
    body: { networkId: x.catalog.networkId, address: DEST },
  });
  expect(dest.status, dest.text).toBe(201);
  return { ...x, destinationId: idOf(dest) };
}

/** The integrator's account has one balance, `amount` posted and available. */
export async function expectBalance(svc: ServiceProcess, x: SandboxIntegrator, amount: string): Promise<void> {
  const balances = (await svc.rest('GET', `/v1/accounts/${x.accountId}/balances`, { headers: x.f.member.headers })).body as {
    posted: string;
    available: string;
  }[];
  expect(balances.map((v) => [v.posted, v.available])).toEqual([[amount, amount]]);
}

/** crashCase's `terminal` of the withdrawal cases: a block mined per poll until every withdrawal of `ids` is CONFIRMED. */
export const withdrawalsConfirmed = {
  what: 'every withdrawal CONFIRMED',
  read: async (s: { x: SandboxIntegrator; ids: string[] }, { b }: Restarted) => {
    await b.rest('POST', `/v1/sandbox/networks/${s.x.catalog.networkId}/mine`, { headers: s.x.h, body: { blocks: 1 } });
    return Promise.all(s.ids.map(async (id) => (await b.rest('GET', `/v1/withdrawals/${id}`, { headers: s.x.h })).body.status as string));
  },
  done: (v: string[]) => v.every((st) => st === 'CONFIRMED'),
};

/**
 * A lock held by the test on its own owner's connection (a row `FOR UPDATE` in an open transaction,
 * or a session advisory lock): the service's work gets as far as that lock and waits there, so the
 * kill comes at a known point. `waiting` answers once a backend of the service waits for it;
 * `release` lets go (after the kill: the dead process's transactions are rolled back by then).
 */
export async function holdLock(ownerUrl: string, lock: { rowSql: string; params: unknown[] } | { advisory: string }) {
  const client = new pg.Client({ connectionString: ownerUrl });
  await client.connect();
  atTestEnd(() => client.end().catch(() => {}));
  if ('rowSql' in lock) {
    await client.query('BEGIN');
    const locked = await client.query(lock.rowSql, lock.params);
    expect(locked.rowCount).toBe(1);
  } else await client.query(`SELECT pg_advisory_lock(hashtextextended($1::text, 0))`, [lock.advisory]);
  return {
    client,
    waiting: async (what: string) => {
      const n = await pollUntil(
        what,
        async () =>
          // The backends waiting for this connection's lock.
          (await client.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid))`)).rows[0].n as number,
        (v) => v > 0,
        30_000,
        100,
      );
      expect(n).toBeGreaterThan(0);
    },
    release: async () => {
      if ('rowSql' in lock) await client.query('ROLLBACK');
      else await client.query(`SELECT pg_advisory_unlock(hashtextextended($1::text, 0))`, [lock.advisory]);
    },
  };
}

export interface CrashStart {
  databaseUrl: string;
  ownerUrl: string;
  db: PrismaClient;
  env: Record<string, string>;
  /** The first process. */
  a: ServiceProcess;
}
export interface Restarted extends CrashStart {
  /** The second process, on the same database. */
  b: ServiceProcess;
  /** When the second process was started (Date.now()): the recovery bound counts from here. */
  restartedAt: number;
}

/**
 * One crash case (the shape above). `before` runs on the first process and answers the case's
 * state; `crash` ends that process (default: kill -9 of its process group, asserted); `afterCrash`
 * runs before the restart (e.g. releasing a lock the test held); `replay` runs on the second process
 * (requests sent again with their keys); `terminal` is polled until done, within RECOVERY_BOUND_MS of
 * the restart (asserted); `verify` checks the books; then the second process must have logged no
 * error but lost attempts (`errors` to say otherwise). Answers the restarted context and the state.
 */
export async function crashCase<S, T = unknown>(c: {
  /** Prefix of the cloned database's name. */
  name: string;
  /** Settings of both processes (over serviceEnv's). */
  env?: Record<string, string>;
  before: (x: CrashStart) => Promise<S>;
  crash?: (a: ServiceProcess, s: S) => Promise<void>;
  afterCrash?: (s: S, x: CrashStart) => Promise<void>;
  replay?: (s: S, r: Restarted) => Promise<void>;
  terminal?: { what: string; read: (s: S, r: Restarted) => Promise<T>; done: (v: T) => boolean };
  verify?: (s: S, r: Restarted) => Promise<void>;
  /** The errors the second process logged that fail the case (default: all but lost attempts, `unexpectedErrors`). */
  errors?: (b: ServiceProcess) => unknown[];
}): Promise<{ state: S; r: Restarted }> {
  const { databaseUrl, ownerUrl, db } = await crashDatabase(c.name);
  const env = await serviceEnv(c.env);
  const a = await startCrashService(databaseUrl, env);
  const x: CrashStart = { databaseUrl, ownerUrl, db, env, a };
  const state = await c.before(x);
  if (c.crash) await c.crash(a, state);
  else expect((await a.killGroup('SIGKILL')).signal).toBe('SIGKILL');
  await c.afterCrash?.(state, x);
  const restartedAt = Date.now();
  const r: Restarted = { ...x, b: await startCrashService(databaseUrl, env), restartedAt };
  await c.replay?.(state, r);
  if (c.terminal) {
    const t = c.terminal;
    await untilTerminal(t.what, () => t.read(state, r), t.done, restartedAt);
  }
  await c.verify?.(state, r);
  expect((c.errors ?? unexpectedErrors)(r.b)).toEqual([]);
  return { state, r };
}

/** Polls until `done` holds, within RECOVERY_BOUND_MS of `since` (asserted); answers the last value. */
export async function untilTerminal<T>(what: string, read: () => Promise<T>, done: (v: T) => boolean, since: number): Promise<T> {
  const v = await pollUntil(what, read, done, Math.max(1_000, since + RECOVERY_BOUND_MS - Date.now()), 250);
  expect(Date.now() - since).toBeLessThan(RECOVERY_BOUND_MS);
  return v;
}
