-- CreateEnum
CREATE TYPE "AssetNetworkStatus" AS ENUM ('ENABLED', 'PAUSED', 'DISABLED');

-- CreateEnum
CREATE TYPE "NetworkKind" AS ENUM ('SANDBOX', 'EVM', 'UTXO', 'TRON', 'SOLANA');

-- CreateEnum
CREATE TYPE "CustodyMode" AS ENUM ('CUSTODIAL', 'SELF_CUSTODY');

-- CreateEnum
CREATE TYPE "SandboxTransactionStatus" AS ENUM ('PENDING', 'MINED', 'ORPHANED', 'DROPPED', 'REPLACED', 'REVERTED');

-- CreateEnum
CREATE TYPE "LedgerAccountKind" AS ENUM ('CUSTOMER', 'ESCROW', 'SUSPENSE', 'CHAIN_CLEARING', 'FEES', 'PLATFORM_REVENUE');

-- CreateEnum
CREATE TYPE "LedgerDirection" AS ENUM ('DEBIT', 'CREDIT');

-- CreateEnum
CREATE TYPE "LedgerHoldStatus" AS ENUM ('PENDING', 'POSTED', 'VOIDED', 'EXPIRED');

-- CreateEnum
CREATE TYPE "TransactionStatus" AS ENUM ('AWAITING_FUNDS', 'FUNDED', 'RESERVED', 'CANCELLED', 'EXPIRED');

-- CreateEnum
CREATE TYPE "ParticipantRole" AS ENUM ('BENEFICIARY', 'PAYER');

-- CreateEnum
CREATE TYPE "PaymentIntentStatus" AS ENUM ('AWAITING_PAYMENT', 'PROCESSING', 'SUCCEEDED', 'EXPIRED', 'CANCELLED');

-- CreateEnum
CREATE TYPE "DepositStatus" AS ENUM ('DETECTED', 'CONFIRMING', 'CONFIRMED', 'REJECTED', 'UNDER_REVIEW', 'REORG_FROZEN', 'REVERSED');

-- CreateTable
CREATE TABLE "Asset" (
    "id" UUID NOT NULL,
    "code" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "decimals" INTEGER NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Asset_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Network" (
    "id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "kind" "NetworkKind" NOT NULL,
    "environmentType" "EnvironmentType" NOT NULL,
    "blockTimeSeconds" INTEGER NOT NULL,
    "requiredConfirmations" INTEGER NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Network_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "AssetNetwork" (
    "id" UUID NOT NULL,
    "assetId" UUID NOT NULL,
    "networkId" UUID NOT NULL,
    "decimals" INTEGER NOT NULL,
    "contractReference" TEXT,
    "minimumDeposit" DECIMAL(78,0) NOT NULL,
    "status" "AssetNetworkStatus" NOT NULL DEFAULT 'DISABLED',
    "statusReason" TEXT,
    "statusChangedAt" TIMESTAMPTZ(3),
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "AssetNetwork_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Wallet" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "applicationId" UUID NOT NULL,
    "environmentId" UUID NOT NULL,
    "environmentType" "EnvironmentType" NOT NULL,
    "networkId" UUID NOT NULL,
    "custodyMode" "CustodyMode" NOT NULL,
    "label" TEXT,
    "curve" TEXT NOT NULL,
    "publicKey" TEXT NOT NULL,
    "sealedPrivateKey" BYTEA,
    "nextAddressIndex" INTEGER NOT NULL DEFAULT 0,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Wallet_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "DepositAddress" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "applicationId" UUID NOT NULL,
    "walletId" UUID NOT NULL,
    "networkId" UUID NOT NULL,
    "assetNetworkId" UUID NOT NULL,
    "address" TEXT NOT NULL,
    "derivationIndex" INTEGER NOT NULL,
    "publicKey" TEXT NOT NULL,
    "paymentIntentId" UUID,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "DepositAddress_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "SandboxBlock" (
    "id" UUID NOT NULL,
    "networkId" UUID NOT NULL,
    "height" INTEGER NOT NULL,
    "hash" TEXT NOT NULL,
    "parentHash" TEXT,
    "canonical" BOOLEAN NOT NULL DEFAULT true,
    "minedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "SandboxBlock_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "SandboxTransaction" (
    "id" UUID NOT NULL,
    "networkId" UUID NOT NULL,
    "assetNetworkId" UUID NOT NULL,
    "txHash" TEXT NOT NULL,
    "fromAddress" TEXT NOT NULL,
    "toAddress" TEXT NOT NULL,
    "amount" DECIMAL(78,0) NOT NULL,
    "status" "SandboxTransactionStatus" NOT NULL DEFAULT 'PENDING',
    "replaceable" BOOLEAN NOT NULL DEFAULT false,
    "replacedByTxHash" TEXT,
    "blockHash" TEXT,
    "blockHeight" INTEGER,
    "willRevert" BOOLEAN NOT NULL DEFAULT false,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "SandboxTransaction_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "SandboxAddressBalance" (
    "networkId" UUID NOT NULL,
    "assetNetworkId" UUID NOT NULL,
    "address" TEXT NOT NULL,
    "balance" DECIMAL(78,0) NOT NULL,

    CONSTRAINT "SandboxAddressBalance_pkey" PRIMARY KEY ("networkId","assetNetworkId","address")
);

-- CreateTable
CREATE TABLE "SandboxNetworkState" (
    "networkId" UUID NOT NULL,
    "lastBlockAt" TIMESTAMPTZ(3),

    CONSTRAINT "SandboxNetworkState_pkey" PRIMARY KEY ("networkId")
);

-- CreateTable
CREATE TABLE "SandboxClock" (
    "organizationId" UUID NOT NULL,
    "offsetMs" BIGINT NOT NULL DEFAULT 0,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "SandboxClock_pkey" PRIMARY KEY ("organizationId")
);

-- CreateTable
CREATE TABLE "LedgerAccount" (
    "id" UUID NOT NULL,
    "kind" "LedgerAccountKind" NOT NULL,
    "ownerId" UUID,
    "organizationId" UUID,
    "assetNetworkId" UUID NOT NULL,
    "normalBalance" "LedgerDirection" NOT NULL,
    "debitsPosted" DECIMAL(78,0) NOT NULL DEFAULT 0,
    "creditsPosted" DECIMAL(78,0) NOT NULL DEFAULT 0,
    "debitsPending" DECIMAL(78,0) NOT NULL DEFAULT 0,
    "creditsPending" DECIMAL(78,0) NOT NULL DEFAULT 0,
    "version" BIGINT NOT NULL DEFAULT 0,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "LedgerAccount_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "LedgerTransaction" (
    "id" UUID NOT NULL,
    "idempotencyKey" TEXT NOT NULL,
    "payloadHash" TEXT NOT NULL,
    "nature" TEXT NOT NULL,
    "organizationId" UUID,
    "referenceType" TEXT,
    "referenceId" UUID,
    "metadata" JSONB,
    "postedAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "LedgerTransaction_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "LedgerEntry" (
    "id" UUID NOT NULL,
    "ledgerTransactionId" UUID NOT NULL,
    "ledgerAccountId" UUID NOT NULL,
    "assetNetworkId" UUID NOT NULL,
    "direction" "LedgerDirection" NOT NULL,
    "amount" DECIMAL(78,0) NOT NULL,
    "pending" BOOLEAN NOT NULL DEFAULT false,
    "holdId" UUID,
    "accountVersion" BIGINT NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "LedgerEntry_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "LedgerHold" (
    "id" UUID NOT NULL,
    "ledgerTransactionId" UUID NOT NULL,
    "debitAccountId" UUID NOT NULL,
    "creditAccountId" UUID NOT NULL,
    "assetNetworkId" UUID NOT NULL,
    "amount" DECIMAL(78,0) NOT NULL,
    "postedAmount" DECIMAL(78,0) NOT NULL DEFAULT 0,
    "status" "LedgerHoldStatus" NOT NULL DEFAULT 'PENDING',
    "expiresAt" TIMESTAMPTZ(3),
    "resolvedAt" TIMESTAMPTZ(3),
    "resolvedByLedgerTransactionId" UUID,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "LedgerHold_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Transaction" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "applicationId" UUID NOT NULL,
    "environmentId" UUID NOT NULL,
    "environmentType" "EnvironmentType" NOT NULL,
    "assetNetworkId" UUID NOT NULL,
    "amount" DECIMAL(78,0) NOT NULL,
    "fundedAmount" DECIMAL(78,0) NOT NULL DEFAULT 0,
    "status" "TransactionStatus" NOT NULL DEFAULT 'AWAITING_FUNDS',
    "frozen" BOOLEAN NOT NULL DEFAULT false,
    "frozenReason" TEXT,
    "frozenByMemberId" UUID,
    "frozenByDepositId" UUID,
    "cancelReason" TEXT,
    "fundedAt" TIMESTAMPTZ(3),
    "reservedAt" TIMESTAMPTZ(3),
    "cancelledAt" TIMESTAMPTZ(3),
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "Transaction_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "TransactionParticipant" (
    "transactionId" UUID NOT NULL,
    "accountId" UUID NOT NULL,
    "role" "ParticipantRole" NOT NULL,

    CONSTRAINT "TransactionParticipant_pkey" PRIMARY KEY ("transactionId","accountId")
);

-- CreateTable
CREATE TABLE "PaymentIntent" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "applicationId" UUID NOT NULL,
    "environmentId" UUID NOT NULL,
    "environmentType" "EnvironmentType" NOT NULL,
    "transactionId" UUID NOT NULL,
    "assetNetworkId" UUID NOT NULL,
    "amount" DECIMAL(78,0) NOT NULL,
    "status" "PaymentIntentStatus" NOT NULL DEFAULT 'AWAITING_PAYMENT',
    "depositAddressId" UUID,
    "detectedAmount" DECIMAL(78,0) NOT NULL DEFAULT 0,
    "confirmedAmount" DECIMAL(78,0) NOT NULL DEFAULT 0,
    "overpaid" BOOLEAN NOT NULL DEFAULT false,
    "paidLate" BOOLEAN NOT NULL DEFAULT false,
    "reference" TEXT,
    "metadata" JSONB,
    "expiresAt" TIMESTAMPTZ(3) NOT NULL,
    "succeededAt" TIMESTAMPTZ(3),
    "expiredAt" TIMESTAMPTZ(3),
    "cancelledAt" TIMESTAMPTZ(3),
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "PaymentIntent_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Deposit" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "paymentIntentId" UUID,
    "transactionId" UUID,
    "depositAddressId" UUID NOT NULL,
    "networkId" UUID NOT NULL,
    "assetNetworkId" UUID NOT NULL,
    "address" TEXT NOT NULL,
    "txHash" TEXT NOT NULL,
    "amount" DECIMAL(78,0) NOT NULL,
    "status" "DepositStatus" NOT NULL DEFAULT 'DETECTED',
    "confirmations" INTEGER NOT NULL DEFAULT 0,
    "blockHash" TEXT,
    "blockHeight" INTEGER,
    "late" BOOLEAN NOT NULL DEFAULT false,
    "creditedTo" "LedgerAccountKind",
    "reason" TEXT,
    "reviewReason" TEXT,
    "detectedAt" TIMESTAMPTZ(3) NOT NULL,
    "confirmedAt" TIMESTAMPTZ(3),
    "resolvedAt" TIMESTAMPTZ(3),
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "Deposit_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "Asset_code_key" ON "Asset"("code");

-- CreateIndex
CREATE UNIQUE INDEX "Network_name_key" ON "Network"("name");

-- CreateIndex
CREATE INDEX "AssetNetwork_status_idx" ON "AssetNetwork"("status");

-- CreateIndex
CREATE UNIQUE INDEX "AssetNetwork_assetId_networkId_key" ON "AssetNetwork"("assetId", "networkId");

-- CreateIndex
CREATE INDEX "Wallet_organizationId_idx" ON "Wallet"("organizationId");

-- CreateIndex
CREATE INDEX "Wallet_applicationId_idx" ON "Wallet"("applicationId");

-- CreateIndex
CREATE UNIQUE INDEX "DepositAddress_paymentIntentId_key" ON "DepositAddress"("paymentIntentId");

-- CreateIndex
CREATE INDEX "DepositAddress_organizationId_idx" ON "DepositAddress"("organizationId");

-- CreateIndex
CREATE UNIQUE INDEX "DepositAddress_networkId_address_key" ON "DepositAddress"("networkId", "address");

-- CreateIndex
CREATE UNIQUE INDEX "DepositAddress_walletId_derivationIndex_key" ON "DepositAddress"("walletId", "derivationIndex");

-- CreateIndex
CREATE UNIQUE INDEX "SandboxBlock_hash_key" ON "SandboxBlock"("hash");

-- CreateIndex
CREATE INDEX "SandboxBlock_networkId_height_idx" ON "SandboxBlock"("networkId", "height");

-- CreateIndex
CREATE UNIQUE INDEX "SandboxTransaction_txHash_key" ON "SandboxTransaction"("txHash");

-- CreateIndex
CREATE INDEX "SandboxTransaction_networkId_status_idx" ON "SandboxTransaction"("networkId", "status");

-- CreateIndex
CREATE INDEX "SandboxTransaction_networkId_toAddress_idx" ON "SandboxTransaction"("networkId", "toAddress");

-- CreateIndex
CREATE INDEX "LedgerAccount_organizationId_idx" ON "LedgerAccount"("organizationId");

-- CreateIndex
CREATE UNIQUE INDEX "LedgerAccount_kind_ownerId_assetNetworkId_key" ON "LedgerAccount"("kind", "ownerId", "assetNetworkId") NULLS NOT DISTINCT;

-- CreateIndex
CREATE UNIQUE INDEX "LedgerTransaction_idempotencyKey_key" ON "LedgerTransaction"("idempotencyKey");

-- CreateIndex
CREATE INDEX "LedgerTransaction_referenceType_referenceId_idx" ON "LedgerTransaction"("referenceType", "referenceId");

-- CreateIndex
CREATE INDEX "LedgerTransaction_organizationId_postedAt_idx" ON "LedgerTransaction"("organizationId", "postedAt");

-- CreateIndex
CREATE INDEX "LedgerTransaction_nature_postedAt_idx" ON "LedgerTransaction"("nature", "postedAt");

-- CreateIndex
CREATE INDEX "LedgerEntry_ledgerTransactionId_idx" ON "LedgerEntry"("ledgerTransactionId");

-- CreateIndex
CREATE INDEX "LedgerEntry_assetNetworkId_createdAt_idx" ON "LedgerEntry"("assetNetworkId", "createdAt");

-- CreateIndex
CREATE UNIQUE INDEX "LedgerEntry_ledgerAccountId_accountVersion_key" ON "LedgerEntry"("ledgerAccountId", "accountVersion");

-- CreateIndex
CREATE INDEX "LedgerHold_status_expiresAt_idx" ON "LedgerHold"("status", "expiresAt");

-- CreateIndex
CREATE INDEX "Transaction_organizationId_createdAt_idx" ON "Transaction"("organizationId", "createdAt");

-- CreateIndex
CREATE INDEX "TransactionParticipant_accountId_idx" ON "TransactionParticipant"("accountId");

-- CreateIndex
CREATE UNIQUE INDEX "PaymentIntent_transactionId_key" ON "PaymentIntent"("transactionId");

-- CreateIndex
CREATE UNIQUE INDEX "PaymentIntent_depositAddressId_key" ON "PaymentIntent"("depositAddressId");

-- CreateIndex
CREATE INDEX "PaymentIntent_status_expiresAt_idx" ON "PaymentIntent"("status", "expiresAt");

-- CreateIndex
CREATE UNIQUE INDEX "PaymentIntent_organizationId_reference_key" ON "PaymentIntent"("organizationId", "reference");

-- CreateIndex
CREATE INDEX "Deposit_paymentIntentId_idx" ON "Deposit"("paymentIntentId");

-- CreateIndex
CREATE INDEX "Deposit_status_idx" ON "Deposit"("status");

-- CreateIndex
CREATE UNIQUE INDEX "Deposit_networkId_txHash_key" ON "Deposit"("networkId", "txHash");

-- AddForeignKey
ALTER TABLE "AssetNetwork" ADD CONSTRAINT "AssetNetwork_assetId_fkey" FOREIGN KEY ("assetId") REFERENCES "Asset"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "AssetNetwork" ADD CONSTRAINT "AssetNetwork_networkId_fkey" FOREIGN KEY ("networkId") REFERENCES "Network"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "DepositAddress" ADD CONSTRAINT "DepositAddress_walletId_fkey" FOREIGN KEY ("walletId") REFERENCES "Wallet"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "LedgerEntry" ADD CONSTRAINT "LedgerEntry_ledgerTransactionId_fkey" FOREIGN KEY ("ledgerTransactionId") REFERENCES "LedgerTransaction"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "LedgerEntry" ADD CONSTRAINT "LedgerEntry_ledgerAccountId_fkey" FOREIGN KEY ("ledgerAccountId") REFERENCES "LedgerAccount"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "TransactionParticipant" ADD CONSTRAINT "TransactionParticipant_transactionId_fkey" FOREIGN KEY ("transactionId") REFERENCES "Transaction"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "PaymentIntent" ADD CONSTRAINT "PaymentIntent_transactionId_fkey" FOREIGN KEY ("transactionId") REFERENCES "Transaction"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Deposit" ADD CONSTRAINT "Deposit_paymentIntentId_fkey" FOREIGN KEY ("paymentIntentId") REFERENCES "PaymentIntent"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- ------------------------------------------------------------------------------------------------
-- Hand-written: what the datamodel cannot say.

-- Foreign keys to the tenancy and catalog tables (plain uuid columns in schema.prisma).
ALTER TABLE "Wallet" ADD FOREIGN KEY ("organizationId") REFERENCES "Organization"("id"),
  ADD FOREIGN KEY ("applicationId") REFERENCES "Application"("id"),
  ADD FOREIGN KEY ("environmentId") REFERENCES "Environment"("id"),
  ADD FOREIGN KEY ("networkId") REFERENCES "Network"("id");
ALTER TABLE "DepositAddress" ADD FOREIGN KEY ("organizationId") REFERENCES "Organization"("id"),
  ADD FOREIGN KEY ("networkId") REFERENCES "Network"("id"),
  ADD FOREIGN KEY ("assetNetworkId") REFERENCES "AssetNetwork"("id"),
  ADD FOREIGN KEY ("paymentIntentId") REFERENCES "PaymentIntent"("id");
ALTER TABLE "SandboxBlock" ADD FOREIGN KEY ("networkId") REFERENCES "Network"("id");
ALTER TABLE "SandboxTransaction" ADD FOREIGN KEY ("networkId") REFERENCES "Network"("id"),
  ADD FOREIGN KEY ("assetNetworkId") REFERENCES "AssetNetwork"("id");
ALTER TABLE "SandboxNetworkState" ADD FOREIGN KEY ("networkId") REFERENCES "Network"("id");
ALTER TABLE "SandboxClock" ADD FOREIGN KEY ("organizationId") REFERENCES "Organization"("id");
ALTER TABLE "LedgerAccount" ADD FOREIGN KEY ("assetNetworkId") REFERENCES "AssetNetwork"("id"),
  ADD FOREIGN KEY ("organizationId") REFERENCES "Organization"("id");
ALTER TABLE "LedgerEntry" ADD FOREIGN KEY ("assetNetworkId") REFERENCES "AssetNetwork"("id"),
  ADD FOREIGN KEY ("holdId") REFERENCES "LedgerHold"("id");
ALTER TABLE "LedgerHold" ADD FOREIGN KEY ("ledgerTransactionId") REFERENCES "LedgerTransaction"("id"),
  ADD FOREIGN KEY ("debitAccountId") REFERENCES "LedgerAccount"("id"),
  ADD FOREIGN KEY ("creditAccountId") REFERENCES "LedgerAccount"("id"),
  ADD FOREIGN KEY ("assetNetworkId") REFERENCES "AssetNetwork"("id"),
  ADD FOREIGN KEY ("resolvedByLedgerTransactionId") REFERENCES "LedgerTransaction"("id");
ALTER TABLE "Transaction" ADD FOREIGN KEY ("organizationId") REFERENCES "Organization"("id"),
  ADD FOREIGN KEY ("applicationId") REFERENCES "Application"("id"),
  ADD FOREIGN KEY ("environmentId") REFERENCES "Environment"("id"),
  ADD FOREIGN KEY ("assetNetworkId") REFERENCES "AssetNetwork"("id");
ALTER TABLE "TransactionParticipant" ADD FOREIGN KEY ("accountId") REFERENCES "Account"("id");
ALTER TABLE "PaymentIntent" ADD FOREIGN KEY ("organizationId") REFERENCES "Organization"("id"),
  ADD FOREIGN KEY ("applicationId") REFERENCES "Application"("id"),
  ADD FOREIGN KEY ("environmentId") REFERENCES "Environment"("id"),
  ADD FOREIGN KEY ("assetNetworkId") REFERENCES "AssetNetwork"("id"),
  ADD FOREIGN KEY ("depositAddressId") REFERENCES "DepositAddress"("id");
ALTER TABLE "Deposit" ADD FOREIGN KEY ("organizationId") REFERENCES "Organization"("id"),
  ADD FOREIGN KEY ("transactionId") REFERENCES "Transaction"("id"),
  ADD FOREIGN KEY ("depositAddressId") REFERENCES "DepositAddress"("id"),
  ADD FOREIGN KEY ("networkId") REFERENCES "Network"("id"),
  ADD FOREIGN KEY ("assetNetworkId") REFERENCES "AssetNetwork"("id");

-- Amounts are base units: whole, never negative (positive where a zero means nothing).
ALTER TABLE "Asset" ADD CHECK ("decimals" BETWEEN 0 AND 36);
ALTER TABLE "Network" ADD CHECK ("blockTimeSeconds" > 0), ADD CHECK ("requiredConfirmations" >= 0);
ALTER TABLE "AssetNetwork" ADD CHECK ("decimals" BETWEEN 0 AND 36), ADD CHECK ("minimumDeposit" >= 0);
ALTER TABLE "SandboxTransaction" ADD CHECK ("amount" > 0);
ALTER TABLE "SandboxAddressBalance" ADD CHECK ("balance" >= 0);
ALTER TABLE "LedgerAccount" ADD CHECK ("debitsPosted" >= 0 AND "creditsPosted" >= 0 AND "debitsPending" >= 0 AND "creditsPending" >= 0 AND "version" >= 0);
ALTER TABLE "LedgerEntry" ADD CHECK ("amount" > 0), ADD CHECK ("accountVersion" > 0);
ALTER TABLE "LedgerHold" ADD CHECK ("amount" > 0), ADD CHECK ("postedAmount" >= 0 AND "postedAmount" <= "amount");
ALTER TABLE "Transaction" ADD CHECK ("amount" > 0), ADD CHECK ("fundedAmount" >= 0);
ALTER TABLE "PaymentIntent" ADD CHECK ("amount" > 0), ADD CHECK ("detectedAmount" >= 0 AND "confirmedAmount" >= 0);
ALTER TABLE "Deposit" ADD CHECK ("amount" > 0), ADD CHECK ("confirmations" >= 0);

-- At most one canonical block per height of a network.
CREATE UNIQUE INDEX "SandboxBlock_canonical_height" ON "SandboxBlock" ("networkId", "height") WHERE "canonical";

-- The ledger is append-only: entries and transactions are never changed or deleted (corrections
-- are new transactions). Balance rows and holds change only through the posting functions.
CREATE FUNCTION ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;
CREATE TRIGGER "LedgerEntry_append_only" BEFORE UPDATE OR DELETE ON "LedgerEntry" FOR EACH ROW EXECUTE FUNCTION ledger_append_only();
CREATE TRIGGER "LedgerEntry_no_truncate" BEFORE TRUNCATE ON "LedgerEntry" FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only();
CREATE TRIGGER "LedgerTransaction_append_only" BEFORE UPDATE OR DELETE ON "LedgerTransaction" FOR EACH ROW EXECUTE FUNCTION ledger_append_only();
CREATE TRIGGER "LedgerTransaction_no_truncate" BEFORE TRUNCATE ON "LedgerTransaction" FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only();
