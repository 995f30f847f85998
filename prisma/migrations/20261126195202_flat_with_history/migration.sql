-- DropIndex
DROP INDEX "AuditLogEntry_action_idx";

-- DropIndex
DROP INDEX "AuditLogEntry_organizationId_occurredAt_idx";

-- CreateTable
CREATE TABLE "ChainSyncCursor" (
    "networkId" UUID NOT NULL,
    "height" INTEGER NOT NULL,
    "blockHash" TEXT,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

CONSTRAINT "ChainSyncCursor_pkey" PRIMARY KEY ("networkId")
);

-- CreateIndex
CREATE INDEX "AuditLogEntry_occurredAt_id_idx" ON "AuditLogEntry"("occurredAt", "id");

-- CreateIndex
CREATE INDEX "AuditLogEntry_organizationId_occurredAt_id_idx" ON "AuditLogEntry"("organizationId", "occurredAt", "id");

-- CreateIndex
CREATE INDEX "AuditLogEntry_action_occurredAt_id_idx" ON "AuditLogEntry"("action", "occurredAt", "id");

-- CreateIndex
CREATE INDEX "Deposit_networkId_status_blockHeight_idx" ON "Deposit"("networkId", "status", "blockHeight");

-- CreateIndex
CREATE INDEX "LedgerTransaction_postedAt_id_idx" ON "LedgerTransaction"("postedAt", "id");

-- CreateIndex
CREATE INDEX "SandboxTransaction_networkId_blockHeight_idx" ON "SandboxTransaction"("networkId", "blockHeight");
