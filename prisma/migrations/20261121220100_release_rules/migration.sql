-- Release rules (src/settlements/release-rules.ts): the sweep looks for transactions with PENDING
-- milestones every minute; this partial index holds only those (released and cancelled milestones
-- leave it), so the sweep never scans settled history. Not expressible in schema.prisma.
CREATE INDEX "ReleaseMilestone_pending_idx" ON "ReleaseMilestone" ("transactionId") WHERE "status" = 'PENDING';
