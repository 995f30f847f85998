/**
 * The ledger's invariants, checked against the database (docs/ledger.md, "Invariants"). Call it
 * after a test that moves money (e.g. in afterEach): it throws with every violation it finds.
 *
 * 1. Per asset-network: posted debits = posted credits, over all entries and over all balance rows;
 *    pending debits = pending credits over the pending entries of PENDING holds and over the rows.
 * 2. Every ledger transaction is balanced per asset-network; every entry's asset-network is its account's.
 * 3. Every balance row's totals equal the sums of its entries (posted: non-pending entries; pending:
 *    the pending entries of its holds still PENDING).
 * 4. Versions: each account's entries carry accountVersion 1..version, no gap, no repeat.
 * 5. Holds: two pending entries each (debit on its debit account, credit on its credit account, its
 *    amount); a POSTED hold has exactly its posted amount in two non-pending entries of its
 *    resolving transaction; a VOIDED or EXPIRED hold none; resolution fields match the status.
 * 6. No customer account has a negative available balance.
 */
export interface QueryableDb {
  $queryRawUnsafe<T = unknown>(query: string, ...values: unknown[]): Promise<T>;
}

const checks: { name: string; sql: string }[] = [
  {
    name: 'posted entries balance per asset-network',
    sql: `SELECT "assetNetworkId"::text AS an, sum(CASE WHEN "direction" = 'DEBIT' THEN "amount" ELSE -"amount" END)::text AS "debitsMinusCredits"
            FROM "LedgerEntry" WHERE NOT "pending" GROUP BY 1
          HAVING sum(CASE WHEN "direction" = 'DEBIT' THEN "amount" ELSE -"amount" END) <> 0`,
  },
  {
    name: 'pending entries of PENDING holds balance per asset-network',
    sql: `SELECT e."assetNetworkId"::text AS an, sum(CASE WHEN e."direction" = 'DEBIT' THEN e."amount" ELSE -e."amount" END)::text AS "debitsMinusCredits"
            FROM "LedgerEntry" e JOIN "LedgerHold" h ON h."id" = e."holdId"
           WHERE e."pending" AND h."status" = 'PENDING' GROUP BY 1
          HAVING sum(CASE WHEN e."direction" = 'DEBIT' THEN e."amount" ELSE -e."amount" END) <> 0`,
  },
  {
    name: 'balance rows balance per asset-network (posted and pending totals)',
    sql: `SELECT "assetNetworkId"::text AS an, (sum("debitsPosted") - sum("creditsPosted"))::text AS posted, (sum("debitsPending") - sum("creditsPending"))::text AS pending
            FROM "LedgerAccount" GROUP BY 1
          HAVING sum("debitsPosted") <> sum("creditsPosted") OR sum("debitsPending") <> sum("creditsPending")`,
  },
  {
    name: 'every ledger transaction balances per asset-network',
    sql: `SELECT "ledgerTransactionId"::text AS tx, "assetNetworkId"::text AS an
            FROM "LedgerEntry" GROUP BY 1, 2
          HAVING sum(CASE WHEN "direction" = 'DEBIT' THEN "amount" ELSE -"amount" END) <> 0`,
  },
  {
    name: "entries are in their account's asset-network",
    sql: `SELECT e."id"::text AS entry FROM "LedgerEntry" e JOIN "LedgerAccount" a ON a."id" = e."ledgerAccountId" WHERE a."assetNetworkId" <> e."assetNetworkId"`,
  },
  {
    name: 'balance rows equal the sums of their entries',
    sql: `WITH sums AS (
            SELECT e."ledgerAccountId" AS id,
                   coalesce(sum(e."amount") FILTER (WHERE NOT e."pending" AND e."direction" = 'DEBIT'), 0) AS dp,
                   coalesce(sum(e."amount") FILTER (WHERE NOT e."pending" AND e."direction" = 'CREDIT'), 0) AS cp,
                   coalesce(sum(e."amount") FILTER (WHERE e."pending" AND e."direction" = 'DEBIT' AND h."status" = 'PENDING'), 0) AS dpe,
                   coalesce(sum(e."amount") FILTER (WHERE e."pending" AND e."direction" = 'CREDIT' AND h."status" = 'PENDING'), 0) AS cpe
              FROM "LedgerEntry" e LEFT JOIN "LedgerHold" h ON h."id" = e."holdId"
             GROUP BY 1)
          SELECT a."id"::text AS account, a."kind"::text AS kind,
                 a."debitsPosted"::text AS "debitsPosted", coalesce(s.dp, 0)::text AS "entryDebits",
                 a."creditsPosted"::text AS "creditsPosted", coalesce(s.cp, 0)::text AS "entryCredits",
                 a."debitsPending"::text AS "debitsPending", coalesce(s.dpe, 0)::text AS "pendingEntryDebits",
                 a."creditsPending"::text AS "creditsPending", coalesce(s.cpe, 0)::text AS "pendingEntryCredits"
            FROM "LedgerAccount" a LEFT JOIN sums s ON s.id = a."id"
           WHERE a."debitsPosted" <> coalesce(s.dp, 0) OR a."creditsPosted" <> coalesce(s.cp, 0)
              OR a."debitsPending" <> coalesce(s.dpe, 0) OR a."creditsPending" <> coalesce(s.cpe, 0)`,
  },
  {
    name: 'versions are 1..version per account, gap-free',
    sql: `SELECT a."id"::text AS account, a."version"::text AS "version", count(e."id")::text AS entries,
                 coalesce(min(e."accountVersion"), 0)::text AS "minVersion", coalesce(max(e."accountVersion"), 0)::text AS "maxVersion",
                 count(DISTINCT e."accountVersion")::text AS "distinctVersions"
            FROM "LedgerAccount" a LEFT JOIN "LedgerEntry" e ON e."ledgerAccountId" = a."id"
           GROUP BY a."id", a."version"
          HAVING count(e."id") <> a."version" OR count(DISTINCT e."accountVersion") <> a."version"
              OR coalesce(min(e."accountVersion"), 1) <> 1 OR coalesce(max(e."accountVersion"), 0) <> a."version"`,
  },
  {
    name: "every hold's entries match its status",
    sql: `WITH e AS (
            SELECT x."holdId",
                   count(*) FILTER (WHERE x."pending") AS pending_entries,
                   coalesce(sum(x."amount") FILTER (WHERE x."pending" AND x."direction" = 'DEBIT'), 0) AS pending_debit,
                   coalesce(sum(x."amount") FILTER (WHERE x."pending" AND x."direction" = 'CREDIT'), 0) AS pending_credit,
                   count(*) FILTER (WHERE NOT x."pending") AS posted_entries,
                   coalesce(sum(x."amount") FILTER (WHERE NOT x."pending" AND x."direction" = 'DEBIT'), 0) AS posted_debit,
                   coalesce(sum(x."amount") FILTER (WHERE NOT x."pending" AND x."direction" = 'CREDIT'), 0) AS posted_credit,
                   bool_and(x."ledgerAccountId" = CASE WHEN x."direction" = 'DEBIT' THEN hh."debitAccountId" ELSE hh."creditAccountId" END) AS sides_ok,
                   bool_and(CASE WHEN x."pending" THEN x."ledgerTransactionId" = hh."ledgerTransactionId"
                                 ELSE x."ledgerTransactionId" IS NOT DISTINCT FROM hh."resolvedByLedgerTransactionId" END) AS tx_ok
              FROM "LedgerEntry" x JOIN "LedgerHold" hh ON hh."id" = x."holdId"
             GROUP BY x."holdId")
          SELECT h."id"::text AS hold, h."status"::text AS status, h."amount"::text AS amount, h."postedAmount"::text AS "postedAmount",
                 coalesce(e.pending_entries, 0)::text AS "pendingEntries", coalesce(e.posted_entries, 0)::text AS "postedEntries"
            FROM "LedgerHold" h LEFT JOIN e ON e."holdId" = h."id"
           WHERE coalesce(e.pending_entries, 0) <> 2 OR e.pending_debit <> h."amount" OR e.pending_credit <> h."amount"
              OR NOT e.sides_ok OR NOT e.tx_ok
              OR (h."status" = 'POSTED' AND (e.posted_entries <> 2 OR e.posted_debit <> h."postedAmount" OR e.posted_credit <> h."postedAmount" OR h."postedAmount" <= 0))
              OR (h."status" <> 'POSTED' AND (e.posted_entries <> 0 OR h."postedAmount" <> 0))
              OR ((h."status" = 'PENDING') <> (h."resolvedAt" IS NULL)) OR ((h."status" = 'PENDING') <> (h."resolvedByLedgerTransactionId" IS NULL))`,
  },
  {
    name: 'customer, escrow and retained accounts never have a negative available balance',
    sql: `SELECT "id"::text AS account, "kind"::text AS kind, ("creditsPosted" - "debitsPosted" - "debitsPending")::text AS available
            FROM "LedgerAccount" WHERE "kind" IN ('CUSTOMER', 'ESCROW', 'RETAINED') AND "creditsPosted" - "debitsPosted" - "debitsPending" < 0`,
  },
  {
    name: "a transaction's escrow balance is funded - settled - (refunded - reversed)",
    sql: `SELECT t."id"::text AS transaction, (la."creditsPosted" - la."debitsPosted")::text AS escrow,
                 (t."fundedAmount" - t."settledAmount" - t."refundedAmount" + t."reversedAmount")::text AS expected
            FROM "Transaction" t JOIN "LedgerAccount" la ON la."kind" = 'ESCROW' AND la."ownerId" = t."id"
           WHERE t."status" NOT IN ('EXPIRED', 'CANCELLED')
             AND la."creditsPosted" - la."debitsPosted" <> t."fundedAmount" - t."settledAmount" - t."refundedAmount" + t."reversedAmount"`,
  },
  {
    name: 'an executed settlement moved gross = fee + the sum of its allocations, and each retained allocation sits in its RETAINED account',
    sql: `SELECT s."id"::text AS settlement FROM "Settlement" s
            LEFT JOIN (SELECT "settlementId", sum("amount") AS total FROM "SettlementAllocation" GROUP BY 1) a ON a."settlementId" = s."id"
           WHERE s."status" = 'EXECUTED' AND (s."grossAmount" <> s."feeAmount" + s."distributableAmount" OR coalesce(a.total, 0) <> s."distributableAmount")
          UNION ALL
          SELECT sa."id"::text FROM "SettlementAllocation" sa
            LEFT JOIN "LedgerAccount" la ON la."kind" = 'RETAINED' AND la."ownerId" = sa."id"
           WHERE coalesce(la."creditsPosted" - la."debitsPosted", 0) <> CASE WHEN sa."status" = 'RETAINED' THEN sa."amount" - sa."reversedAmount" ELSE 0 END`,
  },
];

/** Throws with a clear message (every failed invariant with up to 5 offending rows) unless all hold. */
export async function checkLedgerInvariants(db: QueryableDb): Promise<void> {
  const failures: string[] = [];
  for (const c of checks) {
    const rows = await db.$queryRawUnsafe<Record<string, unknown>[]>(c.sql);
    if (rows.length)
      failures.push(
        `- ${c.name}: ${rows.length} violation(s), e.g. ${rows
          .slice(0, 5)
          .map((r) => JSON.stringify(r))
          .join('; ')}`,
      );
  }
  if (failures.length) throw new Error(`ledger invariants violated:\n${failures.join('\n')}`);
}
