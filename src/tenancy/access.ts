import type { Context } from '../context';
import { DomainError, notFound } from '../errors';

/**
 * Tenant isolation in one place: a resource of another organization answers 404, exactly as a
 * resource that does not exist, so ids of other tenants cannot be probed.
 */
export function organizationOf(ctx: Context): string {
  const p = ctx.principal;
  if (p?.type === 'member' || p?.type === 'apiKey') return p.organizationId;
  throw new DomainError('PRINCIPAL_NOT_ALLOWED', 'This operation needs a member session or an API key.');
}

/** Fails with 404 unless the principal acts for `organizationId` (operators act for all). */
export function assertOrganization(ctx: Context, organizationId: string, what: string): void {
  if (ctx.principal?.type === 'operator') return;
  const p = ctx.principal;
  if ((p?.type === 'member' || p?.type === 'apiKey') && p.organizationId === organizationId) return;
  throw notFound(what);
}

export async function loadApplication(ctx: Context, id: string) {
  const app = await ctx.deps.db.application.findUnique({ where: { id } });
  if (!app) throw notFound('Application');
  assertOrganization(ctx, app.organizationId, 'Application');
  return app;
}

export async function loadEnvironment(ctx: Context, id: string) {
  const env = await ctx.deps.db.environment.findUnique({ where: { id }, include: { application: true } });
  if (!env) throw notFound('Environment');
  assertOrganization(ctx, env.organizationId, 'Environment');
  return env;
}
