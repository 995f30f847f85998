-- SequenceNumbers from a PostgreSQL sequence per endpoint instead of a counter column.
--
-- The counter column had to be locked (FOR UPDATE) by every transaction that emitted an event, until
-- its commit: all the event-emitting transactions of one organization ran one at a time. A sequence
-- hands out numbers without a lock held to commit. Numbers stay unique and strictly increasing per
-- endpoint in the order they are taken; a rolled-back transaction leaves a gap, and two transactions
-- of one organization may commit in the other order than their numbers (the spec: a hint only).

-- The sequence of an endpoint, by name (44 characters: within PostgreSQL's 63).
CREATE FUNCTION webhook_endpoint_sequence(endpoint_id uuid) RETURNS text
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$ SELECT 'webhook_endpoint_seq_' || replace(endpoint_id::text, '-', '') $$;

-- Every endpoint row gets its sequence in the transaction that inserts it (a rollback drops both).
CREATE FUNCTION webhook_endpoint_create_sequence() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
BEGIN
  EXECUTE format('CREATE SEQUENCE %I AS bigint MINVALUE 1 NO CYCLE', webhook_endpoint_sequence(NEW."id"));
  RETURN NEW;
END
$$;

CREATE TRIGGER "WebhookEndpoint_sequence" AFTER INSERT ON "WebhookEndpoint"
  FOR EACH ROW EXECUTE FUNCTION webhook_endpoint_create_sequence();

-- Existing endpoints continue after their last number.
DO $$
DECLARE r record;
BEGIN
  FOR r IN SELECT "id", "lastSequenceNumber" FROM "WebhookEndpoint" LOOP
    EXECUTE format('CREATE SEQUENCE %I AS bigint MINVALUE 1 NO CYCLE START %s', webhook_endpoint_sequence(r."id"), r."lastSequenceNumber" + 1);
  END LOOP;
END
$$;

ALTER TABLE "WebhookEndpoint" DROP COLUMN "lastSequenceNumber";
