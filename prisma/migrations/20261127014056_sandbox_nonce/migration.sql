-- CreateTable
CREATE TABLE "SandboxNetworkNonce" (
    "networkId" UUID NOT NULL,
    "next" BIGINT NOT NULL,

CONSTRAINT "SandboxNetworkNonce_pkey" PRIMARY KEY ("networkId")
);

-- Backfill: a network's next nonce is the count of its transactions (what sends counted before).
INSERT INTO "SandboxNetworkNonce" ("networkId", "next")
SELECT "networkId", count(*) FROM "SandboxTransaction" GROUP BY "networkId";
