-- CreateEnum
CREATE TYPE "ReconciliationTrigger" AS ENUM ('OPERATOR', 'SCHEDULE');

-- CreateEnum
CREATE TYPE "ReconciliationStatus" AS ENUM ('COMPLETED');

-- CreateEnum
CREATE TYPE "ReconciliationDivergenceKind" AS ENUM ('BALANCE_MISMATCH', 'DEPOSIT_NOT_ON_CHAIN', 'UNCREDITED_TRANSFER');

-- CreateEnum
CREATE TYPE "ReconciliationDivergenceStatus" AS ENUM ('OPEN', 'RESOLVED');

-- CreateEnum
CREATE TYPE "ReconciliationResolution" AS ENUM ('CORRECTION', 'ACCEPT_CHAIN');

-- CreateTable
CREATE TABLE "Reconciliation" (
    "id" UUID NOT NULL,
    "trigger" "ReconciliationTrigger" NOT NULL,
    "operatorId" UUID,
    "status" "ReconciliationStatus" NOT NULL DEFAULT 'COMPLETED',
    "summaries" JSONB NOT NULL,
    "divergenceCount" INTEGER NOT NULL DEFAULT 0,
    "startedAt" TIMESTAMPTZ(3) NOT NULL,
    "completedAt" TIMESTAMPTZ(3) NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Reconciliation_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ReconciliationDivergence" (
    "id" UUID NOT NULL,
    "reconciliationId" UUID NOT NULL,
    "assetNetworkId" UUID NOT NULL,
    "kind" "ReconciliationDivergenceKind" NOT NULL,
    "expected" DECIMAL(78,0) NOT NULL,
    "observed" DECIMAL(78,0) NOT NULL,
    "difference" DECIMAL(78,0) NOT NULL,
    "details" JSONB NOT NULL,
    "status" "ReconciliationDivergenceStatus" NOT NULL DEFAULT 'OPEN',
    "resolution" "ReconciliationResolution",
    "resolutionReason" TEXT,
    "resolvedByOperatorId" UUID,
    "ledgerCorrectionId" UUID,
    "resolvedAt" TIMESTAMPTZ(3),
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ReconciliationDivergence_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "Reconciliation_startedAt_idx" ON "Reconciliation"("startedAt");

-- CreateIndex
CREATE UNIQUE INDEX "ReconciliationDivergence_ledgerCorrectionId_key" ON "ReconciliationDivergence"("ledgerCorrectionId");

-- CreateIndex
CREATE INDEX "ReconciliationDivergence_reconciliationId_idx" ON "ReconciliationDivergence"("reconciliationId");

-- CreateIndex
CREATE INDEX "ReconciliationDivergence_status_assetNetworkId_idx" ON "ReconciliationDivergence"("status", "assetNetworkId");

-- AddForeignKey
ALTER TABLE "ReconciliationDivergence" ADD CONSTRAINT "ReconciliationDivergence_reconciliationId_fkey" FOREIGN KEY ("reconciliationId") REFERENCES "Reconciliation"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- Hand-written (reconciliation): the correction a divergence was resolved by; the arithmetic and the resolution's shape.
ALTER TABLE "ReconciliationDivergence" ADD CONSTRAINT "ReconciliationDivergence_ledgerCorrectionId_fkey"
  FOREIGN KEY ("ledgerCorrectionId") REFERENCES "LedgerCorrection"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "ReconciliationDivergence" ADD CONSTRAINT "ReconciliationDivergence_difference_check"
  CHECK ("difference" = "observed" - "expected");
ALTER TABLE "ReconciliationDivergence" ADD CONSTRAINT "ReconciliationDivergence_resolution_check"
  CHECK (("status" = 'OPEN' AND "resolution" IS NULL AND "resolvedAt" IS NULL AND "ledgerCorrectionId" IS NULL)
      OR ("status" = 'RESOLVED' AND "resolution" IS NOT NULL AND "resolvedAt" IS NOT NULL AND "resolutionReason" IS NOT NULL
          AND (("resolution" = 'CORRECTION') = ("ledgerCorrectionId" IS NOT NULL))));
ALTER TABLE "Reconciliation" ADD CONSTRAINT "Reconciliation_trigger_check"
  CHECK (("trigger" = 'OPERATOR') = ("operatorId" IS NOT NULL));
