import { numericToAmount, amountToNumeric, positiveAmountText } from '../money';
import { z } from 'zod';
import { fromPrisma } from 'pg-boss';
import type { Context } from '../context';
import type { Db } from '../db/prisma';
import type { Prisma } from '../generated/prisma/client';
import { DomainError, fieldError, invalidState, notFound, uniqueConflict } from '../errors';
import { idempotent } from '../idempotency';
import { assertId, isUniqueViolation, isUuid, uuidv7 } from '../ids';
import { assertOrganization } from '../tenancy/access';
import { allocateForNewIntentInTx, reserveDerivationIndex } from '../custody/addresses';
import { auditAll, auditAs, type Actor, type AuditInput } from '../audit/audit';
import { emit, emitEvents } from '../webhooks/outbox';
import { webhookEvent, type WebhookEventData } from '../webhooks/events';
import { lockTransactionRow, requestActor, TX_OPTIONS, type MoneyDeps } from '../kernel/service';
import { nowFor } from '../chains/sandbox/clock';
import { evaluateIntent } from './funding';
import { EXPIRES_IN_SECONDS } from './rules';
import { applyReleaseRuleInTx, releaseRuleInput } from '../release/release-rules';
import { EXPIRE_QUEUE, EXPIRE_SWEEP_QUEUE } from '../kernel/queues';

/**
 * Payment intents (BTCPay's invoices): an amount of one asset-network to be paid to a deposit
 * address before ExpiresAt, for a Transaction that holds the funds in escrow once paid.
 * States and rules: docs/money-in.md.
 */

export interface ExpireJob {
  paymentIntentId: string;
}

const optionalId = z.string().nullish();

export const createPaymentIntentInput = z
  .object({
    applicationId: optionalId,
    environmentId: optionalId,
    assetNetworkId: z.string(),
    amount: positiveAmountText,
    beneficiaryAccountId: z.string(),
    payerAccountId: optionalId,
    expiresInSeconds: z
      .number()
      .int()
      .min(EXPIRES_IN_SECONDS.min, `must be at least ${EXPIRES_IN_SECONDS.min}`)
      .max(EXPIRES_IN_SECONDS.max, `must be at most ${EXPIRES_IN_SECONDS.max} (30 days)`)
      .nullish(),
    expiresAt: z.date().nullish(),
    reference: z.string().trim().min(1, 'must not be empty').max(200).nullish(),
    walletId: optionalId,
    metadata: z
      .record(z.string(), z.unknown())
      .refine((m) => JSON.stringify(m).length <= 8192, 'must be at most 8 KiB of JSON')
      .nullish(),
    // The transaction's release rule (docs/release-rules.md), set in the same database transaction.
    releaseRule: z.lazy(() => releaseRuleInput).nullish(),
    releaseRuleTemplateId: optionalId,
  })
  .refine((i) => !(i.expiresInSeconds != null && i.expiresAt != null), { message: 'give expiresInSeconds or expiresAt, not both', path: ['expiresAt'] })
  .refine((i) => !(i.releaseRule != null && i.releaseRuleTemplateId != null), {
    message: 'give releaseRule or releaseRuleTemplateId, not both',
    path: ['releaseRuleTemplateId'],
  });
export type CreatePaymentIntentInput = z.infer<typeof createPaymentIntentInput>;

export const intentInclude = {
  transaction: { include: { participants: { orderBy: { role: 'asc' } } } },
  deposits: { select: { id: true }, orderBy: { id: 'asc' } },
} as const satisfies Prisma.PaymentIntentInclude;
export type IntentRow = Prisma.PaymentIntentGetPayload<{ include: typeof intentInclude }>;

/** The where-filter of what the principal may see: its organization; an API key, its own environment. */
export function visibleMoneyWhere(ctx: Context): { organizationId?: string; environmentId?: string } | null {
  const p = ctx.principal;
  if (p?.type === 'operator') return {};
  if (p?.type === 'member') return { organizationId: p.organizationId };
  if (p?.type === 'apiKey') return { organizationId: p.organizationId, environmentId: p.environmentId };
  return null;
}

export async function loadPaymentIntent(ctx: Context, idArg: unknown, db: Db = ctx.deps.db): Promise<IntentRow> {
  const id = assertId(idArg, 'PaymentIntent');
  const visible = visibleMoneyWhere(ctx);
  if (!visible) throw notFound('PaymentIntent');
  const row = await db.paymentIntent.findFirst({ where: { id, ...visible }, include: intentInclude });
  if (!row) throw notFound('PaymentIntent');
  return row;
}

/** The application and environment the intent is for: an API key's own, or a member's choice. */
async function resolveEnvironment(ctx: Context, tx: Db, organizationId: string, input: CreatePaymentIntentInput) {
  const p = ctx.principal;
  let applicationId: string;
  let environmentId: string;
  if (p?.type === 'apiKey') {
    if (input.applicationId != null && input.applicationId !== p.applicationId)
      throw fieldError('applicationId', "must be the API key's application or omitted");
    if (input.environmentId != null && input.environmentId !== p.environmentId)
      throw fieldError('environmentId', "must be the API key's environment or omitted");
    applicationId = p.applicationId;
    environmentId = p.environmentId;
  } else {
    if (input.applicationId == null) throw fieldError('applicationId', 'is required for a member');
    if (input.environmentId == null) throw fieldError('environmentId', 'is required for a member');
    applicationId = input.applicationId;
    environmentId = input.environmentId;
  }
  const env =
    isUuid(environmentId) && isUuid(applicationId)
      ? await tx.environment.findFirst({ where: { id: environmentId, applicationId, organizationId }, include: { application: true } })
      : null;
  if (!env) throw fieldError('environmentId', 'must be an environment of the application, in the organization');
  if (env.application.status !== 'ACTIVE') throw invalidState(`The application is ${env.application.status.toLowerCase()}.`);
  return { applicationId: env.applicationId, environmentId: env.id, environmentType: env.type };
}

async function checkAccount(
  tx: Db,
  field: 'beneficiaryAccountId' | 'payerAccountId',
  id: string,
  scope: { organizationId: string; applicationId: string; environmentType: 'SANDBOX' | 'PRODUCTION' },
) {
  const account = isUuid(id)
    ? await tx.account.findFirst({
        where: { id, organizationId: scope.organizationId },
        include: { authorizations: { where: { applicationId: scope.applicationId }, select: { applicationId: true } } },
      })
    : null;
  if (!account) throw fieldError(field, 'must be an account of the organization');
  if (account.mode !== scope.environmentType) throw fieldError(field, `must be a ${scope.environmentType} account (the environment's mode)`);
  if (!account.authorizations.length) throw fieldError(field, 'must be an account authorized for the application');
  if (account.status !== 'ACTIVE')
    throw invalidState(`The ${field === 'beneficiaryAccountId' ? 'beneficiary' : 'payer'} account is ${account.status.toLowerCase()}.`);
  return account.id;
}

/**
 * CreatePaymentIntent: the Transaction (AWAITING_FUNDS, with its participants) and the intent, in
 * one database transaction with transaction.created, payment_intent.created, the audit entries, the
 * expiry job, and (with walletId) the deposit address and deposit.address_generated. With an
 * Idempotency-Key the same request answers the same intent.
 */
export async function createPaymentIntent(
  ctx: Context,
  organizationIdArg: string,
  input: CreatePaymentIntentInput,
  idempotencyKey: string | null | undefined,
  opts: { reread?: boolean } = {},
): Promise<IntentRow | { id: string }> {
  const organizationId = assertId(organizationIdArg, 'Organization');
  assertOrganization(ctx, organizationId, 'Organization');
  const p = ctx.principal;
  const deps = ctx.deps;
  const actor = requestActor(ctx);
  const scope = `createPaymentIntent:${organizationId}:${p?.type === 'apiKey' ? `app:${p.applicationId}` : p?.type === 'member' ? `member:${p.memberId}` : 'other'}`;
  const request = {
    organizationId,
    input: {
      ...input,
      expiresAt: input.expiresAt?.toISOString() ?? null,
      releaseRule: input.releaseRule ? JSON.parse(JSON.stringify(input.releaseRule)) : null,
    },
  };
  let created: { id: string };
  try {
    // The deposit address's derivation index, reserved before the transaction: the wallet's row is
    // not held until the intent commits (docs/decisions.md, issue 22).
    const reserved = input.walletId != null ? await reserveDerivationIndex(deps.db, organizationId, input.walletId) : null;
    created = await deps.db.$transaction(
      (tx) =>
        idempotent(tx, ctx, { scope, key: idempotencyKey, request }, async () => {
          const env = await resolveEnvironment(ctx, tx, organizationId, input);
          const an = isUuid(input.assetNetworkId)
            ? await tx.assetNetwork.findUnique({ where: { id: input.assetNetworkId }, include: { network: true } })
            : null;
          if (!an) throw fieldError('assetNetworkId', 'must be an asset-network of the catalog');
          if (an.network.environmentType !== env.environmentType)
            throw fieldError('assetNetworkId', `must be on a ${env.environmentType} network (the environment's type)`);
          if (an.status !== 'ENABLED') throw invalidState(`The asset-network is ${an.status}: it takes no new payment intents.`);
          const amount = numericToAmount(input.amount);
          if (amount < numericToAmount(an.minimumDeposit))
            throw fieldError('amount', `must be at least the asset-network's minimum deposit (${numericToAmount(an.minimumDeposit)})`);
          const scopeOf = { organizationId, applicationId: env.applicationId, environmentType: env.environmentType };
          const beneficiaryAccountId = await checkAccount(tx, 'beneficiaryAccountId', input.beneficiaryAccountId, scopeOf);
          const payerAccountId = input.payerAccountId != null ? await checkAccount(tx, 'payerAccountId', input.payerAccountId, scopeOf) : null;
          if (payerAccountId === beneficiaryAccountId) throw fieldError('payerAccountId', 'must differ from the beneficiary account');
          const now = await nowFor(tx, deps.clock, organizationId, env.environmentType);
          let expiresAt: Date;
          if (input.expiresAt != null) {
            const seconds = (input.expiresAt.getTime() - now.getTime()) / 1000;
            if (seconds < EXPIRES_IN_SECONDS.min || seconds > EXPIRES_IN_SECONDS.max)
              throw fieldError('expiresAt', `must be between ${EXPIRES_IN_SECONDS.min} seconds and 30 days from now (${now.toISOString()})`);
            expiresAt = input.expiresAt;
          } else expiresAt = new Date(now.getTime() + (input.expiresInSeconds ?? EXPIRES_IN_SECONDS.default) * 1000);
          const reference = input.reference ?? null;
          if (
            reference !== null &&
            (await tx.paymentIntent.findUnique({ where: { organizationId_reference: { organizationId, reference } }, select: { id: true } }))
          )
            throw new DomainError('CONFLICT', 'The organization already has a payment intent with this reference.');
          if (input.walletId != null && !reserved) throw fieldError('walletId', 'must be a wallet of the organization');

          const createdAt = deps.clock.now();
          const transactionId = uuidv7(createdAt.getTime());
          const intentId = uuidv7(createdAt.getTime());
          const participants = [
            { accountId: beneficiaryAccountId, role: 'BENEFICIARY' as const },
            ...(payerAccountId ? [{ accountId: payerAccountId, role: 'PAYER' as const }] : []),
          ];
          // createMany: an insert without the read-back a create (or a nested create) adds (issue 22).
          await tx.transaction.createMany({
            data: {
              id: transactionId,
              organizationId,
              applicationId: env.applicationId,
              environmentId: env.environmentId,
              environmentType: env.environmentType,
              assetNetworkId: an.id,
              amount: amountToNumeric(amount),
              createdAt,
            },
          });
          await tx.transactionParticipant.createMany({ data: participants.map((x) => ({ transactionId, ...x })) });
          await tx.paymentIntent.createMany({
            data: {
              id: intentId,
              organizationId,
              applicationId: env.applicationId,
              environmentId: env.environmentId,
              environmentType: env.environmentType,
              transactionId,
              assetNetworkId: an.id,
              amount: amountToNumeric(amount),
              reference,
              metadata: (input.metadata ?? undefined) as never,
              expiresAt,
              createdAt,
            },
          });
          // The events and audit entries are written last, each kind in one statement (issue 22).
          const events: WebhookEventData[] = [
            webhookEvent('transaction.created', {
              TransactionId: transactionId,
              ApplicationId: env.applicationId,
              ParticipantAccountIds: participants.map((x) => x.accountId),
            }),
            webhookEvent('payment_intent.created', { PaymentIntentId: intentId, TransactionId: transactionId, Amount: amount, ExpiresAt: expiresAt }),
          ];
          const audits: AuditInput[] = [
            {
              organizationId,
              entityType: 'Transaction',
              entityId: transactionId,
              action: 'transaction.created',
              after: { status: 'AWAITING_FUNDS', amount: amountToNumeric(amount), assetNetworkId: an.id, applicationId: env.applicationId, participants },
            },
            {
              organizationId,
              entityType: 'PaymentIntent',
              entityId: intentId,
              action: 'payment_intent.created',
              after: {
                status: 'AWAITING_PAYMENT',
                transactionId,
                amount: amountToNumeric(amount),
                expiresAt: expiresAt.toISOString(),
                reference,
                walletId: input.walletId ?? null,
              },
            },
          ];
          if (input.releaseRule != null || input.releaseRuleTemplateId != null) {
            // The rule's audit entry comes after the intent's (audit entries read back in writing order).
            await auditAll(tx, deps, actor, audits.splice(0));
            await applyReleaseRuleInTx(tx, deps, actor, transactionId, input.releaseRule ?? { templateId: input.releaseRuleTemplateId }, {
              now,
              field: (path) => (input.releaseRule != null ? `releaseRule.${path}` : path === 'templateId' ? 'releaseRuleTemplateId' : path),
            });
          }
          // The expiry job, due when the intent expires (by the real clock: a sandbox clock advanced
          // later is caught by the sweep).
          if (deps.boss)
            await deps.boss.send(EXPIRE_QUEUE, { paymentIntentId: intentId } satisfies ExpireJob, {
              db: fromPrisma(tx as never),
              id: intentId,
              startAfter: new Date(createdAt.getTime() + (expiresAt.getTime() - now.getTime())),
            });
          // Last: the address at the reserved index; nothing is read again.
          if (reserved) {
            const made = await allocateForNewIntentInTx(
              tx,
              deps,
              { organizationId, applicationId: env.applicationId, environmentId: env.environmentId, paymentIntentId: intentId },
              reserved,
              an,
            );
            events.push(made.event);
            audits.push(made.audit);
          }
          await emitEvents(
            tx,
            deps,
            events.map((event) => ({ organizationId, event })),
          );
          await auditAll(tx, deps, actor, audits);
          return { id: intentId };
        }),
      TX_OPTIONS,
    );
  } catch (e) {
    // By the constraint it names: a reference taken meanwhile, or the deposit address's derivation index or address (issue 22).
    if (isUniqueViolation(e)) throw uniqueConflict(e, 'The payment intent clashes with one created meanwhile; retry.');
    throw e;
  }
  // The caller needing only the id (REST: 201 with a Location) gets it without a re-read.
  return opts.reread === false ? { id: created.id } : loadPaymentIntent(ctx, created.id);
}

/**
 * Cancels an intent and its transaction, only while nothing was detected (intent AWAITING_PAYMENT,
 * transaction AWAITING_FUNDS, not frozen): payment_intent.cancelled and transaction.cancelled.
 * A deposit arriving later is late: credited to SUSPENSE.
 */
export async function cancelIntentInTx(tx: Db, deps: MoneyDeps, actor: Actor, transactionId: string, reason: string): Promise<DomainError | null> {
  await lockTransactionRow(tx, transactionId);
  const t = await tx.transaction.findUniqueOrThrow({ where: { id: transactionId }, include: { paymentIntent: true } });
  const intent = t.paymentIntent;
  // Expired by now? Then expiry wins (and the cancel is refused below).
  if (intent && (intent.status === 'AWAITING_PAYMENT' || intent.status === 'PROCESSING'))
    await evaluateIntent(tx, deps, actor, intent.id, await nowFor(tx, deps.clock, t.organizationId, t.environmentType));
  const fresh = await tx.transaction.findUniqueOrThrow({ where: { id: transactionId }, include: { paymentIntent: true } });
  const pi = fresh.paymentIntent;
  // Refusals are answered, not thrown: an expiry materialized above still commits.
  if (fresh.status !== 'AWAITING_FUNDS') return invalidState(`A transaction in status ${fresh.status} cannot be cancelled.`);
  if (pi && pi.status !== 'AWAITING_PAYMENT')
    return invalidState(`Its payment intent is ${pi.status}: once a deposit is detected it can no longer be cancelled (it expires if unfunded).`);
  if (fresh.frozen) return invalidState('A frozen transaction cannot be cancelled; unfreeze it first.');
  const now = await nowFor(tx, deps.clock, fresh.organizationId, fresh.environmentType);
  await tx.transaction.update({ where: { id: transactionId }, data: { status: 'CANCELLED', cancelReason: reason, cancelledAt: now } });
  if (pi) {
    await tx.paymentIntent.update({ where: { id: pi.id }, data: { status: 'CANCELLED', cancelledAt: now } });
    await emit(tx, deps, fresh.organizationId, 'payment_intent.cancelled', { PaymentIntentId: pi.id });
    await auditAs(tx, deps, actor, {
      organizationId: fresh.organizationId,
      entityType: 'PaymentIntent',
      entityId: pi.id,
      action: 'payment_intent.cancelled',
      before: { status: pi.status },
      after: { status: 'CANCELLED' },
    });
  }
  await emit(tx, deps, fresh.organizationId, 'transaction.cancelled', { TransactionId: transactionId, Reason: reason });
  await auditAs(tx, deps, actor, {
    organizationId: fresh.organizationId,
    entityType: 'Transaction',
    entityId: transactionId,
    action: 'transaction.cancelled',
    before: { status: fresh.status },
    after: { status: 'CANCELLED', reason },
  });
  return null;
}

export const cancelReason = z.string().trim().min(1, 'must not be empty').max(1000);
export const DEFAULT_CANCEL_REASON = 'Cancelled by the integrator';

export async function cancelPaymentIntent(ctx: Context, idArg: unknown, reason: string | null | undefined) {
  const intent = await loadPaymentIntent(ctx, idArg);
  const refused = await ctx.deps.db.$transaction(
    (tx) => cancelIntentInTx(tx, ctx.deps, requestActor(ctx), intent.transactionId, reason ?? DEFAULT_CANCEL_REASON),
    TX_OPTIONS,
  );
  if (refused) throw refused;
  return loadPaymentIntent(ctx, intent.id);
}

/**
 * Expires one intent if it is due (by its environment's clock) and nothing is undecided: the
 * handler of the expiry job and of the sweep. Safe to run at any time, twice, or concurrently.
 */
export async function expireIfDue(
  deps: MoneyDeps,
  paymentIntentId: string,
  actor: Actor = { principal: null, requestId: 'job:payment-intent.expire' },
): Promise<boolean> {
  return deps.db.$transaction(async (tx) => {
    const head = await tx.paymentIntent.findUnique({ where: { id: paymentIntentId }, select: { transactionId: true } });
    if (!head) return false;
    await lockTransactionRow(tx, head.transactionId);
    const intent = await tx.paymentIntent.findUniqueOrThrow({ where: { id: paymentIntentId } });
    if (intent.status !== 'AWAITING_PAYMENT' && intent.status !== 'PROCESSING') return false;
    const now = await nowFor(tx, deps.clock, intent.organizationId, intent.environmentType);
    if (now < intent.expiresAt) return false;
    const after = await evaluateIntent(tx, deps, actor, intent.id, now);
    return after.status === 'EXPIRED';
  }, TX_OPTIONS);
}

/**
 * The expiry sweep: every intent past its ExpiresAt (a sandbox intent by its organization's
 * sandbox clock) with nothing undecided is expired, each in its own transaction. Run by a
 * periodic job, by the expiry jobs' handler, and after a sandbox clock advance. Answers how many
 * intents it expired.
 */
export async function expireDuePaymentIntents(deps: MoneyDeps, opts: { organizationId?: string; batch?: number } = {}): Promise<number> {
  const batch = opts.batch ?? 500;
  let expired = 0;
  let after = '00000000-0000-0000-0000-000000000000';
  for (;;) {
    const now = deps.clock.now();
    const due = await deps.db.$queryRaw<{ id: string }[]>`
      SELECT pi."id" FROM "PaymentIntent" pi
      LEFT JOIN "SandboxClock" sc ON sc."organizationId" = pi."organizationId" AND pi."environmentType" = 'SANDBOX'
      WHERE pi."status" IN ('AWAITING_PAYMENT', 'PROCESSING')
        AND pi."expiresAt" <= ${now}::timestamptz + make_interval(secs => COALESCE(sc."offsetMs", 0) / 1000.0)
        AND pi."id" > ${after}::uuid
        AND (${opts.organizationId ?? null}::uuid IS NULL OR pi."organizationId" = ${opts.organizationId ?? null}::uuid)
        AND NOT EXISTS (
          SELECT 1 FROM "Deposit" d
          WHERE d."paymentIntentId" = pi."id" AND NOT d."late" AND d."status" IN ('DETECTED', 'CONFIRMING', 'UNDER_REVIEW', 'REORG_FROZEN')
        )
      ORDER BY pi."id" LIMIT ${batch}`;
    for (const { id } of due) if (await expireIfDue(deps, id, { principal: null, requestId: 'job:payment-intent.expire-sweep' })) expired++;
    if (due.length < batch) return expired;
    after = due[due.length - 1]!.id;
  }
}
