-- Canonical definition of ledger_entry_references() and the triggers that run it.
-- Edit here, then `npm run migrate:new -- <name>` copies the changed file into a new migration
-- (docs/architecture.md). Defined by: 20261121210100_ledger_functions.

CREATE OR REPLACE FUNCTION ledger_entry_references() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE bad record;
BEGIN
  SELECT n."id", n."ledgerTransactionId", n."ledgerAccountId", n."holdId",
         t."id" IS NULL AS no_transaction, a."id" IS NULL AS no_account, a."assetNetworkId" IS DISTINCT FROM n."assetNetworkId" AS wrong_asset_network,
         n."holdId" IS NOT NULL AND (h."id" IS NULL OR n."ledgerAccountId" NOT IN (h."debitAccountId", h."creditAccountId")) AS wrong_hold
    INTO bad
    FROM new_entries n
    LEFT JOIN LATERAL (SELECT x."id" FROM "LedgerTransaction" x WHERE x."id" = n."ledgerTransactionId") t ON true
    LEFT JOIN LATERAL (SELECT x."id", x."assetNetworkId" FROM "LedgerAccount" x WHERE x."id" = n."ledgerAccountId") a ON true
    LEFT JOIN LATERAL (SELECT x."id", x."debitAccountId", x."creditAccountId" FROM "LedgerHold" x WHERE x."id" = n."holdId") h ON true
   WHERE t."id" IS NULL OR a."id" IS NULL OR a."assetNetworkId" IS DISTINCT FROM n."assetNetworkId"
      OR (n."holdId" IS NOT NULL AND (h."id" IS NULL OR n."ledgerAccountId" NOT IN (h."debitAccountId", h."creditAccountId")))
   LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'LedgerEntry %: % (transaction %, account %, hold %)', bad."id",
      CASE WHEN bad.no_transaction THEN 'no such ledger transaction' WHEN bad.no_account THEN 'no such ledger account'
           WHEN bad.wrong_asset_network THEN 'not in its account''s asset-network' ELSE 'not on an account of its hold' END,
      bad."ledgerTransactionId", bad."ledgerAccountId", bad."holdId"
      USING ERRCODE = 'foreign_key_violation';
  END IF;
  RETURN NULL;
END
$$;
-- Plans are cached per session from the first executions, possibly while the tables were small:
-- never a sequential scan or a hash/merge join over the ledger (index lookups only; see ledger_post).
ALTER FUNCTION ledger_entry_references() SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off;
CREATE OR REPLACE TRIGGER "LedgerEntry_references" AFTER INSERT ON "LedgerEntry" REFERENCING NEW TABLE AS new_entries
  FOR EACH STATEMENT EXECUTE FUNCTION ledger_entry_references();
