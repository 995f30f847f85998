-- Canonical definition of LedgerCorrection_append_only() and the triggers that run it.
-- Edit here, then `npm run migrate:new -- <name>` copies the changed file into a new migration
-- (docs/architecture.md). Defined by: 20261121230200_withdrawal_destinations.

-- A correction is a record of what was done: never changed, never deleted (like the ledger itself).
CREATE OR REPLACE FUNCTION "LedgerCorrection_append_only"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'LedgerCorrection is append-only: % refused', TG_OP USING ERRCODE = 'restrict_violation';
END $$;
CREATE OR REPLACE TRIGGER "LedgerCorrection_append_only" BEFORE UPDATE OR DELETE ON "LedgerCorrection" FOR EACH ROW EXECUTE FUNCTION "LedgerCorrection_append_only"();
