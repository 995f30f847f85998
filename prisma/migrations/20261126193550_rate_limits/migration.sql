-- Request rate-limit counters (issue 20; src/auth/request-limits.ts). UNLOGGED: a counter needs no
-- WAL (one upsert per API request), and a crash that empties the table only forgives the current
-- window. Not replicated to standbys, which never serve writes anyway.
CREATE UNLOGGED TABLE "RequestRateLimit" (
    "key" TEXT NOT NULL,
    "windowStart" TIMESTAMPTZ(3) NOT NULL,
    "count" INTEGER NOT NULL,

CONSTRAINT "RequestRateLimit_pkey" PRIMARY KEY ("key")
);
