-- Canonical definition of webhook_endpoint_create_sequence() and the triggers that run it.
-- Edit here, then `npm run migrate:new -- <name>` copies the changed file into a new migration
-- (docs/architecture.md). Defined by: 20261121200000_webhook_sequences, 20261125100100_service_role.

-- Every endpoint row gets its sequence in the transaction that inserts it (a rollback drops both).
CREATE OR REPLACE FUNCTION webhook_endpoint_create_sequence() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
BEGIN
  EXECUTE format('CREATE SEQUENCE %I AS bigint MINVALUE 1 NO CYCLE', webhook_endpoint_sequence(NEW."id"));
  RETURN NEW;
END
$$;
-- The service connects as a least-privilege role (src/db/grants.ts), which may not create objects.
-- A new webhook endpoint's sequence is made by its insert's trigger: the trigger function runs
-- as its owner (the schema owner, who runs the migrations), so the sequence is the owner's, and the
-- owner's default privileges give the service USAGE and SELECT on it (nextval). The function
-- only creates a sequence named from the row's uuid; its search_path is pinned.
ALTER FUNCTION webhook_endpoint_create_sequence() SECURITY DEFINER SET search_path = public, pg_temp;
CREATE OR REPLACE TRIGGER "WebhookEndpoint_sequence" AFTER INSERT ON "WebhookEndpoint"
  FOR EACH ROW EXECUTE FUNCTION webhook_endpoint_create_sequence();
