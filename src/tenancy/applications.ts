import { z } from 'zod';
import type { Context } from '../context';
import { DomainError, invalidState } from '../errors';
import { audit } from '../audit/audit';
import { newApiKey } from '../auth/secrets';
import { assertOrganization, loadApplication, loadEnvironment } from './access';
import { assertId } from '../ids';
import type { EnvironmentType } from '../generated/prisma/enums';
import { invalidateApiKeyCache, notifyApiKeysChanged } from '../auth/authenticate';

export const applicationName = z.string().trim().min(1, 'must not be empty').max(200);
export const reason = z.string().trim().min(1, 'must not be empty').max(1000);

export async function createApplication(ctx: Context, organizationId: string, input: { name: string }) {
  assertOrganization(ctx, organizationId, 'Organization');
  return ctx.deps.db.$transaction(async (tx) => {
    const app = await tx.application.create({ data: { organizationId, name: input.name } });
    await audit(tx, ctx, { organizationId, entityType: 'Application', entityId: app.id, action: 'application.created', after: { name: app.name } });
    return app;
  });
}

/**
 * Application lifecycle. ACTIVE -> SUSPENDED (reason) -> ACTIVE (reactivate); ACTIVE or
 * SUSPENDED -> ARCHIVED, terminal. While suspended, the application's API keys are refused (403)
 * and no key or environment can be added; reactivation restores the same keys. Archiving revokes
 * every key for good.
 */
const moves = {
  suspend: { from: ['ACTIVE'], to: 'SUSPENDED', done: 'suspended' },
  reactivate: { from: ['SUSPENDED'], to: 'ACTIVE', done: 'reactivated' },
  archive: { from: ['ACTIVE', 'SUSPENDED'], to: 'ARCHIVED', done: 'archived' },
} as const;

export async function changeApplicationStatus(ctx: Context, id: string, move: keyof typeof moves, why?: string) {
  const app = await loadApplication(ctx, id);
  const { from, to, done } = moves[move];
  const now = ctx.deps.clock.now();
  await ctx.deps.db.$transaction(async (tx) => {
    // Conditional update: a concurrent move of the same application cannot apply twice.
    const changed = await tx.application.updateMany({
      where: { id, status: { in: [...from] } },
      data: { status: to, statusReason: move === 'reactivate' ? null : (why ?? null) },
    });
    if (changed.count !== 1) throw invalidState(`An application in status ${app.status} cannot be ${done}.`);
    if (move === 'archive') await tx.apiKey.updateMany({ where: { applicationId: id, status: 'ACTIVE' }, data: { status: 'REVOKED', revokedAt: now } });
    // Every process's API key cache forgets the application's keys at the commit.
    await notifyApiKeysChanged(tx);
    await audit(tx, ctx, {
      organizationId: app.organizationId,
      entityType: 'Application',
      entityId: id,
      action: `application.${done}`,
      before: { status: app.status },
      after: { status: to, ...(why ? { reason: why } : {}) },
    });
  });
  invalidateApiKeyCache(ctx.deps);
}

function assertActive(app: { status: string }) {
  if (app.status !== 'ACTIVE') throw invalidState(`The application is ${app.status.toLowerCase()}.`);
}

export async function createEnvironment(ctx: Context, applicationId: string, input: { type: EnvironmentType; name?: string | null }) {
  const app = await loadApplication(ctx, applicationId);
  assertActive(app);
  return ctx.deps.db.$transaction(async (tx) => {
    const exists = await tx.environment.findUnique({ where: { applicationId_type: { applicationId, type: input.type } } });
    if (exists) throw new DomainError('CONFLICT', `The application already has a ${input.type.toLowerCase()} environment.`);
    const env = await tx.environment.create({
      data: { applicationId, organizationId: app.organizationId, type: input.type, name: input.name ?? input.type.toLowerCase() },
    });
    await audit(tx, ctx, {
      organizationId: app.organizationId,
      entityType: 'Environment',
      entityId: env.id,
      action: 'environment.created',
      after: { type: env.type, name: env.name },
    });
    return env;
  });
}

export async function generateApiKey(ctx: Context, environmentId: string) {
  const env = await loadEnvironment(ctx, environmentId);
  assertActive(env.application);
  const { key, displayPrefix, keyHash } = newApiKey(env.type);
  const row = await ctx.deps.db.$transaction(async (tx) => {
    const created = await tx.apiKey.create({
      data: { organizationId: env.organizationId, applicationId: env.applicationId, environmentId, displayPrefix, keyHash, createdAt: ctx.deps.clock.now() },
    });
    await audit(tx, ctx, {
      organizationId: env.organizationId,
      entityType: 'ApiKey',
      entityId: created.id,
      action: 'api_key.generated',
      after: { environmentId, displayPrefix },
    });
    return created;
  });
  return { ...row, apiKey: key };
}

export const rotateInput = z.object({
  /** How long the old key keeps working; 0 (the default) revokes it at once. At most 7 days. */
  expiresInSeconds: z
    .number()
    .int()
    .min(0)
    .max(7 * 24 * 3600)
    .nullish(),
});

/**
 * Rotation: a new key for the same environment; the old one is revoked at once, or keeps
 * working until expiresInSeconds have passed so a deployment can switch without downtime.
 */
export async function rotateApiKey(ctx: Context, id: string, input: z.infer<typeof rotateInput>) {
  const old = await ctx.deps.db.apiKey.findUnique({ where: { id: assertId(id, 'API key') }, include: { environment: true, application: true } });
  if (!old) throw new DomainError('NOT_FOUND', 'API key not found');
  assertOrganization(ctx, old.organizationId, 'API key');
  assertActive(old.application);
  const now = ctx.deps.clock.now();
  const grace = input.expiresInSeconds ?? 0;
  const { key, displayPrefix, keyHash } = newApiKey(old.environment.type);
  const row = await ctx.deps.db.$transaction(async (tx) => {
    const retired = await tx.apiKey.updateMany({
      where: { id, status: 'ACTIVE', rotatedTo: null, OR: [{ expiresAt: null }, { expiresAt: { gt: now } }] },
      data: grace === 0 ? { status: 'REVOKED', revokedAt: now } : { expiresAt: new Date(now.getTime() + grace * 1000) },
    });
    if (retired.count !== 1) throw invalidState('Only an active key that was not rotated already can be rotated.');
    await notifyApiKeysChanged(tx);
    const created = await tx.apiKey.create({
      data: {
        organizationId: old.organizationId,
        applicationId: old.applicationId,
        environmentId: old.environmentId,
        displayPrefix,
        keyHash,
        rotatedFromId: id,
        createdAt: now,
      },
    });
    await audit(tx, ctx, {
      organizationId: old.organizationId,
      entityType: 'ApiKey',
      entityId: id,
      action: 'api_key.rotated',
      after: { replacedBy: created.id, previousKeyExpiresAt: new Date(now.getTime() + grace * 1000).toISOString() },
    });
    return created;
  });
  invalidateApiKeyCache(ctx.deps);
  return { ...row, apiKey: key, previousApiKeyId: id, previousKeyExpiresAt: new Date(now.getTime() + grace * 1000) };
}

export async function revokeApiKey(ctx: Context, id: string) {
  const key = await ctx.deps.db.apiKey.findUnique({ where: { id: assertId(id, 'API key') } });
  if (!key) throw new DomainError('NOT_FOUND', 'API key not found');
  assertOrganization(ctx, key.organizationId, 'API key');
  const now = ctx.deps.clock.now();
  await ctx.deps.db.$transaction(async (tx) => {
    const revoked = await tx.apiKey.updateMany({ where: { id, status: 'ACTIVE' }, data: { status: 'REVOKED', revokedAt: now } });
    if (revoked.count !== 1) throw invalidState('The API key is already revoked.');
    await notifyApiKeysChanged(tx);
    await audit(tx, ctx, {
      organizationId: key.organizationId,
      entityType: 'ApiKey',
      entityId: id,
      action: 'api_key.revoked',
      before: { status: 'ACTIVE' },
      after: { status: 'REVOKED' },
    });
  });
  invalidateApiKeyCache(ctx.deps);
}
