import { z } from 'zod';
import { fromPrisma, type PgBoss } from 'pg-boss';
import type { Context } from '../context';
import { poolQuery, poolRawDb, type Db, type RawDb } from '../db/prisma';
import type { AccountStatus, AssetNetworkStatus, Withdrawal, WithdrawalStatus } from '../generated/prisma/client';
import { fieldError, invalidState, notFound, parseInput } from '../errors';
import { assertId, isUuid } from '../ids';
import { checkIdempotencyKey, idempotencyRequestHash } from '../idempotency';
import { LedgerError, lockAccountsForMove, postHold, postHolds, voidHold } from '../ledger/ledger';
import { amountToString, numericToAmount, type Amount, positiveAmountText } from '../money';
import { adapterFor, hasAdapter, networkRef, replacementChain, type NetworkAdapter, type NetworkRef, type ObservedTransfer } from '../chains/adapter';
import { derivePrivateKey, derivePublicKey, addressOf, type TransferPayload } from '../chains/secp256k1';
import { custodialRootKey } from '../custody/wallets';
import { auditAll, auditAs, deferAudits, type Actor, type AuditInput } from '../audit/audit';
import { deferEvents, emit, emitEvents } from '../webhooks/outbox';
import { webhookEvent } from '../webhooks/events';
import { requestActor, retryingRawTransaction, retryingTransaction, systemActor, TX_OPTIONS, type MoneyDeps } from '../kernel/service';
import { loadVisibleAccount, visibilityKeyOf } from '../accounts/accounts';
import { blockDestinationInput } from './destinations';
import type { AssetNetwork, Network, WithdrawalDestination } from '../generated/prisma/client';
import { networkCostsOf } from '../treasury/costs/costs';
import { sendGroupFromTreasury } from '../treasury/payouts';
import { consumeReserveGroupInTx, releaseReserveInTx } from '../treasury/costs/reserve';
import { statusAllows } from '../catalog/catalog';
import { accountModeMismatch, submitWithdrawalRequest } from './requests';
import { WITHDRAWAL_BROADCAST_QUEUE, WITHDRAWAL_SWEEP_QUEUE } from '../kernel/queues';
import { runIsolatingErrors } from '../kernel/work';
import { immutableRows } from '../kernel/immutable-rows';

/**
 * Withdrawals (docs/withdrawals.md): money out of a customer account to a withdrawal destination.
 *
 *   request ─► PENDING_APPROVAL ─approve─► APPROVED ─broadcast job─► BROADCAST ─chain.sync/sweep─► CONFIRMED
 *                │ (auto-approved) ───────►   │  (SELF_CUSTODY: AWAITING_SIGNATURE ─signature─► BROADCAST)
 *   REJECTED / CANCELLED before broadcast; BROADCAST_FAILED ─retry (backoff)─► BROADCAST or FAILED;
 *   BROADCAST ─► FAILED (reverted) or REQUIRES_RECONCILIATION (dropped, replaced, stuck).
 *
 * Ledger: a hold CUSTOMER(account) → CHAIN_CLEARING at request (key withdrawal:<id>:hold), posted
 * when CONFIRMED (withdrawal:<id>:post), voided when REJECTED, CANCELLED or FAILED
 * (withdrawal:<id>:void). Every step locks the withdrawal row first and commits its state change,
 * ledger move, events, audit entry and jobs in one database transaction.
 */

/**
 * A `withdrawal.broadcast` job: one withdrawal (`withdrawalId`: an approval by an operator, the
 * recovery sweep's re-sent job, a job queued before issue 22's session 9), or the custodial
 * withdrawals one request group approved (`withdrawalIds`: one job per group, written in the group's
 * transaction). Each withdrawal's outcome is kept on its own row; a job fails only when one of its
 * withdrawals threw, and its retry skips those already moved.
 */
export type WithdrawalBroadcastJob = { withdrawalId: string; withdrawalIds?: undefined } | { withdrawalIds: string[]; withdrawalId?: undefined };
export interface WithdrawalSweepJob {
  organizationId?: string;
}

/** Broadcast attempts before FAILED; the wait before attempt n+1 is RETRY_BASE_MS · 2^(n-1). */
export const MAX_BROADCAST_ATTEMPTS = 3;
export const RETRY_BASE_MS = 30_000;
/** An APPROVED custodial withdrawal not broadcast this long after its approval is picked up by the sweep. */
export const LOST_JOB_AFTER_MS = 600_000;
/** A broadcast transaction neither mined nor gone after this long: REQUIRES_RECONCILIATION. */
export const STUCK_AFTER_MS = 3_600_000;

/** Before broadcast: the states an operator may reject and the requester cancel. */
export const BEFORE_BROADCAST: readonly WithdrawalStatus[] = ['PENDING_APPROVAL', 'APPROVED', 'AWAITING_SIGNATURE', 'BROADCAST_FAILED'];

export async function sendWithdrawalBroadcast(tx: Db, boss: PgBoss | null, withdrawalId: string): Promise<void> {
  if (!boss) return;
  await boss.send(WITHDRAWAL_BROADCAST_QUEUE, { withdrawalId } satisfies WithdrawalBroadcastJob, { db: fromPrisma(tx as never) });
}

// ------------------------------------------------------------------------------------------------
// Reads

/** 404 unless the principal may see it: its organization (an API key: its environment type and an account authorized for its application); operators all. */
export async function loadWithdrawal(ctx: Context, idArg: unknown, db: Db = ctx.deps.db): Promise<Withdrawal> {
  const id = assertId(idArg, 'Withdrawal');
  const p = ctx.principal;
  const row = await db.withdrawal.findUnique({ where: { id } });
  if (!row || !p) throw notFound('Withdrawal');
  if (p.type === 'operator') return row;
  if (p.type === 'member' && p.organizationId === row.organizationId) return row;
  if (p.type === 'apiKey' && p.organizationId === row.organizationId && p.mode === row.environmentType) {
    const authorized = await db.accountApplicationAuthorization.findUnique({
      where: { accountId_applicationId: { accountId: row.accountId, applicationId: p.applicationId } },
    });
    if (authorized) return row;
  }
  throw notFound('Withdrawal');
}

/**
 * The lock order of every step that may move a withdrawal to its destination (approval, the
 * broadcast job and its retries, the SelfCustody signature) and of the destination's block: the
 * destination row first (a share lock here, the block's FOR UPDATE there), then the withdrawal rows
 * (in id order), then the ledger. One order everywhere, so no deadlock; and a block that answered
 * 204 committed before any such step read the destination, which then sees it BLOCKED
 * (docs/decisions.md, issue 26). `destinationId` never changes on a withdrawal: it is read unlocked.
 */
export async function lockDestinationThenWithdrawal(tx: Db, w0: Pick<Withdrawal, 'id' | 'withdrawalDestinationId'>): Promise<Withdrawal | null> {
  await tx.$queryRaw`SELECT 1 FROM "WithdrawalDestination" WHERE "id" = ${w0.withdrawalDestinationId}::uuid FOR SHARE`;
  return lockWithdrawal(tx, w0.id);
}

/** Locks the withdrawal row (FOR UPDATE) and re-reads it. */
export async function lockWithdrawal(tx: Db, id: string): Promise<Withdrawal | null> {
  const rows = await tx.$queryRaw<{ id: string }[]>`SELECT "id"::text AS "id" FROM "Withdrawal" WHERE "id" = ${id}::uuid FOR UPDATE`;
  return rows[0] ? tx.withdrawal.findUnique({ where: { id } }) : null;
}

// ------------------------------------------------------------------------------------------------
// Request

export const requestWithdrawalInput = z
  .object({
    amount: positiveAmountText,
    assetNetworkId: z.string().refine(isUuid, 'must be an asset-network id (uuid)'),
    withdrawalDestinationId: z.string().refine(isUuid, 'must be a withdrawal destination id (uuid)'),
    walletId: z.string().refine(isUuid, 'must be a wallet id (uuid)').nullish(),
    sourceIndex: z.number().int('must be an integer').min(0).max(0x7fffffff).nullish(),
  })
  .strict()
  .superRefine((v, c) => {
    if ((v.walletId == null) !== (v.sourceIndex == null))
      c.addIssue({
        code: 'custom',
        path: [v.walletId == null ? 'walletId' : 'sourceIndex'],
        message: 'walletId and sourceIndex go together (a SELF_CUSTODY source)',
      });
  });
export type RequestWithdrawalInput = z.infer<typeof requestWithdrawalInput>;

const parse = parseInput;

type RequestedAssetNetwork = Pick<AssetNetwork, 'id'> & { network: Pick<Network, 'id' | 'kind' | 'environmentType' | 'requiredConfirmations'> };
const requestedAssetNetworkSql = `SELECT an."id"::text AS "id", n."id"::text AS "networkId", n."kind"::text AS "kind", n."environmentType"::text AS "environmentType",
    n."requiredConfirmations"
  FROM "AssetNetwork" an JOIN "Network" n ON n."id" = an."networkId" WHERE an."id" = $1::uuid`;
/**
 * The asset-network a request names and what it needs of its network, none of which ever changes
 * (the catalog adds asset-networks and moves their status; a network's kind, environment type and
 * confirmations are fixed at its creation: nothing updates a Network row): read once per process
 * (issue 22, point 1: a statement fewer per request), as the sandbox's sends do. Its status, which
 * the catalog changes, is read by the request's group, in its transaction (src/withdrawals/requests.ts).
 * Bounded; a missing id is not remembered. One prepared statement on the pool; through Prisma where
 * there is no pool of ours.
 */
const requestedAssetNetworks = immutableRows<RequestedAssetNetwork>();
const requestedAssetNetwork = (db: Db, id: string): Promise<RequestedAssetNetwork | null> =>
  requestedAssetNetworks.get(id, async () => {
    const result = poolQuery<{
      id: string;
      networkId: string;
      kind: Network['kind'];
      environmentType: Network['environmentType'];
      requiredConfirmations: number;
    }>(db, requestedAssetNetworkSql, [id]);
    if (!result)
      return db.assetNetwork.findUnique({
        where: { id },
        select: { id: true, network: { select: { id: true, kind: true, environmentType: true, requiredConfirmations: true } } },
      });
    const r = (await result).rows[0];
    return r
      ? { id: r.id, network: { id: r.networkId, kind: r.kind, environmentType: r.environmentType, requiredConfirmations: r.requiredConfirmations } }
      : null;
  });

/**
 * Requests a withdrawal (members with payment-manage, API keys for accounts authorized for their
 * application). 400 on bad input; 404 for an account, destination or wallet the caller may not see;
 * 409 over a policy limit, a destination refused by the payout policy or blocked, or a balance
 * that does not cover the amount (nothing is held then). Created PENDING_APPROVAL (above the
 * approval threshold, or a new destination the payout policy wants approved), else approved at
 * once: APPROVED (custodial, broadcast job sent) or AWAITING_SIGNATURE (SELF_CUSTODY).
 */
export async function requestWithdrawal(
  ctx: Context,
  accountIdArg: unknown,
  input: unknown,
  idempotencyKey: string | null | undefined,
  opts: { reread?: boolean } = {},
): Promise<Withdrawal | { id: string }> {
  const data = parse(requestWithdrawalInput, input);
  const accountId = assertId(accountIdArg, 'Account');
  const visibility = visibilityKeyOf(ctx);
  if (!visibility) throw notFound('Account');
  const amount = BigInt(data.amount);
  const assetNetwork = await requestedAssetNetwork(ctx.deps.db, data.assetNetworkId.toLowerCase());
  if (!assetNetwork) throw fieldError('assetNetworkId', 'is not an asset-network of the catalog');
  const network = assetNetwork.network;
  if (!hasAdapter(network.kind)) throw fieldError('assetNetworkId', `${network.kind} networks have no adapter in this version`);
  // A custodial request reads nothing of its account here: its group reads it, with this principal's
  // visibility (404 as loadVisibleAccount's) and its mode against the asset-network's (issue 22: a
  // third of a withdrawal's statements was this read). A self-custody one needs its organization
  // for the wallet first (its group reads it again, as any other).
  let source: { walletId: string; sourceIndex: number; fromAddress: string } | null = null;
  if (data.walletId != null && data.sourceIndex != null) {
    const account = await loadVisibleAccount(ctx, accountId);
    if (network.environmentType !== account.mode) throw accountModeMismatch(account.mode);
    const wallet = await ctx.deps.db.wallet.findUnique({ where: { id: data.walletId.toLowerCase() } });
    if (!wallet || wallet.organizationId !== account.organizationId) throw notFound('Wallet');
    if (wallet.custodyMode !== 'SELF_CUSTODY') throw fieldError('walletId', 'must be a SELF_CUSTODY wallet (custodial withdrawals name no source)');
    if (wallet.networkId !== network.id) throw fieldError('walletId', "must be a wallet of the asset-network's network");
    source = {
      walletId: wallet.id,
      sourceIndex: data.sourceIndex,
      fromAddress: adapterFor(network.kind).deriveAddress(networkRef(network), wallet, data.sourceIndex).address,
    };
  }
  const p = ctx.principal;
  const who = p?.type === 'apiKey' ? `app:${p.applicationId}` : p?.type === 'member' ? `member:${p.memberId}` : 'other';
  if (idempotencyKey != null) checkIdempotencyKey(idempotencyKey);
  // Written in the next group of requests (src/withdrawals/requests.ts): the account, the
  // asset-network's status, the destination, the policies, the idempotency record and the hold are
  // checked there, under the group's locks.
  const created = await submitWithdrawalRequest(ctx.deps, {
    actor: requestActor(ctx),
    applicationId: p?.type === 'apiKey' ? p.applicationId : null,
    idempotency:
      idempotencyKey == null
        ? null
        : { scope: `requestWithdrawal:${accountId}:${who}`, key: idempotencyKey, requestHash: idempotencyRequestHash({ accountId, ...data }) },
    accountId,
    visibility,
    environmentType: network.environmentType,
    assetNetworkId: assetNetwork.id,
    networkId: network.id,
    destinationId: data.withdrawalDestinationId,
    amount,
    source,
  });
  // The caller needing only the id (REST: 201 with a Location and { id }) gets it without a re-read.
  return opts.reread === false ? { id: created.id } : loadWithdrawal(ctx, created.id);
}

/** What follows an approval (automatic: operatorId null): the event, and the broadcast job of a custodial withdrawal. */
async function approved(tx: Db, deps: MoneyDeps, w: Withdrawal, operatorId: string | null): Promise<void> {
  await emit(tx, deps, w.organizationId, 'withdrawal.approved', { WithdrawalId: w.id, ActorMemberId: operatorId });
  if (w.custodyMode === 'CUSTODIAL') await sendWithdrawalBroadcast(tx, deps.boss, w.id);
}

// ------------------------------------------------------------------------------------------------
// Endings that release the hold

export type Closing = { status: 'REJECTED' | 'CANCELLED' | 'FAILED'; reason: string | null };

/** REJECTED, CANCELLED or FAILED: the hold voided (once: withdrawal:<id>:void), the signing request closed, the event and the audit entry. */
export async function close(tx: Db, deps: MoneyDeps, actor: Actor, w: Withdrawal, c: Closing, now: Date): Promise<Withdrawal> {
  await voidHold(tx, { holdId: w.holdId, idempotencyKey: `withdrawal:${w.id}:void`, nature: `withdrawal.${c.status.toLowerCase()}`, postedAt: now });
  const updated = await tx.withdrawal.update({
    where: { id: w.id },
    data: {
      status: c.status,
      closedAt: now,
      updatedAt: now,
      nextAttemptAt: null,
      ...(c.status === 'REJECTED' ? { rejectionReason: c.reason } : c.status === 'FAILED' ? { failureReason: c.reason } : {}),
    },
  });
  await tx.signingRequest.updateMany({ where: { withdrawalId: w.id, status: 'PENDING' }, data: { status: 'CLOSED', updatedAt: now } });
  if (c.status === 'REJECTED') await emit(tx, deps, w.organizationId, 'withdrawal.rejected', { WithdrawalId: w.id, Reason: c.reason ?? '' });
  else if (c.status === 'FAILED') await emit(tx, deps, w.organizationId, 'withdrawal.failed', { WithdrawalId: w.id, Reason: c.reason ?? '' });
  else await emit(tx, deps, w.organizationId, 'withdrawal.cancelled', { WithdrawalId: w.id });
  await auditAs(tx, deps, actor, {
    organizationId: w.organizationId,
    entityType: 'Withdrawal',
    entityId: w.id,
    action: `withdrawal.${c.status.toLowerCase()}`,
    before: { status: w.status },
    after: { status: c.status, reason: c.reason },
  });
  return updated;
}

/**
 * CONFIRMED by the mined transaction `txHash` (the withdrawal's own, or a replacement an operator
 * names): the hold posted (once: withdrawal:<id>:post), the row, withdrawal.confirmed
 * {TechnicalReference}. The caller writes its audit entry.
 */
export async function confirm(tx: Db, deps: MoneyDeps, w: Withdrawal, txHash: string, now: Date): Promise<void> {
  await postHold(tx, { holdId: w.holdId, idempotencyKey: `withdrawal:${w.id}:post`, nature: 'withdrawal.confirmed', postedAt: now });
  await tx.withdrawal.update({
    where: { id: w.id },
    data: { status: 'CONFIRMED', txHash, failureReason: null, confirmedAt: now, closedAt: now, updatedAt: now },
  });
  await emit(tx, deps, w.organizationId, 'withdrawal.confirmed', { WithdrawalId: w.id, TechnicalReference: txHash });
}

/**
 * What every step that moves a withdrawal on re-checks (approval, the broadcast job, each retry, the
 * SelfCustody signature; docs/decisions.md "Rules re-checked when a job carries an operation out"),
 * under the account's ledger lock so that no freeze or close slips in before the commit:
 *
 * | found                                   | outcome                                                              |
 * | --------------------------------------- | -------------------------------------------------------------------- |
 * | account CLOSED                          | REJECTED (`ACCOUNT_CLOSED: …`), hold voided, in `tx`                 |
 * | destination not usable (blocked)        | REJECTED (`DESTINATION_BLOCKED: …`), hold voided, in `tx`            |
 * | account FROZEN                          | WAITS (`ACCOUNT_FROZEN: …`): nothing changes here, the hold stays    |
 * | asset-network PAUSED or DISABLED        | WAITS (`ASSET_NETWORK_<status>: …`)                                  |
 *
 * null: the step may go on. What a WAITS means is the caller's: approval and signature answer 409,
 * the broadcast job defers (the sweep tries again).
 */
export async function checkBeforeMoving(
  tx: Db,
  deps: MoneyDeps,
  actor: Actor,
  w: Withdrawal,
  now: Date,
): Promise<{ outcome: 'REJECTED' | 'WAITS'; reason: string } | null> {
  return (await checksBeforeMoving(tx, deps, actor, [w], now))[0]!;
}

/**
 * checkBeforeMoving for a group of withdrawals (the broadcast group, issue 22): one lock of every
 * account, one read of the accounts, of the asset-networks and of the destinations (which the
 * caller has share-locked: lockDestinationThenWithdrawal's order), whatever the number; each
 * withdrawal answers its own outcome, in list order (the rejected ones closed here, in `tx`).
 */
export async function checksBeforeMoving(
  tx: Db,
  deps: MoneyDeps,
  actor: Actor,
  ws: readonly Withdrawal[],
  now: Date,
): Promise<({ outcome: 'REJECTED' | 'WAITS'; reason: string } | null)[]> {
  if (!ws.length) return [];
  await lockAccountsForMove(
    tx,
    ws.map((w) => w.accountId),
  );
  // The accounts, asset-networks and destinations in one raw statement (issue 22: no query engine on the broadcast group's path).
  const read = await tx.$queryRaw<{ k: 'A' | 'N' | 'D'; id: string; status: string; organizationId: string | null; blockedReason: string | null }[]>`
    SELECT 'A' AS "k", "id"::text AS "id", "status"::text AS "status", NULL::text AS "organizationId", NULL::text AS "blockedReason"
      FROM "Account" WHERE "id" = ANY(${[...new Set(ws.map((w) => w.accountId))]}::uuid[])
    UNION ALL
    SELECT 'N', "id"::text, "status"::text, NULL, NULL FROM "AssetNetwork" WHERE "id" = ANY(${[...new Set(ws.map((w) => w.assetNetworkId))]}::uuid[])
    UNION ALL
    SELECT 'D', "id"::text, "status"::text, "organizationId"::text, "blockedReason"
      FROM "WithdrawalDestination" WHERE "id" = ANY(${[...new Set(ws.map((w) => w.withdrawalDestinationId))]}::uuid[])`;
  const accountOf = new Map(read.filter((r) => r.k === 'A').map((a) => [a.id, a.status as AccountStatus]));
  const assetNetworkOf = new Map(read.filter((r) => r.k === 'N').map((a) => [a.id, a.status as AssetNetworkStatus]));
  const destinationOf = new Map(read.filter((r) => r.k === 'D').map((d) => [d.id, d]));
  const out: ({ outcome: 'REJECTED' | 'WAITS'; reason: string } | null)[] = [];
  for (const w of ws) {
    const account = accountOf.get(w.accountId);
    const destination = destinationOf.get(w.withdrawalDestinationId);
    let rejection: string | null = null;
    if (!account || account === 'CLOSED') rejection = 'ACCOUNT_CLOSED: The account is closed.';
    else if (!destination || destination.organizationId !== w.organizationId) throw notFound('WithdrawalDestination');
    else if (destination.status !== 'ACTIVE')
      rejection = `DESTINATION_BLOCKED: The withdrawal destination is blocked: ${destination.blockedReason ?? 'no reason given'}.`;
    const assetNetworkStatus = assetNetworkOf.get(w.assetNetworkId);
    if (assetNetworkStatus === undefined) throw new Error(`asset-network ${w.assetNetworkId} not found`);
    if (rejection) {
      await close(tx, deps, actor, w, { status: 'REJECTED', reason: rejection }, now);
      out.push({ outcome: 'REJECTED', reason: rejection });
    } else if (account === 'FROZEN') out.push({ outcome: 'WAITS', reason: 'ACCOUNT_FROZEN: The account is frozen: nothing leaves it until it is unfrozen.' });
    else if (!statusAllows.withdrawals(assetNetworkStatus))
      out.push({
        outcome: 'WAITS',
        reason: `ASSET_NETWORK_${assetNetworkStatus}: The asset-network is ${assetNetworkStatus}: nothing is sent on it until it is enabled.`,
      });
    else out.push(null);
  }
  return out;
}

/** Called by AdminBlockWithdrawalDestination in its transaction: every withdrawal to it not broadcast yet is REJECTED (DESTINATION_BLOCKED). */
export async function stopWithdrawalsToDestination(tx: Db, deps: MoneyDeps, actor: Actor, destinationId: string, reason: string): Promise<number> {
  const pending = await tx.withdrawal.findMany({
    where: { withdrawalDestinationId: destinationId, status: { in: [...BEFORE_BROADCAST] } },
    select: { id: true },
    orderBy: { id: 'asc' },
  });
  const now = deps.clock.now();
  for (const { id } of pending) {
    const w = await lockWithdrawal(tx, id);
    if (w && BEFORE_BROADCAST.includes(w.status))
      await close(tx, deps, actor, w, { status: 'REJECTED', reason: `DESTINATION_BLOCKED: The withdrawal destination is blocked: ${reason}.` }, now);
  }
  return pending.length;
}

/**
 * AdminBlockWithdrawalDestination (operators): ACTIVE -> BLOCKED with the reason, the operator and
 * the time, audited in the same transaction; 409 when already blocked, 404 when unknown. The catalog
 * has no event for it: the audit entry is the record. Pending withdrawals to it are stopped by the
 * withdrawal code (docs/withdrawals.md). It lives here, beside stopWithdrawalsToDestination, so
 * destinations.ts never imports withdrawals.ts.
 */
export async function blockDestination(ctx: Context, idArg: unknown, input: unknown): Promise<WithdrawalDestination> {
  const id = assertId(idArg, 'WithdrawalDestination');
  const { reason } = parseInput(blockDestinationInput, input);
  const p = ctx.principal;
  if (p?.type !== 'operator') throw notFound('WithdrawalDestination');
  // Destination first, then its withdrawals in id order (stopWithdrawalsToDestination): the order of
  // every step that moves a withdrawal (lockDestinationThenWithdrawal); retried on a deadlock anyway.
  await retryingTransaction(ctx.deps.db, async (tx) => {
    const rows = await tx.$queryRaw<{ status: string; organizationId: string }[]>`
      SELECT "status"::text AS "status", "organizationId"::text AS "organizationId" FROM "WithdrawalDestination" WHERE "id" = ${id}::uuid FOR UPDATE`;
    const row = rows[0];
    if (!row) throw notFound('WithdrawalDestination');
    if (row.status === 'BLOCKED') throw invalidState('The withdrawal destination is blocked already.');
    const now = ctx.deps.clock.now();
    await tx.withdrawalDestination.update({
      where: { id },
      data: { status: 'BLOCKED', blockedReason: reason, blockedAt: now, blockedByOperatorId: p.operatorId, updatedAt: now },
    });
    // Withdrawals to it not broadcast yet: REJECTED (DESTINATION_BLOCKED), holds released (docs/withdrawals.md).
    await stopWithdrawalsToDestination(tx, ctx.deps, requestActor(ctx), id, reason);
    await auditAs(tx, ctx.deps, requestActor(ctx), {
      organizationId: row.organizationId,
      entityType: 'WithdrawalDestination',
      entityId: id,
      action: 'withdrawal_destination.blocked',
      before: { status: 'ACTIVE' },
      after: { status: 'BLOCKED', reason },
    });
  });
  return ctx.deps.db.withdrawalDestination.findUniqueOrThrow({ where: { id } });
}

/** Runs `f` in a transaction; a refusal it records (DESTINATION_BLOCKED) commits, then answers 409. */
async function committingRefusal(deps: MoneyDeps, f: (tx: Db) => Promise<string | null>): Promise<void> {
  const refusal = await retryingTransaction(deps.db, f);
  if (refusal) throw invalidState(`The withdrawal was rejected: ${refusal}`);
}

// ------------------------------------------------------------------------------------------------
// Operator decisions, cancellation

/** AdminApproveWithdrawal (operators): PENDING_APPROVAL → APPROVED (custodial) or AWAITING_SIGNATURE; 409 otherwise. */
export async function approveWithdrawal(ctx: Context, idArg: unknown): Promise<Withdrawal> {
  const w0 = await loadWithdrawal(ctx, idArg);
  const p = ctx.principal;
  if (p?.type !== 'operator') throw notFound('Withdrawal');
  await committingRefusal(ctx.deps, async (tx) => {
    const w = (await lockDestinationThenWithdrawal(tx, w0))!;
    if (w.status !== 'PENDING_APPROVAL') throw invalidState(`Only a PENDING_APPROVAL withdrawal can be approved; this one is ${w.status}.`);
    const now = ctx.deps.clock.now();
    const check = await checkBeforeMoving(tx, ctx.deps, requestActor(ctx), w, now);
    if (check?.outcome === 'REJECTED') return check.reason;
    if (check) throw invalidState(`The withdrawal cannot be approved now: ${check.reason} It stays PENDING_APPROVAL with its hold.`);
    const status = w.custodyMode === 'SELF_CUSTODY' ? 'AWAITING_SIGNATURE' : 'APPROVED';
    const updated = await tx.withdrawal.update({ where: { id: w.id }, data: { status, approvedAt: now, approvedByOperatorId: p.operatorId, updatedAt: now } });
    await auditAs(tx, ctx.deps, requestActor(ctx), {
      organizationId: w.organizationId,
      entityType: 'Withdrawal',
      entityId: w.id,
      action: 'withdrawal.approved',
      before: { status: w.status },
      after: { status },
    });
    await approved(tx, ctx.deps, updated, p.operatorId);
    return null;
  });
  return loadWithdrawal(ctx, w0.id);
}

export const rejectWithdrawalInput = z.object({ reason: z.string().trim().min(1, 'must not be empty').max(1000) }).strict();

/** AdminRejectWithdrawal (operators, with a reason): any state before broadcast → REJECTED, hold voided; 409 otherwise. */
export async function rejectWithdrawal(ctx: Context, idArg: unknown, input: unknown): Promise<Withdrawal> {
  const { reason } = parse(rejectWithdrawalInput, input);
  const w0 = await loadWithdrawal(ctx, idArg);
  if (ctx.principal?.type !== 'operator') throw notFound('Withdrawal');
  await ctx.deps.db.$transaction(async (tx) => {
    const w = (await lockWithdrawal(tx, w0.id))!;
    if (!BEFORE_BROADCAST.includes(w.status)) throw invalidState(`A ${w.status} withdrawal can no longer be rejected.`);
    await close(tx, ctx.deps, requestActor(ctx), w, { status: 'REJECTED', reason }, ctx.deps.clock.now());
  }, TX_OPTIONS);
  return loadWithdrawal(ctx, w0.id);
}

/** CancelWithdrawal (the organization's members with payment-manage, API keys that see it): before broadcast → CANCELLED, hold voided; 409 after. */
export async function cancelWithdrawal(ctx: Context, idArg: unknown): Promise<Withdrawal> {
  const w0 = await loadWithdrawal(ctx, idArg);
  await ctx.deps.db.$transaction(async (tx) => {
    const w = (await lockWithdrawal(tx, w0.id))!;
    if (!BEFORE_BROADCAST.includes(w.status)) throw invalidState(`A ${w.status} withdrawal can no longer be cancelled (only until it is broadcast).`);
    await close(tx, ctx.deps, requestActor(ctx), w, { status: 'CANCELLED', reason: null }, ctx.deps.clock.now());
  }, TX_OPTIONS);
  return loadWithdrawal(ctx, w0.id);
}

// ------------------------------------------------------------------------------------------------
// Broadcast (custodial: the withdrawal.broadcast job and the retries of the sweep)

export type StepOutcome =
  'BROADCAST' | 'DEFERRED' | 'BROADCAST_FAILED' | 'FAILED' | 'REJECTED' | 'CONFIRMED' | 'REQUIRES_RECONCILIATION' | 'WAITING' | 'SKIPPED';

/** Marks BROADCAST with its hash; withdrawal.broadcast {TechnicalReference} and the audit entry. */
export async function markBroadcast(
  tx: Db,
  deps: MoneyDeps,
  actor: Actor,
  w: Withdrawal,
  txHash: string,
  fromAddress: string,
  now: Date,
  networkCost: Amount | null = null,
): Promise<void> {
  await markBroadcastMany(tx, deps, actor, [{ w, txHash, fromAddress, networkCost }], now);
}

/**
 * markBroadcast for a group (issue 22): one update of the rows, the events in one statement and the
 * audit entries in one, whatever the number.
 */
async function markBroadcastMany(
  tx: Db,
  deps: MoneyDeps,
  actor: Actor,
  sent: readonly { w: Withdrawal; txHash: string; fromAddress: string; networkCost: Amount | null }[],
  now: Date,
): Promise<void> {
  if (!sent.length) return;
  await tx.$executeRaw`
    UPDATE "Withdrawal" w
       SET "status" = 'BROADCAST', "txHash" = v.h, "fromAddress" = v.f, "broadcastAt" = ${now}, "broadcastAttempts" = w."broadcastAttempts" + 1,
           "nextAttemptAt" = NULL, "lastBroadcastError" = NULL, "updatedAt" = ${now}
      FROM unnest(${sent.map((x) => x.w.id)}::uuid[], ${sent.map((x) => x.txHash)}::text[], ${sent.map((x) => x.fromAddress)}::text[]) AS v(id, h, f)
     WHERE w."id" = v.id`;
  await emitEvents(
    tx,
    deps,
    sent.map((x) => ({
      organizationId: x.w.organizationId,
      event: webhookEvent('withdrawal.broadcast', { WithdrawalId: x.w.id, TechnicalReference: x.txHash }),
    })),
  );
  await auditAll(
    tx,
    deps,
    actor,
    sent.map(({ w, txHash, fromAddress, networkCost }) => ({
      organizationId: w.organizationId,
      entityType: 'Withdrawal',
      entityId: w.id,
      action: 'withdrawal.broadcast',
      before: { status: w.status },
      after: {
        status: 'BROADCAST',
        txHash,
        fromAddress,
        attempt: w.broadcastAttempts + 1,
        networkCost: networkCost === null ? null : amountToString(networkCost),
      },
    })),
  );
}

/**
 * Broadcasts an APPROVED (or due BROADCAST_FAILED) custodial withdrawal, in this transaction:
 *
 * 1. The network cost (networkCostOf: the cost table in force, else the adapter's estimate; no margin)
 *    is consumed from the network resource reserve, once per attempt (reference
 *    `Withdrawal`/`<id>:<attempt>`). Exhausted: nothing is broadcast, no attempt is counted, the
 *    withdrawal stays queued (nextAttemptAt = now + RESERVE_RETRY_MS; the sweep retries it) and a
 *    replenishment is queued: DEFERRED. A network without a reserve is not metered.
 * 2. The source: a HOT treasury address covering the amount (src/treasury/payouts.ts), else one of
 *    the organization's custodial deposit addresses on the network (oldest first, the first whose
 *    on-chain balance the network accepts).
 * 3. Refused by every source: the reserve consumption is given back and the attempt counts:
 *    BROADCAST_FAILED (retried at nextAttemptAt), FAILED after MAX_BROADCAST_ATTEMPTS.
 */
export async function broadcastWithdrawal(deps: MoneyDeps, withdrawalId: string): Promise<StepOutcome> {
  const [outcome] = await broadcastWithdrawalGroup(deps, [withdrawalId], { isolateOnError: false });
  if (outcome instanceof Error) throw outcome;
  return outcome!;
}

/**
 * broadcastWithdrawal for a group of withdrawals (the `withdrawal.broadcast` worker's fetched jobs;
 * issue 22), in one database transaction: the destinations share-locked, then the withdrawals
 * locked in id order (lockDestinationThenWithdrawal's order); the re-checks for all at once
 * (checksBeforeMoving); per asset-network, the network costs quoted once, the reserve locked once
 * and consumed for every withdrawal in list order (consumeReserveGroupInTx), the HOT addresses read
 * once and the transfers signed and broadcast together (sendGroupFromTreasury: one network lock,
 * consecutive nonces, one insert); then one update of the rows, one insert of the events and one of
 * the audit entries. Each withdrawal meets the same rules as alone, in list order, and answers its
 * own outcome: one refused (a rejection, a wait, a reserve exhausted, no source that can pay it)
 * fails alone, the others go on. A throw (a database error, a bug) rolls the group back whole; with
 * `isolateOnError` (the default) each withdrawal then runs again alone, so a bad one fails alone
 * (its error in its place of the answer) and never takes the others with it.
 */
export async function broadcastWithdrawalGroup(
  deps: MoneyDeps,
  withdrawalIds: readonly string[],
  opts: { isolateOnError?: boolean } = {},
): Promise<(StepOutcome | Error)[]> {
  return runIsolatingErrors(
    withdrawalIds,
    async (group) => {
      const ids = group.map((id) => (isUuid(id) ? id.toLowerCase() : null));
      const valid = [...new Set(ids.filter((id): id is string => id !== null))].sort();
      if (!valid.length) return ids.map((): StepOutcome => 'SKIPPED');
      const work = (tx: Db) => deferAudits(tx, () => deferEvents(tx, deps, () => broadcastGroupIn(tx, deps, valid)));
      // Straight on the pool first (issue 22: every statement of the common path is raw); a group that
      // reaches a step still on Prisma's model API (a rejection, a deferral, a refused broadcast, a
      // deposit address as the source) is rolled back and run again through Prisma, whole.
      const outcomes = (await onPoolUnlessModelNeeded(deps, work)) ?? (await retryingTransaction(deps.db, work));
      return ids.map((id): StepOutcome => (id === null ? 'SKIPPED' : (outcomes.get(id) ?? 'SKIPPED')));
    },
    opts,
  );
}

/** Thrown by a modelless handle when a step asks for Prisma's model API (see onPoolUnlessModelNeeded). */
class NeedsModels extends Error {}

/**
 * Runs `fn` in a transaction straight on the pool (retryingRawTransaction) with a handle that has
 * Prisma's four raw methods and nothing else: the first use of anything else (a model call such as
 * `tx.withdrawal.update`) throws, the transaction rolls back, and null is answered, so the caller runs
 * the same work through Prisma (issue 22: the broadcast group's common path is raw statements only;
 * its rare branches still use models). Nothing is kept of the abandoned attempt: the database rolls
 * it back, and signing writes nothing outside it.
 */
async function onPoolUnlessModelNeeded<T>(deps: MoneyDeps, fn: (tx: Db) => Promise<T>): Promise<T | null> {
  try {
    return await retryingRawTransaction(deps.db, (raw) => fn(modelless(raw)));
  } catch (e) {
    if (e instanceof NeedsModels) return null;
    throw e;
  }
}

const RAW_METHODS = new Set<string | symbol>(['$queryRaw', '$executeRaw', '$queryRawUnsafe', '$executeRawUnsafe']);
function modelless(raw: RawDb): Db {
  return new Proxy(raw, {
    get(target, property, receiver) {
      if (RAW_METHODS.has(property)) return Reflect.get(target, property, receiver);
      // Not a thenable, and no symbol-keyed protocol: only a named member is a model call.
      if (property === 'then' || typeof property === 'symbol') return undefined;
      throw new NeedsModels(`the pool's transaction has no ${String(property)}`);
    },
  }) as unknown as Db;
}

/** Networks by id, raw (issue 22: read on the broadcast group's and the chain.sync's paths), the model's columns and types. */
function networksOf(db: RawDb, ids: string[]): Promise<Network[]> {
  return db.$queryRaw<Network[]>`
    SELECT "id"::text AS "id", "name", "kind"::text AS "kind", "environmentType"::text AS "environmentType", "blockTimeSeconds", "requiredConfirmations", "createdAt"
      FROM "Network" WHERE "id" = ANY(${ids}::uuid[])`;
}

async function broadcastGroupIn(tx: Db, deps: MoneyDeps, ids: string[]): Promise<Map<string, StepOutcome>> {
  const out = new Map<string, StepOutcome>();
  // One statement (issue 22, session 9; was three: the rows' destinations read, share-locked, then the
  // rows locked): the destinations share-locked in id order first (the materialized CTE, run whole by
  // the one-time filter before the scan returns a row), then the withdrawals locked in id order and
  // read. A withdrawal's destination never changes; FOR UPDATE answers each row as it is once locked
  // (a change committed while this waited included). Every column, read raw: the model's own values
  // (numeric as Decimal, timestamps as Date).
  const rows = await tx.$queryRaw<Withdrawal[]>`
    WITH "d" AS MATERIALIZED (
      SELECT 1 FROM "WithdrawalDestination"
       WHERE "id" IN (SELECT "withdrawalDestinationId" FROM "Withdrawal" WHERE "id" = ANY(${ids}::uuid[]))
       ORDER BY "id" FOR SHARE)
    SELECT w.* FROM "Withdrawal" w WHERE w."id" = ANY(${ids}::uuid[]) AND (SELECT count(*) FROM "d") >= 0 ORDER BY w."id" FOR UPDATE OF w`;
  if (!rows.length) return out;
  const now = deps.clock.now();
  const due = rows.filter(
    (w) => w.custodyMode === 'CUSTODIAL' && (w.status === 'BROADCAST_FAILED' ? w.nextAttemptAt !== null && w.nextAttemptAt <= now : w.status === 'APPROVED'),
  );
  for (const w of rows) out.set(w.id, 'SKIPPED');
  if (!due.length) return out;
  const checks = await checksBeforeMoving(tx, deps, systemActor(), due, now);
  const movable: Withdrawal[] = [];
  for (const [i, w] of due.entries()) {
    const check = checks[i]!;
    if (check?.outcome === 'REJECTED') out.set(w.id, 'REJECTED');
    else if (check) out.set(w.id, await deferred(tx, deps, w, check.reason, now));
    else movable.push(w);
  }
  if (!movable.length) return out;
  if (!deps.sealingKey) throw new Error('broadcasting a custodial withdrawal signs on the chain: the job needs the sealing key (deps.sealingKey)');
  const networks = new Map((await networksOf(tx, [...new Set(movable.map((w) => w.networkId))])).map((n) => [n.id, n]));
  const sent: { w: Withdrawal; txHash: string; fromAddress: string; networkCost: Amount | null }[] = [];
  for (const assetNetworkId of new Set(movable.map((w) => w.assetNetworkId))) {
    const ws = movable.filter((w) => w.assetNetworkId === assetNetworkId);
    const network = networks.get(ws[0]!.networkId)!;
    const amounts = ws.map((w) => numericToAmount(w.amount));
    // 1. The network cost of each, from the reserve (once per attempt: reference <id>:<attempt>).
    const costs = await networkCostsOf(tx, { assetNetworkId, operation: 'WITHDRAWAL', amounts, at: now });
    const refs = ws.map((w, i) => ({ referenceType: 'Withdrawal', referenceId: `${w.id}:${w.broadcastAttempts + 1}`, amount: costs[i]!.networkCost }));
    const reserve = await consumeReserveGroupInTx(tx, deps, network.id, refs);
    const paid: number[] = [];
    for (const [i, w] of ws.entries()) {
      const r = reserve[i]!;
      if (r.ok) paid.push(i);
      else
        out.set(
          w.id,
          await deferred(tx, deps, w, `RESERVE_EXHAUSTED: the network resource reserve holds ${r.balance}, the network cost is ${costs[i]!.networkCost}`, now),
        );
    }
    // 2. The HOT treasury addresses, for all at once; 3. a deposit address for each one they refused.
    const fromTreasury = await sendGroupFromTreasury(
      tx,
      deps,
      network,
      assetNetworkId,
      paid.map((i) => ({ toAddress: ws[i]!.toAddress, amount: amounts[i]!, nonce: ws[i]!.id, organizationId: ws[i]!.organizationId })),
    );
    for (const [j, i] of paid.entries()) {
      const w = ws[i]!;
      const t = fromTreasury[j]!;
      const from = 'txHash' in t ? t : await sendFromDepositAddresses(tx, deps, network, w, t.refused);
      if ('txHash' in from) {
        sent.push({ w, txHash: from.txHash, fromAddress: from.fromAddress, networkCost: costs[i]!.networkCost });
        out.set(w.id, 'BROADCAST');
        continue;
      }
      // Refused by every source: the consumption is given back and the attempt counts.
      await releaseReserveInTx(tx, deps, { assetNetworkId, referenceType: refs[i]!.referenceType, referenceId: refs[i]!.referenceId });
      out.set(w.id, await broadcastFailed(tx, deps, w, `BROADCAST_REFUSED: ${from.refused}`, now));
    }
  }
  await markBroadcastMany(tx, deps, systemActor(), sent, now);
  return out;
}

/**
 * The fallback source of a custodial withdrawal no HOT treasury address paid (`treasuryRefusal`: why):
 * one of the organization's custodial deposit addresses on the network, oldest first, the first
 * whose on-chain balance the network accepts. Answers the broadcast transfer or why every one refused.
 */
async function sendFromDepositAddresses(
  tx: Db,
  deps: MoneyDeps,
  network: Network,
  w: Withdrawal,
  treasuryRefusal: string,
): Promise<{ txHash: string; fromAddress: string } | { refused: string }> {
  const adapter = adapterFor(network.kind, tx, { clock: deps.clock, boss: deps.boss });
  const candidates = await tx.depositAddress.findMany({
    where: {
      organizationId: w.organizationId,
      networkId: w.networkId,
      assetNetworkId: w.assetNetworkId,
      wallet: { custodyMode: 'CUSTODIAL', environmentType: w.environmentType },
    },
    orderBy: { id: 'asc' },
    take: 50,
  });
  let lastError = `${treasuryRefusal}; no custodial deposit address of the organization holds the amount on this network`;
  const roots = new Map<string, Uint8Array>();
  try {
    for (const a of candidates) {
      const root = roots.get(a.walletId) ?? (await custodialRootKey(tx, deps.sealingKey!, a.walletId));
      roots.set(a.walletId, root);
      const transfer: TransferPayload = {
        networkId: network.id,
        assetNetworkId: w.assetNetworkId,
        fromAddress: a.address,
        fromPublicKey: a.publicKey,
        toAddress: w.toAddress,
        amount: numericToAmount(w.amount).toString(),
        nonce: w.id,
      };
      try {
        const key = derivePrivateKey(root, a.derivationIndex);
        const signed = await adapter.signTransfer(networkRef(network), transfer, key).finally(() => key.fill(0));
        const { txHash } = await adapter.broadcast(networkRef(network), signed, w.organizationId);
        return { txHash, fromAddress: a.address };
      } catch (e) {
        if (!(e instanceof RangeError)) throw e;
        lastError = `${treasuryRefusal}; ${e.message}`;
      }
    }
  } finally {
    for (const root of roots.values()) root.fill(0);
  }
  return { refused: lastError };
}

/** The wait before a deferred withdrawal (reserve exhausted, account frozen, asset-network not enabled) is tried again. */
export const RESERVE_RETRY_MS = 60_000;

/**
 * The withdrawal cannot be sent now (the reserve cannot pay the network cost, the account is frozen,
 * the asset-network is not enabled): it stays queued (its state and attempts unchanged), tried again
 * at nextAttemptAt by the sweep, `lastBroadcastError` saying why (`CODE: …`). No webhook (nothing
 * failed); an audit entry when it starts waiting for a new cause.
 */
async function deferred(tx: Db, deps: MoneyDeps, w: Withdrawal, reason: string, now: Date): Promise<StepOutcome> {
  const nextAttemptAt = new Date(now.getTime() + RESERVE_RETRY_MS);
  await tx.withdrawal.update({ where: { id: w.id }, data: { nextAttemptAt, lastBroadcastError: reason, updatedAt: now } });
  const code = (r: string | null) => r?.split(':')[0];
  if (code(w.lastBroadcastError) !== code(reason))
    await auditAs(tx, deps, systemActor(), {
      organizationId: w.organizationId,
      entityType: 'Withdrawal',
      entityId: w.id,
      action: 'withdrawal.broadcast_deferred',
      before: { status: w.status },
      after: { status: w.status, reason, nextAttemptAt: nextAttemptAt.toISOString() },
    });
  return 'DEFERRED';
}

/** One more refused attempt: BROADCAST_FAILED with the next attempt's time, or FAILED (hold voided) when attempts are exhausted. */
async function broadcastFailed(tx: Db, deps: MoneyDeps, w: Withdrawal, reason: string, now: Date): Promise<StepOutcome> {
  const attempts = w.broadcastAttempts + 1;
  await emit(tx, deps, w.organizationId, 'withdrawal.broadcast_failed', { WithdrawalId: w.id, Reason: reason });
  if (attempts >= MAX_BROADCAST_ATTEMPTS) {
    const updated = await tx.withdrawal.update({ where: { id: w.id }, data: { broadcastAttempts: attempts, lastBroadcastError: reason, updatedAt: now } });
    await close(
      tx,
      deps,
      systemActor(),
      updated,
      { status: 'FAILED', reason: `BROADCAST_ATTEMPTS_EXHAUSTED: ${attempts} attempts refused; last: ${reason}` },
      now,
    );
    return 'FAILED';
  }
  const nextAttemptAt = new Date(now.getTime() + RETRY_BASE_MS * 2 ** (attempts - 1));
  await tx.withdrawal.update({
    where: { id: w.id },
    data: { status: 'BROADCAST_FAILED', broadcastAttempts: attempts, lastBroadcastError: reason, nextAttemptAt, updatedAt: now },
  });
  await auditAs(tx, deps, systemActor(), {
    organizationId: w.organizationId,
    entityType: 'Withdrawal',
    entityId: w.id,
    action: 'withdrawal.broadcast_failed',
    before: { status: w.status },
    after: { status: 'BROADCAST_FAILED', reason, attempt: attempts, nextAttemptAt: nextAttemptAt.toISOString() },
  });
  return 'BROADCAST_FAILED';
}

// ------------------------------------------------------------------------------------------------
// Confirmation (the sweep)

/**
 * Follows a BROADCAST withdrawal on the chain: MINED with the network's required confirmations →
 * CONFIRMED (hold posted); REVERTED → FAILED (hold voided); DROPPED or REPLACED, or still not mined
 * STUCK_AFTER_MS after the broadcast → REQUIRES_RECONCILIATION (the hold stays until an operator
 * resolves it). Anything else: WAITING.
 */
export async function followWithdrawal(deps: MoneyDeps, withdrawalId: string): Promise<StepOutcome> {
  return deps.db.$transaction(async (tx) => {
    const w = await lockWithdrawal(tx, withdrawalId);
    if (!w || w.status !== 'BROADCAST' || !w.txHash) return 'SKIPPED';
    const network = await tx.network.findUniqueOrThrow({ where: { id: w.networkId } });
    const { txHash, seen } = await followedTransaction(adapterFor(network.kind, tx), networkRef(network), w.txHash);
    const now = deps.clock.now();
    if (seen?.status === 'MINED' && seen.confirmations >= network.requiredConfirmations) {
      // The coins left; the ledger posts the hold, which it refuses while the account is frozen: the
      // confirmation waits for the unfreeze (the hold keeps the amount unavailable meanwhile).
      await lockAccountsForMove(tx, [w.accountId]);
      const account = await tx.account.findUnique({ where: { id: w.accountId }, select: { status: true } });
      if (account?.status === 'FROZEN') return 'WAITING';
      await confirm(tx, deps, w, txHash, now);
      await auditAs(tx, deps, systemActor(), confirmedAudit(w, txHash, seen));
      return 'CONFIRMED';
    }
    if (seen?.status === 'REVERTED') {
      await close(tx, deps, systemActor(), w, { status: 'FAILED', reason: `REVERTED: the transaction ${txHash} reverted on the chain.` }, now);
      return 'FAILED';
    }
    const gone = !seen || seen.status === 'DROPPED' || seen.status === 'REPLACED';
    const stuck = w.broadcastAt !== null && now.getTime() - w.broadcastAt.getTime() >= STUCK_AFTER_MS && seen?.status !== 'MINED';
    if (gone || stuck) {
      const why = !seen ? 'UNKNOWN_TO_CHAIN' : gone ? seen.status : 'STUCK';
      await tx.withdrawal.update({
        where: { id: w.id },
        data: { status: 'REQUIRES_RECONCILIATION', failureReason: `${why}: the outcome on the chain is unknown`, updatedAt: now },
      });
      await emit(tx, deps, w.organizationId, 'withdrawal.requires_reconciliation', { WithdrawalId: w.id });
      await auditAs(tx, deps, systemActor(), {
        organizationId: w.organizationId,
        entityType: 'Withdrawal',
        entityId: w.id,
        action: 'withdrawal.requires_reconciliation',
        before: { status: 'BROADCAST' },
        after: { status: 'REQUIRES_RECONCILIATION', chainStatus: seen?.status ?? null, replacedByTxHash: seen?.replacedByTxHash ?? null, why },
      });
      return 'REQUIRES_RECONCILIATION';
    }
    return 'WAITING';
  }, TX_OPTIONS);
}

/** The audit entry of a confirmation by the chain: `txHash` mined (the withdrawal's own, or the replacement followed). */
function confirmedAudit(w: Pick<Withdrawal, 'id' | 'organizationId' | 'txHash'>, txHash: string, seen: ObservedTransfer): AuditInput {
  return {
    organizationId: w.organizationId,
    entityType: 'Withdrawal',
    entityId: w.id,
    action: 'withdrawal.confirmed',
    before: { status: 'BROADCAST', txHash: w.txHash },
    after: {
      status: 'CONFIRMED',
      txHash,
      confirmations: seen.confirmations,
      ...(txHash !== w.txHash ? { replaced: w.txHash } : {}),
      ...(seen.feePaid !== undefined ? { networkFeePaid: seen.feePaid.toString() } : {}),
    },
  };
}

/**
 * The transaction a withdrawal's outcome now depends on: its own, or, when the platform replaced it
 * with higher fees (fee bumps, docs/chains.md "Stuck transactions"), the last replacement of that
 * line, as the chain reports it. Whichever of the nonce's transactions is mined is the one followed;
 * a replacement by anyone else stops the walk (REPLACED: reconciliation).
 */
async function followedTransaction(adapter: NetworkAdapter, ref: NetworkRef, first: string): Promise<{ txHash: string; seen: ObservedTransfer | null }> {
  const { links } = await replacementChain(adapter, ref, first);
  let i = 0;
  while (i + 1 < links.length && links[i]!.seen?.status === 'REPLACED' && links[i]!.seen?.feeBump) i++;
  return links[i]!;
}

/**
 * Follows the BROADCAST withdrawals of one network (at most `limit`): run by the `chain.sync` job
 * of every change of that chain (each produced or mined block), so a withdrawal confirms at the
 * block that gives it its confirmations, not at the next minute's sweep.
 *
 * Set-based (issue 22): one read of the chain for all of them (the adapter's `transactions`); those
 * whose own transaction is mined with the network's confirmations are confirmed together
 * (confirmWithdrawalGroup: one transaction); those still pending and not stuck, or mined with too
 * few confirmations, wait without a transaction; every other case (reverted, dropped, replaced,
 * unknown, stuck) is followed alone (followWithdrawal), as before.
 */
export async function followNetworkWithdrawals(
  deps: MoneyDeps,
  networkId: string,
  opts: { limit?: number } = {},
): Promise<Partial<Record<StepOutcome, number>>> {
  const counts: Partial<Record<StepOutcome, number>> = {};
  const count = (outcome: StepOutcome, n = 1) => (counts[outcome] = (counts[outcome] ?? 0) + n);
  // Raw, straight on the pool (issue 22: every chain.sync of the network reads them).
  const reads: RawDb = poolRawDb(deps.db) ?? deps.db;
  const broadcast = await reads.$queryRaw<{ id: string; txHash: string | null; broadcastAt: Date | null }[]>`
    SELECT "id"::text AS "id", "txHash", "broadcastAt" FROM "Withdrawal"
     WHERE "status" = 'BROADCAST' AND "networkId" = ${networkId}::uuid ORDER BY "broadcastAt" LIMIT ${opts.limit ?? 500}`;
  if (!broadcast.length) return counts;
  const [network] = await networksOf(reads, [networkId]);
  if (!network) throw new Error(`network ${networkId} not found`);
  const seen = await observedTransactions(
    adapterFor(network.kind, deps.db),
    networkRef(network),
    broadcast.map((w) => w.txHash!),
  );
  const now = deps.clock.now();
  const confirmable: string[] = [];
  const alone: string[] = [];
  for (const w of broadcast) {
    const t = seen.get(w.txHash!);
    const stuck = w.broadcastAt !== null && now.getTime() - w.broadcastAt.getTime() >= STUCK_AFTER_MS;
    if (t?.status === 'MINED' && t.confirmations >= network.requiredConfirmations) confirmable.push(w.id);
    else if (t?.status === 'MINED' || (t?.status === 'PENDING' && !stuck)) count('WAITING');
    else alone.push(w.id);
  }
  for (const [id, outcome] of await confirmWithdrawalGroup(deps, network, confirmable)) count(outcome);
  for (const id of alone) count(await followWithdrawal(deps, id));
  return counts;
}

async function observedTransactions(adapter: NetworkAdapter, ref: NetworkRef, txHashes: readonly string[]): Promise<Map<string, ObservedTransfer>> {
  if (adapter.transactions) return adapter.transactions(ref, txHashes);
  const out = new Map<string, ObservedTransfer>();
  for (const h of txHashes) {
    const t = await adapter.transaction(ref, h);
    if (t) out.set(h, t);
  }
  return out;
}

/**
 * Confirms, in one database transaction, the BROADCAST withdrawals whose own transaction is mined
 * with the network's confirmations (issue 22): the rows locked in id order and re-read, the chain
 * read again under those locks (a reorganization meanwhile leaves a withdrawal WAITING), the
 * accounts' ledger locks taken and their status read at once (a FROZEN account's withdrawal waits,
 * as followWithdrawal waits), then one update of the rows, one insert of the events and one of the
 * audit entries, and last every hold posted with one ledger call (each once: withdrawal:<id>:post).
 * A throw (a refused posting, a database error) rolls the group back; each withdrawal is
 * then followed alone (followWithdrawal), so one bad one fails alone.
 */
/** What a confirmation group reads of a withdrawal it locks. */
type ConfirmingRow = Pick<Withdrawal, 'id' | 'organizationId' | 'accountId' | 'holdId' | 'status' | 'txHash'>;

async function confirmWithdrawalGroup(deps: MoneyDeps, network: Network, ids: string[]): Promise<Map<string, StepOutcome>> {
  const out = new Map<string, StepOutcome>();
  if (!ids.length) return out;
  try {
    // Raw statements only, straight on the pool (retryingRawTransaction: no Prisma query engine, issue 22).
    return await retryingRawTransaction(deps.db, async (tx) => {
      // Locked in id order and read in the same statement (FOR UPDATE answers each row as it is once locked).
      const rows = await tx.$queryRaw<ConfirmingRow[]>`
            SELECT "id"::text AS "id", "organizationId"::text AS "organizationId", "accountId"::text AS "accountId", "holdId"::text AS "holdId",
                   "status"::text AS "status", "txHash"
              FROM "Withdrawal" WHERE "id" = ANY(${[...ids].sort()}::uuid[]) ORDER BY "id" FOR UPDATE`;
      const still = rows.filter((w) => w.status === 'BROADCAST' && w.txHash);
      for (const id of ids) out.set(id, 'SKIPPED');
      if (!still.length) return out;
      // The chain read again once the rows are locked: on the client (the chain's rows are not this
      // transaction's; a statement here or there sees the same committed chain, READ COMMITTED).
      const seen = await observedTransactions(
        adapterFor(network.kind, deps.db),
        networkRef(network),
        still.map((w) => w.txHash!),
      );
      const mined = still.filter((w) => {
        const t = seen.get(w.txHash!);
        const ok = t?.status === 'MINED' && t.confirmations >= network.requiredConfirmations;
        if (!ok) out.set(w.id, 'WAITING');
        return ok;
      });
      if (!mined.length) return out;
      // The coins left; the ledger posts the hold, which it refuses while the account is frozen: the
      // confirmation waits for the unfreeze (the hold keeps the amount unavailable meanwhile).
      await lockAccountsForMove(
        tx,
        mined.map((w) => w.accountId),
      );
      const frozen = new Set(
        (
          await tx.$queryRaw<{ id: string }[]>`
                SELECT "id"::text AS "id" FROM "Account" WHERE "id" = ANY(${[...new Set(mined.map((w) => w.accountId))]}::uuid[]) AND "status" = 'FROZEN'`
        ).map((a) => a.id),
      );
      const now = deps.clock.now();
      const confirmed = mined.filter((w) => {
        if (frozen.has(w.accountId)) out.set(w.id, 'WAITING');
        return !frozen.has(w.accountId);
      });
      if (!confirmed.length) return out;
      await tx.$executeRaw`
            UPDATE "Withdrawal" SET "status" = 'CONFIRMED', "failureReason" = NULL, "confirmedAt" = ${now}, "closedAt" = ${now}, "updatedAt" = ${now}
             WHERE "id" = ANY(${confirmed.map((w) => w.id)}::uuid[])`;
      await emitEvents(
        tx,
        deps,
        confirmed.map((w) => ({
          organizationId: w.organizationId,
          event: webhookEvent('withdrawal.confirmed', { WithdrawalId: w.id, TechnicalReference: w.txHash! }),
        })),
      );
      await auditAll(
        tx,
        deps,
        systemActor(),
        confirmed.map((w) => confirmedAudit(w, w.txHash!, seen.get(w.txHash!)!)),
      );
      // The holds posted last, just before the commit (issue 22, session 10): ledger_post locks the
      // accounts' balance rows and the asset-network's CHAIN_CLEARING row, which every request
      // group of the asset-network locks too, until the commit; the rows, events and audit entries
      // are written before it, so the request groups wait for one statement and the commit, not four.
      // A refused posting throws: the group rolls back whole (and each withdrawal is followed alone).
      const posted = await postHolds(
        tx,
        confirmed.map((w) => ({ holdId: w.holdId, idempotencyKey: `withdrawal:${w.id}:post`, nature: 'withdrawal.confirmed', postedAt: now })),
      );
      const refused = posted.find((p) => p instanceof Error);
      if (refused) throw refused;
      for (const w of confirmed) out.set(w.id, 'CONFIRMED');
      return out;
    });
  } catch {
    out.clear();
    for (const id of ids) out.set(id, await followWithdrawal(deps, id));
    return out;
  }
}

/**
 * The withdrawal.sweep job (scheduled every minute, the safety net; tests and the bench run it directly): retries
 * the due custodial withdrawals (BROADCAST_FAILED, APPROVED deferred or left by a failed job) and
 * follows the BROADCAST ones, at most `limit` of each.
 */
export async function sweepWithdrawals(deps: MoneyDeps, opts: { organizationId?: string; limit?: number } = {}): Promise<Record<StepOutcome, number>> {
  const counts = {
    BROADCAST: 0,
    DEFERRED: 0,
    BROADCAST_FAILED: 0,
    FAILED: 0,
    REJECTED: 0,
    CONFIRMED: 0,
    REQUIRES_RECONCILIATION: 0,
    WAITING: 0,
    SKIPPED: 0,
  } as Record<StepOutcome, number>;
  const scope = opts.organizationId ? { organizationId: opts.organizationId } : {};
  const take = opts.limit ?? 500;
  const now = deps.clock.now();
  // Due retries: BROADCAST_FAILED, and APPROVED ones deferred for want of network resources, at their time;
  // an APPROVED one still waiting LOST_JOB_AFTER_MS after its approval (its broadcast job failed for good).
  const due = await deps.db.withdrawal.findMany({
    where: {
      ...scope,
      custodyMode: 'CUSTODIAL',
      OR: [
        { status: { in: ['BROADCAST_FAILED', 'APPROVED'] }, nextAttemptAt: { lte: now } },
        { status: 'APPROVED', nextAttemptAt: null, approvedAt: { lte: new Date(now.getTime() - LOST_JOB_AFTER_MS) } },
      ],
    },
    select: { id: true },
    orderBy: { nextAttemptAt: 'asc' },
    take,
  });
  for (const { id } of due) counts[await broadcastWithdrawal(deps, id)]++;
  const broadcast = await deps.db.withdrawal.findMany({
    where: { ...scope, status: 'BROADCAST' },
    select: { id: true },
    orderBy: { broadcastAt: 'asc' },
    take,
  });
  for (const { id } of broadcast) counts[await followWithdrawal(deps, id)]++;
  return counts;
}

// ------------------------------------------------------------------------------------------------
// For signing (signing.ts)

/** The exact transfer a SELF_CUSTODY withdrawal needs signed (nonce = the withdrawal id). */
export async function selfCustodyPayload(db: Db, w: Withdrawal): Promise<TransferPayload> {
  if (w.custodyMode !== 'SELF_CUSTODY' || !w.walletId || w.sourceIndex === null || !w.fromAddress)
    throw invalidState('Only a SELF_CUSTODY withdrawal is signed by the integrator.');
  const wallet = await db.wallet.findUniqueOrThrow({ where: { id: w.walletId } });
  const fromPublicKey = derivePublicKey(wallet.publicKey, w.sourceIndex);
  // Compared case-insensitively: EVM addresses are stored EIP-55 checksummed.
  if (addressOf(fromPublicKey) !== w.fromAddress.toLowerCase()) throw new Error('the source address does not derive from the wallet');
  return {
    networkId: w.networkId,
    assetNetworkId: w.assetNetworkId,
    fromAddress: w.fromAddress,
    fromPublicKey,
    toAddress: w.toAddress,
    amount: numericToAmount(w.amount).toString(),
    nonce: w.id,
  };
}

export { LedgerError, type Amount };
