-- CreateEnum
CREATE TYPE "WithdrawalDestinationStatus" AS ENUM ('ACTIVE', 'BLOCKED');

-- CreateTable
CREATE TABLE "WithdrawalDestination" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "networkId" UUID NOT NULL,
    "environmentType" "EnvironmentType" NOT NULL,
    "address" TEXT NOT NULL,
    "label" TEXT,
    "status" "WithdrawalDestinationStatus" NOT NULL DEFAULT 'ACTIVE',
    "blockedReason" TEXT,
    "blockedAt" TIMESTAMPTZ(3),
    "blockedByOperatorId" UUID,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "WithdrawalDestination_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "LedgerCorrection" (
    "id" UUID NOT NULL,
    "organizationId" UUID,
    "reason" TEXT NOT NULL,
    "operatorId" UUID NOT NULL,
    "ledgerTransactionId" UUID NOT NULL,
    "correctsLedgerTransactionId" UUID,
    "idempotencyKey" TEXT,
    "lines" JSONB NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "LedgerCorrection_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "WithdrawalDestination_organizationId_id_idx" ON "WithdrawalDestination"("organizationId", "id");

-- CreateIndex
CREATE UNIQUE INDEX "WithdrawalDestination_organizationId_networkId_address_key" ON "WithdrawalDestination"("organizationId", "networkId", "address");

-- CreateIndex
CREATE UNIQUE INDEX "LedgerCorrection_ledgerTransactionId_key" ON "LedgerCorrection"("ledgerTransactionId");

-- CreateIndex
CREATE UNIQUE INDEX "LedgerCorrection_idempotencyKey_key" ON "LedgerCorrection"("idempotencyKey");

-- CreateIndex
CREATE INDEX "LedgerCorrection_organizationId_createdAt_idx" ON "LedgerCorrection"("organizationId", "createdAt");

-- Hand-written (not expressible in schema.prisma without back-relations on older models).
ALTER TABLE "WithdrawalDestination"
  ADD CONSTRAINT "WithdrawalDestination_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  ADD CONSTRAINT "WithdrawalDestination_networkId_fkey" FOREIGN KEY ("networkId") REFERENCES "Network"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  ADD CONSTRAINT "WithdrawalDestination_address_check" CHECK (length("address") BETWEEN 1 AND 200 AND "address" = btrim("address")),
  ADD CONSTRAINT "WithdrawalDestination_label_check" CHECK ("label" IS NULL OR length("label") BETWEEN 1 AND 200),
  -- BLOCKED carries its reason, time and operator; ACTIVE none of them.
  ADD CONSTRAINT "WithdrawalDestination_blocked_check" CHECK (
    ("status" = 'ACTIVE' AND "blockedReason" IS NULL AND "blockedAt" IS NULL AND "blockedByOperatorId" IS NULL)
    OR ("status" = 'BLOCKED' AND "blockedReason" IS NOT NULL AND "blockedAt" IS NOT NULL AND "blockedByOperatorId" IS NOT NULL));

ALTER TABLE "LedgerCorrection"
  ADD CONSTRAINT "LedgerCorrection_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  ADD CONSTRAINT "LedgerCorrection_ledgerTransactionId_fkey" FOREIGN KEY ("ledgerTransactionId") REFERENCES "LedgerTransaction"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  ADD CONSTRAINT "LedgerCorrection_correctsLedgerTransactionId_fkey" FOREIGN KEY ("correctsLedgerTransactionId") REFERENCES "LedgerTransaction"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  ADD CONSTRAINT "LedgerCorrection_reason_check" CHECK (length("reason") BETWEEN 1 AND 1000),
  ADD CONSTRAINT "LedgerCorrection_lines_check" CHECK (jsonb_typeof("lines") = 'array' AND jsonb_array_length("lines") >= 2);

-- A correction is a record of what was done: never changed, never deleted (like the ledger itself).
CREATE FUNCTION "LedgerCorrection_append_only"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'LedgerCorrection is append-only: % refused', TG_OP USING ERRCODE = 'restrict_violation';
END $$;
CREATE TRIGGER "LedgerCorrection_append_only" BEFORE UPDATE OR DELETE ON "LedgerCorrection" FOR EACH ROW EXECUTE FUNCTION "LedgerCorrection_append_only"();

ALTER TABLE "WithdrawalDestination" ADD CONSTRAINT "WithdrawalDestination_blockedByOperatorId_fkey" FOREIGN KEY ("blockedByOperatorId") REFERENCES "Operator"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "LedgerCorrection" ADD CONSTRAINT "LedgerCorrection_operatorId_fkey" FOREIGN KEY ("operatorId") REFERENCES "Operator"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
