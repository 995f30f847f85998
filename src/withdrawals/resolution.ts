import { z } from 'zod';
import type { Context } from '../context';
import type { Db } from '../db/prisma';
import type { Withdrawal } from '../generated/prisma/client';
import { invalidState, notFound, parseInput } from '../errors';
import { amountToString, numericToAmount } from '../money';
import {
  adapterFor,
  MAX_REPLACEMENT_LINKS,
  networkRef,
  replacementChain,
  type NetworkAdapter,
  type NetworkRef,
  type ObservedTransfer,
} from '../chains/adapter';
import { auditAs } from '../audit/audit';
import { requestActor, TX_OPTIONS } from '../kernel/service';
import { releaseReserveInTx } from '../treasury/costs/reserve';
import { close, confirm, loadWithdrawal, lockWithdrawal } from './withdrawals';

/**
 * AdminResolveWithdrawalReconciliation (docs/withdrawals.md, "Resolving REQUIRES_RECONCILIATION"):
 * an operator closes a withdrawal whose outcome on the chain was unknown (dropped, replaced, unknown
 * to the chain, stuck). The operator's decision is checked against the chain through the network
 * adapter, never taken on trust:
 *
 * - CONFIRMED: the named transaction (default: the withdrawal's own) is the withdrawal's transaction
 *   or a replacement of it (reached through the adapter's replacedByTxHash links), MINED with the
 *   network's required confirmations, from the withdrawal's fromAddress to its toAddress, of its
 *   asset-network and for exactly its amount. Then: hold posted (withdrawal:<id>:post), CONFIRMED,
 *   txHash = the mined hash, withdrawal.confirmed {TechnicalReference: the mined hash}.
 * - FAILED: neither the transaction nor any replacement in its chain is MINED, PENDING or ORPHANED
 *   (the value has not left and cannot leave). Then close(FAILED): hold voided, withdrawal.failed.
 *
 * Either way one database transaction under the withdrawal row lock, with an audit entry
 * `withdrawal.reconciliation_resolved` (operator, reason, outcome, original and final hash).
 */

export const resolveReconciliationInput = z
  .object({
    outcome: z.enum(['CONFIRMED', 'FAILED'], { message: 'must be CONFIRMED or FAILED' }),
    reason: z.string().trim().min(1, 'must not be empty').max(1000, 'must be at most 1000 characters'),
    txHash: z
      .string()
      .trim()
      .min(1, 'must not be empty')
      .max(200, 'must be at most 200 characters')
      .regex(/^\S+$/, 'must be a transaction hash (no spaces)')
      .nullish(),
  })
  .strict()
  .superRefine((v, c) => {
    if (v.outcome === 'FAILED' && v.txHash != null)
      c.addIssue({ code: 'custom', path: ['txHash'], message: 'names the mined transaction: only with outcome CONFIRMED' });
  });
export type ResolveReconciliationInput = z.infer<typeof resolveReconciliationInput>;

/** The withdrawal's transaction and its replacements, in order, as the chain reports them now (null: unknown to the chain). */
async function replacementsOf(adapter: NetworkAdapter, ref: NetworkRef, first: string): Promise<{ txHash: string; seen: ObservedTransfer | null }[]> {
  const { links, truncated } = await replacementChain(adapter, ref, first);
  if (truncated) throw invalidState(`The transaction ${first} has more than ${MAX_REPLACEMENT_LINKS} replacements: resolve it by hand (a ledger correction).`);
  return links;
}

const figures = (t: ObservedTransfer) =>
  `${amountToString(t.amount)} of asset-network ${t.assetNetworkId} from ${t.fromAddress} to ${t.toAddress} (${t.status}, ${t.confirmations} confirmation${t.confirmations === 1 ? '' : 's'})`;

/** The checks of a CONFIRMED resolution; answers the mined transaction. */
async function checkConfirmed(tx: Db, w: Withdrawal, adapter: NetworkAdapter, ref: NetworkRef, named: string | null | undefined): Promise<ObservedTransfer> {
  const original = w.txHash!;
  const hash = named ?? original;
  const chain = await replacementsOf(adapter, ref, original);
  const link = chain.find((l) => l.txHash === hash);
  if (!link)
    throw invalidState(
      `The transaction ${hash} is neither the withdrawal's transaction ${original} nor a replacement of it the chain reports (replacements: ${
        chain
          .slice(1)
          .map((l) => l.txHash)
          .join(', ') || 'none'
      }).`,
    );
  const seen = link.seen;
  if (!seen) throw invalidState(`The transaction ${hash} is unknown to the chain: nothing was mined.`);
  if (seen.status !== 'MINED') {
    const next = seen.status === 'REPLACED' && seen.replacedByTxHash ? `; it was replaced by ${seen.replacedByTxHash}: name that one (txHash)` : '';
    throw invalidState(`The transaction ${hash} is ${seen.status} on the chain, not MINED${next}.`);
  }
  if (seen.confirmations < ref.requiredConfirmations)
    throw invalidState(
      `The transaction ${hash} has ${seen.confirmations} of the ${ref.requiredConfirmations} confirmations the network requires: wait and resolve again.`,
    );
  const amount = numericToAmount(w.amount);
  if (seen.fromAddress !== w.fromAddress || seen.toAddress !== w.toAddress || seen.assetNetworkId !== w.assetNetworkId || seen.amount !== amount)
    throw invalidState(
      `The chain's transaction ${hash} moves ${figures(seen)}; the withdrawal is ${amountToString(amount)} of asset-network ${w.assetNetworkId} from ${w.fromAddress} to ${w.toAddress}: it does not settle this withdrawal.`,
    );
  if (hash !== original) {
    const other = await tx.withdrawal.findUnique({ where: { txHash: hash }, select: { id: true } });
    if (other && other.id !== w.id) throw invalidState(`The transaction ${hash} is the transaction of withdrawal ${other.id}.`);
  }
  return seen;
}

/** The checks of a FAILED resolution: nothing in the chain of replacements moved or may still move the value. Answers the chain. */
async function checkFailed(w: Withdrawal, adapter: NetworkAdapter, ref: NetworkRef): Promise<{ txHash: string; seen: ObservedTransfer | null }[]> {
  const chain = await replacementsOf(adapter, ref, w.txHash!);
  for (const { txHash, seen } of chain) {
    if (seen?.status === 'MINED')
      throw invalidState(
        `The transaction ${txHash} was MINED (${figures(seen)}): the value left; resolve CONFIRMED${txHash !== w.txHash ? ` with txHash ${txHash}` : ''}.`,
      );
    if (seen?.status === 'PENDING' || seen?.status === 'ORPHANED')
      throw invalidState(`The transaction ${txHash} is still pending on the chain (${seen.status}): drop it or wait.`);
  }
  return chain;
}

/**
 * Resolves a REQUIRES_RECONCILIATION withdrawal (operators): 409 in any other state, or when the
 * chain contradicts the outcome; 400 for a bad body (nothing changed); 404 unknown.
 */
export async function resolveWithdrawalReconciliation(ctx: Context, idArg: unknown, input: unknown): Promise<Withdrawal> {
  const data = parseInput(resolveReconciliationInput, input);
  const w0 = await loadWithdrawal(ctx, idArg);
  const p = ctx.principal;
  if (p?.type !== 'operator') throw notFound('Withdrawal');
  await ctx.deps.db.$transaction(async (tx) => {
    const w = (await lockWithdrawal(tx, w0.id))!;
    if (w.status !== 'REQUIRES_RECONCILIATION') throw invalidState(`Only a REQUIRES_RECONCILIATION withdrawal can be resolved; this one is ${w.status}.`);
    if (!w.txHash || !w.fromAddress) throw invalidState('The withdrawal has no broadcast transaction to check on the chain.');
    const network = await tx.network.findUniqueOrThrow({ where: { id: w.networkId } });
    const ref = networkRef(network);
    const adapter = adapterFor(network.kind, tx);
    const now = ctx.deps.clock.now();
    const actor = requestActor(ctx);
    const resolution = {
      outcome: data.outcome,
      reason: data.reason,
      operatorId: p.operatorId,
      originalTxHash: w.txHash,
      previousFailureReason: w.failureReason,
    };

    if (data.outcome === 'CONFIRMED') {
      const mined = await checkConfirmed(tx, w, adapter, ref, data.txHash);
      await confirm(tx, ctx.deps, w, mined.txHash, now);
      await auditAs(tx, ctx.deps, actor, {
        organizationId: w.organizationId,
        entityType: 'Withdrawal',
        entityId: w.id,
        action: 'withdrawal.reconciliation_resolved',
        before: { status: w.status, txHash: w.txHash, failureReason: w.failureReason },
        after: { status: 'CONFIRMED', ...resolution, txHash: mined.txHash, confirmations: mined.confirmations, blockHash: mined.blockHash },
      });
      return;
    }

    const chain = await checkFailed(w, adapter, ref);
    await close(tx, ctx.deps, actor, w, { status: 'FAILED', reason: `RECONCILED_FAILED: ${data.reason}` }, now);
    // Nothing was mined: no network fee was paid, so the reserve gets back what the broadcast attempt that reached the
    // chain consumed (reference Withdrawal/<id>:<attempt>, as broadcastWithdrawal writes it; once; nothing when unmetered
    // or SelfCustody). A REVERTED link was mined and paid its gas: the consumption stays.
    const gasPaid = chain.some((l) => l.seen?.status === 'REVERTED');
    const reserveRef = { networkId: w.networkId, referenceType: 'Withdrawal', referenceId: `${w.id}:${w.broadcastAttempts}` };
    const released = gasPaid || w.custodyMode !== 'CUSTODIAL' ? 0n : (await releaseReserveInTx(tx, ctx.deps, reserveRef)).released;
    await auditAs(tx, ctx.deps, actor, {
      organizationId: w.organizationId,
      entityType: 'Withdrawal',
      entityId: w.id,
      action: 'withdrawal.reconciliation_resolved',
      before: { status: w.status, txHash: w.txHash, failureReason: w.failureReason },
      after: {
        status: 'FAILED',
        ...resolution,
        txHash: w.txHash,
        reserveReleased: amountToString(released),
        chain: chain.map((l) => ({ txHash: l.txHash, status: l.seen?.status ?? 'UNKNOWN' })),
      },
    });
  }, TX_OPTIONS);
  return loadWithdrawal(ctx, w0.id);
}
