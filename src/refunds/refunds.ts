import { z } from 'zod';
import { statusAllows } from '../catalog/catalog';
import type { Context } from '../context';
import type { Db } from '../db/prisma';
import type { DepositAddress, EnvironmentType, Network, Prisma, Refund } from '../generated/prisma/client';
import { fieldError, invalidState, notFound } from '../errors';
import { assertId, isUuid, uuidv7 } from '../ids';
import { idempotent } from '../idempotency';
import { LedgerError, postLedgerTransaction, type LedgerAccountRef, type PostingLine } from '../ledger/ledger';
import { amountToNumeric, amountToString, numericToAmount, type Amount, positiveAmountText } from '../money';
import { adapterFor, hasAdapter, networkRef } from '../chains/adapter';
import { derivePrivateKey } from '../chains/secp256k1';
import { custodialRootKey } from '../custody/wallets';
import { sendFromTreasury } from '../treasury/payouts';
import { auditAs } from '../audit/audit';
import { emit } from '../webhooks/outbox';
import { lockTransactionRow, requestActor, systemActor, TX_OPTIONS, type MoneyDeps } from '../kernel/service';
import { nowFor } from '../chains/sandbox/clock';
import { ledgerAccounts } from '../ledger/ledger';
import { visibleMoneyWhere } from '../deposits/payment-intents';
import { loadTransaction } from '../transactions/transactions';
import { BLOCKER_MESSAGES, escrowOf, recordEscrowOutcome, releaseBlocker } from '../release/escrow';
import { computeFee, refundFeePolicyInForce } from '../settlements/policies/policies';
import { sendRefundExecution } from '../kernel/queues';

/**
 * Refunds (docs/refunds.md): money of a funded transaction goes back to the payer's origin on the
 * chain, less the refund fee of the RefundFeePolicy in force.
 *
 * Lifecycle: PENDING (requested) -> EXECUTED or REJECTED (with a reason) by the refund.execute job,
 * once: the business rules are decided at execution, under the Transaction row lock, so a refused
 * refund is told with refund.rejected {Reason} like any other outcome.
 *
 * Executed: ONE ledger transaction (key refund:<id>): DEBIT ESCROW what comes from the escrow;
 * DEBIT RETAINED(allocation) / CUSTOMER(account) what is taken back from settled allocations (only
 * when the policy allows a reversal after settlement); CREDIT CHAIN_CLEARING the net (it leaves on
 * the chain); CREDIT PLATFORM_REVENUE the fee. In the same database transaction: the transfer is
 * signed with the deposit address's key (a HOT treasury address's when the deposit address can no
 * longer pay, its funds swept) and broadcast (the sandbox adapter writes its mempool in
 * this transaction), the totals move (recordEscrowOutcome), refund.executed and transaction.refunded
 * are emitted and audited.
 */

export type RejectionCode =
  | 'TRANSACTION_NOT_FUNDED'
  | 'TRANSACTION_FROZEN'
  | 'DEPOSIT_UNDER_REVIEW'
  | 'NOTHING_TO_REFUND'
  | 'AMOUNT_EXCEEDS_REFUNDABLE'
  | 'FEE_EXCEEDS_AMOUNT'
  | 'BENEFICIARY_BALANCE_INSUFFICIENT'
  | 'BENEFICIARY_ACCOUNT_UNAVAILABLE'
  | 'PAYER_ORIGIN_UNKNOWN'
  | 'SELF_CUSTODY_SIGNING_REQUIRED'
  | 'ASSET_NETWORK_UNAVAILABLE'
  | 'BROADCAST_REFUSED'
  | 'CONTROLLED_BALANCE_INSUFFICIENT';

export const REJECTION_MESSAGES: Record<RejectionCode, string> = {
  TRANSACTION_NOT_FUNDED: 'The transaction holds no funds (it is not RESERVED, SETTLED or REFUNDED).',
  TRANSACTION_FROZEN: BLOCKER_MESSAGES.TRANSACTION_FROZEN,
  DEPOSIT_UNDER_REVIEW: BLOCKER_MESSAGES.DEPOSIT_UNDER_REVIEW,
  NOTHING_TO_REFUND: 'The escrow holds nothing to refund.',
  AMOUNT_EXCEEDS_REFUNDABLE: 'The amount exceeds what is refundable.',
  FEE_EXCEEDS_AMOUNT: 'The refund fee is not less than the amount: the payer would receive nothing.',
  BENEFICIARY_BALANCE_INSUFFICIENT: "A beneficiary's available balance cannot cover the reversal of its settled portion.",
  BENEFICIARY_ACCOUNT_UNAVAILABLE: "A beneficiary's account is frozen or closed: its settled portion cannot be taken back.",
  PAYER_ORIGIN_UNKNOWN: "The payer's origin address is unknown.",
  SELF_CUSTODY_SIGNING_REQUIRED:
    'The deposit address belongs to a SELF_CUSTODY wallet: the refund must be signed by the integrator (signing requests are not built yet).',
  ASSET_NETWORK_UNAVAILABLE: 'The asset-network is not ENABLED (paused or disabled by the platform): nothing is sent on it.',
  BROADCAST_REFUSED: 'The network refused the refund transfer.',
  CONTROLLED_BALANCE_INSUFFICIENT:
    'No address the platform controls for the organization on this asset-network can send the amount (the ' +
    "transaction's deposit address, the organization's other deposit addresses, the HOT treasury).",
};

// ------------------------------------------------------------------------------------------------
// Reads

export async function loadRefund(ctx: Context, idArg: unknown, db: Db = ctx.deps.db): Promise<Refund> {
  const id = assertId(idArg, 'Refund');
  const visible = visibleMoneyWhere(ctx);
  if (!visible) throw notFound('Refund');
  const row = await db.refund.findFirst({ where: { id, ...visible } });
  if (!row) throw notFound('Refund');
  return row;
}

// ------------------------------------------------------------------------------------------------
// The payer's origin

/**
 * The addresses the transaction's credited deposits came from, as the network's adapter reports
 * them (deduplicated, in deposit order); null when they cannot be determined (no credited deposit,
 * no adapter for the network, or a deposit the chain does not know).
 */
export async function payerOrigins(db: Db, transactionId: string): Promise<string[] | null> {
  const deposits = await db.deposit.findMany({
    where: { transactionId, creditedTo: 'ESCROW', status: 'CONFIRMED' },
    select: { txHash: true, networkId: true },
    orderBy: { id: 'asc' },
  });
  if (!deposits.length) return null;
  const network = await db.network.findUniqueOrThrow({ where: { id: deposits[0]!.networkId } });
  if (!hasAdapter(network.kind)) return null;
  const adapter = adapterFor(network.kind, db);
  const origins: string[] = [];
  for (const d of deposits) {
    const seen = await adapter.transaction(networkRef(network), d.txHash);
    if (!seen) return null;
    if (!origins.includes(seen.fromAddress)) origins.push(seen.fromAddress);
  }
  return origins;
}

// ------------------------------------------------------------------------------------------------
// Request

export const requestRefundInput = z
  .object({
    amount: positiveAmountText.nullish(),
    reason: z.string().trim().min(1, 'must not be empty').max(1000).nullish(),
    toAddress: z.string().trim().min(1, 'must not be empty').max(200).nullish(),
  })
  .strict();
export type RequestRefundInput = z.infer<typeof requestRefundInput>;

const REFUNDABLE_STATUSES = ['RESERVED', 'SETTLED', 'REFUNDED'] as const;

/**
 * Requests a refund (members with payment-manage, API keys of the transaction's environment):
 * 400 on a bad amount or a toAddress that is not the payer's origin; 409 when the transaction was
 * never funded or the payer's origin cannot be determined. Creates the PENDING refund, its audit
 * entry and its execution job in one transaction. amount: what leaves the transaction (fee
 * included); none: everything in its escrow when it executes. With an Idempotency-Key the same
 * request answers the same refund.
 */
export async function requestRefund(
  ctx: Context,
  transactionIdArg: unknown,
  input: RequestRefundInput | null | undefined,
  idempotencyKey: string | null | undefined,
): Promise<Refund> {
  const parsed = requestRefundInput.safeParse(input ?? {});
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    throw fieldError(i.path.map(String).join('.') || '(input)', i.message, i.code);
  }
  const { amount, reason, toAddress } = parsed.data;
  const t0 = await loadTransaction(ctx, transactionIdArg);
  const p = ctx.principal;
  const who = p?.type === 'apiKey' ? `app:${p.applicationId}` : p?.type === 'member' ? `member:${p.memberId}` : 'other';
  const request = { transactionId: t0.id, amount: amount ?? null, reason: reason ?? null, toAddress: toAddress ?? null };
  const created = await ctx.deps.db.$transaction(
    (tx) =>
      // Every check inside: a replayed Idempotency-Key answers the stored refund whatever happened since.
      idempotent(tx, ctx, { scope: `requestRefund:${t0.id}:${who}`, key: idempotencyKey, request }, async () => {
        await lockTransactionRow(tx, t0.id);
        const t = await tx.transaction.findUniqueOrThrow({ where: { id: t0.id } });
        if (!(REFUNDABLE_STATUSES as readonly string[]).includes(t.status))
          throw invalidState(`A transaction in status ${t.status} was never funded: there is nothing to refund.`);
        const origins = await payerOrigins(tx, t.id);
        if (!origins || !origins.length) throw invalidState("The payer's origin on the chain cannot be determined: the refund has nowhere to go.");
        let destination: string;
        if (toAddress != null) {
          const match = origins.find((o) => o.toLowerCase() === toAddress.toLowerCase());
          if (!match) throw fieldError('toAddress', `must be an address the transaction's deposits came from: ${origins.join(', ')}`);
          destination = match;
        } else if (origins.length > 1) {
          throw fieldError('toAddress', `the deposits came from several addresses: name one of ${origins.join(', ')}`);
        } else destination = origins[0]!;
        const now = ctx.deps.clock.now();
        // Real time in the id (not the injectable clock): refunds list in request order even when the clock stands still.
        const id = uuidv7();
        await tx.refund.create({
          data: {
            id,
            organizationId: t.organizationId,
            applicationId: t.applicationId,
            environmentId: t.environmentId,
            environmentType: t.environmentType,
            transactionId: t.id,
            assetNetworkId: t.assetNetworkId,
            requestedAmount: amount ?? null,
            reason: reason ?? null,
            toAddress: destination,
            createdAt: now,
            updatedAt: now,
          },
        });
        await auditAs(tx, ctx.deps, requestActor(ctx), {
          organizationId: t.organizationId,
          entityType: 'Refund',
          entityId: id,
          action: 'refund.requested',
          after: { status: 'PENDING', transactionId: t.id, requestedAmount: amount ?? null, reason: reason ?? null, toAddress: destination },
        });
        await sendRefundExecution(tx, ctx.deps.boss, id);
        return { id };
      }),
    TX_OPTIONS,
  );
  return loadRefund(ctx, created.id);
}

// ------------------------------------------------------------------------------------------------
// Execution (the refund.execute job)

export type RefundOutcome = { status: 'EXECUTED'; isTotal: boolean } | { status: 'REJECTED'; reason: RejectionCode } | { status: 'SKIPPED' };

/** A refusal found after writes began: the transaction is rolled back and the rejection recorded in a new one. */
class Rejection extends Error {
  constructor(
    readonly code: RejectionCode,
    readonly detail: string,
  ) {
    super(`${code}: ${detail}`);
  }
}

type AllocationRow = Prisma.SettlementAllocationGetPayload<{ include: { settlement: { select: { id: true; executedAt: true; createdAt: true } } } }>;

/**
 * What is taken back from settled allocations to cover `needed`: RETAINED allocations first (not
 * paid out yet), then RELEASED ones; newest settlement first; each up to amount - reversedAmount.
 */
export function reversalPlan(allocations: readonly AllocationRow[], needed: Amount): { allocation: AllocationRow; amount: Amount }[] {
  const order = [...allocations].sort((a, b) => {
    if (a.status !== b.status) return a.status === 'RETAINED' ? -1 : 1;
    const ta = a.settlement.executedAt?.getTime() ?? 0;
    const tb = b.settlement.executedAt?.getTime() ?? 0;
    if (ta !== tb) return tb - ta;
    const ca = a.settlement.createdAt.getTime();
    const cb = b.settlement.createdAt.getTime();
    if (ca !== cb) return cb - ca;
    if (a.settlementId !== b.settlementId) return a.settlementId < b.settlementId ? 1 : -1;
    return a.id < b.id ? -1 : 1;
  });
  const parts: { allocation: AllocationRow; amount: Amount }[] = [];
  let left = needed;
  for (const a of order) {
    if (left === 0n) break;
    const holds = numericToAmount(a.amount) - numericToAmount(a.reversedAmount);
    if (holds <= 0n) continue;
    const take = holds < left ? holds : left;
    parts.push({ allocation: a, amount: take });
    left -= take;
  }
  if (left !== 0n) throw new Error('reversalPlan: the allocations do not hold the amount needed');
  return parts;
}

/** Adds the lines of one account together (two allocations of one account are one debit). */
function mergeLines(lines: PostingLine[]): PostingLine[] {
  const out = new Map<string, PostingLine>();
  for (const l of lines) {
    const key = `${l.direction} ${l.account.kind} ${l.account.ownerId ?? '-'} ${l.account.assetNetworkId}`;
    const prev = out.get(key);
    out.set(key, prev ? { ...prev, amount: prev.amount + l.amount } : l);
  }
  return [...out.values()];
}

/**
 * Executes a PENDING refund (the refund.execute job): nothing unless PENDING (a retried job, or a
 * refund already decided, is SKIPPED). Either EXECUTED (the ledger moved, the transfer was
 * broadcast) or REJECTED with a reason (nothing moved); an unexpected error throws and the job is
 * retried.
 */
export async function executeRefund(deps: MoneyDeps, refundId: string): Promise<RefundOutcome> {
  if (!isUuid(refundId)) return { status: 'SKIPPED' };
  try {
    return await deps.db.$transaction((tx) => decideAndExecute(tx, deps, refundId), TX_OPTIONS);
  } catch (e) {
    if (!(e instanceof Rejection)) throw e;
    // The writes made before the refusal are rolled back: record the rejection on its own.
    return deps.db.$transaction(async (tx) => {
      const head = await tx.refund.findUnique({ where: { id: refundId }, select: { transactionId: true } });
      if (!head) return { status: 'SKIPPED' as const };
      await lockTransactionRow(tx, head.transactionId);
      const r = await tx.refund.findUniqueOrThrow({ where: { id: refundId } });
      if (r.status !== 'PENDING') return { status: 'SKIPPED' as const };
      const t = await tx.transaction.findUniqueOrThrow({ where: { id: r.transactionId } });
      const now = await nowFor(tx, deps.clock, t.organizationId, t.environmentType);
      return reject(tx, deps, r, e.code, e.detail, now);
    }, TX_OPTIONS);
  }
}

async function decideAndExecute(tx: Db, deps: MoneyDeps, refundId: string): Promise<RefundOutcome> {
  const head = await tx.refund.findUnique({ where: { id: refundId }, select: { transactionId: true, status: true } });
  if (!head || head.status !== 'PENDING') return { status: 'SKIPPED' };
  await lockTransactionRow(tx, head.transactionId);
  const r = await tx.refund.findUniqueOrThrow({ where: { id: refundId } });
  if (r.status !== 'PENDING') return { status: 'SKIPPED' };
  const t = await tx.transaction.findUniqueOrThrow({ where: { id: r.transactionId } });
  const now = await nowFor(tx, deps.clock, t.organizationId, t.environmentType);
  const refuse = (code: RejectionCode, detail?: string) => reject(tx, deps, r, code, detail ?? REJECTION_MESSAGES[code], now);

  // 1. May funds leave the transaction now? (A SETTLED or REFUNDED transaction holds nothing in
  //    escrow but may still be refunded from settled allocations: only the freeze and review checks
  //    of releaseBlocker apply to it.)
  if (!(REFUNDABLE_STATUSES as readonly string[]).includes(t.status)) return refuse('TRANSACTION_NOT_FUNDED');
  const blocker = await releaseBlocker(tx, { id: t.id, frozen: t.frozen, status: 'RESERVED' });
  if (blocker === 'TRANSACTION_FROZEN' || blocker === 'DEPOSIT_UNDER_REVIEW') return refuse(blocker);

  // 2. The amount, against the escrow and what settlements still hold.
  const escrow = escrowOf(t);
  const amount = r.requestedAmount === null ? escrow : numericToAmount(r.requestedAmount);
  if (amount === 0n) return refuse('NOTHING_TO_REFUND');
  const policy = await refundFeePolicyInForce(tx, {
    organizationId: t.organizationId,
    applicationId: t.applicationId,
    assetNetworkId: t.assetNetworkId,
    at: now,
  });
  let allocations: AllocationRow[] = [];
  if (amount > escrow) {
    if (!policy?.allowReversalAfterSettlement)
      return refuse(
        'AMOUNT_EXCEEDS_REFUNDABLE',
        `The amount (${amount}) exceeds what the escrow holds (${escrow}), and the refund fee policy in force does not allow a reversal after settlement.`,
      );
    allocations = await tx.settlementAllocation.findMany({
      where: { transactionId: t.id, settlement: { status: 'EXECUTED' } },
      include: { settlement: { select: { id: true, executedAt: true, createdAt: true } } },
    });
    const held = allocations.reduce((sum, a) => sum + numericToAmount(a.amount) - numericToAmount(a.reversedAmount), 0n);
    if (amount > escrow + held)
      return refuse('AMOUNT_EXCEEDS_REFUNDABLE', `The amount (${amount}) exceeds what is refundable: ${escrow} in escrow and ${held} in settled portions.`);
  }

  // 3. The fee.
  const { fee } = computeFee(amount, policy);
  if (fee >= amount) return refuse('FEE_EXCEEDS_AMOUNT', `The refund fee (${fee}) of refund fee policy ${policy!.id} is not less than the amount (${amount}).`);
  const net = amount - fee;

  // 4. Where the transfer leaves from (the deposit address), and whether the service can sign it.
  if (!r.toAddress) return refuse('PAYER_ORIGIN_UNKNOWN');
  const intent = await tx.paymentIntent.findUnique({ where: { transactionId: t.id }, select: { depositAddressId: true } });
  const depositAddressId =
    intent?.depositAddressId ??
    (await tx.deposit.findFirst({ where: { transactionId: t.id, creditedTo: 'ESCROW' }, select: { depositAddressId: true } }))?.depositAddressId;
  if (!depositAddressId) return refuse('PAYER_ORIGIN_UNKNOWN', 'The transaction has no deposit address to send the refund from.');
  const address = await tx.depositAddress.findUniqueOrThrow({
    where: { id: depositAddressId },
    include: { wallet: { select: { id: true, custodyMode: true } } },
  });
  if (address.wallet.custodyMode === 'SELF_CUSTODY') return refuse('SELF_CUSTODY_SIGNING_REQUIRED');
  // A transfer on the chain, as a withdrawal's: only on an ENABLED asset-network (re-checked here, at execution).
  const assetNetwork = await tx.assetNetwork.findUniqueOrThrow({ where: { id: t.assetNetworkId }, select: { status: true } });
  if (!statusAllows.withdrawals(assetNetwork.status))
    return refuse('ASSET_NETWORK_UNAVAILABLE', `The asset-network is ${assetNetwork.status}: nothing is sent on it until it is enabled.`);
  const network = await tx.network.findUniqueOrThrow({ where: { id: address.networkId } });
  if (!hasAdapter(network.kind)) return refuse('BROADCAST_REFUSED', `No adapter for ${network.kind} networks in this version.`);
  if (!deps.sealingKey) throw new Error('executing a refund signs on the chain: the job needs the sealing key (deps.sealingKey)');

  // 5. From here on a refusal rolls back what was written (see executeRefund).
  const fromEscrow = amount < escrow ? amount : escrow;
  const parts = fromEscrow < amount ? reversalPlan(allocations, amount - fromEscrow) : [];
  const reversed = parts.reduce((s, p) => s + p.amount, 0n);
  for (const p of parts)
    await tx.settlementAllocation.update({
      where: { id: p.allocation.id },
      data: { reversedAmount: amountToNumeric(numericToAmount(p.allocation.reversedAmount) + p.amount), updatedAt: deps.clock.now() },
    });
  const revenue: LedgerAccountRef = { kind: 'PLATFORM_REVENUE', ownerId: null, organizationId: null, assetNetworkId: t.assetNetworkId };
  const lines: PostingLine[] = [];
  if (fromEscrow > 0n) lines.push({ account: ledgerAccounts.escrow(t), direction: 'DEBIT', amount: fromEscrow });
  for (const p of parts)
    lines.push({
      account:
        p.allocation.status === 'RETAINED'
          ? { kind: 'RETAINED', ownerId: p.allocation.id, organizationId: t.organizationId, assetNetworkId: t.assetNetworkId }
          : { kind: 'CUSTOMER', ownerId: p.allocation.accountId, organizationId: t.organizationId, assetNetworkId: t.assetNetworkId },
      direction: 'DEBIT',
      amount: p.amount,
    });
  lines.push({ account: ledgerAccounts.clearing(t.assetNetworkId), direction: 'CREDIT', amount: net });
  if (fee > 0n) lines.push({ account: revenue, direction: 'CREDIT', amount: fee });
  let ledgerTransactionId: string;
  try {
    ({ ledgerTransactionId } = await postLedgerTransaction(tx, {
      idempotencyKey: `refund:${r.id}`,
      nature: 'refund.executed',
      organizationId: t.organizationId,
      referenceType: 'Refund',
      referenceId: r.id,
      metadata: {
        transactionId: t.id,
        toAddress: r.toAddress,
        fromEscrow: amountToString(fromEscrow),
        reversed: amountToString(reversed),
        fee: amountToString(fee),
      },
      lines: mergeLines(lines),
      postedAt: deps.clock.now(),
    }));
  } catch (e) {
    if (e instanceof LedgerError && e.reason === 'INSUFFICIENT_FUNDS' && parts.length)
      throw new Rejection('BENEFICIARY_BALANCE_INSUFFICIENT', `${REJECTION_MESSAGES.BENEFICIARY_BALANCE_INSUFFICIENT} (${e.message})`);
    if (e instanceof LedgerError && (e.reason === 'ACCOUNT_FROZEN' || e.reason === 'ACCOUNT_CLOSED') && parts.length)
      throw new Rejection('BENEFICIARY_ACCOUNT_UNAVAILABLE', `${REJECTION_MESSAGES.BENEFICIARY_ACCOUNT_UNAVAILABLE} (${e.message})`);
    throw e;
  }

  // 6. Sign and broadcast from where the money is, in this transaction (the sandbox chain is in this
  //    database: the transfer commits or rolls back with the ledger): the transaction's deposit
  //    address first, then the organization's other custodial deposit addresses on this asset-network
  //    (same environment type, oldest first), then a HOT treasury address, as custodial withdrawals
  //    are paid. Refused only when none of them can spend the amount.
  const paid = await payFromControlledAddresses(tx, deps, network, address, {
    assetNetworkId: t.assetNetworkId,
    organizationId: t.organizationId,
    environmentType: t.environmentType,
    toAddress: r.toAddress,
    amount: net,
    nonce: r.id,
  });
  if ('refused' in paid)
    throw new Rejection('CONTROLLED_BALANCE_INSUFFICIENT', `${REJECTION_MESSAGES.CONTROLLED_BALANCE_INSUFFICIENT} Needed ${net}: ${paid.refused}`);
  const { txHash, fromAddress } = paid;

  // 7. Totals, state, events, audit.
  const { isTotal } = await recordEscrowOutcome(tx, t, { refunded: amount, reversed }, now);
  await tx.refund.update({
    where: { id: r.id },
    data: {
      status: 'EXECUTED',
      amount: amountToNumeric(amount),
      feeAmount: amountToNumeric(fee),
      netAmount: amountToNumeric(net),
      reversedAmount: amountToNumeric(reversed),
      refundFeePolicyId: policy?.id ?? null,
      fromAddress,
      txHash,
      isTotal,
      executedAt: now,
      ledgerTransactionId,
      updatedAt: deps.clock.now(),
    },
  });
  await emit(tx, deps, t.organizationId, 'refund.executed', { RefundId: r.id, TransactionId: t.id, Amount: amount, ExecutedAt: now });
  await emit(tx, deps, t.organizationId, 'transaction.refunded', { TransactionId: t.id, RefundId: r.id, IsTotal: isTotal });
  await auditAs(tx, deps, systemActor(), {
    organizationId: t.organizationId,
    entityType: 'Refund',
    entityId: r.id,
    action: 'refund.executed',
    before: { status: 'PENDING' },
    after: {
      status: 'EXECUTED',
      amount: amountToString(amount),
      feeAmount: amountToString(fee),
      netAmount: amountToString(net),
      reversedAmount: amountToString(reversed),
      reversals: parts.map((p) => ({
        allocationId: p.allocation.id,
        accountId: p.allocation.accountId,
        status: p.allocation.status,
        amount: amountToString(p.amount),
      })),
      refundFeePolicyId: policy?.id ?? null,
      fromAddress,
      toAddress: r.toAddress,
      txHash,
      isTotal,
      ledgerTransactionId,
    },
  });
  return { status: 'EXECUTED', isTotal };
}

/** How many of the organization's other deposit addresses a refund tries before the treasury. */
const MAX_REFUND_SOURCES = 50;

/**
 * Pays a refund's transfer from the first controlled address whose on-chain balance the network
 * accepts: `first` (the transaction's deposit address), the organization's other CUSTODIAL deposit
 * addresses of the asset-network and environment type (oldest first, at most MAX_REFUND_SOURCES),
 * then a HOT treasury address (sendFromTreasury). Answers the broadcast, or `{ refused }` with each
 * source's refusal.
 */
async function payFromControlledAddresses(
  tx: Db,
  deps: MoneyDeps,
  network: Network,
  first: DepositAddress,
  p: { assetNetworkId: string; organizationId: string; environmentType: EnvironmentType; toAddress: string; amount: Amount; nonce: string },
): Promise<{ txHash: string; fromAddress: string } | { refused: string }> {
  const others = await tx.depositAddress.findMany({
    where: {
      organizationId: p.organizationId,
      networkId: network.id,
      assetNetworkId: p.assetNetworkId,
      id: { not: first.id },
      wallet: { custodyMode: 'CUSTODIAL', environmentType: p.environmentType },
    },
    orderBy: { id: 'asc' },
    take: MAX_REFUND_SOURCES,
  });
  const adapter = adapterFor(network.kind, tx, { clock: deps.clock, boss: deps.boss });
  const refusals: string[] = [];
  const roots = new Map<string, Uint8Array>();
  try {
    for (const a of [first, ...others]) {
      let root = roots.get(a.walletId);
      if (!root) roots.set(a.walletId, (root = await custodialRootKey(tx, deps.sealingKey!, a.walletId)));
      const key = derivePrivateKey(root, a.derivationIndex);
      const signed = await adapter
        .signTransfer(
          networkRef(network),
          {
            networkId: network.id,
            assetNetworkId: p.assetNetworkId,
            fromAddress: a.address,
            fromPublicKey: a.publicKey,
            toAddress: p.toAddress,
            amount: p.amount.toString(),
            nonce: p.nonce,
          },
          key,
        )
        .finally(() => key.fill(0));
      try {
        const { txHash } = await adapter.broadcast(networkRef(network), signed, p.organizationId);
        return { txHash, fromAddress: a.address };
      } catch (e) {
        if (!(e instanceof RangeError)) throw e;
        refusals.push(e.message);
      }
    }
  } finally {
    for (const root of roots.values()) root.fill(0);
  }
  const treasury = await sendFromTreasury(tx, deps, network, {
    assetNetworkId: p.assetNetworkId,
    toAddress: p.toAddress,
    amount: p.amount,
    nonce: p.nonce,
    organizationId: p.organizationId,
  });
  if ('refused' in treasury) return { refused: [...refusals, treasury.refused].join('; ') };
  return { txHash: treasury.txHash, fromAddress: treasury.fromAddress };
}

/** REJECTED with `CODE: detail`, refund.rejected and an audit entry; nothing else moves. */
async function reject(tx: Db, deps: MoneyDeps, r: Refund, code: RejectionCode, detail: string, now: Date): Promise<RefundOutcome> {
  const reason = `${code}: ${detail}`;
  await tx.refund.update({ where: { id: r.id }, data: { status: 'REJECTED', rejectionReason: reason, rejectedAt: now, updatedAt: deps.clock.now() } });
  await emit(tx, deps, r.organizationId, 'refund.rejected', { RefundId: r.id, TransactionId: r.transactionId, Reason: reason });
  await auditAs(tx, deps, systemActor(), {
    organizationId: r.organizationId,
    entityType: 'Refund',
    entityId: r.id,
    action: 'refund.rejected',
    before: { status: 'PENDING' },
    after: { status: 'REJECTED', rejectionReason: reason },
  });
  return { status: 'REJECTED', reason: code };
}
