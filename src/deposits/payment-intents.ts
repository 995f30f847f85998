import { numericToAmount, amountToNumeric, positiveAmountText } from '../money';
import { z } from 'zod';
import { fromPrisma } from 'pg-boss';
import type { Context } from '../context';
import { poolOf, poolQuery, poolRawDb, type Db } from '../db/prisma';
import { Prisma } from '../generated/prisma/client';
import type { AssetNetworkStatus, NetworkKind } from '../generated/prisma/enums';
import { adapterFor, networkRef, type DerivedAddress } from '../chains/adapter';
import { DomainError, fieldError, invalidState, notFound, sqlState, uniqueConflict, violatedUniqueConstraint } from '../errors';
import { checkIdempotencyKey, IDEMPOTENCY_RETENTION_MS, idempotencyKeyReused, idempotencyRequestHash } from '../idempotency';
import { assertId, isUniqueViolation, isUuid, monotonicUuidv7, uuidv7 } from '../ids';
import { assertOrganization } from '../tenancy/access';
import { addressForNewIntent, deriveIntentAddresses, type AssetNetworkWithNetwork, type ReservedWallet } from '../custody/addresses';
import { createGroupCommit, type GroupCommit } from '../kernel/group-commit';
import { auditAllSql, auditAs, type Actor, type AuditInput } from '../audit/audit';
import { deliverJob, deliveriesAppeared, emit, eventsCte, NO_DELIVERIES, sendDeliverJobs } from '../webhooks/outbox';
import { webhookEvent, type WebhookEventData } from '../webhooks/events';
import { lockTransactionRow, requestActor, TX_OPTIONS, type MoneyDeps } from '../kernel/service';
import { nowFor } from '../chains/sandbox/clock';
import { evaluateIntent } from './funding';
import { EXPIRES_IN_SECONDS } from './rules';
import { applyReleaseRuleInTx, releaseRuleInput, type ReleaseRuleInput } from '../release/release-rules';
import { EXPIRE_QUEUE, EXPIRE_SWEEP_QUEUE } from '../kernel/queues';
import { jobInsertParts, jobInsertSql, type JobInsertParts } from '../kernel/job-rows';
import { columns } from '../kernel/columns';

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

/**
 * Everything a creation checks, read by one statement before its transaction (issue 22), with the
 * wallet's next derivation index reserved by the same statement (READ_INTENTS_SQL, for a group): the
 * environment and its application, the asset-network and its network, the accounts with their
 * authorization for the application, the organization's sandbox clock and whether the reference is
 * taken. Nothing is locked: the checks are those the transaction made before (READ COMMITTED reads
 * without a lock; the constraints hold what a race could break: the reference's unique index).
 */
interface IntentReads {
  environmentId: string | null;
  applicationId: string | null;
  environmentType: 'SANDBOX' | 'PRODUCTION' | null;
  applicationStatus: string | null;
  assetNetworkId: string | null;
  assetNetworkStatus: AssetNetworkStatus | null;
  minimumDeposit: string | null;
  networkId: string | null;
  networkKind: NetworkKind | null;
  networkEnvironmentType: 'SANDBOX' | 'PRODUCTION' | null;
  requiredConfirmations: number | null;
  beneficiary: AccountRead | null;
  payer: AccountRead | null;
  sandboxOffsetMs: bigint | null;
  referenceTaken: boolean;
  /** Whether the organization has an ACTIVE webhook endpoint (its events have deliveries, whose jobs follow the write). */
  hasEndpoints: boolean;
  wallet: ReservedWallet | null;
  derivationIndex: number | null;
  /** The live record of the creation's Idempotency-Key (null without a key, or none live). */
  record: { requestHash: string; response: { id: string } } | null;
}
interface AccountRead {
  id: string;
  mode: 'SANDBOX' | 'PRODUCTION';
  status: string;
  authorized: boolean;
}

const uuidOrNull = (v: string | null | undefined) => (v != null && isUuid(v) ? v.toLowerCase() : null);

/** What one creation asks readIntentsSql for: the ids as the statement compares them (uuid or null). */
interface ReadItem {
  organizationId: string;
  applicationId: string | null;
  environmentId: string | null;
  assetNetworkId: string | null;
  beneficiaryAccountId: string | null;
  payerAccountId: string | null;
  reference: string | null;
  walletId: string | null;
  /** The Idempotency-Key's scope and key, null without a key. */
  idempotency: { scope: string; key: string } | null;
}

/**
 * The reads of any number of creations in one statement (a group, issue 22), a row per item in
 * their order: each item's environment and application, asset-network and network, accounts (with
 * the authorization for its application), sandbox clock and whether its reference is taken; and
 * the wallets' next derivation indexes reserved, each wallet once for all its items (its counter
 * advanced by their number; the rows taken in id order, so two groups never wait for each other in
 * a cycle), the items numbered in order from the first index reserved. Committed on its own before
 * the transaction that uses the indexes: the wallet's row is locked for this one statement only, not
 * until the intents commit. An index is still used at most once (the increment is atomic and
 * (walletId, derivationIndex) unique); one reserved by a creation that then fails stays unused (a
 * gap, never handed out later). No wallet for an item whose walletId is no wallet of its organization.
 *
 * Its commit is asynchronous (synchronous_commit off for this statement's own transaction: no wait
 * for the WAL flush, one fsync fewer per group; docs/decisions.md, "Payment intents: one creation
 * path"): what it changes (the wallets' counters, the expired key records) only has to be durable
 * before an intent uses it, and the write that uses it commits synchronously after it, which
 * flushes the WAL up to and past this commit. A crash before that write loses at most reservations
 * that nothing used (and expired records that still answer nothing): no index is ever used twice.
 *
 * With Idempotency-Keys in the group (`keyed`: the statement's second form, so an unkeyed group pays
 * nothing for them), each keyed item's live record (its request hash and its answer) is read, and the
 * expired records of the group's keys are deleted: a key then has either a live record, which
 * answers it, or none, and the write's plain insert of the new record is the claim (a creation that
 * claimed the key meanwhile makes it fail on the key's unique constraint: createPaymentIntent).
 */
const readIntentsSql = (keyed: boolean) => `
  WITH "input" AS (
    SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::uuid[], $6::uuid[], $7::text[], $8::uuid[]${keyed ? ', $9::text[], $10::text[]' : ''})
      WITH ORDINALITY AS i("org", "app", "env", "an", "ben", "payer", "ref", "wallet", ${keyed ? '"scope", "key", ' : ''}"ord")
  ), "durability" AS MATERIALIZED (
    SELECT set_config('synchronous_commit', 'off', true) AS "asynchronous"
  ), ${
    keyed
      ? `"expired" AS (
    DELETE FROM "IdempotencyRecord" r USING "input" k WHERE r."scope" = k."scope" AND r."key" = k."key" AND r."expiresAt" <= $11::timestamptz
  ), `
      : ''
  }"wanted" AS (
    SELECT "org", "wallet", count(*) AS "n" FROM "input" WHERE "wallet" IS NOT NULL GROUP BY "org", "wallet"
  ), "locked" AS (
    SELECT w."id", k."n" FROM "Wallet" w JOIN "wanted" k ON k."wallet" = w."id" AND k."org" = w."organizationId" ORDER BY w."id" FOR NO KEY UPDATE OF w
  ), "reserved" AS (
    UPDATE "Wallet" w SET "nextAddressIndex" = w."nextAddressIndex" + l."n" FROM "locked" l WHERE w."id" = l."id"
    RETURNING w."id", w."organizationId", w."applicationId", w."environmentId", w."networkId", w."curve", w."publicKey", w."nextAddressIndex" - l."n" AS "first"
  )
  SELECT i."ord", e."id" AS "environmentId", e."applicationId", e."type"::text AS "environmentType", app."status"::text AS "applicationStatus",
    an."id" AS "assetNetworkId", an."status"::text AS "assetNetworkStatus", an."minimumDeposit"::text AS "minimumDeposit",
    n."id" AS "networkId", n."kind"::text AS "networkKind", n."environmentType"::text AS "networkEnvironmentType", n."requiredConfirmations",
    (SELECT json_build_object('id', a."id", 'mode', a."mode", 'status', a."status",
        'authorized', EXISTS (SELECT 1 FROM "AccountApplicationAuthorization" z WHERE z."accountId" = a."id" AND z."applicationId" = i."app"))
      FROM "Account" a WHERE a."id" = i."ben" AND a."organizationId" = i."org") AS "beneficiary",
    (SELECT json_build_object('id', a."id", 'mode', a."mode", 'status', a."status",
        'authorized', EXISTS (SELECT 1 FROM "AccountApplicationAuthorization" z WHERE z."accountId" = a."id" AND z."applicationId" = i."app"))
      FROM "Account" a WHERE a."id" = i."payer" AND a."organizationId" = i."org") AS "payer",
    (SELECT c."offsetMs" FROM "SandboxClock" c WHERE c."organizationId" = i."org") AS "sandboxOffsetMs",
    EXISTS (SELECT 1 FROM "PaymentIntent" x WHERE x."organizationId" = i."org" AND x."reference" = i."ref") AS "referenceTaken",
    EXISTS (SELECT 1 FROM "WebhookEndpoint" we WHERE we."organizationId" = i."org" AND we."status" = 'ACTIVE') AS "hasEndpoints",
    w."id" AS "walletId", w."organizationId", w."applicationId" AS "walletApplicationId", w."environmentId" AS "walletEnvironmentId",
    w."networkId" AS "walletNetworkId", w."curve", w."publicKey",
    (w."first" + row_number() OVER (PARTITION BY w."id" ORDER BY i."ord") - 1)::int AS "derivationIndex",
    ${
      keyed
        ? `(SELECT json_build_object('requestHash', r."requestHash", 'response', r."response") FROM "IdempotencyRecord" r
        WHERE r."scope" = i."scope" AND r."key" = i."key" AND r."expiresAt" > $11::timestamptz)`
        : 'NULL::json'
    } AS "record"
  FROM "input" i CROSS JOIN "durability"
  LEFT JOIN ("Environment" e JOIN "Application" app ON app."id" = e."applicationId")
    ON e."id" = i."env" AND e."applicationId" = i."app" AND e."organizationId" = i."org"
  LEFT JOIN ("AssetNetwork" an JOIN "Network" n ON n."id" = an."networkId") ON an."id" = i."an"
  LEFT JOIN "reserved" w ON w."id" = i."wallet" AND w."organizationId" = i."org"
  ORDER BY i."ord"`;
const READ_INTENTS_SQL = readIntentsSql(false);
const READ_KEYED_INTENTS_SQL = readIntentsSql(true);

type ReadRow = Omit<IntentReads, 'wallet'> & { walletId: string | null } & Omit<ReservedWallet, 'id'>;

async function readIntents(db: Db, items: ReadItem[], now: Date): Promise<IntentReads[]> {
  const keyed = items.some((x) => x.idempotency);
  const values: unknown[] = columns(
    items,
    (x) => x.organizationId,
    (x) => x.applicationId,
    (x) => x.environmentId,
    (x) => x.assetNetworkId,
    (x) => x.beneficiaryAccountId,
    (x) => x.payerAccountId,
    (x) => x.reference,
    (x) => x.walletId,
  );
  if (keyed)
    values.push(
      items.map((x) => x.idempotency?.scope ?? null),
      items.map((x) => x.idempotency?.key ?? null),
      now,
    );
  const sql = keyed ? READ_KEYED_INTENTS_SQL : READ_INTENTS_SQL;
  // Straight on the pool (Prisma's query engine costs more CPU than the statement: issue 22).
  const rows = await (poolQuery<ReadRow>(db, sql, values)?.then((x) => x.rows) ?? db.$queryRawUnsafe<ReadRow[]>(sql, ...values));
  return rows.map((row) => {
    const r = row as unknown as Record<string, unknown> & IntentReads;
    return {
      ...r,
      wallet:
        r.walletId != null
          ? {
              id: r.walletId as string,
              organizationId: r.organizationId as string,
              applicationId: r.walletApplicationId as string,
              environmentId: r.walletEnvironmentId as string,
              networkId: r.walletNetworkId as string,
              curve: r.curve as string,
              publicKey: r.publicKey as string,
            }
          : null,
    };
  });
}

function readItemOf(ctx: Context, organizationId: string, input: CreatePaymentIntentInput, idempotency: ReadItem['idempotency']): ReadItem {
  const p = ctx.principal;
  // An API key's own application and environment (a mismatch is refused by checkEnvironment); a member's choice.
  return {
    organizationId,
    applicationId: uuidOrNull(p?.type === 'apiKey' ? p.applicationId : input.applicationId),
    environmentId: uuidOrNull(p?.type === 'apiKey' ? p.environmentId : input.environmentId),
    assetNetworkId: uuidOrNull(input.assetNetworkId),
    beneficiaryAccountId: uuidOrNull(input.beneficiaryAccountId),
    payerAccountId: uuidOrNull(input.payerAccountId),
    reference: input.reference ?? null,
    walletId: uuidOrNull(input.walletId),
    idempotency,
  };
}

/** The application and environment the intent is for: an API key's own, or a member's choice. */
function checkEnvironment(ctx: Context, input: CreatePaymentIntentInput, r: IntentReads) {
  const p = ctx.principal;
  if (p?.type === 'apiKey') {
    if (input.applicationId != null && input.applicationId !== p.applicationId)
      throw fieldError('applicationId', "must be the API key's application or omitted");
    if (input.environmentId != null && input.environmentId !== p.environmentId)
      throw fieldError('environmentId', "must be the API key's environment or omitted");
  } else {
    if (input.applicationId == null) throw fieldError('applicationId', 'is required for a member');
    if (input.environmentId == null) throw fieldError('environmentId', 'is required for a member');
  }
  if (!r.environmentId || !r.applicationId || !r.environmentType)
    throw fieldError('environmentId', 'must be an environment of the application, in the organization');
  if (r.applicationStatus !== 'ACTIVE') throw invalidState(`The application is ${r.applicationStatus!.toLowerCase()}.`);
  return { applicationId: r.applicationId, environmentId: r.environmentId, environmentType: r.environmentType };
}

function checkAccount(field: 'beneficiaryAccountId' | 'payerAccountId', account: AccountRead | null, environmentType: 'SANDBOX' | 'PRODUCTION') {
  if (!account) throw fieldError(field, 'must be an account of the organization');
  if (account.mode !== environmentType) throw fieldError(field, `must be a ${environmentType} account (the environment's mode)`);
  if (!account.authorized) throw fieldError(field, 'must be an account authorized for the application');
  if (account.status !== 'ACTIVE')
    throw invalidState(`The ${field === 'beneficiaryAccountId' ? 'beneficiary' : 'payer'} account is ${account.status.toLowerCase()}.`);
  return account.id;
}

/** A payment intent checked and ready to write: every row, event and audit entry of its creation. */
interface IntentPlan {
  organizationId: string;
  actor: Actor;
  env: { applicationId: string; environmentId: string; environmentType: 'SANDBOX' | 'PRODUCTION' };
  an: AssetNetworkWithNetwork;
  transactionId: string;
  intentId: string;
  amount: bigint;
  reference: string | null;
  metadata: string | null;
  now: Date;
  createdAt: Date;
  expiresAt: Date;
  participants: { accountId: string; role: 'BENEFICIARY' | 'PAYER' }[];
  address: ReturnType<typeof addressForNewIntent> | null;
  events: WebhookEventData[];
  audits: AuditInput[];
  /** Read before: the organization had an ACTIVE webhook endpoint (intentGroupOf writes the group in a transaction then). */
  hasEndpoints: boolean;
  /** The Idempotency-Key's record written with the intent (its answer the intent's id): null without a key. */
  idempotency: { scope: string; key: string; requestHash: string } | null;
  /** The release rule set in the same transaction (its input, and the request field its errors name). */
  releaseRule: { input: ReleaseRuleInput; field: (path: string) => string } | null;
}

/** The checks of a creation on what readIntents read, in the order they always ran, and its rows (no statement). */
function planIntent(
  ctx: Context,
  organizationId: string,
  input: CreatePaymentIntentInput,
  reads: IntentReads,
  derived: DerivedAddress | undefined,
  extra: Pick<IntentPlan, 'idempotency' | 'releaseRule'>,
): IntentPlan {
  const deps = ctx.deps;
  const env = checkEnvironment(ctx, input, reads);
  if (!reads.assetNetworkId) throw fieldError('assetNetworkId', 'must be an asset-network of the catalog');
  if (reads.networkEnvironmentType !== env.environmentType)
    throw fieldError('assetNetworkId', `must be on a ${env.environmentType} network (the environment's type)`);
  if (reads.assetNetworkStatus !== 'ENABLED') throw invalidState(`The asset-network is ${reads.assetNetworkStatus}: it takes no new payment intents.`);
  const an: AssetNetworkWithNetwork = {
    id: reads.assetNetworkId,
    networkId: reads.networkId!,
    status: reads.assetNetworkStatus,
    network: { id: reads.networkId!, kind: reads.networkKind!, requiredConfirmations: reads.requiredConfirmations! },
  };
  const amount = numericToAmount(input.amount);
  if (amount < numericToAmount(reads.minimumDeposit!))
    throw fieldError('amount', `must be at least the asset-network's minimum deposit (${numericToAmount(reads.minimumDeposit!)})`);
  const beneficiaryAccountId = checkAccount('beneficiaryAccountId', reads.beneficiary, env.environmentType);
  const payerAccountId = input.payerAccountId != null ? checkAccount('payerAccountId', reads.payer, env.environmentType) : null;
  if (payerAccountId === beneficiaryAccountId) throw fieldError('payerAccountId', 'must differ from the beneficiary account');
  // nowFor: the organization's sandbox clock in a sandbox, the real clock in production.
  const now = env.environmentType === 'SANDBOX' ? new Date(deps.clock.now().getTime() + Number(reads.sandboxOffsetMs ?? 0)) : deps.clock.now();
  let expiresAt: Date;
  if (input.expiresAt != null) {
    const seconds = (input.expiresAt.getTime() - now.getTime()) / 1000;
    if (seconds < EXPIRES_IN_SECONDS.min || seconds > EXPIRES_IN_SECONDS.max)
      throw fieldError('expiresAt', `must be between ${EXPIRES_IN_SECONDS.min} seconds and 30 days from now (${now.toISOString()})`);
    expiresAt = input.expiresAt;
  } else expiresAt = new Date(now.getTime() + (input.expiresInSeconds ?? EXPIRES_IN_SECONDS.default) * 1000);
  const reference = input.reference ?? null;
  if (reference !== null && reads.referenceTaken) throw new DomainError('CONFLICT', 'The organization already has a payment intent with this reference.');
  if (input.walletId != null && !reads.wallet) throw fieldError('walletId', 'must be a wallet of the organization');

  const createdAt = deps.clock.now();
  const transactionId = uuidv7(createdAt.getTime());
  const intentId = uuidv7(createdAt.getTime());
  const participants = [
    { accountId: beneficiaryAccountId, role: 'BENEFICIARY' as const },
    ...(payerAccountId ? [{ accountId: payerAccountId, role: 'PAYER' as const }] : []),
  ];
  // The address at the reserved index: checked and derived in memory, inserted with the intent.
  const address = reads.wallet
    ? addressForNewIntent(
        deps,
        { organizationId, applicationId: env.applicationId, environmentId: env.environmentId, paymentIntentId: intentId },
        { wallet: reads.wallet, derivationIndex: reads.derivationIndex!, ...(derived ? { derived } : {}) },
        an,
      )
    : null;
  return {
    organizationId,
    actor: requestActor(ctx),
    env,
    an,
    transactionId,
    intentId,
    amount,
    reference,
    metadata: input.metadata != null ? JSON.stringify(input.metadata) : null,
    now,
    createdAt,
    expiresAt,
    participants,
    address,
    hasEndpoints: reads.hasEndpoints,
    ...extra,
    events: [
      webhookEvent('transaction.created', {
        TransactionId: transactionId,
        ApplicationId: env.applicationId,
        ParticipantAccountIds: participants.map((x) => x.accountId),
      }),
      webhookEvent('payment_intent.created', { PaymentIntentId: intentId, TransactionId: transactionId, Amount: amount, ExpiresAt: expiresAt }),
      ...(address ? [address.event] : []),
    ],
    audits: [
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
      ...(address ? [address.audit] : []),
    ],
  };
}

/**
 * One statement for any number of intents (a group, issue 22): the transactions, their participants,
 * the intents, their addresses, the events with their deliveries and the audit entries, each table
 * one set-based insert (unnest), rows in plan order. Answers the deliveries, whose jobs the caller sends.
 */
async function writeIntentRows(tx: Db, deps: MoneyDeps, plans: IntentPlan[], expireJobs: JobInsertParts | null): Promise<{ id: string; endpointId: string }[]> {
  return tx.$queryRaw<{ id: string; endpointId: string }[]>(
    intentRowsSql(deps, plans, expireJobs, Prisma.sql`SELECT "id"::text AS "id", "endpointId"::text AS "endpointId" FROM deliveries`),
  );
}

/**
 * writeIntentRows' statement alone, committed on its own (autocommit: one round trip, no BEGIN and
 * COMMIT), for a group whose organizations had no webhook endpoint when read (no delivery, so no
 * job to send after it) and whose addresses need no watcher (sandbox networks), expiry jobs
 * included. Should an endpoint have been added since the read, the statement's deliveries make it
 * fail (a division by zero, as pg-boss's own flow insert guards itself) and nothing of it commits:
 * false, and the caller writes the group in a transaction (as it does without a pool of ours).
 */
async function writeIntentRowsAlone(deps: MoneyDeps, plans: IntentPlan[], expireJobs: JobInsertParts): Promise<boolean> {
  const sql = intentRowsSql(deps, plans, expireJobs, Prisma.sql`SELECT ${NO_DELIVERIES} AS "ok"`);
  try {
    const query = poolQuery(deps.db, sql.text, sql.values);
    if (!query) return false;
    await query;
    return true;
  } catch (e) {
    if (deliveriesAppeared(e)) return false;
    throw e;
  }
}

function intentRowsSql(deps: MoneyDeps, plans: IntentPlan[], expireJobs: JobInsertParts | null, tail: Prisma.Sql): Prisma.Sql {
  const parts = plans.flatMap((x) => x.participants.map((p) => ({ ...p, transactionId: x.transactionId, id: monotonicUuidv7(x.createdAt.getTime()) })));
  const addrs = plans.flatMap((x) => (x.address ? [x.address.row] : []));
  const keyed = plans.filter((x) => x.idempotency);
  const [transactionIds, organizationIds, applicationIds, environmentIds, environmentTypes, assetNetworkIds, amounts, createdAts] = columns(
    plans,
    (x) => x.transactionId,
    (x) => x.organizationId,
    (x) => x.env.applicationId,
    (x) => x.env.environmentId,
    (x) => x.env.environmentType,
    (x) => x.an.id,
    (x) => amountToNumeric(x.amount).toString(),
    (x) => x.createdAt,
  );
  const [intentIds, references, metadata, expiresAts, addressIds, updatedAts] = columns(
    plans,
    (x) => x.intentId,
    (x) => x.reference,
    (x) => x.metadata,
    (x) => x.expiresAt,
    (x) => x.address?.row.id ?? null,
    (x) => x.address?.row.createdAt ?? x.createdAt,
  );
  const participants = columns(
    parts,
    (p) => p.id,
    (p) => p.transactionId,
    (p) => p.accountId,
    (p) => p.role,
  );
  const a = columns(
    addrs,
    (r) => r.id,
    (r) => r.organizationId,
    (r) => r.applicationId,
    (r) => r.walletId,
    (r) => r.networkId,
    (r) => r.assetNetworkId,
    (r) => r.address,
    (r) => r.derivationIndex,
    (r) => r.publicKey,
    (r) => r.paymentIntentId,
    (r) => r.createdAt,
  );
  return Prisma.sql`
    WITH "t" AS (
      INSERT INTO "Transaction" ("id", "organizationId", "applicationId", "environmentId", "environmentType", "assetNetworkId", "amount", "createdAt", "updatedAt")
      SELECT i, o, a, e, et, an, amt, c, c
      FROM unnest(${transactionIds}::uuid[], ${organizationIds}::uuid[], ${applicationIds}::uuid[], ${environmentIds}::uuid[],
                  ${environmentTypes}::"EnvironmentType"[], ${assetNetworkIds}::uuid[], ${amounts}::numeric[], ${createdAts}::timestamptz[]) AS u(i, o, a, e, et, an, amt, c)
    ), "tp" AS (
      INSERT INTO "TransactionParticipant" ("id", "transactionId", "accountId", "role")
      SELECT * FROM unnest(${participants[0]}::uuid[], ${participants[1]}::uuid[], ${participants[2]}::uuid[], ${participants[3]}::"ParticipantRole"[])
    ), "pi" AS (
      INSERT INTO "PaymentIntent" ("id", "organizationId", "applicationId", "environmentId", "environmentType", "transactionId", "assetNetworkId", "amount",
                                   "reference", "metadata", "expiresAt", "depositAddressId", "createdAt", "updatedAt")
      SELECT * FROM unnest(${intentIds}::uuid[], ${organizationIds}::uuid[], ${applicationIds}::uuid[], ${environmentIds}::uuid[],
                           ${environmentTypes}::"EnvironmentType"[], ${transactionIds}::uuid[], ${assetNetworkIds}::uuid[], ${amounts}::numeric[],
                           ${references}::text[], ${metadata}::jsonb[], ${expiresAts}::timestamptz[], ${addressIds}::uuid[], ${createdAts}::timestamptz[],
                           ${updatedAts}::timestamptz[])
    ), "da" AS (
      INSERT INTO "DepositAddress" ("id", "organizationId", "applicationId", "walletId", "networkId", "assetNetworkId", "address", "derivationIndex", "publicKey", "paymentIntentId", "createdAt")
      SELECT * FROM unnest(${a[0]}::uuid[], ${a[1]}::uuid[], ${a[2]}::uuid[], ${a[3]}::uuid[], ${a[4]}::uuid[], ${a[5]}::uuid[],
                           ${a[6]}::text[], ${a[7]}::int[], ${a[8]}::text[], ${a[9]}::uuid[], ${a[10]}::timestamptz[])
    ), ${expireJobs ? Prisma.sql`"expire_jobs" AS (${jobInsertSql(expireJobs, expireJobsOf(plans))}),` : Prisma.empty}
    ${keyed.length ? Prisma.sql`"idem" AS (${idempotencyRecordsSql(keyed)}),` : Prisma.empty}
    "audit" AS (${auditAllSql(
      deps,
      plans.map((x) => ({ actor: x.actor, entries: x.audits })),
    )}),
    ${eventsCte(
      deps,
      plans.flatMap((x) => x.events.map((event) => ({ organizationId: x.organizationId, event }))),
    )}
    ${tail}`;
}

/**
 * The records of the keyed creations among `plans` (their answer: the intent's id), kept 24 hours. A
 * plain insert: the read deleted the keys' expired records, so a conflict on the key's unique
 * constraint means another creation claimed it meanwhile, and the statement fails whole (nothing of
 * it commits; createPaymentIntent answers from that creation's record).
 */
function idempotencyRecordsSql(keyed: IntentPlan[]): Prisma.Sql {
  const [scopes, keys, hashes, ids, createdAts, expiresAts] = columns(
    keyed,
    (x) => x.idempotency!.scope,
    (x) => x.idempotency!.key,
    (x) => x.idempotency!.requestHash,
    (x) => x.intentId,
    (x) => x.createdAt,
    (x) => new Date(x.createdAt.getTime() + IDEMPOTENCY_RETENTION_MS),
  );
  return Prisma.sql`
      INSERT INTO "IdempotencyRecord" ("id", "scope", "key", "requestHash", "response", "createdAt", "expiresAt")
      SELECT uuidv7(), k."scope", k."key", k."hash", jsonb_build_object('id', k."intent"::text), k."createdAt", k."expiresAt"
        FROM unnest(${scopes}::text[], ${keys}::text[], ${hashes}::text[], ${ids}::uuid[], ${createdAts}::timestamptz[], ${expiresAts}::timestamptz[])
          AS k("scope", "key", "hash", "intent", "createdAt", "expiresAt")`;
}

/** Each intent's expiry job (its id the intent's), due when it expires by the real clock (a sandbox clock advanced later is caught by the sweep). */
const expireJobsOf = (plans: IntentPlan[]) =>
  plans.map((x) => ({
    id: x.intentId,
    data: { paymentIntentId: x.intentId } satisfies ExpireJob,
    startAfter: new Date(x.createdAt.getTime() + (x.expiresAt.getTime() - x.now.getTime())),
  }));

/** pg-boss's insert of the expiry jobs, to embed in writeIntentRows' statement (null: no job runner, or boss.insert it). */
const expireJobsParts = (deps: MoneyDeps) => (deps.boss ? jobInsertParts(deps.boss, EXPIRE_QUEUE) : Promise.resolve(null));

/**
 * The jobs of intents written in `tx` besides what writeIntentRows wrote: the expiry jobs if they
 * were not in its statement (`expireJobsWritten`), in one insert; the deliveries' jobs in another
 * (only if there are endpoints); the EVM watcher told of the new addresses.
 */
async function sendIntentJobs(
  tx: Db,
  deps: MoneyDeps,
  plans: IntentPlan[],
  deliveries: { id: string; endpointId: string }[],
  expireJobsWritten: boolean,
): Promise<void> {
  if (deps.boss && !expireJobsWritten) await deps.boss.insert(EXPIRE_QUEUE, expireJobsOf(plans), { db: fromPrisma(tx as never) });
  await sendDeliverJobs(
    tx,
    deps.boss,
    deliveries.map((d) => deliverJob(d.id, d.endpointId, 1)),
  );
  for (const x of plans) if (x.address) await adapterFor(x.an.network.kind, tx).watchAddresses(networkRef(x.an.network), [x.address.row.address]);
}

/**
 * A write of a group's plans: one statement in autocommit when nothing follows it (the common case:
 * see writeIntentRowsAlone), else one transaction with the jobs after the statement.
 */
async function writePlans(deps: MoneyDeps, plans: IntentPlan[]): Promise<void> {
  const expireJobs = await expireJobsParts(deps);
  if (expireJobs && poolOf(deps.db) && plans.every((x) => !x.hasEndpoints && !x.releaseRule && (!x.address || x.an.network.kind === 'SANDBOX')))
    if (await writeIntentRowsAlone(deps, plans, expireJobs)) return;
  await deps.db.$transaction(async (tx) => {
    const deliveries = await writeIntentRows(tx, deps, plans, expireJobs);
    // A rule's audit entry comes after its intent's (audit entries read back in writing order). A rule
    // refused (its template, a party) throws: the group rolls back and its creations are written alone.
    for (const x of plans)
      if (x.releaseRule) await applyReleaseRuleInTx(tx, deps, x.actor, x.transactionId, x.releaseRule.input, { now: x.now, field: x.releaseRule.field });
    await sendIntentJobs(tx, deps, plans, deliveries, expireJobs !== null);
  }, TX_OPTIONS);
}

/** A creation in a group: what it asks the read, and once read, its plan or its answer (kept for a retry alone). */
interface IntentRequest {
  ctx: Context;
  organizationId: string;
  input: CreatePaymentIntentInput;
  read: ReadItem;
  /** The hash of the keyed request (null without an Idempotency-Key). */
  requestHash: string | null;
  releaseRule: IntentPlan['releaseRule'];
  planned?: { plan: IntentPlan } | { refused: unknown } | { replayed: string } | { again: true };
}
/** Created or replayed ({ id }), refused, or to submit again (its key was another creation's of the same group). */
type IntentOutcome = { id: string } | { refused: unknown } | { again: true };

/**
 * Every creation goes in groups (issue 22), read and written by the same group: one statement reads
 * for all the creations of the group (and reserves their derivation indexes, and reads their
 * Idempotency-Keys' records), each is checked and planned in memory (a refusal is that creation's
 * answer alone, the others go on; a live key record answers its creation: a replay, or 409 for another
 * request), and one statement writes every row of the plans, the keys' records with them. One group in
 * flight per client: the creations that arrive meanwhile gather for the next one, so the groups grow
 * with the load (decision: docs/decisions.md, "Payment intents: one group reads and writes"). A key
 * twice in one group: the first creation is decided, the others are submitted again after the
 * group's commit (they find its record, as a request that waited for the key's lock did). A write
 * that fails (a constraint one intent breaks, a release rule refused) is written again intent by
 * intent (createGroupCommit), each with the plan it had (no second read), so only the intent that
 * fails alone gets the error.
 */
const INTENT_GROUP = { maxGroup: 64, concurrency: 1 };
const intentGroups = new WeakMap<object, GroupCommit<IntentRequest, IntentOutcome>>();
const keyOf = (r: IntentRequest) => r.read.idempotency && `${r.read.idempotency.scope} ${r.read.idempotency.key}`;
function intentGroupOf(deps: MoneyDeps): GroupCommit<IntentRequest, IntentOutcome> {
  let g = intentGroups.get(deps.db);
  if (!g) {
    g = createGroupCommit<IntentRequest, IntentOutcome>({
      ...INTENT_GROUP,
      write: async (requests) => {
        const keys = new Set<string>();
        const unread: IntentRequest[] = [];
        for (const r of requests) {
          if (r.planned) continue;
          const k = keyOf(r);
          if (k && keys.has(k)) r.planned = { again: true };
          else {
            if (k) keys.add(k);
            unread.push(r);
          }
        }
        if (unread.length) {
          const reads = await readIntents(
            deps.db,
            unread.map((r) => r.read),
            deps.clock.now(),
          );
          // The group's addresses derived together (one field inversion for all: issue 22, point 1); none for a replay.
          const derived = deriveIntentAddresses(
            reads.map((x) =>
              !x.record && x.wallet && x.networkId && x.networkKind && x.requiredConfirmations != null
                ? {
                    network: { id: x.networkId, kind: x.networkKind, requiredConfirmations: x.requiredConfirmations },
                    wallet: x.wallet,
                    derivationIndex: x.derivationIndex!,
                  }
                : null,
            ),
          );
          unread.forEach((r, i) => {
            const x = reads[i]!;
            // Checked first: a replay answers what it answered, whatever changed since.
            if (x.record) r.planned = x.record.requestHash === r.requestHash ? { replayed: x.record.response.id } : { refused: idempotencyKeyReused() };
            else
              try {
                const idempotency = r.read.idempotency && { ...r.read.idempotency, requestHash: r.requestHash! };
                r.planned = { plan: planIntent(r.ctx, r.organizationId, r.input, x, derived[i], { idempotency, releaseRule: r.releaseRule }) };
              } catch (e) {
                r.planned = { refused: e };
              }
          });
        }
        const plans = requests.flatMap((r) => (r.planned && 'plan' in r.planned ? [r.planned.plan] : []));
        if (plans.length) await writePlans(deps, plans);
        return requests.map((r): IntentOutcome => {
          const p = r.planned!;
          return 'plan' in p ? { id: p.plan.intentId } : 'replayed' in p ? { id: p.replayed } : p;
        });
      },
    });
    intentGroups.set(deps.db, g);
  }
  return g;
}

/** The creation groups' counters of a client (bench/payment-intents.ts prints them per round): groups, items, wait and write times. */
export const intentGroupStats = (db: object) => intentGroups.get(db)?.stats ?? null;

/**
 * CreatePaymentIntent: the Transaction (AWAITING_FUNDS, with its participants) and the intent, in
 * one database transaction with transaction.created, payment_intent.created, the audit entries, the
 * expiry job, the release rule, the Idempotency-Key's record, and (with walletId) the deposit address
 * and deposit.address_generated. With an Idempotency-Key the same request answers the same intent
 * (another request with the key: 409), and only a creation that succeeded keeps its key.
 *
 * Issue 22: every creation goes through one group (intentGroupOf): one statement reads what the
 * checks need, the key's record, and reserves the wallet's index, committed before the write; the
 * checks and the address's derivation run in memory (planIntent); the rows, events (with their
 * deliveries), audit entries and key records are one data-modifying statement (writeIntentRows),
 * autocommitted when no job follows it and no release rule goes with it.
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
  const deps = ctx.deps;
  let idempotency: ReadItem['idempotency'] = null;
  let requestHash: string | null = null;
  if (idempotencyKey != null) {
    checkIdempotencyKey(idempotencyKey);
    const p = ctx.principal;
    const scope = `createPaymentIntent:${organizationId}:${p?.type === 'apiKey' ? `app:${p.applicationId}` : p?.type === 'member' ? `member:${p.memberId}` : 'other'}`;
    idempotency = { scope, key: idempotencyKey };
    requestHash = idempotencyRequestHash({
      organizationId,
      input: {
        ...input,
        expiresAt: input.expiresAt?.toISOString() ?? null,
        releaseRule: input.releaseRule ? JSON.parse(JSON.stringify(input.releaseRule)) : null,
      },
    });
  }
  const rule = input.releaseRule ?? (input.releaseRuleTemplateId != null ? { templateId: input.releaseRuleTemplateId } : null);
  const inline = input.releaseRule != null;
  const releaseRule: IntentPlan['releaseRule'] = rule && {
    input: rule,
    field: (path) => (inline ? `releaseRule.${path}` : path === 'templateId' ? 'releaseRuleTemplateId' : path),
  };
  const read = readItemOf(ctx, organizationId, input, idempotency);
  let created: { id: string } | null = null;
  for (let attempt = 1; !created; attempt++)
    try {
      const outcome = await intentGroupOf(deps).submit({ ctx, organizationId, input, read, requestHash, releaseRule });
      if ('refused' in outcome) throw outcome.refused;
      if ('id' in outcome) created = outcome;
    } catch (e) {
      // The key claimed meanwhile by a creation of another group (another process): its record answers, as it would have after the claim.
      if (idempotency && violatedUniqueConstraint(e) === 'IdempotencyRecord_scope_key_key' && attempt < 5) {
        const record = await deps.db.idempotencyRecord.findUnique({ where: { scope_key: idempotency } });
        if (record && record.expiresAt > deps.clock.now()) {
          if (record.requestHash !== requestHash) throw idempotencyKeyReused();
          created = record.response as { id: string };
        }
        continue;
      }
      // By the constraint it names: a reference taken meanwhile, or the deposit address's derivation index or address (issue 22).
      if (isUniqueViolation(e) || sqlState(e) === '23505') throw uniqueConflict(e, 'The payment intent clashes with one created meanwhile; retry.');
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
 *
 * Every intent has its expiry job, and most have SUCCEEDED (or were cancelled) by the time it runs:
 * one read of the status, without a transaction or a lock, answers those (issue 22: the locked
 * path is a transaction of five statements, BEGIN and COMMIT included, per intent ever created).
 * The status is read again under the transaction's lock before anything is decided; an intent a
 * reorganization sends back to PROCESSING after this read is the minute's sweep's, as one that
 * does so after its job ran.
 */
export async function expireIfDue(
  deps: MoneyDeps,
  paymentIntentId: string,
  actor: Actor = { principal: null, requestId: 'job:payment-intent.expire' },
): Promise<boolean> {
  if (!isUuid(paymentIntentId)) return false;
  const [current] = await (poolRawDb(deps.db) ?? deps.db).$queryRaw<{ status: string }[]>`
    SELECT "status"::text AS "status" FROM "PaymentIntent" WHERE "id" = ${paymentIntentId}::uuid`;
  if (!current || (current.status !== 'AWAITING_PAYMENT' && current.status !== 'PROCESSING')) return false;
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
