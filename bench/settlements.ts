import type { Deps } from '../src/context';
import { env, expectStatus, idOf, pool, setupBenchIntegrator, sleep, type Call, median, textTable, type ScenarioBench } from './setup';
import { checkLedgerInvariants } from '../test/ledger-invariants';
import { balanceOf, postLedgerTransaction } from '../src/ledger/ledger';
import { ledgerAccounts } from '../src/ledger/ledger';
import { amountToNumeric, numericToAmount } from '../src/money';
import { SETTLEMENT_EXECUTE_QUEUE } from '../src/kernel/queues';
import { startSettlementWorkers } from '../src/settlements/settlements.jobs';
import { startDiag, type DiagReport } from './settlements-diag';

/**
 * The settlements scenario of `npm run bench` (BENCH_SCENARIOS=settlements): funded transactions
 * with a three-way split and a platform fee, settled by the service's own settlement job.
 *
 * Setup (once, through REST): a platform operator, a sandbox catalog, an organization with a
 * sandbox API key, three split accounts, and an APPLICATION pricing policy (1.5%, minimum 100,
 * maximum 50,000 base units) for the asset-network.
 *
 * Each round:
 * 1. BENCH_SETTLEMENTS_TRANSACTIONS payment intents through REST (BENCH_SETTLEMENTS_CONCURRENCY in
 *    flight), each with its release rule inline: splits 33.333333 / 33.333333 / 33.333334 %.
 * 2. Funding, posted directly (not through the sandbox chain, which bench/deposits.ts measures):
 *    per transaction the ledger posting a confirmed deposit makes (DEBIT CHAIN_CLEARING, CREDIT
 *    ESCROW, key bench-funding:<transactionId>) and the rows it leaves (Transaction RESERVED with
 *    fundedAmount, its payment intent SUCCEEDED), 100 transactions per database transaction.
 * 3. The settlement workers of the process are stopped; one POST /v1/transactions/{id}/settlements
 *    per transaction (no amount: everything), through REST, BENCH_SETTLEMENTS_CONCURRENCY in flight:
 *    requests/s (each: the row lock, the checks, the PENDING settlement, its audit entry, its job).
 * 4. BENCH_SETTLEMENTS_WORKERS settlement workers are started (the real job handler,
 *    executeSettlement, as `npm start` runs it), and the bench waits until every settlement of the
 *    round is EXECUTED: settlements/s = settlements / (workers started -> last executed). Each is one
 *    database transaction: the fee, the split, one ledger transaction of 5 lines, 3 allocations,
 *    the escrow totals, 6 events, 2 audit entries.
 * After the rounds: every settlement EXECUTED, the three accounts and PLATFORM_REVENUE hold exactly
 * what was funded (fees = the sum of the settlements' fees), every escrow is empty, the ledger
 * invariants hold.
 */
export interface SettlementsRound {
  transactions: number;
  concurrency: number;
  workers: number;
  intentsPerSecond: number;
  fundedPerSecond: number;
  requestsPerSecond: number;
  /** Settlements executed per second by the job workers (started -> last executed). */
  settlementsPerSecond: number;
  seconds: { create: number; fund: number; request: number; execute: number };
  /** BENCH_SETTLEMENTS_DIAG=1: where the execute window went (bench/settlements-diag.ts). */
  diag?: DiagReport;
}

export type SettlementsBench = ScenarioBench<SettlementsRound>;

export const settlementsSettings = () => ({
  transactions: env('BENCH_SETTLEMENTS_TRANSACTIONS', 1000),
  concurrency: env('BENCH_SETTLEMENTS_CONCURRENCY', 16),
  workers: env('BENCH_SETTLEMENTS_WORKERS', 8),
  timeoutSeconds: env('BENCH_SETTLEMENTS_TIMEOUT', 600),
});

/** What a settlements load needs (made once through REST): the organization, its three split accounts, the pricing policy. */
export interface SettlementsSetup {
  deps: Pick<Deps, 'db' | 'clock'>;
  call: Call;
  org: string;
  assetNetworkId: string;
  apiKey: Record<string, string>;
  accounts: string[];
  releaseRule: { splits: { accountId: string; percentage: string }[] };
}
export interface SettlementTx {
  intentId: string;
  transactionId: string;
  amount: bigint;
  settlementId: string;
}
const expectSettlements = expectStatus('settlements');

/** An operator, a sandbox catalog, an organization with three split accounts and an APPLICATION pricing policy (1.5%, min 100, max 50,000). */
export async function setupSettlements(deps: Pick<Deps, 'db' | 'clock'>, call: Call): Promise<SettlementsSetup> {
  const expect = expectSettlements;
  const { op, assetNetworkId, org, app, apiKey } = await setupBenchIntegrator(deps, call, 'settlements', { code: 'BS', requiredConfirmations: 1 });
  const accounts: string[] = [];
  for (const name of ['Seller', 'Marketplace partner', 'Logistics'])
    accounts.push(idOf(expect(await call('POST', `/v1/organizations/${org}/accounts`, { name }, apiKey), 201, 'account')));
  expect(
    await call(
      'POST',
      '/v1/admin/pricing-policy',
      { scope: 'APPLICATION', applicationId: app, assetNetworkId, percentage: '1.5', minimumAmount: '100', maximumAmount: '50000' },
      op,
    ),
    204,
    'pricing policy',
  );
  const releaseRule = {
    splits: [
      { accountId: accounts[0]!, percentage: '33.333333' },
      { accountId: accounts[1]!, percentage: '33.333333' },
      { accountId: accounts[2]!, percentage: '33.333334' },
    ],
  };
  return { deps, call, org, assetNetworkId, apiKey, accounts, releaseRule };
}

/** Steps 1 and 2 of a round: `n` payment intents through REST, then funded in the database (100 per transaction). */
export async function createFundedTransactions(
  x: SettlementsSetup,
  n: number,
  roundNo: number,
  concurrency: number,
): Promise<{ txs: SettlementTx[]; createdAt: number }> {
  const { deps, call, org, assetNetworkId, apiKey, accounts, releaseRule } = x;
  const txs: SettlementTx[] = new Array(n);
  await pool(n, concurrency, async (i) => {
    // Awkward amounts (odd, not multiples of 3) so the rounding rule and the fee clamps are exercised.
    const amount = BigInt(1_000_001 + roundNo * 100_000 + i * 37);
    const r = expectSettlements(
      await call(
        'POST',
        `/v1/organizations/${org}/payment-intents`,
        { assetNetworkId, amount: amount.toString(), beneficiaryAccountId: accounts[0], expiresInSeconds: 86_400, releaseRule },
        apiKey,
      ),
      201,
      'payment intent',
    );
    const intentId = idOf(r);
    const row = await deps.db.paymentIntent.findUniqueOrThrow({ where: { id: intentId }, select: { transactionId: true } });
    txs[i] = { intentId, transactionId: row.transactionId, amount, settlementId: '' };
  });
  const createdAt = performance.now();
  // Funding with the ledger shape of a confirmed deposit, 100 transactions per database transaction.
  for (let k = 0; k < n; k += 100) {
    const chunk = txs.slice(k, k + 100);
    await deps.db.$transaction(
      async (tx) => {
        const now = deps.clock.now();
        for (const t of chunk) {
          const escrowOf = { id: t.transactionId, organizationId: org, assetNetworkId };
          await postLedgerTransaction(tx, {
            idempotencyKey: `bench-funding:${t.transactionId}`,
            nature: 'bench.funding',
            organizationId: org,
            referenceType: 'Transaction',
            referenceId: t.transactionId,
            lines: [
              { account: ledgerAccounts.clearing(assetNetworkId), direction: 'DEBIT', amount: t.amount },
              { account: ledgerAccounts.escrow(escrowOf), direction: 'CREDIT', amount: t.amount },
            ],
            postedAt: now,
          });
          await tx.transaction.update({
            where: { id: t.transactionId },
            data: { status: 'RESERVED', fundedAmount: amountToNumeric(t.amount), fundedAt: now, reservedAt: now },
          });
          await tx.paymentIntent.update({
            where: { id: t.intentId },
            data: { status: 'SUCCEEDED', confirmedAmount: amountToNumeric(t.amount), succeededAt: now },
          });
        }
      },
      { timeout: 60_000 },
    );
  }
  return { txs, createdAt };
}

/** Step 3: one POST /v1/transactions/{id}/settlements per transaction (no amount: everything); sets each settlementId. */
export async function requestSettlements(x: SettlementsSetup, txs: SettlementTx[], concurrency: number): Promise<void> {
  await pool(txs.length, concurrency, async (i) => {
    const t = txs[i]!;
    t.settlementId = idOf(
      expectSettlements(await x.call('POST', `/v1/transactions/${t.transactionId}/settlements`, undefined, x.apiKey), 201, 'request settlement'),
    );
  });
}

/** Waits until every settlement of `ids` is EXECUTED (throws on a FAILED one or after `timeoutSeconds`). */
export async function awaitSettlementsExecuted(x: SettlementsSetup, ids: string[], timeoutSeconds: number): Promise<void> {
  const deadline = performance.now() + timeoutSeconds * 1000; // monotonic: a wall-clock step must not end the wait
  for (;;) {
    const executed = await x.deps.db.settlement.count({ where: { id: { in: ids }, status: 'EXECUTED' } });
    if (executed >= ids.length) return;
    const failed = await x.deps.db.settlement.count({ where: { id: { in: ids }, status: 'FAILED' } });
    if (failed) throw new Error(`settlements bench: ${failed} settlements FAILED`);
    if (performance.now() > deadline) throw new Error(`settlements bench: ${executed} of ${ids.length} settlements executed after ${timeoutSeconds} s`);
    await sleep(20);
  }
}

/** The checks after the rounds: every settlement EXECUTED, balances exact, ledger invariants. */
export async function verifySettlements(x: SettlementsSetup, all: { transactionId: string; settlementId: string; amount: bigint }[]): Promise<string> {
  const { deps, org, assetNetworkId, accounts } = x;
  const ids = all.map((t) => t.settlementId);
  // One array parameter, not one parameter per id: the memory bench's ten minutes pay 40,000 and more (PostgreSQL's limit is 32,767).
  const rows = await deps.db.$queryRaw<
    { status: string; grossAmount: Parameters<typeof numericToAmount>[0] | null; feeAmount: Parameters<typeof numericToAmount>[0] | null }[]
  >`
    SELECT "status"::text AS "status", "grossAmount", "feeAmount" FROM "Settlement" WHERE "id" = ANY(${ids}::uuid[])`;
  const executed = rows.filter((r) => r.status === 'EXECUTED');
  if (executed.length !== all.length) throw new Error(`${executed.length} of ${all.length} settlements EXECUTED`);
  const funded = all.reduce((sum, t) => sum + t.amount, 0n);
  const gross = executed.reduce((sum, r) => sum + numericToAmount(r.grossAmount!), 0n);
  const fees = executed.reduce((sum, r) => sum + numericToAmount(r.feeAmount!), 0n);
  if (gross !== funded) throw new Error(`settled ${gross}, funded ${funded}`);
  const revenue = (await balanceOf(deps.db, { kind: 'PLATFORM_REVENUE', ownerId: null, organizationId: null, assetNetworkId })).posted;
  if (revenue !== fees) throw new Error(`PLATFORM_REVENUE ${revenue}, fees ${fees}`);
  let customers = 0n;
  for (const a of accounts) customers += (await balanceOf(deps.db, { kind: 'CUSTOMER', ownerId: a, organizationId: org, assetNetworkId })).posted;
  if (customers + revenue !== funded) throw new Error(`accounts ${customers} + revenue ${revenue} != funded ${funded}`);
  const [open] = await deps.db.$queryRaw<{ n: number }[]>`
    SELECT count(*)::int AS "n" FROM "Transaction" WHERE "id" = ANY(${all.map((t) => t.transactionId)}::uuid[]) AND "status" <> 'SETTLED'`;
  if (open!.n) throw new Error(`${open!.n} transactions not SETTLED`);
  await checkLedgerInvariants(deps.db);
  return `${all.length} settlements EXECUTED, every transaction SETTLED; the three accounts (${customers}) + PLATFORM_REVENUE (${revenue} = the fees) = funded (${funded}); ledger invariants hold`;
}

export async function startSettlementsBench(opts: { deps: Deps; call: Call; say: (msg: string) => void }): Promise<SettlementsBench> {
  const { deps, call, say } = opts;
  const s = settlementsSettings();
  const boss = deps.boss;
  if (!boss) throw new Error('settlements bench: the job runner is off (JOBS=on is needed)');
  const setup = await setupSettlements(deps, call);
  say(`settlements: organization ${setup.org}, asset-network ${setup.assetNetworkId}, splits 33.333333/33.333333/33.333334 %, fee 1.5% (min 100, max 50,000)`);

  const all: { transactionId: string; settlementId: string; amount: bigint }[] = [];
  let roundNo = 0;

  return {
    async run() {
      roundNo++;
      const n = s.transactions;
      const t0 = performance.now();
      const { txs, createdAt: t1 } = await createFundedTransactions(setup, n, roundNo, s.concurrency);
      const t2 = performance.now();
      // Requests with the workers stopped: the queue fills; then the workers drain it.
      await boss.offWork(SETTLEMENT_EXECUTE_QUEUE, { wait: true });
      await requestSettlements(setup, txs, s.concurrency);
      const t3 = performance.now();
      const diag = process.env.BENCH_SETTLEMENTS_DIAG === '1' ? startDiag(deps.db, Number(process.env.BENCH_PG_PORT ?? 54361)) : null;
      await startSettlementWorkers(boss, deps, s.workers, diag?.onGroup);
      await awaitSettlementsExecuted(
        setup,
        txs.map((x) => x.settlementId),
        s.timeoutSeconds,
      );
      const t4 = performance.now();
      const report = await diag?.stop(n);
      if (report) say(`settlements diagnostics: ${JSON.stringify(report, null, 1)}`);
      all.push(...txs.map((x) => ({ transactionId: x.transactionId, settlementId: x.settlementId, amount: x.amount })));
      const sec = (ms: number) => +(ms / 1000).toFixed(2);
      return {
        transactions: n,
        concurrency: s.concurrency,
        workers: s.workers,
        intentsPerSecond: Math.round(n / ((t1 - t0) / 1000)),
        fundedPerSecond: Math.round(n / ((t2 - t1) / 1000)),
        requestsPerSecond: Math.round(n / ((t3 - t2) / 1000)),
        settlementsPerSecond: Math.round(n / ((t4 - t3) / 1000)),
        seconds: { create: sec(t1 - t0), fund: sec(t2 - t1), request: sec(t3 - t2), execute: sec(t4 - t3) },
        ...(report ? { diag: report } : {}),
      };
    },
    verify: () => verifySettlements(setup, all),
  };
}

/** The scenario's table (the round with the median settlements/s) and its targets. */
export function settlementsReport(runs: SettlementsRound[], check: { ok: boolean; detail: string } | undefined) {
  const m = median(runs.map((r) => r.settlementsPerSecond));
  const r = runs.find((x) => x.settlementsPerSecond === m)!;
  const rows = [
    ['settlements', 'intents/s', 'funded/s', 'requests/s', 'settlements/s', 'execute s', 'rounds: settlements/s'],
    [
      `${r.transactions} transactions, 3-way split + fee, ${r.workers} workers, ${r.concurrency} requests in flight`,
      String(r.intentsPerSecond),
      String(r.fundedPerSecond),
      String(r.requestsPerSecond),
      String(r.settlementsPerSecond),
      String(r.seconds.execute),
      runs.map((x) => String(x.settlementsPerSecond)).join(', '),
    ],
  ];
  return {
    result: { ...r, rounds: runs },
    table: textTable(rows),
    targets: [
      {
        target: 'settlements: measured (no target set): settlements executed per second by the job workers (median of the rounds)',
        met: null,
        measured: `${r.settlementsPerSecond}/s with ${r.workers} workers (requests through REST ${r.requestsPerSecond}/s)`,
      },
      {
        target: 'settlements: every settlement EXECUTED once, balances exact, ledger invariants hold',
        met: check?.ok ?? null,
        measured: check?.detail ?? 'not checked',
      },
    ],
  };
}
