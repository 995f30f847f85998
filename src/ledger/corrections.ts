import { positiveAmountText } from '../money';
import { z } from 'zod';
import type { Context } from '../context';
import type { LedgerCorrection } from '../generated/prisma/client';
import { DomainError, fieldError, notFound } from '../errors';
import { assertId, isUuid, uuidv7 } from '../ids';
import { idempotent } from '../idempotency';
import { auditAs } from '../audit/audit';
import { requestActor, TX_OPTIONS } from '../kernel/service';
import { LEDGER_ACCOUNT_KINDS, LedgerError, postLedgerTransaction, type LedgerAccountKind, type LedgerAccountRef, type PostingLine } from './ledger';

/**
 * Ledger corrections (docs/ledger.md, "Ledger corrections"): a platform operator records a
 * balanced correcting ledger transaction with a reason; past entries are never edited (the
 * append-only triggers forbid it anyway). One database transaction holds the posting (nature
 * ledger.correction, referenceType LedgerCorrection), the LedgerCorrection record and the audit entry.
 */

const SYSTEM_KINDS: readonly LedgerAccountKind[] = ['CHAIN_CLEARING', 'FEES', 'PLATFORM_REVENUE'];
/** Owned kinds: their owner must exist in the organization (a correction never creates an account, a transaction or an allocation). */
const OWNER_NAMES: Partial<Record<LedgerAccountKind, string>> = { CUSTOMER: 'an Account', ESCROW: 'a Transaction', RETAINED: 'a settlement allocation' };

const uuid = (what: string) =>
  z
    .string()
    .refine(isUuid, `must be ${what} (uuid)`)
    .transform((s) => s.toLowerCase());

export const recordCorrectionInput = z
  .object({
    reason: z.string().trim().min(1, 'must not be empty').max(1000),
    organizationId: uuid('an organization id').nullish(),
    correctsLedgerTransactionId: uuid('a ledger transaction id').nullish(),
    idempotencyKey: z
      .string()
      .min(1)
      .max(200)
      .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces')
      .nullish(),
    lines: z
      .array(
        z
          .object({
            account: z
              .object({
                kind: z.enum(LEDGER_ACCOUNT_KINDS as [LedgerAccountKind, ...LedgerAccountKind[]]),
                ownerId: uuid('an owner id').nullish(),
                assetNetworkId: uuid('an asset-network id'),
              })
              .strict(),
            direction: z.enum(['DEBIT', 'CREDIT']),
            amount: positiveAmountText,
          })
          .strict(),
      )
      .min(2, 'a correction needs at least two lines')
      .max(100),
  })
  .strict();
export type RecordCorrectionInput = z.input<typeof recordCorrectionInput>;

export interface CorrectionLine {
  account: { kind: LedgerAccountKind; ownerId: string | null; assetNetworkId: string };
  direction: 'DEBIT' | 'CREDIT';
  amount: string;
}

export async function loadCorrection(ctx: Context, idArg: unknown): Promise<LedgerCorrection> {
  const id = assertId(idArg, 'LedgerCorrection');
  if (ctx.principal?.type !== 'operator') throw notFound('LedgerCorrection');
  const row = await ctx.deps.db.ledgerCorrection.findUnique({ where: { id } });
  if (!row) throw notFound('LedgerCorrection');
  return row;
}

/**
 * AdminRecordLedgerCorrection (operators). 400: malformed, unbalanced per asset-network, an owner
 * that is not the organization's (the Account, Transaction or allocation of a CUSTOMER, ESCROW or
 * RETAINED line: never created; SUSPENSE and system accounts may be opened by it), an unknown corrected
 * transaction. 409: the ledger refuses (frozen or closed account, insufficient funds), with its
 * reason. Nothing is written on any refusal. With an idempotency key (body or Idempotency-Key
 * header) the same request answers the same correction.
 */
export async function recordCorrection(ctx: Context, input: unknown, headerKey: string | null | undefined): Promise<LedgerCorrection> {
  const p = ctx.principal;
  if (p?.type !== 'operator') throw notFound('LedgerCorrection');
  const parsed = recordCorrectionInput.safeParse(input ?? {});
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    throw fieldError(i.path.map(String).join('.') || '(input)', i.message);
  }
  const data = parsed.data;
  if (headerKey != null && data.idempotencyKey != null && headerKey !== data.idempotencyKey)
    throw fieldError('idempotencyKey', 'differs from the Idempotency-Key header');
  const key = data.idempotencyKey ?? headerKey ?? null;
  const organizationId = data.organizationId ?? null;
  const db = ctx.deps.db;

  // Balance per asset-network (the ledger checks it again).
  const net = new Map<string, bigint>();
  for (const l of data.lines)
    net.set(l.account.assetNetworkId, (net.get(l.account.assetNetworkId) ?? 0n) + (l.direction === 'DEBIT' ? 1n : -1n) * BigInt(l.amount));
  for (const [an, diff] of net) if (diff !== 0n) throw fieldError('lines', `debits and credits differ by ${diff < 0n ? -diff : diff} in asset-network ${an}`);

  // The environment of each asset-network: a line's account must be of the same mode (issue 26), as
  // on every other money path (a sandbox account never holds a production asset, nor the reverse).
  const assetNetworkIds = [...new Set(data.lines.map((l) => l.account.assetNetworkId))];
  const environmentOf = new Map(
    (await db.assetNetwork.findMany({ where: { id: { in: assetNetworkIds } }, select: { id: true, network: { select: { environmentType: true } } } })).map(
      (a) => [a.id, a.network.environmentType],
    ),
  );
  // Each line's account, resolved against the organization.
  const lines: CorrectionLine[] = [];
  const postingLines: PostingLine[] = [];
  for (const [i, l] of data.lines.entries()) {
    const field = `lines.${i}.account`;
    const { kind, assetNetworkId } = l.account;
    let ownerId = l.account.ownerId ?? null;
    let ref: LedgerAccountRef;
    if (SYSTEM_KINDS.includes(kind)) {
      if (ownerId !== null) throw fieldError(`${field}.ownerId`, `must be omitted: ${kind} is a system account`);
      ref = { kind, ownerId: null, organizationId: null, assetNetworkId };
    } else {
      if (!organizationId) throw fieldError('organizationId', `is required for a ${kind} account`);
      if (kind === 'SUSPENSE') {
        ownerId ??= organizationId;
        if (ownerId !== organizationId) throw fieldError(`${field}.ownerId`, "must be omitted or the organization's id: SUSPENSE is owned by its organization");
      } else if (ownerId === null) throw fieldError(`${field}.ownerId`, `is required for a ${kind} account`);
      ref = { kind, ownerId, organizationId, assetNetworkId };
      if (kind !== 'SUSPENSE') {
        const where = { id: ownerId, organizationId };
        const owner: { mode: 'SANDBOX' | 'PRODUCTION' | null } | null =
          kind === 'CUSTOMER'
            ? await db.account.findFirst({ where, select: { mode: true } })
            : kind === 'ESCROW'
              ? await db.transaction.findFirst({ where, select: { environmentType: true } }).then((t) => t && { mode: t.environmentType })
              : await db.settlementAllocation.findFirst({ where, select: { id: true } }).then((a) => a && { mode: null });
        if (!owner) throw fieldError(`${field}.ownerId`, `is not ${OWNER_NAMES[kind]} of the organization (a correction never creates one)`);
        const environment = environmentOf.get(assetNetworkId);
        if (owner.mode && environment && owner.mode !== environment)
          throw fieldError(
            `${field}.assetNetworkId`,
            `is a ${environment} asset-network: a ${owner.mode} ${kind === 'CUSTOMER' ? 'account' : 'transaction'} holds only ${owner.mode} assets`,
          );
      }
    }
    lines.push({ account: { kind, ownerId: ref.ownerId, assetNetworkId }, direction: l.direction, amount: l.amount });
    postingLines.push({ account: ref, direction: l.direction, amount: BigInt(l.amount) });
  }
  if (organizationId && !(await db.organization.findUnique({ where: { id: organizationId }, select: { id: true } })))
    throw fieldError('organizationId', 'is not an organization');
  if (data.correctsLedgerTransactionId) {
    const corrected = await db.ledgerTransaction.findUnique({ where: { id: data.correctsLedgerTransactionId }, select: { organizationId: true } });
    if (!corrected) throw fieldError('correctsLedgerTransactionId', 'is not a ledger transaction');
    if (corrected.organizationId && corrected.organizationId !== organizationId)
      throw fieldError('correctsLedgerTransactionId', "belongs to another organization than the correction's");
  }

  const request = { reason: data.reason, organizationId, correctsLedgerTransactionId: data.correctsLedgerTransactionId ?? null, lines };
  const created = await db.$transaction(
    (tx) =>
      idempotent(tx, ctx, { scope: 'adminRecordLedgerCorrection', key, request }, async () => {
        // The key stays on the correction beyond the idempotency records' retention: never two corrections under one key.
        if (key !== null) {
          const prior = await tx.ledgerCorrection.findUnique({ where: { idempotencyKey: key }, select: { id: true } });
          if (prior) return prior;
        }
        const id = uuidv7();
        const now = ctx.deps.clock.now();
        let ledgerTransactionId: string;
        try {
          ({ ledgerTransactionId } = await postLedgerTransaction(tx, {
            idempotencyKey: `ledger-correction:${id}`,
            nature: 'ledger.correction',
            organizationId,
            referenceType: 'LedgerCorrection',
            referenceId: id,
            metadata: { reason: data.reason, operatorId: p.operatorId, correctsLedgerTransactionId: data.correctsLedgerTransactionId ?? null },
            lines: postingLines,
            postedAt: now,
          }));
        } catch (e) {
          if (e instanceof LedgerError && e.code === 'INVALID_STATE') throw new DomainError('INVALID_STATE', `${e.reason}: ${e.message}`);
          throw e;
        }
        await tx.ledgerCorrection.create({
          data: {
            id,
            organizationId,
            reason: data.reason,
            operatorId: p.operatorId,
            ledgerTransactionId,
            correctsLedgerTransactionId: data.correctsLedgerTransactionId ?? null,
            idempotencyKey: key,
            lines: lines as never,
            createdAt: now,
          },
        });
        await auditAs(tx, ctx.deps, requestActor(ctx), {
          organizationId,
          entityType: 'LedgerCorrection',
          entityId: id,
          action: 'ledger.correction.recorded',
          after: { reason: data.reason, ledgerTransactionId, correctsLedgerTransactionId: data.correctsLedgerTransactionId ?? null, lines },
        });
        return { id };
      }),
    TX_OPTIONS,
  );
  return ctx.deps.db.ledgerCorrection.findUniqueOrThrow({ where: { id: created.id } });
}
