-- AlterTable
ALTER TABLE "SandboxTransaction" ADD COLUMN     "recipientOrganizationId" UUID,
ADD COLUMN     "senderOrganizationId" UUID;

-- Backfill (best effort) for the transactions sent before the columns existed; anything left null
-- belongs to no organization (docs/chains.md, "Who may drop, replace and reorganize").
-- The recipient: the organization whose deposit address receives it.
UPDATE "SandboxTransaction" t SET "recipientOrganizationId" = d."organizationId"
  FROM "DepositAddress" d WHERE d."networkId" = t."networkId" AND d."address" = t."toAddress";
-- Sandbox deposits: the organization that sent them (their audit entry).
UPDATE "SandboxTransaction" t SET "senderOrganizationId" = a."organizationId"
  FROM "AuditLogEntry" a
 WHERE a."action" = 'sandbox.transaction_sent' AND a."entityType" = 'SandboxTransaction' AND a."entityId" = t."id" AND a."organizationId" IS NOT NULL;
-- Platform broadcasts: the withdrawal, refund or sweep that recorded the hash.
UPDATE "SandboxTransaction" t SET "senderOrganizationId" = w."organizationId"
  FROM "Withdrawal" w WHERE w."txHash" = t."txHash" AND t."senderOrganizationId" IS NULL;
UPDATE "SandboxTransaction" t SET "senderOrganizationId" = r."organizationId"
  FROM "Refund" r WHERE r."txHash" = t."txHash" AND t."senderOrganizationId" IS NULL;
UPDATE "SandboxTransaction" t SET "senderOrganizationId" = s."organizationId"
  FROM "TreasurySweep" s WHERE s."txHash" = t."txHash" AND t."senderOrganizationId" IS NULL;
-- Anything else sent from an organization's deposit address.
UPDATE "SandboxTransaction" t SET "senderOrganizationId" = d."organizationId"
  FROM "DepositAddress" d WHERE d."networkId" = t."networkId" AND d."address" = t."fromAddress" AND t."senderOrganizationId" IS NULL;
-- Replacements: the sender of the transaction they replaced, along replace-by-fee chains.
WITH RECURSIVE chain (hash, org) AS (
  SELECT "replacedByTxHash", "senderOrganizationId" FROM "SandboxTransaction"
   WHERE "status" = 'REPLACED' AND "replacedByTxHash" IS NOT NULL AND "senderOrganizationId" IS NOT NULL
  UNION
  SELECT t."replacedByTxHash", c.org FROM chain c JOIN "SandboxTransaction" t ON t."txHash" = c.hash
   WHERE t."status" = 'REPLACED' AND t."replacedByTxHash" IS NOT NULL
)
UPDATE "SandboxTransaction" t SET "senderOrganizationId" = c.org
  FROM chain c WHERE t."txHash" = c.hash AND t."senderOrganizationId" IS NULL;
