-- Crash recovery and stuck operations (issue 15): the recovery sweep, the stuck-operation list
-- (GetStuckOperations) and /readyz's count walk these partial indexes of the non-terminal states,
-- oldest change first: their size follows the operations in flight, not the history.
CREATE INDEX "Settlement_pending_updatedAt_idx" ON "Settlement" ("updatedAt") WHERE "status" = 'PENDING';
CREATE INDEX "Refund_pending_updatedAt_idx" ON "Refund" ("updatedAt") WHERE "status" = 'PENDING';
CREATE INDEX "Withdrawal_moving_updatedAt_idx" ON "Withdrawal" ("updatedAt") WHERE "status" IN ('APPROVED', 'BROADCAST', 'BROADCAST_FAILED');
CREATE INDEX "Deposit_open_updatedAt_idx" ON "Deposit" ("updatedAt") WHERE "status" IN ('DETECTED', 'CONFIRMING');
