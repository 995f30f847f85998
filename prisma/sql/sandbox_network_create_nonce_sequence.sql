-- Canonical definition of sandbox_network_create_nonce_sequence() and the trigger that runs it.
-- Edit here, then `npm run migrate:new -- <name>` copies the changed file into a new migration
-- (docs/architecture.md). Defined by: 20261127014056_sandbox_nonce.

-- Every SANDBOX network gets its nonce sequence in the transaction that inserts it (a rollback drops
-- both): a sandbox send takes its nonce with nextval, no lock held to its commit (issue 22).
CREATE OR REPLACE FUNCTION sandbox_network_create_nonce_sequence() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
BEGIN
  IF NEW."kind" = 'SANDBOX' THEN
    EXECUTE format('CREATE SEQUENCE %I AS bigint MINVALUE 0 START 0 NO CYCLE', sandbox_nonce_sequence(NEW."id"));
  END IF;
  RETURN NEW;
END
$$;
-- As webhook_endpoint_create_sequence: the service's least-privilege role may not create objects;
-- the function runs as its owner (who runs the migrations), so the sequence is the owner's and the
-- owner's default privileges give the service USAGE and SELECT on it (nextval). It only creates a
-- sequence named from the row's uuid; its search_path is pinned.
ALTER FUNCTION sandbox_network_create_nonce_sequence() SECURITY DEFINER SET search_path = public, pg_temp;
CREATE OR REPLACE TRIGGER "Network_sandbox_nonce_sequence" AFTER INSERT ON "Network"
  FOR EACH ROW EXECUTE FUNCTION sandbox_network_create_nonce_sequence();
