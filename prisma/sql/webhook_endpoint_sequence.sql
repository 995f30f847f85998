-- Canonical definition of webhook_endpoint_sequence().
-- Edit here, then `npm run migrate:new -- <name>` copies the changed file into a new migration
-- (docs/architecture.md). Defined by: 20261121200000_webhook_sequences.

-- The sequence of an endpoint, by name (44 characters: within PostgreSQL's 63).
CREATE OR REPLACE FUNCTION webhook_endpoint_sequence(endpoint_id uuid) RETURNS text
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$ SELECT 'webhook_endpoint_seq_' || replace(endpoint_id::text, '-', '') $$;
