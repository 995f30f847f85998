import { numericToAmount } from '../money';
import { z } from 'zod';
import type { Context } from '../context';
import type { Db } from '../db/prisma';
import type { Deposit } from '../generated/prisma/client';
import { DomainError, invalidState, notFound } from '../errors';
import { assertId } from '../ids';
import { adapterFor, networkRef, type ObservedTransfer } from '../chains/adapter';
import { auditAs, type Actor } from '../audit/audit';
import { emit } from '../webhooks/outbox';
import { lockNetwork, lockTransactionRow, requestActor, TX_OPTIONS } from '../kernel/service';
import { evaluateIntent, postDepositReversal, releaseDepositFreeze } from './funding';
import { confirm, scope, type NetworkRow, type SyncScope } from './sync';
import { reasons } from './rules';
import { escrowOf } from '../release/escrow';
import { sendReleaseEvaluation, sendRetainedRelease } from '../kernel/queues';

/**
 * Deposits: reads, and the two operator resolutions (AdminResolveDepositUnderReview,
 * AdminResolveDepositReorg). Both resolutions take the network's sync lock, so they never race a
 * chain sync of the same network, and read the chain through the adapter in that transaction.
 */

/** Loads a deposit the principal may see: a member, its organization's; an API key, its environment's; an operator, any. */
export async function loadDeposit(ctx: Context, idArg: unknown, db: Db = ctx.deps.db): Promise<Deposit> {
  const id = assertId(idArg, 'Deposit');
  const p = ctx.principal;
  const d = await db.deposit.findUnique({ where: { id } });
  if (!d) throw notFound('Deposit');
  if (p?.type === 'operator') return d;
  if ((p?.type !== 'member' && p?.type !== 'apiKey') || p.organizationId !== d.organizationId) throw notFound('Deposit');
  if (p.type === 'apiKey') {
    const visible = d.paymentIntentId
      ? await db.paymentIntent.count({ where: { id: d.paymentIntentId, environmentId: p.environmentId } })
      : await db.depositAddress.count({ where: { id: d.depositAddressId, applicationId: p.applicationId, wallet: { environmentId: p.environmentId } } });
    if (!visible) throw notFound('Deposit');
  }
  return d;
}

export const resolveUnderReviewInput = z.object({
  decision: z.enum(['ACCEPT', 'REJECT']),
  reason: z.string().trim().min(1, 'must not be empty').max(1000),
});
export const resolveReorgInput = z.object({
  outcome: z.enum(['REMINED', 'GONE']),
  reason: z.string().trim().min(1, 'must not be empty').max(1000),
});

/** Opens the resolution of one deposit: the network's sync lock, the deposit re-read, the chain's view of its transaction. */
async function resolution(tx: Db, ctx: Context, depositId: string) {
  const head = await tx.deposit.findUnique({ where: { id: depositId }, select: { networkId: true } });
  if (!head) throw notFound('Deposit');
  await lockNetwork(tx, head.networkId);
  const d = await tx.deposit.findUniqueOrThrow({ where: { id: depositId } });
  const network: NetworkRow = await tx.network.findUniqueOrThrow({ where: { id: d.networkId }, include: { assetNetworks: true } });
  const env: SyncScope['env'] = new Map();
  if (d.paymentIntentId) {
    const i = await tx.paymentIntent.findUniqueOrThrow({ where: { id: d.paymentIntentId }, select: { environmentType: true, transactionId: true } });
    env.set(d.paymentIntentId, i);
  }
  const s = scope(tx, ctx.deps, network, env);
  const observed = await adapterFor(network.kind, tx).transaction(networkRef(network), d.txHash);
  return { d, s, observed, required: network.requiredConfirmations };
}

const describe = (o: ObservedTransfer | null, required: number) =>
  !o ? 'the chain does not know the transaction' : o.status === 'MINED' ? `MINED with ${o.confirmations} of ${required} confirmations` : o.status;

async function nowOf(s: SyncScope, d: Deposit) {
  const e = d.paymentIntentId ? s.env.get(d.paymentIntentId) : undefined;
  return s.now(d.organizationId, e?.environmentType ?? (s.network.environmentType as 'SANDBOX' | 'PRODUCTION'));
}

/**
 * UNDER_REVIEW → ACCEPT: the deposit goes on as if never held (CONFIRMED and credited if deep
 * enough, else DETECTED/CONFIRMING); REJECT: REJECTED, never credited (the funds stay at the
 * address on chain; returning them is later work). Anything but UNDER_REVIEW: 409.
 */
export async function resolveUnderReview(ctx: Context, idArg: unknown, input: z.infer<typeof resolveUnderReviewInput>): Promise<Deposit> {
  const id = assertId(idArg, 'Deposit');
  const actor: Actor = requestActor(ctx);
  await ctx.deps.db.$transaction(async (tx) => {
    const { d, s, observed, required } = await resolution(tx, ctx, id);
    if (d.status !== 'UNDER_REVIEW') throw invalidState(`Only a deposit UNDER_REVIEW can be resolved this way; this one is ${d.status}.`);
    if (d.transactionId) await lockTransactionRow(tx, d.transactionId);
    // A resolution can clear what blocked the transaction's release (docs/release-rules.md): re-evaluate after commit.
    if (d.transactionId) await sendReleaseEvaluation(tx, ctx.deps.boss, d.transactionId);
    const now = await nowOf(s, d);
    if (input.decision === 'REJECT') {
      const reason = `${reasons.reviewRejected}: ${input.reason}`;
      await tx.deposit.update({ where: { id: d.id }, data: { status: 'REJECTED', reason, resolvedAt: now } });
      await emit(tx, ctx.deps, d.organizationId, 'deposit.rejected', { DepositId: d.id, Reason: reason });
      await auditAs(tx, ctx.deps, actor, {
        organizationId: d.organizationId,
        entityType: 'Deposit',
        entityId: d.id,
        action: 'deposit.review_rejected',
        before: { status: d.status, reviewReason: d.reviewReason },
        after: { status: 'REJECTED', reason },
      });
      if (d.paymentIntentId && !d.late) await evaluateIntent(tx, ctx.deps, actor, d.paymentIntentId, now);
      return;
    }
    const o = observed;
    if (!o || o.status === 'DROPPED' || o.status === 'REPLACED' || o.status === 'REVERTED')
      throw invalidState(`The transfer cannot be accepted: ${describe(o, required)} (the next chain sync rejects it).`);
    const confirmations = o.status === 'MINED' ? o.confirmations : 0;
    const block = o.status === 'MINED' ? { blockHash: o.blockHash, blockHeight: o.blockHeight } : { blockHash: null, blockHeight: null };
    await auditAs(tx, ctx.deps, actor, {
      organizationId: d.organizationId,
      entityType: 'Deposit',
      entityId: d.id,
      action: 'deposit.review_accepted',
      before: { status: d.status, reviewReason: d.reviewReason },
      after: { reason: input.reason, confirmations },
    });
    if (confirmations >= required) {
      await tx.deposit.update({ where: { id: d.id }, data: { resolvedAt: now } });
      await confirm(s, { ...d, resolvedAt: now }, { confirmations, ...block }, actor);
      return;
    }
    const status = confirmations > 0 ? 'CONFIRMING' : 'DETECTED';
    await tx.deposit.update({ where: { id: d.id }, data: { status, confirmations, ...block, resolvedAt: now } });
    if (confirmations > 0) await emit(tx, ctx.deps, d.organizationId, 'deposit.confirming', { DepositId: d.id, ConfirmationCount: confirmations });
    if (d.paymentIntentId && !d.late) await evaluateIntent(tx, ctx.deps, actor, d.paymentIntentId, now);
  }, TX_OPTIONS);
  return loadDeposit(ctx, id);
}

/**
 * REORG_FROZEN → REMINED: only when the chain shows the transaction mined at the required depth
 * again: CONFIRMED again, deposit.confirmed again, no second credit. GONE: only when the chain
 * shows it can never be mined (dropped, replaced, reverted, or unknown to the node): REVERSED,
 * the credit reversed (DEBIT ESCROW or SUSPENSE, CREDIT CHAIN_CLEARING), the transaction's funding
 * re-evaluated; deposit.rejected with Reason "REVERSED: …". A transaction still in the mempool
 * (PENDING, ORPHANED) or mined too shallow: 409 for both, wait. Either way the deposit's hold on
 * its transaction is released (transaction.unfrozen when nothing else holds it).
 */
export async function resolveReorg(ctx: Context, idArg: unknown, input: z.infer<typeof resolveReorgInput>): Promise<Deposit> {
  const id = assertId(idArg, 'Deposit');
  const actor: Actor = requestActor(ctx);
  await ctx.deps.db.$transaction(async (tx) => {
    const { d, s, observed: o, required } = await resolution(tx, ctx, id);
    if (d.status !== 'REORG_FROZEN') throw invalidState(`Only a deposit REORG_FROZEN can be resolved this way; this one is ${d.status}.`);
    if (d.transactionId) await lockTransactionRow(tx, d.transactionId);
    // A resolution can clear what blocked the transaction's release (docs/release-rules.md): re-evaluate after commit.
    if (d.transactionId) {
      await sendReleaseEvaluation(tx, ctx.deps.boss, d.transactionId);
      await sendRetainedRelease(tx, ctx.deps.boss, { transactionId: d.transactionId });
    }
    const now = await nowOf(s, d);
    if (input.outcome === 'REMINED') {
      if (!o || o.status !== 'MINED' || o.confirmations < required)
        throw new DomainError('INVALID_STATE', `The chain does not show the transaction mined at depth: ${describe(o, required)}.`);
      await tx.deposit.update({
        where: { id: d.id },
        data: { status: 'CONFIRMED', confirmations: o.confirmations, blockHash: o.blockHash, blockHeight: o.blockHeight, resolvedAt: now },
      });
      if (d.paymentIntentId)
        await emit(tx, ctx.deps, d.organizationId, 'deposit.confirmed', {
          DepositId: d.id,
          PaymentIntentId: d.paymentIntentId,
          TransactionId: d.transactionId!,
          Amount: numericToAmount(d.amount),
        });
      await auditAs(tx, ctx.deps, actor, {
        organizationId: d.organizationId,
        entityType: 'Deposit',
        entityId: d.id,
        action: 'deposit.reorg_resolved',
        before: { status: d.status },
        after: { status: 'CONFIRMED', outcome: 'REMINED', reason: input.reason, blockHash: o.blockHash },
      });
    } else {
      if (o && o.status !== 'DROPPED' && o.status !== 'REPLACED' && o.status !== 'REVERTED')
        throw new DomainError('INVALID_STATE', `The chain may still mine the transaction (${describe(o, required)}): it is not gone.`);
      if (d.creditedTo === 'ESCROW' && d.transactionId) {
        // The reversal debits the escrow; what settlements or refunds already took out of it cannot come back this way.
        const t = await tx.transaction.findUniqueOrThrow({ where: { id: d.transactionId } });
        const escrow = escrowOf(t);
        if (escrow < numericToAmount(d.amount))
          throw new DomainError(
            'INVALID_STATE',
            `The transaction's escrow holds ${escrow} of this deposit's ${numericToAmount(d.amount)} base units: the rest was settled or refunded, so the loss cannot be reversed through the escrow (docs/settlements.md).`,
          );
      }
      const reason = `REVERSED: ${input.reason}`;
      await tx.deposit.update({ where: { id: d.id }, data: { status: 'REVERSED', reason, resolvedAt: now } });
      await postDepositReversal(tx, ctx.deps, d);
      await emit(tx, ctx.deps, d.organizationId, 'deposit.rejected', { DepositId: d.id, Reason: reason });
      await auditAs(tx, ctx.deps, actor, {
        organizationId: d.organizationId,
        entityType: 'Deposit',
        entityId: d.id,
        action: 'deposit.reversed',
        before: { status: d.status, creditedTo: d.creditedTo },
        after: { status: 'REVERSED', outcome: 'GONE', reason: input.reason, chain: describe(o, required) },
      });
    }
    if (d.transactionId) await releaseDepositFreeze(tx, ctx.deps, actor, d.transactionId, d.id);
    if (d.paymentIntentId && !d.late) await evaluateIntent(tx, ctx.deps, actor, d.paymentIntentId, now);
  }, TX_OPTIONS);
  return loadDeposit(ctx, id);
}
