-- The nonce of a sandbox transaction from a PostgreSQL sequence per SANDBOX network (issue 22),
-- instead of counting the network's transactions under a network-wide advisory lock held to the
-- commit: every send of a network ran one at a time, behind the previous one's commit. A sequence
-- hands out numbers without a lock held to commit (as the webhook endpoints' SequenceNumbers,
-- migration 20261121200000_webhook_sequences). Nonces stay unique and increasing per network in the
-- order they are taken, from 0 (the count they were); a rolled-back send leaves a gap.

-- Canonical definition of sandbox_nonce_sequence().
-- Edit here, then `npm run migrate:new -- <name>` copies the changed file into a new migration
-- (docs/architecture.md). Defined by: 20261127014056_sandbox_nonce.

-- The nonce sequence of a SANDBOX network, by name (50 characters: within PostgreSQL's 63).
CREATE OR REPLACE FUNCTION sandbox_nonce_sequence(network_id uuid) RETURNS text
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$ SELECT 'sandbox_nonce_seq_' || replace(network_id::text, '-', '') $$;

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

-- Existing SANDBOX networks continue after their count of transactions (the nonce they would take next).
DO $$
DECLARE r record;
BEGIN
  FOR r IN SELECT n."id", (SELECT count(*) FROM "SandboxTransaction" t WHERE t."networkId" = n."id") AS next
             FROM "Network" n WHERE n."kind" = 'SANDBOX' LOOP
    EXECUTE format('CREATE SEQUENCE %I AS bigint MINVALUE 0 START %s NO CYCLE', sandbox_nonce_sequence(r."id"), r.next);
  END LOOP;
END
$$;
