import { poolOf, poolQuery, type PrismaClient } from '../db/prisma';
import type { EnvironmentType } from '../generated/prisma/enums';
import { actorOf, AUDIT_INSERT_HEAD, type Actor } from '../audit/audit';
import { monotonicUuidv7 } from '../ids';
import type { AccountRow } from './accounts';
import { createGroupCommit, type GroupCommit } from '../kernel/group-commit';
import { columns } from '../kernel/columns';

/**
 * Group commit of account creations (issue 22): the creations that arrive while the previous
 * statement runs (or within one turn of the event loop) are written by ONE statement, committed on
 * its own: the accounts, the API keys' application authorizations and the audit entries, one
 * INSERT per table over unnest()ed arrays, in a data-modifying CTE. Each caller is answered after
 * that commit. An item refused (its holder has no ACTIVE relationship with the organization, its
 * reference is already used) is left out by the statement itself (a WHERE and ON CONFLICT DO
 * NOTHING) and answered alone: the others commit. A statement that fails as a whole (any other
 * error) is retried item by item, so an error reaches only the request that caused it.
 *
 * Creations with an Idempotency-Key do not come here: they run in their idempotency transaction.
 */
export interface AccountToCreate {
  organizationId: string;
  name: string;
  reference: string | null;
  accountHolderId: string | null;
  mode: EnvironmentType;
  /** The API key's application, authorized for the account (null: a member creates it). */
  applicationId: string | null;
  actor: Actor;
  now: Date;
}

/** Why an item was not written: the caller answers it (the others of its batch committed). */
export type Refusal = 'holder' | 'reference';
type Outcome = { row: AccountRow } | { refused: Refusal };

type Item = AccountToCreate & { id: string; auditId: string };

/** Largest batch; statements in flight at once (each on a connection of its own). */
const MAX_BATCH = 256;
const CONCURRENCY = 2;

const SQL = `
  WITH "account" AS (
    INSERT INTO "Account" ("id", "organizationId", "accountHolderId", "name", "reference", "mode", "status", "createdAt", "updatedAt")
    SELECT x."id", x."organizationId", x."accountHolderId", x."name", x."reference", x."mode", 'ACTIVE', x."at", x."at"
    FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::"EnvironmentType"[], $7::timestamptz[])
      WITH ORDINALITY AS x("id", "organizationId", "accountHolderId", "name", "reference", "mode", "at", "ord")
    WHERE x."accountHolderId" IS NULL
       OR EXISTS (SELECT 1 FROM "Relationship" r WHERE r."organizationId" = x."organizationId" AND r."accountHolderId" = x."accountHolderId" AND r."status" = 'ACTIVE')
    ORDER BY x."ord"
    ON CONFLICT ("organizationId", "reference") DO NOTHING
    RETURNING *
  ), "refused" AS (
    SELECT x."id" FROM unnest($1::uuid[], $2::uuid[], $3::uuid[]) AS x("id", "organizationId", "accountHolderId")
    WHERE x."accountHolderId" IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM "Relationship" r WHERE r."organizationId" = x."organizationId" AND r."accountHolderId" = x."accountHolderId" AND r."status" = 'ACTIVE')
  ), "authorization" AS (
    INSERT INTO "AccountApplicationAuthorization" ("accountId", "applicationId", "createdAt")
    SELECT a."id", y."applicationId", a."createdAt" FROM "account" a JOIN unnest($1::uuid[], $8::uuid[]) AS y("id", "applicationId") ON y."id" = a."id"
    WHERE y."applicationId" IS NOT NULL
  ), "audit" AS (
    ${AUDIT_INSERT_HEAD}
    SELECT w."auditId", a."createdAt", a."organizationId", w."actorType", w."actorId", 'Account', a."id", 'account.created', w."requestId", NULL, w."after"
    FROM "account" a
    JOIN unnest($1::uuid[], $9::uuid[], $10::"PrincipalType"[], $11::uuid[], $12::text[], $13::jsonb[]) AS w("id", "auditId", "actorType", "actorId", "requestId", "after") ON w."id" = a."id"
  )
  SELECT ARRAY(SELECT "id"::text FROM "refused") AS "refusedHolderIds", a.* FROM (SELECT 1) AS "one" LEFT JOIN "account" a ON true`;

/** Writes one batch with one statement; an outcome per item, in order. */
async function writeBatch(db: PrismaClient, batch: Item[]): Promise<Outcome[]> {
  const values = columns(
    batch,
    (i) => i.id,
    (i) => i.organizationId,
    (i) => i.accountHolderId,
    (i) => i.name,
    (i) => i.reference,
    (i) => i.mode,
    (i) => i.now,
    (i) => i.applicationId,
    (i) => i.auditId,
    (i) => actorOf(i.actor.principal).actorType,
    (i) => actorOf(i.actor.principal).actorId,
    (i) => i.actor.requestId,
    (i) =>
      JSON.stringify({
        name: i.name,
        reference: i.reference,
        accountHolderId: i.accountHolderId,
        mode: i.mode,
        status: 'ACTIVE',
        authorizedApplicationIds: i.applicationId ? [i.applicationId] : [],
      }),
  );
  const { rows } = await poolQuery<Omit<AccountRow, 'authorizations'> & { refusedHolderIds: string[] }>(db, SQL, values)!;
  const refused = new Set(rows[0]?.refusedHolderIds ?? []);
  const written = new Map<string, Omit<AccountRow, 'authorizations'>>();
  for (const { refusedHolderIds: _r, ...row } of rows) if (row.id !== null) written.set(row.id, row);
  return batch.map((i): Outcome => {
    const row = written.get(i.id);
    if (row) return { row: { ...row, authorizations: i.applicationId ? [{ applicationId: i.applicationId }] : [] } };
    return { refused: refused.has(i.id) ? 'holder' : 'reference' };
  });
}

type Batcher = GroupCommit<Item, Outcome>;

/** One turn of the event loop gathers a statement's items (the requests parsed in that turn join it); the statements in flight share what waits. */
const createBatcher = (db: PrismaClient): Batcher =>
  createGroupCommit({ maxGroup: MAX_BATCH, concurrency: CONCURRENCY, gatherTurn: true, write: (items) => writeBatch(db, items) });

const batchers = new WeakMap<object, Batcher>();

/**
 * Creates an account in the next group commit of this process's pool. null: the client has no pool
 * of ours (a client not made by createPrisma): the caller writes it alone.
 */
export function createInBatch(db: PrismaClient, item: AccountToCreate): Promise<Outcome> | null {
  if (!poolOf(db)) return null;
  let b = batchers.get(db);
  if (!b) batchers.set(db, (b = createBatcher(db)));
  const now = item.now.getTime();
  // Ids increase in creation order within this process (accounts page by id).
  return b.submit({ ...item, id: monotonicUuidv7(now), auditId: monotonicUuidv7(now) });
}
