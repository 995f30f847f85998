import type { Context } from '../context';
import type { Db } from '../db/prisma';
import { actorOf } from '../auth/principal';

export interface AuditInput {
  organizationId: string | null;
  entityType: string;
  entityId: string;
  action: string;
  before?: Record<string, unknown> | null;
  after?: Record<string, unknown> | null;
}

/**
 * Writes the audit entry of a state change. Call it with the transaction that makes the change,
 * so both commit or neither does. Summaries never hold secrets or their hashes.
 */
export async function audit(tx: Db, ctx: Context, entry: AuditInput): Promise<void> {
  const { actorType, actorId } = actorOf(ctx.principal);
  await tx.auditLogEntry.create({
    data: {
      occurredAt: ctx.deps.clock.now(),
      organizationId: entry.organizationId,
      actorType,
      actorId,
      entityType: entry.entityType,
      entityId: entry.entityId,
      action: entry.action,
      requestId: ctx.requestId,
      before: (entry.before ?? undefined) as never,
      after: (entry.after ?? undefined) as never,
    },
  });
}
