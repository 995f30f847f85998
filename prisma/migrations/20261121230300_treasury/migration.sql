-- CreateEnum
CREATE TYPE "TreasuryTier" AS ENUM ('HOT', 'WARM', 'COLD');

-- CreateEnum
CREATE TYPE "ControlledAddressControl" AS ENUM ('GENERATED', 'WATCH_ONLY');

-- CreateTable
CREATE TABLE "ControlledAddress" (
    "id" UUID NOT NULL,
    "networkId" UUID NOT NULL,
    "assetNetworkIds" UUID[],
    "tier" "TreasuryTier" NOT NULL,
    "control" "ControlledAddressControl" NOT NULL,
    "label" TEXT NOT NULL,
    "address" TEXT NOT NULL,
    "curve" TEXT,
    "rootPublicKey" TEXT,
    "derivationIndex" INTEGER,
    "publicKey" TEXT,
    "sealedPrivateKey" BYTEA,
    "active" BOOLEAN NOT NULL DEFAULT true,
    "deactivatedAt" TIMESTAMPTZ(3),
    "createdByOperatorId" UUID NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "ControlledAddress_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "TreasuryLiquidityPolicy" (
    "id" UUID NOT NULL,
    "assetNetworkId" UUID NOT NULL,
    "version" INTEGER NOT NULL,
    "tiers" JSONB NOT NULL,
    "operatorId" UUID NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "TreasuryLiquidityPolicy_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "TreasurySweep" (
    "id" UUID NOT NULL,
    "assetNetworkId" UUID NOT NULL,
    "networkId" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "depositAddressId" UUID NOT NULL,
    "fromAddress" TEXT NOT NULL,
    "toControlledAddressId" UUID NOT NULL,
    "toAddress" TEXT NOT NULL,
    "amount" DECIMAL(78,0) NOT NULL,
    "networkCost" DECIMAL(78,0) NOT NULL,
    "txHash" TEXT NOT NULL,
    "operatorId" UUID NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "TreasurySweep_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "ControlledAddress_networkId_tier_idx" ON "ControlledAddress"("networkId", "tier");

-- CreateIndex
CREATE UNIQUE INDEX "ControlledAddress_networkId_address_key" ON "ControlledAddress"("networkId", "address");

-- CreateIndex
CREATE UNIQUE INDEX "TreasuryLiquidityPolicy_assetNetworkId_version_key" ON "TreasuryLiquidityPolicy"("assetNetworkId", "version");

-- CreateIndex
CREATE UNIQUE INDEX "TreasurySweep_txHash_key" ON "TreasurySweep"("txHash");

-- CreateIndex
CREATE INDEX "TreasurySweep_createdAt_id_idx" ON "TreasurySweep"("createdAt", "id");

-- CreateIndex
CREATE INDEX "TreasurySweep_assetNetworkId_createdAt_id_idx" ON "TreasurySweep"("assetNetworkId", "createdAt", "id");

-- Hand-written: foreign keys and checks.
ALTER TABLE "ControlledAddress"
  ADD CONSTRAINT "ControlledAddress_networkId_fkey" FOREIGN KEY ("networkId") REFERENCES "Network"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  ADD CONSTRAINT "ControlledAddress_createdByOperatorId_fkey" FOREIGN KEY ("createdByOperatorId") REFERENCES "Operator"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  ADD CONSTRAINT "ControlledAddress_label_check" CHECK (length("label") BETWEEN 1 AND 200),
  ADD CONSTRAINT "ControlledAddress_address_check" CHECK (length("address") BETWEEN 1 AND 200 AND "address" = btrim("address")),
  ADD CONSTRAINT "ControlledAddress_assetNetworks_check" CHECK (cardinality("assetNetworkIds") >= 1),
  -- GENERATED carries its key material; WATCH_ONLY none.
  ADD CONSTRAINT "ControlledAddress_control_check" CHECK (
    ("control" = 'GENERATED' AND "curve" IS NOT NULL AND "rootPublicKey" IS NOT NULL AND "derivationIndex" IS NOT NULL AND "publicKey" IS NOT NULL AND "sealedPrivateKey" IS NOT NULL)
    OR ("control" = 'WATCH_ONLY' AND "curve" IS NULL AND "rootPublicKey" IS NULL AND "derivationIndex" IS NULL AND "publicKey" IS NULL AND "sealedPrivateKey" IS NULL)),
  ADD CONSTRAINT "ControlledAddress_active_check" CHECK ("active" = ("deactivatedAt" IS NULL));

ALTER TABLE "TreasuryLiquidityPolicy"
  ADD CONSTRAINT "TreasuryLiquidityPolicy_assetNetworkId_fkey" FOREIGN KEY ("assetNetworkId") REFERENCES "AssetNetwork"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  ADD CONSTRAINT "TreasuryLiquidityPolicy_operatorId_fkey" FOREIGN KEY ("operatorId") REFERENCES "Operator"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  ADD CONSTRAINT "TreasuryLiquidityPolicy_version_check" CHECK ("version" >= 1),
  ADD CONSTRAINT "TreasuryLiquidityPolicy_tiers_check" CHECK (jsonb_typeof("tiers") = 'array' AND jsonb_array_length("tiers") >= 1);

ALTER TABLE "TreasurySweep"
  ADD CONSTRAINT "TreasurySweep_assetNetworkId_fkey" FOREIGN KEY ("assetNetworkId") REFERENCES "AssetNetwork"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  ADD CONSTRAINT "TreasurySweep_networkId_fkey" FOREIGN KEY ("networkId") REFERENCES "Network"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  ADD CONSTRAINT "TreasurySweep_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  ADD CONSTRAINT "TreasurySweep_depositAddressId_fkey" FOREIGN KEY ("depositAddressId") REFERENCES "DepositAddress"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  ADD CONSTRAINT "TreasurySweep_toControlledAddressId_fkey" FOREIGN KEY ("toControlledAddressId") REFERENCES "ControlledAddress"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  ADD CONSTRAINT "TreasurySweep_operatorId_fkey" FOREIGN KEY ("operatorId") REFERENCES "Operator"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  ADD CONSTRAINT "TreasurySweep_amount_check" CHECK ("amount" > 0),
  ADD CONSTRAINT "TreasurySweep_networkCost_check" CHECK ("networkCost" >= 0);
