-- Sandbox balances follow each block's transfers instead of summing an address's whole history on
-- every block (issue 22, "costs that stay flat as history grows"): "net" is received minus sent over
-- canonical MINED transactions, kept whole (a faucet's is negative); "balance" stays its positive part.
-- AlterTable
ALTER TABLE "SandboxAddressBalance" ADD COLUMN     "net" DECIMAL(1000,0) NOT NULL DEFAULT 0;

-- Backfill, once, in one pass over the mined transactions (every address a mined transfer touched has
-- its row already: the old recompute wrote both sides of each).
WITH flows AS (
  SELECT "networkId", "assetNetworkId", "toAddress" AS addr, "amount" AS delta FROM "SandboxTransaction" WHERE "status" = 'MINED'
  UNION ALL
  SELECT "networkId", "assetNetworkId", "fromAddress", -"amount" FROM "SandboxTransaction" WHERE "status" = 'MINED'
), nets AS (
  SELECT "networkId", "assetNetworkId", addr, SUM(delta) AS net FROM flows GROUP BY 1, 2, 3
)
UPDATE "SandboxAddressBalance" b SET "net" = n.net
  FROM nets n
 WHERE b."networkId" = n."networkId" AND b."assetNetworkId" = n."assetNetworkId" AND b."address" = n.addr;
