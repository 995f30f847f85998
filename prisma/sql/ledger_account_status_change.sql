-- Canonical definition of ledger_account_status_change() and the triggers that run it.
-- Edit here, then `npm run migrate:new -- <name>` copies the changed file into a new migration
-- (docs/architecture.md). Defined by: 20261121210100_ledger_functions.

CREATE OR REPLACE FUNCTION ledger_account_status_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(ledger_account_lock_key(NEW."id"));
  RETURN NEW;
END
$$;
CREATE OR REPLACE TRIGGER "Account_ledger_status" BEFORE UPDATE OF "status" ON "Account"
  FOR EACH ROW WHEN (OLD."status" IS DISTINCT FROM NEW."status") EXECUTE FUNCTION ledger_account_status_change();
