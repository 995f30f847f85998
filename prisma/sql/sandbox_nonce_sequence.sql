-- Canonical definition of sandbox_nonce_sequence().
-- Edit here, then `npm run migrate:new -- <name>` copies the changed file into a new migration
-- (docs/architecture.md). Defined by: 20261127014056_sandbox_nonce.

-- The nonce sequence of a SANDBOX network, by name (50 characters: within PostgreSQL's 63).
CREATE OR REPLACE FUNCTION sandbox_nonce_sequence(network_id uuid) RETURNS text
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$ SELECT 'sandbox_nonce_seq_' || replace(network_id::text, '-', '') $$;
