-- Canonical definition of ledger_hold_guard() and the triggers that run it.
-- Edit here, then `npm run migrate:new -- <name>` copies the changed file into a new migration
-- (docs/architecture.md). Defined by: 20261121210100_ledger_functions.

-- A hold resolves exactly once: PENDING -> POSTED | VOIDED | EXPIRED, and nothing else changes.
CREATE OR REPLACE FUNCTION ledger_hold_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'UPDATE' THEN
    RAISE EXCEPTION 'LedgerHold rows are never removed: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
  END IF;
  IF OLD."status" <> 'PENDING' OR NEW."status" = 'PENDING' THEN
    RAISE EXCEPTION 'LedgerHold %: a hold resolves exactly once (% -> %)', OLD."id", OLD."status", NEW."status" USING ERRCODE = 'insufficient_privilege';
  END IF;
  IF NEW."id" <> OLD."id" OR NEW."ledgerTransactionId" <> OLD."ledgerTransactionId" OR NEW."debitAccountId" <> OLD."debitAccountId"
     OR NEW."creditAccountId" <> OLD."creditAccountId" OR NEW."assetNetworkId" <> OLD."assetNetworkId" OR NEW."amount" <> OLD."amount"
     OR NEW."expiresAt" IS DISTINCT FROM OLD."expiresAt" OR NEW."createdAt" <> OLD."createdAt" THEN
    RAISE EXCEPTION 'LedgerHold %: only the resolution may change', OLD."id" USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN NEW;
END
$$;
CREATE OR REPLACE TRIGGER "LedgerHold_guard" BEFORE UPDATE OR DELETE ON "LedgerHold" FOR EACH ROW EXECUTE FUNCTION ledger_hold_guard();
CREATE OR REPLACE TRIGGER "LedgerHold_no_truncate" BEFORE TRUNCATE ON "LedgerHold" FOR EACH STATEMENT EXECUTE FUNCTION ledger_hold_guard();
