-- Canonical definition of ledger_post().
-- Edit here, then `npm run migrate:new -- <name>` copies the changed file into a new migration
-- (docs/architecture.md). Defined by: 20261121210100_ledger_functions, 20261121220000_release_settlements.

-- ------------------------------------------------------------------------------------------------
-- ledger_post(...): posts a batch of ledger operations in one call (one round trip), each
-- validated on its own: a refused item writes nothing and does not affect the others.
--
-- The batch arrives as parallel arrays (typed parameters: no JSON to parse), 1-based:
--   b_at: creation time of new balance rows;
--   account references r_*: kind, ownerId, organizationId, assetNetworkId, create-if-missing;
--   items x_*: op ('post' | 'hold' | 'post_hold' | 'void_hold' | 'expire_hold'), idempotency key,
--     payload hash, nature, organizationId, referenceType, referenceId, metadata, postedAt, its lines
--     lo..hi (post: >= 2; hold: debit then credit), hold id (resolutions), amount to post (post_hold;
--     null: all), expiresAt (hold), whether its key occurs more than once in the batch;
--   lines l_*: item, account reference, debit?, amount.
-- Returns one result per item, in order: {"s": "ok" | "replayed", "id": ledger transaction, "hold": hold id}
-- or {"s": "error", "reason": ..., "msg": ...}.
--
-- Locks, always in this order (so batches never deadlock each other): the idempotency keys
-- (transaction advisory locks, by hash), the holds being resolved (FOR UPDATE, by id), the
-- customer Accounts (shared transaction advisory locks, by hash: a freeze or close takes the
-- account's exclusively), missing balance rows (inserted by kind, owner, asset-network), then every
-- balance row involved (FOR UPDATE, by id).
CREATE OR REPLACE FUNCTION ledger_post(
  b_at timestamptz,
  r_kind "LedgerAccountKind"[], r_owner uuid[], r_org uuid[], r_an uuid[], r_create boolean[],
  x_op text[], x_key text[], x_hash text[], x_nature text[], x_org uuid[], x_rt text[], x_ri uuid[], x_meta jsonb[],
  x_at timestamptz[], x_lo int[], x_hi int[], x_hid uuid[], x_m numeric[], x_exp timestamptz[], x_dup boolean[],
  l_t int[], l_a int[], l_debit boolean[], l_m numeric[]
) RETURNS jsonb LANGUAGE plpgsql AS $fn$
DECLARE
  -- Account references, by index.
  r_id uuid[]; r_pos int[]; r_err text[]; r_status text[];
  n_ref int := coalesce(cardinality(r_kind), 0);
  n_tx int := coalesce(cardinality(x_op), 0);
  n_line int := coalesce(cardinality(l_t), 0);
  bad_tx int[];
  -- Holds being resolved.
  h_id uuid[] := '{}'; h_status text[] := '{}'; h_amount numeric[] := '{}'; h_da uuid[] := '{}'; h_ca uuid[] := '{}';
  h_exp timestamptz[] := '{}'; h_org uuid[] := '{}'; h_downer uuid[] := '{}'; h_cowner uuid[] := '{}';
  h_dst text[] := '{}'; h_cst text[] := '{}';
  h_pos jsonb := '{}';
  -- Locked balance rows, by position.
  a_id uuid[]; a_kind text[]; a_org uuid[]; a_an uuid[];
  a_dp numeric[]; a_cp numeric[]; a_dpe numeric[]; a_cpe numeric[]; a_ver bigint[];
  a_touched boolean[];
  a_pos jsonb;
  n_acc int;
  existing jsonb;
  -- What gets written.
  t_id uuid[] := '{}'; t_key text[] := '{}'; t_hash text[] := '{}'; t_nature text[] := '{}'; t_org uuid[] := '{}';
  t_rt text[] := '{}'; t_ri uuid[] := '{}'; t_meta jsonb[] := '{}'; t_at timestamptz[] := '{}'; n_t int := 0;
  e_tx uuid[] := '{}'; e_acc uuid[] := '{}'; e_an uuid[] := '{}'; e_dir "LedgerDirection"[] := '{}'; e_m numeric[] := '{}';
  e_pending boolean[] := '{}'; e_hold uuid[] := '{}'; e_ver bigint[] := '{}'; e_at timestamptz[] := '{}'; n_e int := 0;
  nh_id uuid[] := '{}'; nh_tx uuid[] := '{}'; nh_da uuid[] := '{}'; nh_ca uuid[] := '{}'; nh_an uuid[] := '{}';
  nh_m numeric[] := '{}'; nh_exp timestamptz[] := '{}'; nh_at timestamptz[] := '{}'; n_nh int := 0;
  hu_id uuid[] := '{}'; hu_status "LedgerHoldStatus"[] := '{}'; hu_m numeric[] := '{}'; hu_at timestamptz[] := '{}'; hu_tx uuid[] := '{}'; n_hu int := 0;
  res jsonb[] := '{}';
  -- Loop state.
  t int; j int; p int; pd int; pc int; hp int; ri int;
  op text; st text; ex jsonb; err text; msg text; tid uuid; hid uuid; amt numeric; m numeric; new_status text; org uuid;
BEGIN
  IF n_tx = 0 THEN RETURN '[]'::jsonb; END IF;
  IF b_at IS NULL
     OR coalesce(cardinality(r_owner), 0) <> n_ref OR coalesce(cardinality(r_org), 0) <> n_ref OR coalesce(cardinality(r_an), 0) <> n_ref
     OR coalesce(cardinality(r_create), 0) <> n_ref
     OR EXISTS (SELECT FROM unnest(ARRAY[cardinality(x_key), cardinality(x_hash), cardinality(x_nature), cardinality(x_org), cardinality(x_rt),
                                         cardinality(x_ri), cardinality(x_meta), cardinality(x_at), cardinality(x_lo), cardinality(x_hi),
                                         cardinality(x_hid), cardinality(x_m), cardinality(x_exp), cardinality(x_dup)]) AS c WHERE c IS DISTINCT FROM n_tx)
     OR coalesce(cardinality(l_a), 0) <> n_line OR coalesce(cardinality(l_debit), 0) <> n_line OR coalesce(cardinality(l_m), 0) <> n_line THEN
    RAISE EXCEPTION 'ledger_post: malformed batch (the arrays of a group must have one length)' USING ERRCODE = 'invalid_parameter_value';
  END IF;

  -- Structurally invalid postings (the TypeScript side refuses them first; this is the database's own check):
  -- a line without an amount > 0 or on an unknown reference, or debits <> credits in an asset-network.
  SELECT coalesce(array_agg(DISTINCT s.t), '{}') INTO bad_tx FROM (
    SELECT l.t FROM unnest(l_t, l_a, l_debit, l_m) AS l(t, a, d, m)
     GROUP BY l.t, r_an[l.a]
    HAVING sum(CASE WHEN l.d THEN l.m ELSE -l.m END) IS DISTINCT FROM 0 OR bool_or(l.m IS NULL OR l.m <= 0 OR l.a IS NULL OR l.a < 1 OR l.a > n_ref)
  ) s;

  -- 1. Idempotency keys, then what they already posted.
  PERFORM pg_advisory_xact_lock(s.h) FROM (SELECT DISTINCT hashtextextended(k, 4) AS h FROM unnest(x_key) AS k ORDER BY 1) s;
  SELECT coalesce(jsonb_object_agg(lt."idempotencyKey", jsonb_build_object('id', lt."id", 'hash', lt."payloadHash", 'hold', lh."id")), '{}')
    INTO existing
    FROM (SELECT DISTINCT k FROM unnest(x_key) AS k) u
    JOIN LATERAL (SELECT lt."id", lt."idempotencyKey", lt."payloadHash" FROM "LedgerTransaction" lt WHERE lt."idempotencyKey" = u.k) lt ON true
    LEFT JOIN LATERAL (SELECT lh."id" FROM "LedgerHold" lh WHERE lh."ledgerTransactionId" = lt."id") lh ON true;

  -- 2. The holds being resolved, if any.
  IF EXISTS (SELECT FROM unnest(x_hid) AS h WHERE h IS NOT NULL) THEN
    SELECT coalesce(array_agg(s."id" ORDER BY s."id"), '{}'), coalesce(array_agg(s."status" ORDER BY s."id"), '{}'), coalesce(array_agg(s."amount" ORDER BY s."id"), '{}'),
           coalesce(array_agg(s."debitAccountId" ORDER BY s."id"), '{}'), coalesce(array_agg(s."creditAccountId" ORDER BY s."id"), '{}'),
           coalesce(array_agg(s."expiresAt" ORDER BY s."id"), '{}'), coalesce(array_agg(s."organizationId" ORDER BY s."id"), '{}'),
           coalesce(array_agg(s.d_owner ORDER BY s."id"), '{}'), coalesce(array_agg(s.c_owner ORDER BY s."id"), '{}')
      INTO h_id, h_status, h_amount, h_da, h_ca, h_exp, h_org, h_downer, h_cowner
      FROM (SELECT lh."id", lh."status"::text AS "status", lh."amount", lh."debitAccountId", lh."creditAccountId", lh."expiresAt", lt."organizationId",
                   CASE WHEN da."kind" = 'CUSTOMER' THEN da."ownerId" END AS d_owner, CASE WHEN ca."kind" = 'CUSTOMER' THEN ca."ownerId" END AS c_owner
              FROM "LedgerHold" lh
              JOIN "LedgerTransaction" lt ON lt."id" = lh."ledgerTransactionId"
              JOIN "LedgerAccount" da ON da."id" = lh."debitAccountId"
              JOIN "LedgerAccount" ca ON ca."id" = lh."creditAccountId"
             WHERE lh."id" = ANY(x_hid)
             ORDER BY lh."id" FOR UPDATE OF lh) s;
    SELECT coalesce(jsonb_object_agg(u.id, u.ord), '{}') INTO h_pos FROM unnest(h_id) WITH ORDINALITY AS u(id, ord);
  END IF;

  -- 3. The customer Accounts involved: a shared lock each, which a change of the account's status
  --    takes exclusively (trigger "Account_ledger_status"): a freeze or a close waits for the
  --    postings in flight, and the postings after it wait for it. Their status is read after the
  --    locks, in the statements below, so it is the status no posting can race with.
  PERFORM pg_advisory_xact_lock_shared(s.h)
     FROM (SELECT DISTINCT ledger_account_lock_key(c.o) AS h
             FROM (SELECT u.o FROM unnest(r_kind, r_owner) AS u(k, o) WHERE u.k = 'CUSTOMER'
                   UNION ALL SELECT unnest(h_downer || h_cowner)) AS c(o)
            WHERE c.o IS NOT NULL
            ORDER BY 1) s;

  -- References that name nothing, and each customer account's status.
  SELECT coalesce(array_agg(CASE
           WHEN an."id" IS NULL THEN 'UNKNOWN_ASSET_NETWORK'
           WHEN u.k = 'CUSTOMER' AND a."organizationId" IS DISTINCT FROM u.g THEN 'UNKNOWN_ACCOUNT'
         END ORDER BY u.i), '{}'),
         coalesce(array_agg(a."status" ORDER BY u.i), '{}')
    INTO r_err, r_status
    FROM unnest(r_kind, r_owner, r_org, r_an) WITH ORDINALITY AS u(k, o, g, n, i)
    LEFT JOIN "AssetNetwork" an ON an."id" = u.n
    LEFT JOIN LATERAL (SELECT x."organizationId", x."status"::text AS "status" FROM "Account" x WHERE u.k = 'CUSTOMER' AND x."id" = u.o) a ON true;
  IF cardinality(h_id) > 0 THEN
    SELECT coalesce(array_agg(d."status" ORDER BY u.i), '{}'), coalesce(array_agg(c."status" ORDER BY u.i), '{}')
      INTO h_dst, h_cst
      FROM unnest(h_downer, h_cowner) WITH ORDINALITY AS u(d, c, i)
      LEFT JOIN LATERAL (SELECT x."status"::text AS "status" FROM "Account" x WHERE x."id" = u.d) d ON true
      LEFT JOIN LATERAL (SELECT x."status"::text AS "status" FROM "Account" x WHERE x."id" = u.c) c ON true;
  END IF;

  -- 4. The balance rows, created where missing (only those that may be needed: credited, or debited
  --    without a funds check). Rows that exist are never in the INSERT: its conflict check would
  --    wait for every transaction that updated them, outside the lock order below.
  SELECT coalesce(array_agg(x."id" ORDER BY u.i), '{}') INTO r_id
    FROM unnest(r_kind, r_owner, r_an) WITH ORDINALITY AS u(k, o, n, i)
    LEFT JOIN LATERAL (
      SELECT la."id" FROM "LedgerAccount" la WHERE la."kind" = u.k AND la."ownerId" = u.o AND la."assetNetworkId" = u.n
      UNION ALL
      SELECT la."id" FROM "LedgerAccount" la WHERE u.o IS NULL AND la."kind" = u.k AND la."ownerId" IS NULL AND la."assetNetworkId" = u.n
    ) x ON true;
  IF EXISTS (SELECT FROM unnest(r_create, r_err, r_id) AS u(c, e, id) WHERE u.c AND u.e IS NULL AND u.id IS NULL) THEN
    INSERT INTO "LedgerAccount" ("id", "kind", "ownerId", "organizationId", "assetNetworkId", "normalBalance", "createdAt", "updatedAt")
    SELECT uuidv7(), u.k, u.o, u.g, u.n, CASE WHEN u.k = 'CHAIN_CLEARING' THEN 'DEBIT'::"LedgerDirection" ELSE 'CREDIT'::"LedgerDirection" END, b_at, b_at
      FROM unnest(r_kind, r_owner, r_org, r_an, r_create, r_err, r_id) AS u(k, o, g, n, c, e, id)
     WHERE u.c AND u.e IS NULL AND u.id IS NULL
     ORDER BY u.k, u.o, u.n
    ON CONFLICT ("kind", "ownerId", "assetNetworkId") DO NOTHING;
    SELECT coalesce(array_agg(x."id" ORDER BY u.i), '{}') INTO r_id
      FROM unnest(r_kind, r_owner, r_an) WITH ORDINALITY AS u(k, o, n, i)
      LEFT JOIN LATERAL (
        SELECT la."id" FROM "LedgerAccount" la WHERE la."kind" = u.k AND la."ownerId" = u.o AND la."assetNetworkId" = u.n
        UNION ALL
        SELECT la."id" FROM "LedgerAccount" la WHERE u.o IS NULL AND la."kind" = u.k AND la."ownerId" IS NULL AND la."assetNetworkId" = u.n
      ) x ON true;
  END IF;

  -- 5. Every balance row involved, locked in id order.
  SELECT coalesce(array_agg(s."id"), '{}'), coalesce(array_agg(s."kind"::text), '{}'), coalesce(array_agg(s."organizationId"), '{}'),
         coalesce(array_agg(s."assetNetworkId"), '{}'), coalesce(array_agg(s."debitsPosted"), '{}'), coalesce(array_agg(s."creditsPosted"), '{}'),
         coalesce(array_agg(s."debitsPending"), '{}'), coalesce(array_agg(s."creditsPending"), '{}'), coalesce(array_agg(s."version"), '{}')
    INTO a_id, a_kind, a_org, a_an, a_dp, a_cp, a_dpe, a_cpe, a_ver
    -- (locked in id order; every array is built in one pass over the same rows, so position p is one row in all)
    FROM (SELECT la."id", la."kind", la."organizationId", la."assetNetworkId", la."debitsPosted", la."creditsPosted", la."debitsPending",
                 la."creditsPending", la."version"
            FROM "LedgerAccount" la WHERE la."id" = ANY(r_id || h_da || h_ca) ORDER BY la."id" FOR UPDATE) s;
  n_acc := coalesce(array_length(a_id, 1), 0);
  SELECT coalesce(jsonb_object_agg(u.id, u.ord), '{}') INTO a_pos FROM unnest(a_id) WITH ORDINALITY AS u(id, ord);
  a_touched := array_fill(false, ARRAY[greatest(n_acc, 1)]);
  r_pos := array_fill(NULL::int, ARRAY[greatest(n_ref, 1)]);
  FOR ri IN 1..n_ref LOOP
    IF r_id[ri] IS NOT NULL THEN
      r_pos[ri] := (a_pos->>(r_id[ri]::text))::int;
      IF r_err[ri] IS NULL AND a_org[r_pos[ri]] IS DISTINCT FROM r_org[ri] THEN r_err[ri] := 'ACCOUNT_MISMATCH'; END IF;
    END IF;
  END LOOP;

  -- 6. Each item in order, against the running totals.
  FOR t IN 1..n_tx LOOP
    op := x_op[t];
    err := NULL;
    msg := NULL;
    hid := NULL;
    ex := existing->(x_key[t]);
    IF ex IS NOT NULL THEN
      IF ex->>'hash' = x_hash[t] THEN
        res[t] := jsonb_build_object('s', 'replayed', 'id', ex->'id', 'hold', ex->'hold');
      ELSE
        res[t] := jsonb_build_object('s', 'error', 'reason', 'IDEMPOTENCY_CONFLICT',
          'msg', format('idempotency key %s was already used for another ledger operation (ledger transaction %s)', x_key[t], ex->>'id'));
      END IF;
      CONTINUE;
    END IF;

    IF op IN ('post', 'hold') THEN
      IF t = ANY(bad_tx) OR x_lo[t] IS NULL OR x_hi[t] IS NULL OR x_hi[t] - x_lo[t] < 1
         OR (op = 'hold' AND (x_hi[t] - x_lo[t] <> 1 OR NOT l_debit[x_lo[t]] OR l_debit[x_hi[t]])) THEN
        err := 'INVALID_POSTING';
        msg := 'a posting needs at least two lines with amounts > 0, and debits equal to credits in each asset-network';
      END IF;
      IF err IS NULL THEN
        FOR j IN x_lo[t]..x_hi[t] LOOP
          ri := l_a[j];
          IF r_err[ri] IS NOT NULL THEN
            err := r_err[ri];
            msg := format('ledger account %s %s in asset-network %s: %s', r_kind[ri], coalesce(r_owner[ri]::text, '(system)'), r_an[ri],
              CASE r_err[ri] WHEN 'UNKNOWN_ASSET_NETWORK' THEN 'no such asset-network'
                             WHEN 'UNKNOWN_ACCOUNT' THEN 'no such account in this organization'
                             ELSE 'it belongs to another organization' END);
            EXIT;
          END IF;
          st := r_status[ri];
          IF st = 'CLOSED' THEN
            err := 'ACCOUNT_CLOSED';
            msg := format('account %s is closed: it neither sends nor receives funds', r_owner[ri]);
            EXIT;
          END IF;
          IF st = 'FROZEN' AND l_debit[j] THEN
            err := 'ACCOUNT_FROZEN';
            msg := format('account %s is frozen: funds may not leave it', r_owner[ri]);
            EXIT;
          END IF;
          IF r_pos[ri] IS NULL THEN
            -- No balance row: a customer account never credited, debited.
            err := 'INSUFFICIENT_FUNDS';
            msg := format('insufficient funds in account %s (asset-network %s): available 0, debit %s', r_owner[ri], r_an[ri], l_m[j]);
            EXIT;
          END IF;
        END LOOP;
      END IF;
      IF err IS NULL THEN
        FOR j IN x_lo[t]..x_hi[t] LOOP
          p := r_pos[l_a[j]];
          IF op = 'post' THEN
            IF l_debit[j] THEN a_dp[p] := a_dp[p] + l_m[j]; ELSE a_cp[p] := a_cp[p] + l_m[j]; END IF;
          ELSE
            IF l_debit[j] THEN a_dpe[p] := a_dpe[p] + l_m[j]; ELSE a_cpe[p] := a_cpe[p] + l_m[j]; END IF;
          END IF;
        END LOOP;
        -- A customer account debited keeps its available balance (posted credits - posted debits - pending debits) >= 0.
        FOR j IN x_lo[t]..x_hi[t] LOOP
          p := r_pos[l_a[j]];
          IF l_debit[j] AND a_kind[p] IN ('CUSTOMER', 'ESCROW', 'RETAINED') AND a_cp[p] - a_dp[p] - a_dpe[p] < 0 THEN
            err := 'INSUFFICIENT_FUNDS';
            msg := format('insufficient funds in account %s (asset-network %s): the posting exceeds its available balance by %s',
              r_owner[l_a[j]], a_an[p], -(a_cp[p] - a_dp[p] - a_dpe[p]));
            EXIT;
          END IF;
        END LOOP;
        IF err IS NOT NULL THEN
          FOR j IN x_lo[t]..x_hi[t] LOOP
            p := r_pos[l_a[j]];
            IF op = 'post' THEN
              IF l_debit[j] THEN a_dp[p] := a_dp[p] - l_m[j]; ELSE a_cp[p] := a_cp[p] - l_m[j]; END IF;
            ELSE
              IF l_debit[j] THEN a_dpe[p] := a_dpe[p] - l_m[j]; ELSE a_cpe[p] := a_cpe[p] - l_m[j]; END IF;
            END IF;
          END LOOP;
        END IF;
      END IF;
      IF err IS NULL THEN
        tid := uuidv7();
        n_t := n_t + 1;
        t_id[n_t] := tid; t_key[n_t] := x_key[t]; t_hash[n_t] := x_hash[t]; t_nature[n_t] := x_nature[t]; t_org[n_t] := x_org[t];
        t_rt[n_t] := x_rt[t]; t_ri[n_t] := x_ri[t]; t_meta[n_t] := x_meta[t]; t_at[n_t] := x_at[t];
        IF op = 'hold' THEN
          hid := uuidv7();
          n_nh := n_nh + 1;
          nh_id[n_nh] := hid; nh_tx[n_nh] := tid; nh_da[n_nh] := a_id[r_pos[l_a[x_lo[t]]]]; nh_ca[n_nh] := a_id[r_pos[l_a[x_hi[t]]]];
          nh_an[n_nh] := a_an[r_pos[l_a[x_lo[t]]]]; nh_m[n_nh] := l_m[x_lo[t]]; nh_exp[n_nh] := x_exp[t]; nh_at[n_nh] := x_at[t];
        END IF;
        FOR j IN x_lo[t]..x_hi[t] LOOP
          p := r_pos[l_a[j]];
          a_ver[p] := a_ver[p] + 1;
          a_touched[p] := true;
          n_e := n_e + 1;
          e_tx[n_e] := tid; e_acc[n_e] := a_id[p]; e_an[n_e] := a_an[p];
          e_dir[n_e] := CASE WHEN l_debit[j] THEN 'DEBIT'::"LedgerDirection" ELSE 'CREDIT'::"LedgerDirection" END;
          e_m[n_e] := l_m[j]; e_pending[n_e] := (op = 'hold'); e_hold[n_e] := hid; e_ver[n_e] := a_ver[p]; e_at[n_e] := x_at[t];
        END LOOP;
      END IF;
    ELSE
      -- post_hold, void_hold, expire_hold
      hp := (h_pos->>(x_hid[t]::text))::int;
      IF hp IS NULL THEN
        err := 'HOLD_NOT_FOUND';
        msg := format('hold %s not found', x_hid[t]);
      ELSIF h_status[hp] <> 'PENDING' THEN
        err := 'HOLD_RESOLVED';
        msg := format('hold %s is already %s', x_hid[t], h_status[hp]);
      ELSIF op = 'expire_hold' AND (h_exp[hp] IS NULL OR x_at[t] < h_exp[hp]) THEN
        err := 'HOLD_NOT_EXPIRED';
        msg := format('hold %s does not expire before %s', x_hid[t], coalesce(h_exp[hp]::text, 'never'));
      ELSIF op <> 'expire_hold' AND h_exp[hp] IS NOT NULL AND x_at[t] >= h_exp[hp] THEN
        err := 'HOLD_EXPIRED';
        msg := format('hold %s expired at %s', x_hid[t], h_exp[hp]);
      ELSE
        pd := (a_pos->>(h_da[hp]::text))::int;
        pc := (a_pos->>(h_ca[hp]::text))::int;
        amt := h_amount[hp];
        m := 0;
        IF op = 'post_hold' THEN
          m := coalesce(x_m[t], amt);
          IF m <= 0 OR m > amt THEN
            err := 'INVALID_POSTING';
            msg := format('hold %s: the amount to post must be from 1 to %s, not %s', x_hid[t], amt, m);
          ELSIF h_dst[hp] IN ('FROZEN', 'CLOSED') THEN
            err := 'ACCOUNT_' || h_dst[hp];
            msg := format('hold %s: its debit account is %s: funds may not leave it', x_hid[t], lower(h_dst[hp]));
          ELSIF h_cst[hp] = 'CLOSED' THEN
            err := 'ACCOUNT_CLOSED';
            msg := format('hold %s: its credit account is closed', x_hid[t]);
          END IF;
        END IF;
      END IF;
      IF err IS NULL THEN
        tid := uuidv7();
        hid := h_id[hp];
        new_status := CASE op WHEN 'post_hold' THEN 'POSTED' WHEN 'void_hold' THEN 'VOIDED' ELSE 'EXPIRED' END;
        a_dpe[pd] := a_dpe[pd] - amt;
        a_cpe[pc] := a_cpe[pc] - amt;
        a_touched[pd] := true; a_touched[pc] := true;
        n_t := n_t + 1;
        t_id[n_t] := tid; t_key[n_t] := x_key[t]; t_hash[n_t] := x_hash[t]; t_nature[n_t] := x_nature[t];
        t_org[n_t] := coalesce(x_org[t], h_org[hp]); t_rt[n_t] := coalesce(x_rt[t], 'LedgerHold'); t_ri[n_t] := coalesce(x_ri[t], hid);
        t_meta[n_t] := coalesce(x_meta[t], '{}'::jsonb) || jsonb_build_object('holdId', hid, 'resolution', new_status, 'postedAmount', m::text, 'releasedAmount', (amt - m)::text);
        t_at[n_t] := x_at[t];
        IF m > 0 THEN
          a_dp[pd] := a_dp[pd] + m;
          a_cp[pc] := a_cp[pc] + m;
          a_ver[pd] := a_ver[pd] + 1;
          n_e := n_e + 1;
          e_tx[n_e] := tid; e_acc[n_e] := a_id[pd]; e_an[n_e] := a_an[pd]; e_dir[n_e] := 'DEBIT'; e_m[n_e] := m;
          e_pending[n_e] := false; e_hold[n_e] := hid; e_ver[n_e] := a_ver[pd]; e_at[n_e] := x_at[t];
          a_ver[pc] := a_ver[pc] + 1;
          n_e := n_e + 1;
          e_tx[n_e] := tid; e_acc[n_e] := a_id[pc]; e_an[n_e] := a_an[pc]; e_dir[n_e] := 'CREDIT'; e_m[n_e] := m;
          e_pending[n_e] := false; e_hold[n_e] := hid; e_ver[n_e] := a_ver[pc]; e_at[n_e] := x_at[t];
        END IF;
        n_hu := n_hu + 1;
        hu_id[n_hu] := hid; hu_status[n_hu] := new_status::"LedgerHoldStatus"; hu_m[n_hu] := m; hu_at[n_hu] := x_at[t]; hu_tx[n_hu] := tid;
        h_status[hp] := new_status;
      END IF;
    END IF;

    IF err IS NULL THEN
      res[t] := jsonb_build_object('s', 'ok', 'id', tid, 'hold', hid);
      IF x_dup[t] THEN
        existing := existing || jsonb_build_object(x_key[t], jsonb_build_object('id', tid, 'hash', x_hash[t], 'hold', hid));
      END IF;
    ELSE
      res[t] := jsonb_build_object('s', 'error', 'reason', err, 'msg', msg);
    END IF;
  END LOOP;

  -- 7. Write it all: transactions, new holds, entries, resolved holds, balance rows.
  IF n_t > 0 THEN
    INSERT INTO "LedgerTransaction" ("id", "idempotencyKey", "payloadHash", "nature", "organizationId", "referenceType", "referenceId", "metadata", "postedAt")
    SELECT * FROM unnest(t_id, t_key, t_hash, t_nature, t_org, t_rt, t_ri, t_meta, t_at);
  END IF;
  IF n_nh > 0 THEN
    INSERT INTO "LedgerHold" ("id", "ledgerTransactionId", "debitAccountId", "creditAccountId", "assetNetworkId", "amount", "expiresAt", "createdAt")
    SELECT * FROM unnest(nh_id, nh_tx, nh_da, nh_ca, nh_an, nh_m, nh_exp, nh_at);
  END IF;
  IF n_e > 0 THEN
    INSERT INTO "LedgerEntry" ("id", "ledgerTransactionId", "ledgerAccountId", "assetNetworkId", "direction", "amount", "pending", "holdId", "accountVersion", "createdAt")
    SELECT uuidv7(), u.* FROM unnest(e_tx, e_acc, e_an, e_dir, e_m, e_pending, e_hold, e_ver, e_at) AS u;
  END IF;
  IF n_hu > 0 THEN
    UPDATE "LedgerHold" lh SET "status" = u.s, "postedAmount" = u.m, "resolvedAt" = u.at, "resolvedByLedgerTransactionId" = u.tx
      FROM unnest(hu_id, hu_status, hu_m, hu_at, hu_tx) AS u(id, s, m, at, tx)
     WHERE lh."id" = u.id;
  END IF;
  IF true = ANY(a_touched) THEN
    UPDATE "LedgerAccount" la
       SET "debitsPosted" = u.dp, "creditsPosted" = u.cp, "debitsPending" = u.dpe, "creditsPending" = u.cpe, "version" = u.v,
           "updatedAt" = greatest(la."updatedAt", b_at)
      FROM unnest(a_id, a_dp, a_cp, a_dpe, a_cpe, a_ver, a_touched) AS u(id, dp, cp, dpe, cpe, v, touched)
     WHERE la."id" = u.id AND u.touched;
  END IF;

  RETURN to_jsonb(res);
END
$fn$;
ALTER FUNCTION ledger_post SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off;
