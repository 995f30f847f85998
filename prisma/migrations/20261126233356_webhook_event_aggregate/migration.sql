-- CreateIndex
CREATE INDEX "WebhookEvent_organizationId_aggregateId_idx" ON "WebhookEvent"("organizationId", "aggregateId");
