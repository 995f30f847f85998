-- CreateEnum
CREATE TYPE "NetworkExecutionOperation" AS ENUM ('WITHDRAWAL', 'SWEEP');

-- CreateEnum
CREATE TYPE "ReserveMovementKind" AS ENUM ('SEED', 'CONSUME', 'REPLENISH', 'RELEASE');

-- CreateEnum
CREATE TYPE "ReplenishmentSource" AS ENUM ('SANDBOX_FAUCET', 'EXTERNAL_TOP_UP');

-- CreateTable
CREATE TABLE "NetworkResourceCostTable" (
    "id" UUID NOT NULL,
    "networkId" UUID NOT NULL,
    "version" INTEGER NOT NULL,
    "createdByOperatorId" UUID,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "NetworkResourceCostTable_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "NetworkResourcePrice" (
    "costTableId" UUID NOT NULL,
    "resource" TEXT NOT NULL,
    "unitPrice" DECIMAL(78,0) NOT NULL,

    CONSTRAINT "NetworkResourcePrice_pkey" PRIMARY KEY ("costTableId","resource")
);

-- CreateTable
CREATE TABLE "NetworkExecutionMarginPolicy" (
    "id" UUID NOT NULL,
    "assetNetworkId" UUID,
    "version" INTEGER NOT NULL,
    "percentage" DECIMAL(9,6) NOT NULL,
    "fixedAmount" DECIMAL(78,0) NOT NULL,
    "createdByOperatorId" UUID,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "NetworkExecutionMarginPolicy_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "NetworkExecutionQuote" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "environmentId" UUID NOT NULL,
    "assetNetworkId" UUID NOT NULL,
    "networkId" UUID NOT NULL,
    "operation" "NetworkExecutionOperation" NOT NULL,
    "amount" DECIMAL(78,0) NOT NULL,
    "resources" JSONB NOT NULL,
    "networkCost" DECIMAL(78,0) NOT NULL,
    "margin" DECIMAL(78,0) NOT NULL,
    "total" DECIMAL(78,0) NOT NULL,
    "costSource" TEXT NOT NULL,
    "costTableVersion" INTEGER,
    "marginPolicyVersion" INTEGER,
    "expiresAt" TIMESTAMPTZ(3) NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "NetworkExecutionQuote_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "NetworkResourceReserve" (
    "id" UUID NOT NULL,
    "networkId" UUID NOT NULL,
    "balance" DECIMAL(78,0) NOT NULL,
    "lowThreshold" DECIMAL(78,0),
    "targetBalance" DECIMAL(78,0),
    "replenishmentSource" "ReplenishmentSource",
    "replenishmentAddress" TEXT,
    "maxTopUpAmount" DECIMAL(78,0),
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "NetworkResourceReserve_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "NetworkResourceReserveMovement" (
    "id" UUID NOT NULL,
    "reserveId" UUID NOT NULL,
    "kind" "ReserveMovementKind" NOT NULL,
    "amount" DECIMAL(78,0) NOT NULL,
    "balanceAfter" DECIMAL(78,0) NOT NULL,
    "referenceType" TEXT,
    "referenceId" TEXT,
    "createdByOperatorId" UUID,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "NetworkResourceReserveMovement_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "NetworkResourceCostTable_networkId_version_key" ON "NetworkResourceCostTable"("networkId", "version");

-- CreateIndex
CREATE INDEX "NetworkExecutionMarginPolicy_assetNetworkId_version_idx" ON "NetworkExecutionMarginPolicy"("assetNetworkId", "version");

-- CreateIndex
CREATE INDEX "NetworkExecutionQuote_organizationId_createdAt_idx" ON "NetworkExecutionQuote"("organizationId", "createdAt");

-- CreateIndex
CREATE UNIQUE INDEX "NetworkResourceReserve_networkId_key" ON "NetworkResourceReserve"("networkId");

-- CreateIndex
CREATE INDEX "NetworkResourceReserveMovement_reserveId_createdAt_idx" ON "NetworkResourceReserveMovement"("reserveId", "createdAt");

-- CreateIndex
CREATE UNIQUE INDEX "NetworkResourceReserveMovement_reserveId_kind_referenceType_key" ON "NetworkResourceReserveMovement"("reserveId", "kind", "referenceType", "referenceId");

-- AddForeignKey
ALTER TABLE "NetworkResourcePrice" ADD CONSTRAINT "NetworkResourcePrice_costTableId_fkey" FOREIGN KEY ("costTableId") REFERENCES "NetworkResourceCostTable"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "NetworkResourceReserveMovement" ADD CONSTRAINT "NetworkResourceReserveMovement_reserveId_fkey" FOREIGN KEY ("reserveId") REFERENCES "NetworkResourceReserve"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- Hand-written (network costs and reserves): foreign keys to the catalog and tenancy, CHECKs, and
-- the append-only movements.
ALTER TABLE "NetworkResourceCostTable" ADD CONSTRAINT "NetworkResourceCostTable_networkId_fkey" FOREIGN KEY ("networkId") REFERENCES "Network"("id");
ALTER TABLE "NetworkResourceCostTable" ADD CHECK ("version" >= 1);
ALTER TABLE "NetworkResourcePrice" ADD CHECK ("unitPrice" >= 0), ADD CHECK ("resource" ~ '^[a-z][a-z0-9_]{0,39}$');
ALTER TABLE "NetworkExecutionMarginPolicy" ADD CONSTRAINT "NetworkExecutionMarginPolicy_assetNetworkId_fkey" FOREIGN KEY ("assetNetworkId") REFERENCES "AssetNetwork"("id");
ALTER TABLE "NetworkExecutionMarginPolicy" ADD CHECK ("version" >= 1), ADD CHECK ("percentage" >= 0 AND "percentage" <= 100), ADD CHECK ("fixedAmount" >= 0),
  ADD CHECK ("assetNetworkId" IS NOT NULL OR "fixedAmount" = 0);
ALTER TABLE "NetworkExecutionQuote" ADD CONSTRAINT "NetworkExecutionQuote_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id");
ALTER TABLE "NetworkExecutionQuote" ADD CONSTRAINT "NetworkExecutionQuote_environmentId_fkey" FOREIGN KEY ("environmentId") REFERENCES "Environment"("id");
ALTER TABLE "NetworkExecutionQuote" ADD CONSTRAINT "NetworkExecutionQuote_assetNetworkId_fkey" FOREIGN KEY ("assetNetworkId") REFERENCES "AssetNetwork"("id");
ALTER TABLE "NetworkExecutionQuote" ADD CHECK ("amount" > 0), ADD CHECK ("networkCost" >= 0), ADD CHECK ("margin" >= 0), ADD CHECK ("total" = "networkCost" + "margin");
ALTER TABLE "NetworkResourceReserve" ADD CONSTRAINT "NetworkResourceReserve_networkId_fkey" FOREIGN KEY ("networkId") REFERENCES "Network"("id");
ALTER TABLE "NetworkResourceReserve" ADD CHECK ("balance" >= 0), ADD CHECK ("lowThreshold" IS NULL OR "lowThreshold" >= 0),
  ADD CHECK ("targetBalance" IS NULL OR "targetBalance" >= "lowThreshold"), ADD CHECK ("maxTopUpAmount" IS NULL OR "maxTopUpAmount" > 0);
ALTER TABLE "NetworkResourceReserveMovement" ADD CHECK ("amount" > 0), ADD CHECK ("balanceAfter" >= 0),
  ADD CHECK (("kind" IN ('CONSUME', 'RELEASE')) = ("referenceId" IS NOT NULL));
CREATE TRIGGER "NetworkResourceReserveMovement_append_only" BEFORE UPDATE OR DELETE ON "NetworkResourceReserveMovement" FOR EACH ROW EXECUTE FUNCTION ledger_append_only();
CREATE TRIGGER "NetworkResourceReserveMovement_no_truncate" BEFORE TRUNCATE ON "NetworkResourceReserveMovement" FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only();
