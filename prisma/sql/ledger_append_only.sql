-- Canonical definition of ledger_append_only() and the triggers that run it.
-- Edit here, then `npm run migrate:new -- <name>` copies the changed file into a new migration
-- (docs/architecture.md). Defined by: 20261121210000_money_in, 20261121230600_network_costs.

-- The ledger is append-only: entries and transactions are never changed or deleted (corrections
-- are new transactions). Balance rows and holds change only through the posting functions.
CREATE OR REPLACE FUNCTION ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;
CREATE OR REPLACE TRIGGER "LedgerEntry_append_only" BEFORE UPDATE OR DELETE ON "LedgerEntry" FOR EACH ROW EXECUTE FUNCTION ledger_append_only();
CREATE OR REPLACE TRIGGER "LedgerEntry_no_truncate" BEFORE TRUNCATE ON "LedgerEntry" FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only();
CREATE OR REPLACE TRIGGER "LedgerTransaction_append_only" BEFORE UPDATE OR DELETE ON "LedgerTransaction" FOR EACH ROW EXECUTE FUNCTION ledger_append_only();
CREATE OR REPLACE TRIGGER "LedgerTransaction_no_truncate" BEFORE TRUNCATE ON "LedgerTransaction" FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only();
CREATE OR REPLACE TRIGGER "NetworkResourceReserveMovement_append_only" BEFORE UPDATE OR DELETE ON "NetworkResourceReserveMovement" FOR EACH ROW EXECUTE FUNCTION ledger_append_only();
CREATE OR REPLACE TRIGGER "NetworkResourceReserveMovement_no_truncate" BEFORE TRUNCATE ON "NetworkResourceReserveMovement" FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only();
