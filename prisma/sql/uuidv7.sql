-- Canonical definition of public.uuidv7(), for servers before PostgreSQL 18 (defined by
-- 20261125100800_portable). Edit here, then `npm run migrate:new -- <name>` copies the changed file
-- into a new migration (docs/architecture.md).
--
-- uuidv7() is built into PostgreSQL 18 (pg_catalog.uuidv7). The service supports PostgreSQL 15
-- and newer (docs/decisions.md, issue 24): where the server lacks it, this creates public.uuidv7()
-- with the same layout (RFC 9562: 48-bit Unix milliseconds, version 7, 12 bits of sub-millisecond
-- fraction, variant and 62 random bits from gen_random_uuid()). pg_catalog is searched before
-- public, so on 18 (or after an upgrade to 18) the built-in one is used.
DO $portable$
BEGIN
  IF to_regprocedure('pg_catalog.uuidv7()') IS NULL THEN
    EXECUTE $create$
      CREATE OR REPLACE FUNCTION public.uuidv7() RETURNS uuid LANGUAGE sql VOLATILE PARALLEL SAFE AS $body$
        SELECT encode(
          overlay(uuid_send(gen_random_uuid())
            PLACING int8send(((t.us / 1000) << 16) | 28672 | ((t.us % 1000) * 4096 / 1000))
            FROM 1 FOR 8),
          'hex')::uuid
        FROM (SELECT floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint AS us) AS t
      $body$
    $create$;
    COMMENT ON FUNCTION public.uuidv7() IS 'UUID version 7 (RFC 9562), for servers before PostgreSQL 18, which has it built in';
  END IF;
END
$portable$;
