-- CreateEnum
CREATE TYPE "WithdrawalStatus" AS ENUM ('PENDING_APPROVAL', 'APPROVED', 'AWAITING_SIGNATURE', 'BROADCAST', 'BROADCAST_FAILED', 'CONFIRMED', 'REJECTED', 'CANCELLED', 'FAILED', 'REQUIRES_RECONCILIATION');

-- CreateEnum
CREATE TYPE "SigningRequestStatus" AS ENUM ('PENDING', 'SIGNED', 'CLOSED');

-- CreateTable
CREATE TABLE "Withdrawal" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "environmentType" "EnvironmentType" NOT NULL,
    "applicationId" UUID,
    "accountId" UUID NOT NULL,
    "assetNetworkId" UUID NOT NULL,
    "networkId" UUID NOT NULL,
    "withdrawalDestinationId" UUID NOT NULL,
    "toAddress" TEXT NOT NULL,
    "amount" DECIMAL(78,0) NOT NULL,
    "status" "WithdrawalStatus" NOT NULL,
    "custodyMode" "CustodyMode" NOT NULL,
    "walletId" UUID,
    "sourceIndex" INTEGER,
    "fromAddress" TEXT,
    "holdId" UUID NOT NULL,
    "withdrawalPolicyId" UUID,
    "payoutPolicyId" UUID,
    "approvalReason" TEXT,
    "approvedAt" TIMESTAMPTZ(3),
    "approvedByOperatorId" UUID,
    "rejectionReason" TEXT,
    "failureReason" TEXT,
    "txHash" TEXT,
    "broadcastAttempts" INTEGER NOT NULL DEFAULT 0,
    "nextAttemptAt" TIMESTAMPTZ(3),
    "lastBroadcastError" TEXT,
    "broadcastAt" TIMESTAMPTZ(3),
    "confirmedAt" TIMESTAMPTZ(3),
    "closedAt" TIMESTAMPTZ(3),
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "Withdrawal_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "WithdrawalPolicy" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "assetNetworkId" UUID,
    "version" INTEGER NOT NULL,
    "perWithdrawalLimit" DECIMAL(78,0),
    "periodLimit" DECIMAL(78,0),
    "periodSeconds" INTEGER,
    "approvalThreshold" DECIMAL(78,0),
    "operatorId" UUID NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "WithdrawalPolicy_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "PayoutPolicy" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "version" INTEGER NOT NULL,
    "allowedNetworkIds" UUID[],
    "minimumDestinationAgeSeconds" INTEGER NOT NULL DEFAULT 0,
    "requireApprovalForNewDestination" BOOLEAN NOT NULL DEFAULT false,
    "operatorId" UUID NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "PayoutPolicy_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "SigningRequest" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "environmentId" UUID NOT NULL,
    "environmentType" "EnvironmentType" NOT NULL,
    "withdrawalId" UUID NOT NULL,
    "payload" JSONB NOT NULL,
    "canonicalPayload" TEXT NOT NULL,
    "digest" TEXT NOT NULL,
    "status" "SigningRequestStatus" NOT NULL DEFAULT 'PENDING',
    "signature" TEXT,
    "signedAt" TIMESTAMPTZ(3),
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "SigningRequest_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "Withdrawal_holdId_key" ON "Withdrawal"("holdId");

-- CreateIndex
CREATE UNIQUE INDEX "Withdrawal_txHash_key" ON "Withdrawal"("txHash");

-- CreateIndex
CREATE INDEX "Withdrawal_organizationId_id_idx" ON "Withdrawal"("organizationId", "id");

-- CreateIndex
CREATE INDEX "Withdrawal_accountId_createdAt_idx" ON "Withdrawal"("accountId", "createdAt");

-- CreateIndex
CREATE INDEX "Withdrawal_status_nextAttemptAt_idx" ON "Withdrawal"("status", "nextAttemptAt");

-- CreateIndex
CREATE INDEX "Withdrawal_withdrawalDestinationId_status_idx" ON "Withdrawal"("withdrawalDestinationId", "status");

-- CreateIndex
CREATE INDEX "WithdrawalPolicy_organizationId_assetNetworkId_version_idx" ON "WithdrawalPolicy"("organizationId", "assetNetworkId", "version");

-- CreateIndex
CREATE UNIQUE INDEX "PayoutPolicy_organizationId_version_key" ON "PayoutPolicy"("organizationId", "version");

-- CreateIndex
CREATE UNIQUE INDEX "SigningRequest_withdrawalId_key" ON "SigningRequest"("withdrawalId");

-- CreateIndex
CREATE INDEX "SigningRequest_organizationId_id_idx" ON "SigningRequest"("organizationId", "id");

-- Hand-written (withdrawals): foreign keys and checks the datamodel does not say.
ALTER TABLE "Withdrawal"
  ADD CONSTRAINT "Withdrawal_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  ADD CONSTRAINT "Withdrawal_accountId_fkey" FOREIGN KEY ("accountId") REFERENCES "Account"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  ADD CONSTRAINT "Withdrawal_assetNetworkId_fkey" FOREIGN KEY ("assetNetworkId") REFERENCES "AssetNetwork"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  ADD CONSTRAINT "Withdrawal_networkId_fkey" FOREIGN KEY ("networkId") REFERENCES "Network"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  ADD CONSTRAINT "Withdrawal_withdrawalDestinationId_fkey" FOREIGN KEY ("withdrawalDestinationId") REFERENCES "WithdrawalDestination"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  ADD CONSTRAINT "Withdrawal_walletId_fkey" FOREIGN KEY ("walletId") REFERENCES "Wallet"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  ADD CONSTRAINT "Withdrawal_holdId_fkey" FOREIGN KEY ("holdId") REFERENCES "LedgerHold"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  ADD CONSTRAINT "Withdrawal_withdrawalPolicyId_fkey" FOREIGN KEY ("withdrawalPolicyId") REFERENCES "WithdrawalPolicy"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  ADD CONSTRAINT "Withdrawal_payoutPolicyId_fkey" FOREIGN KEY ("payoutPolicyId") REFERENCES "PayoutPolicy"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  ADD CONSTRAINT "Withdrawal_approvedByOperatorId_fkey" FOREIGN KEY ("approvedByOperatorId") REFERENCES "Operator"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  ADD CONSTRAINT "Withdrawal_amount_check" CHECK ("amount" > 0),
  ADD CONSTRAINT "Withdrawal_custody_check" CHECK (
    ("custodyMode" = 'CUSTODIAL' AND "walletId" IS NULL AND "sourceIndex" IS NULL)
    OR ("custodyMode" = 'SELF_CUSTODY' AND "walletId" IS NOT NULL AND "sourceIndex" >= 0 AND "fromAddress" IS NOT NULL)),
  ADD CONSTRAINT "Withdrawal_broadcast_check" CHECK ("status" NOT IN ('BROADCAST', 'CONFIRMED') OR "txHash" IS NOT NULL);

ALTER TABLE "WithdrawalPolicy"
  ADD CONSTRAINT "WithdrawalPolicy_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  ADD CONSTRAINT "WithdrawalPolicy_assetNetworkId_fkey" FOREIGN KEY ("assetNetworkId") REFERENCES "AssetNetwork"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  ADD CONSTRAINT "WithdrawalPolicy_operatorId_fkey" FOREIGN KEY ("operatorId") REFERENCES "Operator"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  ADD CONSTRAINT "WithdrawalPolicy_limits_check" CHECK (
    ("perWithdrawalLimit" IS NULL OR "perWithdrawalLimit" > 0) AND ("approvalThreshold" IS NULL OR "approvalThreshold" >= 0)
    AND (("periodLimit" IS NULL AND "periodSeconds" IS NULL) OR ("periodLimit" > 0 AND "periodSeconds" > 0)));
CREATE UNIQUE INDEX "WithdrawalPolicy_scope_version_key" ON "WithdrawalPolicy" ("organizationId", COALESCE("assetNetworkId", '00000000-0000-0000-0000-000000000000'::uuid), "version");

ALTER TABLE "PayoutPolicy"
  ADD CONSTRAINT "PayoutPolicy_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  ADD CONSTRAINT "PayoutPolicy_operatorId_fkey" FOREIGN KEY ("operatorId") REFERENCES "Operator"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  ADD CONSTRAINT "PayoutPolicy_age_check" CHECK ("minimumDestinationAgeSeconds" >= 0);

ALTER TABLE "SigningRequest"
  ADD CONSTRAINT "SigningRequest_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  ADD CONSTRAINT "SigningRequest_environmentId_fkey" FOREIGN KEY ("environmentId") REFERENCES "Environment"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  ADD CONSTRAINT "SigningRequest_withdrawalId_fkey" FOREIGN KEY ("withdrawalId") REFERENCES "Withdrawal"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  ADD CONSTRAINT "SigningRequest_signed_check" CHECK (("status" = 'SIGNED') = ("signature" IS NOT NULL AND "signedAt" IS NOT NULL));
