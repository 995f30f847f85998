import { z } from 'zod';
import type { Context } from '../context';
import { poolQuery, type Db, type RawDb } from '../db/prisma';
import type { Prisma } from '../generated/prisma/client';
import type { EnvironmentType } from '../generated/prisma/enums';
import { DomainError, fieldError, invalidState, notFound, sqlState } from '../errors';
import { audit, auditInsertSql } from '../audit/audit';
import { idempotent } from '../idempotency';
import { assertOrganization } from '../tenancy/access';
import { assertId, isUniqueViolation, isUuid, monotonicUuidv7 } from '../ids';
import { sendRetainedRelease } from '../kernel/queues';
import { balancesOfOwner } from '../ledger/ledger';
import { createInBatch } from './create-batch';

/**
 * Virtual accounts of an organization. Who sees an account:
 * - a member with account-read: every account of its organization;
 * - an API key: the accounts of its organization in its environment's mode that are authorized
 *   for its application;
 * - an account holder: the accounts it holds, while its relationship with the account's
 *   organization is ACTIVE.
 * Anything else answers 404, exactly as an account that does not exist.
 */

export const include = { authorizations: { select: { applicationId: true }, orderBy: { createdAt: 'asc' } } } as const satisfies Prisma.AccountInclude;
export type AccountRow = Prisma.AccountGetPayload<{ include: typeof include }>;

/** The Prisma filter of the accounts the principal may see (null: none): the rule of visibleAccountRule, for Prisma. */
export function visibleWhere(ctx: Context): Prisma.AccountWhereInput | null {
  const k = visibilityKeyOf(ctx);
  switch (k?.type) {
    case 'member':
      return { organizationId: k.organizationId };
    case 'apiKey':
      return { organizationId: k.organizationId, mode: k.mode, authorizations: { some: { applicationId: k.applicationId } } };
    case 'accountHolder':
      return {
        accountHolderId: k.accountHolderId,
        organization: { relationships: { some: { accountHolderId: k.accountHolderId, status: 'ACTIVE' } } },
      };
    default:
      return null;
  }
}

/** Loads an account the principal may see, or answers 404. */
export async function loadVisibleAccount(ctx: Context, idArg: unknown, db: Db = ctx.deps.db): Promise<AccountRow> {
  const id = assertId(idArg, 'Account');
  const visible = visibleWhere(ctx);
  if (!visible) throw notFound('Account');
  // Outside a transaction: one prepared statement on the pool (the hot read of REST, issue 22).
  const fast = db === ctx.deps.db ? await readVisibleAccount(ctx, id) : undefined;
  if (fast !== undefined) {
    if (!fast) throw notFound('Account');
    return fast;
  }
  const account = await db.account.findFirst({ where: { AND: [{ id }, visible] }, include });
  if (!account) throw notFound('Account');
  return account;
}

/**
 * visibleWhere as SQL, on an account aliased `a`: the rule once, per principal type, over the SQL
 * expressions of the principal's keys (parameters for one account, an input row's columns for many).
 */
type VisibilityExpressions = { org: string; mode: string; app: string; holder: string };
const visibleAccountRule: Record<VisibilityKey['type'], (x: VisibilityExpressions) => string> = {
  member: (x) => `a."organizationId" = ${x.org}`,
  apiKey: (x) => `a."organizationId" = ${x.org} AND a."mode" = ${x.mode}
    AND EXISTS (SELECT 1 FROM "AccountApplicationAuthorization" z WHERE z."accountId" = a."id" AND z."applicationId" = ${x.app})`,
  accountHolder: (x) => `a."accountHolderId" = ${x.holder}
    AND EXISTS (SELECT 1 FROM "Relationship" r WHERE r."organizationId" = a."organizationId" AND r."accountHolderId" = ${x.holder} AND r."status" = 'ACTIVE')`,
};

/**
 * One visible account with its authorized applications (oldest first, as `include`): one prepared
 * statement per principal type, straight on the pg pool. undefined: no pool of ours (the caller
 * goes through Prisma); null: no such account visible to the principal.
 */
const one = { org: '$2::uuid', mode: '$3::"EnvironmentType"', app: '$4::uuid', holder: '$2::uuid' };
const visibleAccountText = Object.fromEntries(
  Object.entries(visibleAccountRule).map(([k, rule]) => [
    k,
    `SELECT a.*, ARRAY(SELECT z."applicationId"::text FROM "AccountApplicationAuthorization" z WHERE z."accountId" = a."id" ORDER BY z."createdAt") AS "authorizedApplicationIds"
     FROM "Account" a WHERE a."id" = $1::uuid AND ${rule(one)}`,
  ]),
) as Record<VisibilityKey['type'], string>;

/** What visibleWhere reads of a principal, to decide an account's visibility later in a statement of many (visibleAccountsIn); null: it sees no account. */
export type VisibilityKey =
  | { type: 'member'; organizationId: string }
  | { type: 'apiKey'; organizationId: string; mode: EnvironmentType; applicationId: string }
  | { type: 'accountHolder'; accountHolderId: string };
export function visibilityKeyOf(ctx: Context): VisibilityKey | null {
  const p = ctx.principal;
  switch (p?.type) {
    case 'member':
      return { type: 'member', organizationId: p.organizationId };
    case 'apiKey':
      return { type: 'apiKey', organizationId: p.organizationId, mode: p.mode, applicationId: p.applicationId };
    case 'accountHolder':
      return { type: 'accountHolder', accountHolderId: p.accountHolderId };
    default:
      return null;
  }
}

const many = { org: 'u."org"', mode: 'u."mode"::"EnvironmentType"', app: 'u."app"', holder: 'u."holder"' };
const visibleAccountsText = `
  SELECT u."i"::int AS "i", a."organizationId"::text AS "organizationId", a."mode"::text AS "mode"
    FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::text[], $5::uuid[], $6::uuid[]) WITH ORDINALITY AS u("id", "type", "org", "mode", "app", "holder", "i")
    JOIN "Account" a ON a."id" = u."id"
   WHERE CASE u."type" ${Object.entries(visibleAccountRule)
     .map(([k, rule]) => `WHEN '${k}' THEN ${rule(many)}`)
     .join(' ')} ELSE false END`;

/**
 * The accounts of many requests, each decided for its own principal by visibleWhere's rule, in one
 * statement on `tx` (a request group's transaction, issue 22: no read per request before it): per
 * item, in order, its account's organization and mode, or null when its principal may not see it
 * (or it does not exist): the request answers 404, as loadVisibleAccount would.
 */
export async function visibleAccountsIn(
  tx: RawDb,
  items: readonly { accountId: string; key: VisibilityKey }[],
): Promise<({ organizationId: string; mode: EnvironmentType } | null)[]> {
  const col = <T>(f: (k: VisibilityKey) => T) => items.map((x) => f(x.key));
  const rows = await tx.$queryRawUnsafe<{ i: number; organizationId: string; mode: EnvironmentType }[]>(
    visibleAccountsText,
    items.map((x) => x.accountId),
    col((k) => k.type),
    col((k) => (k.type === 'accountHolder' ? null : k.organizationId)),
    col((k) => (k.type === 'apiKey' ? k.mode : null)),
    col((k) => (k.type === 'apiKey' ? k.applicationId : null)),
    col((k) => (k.type === 'accountHolder' ? k.accountHolderId : null)),
  );
  const out: ({ organizationId: string; mode: EnvironmentType } | null)[] = items.map(() => null);
  for (const r of rows) out[r.i - 1] = { organizationId: r.organizationId, mode: r.mode };
  return out;
}

async function readVisibleAccount(ctx: Context, id: string): Promise<AccountRow | null | undefined> {
  const k = visibilityKeyOf(ctx);
  if (!k) return null;
  // The parameters of visibleAccountText's `one` expressions: $2 the organization (or the holder), $3 the mode, $4 the application.
  const values = k.type === 'apiKey' ? [id, k.organizationId, k.mode, k.applicationId] : [id, k.type === 'member' ? k.organizationId : k.accountHolderId];
  const result = poolQuery<Omit<AccountRow, 'authorizations'> & { authorizedApplicationIds: string[] }>(ctx.deps.db, visibleAccountText[k.type], values);
  if (!result) return undefined;
  const row = (await result).rows[0];
  if (!row) return null;
  const { authorizedApplicationIds, ...account } = row;
  return { ...account, authorizations: authorizedApplicationIds.map((applicationId) => ({ applicationId })) };
}

export const accountName = z.string().trim().min(1, 'must not be empty').max(200);
export const createAccountInput = z.object({
  name: accountName,
  reference: z.string().trim().min(1, 'must not be empty').max(200).nullish(),
  accountHolderId: z.string().nullish(),
  mode: z.enum(['SANDBOX', 'PRODUCTION']).nullish(),
});
export type CreateAccountInput = z.infer<typeof createAccountInput>;

/**
 * Creates an account. An API key creates it in its environment's mode and authorizes its own
 * application for it; a member chooses the mode (default PRODUCTION). With an Idempotency-Key the
 * same request answers the same account; only {id} is stored and the account re-read on a replay.
 *
 * One statement (issue 22): the account, the API key's application authorization and the audit
 * entry are one data-modifying CTE (insertAccount), so a request without an Idempotency-Key is one
 * round trip that commits on its own; with a key it runs inside the idempotency transaction.
 */
export async function createAccount(ctx: Context, organizationIdArg: string, input: CreateAccountInput, idempotencyKey: string | null | undefined) {
  const organizationId = assertId(organizationIdArg, 'Organization');
  assertOrganization(ctx, organizationId, 'Organization');
  const p = ctx.principal;
  let mode: EnvironmentType = input.mode ?? 'PRODUCTION';
  if (p?.type === 'apiKey') {
    if (input.mode && input.mode !== p.mode) throw fieldError('mode', `must be ${p.mode} (the mode of the API key's environment) or omitted`);
    mode = p.mode;
  }
  const accountHolderId = input.accountHolderId ?? null;
  if (accountHolderId !== null && !isUuid(accountHolderId)) throw holderRefused();
  const values = { organizationId, name: input.name, reference: input.reference ?? null, accountHolderId, mode };
  const scope = `createAccount:${organizationId}:${p?.type === 'apiKey' ? `app:${p.applicationId}` : p?.type === 'member' ? `member:${p.memberId}` : 'other'}`;
  try {
    if (idempotencyKey === null || idempotencyKey === undefined) {
      // Group commit with the other creations of this moment (src/accounts/create-batch.ts).
      const batched = createInBatch(ctx.deps.db, {
        ...values,
        applicationId: p?.type === 'apiKey' ? p.applicationId : null,
        actor: { principal: p, requestId: ctx.requestId },
        now: ctx.deps.clock.now(),
      });
      if (!batched) return await insertAccount(ctx.deps.db, ctx, values);
      const outcome = await batched;
      if ('row' in outcome) return outcome.row;
      throw outcome.refused === 'holder' ? holderRefused() : referenceUsed();
    }
    // The row as the insert returned it: the answer without a re-read. A replay of an idempotent
    // request runs nothing here and reads the account (below).
    let row: AccountRow | null = null;
    const created = await ctx.deps.db.$transaction(async (tx) =>
      idempotent(tx, ctx, { scope, key: idempotencyKey, request: { organizationId, input } }, async () => {
        row = await insertAccount(tx, ctx, values);
        return { id: row.id };
      }),
    );
    return row ?? loadVisibleAccount(ctx, created.id);
  } catch (e) {
    if (isUniqueViolation(e) || sqlState(e) === '23505') throw referenceUsed();
    throw e;
  }
}

const referenceUsed = () => new DomainError('CONFLICT', 'The organization already has an account with this reference.');
const holderRefused = () => fieldError('accountHolderId', 'must be an account holder with an active relationship with the organization');

/**
 * The account, the API key's application authorization (the creator sees the account it created:
 * its organization; an API key: its mode and its application) and the audit entry, in one
 * statement. The account is inserted only when its holder (if any) has an ACTIVE relationship with
 * the organization; the authorization and the entry are written from the inserted row, so a refused
 * holder writes nothing. A reference already used fails on the unique index (answered 409 above).
 */
async function insertAccount(
  db: Db,
  ctx: Context,
  v: { organizationId: string; name: string; reference: string | null; accountHolderId: string | null; mode: EnvironmentType },
): Promise<AccountRow> {
  const p = ctx.principal;
  const now = ctx.deps.clock.now();
  // Ids increase in creation order within this process (accounts page by id), as Prisma's uuid(7) made them.
  const id = monotonicUuidv7(now.getTime());
  const applicationId = p?.type === 'apiKey' ? p.applicationId : null;
  const authorizedApplicationIds = applicationId ? [applicationId] : [];
  const entry = auditInsertSql(
    ctx.deps,
    { principal: p, requestId: ctx.requestId },
    {
      organizationId: v.organizationId,
      entityType: 'Account',
      entityId: id,
      action: 'account.created',
      after: { name: v.name, reference: v.reference, accountHolderId: v.accountHolderId, mode: v.mode, status: 'ACTIVE', authorizedApplicationIds },
    },
    'account',
  );
  const rows = await db.$queryRaw<Omit<AccountRow, 'authorizations'>[]>`
    WITH "account" AS (
      INSERT INTO "Account" ("id", "organizationId", "accountHolderId", "name", "reference", "mode", "status", "createdAt", "updatedAt")
      SELECT ${id}::uuid, ${v.organizationId}::uuid, ${v.accountHolderId}::uuid, ${v.name}, ${v.reference}, ${v.mode}::"EnvironmentType", 'ACTIVE', ${now}::timestamptz, ${now}::timestamptz
      WHERE ${v.accountHolderId}::uuid IS NULL
         OR EXISTS (SELECT 1 FROM "Relationship" WHERE "organizationId" = ${v.organizationId}::uuid AND "accountHolderId" = ${v.accountHolderId}::uuid AND "status" = 'ACTIVE')
      RETURNING *
    ), "authorization" AS (
      INSERT INTO "AccountApplicationAuthorization" ("accountId", "applicationId", "createdAt")
      SELECT "id", ${applicationId}::uuid, ${now}::timestamptz FROM "account" WHERE ${applicationId}::uuid IS NOT NULL
    ), "audit" AS (${entry})
    SELECT * FROM "account"`;
  const row = rows[0];
  if (!row) throw holderRefused();
  return { ...row, authorizations: authorizedApplicationIds.map((applicationId) => ({ applicationId })) };
}

/** Loads an account of `organizationId` for a member (manage operations) or answers 404. */
async function loadForManage(ctx: Context, idArg: unknown, organizationId?: string): Promise<AccountRow> {
  const id = assertId(idArg, 'Account');
  const account = await ctx.deps.db.account.findUnique({ where: { id }, include });
  if (!account || (organizationId !== undefined && account.organizationId !== organizationId)) throw notFound('Account');
  assertOrganization(ctx, account.organizationId, 'Account');
  return account;
}

/** Lets an application's API keys use the account. Authorizing twice changes nothing. */
export async function authorizeApplication(ctx: Context, organizationIdArg: string, idArg: string, applicationIdArg: string) {
  const organizationId = assertId(organizationIdArg, 'Organization');
  assertOrganization(ctx, organizationId, 'Organization');
  const account = await loadForManage(ctx, idArg, organizationId);
  const applicationId = assertId(applicationIdArg, 'Application');
  const app = await ctx.deps.db.application.findUnique({ where: { id: applicationId } });
  if (!app || app.organizationId !== organizationId) throw notFound('Application');
  if (app.status !== 'ACTIVE') throw invalidState(`The application is ${app.status.toLowerCase()}.`);
  if (account.status === 'CLOSED') throw invalidState('The account is closed.');
  await ctx.deps.db.$transaction(async (tx) => {
    const added = await tx.accountApplicationAuthorization.createMany({
      data: [{ accountId: account.id, applicationId, createdAt: ctx.deps.clock.now() }],
      skipDuplicates: true,
    });
    if (added.count === 1)
      await audit(tx, ctx, {
        organizationId,
        entityType: 'Account',
        entityId: account.id,
        action: 'account.application_authorized',
        after: { applicationId },
      });
    await sendRetainedRelease(tx, ctx.deps.boss, { accountId: account.id });
  });
  return loadForManage(ctx, account.id);
}

/**
 * Account lifecycle: ACTIVE -> FROZEN (reason) -> ACTIVE (unfreeze); ACTIVE -> CLOSED, terminal
 * (a frozen account is unfrozen first; an account holding or awaiting money is refused, 409 saying
 * what: whatKeepsAccountOpen). Any other move answers 409.
 */
const moves = {
  freeze: { from: 'ACTIVE', to: 'FROZEN', action: 'account.frozen' },
  unfreeze: { from: 'FROZEN', to: 'ACTIVE', action: 'account.unfrozen' },
  close: { from: 'ACTIVE', to: 'CLOSED', action: 'account.closed' },
} as const;

export const freezeReason = z.string().trim().min(1, 'must not be empty').max(1000);

export async function changeAccountStatus(ctx: Context, idArg: string, move: keyof typeof moves, reason?: string) {
  const account = await loadForManage(ctx, idArg);
  const { from, to, action } = moves[move];
  const now = ctx.deps.clock.now();
  await ctx.deps.db.$transaction(async (tx) => {
    // Conditional update: a concurrent move of the same account cannot apply twice.
    const changed = await tx.account.updateMany({
      where: { id: account.id, status: from },
      data:
        move === 'freeze'
          ? { status: to, frozenReason: reason ?? null }
          : move === 'unfreeze'
            ? { status: to, frozenReason: null }
            : { status: to, closedAt: now },
    });
    if (changed.count !== 1) {
      const current = (await tx.account.findUnique({ where: { id: account.id }, select: { status: true } }))?.status ?? account.status;
      throw invalidState(
        move === 'close' && current === 'FROZEN'
          ? 'A frozen account cannot be closed; unfreeze it first.'
          : `An account in status ${current} cannot be ${{ freeze: 'frozen', unfreeze: 'unfrozen', close: 'closed' }[move]}.`,
      );
    }
    // A close refuses an account that holds or awaits money. The status change above took the
    // account's ledger lock exclusively (trigger Account_ledger_status): it waited for the postings
    // in flight, and postings after it see CLOSED. So what is read now, after it, is final.
    if (move === 'close') {
      const open = await whatKeepsAccountOpen(tx, account.id);
      if (open.length) throw invalidState(`The account cannot be closed: ${open.join('; ')}. Move the funds out and let these finish first.`);
    }
    await audit(tx, ctx, {
      organizationId: account.organizationId,
      entityType: 'Account',
      entityId: account.id,
      action,
      before: { status: from },
      after: { status: to, ...(reason ? { reason } : {}) },
    });
    if (move === 'unfreeze') await sendRetainedRelease(tx, ctx.deps.boss, { accountId: account.id });
  });
  return loadForManage(ctx, account.id);
}

const FINISHED_WITHDRAWALS = ['CONFIRMED', 'REJECTED', 'CANCELLED', 'FAILED'] as const;

/**
 * Why the account may not be closed (empty: it may): a non-zero posted or pending balance in any
 * asset-network, a pending ledger hold, a withdrawal not finished, a PENDING or FAILED (an operator
 * may retry it) settlement or a PENDING refund of a transaction it takes part in, a portion retained
 * for it. Read in the close's transaction, after the status change (see changeAccountStatus).
 */
async function whatKeepsAccountOpen(tx: Db, accountId: string): Promise<string[]> {
  const some = <T>(rows: T[], what: string, show: (r: T) => string) =>
    rows.length ? [`${what}: ${rows.slice(0, 5).map(show).join(', ')}${rows.length > 5 ? ` and ${rows.length - 5} more` : ''}`] : [];
  const ofItsTransactions = { transaction: { participants: { some: { accountId } } } };
  const [balances, holds, withdrawals, settlements, refunds, retained] = await Promise.all([
    balancesOfOwner(tx, 'CUSTOMER', accountId),
    tx.$queryRaw<{ id: string }[]>`
      SELECT h."id"::text AS "id" FROM "LedgerHold" h JOIN "LedgerAccount" a ON a."id" IN (h."debitAccountId", h."creditAccountId")
       WHERE a."kind" = 'CUSTOMER' AND a."ownerId" = ${accountId}::uuid AND h."status" = 'PENDING' ORDER BY h."id" LIMIT 6`,
    tx.withdrawal.findMany({
      where: { accountId, status: { notIn: [...FINISHED_WITHDRAWALS] } },
      select: { id: true, status: true },
      orderBy: { id: 'asc' },
      take: 6,
    }),
    tx.settlement.findMany({
      where: { status: { in: ['PENDING', 'FAILED'] }, ...ofItsTransactions },
      select: { id: true, status: true },
      orderBy: { id: 'asc' },
      take: 6,
    }),
    tx.refund.findMany({ where: { status: 'PENDING', ...ofItsTransactions }, select: { id: true }, orderBy: { id: 'asc' }, take: 6 }),
    tx.settlementAllocation.findMany({
      where: { accountId, status: 'RETAINED' },
      select: { id: true, amount: true, retainReason: true },
      orderBy: { id: 'asc' },
      take: 6,
    }),
  ]);
  return [
    ...some(
      balances.filter((b) => b.posted !== 0n || b.pendingDebits !== 0n || b.pendingCredits !== 0n),
      'balance',
      (b) => `asset-network ${b.assetNetworkId} posted ${b.posted}, pending out ${b.pendingDebits}, pending in ${b.pendingCredits}`,
    ),
    ...some(holds, 'pending hold', (h) => h.id),
    ...some(withdrawals, 'open withdrawal', (w) => `${w.id} (${w.status})`),
    ...some(settlements, 'open settlement', (x) => `${x.id} (${x.status})`),
    ...some(refunds, 'pending refund', (r) => r.id),
    ...some(retained, 'retained portion', (a) => `allocation ${a.id} of ${a.amount.toFixed()} (${a.retainReason})`),
  ];
}
