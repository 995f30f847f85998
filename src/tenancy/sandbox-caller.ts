import type { Context } from '../context';
import { fieldError, notFound } from '../errors';
import { isUuid } from '../ids';

/** Who acts on the sandbox: its organization and an idempotency scope of its own; 404 outside SANDBOX. */
export async function sandboxCaller(ctx: Context, environmentIdArg?: string | null): Promise<{ organizationId: string; actor: string }> {
  const p = ctx.principal;
  if (p?.type === 'apiKey') {
    if (p.mode !== 'SANDBOX') throw notFound('Sandbox');
    if (environmentIdArg != null && environmentIdArg.toLowerCase() !== p.environmentId)
      throw fieldError('environmentId', "must be omitted or the API key's own environment");
    return { organizationId: p.organizationId, actor: `apiKey:${p.environmentId}` };
  }
  if (p?.type === 'member') {
    if (environmentIdArg != null) {
      const env = isUuid(environmentIdArg)
        ? await ctx.deps.db.environment.findFirst({ where: { id: environmentIdArg.toLowerCase(), organizationId: p.organizationId }, select: { type: true } })
        : null;
      if (!env || env.type !== 'SANDBOX') throw notFound('Environment');
    }
    return { organizationId: p.organizationId, actor: `member:${p.memberId}` };
  }
  throw notFound('Sandbox');
}
