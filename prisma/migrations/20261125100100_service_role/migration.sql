-- The service connects as a least-privilege role (src/db/grants.ts), which may not create objects.
-- A new webhook endpoint's sequence is made by its insert's trigger: the trigger function runs
-- as its owner (the schema owner, who runs the migrations), so the sequence is the owner's, and the
-- owner's default privileges give the service USAGE and SELECT on it (nextval). The function
-- only creates a sequence named from the row's uuid; its search_path is pinned.
ALTER FUNCTION webhook_endpoint_create_sequence() SECURITY DEFINER SET search_path = public, pg_temp;
