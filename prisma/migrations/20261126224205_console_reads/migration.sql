-- The operator console's reads computed by the server (issue 23).

-- Endpoint health: the deliveries attempted in a time window (an attempt in the window belongs to a
-- delivery whose last attempt is in it), so the aggregates never walk an endpoint's whole history.
CREATE INDEX "WebhookDelivery_endpointId_lastAttemptAt_idx" ON "WebhookDelivery"("endpointId", "lastAttemptAt");

-- The dead-letter queue (webhookDeadLetters), newest first by id, per endpoint, per organization and
-- for the whole platform. Partial: they hold the dead letters only, so delivering the rest never
-- touches them, and the queue is read without reading the deliveries that succeeded.
CREATE INDEX "WebhookDelivery_dead_letter_endpoint_idx" ON "WebhookDelivery" ("endpointId", "id") WHERE "status" = 'DEAD_LETTER';
CREATE INDEX "WebhookDelivery_dead_letter_organization_idx" ON "WebhookDelivery" ("organizationId", "id") WHERE "status" = 'DEAD_LETTER';
CREATE INDEX "WebhookDelivery_dead_letter_idx" ON "WebhookDelivery" ("id") WHERE "status" = 'DEAD_LETTER';
