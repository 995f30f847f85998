-- Canonical definition of audit_log_entry_immutable() and the triggers that run it.
-- Edit here, then `npm run migrate:new -- <name>` copies the changed file into a new migration
-- (docs/architecture.md). Defined by: 20261121143058_init.

-- Hand-written: the audit log is append-only. No role the application uses can change or remove
-- an entry: corrections are new entries.
CREATE OR REPLACE FUNCTION audit_log_entry_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'AuditLogEntry is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END $$;
CREATE OR REPLACE TRIGGER "AuditLogEntry_immutable"
  BEFORE UPDATE OR DELETE ON "AuditLogEntry"
  FOR EACH ROW EXECUTE FUNCTION audit_log_entry_immutable();
CREATE OR REPLACE TRIGGER "AuditLogEntry_no_truncate"
  BEFORE TRUNCATE ON "AuditLogEntry"
  FOR EACH STATEMENT EXECUTE FUNCTION audit_log_entry_immutable();
