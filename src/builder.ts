import SchemaBuilder from '@pothos/core';
import PrismaPlugin from '@pothos/plugin-prisma';
import ScopeAuthPlugin from '@pothos/plugin-scope-auth';
import ValidationPlugin from '@pothos/plugin-validation';
import type { GraphQLResolveInfo } from 'graphql';
import type PrismaTypes from './generated/pothos-prisma-types';
import { getDatamodel } from './generated/pothos-prisma-types';
import type { Context } from './context';
import { DomainError, validationFailed, type FieldError } from './errors';
import { allows, denial, type Policy } from './auth/policy';

/**
 * The schema builder: plugins, context and scalars. It defines no types; each domain folder
 * adds its own (src/<domain>/schema.ts) and src/schema.ts assembles them.
 */
export const builder = new SchemaBuilder<{
  PrismaTypes: PrismaTypes;
  Context: Context;
  AuthScopes: { policy: Policy };
  Scalars: {
    DateTime: { Input: Date; Output: Date | string };
    JSON: { Input: unknown; Output: unknown };
  };
  DefaultFieldNullability: false;
}>({
  defaultFieldNullability: false,
  plugins: [ScopeAuthPlugin, ValidationPlugin, PrismaPlugin],
  scopeAuth: {
    authorizeOnSubscribe: true,
    authScopes: (ctx) => ({
      policy: (policy: Policy) => allows(policy, ctx.principal) && (policy.public === true || ctx.credentialError === null),
    }),
    unauthorizedError: (_parent, ctx, info) => denial(policyOf(info) ?? {}, ctx.principal, ctx.credentialError),
  },
  validation: {
    validationError: (result) => {
      // Field names are relative to the input object (the REST body): `email`, not `input.email`.
      const fieldErrors: FieldError[] = result.issues.map((i) => {
        const path = (i.path ?? []).map((p) => (typeof p === 'object' ? String(p.key) : String(p)));
        if (path[0] === 'input' && path.length > 1) path.shift();
        return { field: path.join('.') || '(input)', message: i.message, code: (i as { code?: string }).code ?? 'custom' };
      });
      return validationFailed(fieldErrors);
    },
  },
  prisma: {
    client: (ctx) => ctx.deps.db,
    dmmf: getDatamodel(),
    exposeDescriptions: false,
    filterConnectionTotalCount: true,
    onUnusedQuery: null,
  },
});

/** The policy a field was declared with (see Policy). */
export function policyOf(info: GraphQLResolveInfo): Policy | undefined {
  const field = info.parentType.getFields()[info.fieldName];
  const options = field?.extensions?.pothosOptions as { authScopes?: { policy?: Policy } } | undefined;
  return options?.authScopes?.policy;
}

builder.scalarType('DateTime', {
  description: 'An RFC 3339 date-time in UTC, e.g. 2026-01-31T12:00:00.000Z.',
  serialize: (v) => (v instanceof Date ? v.toISOString() : new Date(v).toISOString()),
  parseValue: (v) => {
    const d = new Date(String(v));
    if (typeof v !== 'string' || Number.isNaN(d.getTime())) throw new DomainError('VALIDATION_FAILED', 'Expected an RFC 3339 date-time.');
    return d;
  },
});

builder.scalarType('JSON', {
  description: 'Arbitrary JSON.',
  serialize: (v) => v,
  parseValue: (v) => v,
});

builder.queryType({});
builder.mutationType({});
builder.subscriptionType({});

/** The cursor page arguments of the list fields (read by src/kernel/paging.ts `pageQuery`). */
export const cursorPageArgs = builder.args((t) => ({
  limit: t.int({ description: '1 to 500; default 100.' }),
  after: t.id({ description: 'The nextCursor of the previous page.' }),
}));
