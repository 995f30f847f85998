import type { Context } from '../context';
import { fieldError, notFound } from '../errors';
import { assertId, isUuid } from '../ids';
import { parsePaging, type Page } from '../kernel/paging';

/** AuditLogEntryResponse: the audit entry as operators read it. */
export interface AuditLogEntryView {
  id: string;
  occurredAt: Date;
  organizationId: string | null;
  actorType: string;
  actorId: string | null;
  entityType: string;
  entityId: string;
  action: string;
  requestId: string | null;
  before: unknown;
  after: unknown;
}

export interface AuditSearchFilter {
  organizationId?: string | null;
  entityType?: string | null;
  entityId?: string | null;
  /** Filters the entry's `action` (the spec's name for it). */
  actionType?: string | null;
  skip?: number | null;
  take?: number | null;
}

const select = {
  id: true,
  occurredAt: true,
  organizationId: true,
  actorType: true,
  actorId: true,
  entityType: true,
  entityId: true,
  action: true,
  requestId: true,
  before: true,
  after: true,
} as const;

function uuidFilter(field: string, value: string | null | undefined): string | undefined {
  if (value == null) return undefined;
  if (!isUuid(value)) throw fieldError(field, 'must be a uuid');
  return value.toLowerCase();
}

function textFilter(field: string, value: string | null | undefined): string | undefined {
  if (value == null) return undefined;
  if (!value.length || value.length > 200) throw fieldError(field, 'must be 1 to 200 characters');
  return value;
}

/** SearchAuditLog: exact-match filters, newest first (occurredAt desc, then id desc), exact total. */
export async function searchAuditLog(ctx: Context, filter: AuditSearchFilter): Promise<Page<AuditLogEntryView>> {
  const where = {
    organizationId: uuidFilter('organizationId', filter.organizationId),
    entityType: textFilter('entityType', filter.entityType),
    entityId: uuidFilter('entityId', filter.entityId),
    action: textFilter('actionType', filter.actionType),
  };
  const { skip, take } = parsePaging(filter);
  const db = ctx.deps.db;
  const [items, total] = await db.$transaction([
    db.auditLogEntry.findMany({ where, select, orderBy: [{ occurredAt: 'desc' }, { id: 'desc' }], skip, take }),
    db.auditLogEntry.count({ where }),
  ]);
  return { items, skip, take, total };
}

/** GetAuditLogEntry: an unknown or malformed id answers 404. */
export async function getAuditLogEntry(ctx: Context, idArg: string): Promise<AuditLogEntryView> {
  const id = assertId(idArg, 'AuditLogEntry');
  const row = await ctx.deps.db.auditLogEntry.findUnique({ where: { id }, select });
  if (!row) throw notFound('AuditLogEntry');
  return row;
}
