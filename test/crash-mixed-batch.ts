import { expect } from 'vitest';
import { randomUUID } from 'node:crypto';
import type { PrismaClient } from '../src/db/prisma';
import { checkLedgerInvariants } from './ledger-invariants';
import { checkSandboxInvariants } from './sandbox-invariants';
import type { RestResult } from './harness';
import type { ServiceProcess } from './process-harness';
import { accountPosted, createIntents, DEST, fund, idOf, sandboxIntegrator, untilTerminal } from './crash-case';

/**
 * The mixed batch of the issue-15 crash tests (test/crash-batch.test.ts, test/crash-embedded.test.ts):
 * settlements, refunds, withdrawals and sandbox deposits fired through REST with Idempotency-Keys,
 * cut by the crash; after the restart every request is sent again with its key, then within
 * RECOVERY_BOUND_MS of the restart every operation is terminal, each replay answers what the first
 * answer said, balances are exact, each settlement and refund is posted once, one deposit per send,
 * and the ledger and chain invariants hold.
 */
export interface BatchRequest {
  kind: 'settlement' | 'refund' | 'withdrawal' | 'deposit';
  /** POST when unset. */
  method?: string;
  path: string;
  body: Record<string, unknown>;
  key: string;
  /** The first answer, when one came before the crash. */
  first?: RestResult;
}

/** Everything set up before the batch, through REST on the first process. */
export async function prepareMixedBatch(svc: ServiceProcess, db: PrismaClient) {
  const x = await sandboxIntegrator(svc, db);
  const { f, h, an, accountId } = x;
  // 12 funded transactions: 2 settled in full before the batch (the seller's balance for the withdrawals), 10 for the batch.
  const funded = await createIntents(svc, x, 12);
  await fund(svc, x, funded);
  for (const pi of funded.slice(0, 2)) expect((await svc.rest('POST', `/v1/transactions/${pi.transactionId}/settlements`, { headers: h })).status).toBe(201);
  const dest = await svc.rest('POST', `/v1/organizations/${f.organizationId}/withdrawal-destinations`, {
    headers: h,
    body: { networkId: x.catalog.networkId, address: DEST },
  });
  expect(dest.status, dest.text).toBe(201);
  await accountPosted(svc, x, '2000000');
  // 6 intents to be paid during the batch.
  const unpaid = await createIntents(svc, x, 6);

  const requests: BatchRequest[] = [];
  const key = () => randomUUID();
  for (const pi of funded.slice(2)) {
    requests.push({ kind: 'settlement', method: 'POST', path: `/v1/transactions/${pi.transactionId}/settlements`, body: { amount: '600000' }, key: key() });
    requests.push({ kind: 'refund', method: 'POST', path: `/v1/transactions/${pi.transactionId}/refunds`, body: { amount: '200000' }, key: key() });
  }
  for (let i = 0; i < 4; i++)
    requests.push({
      kind: 'withdrawal',
      method: 'POST',
      path: `/v1/accounts/${accountId}/withdrawals`,
      body: { amount: '250000', assetNetworkId: an, withdrawalDestinationId: idOf(dest) },
      key: key(),
    });
  for (const pi of unpaid)
    requests.push({
      kind: 'deposit',
      method: 'POST',
      path: '/v1/sandbox/deposits',
      body: { address: pi.address, amount: '1000000', assetNetworkId: an },
      key: key(),
    });
  // Shuffled: every kind is in flight at the crash.
  requests.sort(() => Math.random() - 0.5);
  return { f, accountId, funded, unpaid, requests, headers: h };
}

export type MixedBatch = Awaited<ReturnType<typeof prepareMixedBatch>>;

/** Fires the batch; resolves once `answered` requests have answered (the others still in flight). */
export function fireMixedBatch(svc: ServiceProcess, p: MixedBatch, answered: number): Promise<void> {
  let n = 0;
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, 5_000);
    for (const r of p.requests)
      svc
        .rest(r.method ?? 'POST', r.path, { body: r.body, headers: { ...p.headers, 'idempotency-key': r.key } })
        .then((res) => (r.first = res))
        .catch(() => {}) // the crash cut it: retried after the restart
        .finally(() => {
          if (++n >= answered) {
            clearTimeout(timer);
            resolve();
          }
        });
  });
}

/**
 * Every request of a batch sent again with its key (201 each): where the first attempt had an answer,
 * it stands (the same status, the same operation). Answers each request's operation id (a deposit:
 * its txHash).
 */
export async function replayWithKeys<R extends BatchRequest>(svc: ServiceProcess, requests: R[], headers: Record<string, string>): Promise<Map<R, string>> {
  const ids = new Map<R, string>();
  for (const r of requests) {
    const res = await svc.rest(r.method ?? 'POST', r.path, { body: r.body, headers: { ...headers, 'idempotency-key': r.key } });
    expect(res.status, `${r.kind} replay: ${res.text}`).toBe(201);
    if (r.first && r.first.status < 500) {
      // The first answer stands: the same status and the same operation.
      expect(r.first.status, `${r.kind} first answer: ${r.first.text}`).toBe(201);
      if (r.kind === 'deposit') expect(res.body.txHash).toBe(r.first.body.txHash);
      else expect(idOf(res)).toBe(idOf(r.first));
    }
    ids.set(r, r.kind === 'deposit' ? String(res.body.txHash) : idOf(res));
  }
  return ids;
}

/** After the restart: every request again with its key; then every operation terminal within the bound; then the books. */
export async function retryAndVerifyMixedBatch(svc: ServiceProcess, db: PrismaClient, p: MixedBatch, restartedAt: number) {
  const h = p.headers;
  const ids = await replayWithKeys(svc, p.requests, h);
  const of = (kind: BatchRequest['kind']) => p.requests.filter((r) => r.kind === kind).map((r) => ids.get(r)!);
  const states = async () => ({
    settlements: await Promise.all(of('settlement').map(async (id) => (await svc.rest('GET', `/v1/settlements/${id}`, { headers: h })).body.status)),
    refunds: await Promise.all(of('refund').map(async (id) => (await svc.rest('GET', `/v1/refunds/${id}`, { headers: h })).body.status)),
    withdrawals: await Promise.all(of('withdrawal').map(async (id) => (await svc.rest('GET', `/v1/withdrawals/${id}`, { headers: h })).body.status)),
    intents: await Promise.all(p.unpaid.map(async (pi) => (await svc.rest('GET', `/v1/payment-intents/${pi.id}`, { headers: h })).body.status)),
  });
  const terminal = await untilTerminal(
    'every operation terminal',
    states,
    (s) =>
      s.settlements.every((v) => v === 'EXECUTED') &&
      s.refunds.every((v) => v === 'EXECUTED') &&
      s.withdrawals.every((v) => v === 'CONFIRMED') &&
      s.intents.every((v) => v === 'SUCCEEDED'),
    restartedAt,
  );
  expect(terminal.settlements).toHaveLength(10);

  // Each posted once; one deposit per send; the seller's balance exact: 2,000,000 + 10 x 600,000 - 4 x 250,000.
  expect(await db.ledgerTransaction.count({ where: { idempotencyKey: { in: of('settlement').map((id) => `settlement:${id}`) } } })).toBe(10);
  expect(await db.ledgerTransaction.count({ where: { idempotencyKey: { in: of('refund').map((id) => `refund:${id}`) } } })).toBe(10);
  expect(await db.deposit.count({ where: { paymentIntentId: { in: p.unpaid.map((pi) => pi.id) } } })).toBe(6);
  const balances = (await svc.rest('GET', `/v1/accounts/${p.accountId}/balances`, { headers: p.f.member.headers })).body as {
    posted: string;
    available: string;
  }[];
  expect(balances.map((b) => ({ posted: b.posted, available: b.available }))).toEqual([{ posted: '7000000', available: '7000000' }]);
  for (const pi of p.funded.slice(2)) {
    const t = await db.transaction.findUniqueOrThrow({ where: { id: pi.transactionId } });
    expect({ settled: t.settledAmount.toFixed(), refunded: t.refundedAmount.toFixed() }).toEqual({ settled: '600000', refunded: '200000' });
  }
  await checkLedgerInvariants(db);
  await checkSandboxInvariants(db);
}
