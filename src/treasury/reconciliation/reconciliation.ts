import { z } from 'zod';
import type { Context } from '../../context';
import type { Db } from '../../db/prisma';
import type { Reconciliation, ReconciliationDivergence, ReconciliationDivergenceKind } from '../../generated/prisma/client';
import { fieldError, invalidState, notFound } from '../../errors';
import { assertId, isUuid } from '../../ids';
import { amountToNumeric, amountToString, MAX_STORED_SUM, numericToAmount } from '../../money';
import { adapterFor, hasAdapter, networkRef, replacementChain, type ObservedTransfer } from '../../chains/adapter';
import { auditAs, type Actor } from '../../audit/audit';
import { requestActor, systemActor, TX_OPTIONS, type MoneyDeps } from '../../kernel/service';
import { recordCorrection, recordCorrectionInput } from '../../ledger/corrections';
import { parsePaging, type Page } from '../../kernel/paging';

/**
 * Reconciliation (docs/reconciliation.md): per asset-network, the ledger against the chain.
 *
 * - BALANCE_MISMATCH: the CHAIN_CLEARING balance (what the ledger says the platform holds on the
 *   chain) against the mined balances of every address the platform controls on the network
 *   (deposit addresses and treasury controlled addresses), less what is explained: outgoing
 *   transfers broadcast but not mined (refunds, withdrawals), mined transfers whose deposit is still
 *   pending (DETECTED, CONFIRMING, UNDER_REVIEW, or no row yet below the required depth), mined
 *   transfers of REJECTED deposits (never credited), and the per-transfer divergences below.
 * - DEPOSIT_NOT_ON_CHAIN: a credited deposit (CONFIRMED or REORG_FROZEN) whose transaction the chain
 *   does not show mined.
 * - UNCREDITED_TRANSFER: a transfer mined at the required depth to a controlled address, from an
 *   address that is not the platform's, that no credited or pending deposit explains (no Deposit row,
 *   or a REVERSED one).
 *
 * A run is one REPEATABLE READ database transaction (one snapshot of ledger and chain): the
 * Reconciliation row, its divergences and its audit entry commit together.
 */

/** Hourly, at minute 41 (jobs/index.ts). */
export const RECONCILE_SCHEDULE = '41 * * * *';

const CREDITED = new Set(['CONFIRMED', 'REORG_FROZEN']);
const PENDING_DEPOSIT = new Set(['DETECTED', 'CONFIRMING', 'UNDER_REVIEW']);
/** Outgoing transfers whose value has left the ledger (CHAIN_CLEARING credited) but is still on the chain. */
const IN_FLIGHT = new Set(['PENDING', 'ORPHANED']);

export interface AssetNetworkSummary {
  assetNetworkId: string;
  networkId: string;
  networkKind: string;
  skipped: boolean;
  note: string | null;
  /** CHAIN_CLEARING balance (debits - credits). */
  ledger: string;
  /** Sum of the mined balances of the controlled addresses. */
  chain: string;
  /** Refunds broadcast from those addresses (CHAIN_CLEARING credited), not mined yet. */
  inFlightOut: string;
  /** Withdrawals mined from those addresses whose hold on CHAIN_CLEARING is not posted yet (posted when CONFIRMED). */
  outMinedNotPosted: string;
  pendingIn: string;
  rejectedIn: string;
  /** chain - inFlightOut + outMinedNotPosted - pendingIn - rejectedIn - uncredited transfers + credited deposits not on chain. */
  observed: string;
  addresses: number;
  divergences: number;
}

interface NewDivergence {
  assetNetworkId: string;
  kind: ReconciliationDivergenceKind;
  expected: bigint;
  observed: bigint;
  details: Record<string, unknown>;
}

const zero = () => '0';

/**
 * Runs a reconciliation over every asset-network and records it (COMPLETED) with its divergences.
 * `operatorId` null: the schedule.
 */
export async function runReconciliation(deps: MoneyDeps, by: { operatorId: string | null; actor: Actor }): Promise<Reconciliation> {
  const created = await deps.db.$transaction(
    async (tx) => {
      const startedAt = deps.clock.now();
      const summaries: AssetNetworkSummary[] = [];
      const divergences: NewDivergence[] = [];
      const assetNetworks = await tx.assetNetwork.findMany({ include: { network: true }, orderBy: { id: 'asc' } });
      const clearing = new Map(
        (await tx.ledgerAccount.findMany({ where: { kind: 'CHAIN_CLEARING' }, select: { assetNetworkId: true, debitsPosted: true, creditsPosted: true } })).map(
          (a) => [a.assetNetworkId, numericToAmount(a.debitsPosted) - numericToAmount(a.creditsPosted)],
        ),
      );
      const byNetwork = new Map<string, typeof assetNetworks>();
      for (const an of assetNetworks) byNetwork.set(an.networkId, [...(byNetwork.get(an.networkId) ?? []), an]);

      for (const [networkId, ans] of byNetwork) {
        const network = ans[0]!.network;
        if (!hasAdapter(network.kind)) {
          for (const an of ans)
            summaries.push({
              assetNetworkId: an.id,
              networkId,
              networkKind: network.kind,
              skipped: true,
              note: `no network adapter for ${network.kind} networks in this version: not compared`,
              ledger: amountToString(clearing.get(an.id) ?? 0n),
              chain: zero(),
              inFlightOut: zero(),
              outMinedNotPosted: zero(),
              pendingIn: zero(),
              rejectedIn: zero(),
              observed: zero(),
              addresses: 0,
              divergences: 0,
            });
          continue;
        }
        const ref = networkRef(network);
        const adapter = adapterFor(network.kind, tx);
        const depositAddresses = (await tx.depositAddress.findMany({ where: { networkId }, select: { address: true } })).map((a) => a.address);
        const controlled = await tx.controlledAddress.findMany({ where: { networkId }, select: { address: true, assetNetworkIds: true } });
        const ours = new Set([...depositAddresses, ...controlled.map((c) => c.address)]);
        const transfers = await adapter.transfersTo(ref, [...ours]);
        const deposits = new Map((await tx.deposit.findMany({ where: { networkId } })).map((d) => [d.txHash, d]));
        // Outgoing broadcasts of the platform: refunds and withdrawals with a transaction hash.
        const anIds = ans.map((a) => a.id);
        const outgoing = [
          ...(
            await tx.refund.findMany({
              where: { assetNetworkId: { in: anIds }, status: 'EXECUTED', txHash: { not: null } },
              select: { id: true, txHash: true, netAmount: true },
            })
          ).map((r) => ({ kind: 'refund', id: r.id, txHash: r.txHash!, amount: r.netAmount ? numericToAmount(r.netAmount) : null })),
          ...(
            await tx.withdrawal.findMany({
              where: { networkId, status: { in: ['BROADCAST', 'REQUIRES_RECONCILIATION'] }, txHash: { not: null } },
              select: { id: true, txHash: true, amount: true },
            })
          ).map((w) => ({ kind: 'withdrawal', id: w.id, txHash: w.txHash!, amount: numericToAmount(w.amount) })),
        ];
        // Refunds credit CHAIN_CLEARING when broadcast: in flight while not mined. Withdrawals hold it
        // (pending, not in the posted balance) and post it when CONFIRMED: mined but not posted yet.
        const outgoingSeen: { kind: string; id: string; observed: ObservedTransfer; side: 'inFlight' | 'minedNotPosted' }[] = [];
        for (const o of outgoing) {
          // A replaced transfer is followed to its latest replacement (the one that can still move the value).
          const seen = (await replacementChain(adapter, ref, o.txHash)).links.at(-1)!.seen;
          if (!seen || !ours.has(seen.fromAddress)) continue;
          if (o.kind === 'refund' && IN_FLIGHT.has(seen.status)) outgoingSeen.push({ kind: o.kind, id: o.id, observed: seen, side: 'inFlight' });
          if (o.kind === 'withdrawal' && seen.status === 'MINED') outgoingSeen.push({ kind: o.kind, id: o.id, observed: seen, side: 'minedNotPosted' });
        }

        for (const an of ans) {
          const ledger = clearing.get(an.id) ?? 0n;
          const addresses = new Set([...depositAddresses, ...controlled.filter((c) => c.assetNetworkIds.includes(an.id)).map((c) => c.address)]);
          // Mined balances through the adapter (NetworkAdapter.balances), one read per asset-network.
          let chain = 0n;
          for (const b of (await adapter.balances(ref, an.id, [...addresses])).values()) chain += b.mined;
          let inFlightOut = 0n;
          let outMinedNotPosted = 0n;
          const inFlight: { kind: string; id: string; txHash: string; amount: string; side: string }[] = [];
          for (const o of outgoingSeen)
            if (o.observed.assetNetworkId === an.id) {
              if (o.side === 'inFlight') inFlightOut += o.observed.amount;
              else outMinedNotPosted += o.observed.amount;
              inFlight.push({ kind: o.kind, id: o.id, txHash: o.observed.txHash, amount: amountToString(o.observed.amount), side: o.side });
            }
          let pendingIn = 0n;
          let rejectedIn = 0n;
          let uncredited = 0n;
          let notOnChain = 0n;
          const found: NewDivergence[] = [];
          const byHash = new Map<string, ObservedTransfer>();
          for (const t of transfers) {
            if (t.assetNetworkId !== an.id) continue;
            byHash.set(t.txHash, t);
            if (t.status !== 'MINED' || !addresses.has(t.toAddress) || ours.has(t.fromAddress)) continue; // internal moves net out
            const d = deposits.get(t.txHash);
            if (d && CREDITED.has(d.status)) continue;
            if (d && PENDING_DEPOSIT.has(d.status)) pendingIn += t.amount;
            else if (d && d.status === 'REJECTED') rejectedIn += t.amount;
            else if (!d && t.confirmations < network.requiredConfirmations) pendingIn += t.amount;
            else {
              uncredited += t.amount;
              found.push({
                assetNetworkId: an.id,
                kind: 'UNCREDITED_TRANSFER',
                expected: 0n,
                observed: t.amount,
                details: {
                  txHash: t.txHash,
                  fromAddress: t.fromAddress,
                  toAddress: t.toAddress,
                  confirmations: t.confirmations,
                  depositId: d?.id ?? null,
                  depositStatus: d?.status ?? null,
                },
              });
            }
          }
          for (const d of deposits.values()) {
            if (d.assetNetworkId !== an.id || !CREDITED.has(d.status)) continue;
            const t = byHash.get(d.txHash) ?? (await adapter.transaction(ref, d.txHash));
            if (t && t.status === 'MINED') continue;
            const amount = numericToAmount(d.amount);
            notOnChain += amount;
            found.push({
              assetNetworkId: an.id,
              kind: 'DEPOSIT_NOT_ON_CHAIN',
              expected: amount,
              observed: 0n,
              details: {
                depositId: d.id,
                organizationId: d.organizationId,
                txHash: d.txHash,
                depositStatus: d.status,
                chainStatus: t?.status ?? null,
                replacedByTxHash: t?.replacedByTxHash ?? null,
              },
            });
          }
          const observed = chain - inFlightOut + outMinedNotPosted - pendingIn - rejectedIn - uncredited + notOnChain;
          if (observed !== ledger)
            found.unshift({
              assetNetworkId: an.id,
              kind: 'BALANCE_MISMATCH',
              expected: ledger,
              observed,
              details: {
                chain: amountToString(chain),
                inFlightOut: amountToString(inFlightOut),
                outMinedNotPosted: amountToString(outMinedNotPosted),
                pendingIn: amountToString(pendingIn),
                rejectedIn: amountToString(rejectedIn),
                uncreditedTransfers: amountToString(uncredited),
                creditedNotOnChain: amountToString(notOnChain),
                inFlight,
              },
            });
          divergences.push(...found);
          summaries.push({
            assetNetworkId: an.id,
            networkId,
            networkKind: network.kind,
            skipped: false,
            note: null,
            ledger: amountToString(ledger),
            chain: amountToString(chain),
            inFlightOut: amountToString(inFlightOut),
            outMinedNotPosted: amountToString(outMinedNotPosted),
            pendingIn: amountToString(pendingIn),
            rejectedIn: amountToString(rejectedIn),
            observed: amountToString(observed),
            addresses: addresses.size,
            divergences: found.length,
          });
        }
      }

      const completedAt = deps.clock.now();
      const run = await tx.reconciliation.create({
        data: {
          trigger: by.operatorId ? 'OPERATOR' : 'SCHEDULE',
          operatorId: by.operatorId,
          status: 'COMPLETED',
          summaries: summaries as never,
          divergenceCount: divergences.length,
          startedAt,
          completedAt,
        },
      });
      if (divergences.length)
        await tx.reconciliationDivergence.createMany({
          data: divergences.map((d) => {
            // A value beyond NUMERIC(78,0) (possible only after out-of-range corrections or chain sums) is
            // stored at the bound, and its exact value kept in the details: the run is recorded, never a 500.
            const difference = d.observed - d.expected;
            const exact = [d.expected, d.observed, difference].some((v) => v > MAX_STORED_SUM || -v > MAX_STORED_SUM);
            const fit = (v: bigint) => amountToNumeric(v > MAX_STORED_SUM ? MAX_STORED_SUM : -v > MAX_STORED_SUM ? -MAX_STORED_SUM : v);
            const details = exact
              ? {
                  ...d.details,
                  exact: {
                    expected: amountToString(d.expected),
                    observed: amountToString(d.observed),
                    difference: amountToString(difference),
                    note: 'AMOUNT_OUT_OF_RANGE: the columns hold the values bounded to 10^78 - 1',
                  },
                }
              : d.details;
            return {
              reconciliationId: run.id,
              assetNetworkId: d.assetNetworkId,
              kind: d.kind,
              expected: fit(d.expected),
              observed: fit(d.observed),
              difference: fit(difference),
              details: details as never,
              createdAt: completedAt,
            };
          }),
        });
      await auditAs(tx, deps, by.actor, {
        organizationId: null,
        entityType: 'Reconciliation',
        entityId: run.id,
        action: 'reconciliation.executed',
        after: {
          trigger: run.trigger,
          divergenceCount: divergences.length,
          assetNetworks: summaries.length,
          skipped: summaries.filter((s) => s.skipped).length,
        },
      });
      return run;
    },
    { ...TX_OPTIONS, isolationLevel: 'RepeatableRead' },
  );
  return created;
}

/** The scheduled job's handler (jobs/index.ts): the same reconciliation, run by the schedule. */
export async function reconcileJob(deps: MoneyDeps): Promise<Reconciliation> {
  return runReconciliation(deps, { operatorId: null, actor: systemActor() });
}

function operatorOf(ctx: Context, what: string): string {
  const p = ctx.principal;
  if (p?.type !== 'operator') throw notFound(what);
  return p.operatorId;
}

/** AdminExecuteReconciliation (operators): runs one now; 201 with the run. */
export async function executeReconciliation(ctx: Context): Promise<Reconciliation> {
  const operatorId = operatorOf(ctx, 'Reconciliation');
  return runReconciliation(ctx.deps, { operatorId, actor: requestActor(ctx) });
}

export async function loadReconciliation(ctx: Context, idArg: unknown): Promise<Reconciliation> {
  const id = assertId(idArg, 'Reconciliation');
  operatorOf(ctx, 'Reconciliation');
  const row = await ctx.deps.db.reconciliation.findUnique({ where: { id } });
  if (!row) throw notFound('Reconciliation');
  return row;
}

export function divergencesOf(ctx: Context, reconciliationId: string): Promise<ReconciliationDivergence[]> {
  return ctx.deps.db.reconciliationDivergence.findMany({ where: { reconciliationId }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
}

/** Reconciliations, newest first (skip/take: src/kernel/paging.ts). */
export async function searchReconciliations(ctx: Context, args: { skip?: number | null; take?: number | null }): Promise<Page<Reconciliation>> {
  operatorOf(ctx, 'Reconciliation');
  const { skip, take } = parsePaging(args);
  const db = ctx.deps.db;
  const [items, total] = await db.$transaction([
    db.reconciliation.findMany({ orderBy: [{ startedAt: 'desc' }, { id: 'desc' }], skip, take }),
    db.reconciliation.count(),
  ]);
  return { items, skip, take, total };
}

const uuid = (what: string) =>
  z
    .string()
    .refine(isUuid, `must be ${what} (uuid)`)
    .transform((s) => s.toLowerCase());
const correctionShape = recordCorrectionInput.shape;

export const resolveInput = z
  .object({
    divergenceId: uuid('a divergence id'),
    resolution: z.enum(['CORRECTION', 'ACCEPT_CHAIN']),
    reason: z.string().trim().min(1, 'must not be empty').max(1000),
    organizationId: correctionShape.organizationId,
    correctsLedgerTransactionId: correctionShape.correctsLedgerTransactionId,
    lines: correctionShape.lines.nullish(),
  })
  .strict();

/**
 * AdminResolveReconciliationDivergence (operators). CORRECTION: the lines are posted as a ledger
 * correction (src/ledger/corrections.ts, idempotency key reconciliation-divergence:<id>) in the
 * same database transaction as the divergence's resolution and its audit entry. ACCEPT_CHAIN: no
 * ledger change. 404: the reconciliation, or a divergence not of it; 409: already resolved.
 */
export async function resolveDivergence(ctx: Context, reconciliationIdArg: unknown, input: unknown): Promise<ReconciliationDivergence> {
  const operatorId = operatorOf(ctx, 'Reconciliation');
  const reconciliationId = assertId(reconciliationIdArg, 'Reconciliation');
  const parsed = resolveInput.safeParse(input ?? {});
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    throw fieldError(i.path.map(String).join('.') || '(input)', i.message);
  }
  const data = parsed.data;
  const db = ctx.deps.db;
  if (!(await db.reconciliation.findUnique({ where: { id: reconciliationId }, select: { id: true } }))) throw notFound('Reconciliation');
  const found = await db.reconciliationDivergence.findFirst({ where: { id: data.divergenceId, reconciliationId } });
  if (!found) throw notFound('ReconciliationDivergence');
  if (data.resolution === 'CORRECTION') {
    if (!data.lines) throw fieldError('lines', 'are required for a CORRECTION');
    if (!data.lines.some((l) => l.account.assetNetworkId === found.assetNetworkId))
      throw fieldError('lines', `must move the divergence's asset-network ${found.assetNetworkId}`);
  } else {
    if (data.lines) throw fieldError('lines', 'must be omitted for ACCEPT_CHAIN (no ledger change)');
    if (data.organizationId || data.correctsLedgerTransactionId) throw fieldError('organizationId', 'must be omitted for ACCEPT_CHAIN (no ledger change)');
  }
  if (found.status !== 'OPEN') throw invalidState(`divergence ${found.id} is already resolved (${found.resolution})`);

  await db.$transaction(async (tx) => {
    await tx.$queryRaw`SELECT 1 FROM "ReconciliationDivergence" WHERE "id" = ${found.id}::uuid FOR UPDATE`;
    const d = await tx.reconciliationDivergence.findUniqueOrThrow({ where: { id: found.id } });
    if (d.status !== 'OPEN') throw invalidState(`divergence ${d.id} is already resolved (${d.resolution})`);
    const now = ctx.deps.clock.now();
    let ledgerCorrectionId: string | null = null;
    if (data.resolution === 'CORRECTION') {
      // The correction's own code, inside this transaction: its $transaction runs its work on `tx`.
      const inTx = new Proxy(tx, { get: (t, k) => (k === '$transaction' ? (fn: (x: Db) => unknown) => fn(t) : Reflect.get(t, k)) }) as unknown as typeof db;
      const correction = await recordCorrection(
        { ...ctx, deps: { ...ctx.deps, db: inTx } },
        {
          reason: `reconciliation divergence ${d.id}: ${data.reason}`,
          organizationId: data.organizationId ?? null,
          correctsLedgerTransactionId: data.correctsLedgerTransactionId ?? null,
          lines: data.lines,
          idempotencyKey: `reconciliation-divergence:${d.id}`,
        },
        null,
      );
      ledgerCorrectionId = correction.id;
    }
    await tx.reconciliationDivergence.update({
      where: { id: d.id },
      data: {
        status: 'RESOLVED',
        resolution: data.resolution,
        resolutionReason: data.reason,
        resolvedByOperatorId: operatorId,
        ledgerCorrectionId,
        resolvedAt: now,
      },
    });
    await auditAs(tx, ctx.deps, requestActor(ctx), {
      organizationId: null,
      entityType: 'ReconciliationDivergence',
      entityId: d.id,
      action: 'reconciliation.divergence.resolved',
      before: { status: 'OPEN' },
      after: {
        status: 'RESOLVED',
        reconciliationId,
        resolution: data.resolution,
        reason: data.reason,
        ledgerCorrectionId,
        kind: d.kind,
        assetNetworkId: d.assetNetworkId,
      },
    });
  }, TX_OPTIONS);
  return db.reconciliationDivergence.findUniqueOrThrow({ where: { id: found.id } });
}

/**
 * The OPEN divergences of the latest run, for the operator dashboard (src/admin/dashboard.ts): each
 * run finds a persisting difference again, so older runs' OPEN rows are history, not more work.
 */
export async function openDivergences(db: Db): Promise<{ reconciliationId: string; id: string; assetNetworkId: string; kind: string; difference: string }[]> {
  const latest = await db.reconciliation.findFirst({ orderBy: [{ startedAt: 'desc' }, { id: 'desc' }], select: { id: true } });
  if (!latest) return [];
  const rows = await db.reconciliationDivergence.findMany({
    where: { reconciliationId: latest.id, status: 'OPEN' },
    orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
  });
  return rows.map((r) => ({
    reconciliationId: r.reconciliationId,
    id: r.id,
    assetNetworkId: r.assetNetworkId,
    kind: r.kind,
    difference: amountToString(numericToAmount(r.difference)),
  }));
}
