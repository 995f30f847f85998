import { z } from 'zod';
import type { Context } from '../context';
import type { Db } from '../db/prisma';
import type { Prisma } from '../generated/prisma/client';
import { fieldError, invalidState, notFound } from '../errors';
import { assertId, isUuid } from '../ids';
import { assertOrganization } from '../tenancy/access';
import { auditAs } from '../audit/audit';
import { emit } from '../webhooks/outbox';
import { lockTransactionRow, requestActor, TX_OPTIONS } from '../kernel/service';
import { cancelIntentInTx, DEFAULT_CANCEL_REASON, visibleMoneyWhere } from '../deposits/payment-intents';
import { sendReleaseEvaluation, sendRetainedRelease } from '../kernel/queues';

/**
 * Transactions: the money a payment intent collects, held in the transaction's ESCROW ledger
 * account once funded (RESERVED) for conditional release (issue 5 settles or refunds). States:
 * docs/money-in.md. `frozen` is a flag, not a state: a frozen transaction keeps its status and
 * moves no funds. A member freezes and unfreezes; a chain reorganization freezes too, until an
 * operator resolves the deposit in doubt (frozenByDepositId).
 */

export const transactionInclude = {
  participants: { orderBy: { role: 'asc' } },
  paymentIntent: { select: { id: true } },
} as const satisfies Prisma.TransactionInclude;
export type TransactionRow = Prisma.TransactionGetPayload<{ include: typeof transactionInclude }>;

export async function loadTransaction(ctx: Context, idArg: unknown, db: Db = ctx.deps.db): Promise<TransactionRow> {
  const id = assertId(idArg, 'Transaction');
  const visible = visibleMoneyWhere(ctx);
  if (!visible) throw notFound('Transaction');
  const row = await db.transaction.findFirst({ where: { id, ...visible }, include: transactionInclude });
  if (!row) throw notFound('Transaction');
  return row;
}

export const reasonInput = z.string().trim().min(1, 'must not be empty').max(1000);

/** AWAITING_FUNDS (nothing detected) → CANCELLED, with its payment intent. */
export async function cancelTransaction(ctx: Context, idArg: unknown, reason: string | null | undefined) {
  const t = await loadTransaction(ctx, idArg);
  const refused = await ctx.deps.db.$transaction((tx) => cancelIntentInTx(tx, ctx.deps, requestActor(ctx), t.id, reason ?? DEFAULT_CANCEL_REASON), TX_OPTIONS);
  if (refused) throw refused;
  return loadTransaction(ctx, t.id);
}

const OPEN = ['AWAITING_FUNDS', 'FUNDED', 'RESERVED'] as const;

/**
 * A member freezes a transaction (transaction.frozen Reason, ActorMemberId). Only an open one
 * (AWAITING_FUNDS, FUNDED, RESERVED) and not frozen by a member already: 409 otherwise. A
 * transaction held by a reorganization may be frozen by a member too: both holds then apply.
 */
export async function freezeTransaction(ctx: Context, idArg: unknown, reason: string) {
  const t = await loadTransaction(ctx, idArg);
  const p = ctx.principal;
  if (p?.type !== 'member') throw notFound('Transaction');
  await ctx.deps.db.$transaction(async (tx) => {
    await lockTransactionRow(tx, t.id);
    const cur = await tx.transaction.findUniqueOrThrow({ where: { id: t.id } });
    if (!(OPEN as readonly string[]).includes(cur.status)) throw invalidState(`A transaction in status ${cur.status} cannot be frozen.`);
    if (cur.frozenByMemberId) throw invalidState('The transaction is already frozen by a member.');
    await tx.transaction.update({ where: { id: t.id }, data: { frozen: true, frozenByMemberId: p.memberId, frozenReason: reason } });
    await emit(tx, ctx.deps, cur.organizationId, 'transaction.frozen', { TransactionId: t.id, Reason: reason, ActorMemberId: p.memberId });
    await auditAs(tx, ctx.deps, requestActor(ctx), {
      organizationId: cur.organizationId,
      entityType: 'Transaction',
      entityId: t.id,
      action: 'transaction.frozen',
      before: { frozen: cur.frozen },
      after: { frozen: true, reason, frozenByDepositId: cur.frozenByDepositId },
    });
  }, TX_OPTIONS);
  return loadTransaction(ctx, t.id);
}

/**
 * A member lifts its freeze (transaction.unfrozen ActorMemberId). 409 unless frozen by a member.
 * A hold of a deposit in doubt (frozenByDepositId) stays: the transaction remains frozen until an
 * operator resolves the reorganization, and no transaction.unfrozen is sent yet.
 */
export async function unfreezeTransaction(ctx: Context, idArg: unknown) {
  const t = await loadTransaction(ctx, idArg);
  const p = ctx.principal;
  if (p?.type !== 'member') throw notFound('Transaction');
  await ctx.deps.db.$transaction(async (tx) => {
    await lockTransactionRow(tx, t.id);
    const cur = await tx.transaction.findUniqueOrThrow({ where: { id: t.id } });
    if (!cur.frozenByMemberId)
      throw invalidState(
        cur.frozen ? 'The transaction is held by a deposit in doubt (a chain reorganization); an operator resolves it.' : 'The transaction is not frozen.',
      );
    const stillHeld = cur.frozenByDepositId !== null;
    await tx.transaction.update({
      where: { id: t.id },
      data: {
        frozenByMemberId: null,
        frozen: stillHeld,
        frozenReason: stillHeld ? `REORG: deposit ${cur.frozenByDepositId} was orphaned by a chain reorganization` : null,
      },
    });
    if (!stillHeld) await emit(tx, ctx.deps, cur.organizationId, 'transaction.unfrozen', { TransactionId: t.id, ActorMemberId: p.memberId });
    // Release rules wait while frozen (docs/release-rules.md): evaluate once unfrozen.
    if (!stillHeld) {
      await sendReleaseEvaluation(tx, ctx.deps.boss, t.id);
      await sendRetainedRelease(tx, ctx.deps.boss, { transactionId: t.id });
    }
    await auditAs(tx, ctx.deps, requestActor(ctx), {
      organizationId: cur.organizationId,
      entityType: 'Transaction',
      entityId: t.id,
      action: 'transaction.unfrozen',
      before: { frozen: true, reason: cur.frozenReason },
      after: { frozen: stillHeld, frozenByDepositId: cur.frozenByDepositId },
    });
  }, TX_OPTIONS);
  return loadTransaction(ctx, t.id);
}
