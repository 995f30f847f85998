-- Canonical definition of ledger_account_guard() and the triggers that run it.
-- Edit here, then `npm run migrate:new -- <name>` copies the changed file into a new migration
-- (docs/architecture.md). Defined by: 20261121210100_ledger_functions.

-- Posted totals and the version only grow; identity columns never change; rows are never deleted.
CREATE OR REPLACE FUNCTION ledger_account_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'UPDATE' THEN
    RAISE EXCEPTION 'LedgerAccount rows are never removed: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
  END IF;
  IF NEW."id" <> OLD."id" OR NEW."kind" <> OLD."kind" OR NEW."ownerId" IS DISTINCT FROM OLD."ownerId"
     OR NEW."organizationId" IS DISTINCT FROM OLD."organizationId" OR NEW."assetNetworkId" <> OLD."assetNetworkId"
     OR NEW."normalBalance" <> OLD."normalBalance" OR NEW."createdAt" <> OLD."createdAt" THEN
    RAISE EXCEPTION 'LedgerAccount %: identity columns are immutable', OLD."id" USING ERRCODE = 'insufficient_privilege';
  END IF;
  IF NEW."debitsPosted" < OLD."debitsPosted" OR NEW."creditsPosted" < OLD."creditsPosted" OR NEW."version" < OLD."version" THEN
    RAISE EXCEPTION 'LedgerAccount %: posted totals and version only grow', OLD."id" USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN NEW;
END
$$;
CREATE OR REPLACE TRIGGER "LedgerAccount_guard" BEFORE UPDATE OR DELETE ON "LedgerAccount" FOR EACH ROW EXECUTE FUNCTION ledger_account_guard();
CREATE OR REPLACE TRIGGER "LedgerAccount_no_truncate" BEFORE TRUNCATE ON "LedgerAccount" FOR EACH STATEMENT EXECUTE FUNCTION ledger_account_guard();
