-- Canonical definition of ledger_account_lock_key().
-- Edit here, then `npm run migrate:new -- <name>` copies the changed file into a new migration
-- (docs/architecture.md). Defined by: 20261121210100_ledger_functions.

-- ------------------------------------------------------------------------------------------------
-- Postings and changes of an Account's status exclude each other: each posting takes a shared
-- transaction advisory lock per customer Account it touches (ledger_post, step 3) and reads the
-- status after it; a change of the status takes it exclusively before the row changes. So a
-- freeze or a close waits for the postings in flight and the next postings see it. (Account rows
-- are never locked by postings: no tuple lock, no WAL, no contention on the row.) A status change
-- that then reads balances (a close that requires zero) sees every posting committed before it.
CREATE OR REPLACE FUNCTION ledger_account_lock_key(account_id uuid) RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT hashtextextended('ledger.account:' || account_id::text, 0)
$$;
