-- AlterTable
ALTER TABLE "EvmBroadcast" ADD COLUMN     "broadcastAt" TIMESTAMPTZ(3),
ADD COLUMN     "replacesTxHash" TEXT,
ADD COLUMN     "signedTransaction" TEXT;
