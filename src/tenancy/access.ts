import type { Context } from '../context';
import { notFound } from '../errors';
import { assertId } from '../ids';

/**
 * Tenant isolation in one place: a resource of another organization answers 404, exactly as a
 * resource that does not exist, so ids of other tenants cannot be probed.
 */
/** Fails with 404 unless the principal acts for `organizationId` (operators act for all). */
export function assertOrganization(ctx: Context, organizationId: string, what: string): void {
  if (ctx.principal?.type === 'operator') return;
  const p = ctx.principal;
  if ((p?.type === 'member' || p?.type === 'apiKey') && p.organizationId === organizationId) return;
  throw notFound(what);
}

/** The where-filter of the principal's own organization ({} for operators); 404 for anyone else. */
export function ownOrganization(ctx: Context, what: string): { organizationId?: string } {
  const p = ctx.principal;
  if (p?.type === 'operator') return {};
  if (p?.type === 'member' || p?.type === 'apiKey') return { organizationId: p.organizationId };
  throw notFound(what);
}

export async function loadApplication(ctx: Context, id: string) {
  const app = await ctx.deps.db.application.findUnique({ where: { id: assertId(id, 'Application') } });
  if (!app) throw notFound('Application');
  assertOrganization(ctx, app.organizationId, 'Application');
  return app;
}

export async function loadEnvironment(ctx: Context, id: string) {
  const env = await ctx.deps.db.environment.findUnique({ where: { id: assertId(id, 'Environment') }, include: { application: true } });
  if (!env) throw notFound('Environment');
  assertOrganization(ctx, env.organizationId, 'Environment');
  return env;
}
