-- Members can be removed (issue 27): the row stays, marked removed.
ALTER TABLE "Member" ADD COLUMN "removedAt" TIMESTAMPTZ(3);

-- A member's email is unique among members not removed, so a removed member's email can be
-- signed up or added again. Lookups by email add "removedAt" IS NULL and use this index.
DROP INDEX "Member_email_key";
CREATE UNIQUE INDEX "Member_email_active_key" ON "Member"("email") WHERE "removedAt" IS NULL;

-- Invitations can be withdrawn (issue 27).
ALTER TABLE "AccountHolderInvitation" ADD COLUMN "revokedAt" TIMESTAMPTZ(3);

-- Revoking a relationship now voids the organization's unclaimed invitations to the holder.
-- Invitations that a revocation made before this migration left claimable are voided here,
-- as that revocation would have voided them.
UPDATE "AccountHolderInvitation" i
SET "revokedAt" = r."revokedAt"
FROM "Relationship" r
JOIN "AccountHolder" h ON h."id" = r."accountHolderId"
WHERE r."status" = 'REVOKED'
  AND r."organizationId" = i."organizationId"
  AND lower(h."email") = lower(i."email")
  AND i."claimedAt" IS NULL
  AND i."revokedAt" IS NULL
  AND i."createdAt" <= r."revokedAt";
