-- CreateTable
CREATE TABLE "EvmBlock" (
    "networkId" UUID NOT NULL,
    "height" INTEGER NOT NULL,
    "hash" TEXT NOT NULL,
    "parentHash" TEXT NOT NULL,
    "seenAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

CONSTRAINT "EvmBlock_pkey" PRIMARY KEY ("networkId","height")
);

-- CreateTable
CREATE TABLE "EvmWatchedAddress" (
    "networkId" UUID NOT NULL,
    "address" TEXT NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

CONSTRAINT "EvmWatchedAddress_pkey" PRIMARY KEY ("networkId","address")
);

-- CreateTable
CREATE TABLE "EvmTransfer" (
    "id" UUID NOT NULL,
    "networkId" UUID NOT NULL,
    "assetNetworkId" UUID NOT NULL,
    "txHash" TEXT NOT NULL,
    "logIndex" INTEGER NOT NULL,
    "fromAddress" TEXT NOT NULL,
    "toAddress" TEXT NOT NULL,
    "amount" DECIMAL(78,0) NOT NULL,
    "status" TEXT NOT NULL,
    "blockHeight" INTEGER,
    "blockHash" TEXT,
    "seenAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

CONSTRAINT "EvmTransfer_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "EvmBroadcast" (
    "txHash" TEXT NOT NULL,
    "networkId" UUID NOT NULL,
    "assetNetworkId" UUID,
    "fromAddress" TEXT NOT NULL,
    "nonce" INTEGER NOT NULL,
    "toAddress" TEXT NOT NULL,
    "amount" DECIMAL(78,0) NOT NULL,
    "organizationId" UUID,
    "settled" BOOLEAN NOT NULL DEFAULT false,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

CONSTRAINT "EvmBroadcast_pkey" PRIMARY KEY ("txHash")
);

-- CreateTable
CREATE TABLE "EvmNonce" (
    "networkId" UUID NOT NULL,
    "address" TEXT NOT NULL,
    "next" INTEGER NOT NULL,

CONSTRAINT "EvmNonce_pkey" PRIMARY KEY ("networkId","address")
);

-- CreateIndex
CREATE INDEX "EvmTransfer_networkId_toAddress_idx" ON "EvmTransfer"("networkId", "toAddress");

-- CreateIndex
CREATE INDEX "EvmTransfer_networkId_blockHeight_idx" ON "EvmTransfer"("networkId", "blockHeight");

-- CreateIndex
CREATE UNIQUE INDEX "EvmTransfer_networkId_txHash_logIndex_key" ON "EvmTransfer"("networkId", "txHash", "logIndex");

-- CreateIndex
CREATE INDEX "EvmBroadcast_networkId_fromAddress_nonce_idx" ON "EvmBroadcast"("networkId", "fromAddress", "nonce");

-- Hand-written: chain data belongs to a catalog network (and asset-network).
ALTER TABLE "EvmBlock" ADD CONSTRAINT "EvmBlock_networkId_fkey" FOREIGN KEY ("networkId") REFERENCES "Network"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "EvmWatchedAddress" ADD CONSTRAINT "EvmWatchedAddress_networkId_fkey" FOREIGN KEY ("networkId") REFERENCES "Network"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "EvmTransfer" ADD CONSTRAINT "EvmTransfer_networkId_fkey" FOREIGN KEY ("networkId") REFERENCES "Network"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "EvmTransfer" ADD CONSTRAINT "EvmTransfer_assetNetworkId_fkey" FOREIGN KEY ("assetNetworkId") REFERENCES "AssetNetwork"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "EvmBroadcast" ADD CONSTRAINT "EvmBroadcast_networkId_fkey" FOREIGN KEY ("networkId") REFERENCES "Network"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "EvmNonce" ADD CONSTRAINT "EvmNonce_networkId_fkey" FOREIGN KEY ("networkId") REFERENCES "Network"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
