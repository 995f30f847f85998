import { fromPrisma } from 'pg-boss';
import { Prisma, type RawDb } from '../db/prisma';
import type { AssetNetworkStatus, WithdrawalStatus } from '../generated/prisma/client';
import { DomainError, fieldError, invalidState, notFound } from '../errors';
import { isUuid, monotonicUuidv7, uuidv7 } from '../ids';
import { IDEMPOTENCY_RETENTION_MS, idempotencyKeyReused } from '../idempotency';
import { accountMoveLocksSql, LedgerError, ledgerAccounts, postInStatement } from '../ledger/ledger';
import { amountToNumeric, amountToString } from '../money';
import { actorOf, type Actor } from '../audit/audit';
import { deliveriesAppeared, emitEvents, eventsCte, NO_DELIVERIES } from '../webhooks/outbox';
import { webhookEvent } from '../webhooks/events';
import { nowFor } from '../chains/sandbox/clock';
import { retryingRawTransaction, type MoneyDeps } from '../kernel/service';
import { createGroupCommit, type GroupCommit } from '../kernel/group-commit';
import { WITHDRAWAL_BROADCAST_QUEUE } from '../kernel/queues';
import { jobInsertParts, jobInsertSql } from '../kernel/job-rows';
import type { WithdrawalBroadcastJob } from './withdrawals';
import { statusAllows } from '../catalog/catalog';
import { visibleAccountsIn, type VisibilityKey } from '../accounts/accounts';
import type { EnvironmentType } from '../generated/prisma/enums';

/**
 * Withdrawal requests in groups (issue 22): the requests that arrive while a group is being written
 * go together in the next one, ONE database transaction for all of them (createGroupCommit), each
 * request answered after its group's commit.
 *
 * The group's transaction, in the lock order of every withdrawal step (src/withdrawals/lock-order.test.ts):
 * 0. each request's account read with its own principal's visibility (visibleAccountsIn: one
 *    statement, no lock; issue 22, session 16: no read per request before the group): one its
 *    principal may not see answers 404, one of another mode than the asset-network 400, and nothing
 *    of either is locked or written;
 * 1. the destinations share-locked in id order, read with the policies in force (one statement);
 * 2. the idempotency keys' and the period limits' advisory locks, sorted (one statement), then what
 *    they guard: the keys' records, the period sums (one statement each, only when there are any);
 * 3. the accounts' ledger locks (as lockAccountsForMove takes them), then the CUSTOMER balance rows
 *    and the CHAIN_CLEARING rows locked in id order, as ledger_post locks them, read with the
 *    accounts' status (one statement): the shared CHAIN_CLEARING row is taken once per group;
 * 4. each request decided in memory, in arrival order, by the rules of a request alone: a replayed
 *    key, an unknown or blocked destination, a policy limit, a closed or frozen account, a balance
 *    that does not cover the amount (after the holds of the group's requests before it) refuses that
 *    request alone, with the error it answers alone;
 * 5. the accepted ones written set-based: ONE broadcast job naming them all, and ONE statement for
 *    the holds (postInStatement: CHAIN_CLEARING updated once, with the sum), the rows, the audit
 *    entries, the idempotency records and the events (in a statement of their own before the job
 *    when an organization of the group has a webhook endpoint: their deliveries' jobs follow them).
 * A group that fails as a whole (a deadlock retried out, a bug) is written again request by request.
 * The group's transaction runs straight on the pg pool (retryingRawTransaction: raw statements only,
 * the shared helpers on a RawDb), without Prisma's query engine (issue 22, seventh session).
 */

/** A request checked against what needs no lock (input, account, asset-network, wallet): what the group decides on. */
export interface WithdrawalRequestItem {
  actor: Actor;
  applicationId: string | null;
  /** The request's idempotency record (scope, key and request hash), null without a key. */
  idempotency: { scope: string; key: string; requestHash: string } | null;
  account: { id: string; organizationId: string; mode: 'SANDBOX' | 'PRODUCTION' };
  assetNetworkId: string;
  networkId: string;
  destinationId: string;
  amount: bigint;
  source: { walletId: string; sourceIndex: number; fromAddress: string } | null;
}

/**
 * A request as submitted: its account named, not read yet (issue 22: no read per request before the
 * group). The group reads every request's account in one statement, each with the visibility rule of
 * its own principal (visibleAccountsIn): an account the principal may not see answers 404 before
 * anything of it is locked, and the account's mode must be the asset-network's environment (400).
 */
export interface WithdrawalRequest extends Omit<WithdrawalRequestItem, 'account'> {
  accountId: string;
  visibility: VisibilityKey;
  /** The environment of the asset-network's network. */
  environmentType: EnvironmentType;
}

/** The 400 of an asset-network whose environment is not the account's mode (the request alone and its group answer it alike). */
export const accountModeMismatch = (mode: EnvironmentType) => fieldError('assetNetworkId', `must be a ${mode} asset-network (the account's mode)`);

/** Written ({ id }), refused (the error it answers), or to run again after this group's commit (its key is in the group already). */
type Answer = { id: string } | { error: unknown } | { again: true };

/**
 * One group in flight per client (issue 22, session 9; two before): the requests that arrive while a
 * group is written form the next, larger one. Two groups of one asset-network passed its CHAIN_CLEARING
 * row one after the other anyway (the second waited for the first's commit); with one, the groups grew
 * from 4.8 to 7.8 requests at 16 in flight, PostgreSQL's statements per withdrawal fell and its lock
 * waits with them (docs/benchmarks.md, "Withdrawals", session 9). As the sandbox sends and the payment
 * intents do.
 */
const REQUEST_GROUP = { maxGroup: 64, concurrency: 1 };
const groups = new WeakMap<object, GroupCommit<WithdrawalRequest, Answer>>();

/** Requests a withdrawal in the next group of `deps.db`: its id, or the error it answers. */
export async function submitWithdrawalRequest(deps: MoneyDeps, item: WithdrawalRequest): Promise<{ id: string }> {
  let g = groups.get(deps.db);
  if (!g) {
    g = createGroupCommit<WithdrawalRequest, Answer>({
      ...REQUEST_GROUP,
      // Raw statements only, on the pool (no Prisma query engine: issue 22).
      write: async (items) => {
        const write = () => retryingRawTransaction(deps.db, (tx) => writeGroup(tx, deps, items));
        try {
          return await write();
        } catch (e) {
          // The events' guard (writeAccepted): a webhook endpoint added since the group's read. Written
          // again, the group reads it (a group of one would otherwise answer the guard's error).
          if (deliveriesAppeared(e)) return write();
          throw e;
        }
      },
    });
    groups.set(deps.db, g);
  }
  for (;;) {
    const a = await g.submit(item);
    if ('id' in a) return a;
    if ('error' in a) throw a.error;
  }
}

/** Statistics of this client's request groups (tests, the bench). */
export const withdrawalRequestGroupStats = (deps: Pick<MoneyDeps, 'db'>) => groups.get(deps.db)?.stats ?? null;

interface DestinationRow {
  id: string;
  organizationId: string;
  networkId: string;
  address: string;
  status: string;
  blockedReason: string | null;
  createdAt: string;
}
interface WithdrawalPolicyRow {
  id: string;
  organizationId: string;
  assetNetworkId: string | null;
  version: number;
  perWithdrawalLimit: string | null;
  periodLimit: string | null;
  periodSeconds: number | null;
  approvalThreshold: string | null;
}
interface PayoutPolicyRow {
  id: string;
  organizationId: string;
  version: number;
  allowedNetworkIds: string[];
  minimumDestinationAgeSeconds: number;
  requireApprovalForNewDestination: boolean;
}

const amountOf = (v: string | null) => (v === null ? null : BigInt(v));
const pairKey = (organizationId: string, assetNetworkId: string) => `${organizationId} ${assetNetworkId}`;

async function writeGroup(tx: RawDb, deps: MoneyDeps, requests: readonly WithdrawalRequest[]): Promise<Answer[]> {
  const out: (Answer | null)[] = requests.map(() => null);
  // 0. Each request's account, as its principal may see it (one statement, no lock): the others are answered here.
  const seen = await visibleAccountsIn(
    tx,
    requests.map((r) => ({ accountId: r.accountId, key: r.visibility })),
  );
  const items = requests.map((r, i): WithdrawalRequestItem | null => {
    const a = seen[i];
    if (!a) out[i] = { error: notFound('Account') };
    else if (a.mode !== r.environmentType) out[i] = { error: accountModeMismatch(a.mode) };
    else {
      const { accountId, visibility: _visibility, environmentType: _environmentType, ...rest } = r;
      return { ...rest, account: { id: accountId, organizationId: a.organizationId, mode: a.mode } };
    }
    return null;
  });
  // A key twice in one group: the first is decided here, the others run again after the commit (and replay it).
  const keys = new Set<string>();
  const live: number[] = [];
  items.forEach((it, i) => {
    if (!it) return;
    const k = it.idempotency && `${it.idempotency.scope} ${it.idempotency.key}`;
    if (k && keys.has(k)) out[i] = { again: true };
    else {
      if (k) keys.add(k);
      live.push(i);
    }
  });
  if (!live.length) return out.map((a) => a!);
  const uniq = (xs: string[]) => [...new Set(xs)];
  const liveItems = live.map((i) => items[i]!);
  const orgs = uniq(liveItems.map((x) => x.account.organizationId));

  // 1. The asset-networks' status, the destinations (share-locked, id order) and the policies in force.
  // With no idempotency key in the group, the same statement goes on to the ledger (step 3: the
  // accounts' locks after the destinations', then the balance rows; issue 22, session 10: one round
  // trip fewer), unless a policy read has a period limit, whose advisory lock comes first (step 2):
  // then nothing of the ledger is locked here ("ledger" is null) and step 3 is a statement of its own.
  const keyless = liveItems.every((x) => !x.idempotency);
  const accountIds = uniq(liveItems.map((x) => x.account.id));
  const [read] = await tx.$queryRaw<
    {
      assetNetworks: Record<string, AssetNetworkStatus>;
      destinations: DestinationRow[];
      withdrawalPolicies: WithdrawalPolicyRow[];
      payoutPolicies: PayoutPolicyRow[];
      withEndpoints: string[];
      ledger: LedgerRead | null;
    }[]
  >`
    WITH "d" AS MATERIALIZED (
      SELECT "id", "organizationId", "networkId", "address", "status", "blockedReason", "createdAt" FROM "WithdrawalDestination"
       WHERE "id" = ANY(${uniq(liveItems.filter((x) => isUuid(x.destinationId)).map((x) => x.destinationId.toLowerCase()))}::uuid[])
       ORDER BY "id" FOR SHARE
    ), "wp" AS MATERIALIZED (
      SELECT DISTINCT ON ("organizationId", "assetNetworkId") "id", "organizationId", "assetNetworkId", "version", "perWithdrawalLimit"::text AS "perWithdrawalLimit",
             "periodLimit"::text AS "periodLimit", "periodSeconds", "approvalThreshold"::text AS "approvalThreshold"
        FROM "WithdrawalPolicy"
       WHERE "organizationId" = ANY(${orgs}::uuid[]) AND ("assetNetworkId" IS NULL OR "assetNetworkId" = ANY(${uniq(liveItems.map((x) => x.assetNetworkId))}::uuid[]))
       ORDER BY "organizationId", "assetNetworkId", "version" DESC
    )${
      keyless
        ? Prisma.sql`, ${ledgerCtes(
            liveItems,
            accountIds,
            Prisma.sql`(SELECT count(*) FROM "d") >= 0 AND NOT EXISTS (SELECT 1 FROM "wp" WHERE "periodLimit" IS NOT NULL AND "periodSeconds" IS NOT NULL)`,
          )}`
        : Prisma.empty
    }
    SELECT
      (SELECT coalesce(jsonb_object_agg("id", "status"), '{}') FROM "AssetNetwork" WHERE "id" = ANY(${uniq(liveItems.map((x) => x.assetNetworkId))}::uuid[])) AS "assetNetworks",
      (SELECT coalesce(jsonb_agg(d), '[]') FROM "d") AS "destinations",
      (SELECT coalesce(jsonb_agg(p), '[]') FROM "wp" p) AS "withdrawalPolicies",
      (SELECT coalesce(jsonb_agg(p), '[]') FROM (
         SELECT DISTINCT ON ("organizationId") "id", "organizationId", "version", "allowedNetworkIds", "minimumDestinationAgeSeconds", "requireApprovalForNewDestination"
           FROM "PayoutPolicy" WHERE "organizationId" = ANY(${orgs}::uuid[]) ORDER BY "organizationId", "version" DESC) p) AS "payoutPolicies",
      ARRAY(SELECT DISTINCT "organizationId"::text FROM "WebhookEndpoint" WHERE "organizationId" = ANY(${orgs}::uuid[]) AND "status" = 'ACTIVE') AS "withEndpoints",
      ${
        keyless
          ? Prisma.sql`CASE WHEN EXISTS (SELECT 1 FROM "wp" WHERE "periodLimit" IS NOT NULL AND "periodSeconds" IS NOT NULL) THEN NULL ELSE ${ledgerColumns(accountIds)} END`
          : Prisma.sql`NULL::jsonb`
      } AS "ledger"`;
  const destinationOf = new Map(read!.destinations.map((d) => [d.id, d]));
  const policyOf = (x: WithdrawalRequestItem) =>
    read!.withdrawalPolicies.find((p) => p.organizationId === x.account.organizationId && p.assetNetworkId === x.assetNetworkId) ??
    read!.withdrawalPolicies.find((p) => p.organizationId === x.account.organizationId && p.assetNetworkId === null) ??
    null;
  const payoutOf = new Map(read!.payoutPolicies.map((p) => [p.organizationId, p]));

  // 2. The idempotency keys and the period limits: locked (sorted), then what they guard.
  const keyed = liveItems.filter((x) => x.idempotency);
  const periods = uniq(
    liveItems
      .filter((x) => policyOf(x)?.periodLimit != null && policyOf(x)?.periodSeconds != null)
      .map((x) => pairKey(x.account.organizationId, x.assetNetworkId)),
  );
  const advisory = [...keyed.map((x) => `${x.idempotency!.scope} ${x.idempotency!.key}`), ...periods.map((p) => `withdrawal ${p}`)];
  if (advisory.length)
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(s.h) FROM (SELECT DISTINCT hashtextextended(k, 0) AS h FROM unnest(${advisory}::text[]) AS k ORDER BY 1) s`;
  const now = deps.clock.now();
  const records = new Map<string, { requestHash: string; response: { id: string }; expiresAt: Date }>();
  if (keyed.length)
    for (const r of await tx.$queryRaw<{ scope: string; key: string; requestHash: string; response: { id: string }; expiresAt: Date }[]>`
      SELECT r."scope", r."key", r."requestHash", r."response", r."expiresAt" FROM "IdempotencyRecord" r
        JOIN unnest(${keyed.map((x) => x.idempotency!.scope)}::text[], ${keyed.map((x) => x.idempotency!.key)}::text[]) AS k("scope", "key")
          ON r."scope" = k."scope" AND r."key" = k."key"`)
      records.set(`${r.scope} ${r.key}`, r);
  const periodUsed = new Map<string, bigint>();
  if (periods.length) {
    const sinceOf = periods.map((p) => {
      const x = liveItems.find((y) => pairKey(y.account.organizationId, y.assetNetworkId) === p)!;
      return new Date(now.getTime() - policyOf(x)!.periodSeconds! * 1000);
    });
    for (const r of await tx.$queryRaw<{ org: string; an: string; used: string | null }[]>`
      SELECT u."org"::text AS "org", u."an"::text AS "an", (
               SELECT sum(w."amount")::text FROM "Withdrawal" w
                WHERE w."organizationId" = u."org" AND w."assetNetworkId" = u."an" AND w."createdAt" > u."since"
                  AND w."status" NOT IN ('REJECTED', 'CANCELLED', 'FAILED')) AS "used"
        FROM unnest(${periods.map((p) => p.split(' ')[0]!)}::uuid[], ${periods.map((p) => p.split(' ')[1]!)}::uuid[], ${sinceOf}::timestamptz[]) AS u("org", "an", "since")`)
      periodUsed.set(pairKey(r.org, r.an), r.used === null ? 0n : BigInt(r.used));
  }
  // Destinations never used by a confirmed withdrawal (only under a payout policy that wants them approved).
  const askNew = uniq(
    liveItems.filter((x) => payoutOf.get(x.account.organizationId)?.requireApprovalForNewDestination).map((x) => x.destinationId.toLowerCase()),
  );
  const usedDestinations = new Set(
    askNew.length
      ? (
          await tx.$queryRaw<{ id: string }[]>`
            SELECT DISTINCT "withdrawalDestinationId"::text AS "id" FROM "Withdrawal" WHERE "withdrawalDestinationId" = ANY(${askNew}::uuid[]) AND "status" = 'CONFIRMED'`
        ).map((r) => r.id)
      : [],
  );
  // The rules' clock (a sandbox organization's own): only the payout policy's destination age reads it.
  const ruleNowOf = new Map<string, Date>();
  for (const x of liveItems)
    if (payoutOf.has(x.account.organizationId) && !ruleNowOf.has(x.account.organizationId))
      ruleNowOf.set(x.account.organizationId, await nowFor(tx, deps.clock, x.account.organizationId, x.account.mode));

  // 3. The ledger, when step 1 did not read it: the accounts' locks, then the balance rows in id order.
  const ledger =
    read!.ledger ??
    (
      await tx.$queryRaw<{ ledger: LedgerRead }[]>`WITH ${ledgerCtes(liveItems, accountIds, Prisma.sql`true`)} SELECT ${ledgerColumns(accountIds)} AS "ledger"`
    )[0]!.ledger;
  const available = new Map(ledger.balances.filter((b) => b.ownerId !== null).map((b) => [`${b.ownerId} ${b.an}`, BigInt(b.available)]));
  const statusOf = new Map(ledger.accounts.map((a) => [a.id, a.status]));

  // 4. Each request in order, on what was read and the requests accepted before it.
  const accepted: Accepted[] = [];
  for (const i of live) {
    const x = items[i]!;
    try {
      const a = decide(x);
      if ('replayed' in a) out[i] = { id: a.replayed };
      else {
        accepted.push(a);
        out[i] = { id: a.id };
      }
    } catch (e) {
      out[i] = { error: e };
    }
  }

  function decide(x: WithdrawalRequestItem): Accepted | { replayed: string } {
    const org = x.account.organizationId;
    const assetNetworkStatus = read!.assetNetworks[x.assetNetworkId]!;
    if (!statusAllows.withdrawals(assetNetworkStatus)) throw invalidState(`The asset-network is ${assetNetworkStatus}: no new withdrawals.`);
    if (x.idempotency) {
      const r = records.get(`${x.idempotency.scope} ${x.idempotency.key}`);
      if (r && new Date(r.expiresAt) > now) {
        if (r.requestHash !== x.idempotency.requestHash) throw idempotencyKeyReused();
        return { replayed: r.response.id };
      }
    }
    const destination = isUuid(x.destinationId) ? destinationOf.get(x.destinationId.toLowerCase()) : undefined;
    if (!destination || destination.organizationId !== org) throw notFound('WithdrawalDestination');
    if (destination.status !== 'ACTIVE')
      throw new DomainError('INVALID_STATE', `The withdrawal destination is blocked: ${destination.blockedReason ?? 'no reason given'}.`);
    if (destination.networkId !== x.networkId) throw fieldError('withdrawalDestinationId', "must be a destination on the asset-network's network");
    const amount = x.amount;
    // Withdrawal policy: limits (409) and the approval threshold.
    const policy = policyOf(x);
    const approvalReasons: string[] = [];
    const pair = pairKey(org, x.assetNetworkId);
    if (policy) {
      const perWithdrawal = amountOf(policy.perWithdrawalLimit);
      if (perWithdrawal !== null && amount > perWithdrawal)
        throw invalidState(`The amount exceeds the per-withdrawal limit of ${amountToString(perWithdrawal)} (withdrawal policy v${policy.version}).`);
      const periodLimit = amountOf(policy.periodLimit);
      if (periodLimit !== null && policy.periodSeconds !== null) {
        const used = periodUsed.get(pair) ?? 0n;
        if (used + amount > periodLimit)
          throw invalidState(
            `The amount exceeds the limit of ${amountToString(periodLimit)} per ${policy.periodSeconds} s: ${amountToString(used)} already withdrawn in the period (withdrawal policy v${policy.version}).`,
          );
      }
      const threshold = amountOf(policy.approvalThreshold);
      if (threshold !== null && amount > threshold) approvalReasons.push(`the amount is above the approval threshold of ${amountToString(threshold)}`);
    }
    // Payout policy: destination rules.
    const payout = payoutOf.get(org);
    if (payout) {
      if (payout.allowedNetworkIds.length && !payout.allowedNetworkIds.includes(x.networkId))
        throw invalidState(`The payout policy (v${payout.version}) does not allow withdrawals on this network.`);
      const ageSeconds = Math.floor((ruleNowOf.get(org)!.getTime() - new Date(destination.createdAt).getTime()) / 1000);
      if (ageSeconds < payout.minimumDestinationAgeSeconds)
        throw invalidState(
          `The destination is ${ageSeconds} s old: the payout policy (v${payout.version}) allows it from ${payout.minimumDestinationAgeSeconds} s.`,
        );
      if (payout.requireApprovalForNewDestination && !usedDestinations.has(destination.id))
        approvalReasons.push('the destination was never used by a confirmed withdrawal');
    }
    // The hold, as ledger_post decides it: the account's status, then its available balance (after
    // the holds of the group's requests before it).
    const status = statusOf.get(x.account.id);
    if (status === 'CLOSED') throw new LedgerError('ACCOUNT_CLOSED', `account ${x.account.id} is closed: it neither sends nor receives funds`);
    if (status === 'FROZEN') throw new LedgerError('ACCOUNT_FROZEN', `account ${x.account.id} is frozen: funds may not leave it`);
    const balanceKey = `${x.account.id} ${x.assetNetworkId}`;
    const left = available.get(balanceKey);
    if (left === undefined)
      throw new LedgerError(
        'INSUFFICIENT_FUNDS',
        `insufficient funds in account ${x.account.id} (asset-network ${x.assetNetworkId}): available 0, debit ${amount}`,
      );
    if (left < amount)
      throw new LedgerError(
        'INSUFFICIENT_FUNDS',
        `insufficient funds in account ${x.account.id} (asset-network ${x.assetNetworkId}): the posting exceeds its available balance by ${amount - left}`,
      );
    available.set(balanceKey, left - amount);
    if (policy?.periodLimit != null) periodUsed.set(pair, (periodUsed.get(pair) ?? 0n) + amount);
    const waits = approvalReasons.length > 0;
    return {
      x,
      id: uuidv7(),
      destination,
      status: waits ? 'PENDING_APPROVAL' : x.source ? 'AWAITING_SIGNATURE' : 'APPROVED',
      approvalReason: waits ? approvalReasons.join('; ') : null,
      withdrawalPolicyId: policy?.id ?? null,
      payoutPolicyId: payout?.id ?? null,
    };
  }

  // 5. The accepted ones: events, broadcast jobs, then the holds with the rows, audit entries and records.
  if (accepted.length) await writeAccepted(tx, deps, accepted, now, new Set(read!.withEndpoints));
  return out.map((a) => a!);
}

/** The balance rows of a group's requests (their CUSTOMER rows, the CHAIN_CLEARING rows) and the accounts' status. */
interface LedgerRead {
  balances: { ownerId: string | null; an: string; available: string }[];
  accounts: { id: string; status: string }[];
}

/**
 * The ledger's locks of a group, as common table expressions ("locks", "rows"), each taken only when
 * `gate` holds: the accounts' locks (as lockAccountsForMove takes them: shared, sorted), taken whole
 * by the one-time filter before the scan returns a row, then the CUSTOMER and CHAIN_CLEARING balance
 * rows locked in id order, as ledger_post locks them (each read as it is once locked).
 */
function ledgerCtes(items: readonly WithdrawalRequestItem[], accountIds: string[], gate: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`"locks" AS MATERIALIZED (
      ${accountMoveLocksSql(accountIds)}
       WHERE ${gate}
    ), "rows" AS MATERIALIZED (
      SELECT la."id", la."ownerId", la."assetNetworkId", (la."creditsPosted" - la."debitsPosted" - la."debitsPending")::text AS "available"
        FROM "LedgerAccount" la
       -- The ids first (an init plan), so that a row updated by the group before this one is re-read
       -- under its lock by its id alone.
       WHERE la."id" = ANY(ARRAY(
               SELECT x."id" FROM unnest(${items.map((x) => x.account.id)}::uuid[], ${items.map((x) => x.assetNetworkId)}::uuid[]) AS u("o", "n")
                 JOIN "LedgerAccount" x ON x."kind" = 'CUSTOMER' AND x."ownerId" = u."o" AND x."assetNetworkId" = u."n"
               UNION ALL
               SELECT x."id" FROM unnest(${[...new Set(items.map((x) => x.assetNetworkId))]}::uuid[]) AS u("n")
                 JOIN "LedgerAccount" x ON x."kind" = 'CHAIN_CLEARING' AND x."ownerId" IS NULL AND x."assetNetworkId" = u."n"))
         AND ${gate} AND (SELECT count(*) FROM "locks") >= 0
       ORDER BY la."id" FOR UPDATE)`;
}

/**
 * What ledgerCtes locked (a LedgerRead), with the accounts' status as of the statement's start: a
 * change of status committed while the statement waited for an account's lock is not seen here, but
 * ledger_post sees it and refuses (see writeAccepted's refusal).
 */
function ledgerColumns(accountIds: string[]): Prisma.Sql {
  return Prisma.sql`jsonb_build_object(
      'balances', (SELECT coalesce(jsonb_agg(jsonb_build_object('ownerId', "ownerId", 'an', "assetNetworkId", 'available', "available")), '[]') FROM "rows"),
      'accounts', (SELECT coalesce(jsonb_agg(jsonb_build_object('id', a."id", 'status', a."status")), '[]') FROM "Account" a WHERE a."id" = ANY(${accountIds}::uuid[])))`;
}

interface Accepted {
  x: WithdrawalRequestItem;
  id: string;
  destination: DestinationRow;
  status: WithdrawalStatus;
  approvalReason: string | null;
  withdrawalPolicyId: string | null;
  payoutPolicyId: string | null;
}

async function writeAccepted(tx: RawDb, deps: MoneyDeps, accepted: Accepted[], now: Date, withEndpoints: ReadonlySet<string>): Promise<void> {
  // Requested and (no approval needed) approved: every event of the group. In the holds' statement
  // when no organization of the group had a webhook endpoint when read (issue 22, session 10: no
  // delivery, so no job to send after it; one round trip fewer); else in one statement of their own,
  // which sends the deliveries' jobs.
  const events = accepted.flatMap((a) => [
    {
      organizationId: a.x.account.organizationId,
      event: webhookEvent('withdrawal.requested', {
        WithdrawalId: a.id,
        AccountId: a.x.account.id,
        Amount: a.x.amount,
        WithdrawalDestinationId: a.destination.id,
      }),
    },
    ...(a.status === 'PENDING_APPROVAL'
      ? []
      : [{ organizationId: a.x.account.organizationId, event: webhookEvent('withdrawal.approved', { WithdrawalId: a.id, ActorMemberId: null }) }]),
  ]);
  const eventsInline = accepted.every((a) => !withEndpoints.has(a.x.account.organizationId));
  if (!eventsInline) await emitEvents(tx, deps, events);
  // The rest of an automatic approval: the broadcast of the custodial withdrawals, ONE job for the
  // group's (issue 22, session 9: one job row, not one per withdrawal; each outcome stays on its row),
  // written by the holds' statement when pg-boss's insert can be a part of it (session 12: one round
  // trip fewer; src/kernel/job-rows.ts), else on its own.
  const broadcast = accepted.filter((a) => a.status === 'APPROVED');
  const broadcastJobs = [{ data: { withdrawalIds: broadcast.map((a) => a.id) } satisfies WithdrawalBroadcastJob }];
  const broadcastParts = broadcast.length && deps.boss ? await jobInsertParts(deps.boss, WITHDRAWAL_BROADCAST_QUEUE) : null;
  if (broadcast.length && deps.boss && !broadcastParts) await deps.boss.insert(WITHDRAWAL_BROADCAST_QUEUE, broadcastJobs, { db: fromPrisma(tx as never) });
  // The holds (key withdrawal:<id>:hold), the rows naming them, their audit entries and the keys'
  // records: one statement, the last before the commit (the CHAIN_CLEARING row is written once, with the sum).
  const col = <T>(f: (a: Accepted) => T) => accepted.map(f);
  const actors = accepted.map((a) => actorOf(a.x.actor.principal));
  const keyed = accepted.filter((a) => a.x.idempotency);
  const expiresAt = new Date(now.getTime() + IDEMPOTENCY_RETENTION_MS);
  const posted = await postInStatement(
    tx,
    accepted.map((a) => ({
      hold: {
        idempotencyKey: `withdrawal:${a.id}:hold`,
        nature: 'withdrawal.requested',
        organizationId: a.x.account.organizationId,
        referenceType: 'Withdrawal',
        referenceId: a.id,
        debit: { kind: 'CUSTOMER', ownerId: a.x.account.id, organizationId: a.x.account.organizationId, assetNetworkId: a.x.assetNetworkId },
        credit: ledgerAccounts.clearing(a.x.assetNetworkId),
        amount: a.x.amount,
        postedAt: now,
      },
    })),
    Prisma.sql`${eventsInline ? Prisma.sql`${eventsCte(deps, events)},` : Prisma.empty} "w" AS (
      INSERT INTO "Withdrawal" ("id", "organizationId", "environmentType", "applicationId", "accountId", "assetNetworkId", "networkId",
                                "withdrawalDestinationId", "toAddress", "amount", "status", "custodyMode", "walletId", "sourceIndex", "fromAddress",
                                "holdId", "withdrawalPolicyId", "payoutPolicyId", "approvalReason", "approvedAt", "createdAt", "updatedAt")
      SELECT v."id", v."org", v."env", v."app", v."acc", v."an", v."net", v."dest", v."to", v."amount", v."status", v."custody", v."wallet", v."idx", v."from",
             lr."hold", v."wp", v."pp", v."reason", v."approvedAt", ${now}::timestamptz, ${now}::timestamptz
        FROM unnest(${col((a) => a.id)}::uuid[], ${col((a) => a.x.account.organizationId)}::uuid[], ${col((a) => a.x.account.mode)}::"EnvironmentType"[],
                    ${col((a) => a.x.applicationId)}::uuid[], ${col((a) => a.x.account.id)}::uuid[], ${col((a) => a.x.assetNetworkId)}::uuid[],
                    ${col((a) => a.x.networkId)}::uuid[], ${col((a) => a.destination.id)}::uuid[], ${col((a) => a.destination.address)}::text[],
                    ${col((a) => amountToNumeric(a.x.amount))}::numeric[], ${col((a) => a.status)}::"WithdrawalStatus"[],
                    ${col((a) => (a.x.source ? 'SELF_CUSTODY' : 'CUSTODIAL'))}::"CustodyMode"[], ${col((a) => a.x.source?.walletId ?? null)}::uuid[],
                    ${col((a) => a.x.source?.sourceIndex ?? null)}::int[], ${col((a) => a.x.source?.fromAddress ?? null)}::text[],
                    ${col((a) => a.withdrawalPolicyId)}::uuid[], ${col((a) => a.payoutPolicyId)}::uuid[], ${col((a) => a.approvalReason)}::text[],
                    ${col((a) => (a.status === 'PENDING_APPROVAL' ? null : now))}::timestamptz[])
             WITH ORDINALITY AS v("id", "org", "env", "app", "acc", "an", "net", "dest", "to", "amount", "status", "custody", "wallet", "idx", "from",
                                  "wp", "pp", "reason", "approvedAt", "ord")
        JOIN ledger_results lr ON lr."ord" = v."ord" AND lr."s" <> 'error'
       -- Should an endpoint have been added since the read, the events' deliveries make the statement
       -- fail (a division by zero, as the payment intents' statement guards itself) and nothing of it
       -- commits: the group is written again (submitWithdrawalRequest), and reads the endpoint.
       ${eventsInline ? Prisma.sql`WHERE ${NO_DELIVERIES} = 1` : Prisma.empty}
      RETURNING "id", "holdId"
    ), "a" AS (
      INSERT INTO "AuditLogEntry" ("id", "occurredAt", "organizationId", "actorType", "actorId", "entityType", "entityId", "action", "requestId", "before", "after")
      SELECT u."id", ${now}::timestamptz, u."org", u."actorType", u."actorId", 'Withdrawal', u."entity", 'withdrawal.requested', u."requestId", NULL,
             u."after" || jsonb_build_object('holdId', w."holdId"::text)
        FROM unnest(${col(() => monotonicUuidv7(now.getTime()))}::uuid[], ${col((a) => a.x.account.organizationId)}::uuid[],
                    ${actors.map((a) => a.actorType)}::"PrincipalType"[], ${actors.map((a) => a.actorId)}::uuid[], ${col((a) => a.id)}::uuid[],
                    ${col((a) => a.x.actor.requestId)}::text[],
                    ${col((a) =>
                      JSON.stringify({
                        status: a.status,
                        accountId: a.x.account.id,
                        assetNetworkId: a.x.assetNetworkId,
                        amount: amountToString(a.x.amount),
                        withdrawalDestinationId: a.destination.id,
                        custodyMode: a.x.source ? 'SELF_CUSTODY' : 'CUSTODIAL',
                        approvalReason: a.approvalReason,
                      }),
                    )}::jsonb[])
             WITH ORDINALITY AS u("id", "org", "actorType", "actorId", "entity", "requestId", "after", "ord")
        JOIN "w" ON w."id" = u."entity"
       ORDER BY u."ord"
    ), "i" AS (
      INSERT INTO "IdempotencyRecord" ("id", "scope", "key", "requestHash", "response", "createdAt", "expiresAt")
      SELECT uuidv7(), k."scope", k."key", k."hash", jsonb_build_object('id', k."wid"::text), ${now}::timestamptz, ${expiresAt}::timestamptz
        FROM unnest(${keyed.map((a) => a.x.idempotency!.scope)}::text[], ${keyed.map((a) => a.x.idempotency!.key)}::text[],
                    ${keyed.map((a) => a.x.idempotency!.requestHash)}::text[], ${keyed.map((a) => a.id)}::uuid[]) AS k("scope", "key", "hash", "wid")
        JOIN "w" ON w."id" = k."wid"
      ON CONFLICT ("scope", "key") DO UPDATE
        SET "requestHash" = EXCLUDED."requestHash", "response" = EXCLUDED."response", "createdAt" = EXCLUDED."createdAt", "expiresAt" = EXCLUDED."expiresAt"
    )${broadcastParts ? Prisma.sql`, "broadcast_job" AS (${jobInsertSql(broadcastParts, broadcastJobs)})` : Prisma.empty}`,
  );
  // Every refusal was decided above, on the locked rows, but for a change of an account's status
  // committed while the group waited for the account's lock (the statement that read the status took
  // its snapshot before the lock was granted; ledger_post reads it after): the group rolls back and
  // its requests run alone, each on a fresh read. Anything else here is a bug (the same path).
  const refused = posted.find((p): p is LedgerError => p instanceof LedgerError);
  if (refused) throw refused;
}
