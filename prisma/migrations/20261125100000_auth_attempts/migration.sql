-- AlterTable
ALTER TABLE "PasswordResetToken" ADD COLUMN     "accountHolderId" UUID,
ALTER COLUMN "memberId" DROP NOT NULL;

-- CreateTable
CREATE TABLE "AuthThrottle" (
    "key" TEXT NOT NULL,
    "count" INTEGER NOT NULL,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,
    "blockedUntil" TIMESTAMPTZ(3),
    "allowed" BOOLEAN NOT NULL DEFAULT true,

    CONSTRAINT "AuthThrottle_pkey" PRIMARY KEY ("key")
);

-- CreateIndex
CREATE INDEX "AuthThrottle_updatedAt_idx" ON "AuthThrottle"("updatedAt");

-- CreateIndex
CREATE INDEX "PasswordResetToken_accountHolderId_idx" ON "PasswordResetToken"("accountHolderId");

-- AddForeignKey
ALTER TABLE "PasswordResetToken" ADD CONSTRAINT "PasswordResetToken_accountHolderId_fkey" FOREIGN KEY ("accountHolderId") REFERENCES "AccountHolder"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- A token belongs to exactly one person: a member or an account holder.
ALTER TABLE "PasswordResetToken" ADD CONSTRAINT "PasswordResetToken_one_subject" CHECK (num_nonnulls("memberId", "accountHolderId") = 1);

-- Every access-token check asks whether its session (refresh family) was revoked: a probe of
-- this small partial index, whatever the number of rotations in the family.
CREATE INDEX "RefreshToken_revoked_family_idx" ON "RefreshToken" ("familyId") WHERE "revokedAt" IS NOT NULL;
