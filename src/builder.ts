import SchemaBuilder from '@pothos/core';
import PrismaPlugin from '@pothos/plugin-prisma';
import RelayPlugin, { resolveCursorConnection } from '@pothos/plugin-relay';
import ScopeAuthPlugin from '@pothos/plugin-scope-auth';
import ValidationPlugin from '@pothos/plugin-validation';
import type { GraphQLResolveInfo } from 'graphql';
import type PrismaTypes from './generated/pothos-prisma-types';
import { getDatamodel } from './generated/pothos-prisma-types';
import type { Context } from './context';
import { DomainError, fieldError, validationFailed, type FieldError } from './errors';
import { isUuid } from './ids';
import { allows, denial, type Policy } from './auth/policy';
import { SKIP_DEFAULT, SKIP_MAX, TAKE_MAX, type Page } from './kernel/paging';

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
  DefaultEdgesNullability: { list: false; items: false };
  DefaultNodeNullability: false;
}>({
  defaultFieldNullability: false,
  plugins: [ScopeAuthPlugin, RelayPlugin, ValidationPlugin, PrismaPlugin],
  relay: {
    // node(id) and nodes(ids) are this schema's own (below): ids stay the UUIDs REST shows.
    nodeQueryOptions: false,
    nodesQueryOptions: false,
    clientMutationId: 'omit',
    cursorType: 'String',
    edgesFieldOptions: { nullable: { list: false, items: false } },
    nodeFieldOptions: { nullable: false },
    // `nodes` beside `edges` (as GitHub's API): the REST list routes answer a connection's nodes.
    nodesOnConnection: true,
  },
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

/*
 * The graph (docs/graphql.md, "The graph"; docs/decisions.md, "A dashboard-grade graph (issue 19)").
 *
 * - `Node`: every aggregate implements it; its `id` is the UUID REST shows. `node(id)` finds the
 *   type of an id with one statement of primary-key lookups, then loads it through the registered
 *   loader of that type: the same policy and tenancy as the type's root field, and null (never an
 *   error, never data) for an id the principal may not see.
 * - Connections: keyset pages on the id (UUIDv7: creation order), newest first by default.
 * - Relations of the view types (rows shaped by a service) are loaded per request in batches
 *   (`batchLoad`): one statement per relation and level, filtered by the principal's visibility.
 */
export const NodeRef = builder.nodeInterfaceRef();

export interface NodeType {
  /** The GraphQL type (and PostgreSQL table) name. */
  typename: string;
  table?: string;
  /** The root field's policy: another principal gets null. */
  policy: Policy;
  /** The object as its root field answers it; throws NOT_FOUND (or answers null) when not visible. */
  load: (ctx: Context, id: string) => Promise<object | null>;
}
const nodeTypes = new Map<string, NodeType>();

/** Makes a type refetchable by node(id). */
export function registerNode(type: NodeType): void {
  nodeTypes.set(type.typename, type);
}

async function typenamesOf(ctx: Context, ids: string[]): Promise<Map<string, string>> {
  const types = [...nodeTypes.values()];
  if (!ids.length || !types.length) return new Map();
  const sql = types
    .map((t) => `SELECT id::text AS id, '${t.typename}' AS typename FROM "${t.table ?? t.typename}" WHERE id = ANY($1::uuid[])`)
    .join(' UNION ALL ');
  const rows = await ctx.deps.db.$queryRawUnsafe<{ id: string; typename: string }[]>(sql, ids);
  return new Map(rows.map((r) => [r.id, r.typename]));
}

async function loadNodes(ctx: Context, idArgs: readonly (string | number)[]): Promise<(object | null)[]> {
  const ids = idArgs.map((i) => String(i).toLowerCase());
  const typed = await typenamesOf(ctx, [...new Set(ids.filter(isUuid))]);
  return Promise.all(
    ids.map(async (id) => {
      const type = nodeTypes.get(typed.get(id) ?? '');
      if (!type || !allows(type.policy, ctx.principal) || ctx.credentialError) return null;
      try {
        const row = await type.load(ctx, id);
        return row ? Object.assign(row, { __typename: type.typename }) : null;
      } catch (e) {
        if (e instanceof DomainError && e.code === 'NOT_FOUND') return null;
        throw e;
      }
    }),
  );
}

const nodePolicy: Policy = { member: 'any', apiKey: true, accountHolder: true, operator: true };

builder.queryFields((t) => ({
  node: t.field({
    type: NodeRef,
    nullable: true,
    description: "Any object by its id (the UUID REST shows), under its type's own policy and tenancy: null when it does not exist or is not the caller's.",
    authScopes: { policy: nodePolicy },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_p, args, ctx) => (await loadNodes(ctx, [args.id]))[0] ?? null,
  }),
  nodes: t.field({
    type: [NodeRef],
    nullable: { list: false, items: true },
    description: 'The objects of up to 100 ids, in order; null for each one node(id) would answer null.',
    authScopes: { policy: nodePolicy },
    args: { ids: t.arg.idList({ required: true }) },
    resolve: (_p, args, ctx) => {
      if (args.ids.length > 100) throw fieldError('ids', 'must hold at most 100 ids');
      return loadNodes(ctx, args.ids);
    },
  }),
}));

/** The order of a connection: by creation (the id, a UUIDv7), newest first by default. */
export const CreationOrder = builder.enumType('CreationOrder', {
  description: 'NEWEST_FIRST (default) or OLDEST_FIRST, by creation (the id: a UUIDv7, so the order is stable and keyset-paged).',
  values: ['NEWEST_FIRST', 'OLDEST_FIRST'] as const,
});

/** Arguments every connection of a growing list takes beside first/after/last/before. */
export const creationArgs = builder.args((t) => ({
  orderBy: t.field({ type: CreationOrder, description: 'Default NEWEST_FIRST.' }),
  createdAfter: t.field({ type: 'DateTime', description: 'Only objects created at or after this instant.' }),
  createdBefore: t.field({ type: 'DateTime', description: 'Only objects created before this instant.' }),
}));

export interface ConnectionArgs {
  first?: number | null;
  last?: number | null;
  after?: string | null;
  before?: string | null;
  orderBy?: 'NEWEST_FIRST' | 'OLDEST_FIRST' | null;
  createdAfter?: Date | null;
  createdBefore?: Date | null;
}

/** The Prisma filter of createdAfter/createdBefore. */
export function createdWhere(args: ConnectionArgs, field = 'createdAt'): Record<string, { gte?: Date; lt?: Date }> {
  if (!args.createdAfter && !args.createdBefore) return {};
  return { [field]: { ...(args.createdAfter ? { gte: args.createdAfter } : {}), ...(args.createdBefore ? { lt: args.createdBefore } : {}) } };
}

/** The clauses of one keyset page: a filter on the id, the order and the number of rows to read. */
export interface KeysetQuery {
  where: { id?: { lt?: string; gt?: string } };
  orderBy: { id: 'asc' | 'desc' };
  take: number;
}

/**
 * The page size cap of the connections a REST list route reads (docs/decisions.md, "Issue 19: one
 * paging style"): REST's `limit` goes up to 500, so those connections take `first`/`last` up to 500
 * (declared as the field's `maxSize`, which the query cost counts) instead of 100.
 */
export const REST_LIST_MAX = 500;

/** The field option of a connection read by a REST list route: its page size cap (see REST_LIST_MAX). */
export const restListSize = { maxSize: REST_LIST_MAX } as {};

/**
 * A Relay connection read by keyset on the id: `first`/`after` and `last`/`before` (0 to
 * `maxSize`, 100 unless the field declares REST_LIST_MAX; default 20), cursors are ids. `fetch`
 * runs one statement with the clauses it is handed.
 */
export interface ConnectionResult<T> {
  edges: { cursor: string; node: T }[];
  pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor?: string | null; endCursor?: string | null };
  /** The count of the whole filtered list, on the connections where it is cheap (an organization's accounts...). */
  totalCount?: () => Promise<number>;
}

type Types = typeof builder extends PothosSchemaTypes.SchemaBuilder<infer T> ? T : never;
/** The connection type options of the connections that offer a totalCount (the second argument of t.connection). */
export const countedConnection = {
  fields: (t: PothosSchemaTypes.ObjectFieldBuilder<Types, object>) => ({
    totalCount: t.int({
      description: 'The number of objects the filters match.',
      resolve: (c) => (c as { totalCount: () => Promise<number> }).totalCount(),
    }),
  }),
} as never;

export async function keysetConnection<T extends { id: string }>(
  args: ConnectionArgs,
  fetch: (q: KeysetQuery) => Promise<T[]>,
  count?: () => Promise<number>,
  maxSize = 100,
): Promise<ConnectionResult<T>> {
  for (const k of ['after', 'before'] as const) if (args[k] != null && !isUuid(args[k])) throw fieldError(k, 'must be a cursor of this connection');
  for (const k of ['first', 'last'] as const)
    if (args[k] != null && (!Number.isInteger(args[k]) || args[k]! < 0 || args[k]! > maxSize)) throw fieldError(k, `must be an integer from 0 to ${maxSize}`);
  const newestFirst = (args.orderBy ?? 'NEWEST_FIRST') === 'NEWEST_FIRST';
  const page = await resolveCursorConnection(
    {
      args: { first: args.first, last: args.last, after: args.after ?? undefined, before: args.before ?? undefined },
      toCursor: (r) => (r as T).id,
      defaultSize: 20,
      maxSize,
    },
    ({ after, before, limit, inverted }) => {
      const forward = newestFirst !== inverted; // reading towards older ids
      const id: { lt?: string; gt?: string } = {};
      const down = newestFirst ? 'lt' : 'gt';
      const up = newestFirst ? 'gt' : 'lt';
      if (after) id[down] = after.toLowerCase();
      if (before) id[up] = before.toLowerCase();
      return fetch({ where: after || before ? { id } : {}, orderBy: { id: forward ? 'desc' : 'asc' }, take: limit });
    },
  );
  return { ...(page as unknown as ConnectionResult<T>), ...(count ? { totalCount: count } : {}) };
}

/**
 * A per-request batch of look-ups: every call made while a level of the answer resolves is
 * answered by one `fetch` of all the keys (DataLoader's scheduling, without the dependency).
 */
const batches = new WeakMap<object, Map<string, { keys: Map<string, ((v: unknown) => void)[]>; fail: ((e: unknown) => void)[] }>>();
export function batchLoad<V>(ctx: Context, name: string, key: string, fetch: (keys: string[]) => Promise<Map<string, V>>): Promise<V | undefined> {
  let byName = batches.get(ctx);
  if (!byName) batches.set(ctx, (byName = new Map()));
  let batch = byName.get(name);
  if (!batch) {
    const current = { keys: new Map<string, ((v: unknown) => void)[]>(), fail: [] as ((e: unknown) => void)[] };
    byName.set(name, (batch = current));
    void Promise.resolve().then(() =>
      process.nextTick(() => {
        byName!.delete(name);
        fetch([...current.keys.keys()]).then(
          (found) => current.keys.forEach((waiting, k) => waiting.forEach((w) => w(found.get(k)))),
          (e) => current.fail.forEach((f) => f(e)),
        );
      }),
    );
  }
  const b = batch;
  return new Promise<V | undefined>((resolve, reject) => {
    const waiting = b.keys.get(key) ?? [];
    waiting.push(resolve as (v: unknown) => void);
    b.keys.set(key, waiting);
    b.fail.push(reject);
  });
}

/** The rows of `fetch` grouped by `keyOf`: for list relations loaded with batchLoad. */
export function groupBy<T>(rows: T[], keyOf: (r: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const r of rows) {
    const k = keyOf(r);
    const list = out.get(k);
    if (list) list.push(r);
    else out.set(k, [r]);
  }
  return out;
}

/** A to-one relation loaded in a batch: `fetch` reads every key's row (already filtered by visibility); a key without one answers null. */
export async function loadOne<T>(ctx: Context, name: string, key: string | null | undefined, fetch: (keys: string[]) => Promise<T[]>, keyOf: (r: T) => string) {
  if (!key) return null;
  const v = await batchLoad(ctx, name, key, async (keys) => new Map((await fetch(keys)).map((r) => [keyOf(r), r])));
  return v ?? null;
}

/** A to-many relation loaded in a batch: `fetch` reads the rows of every key (filtered by visibility, in order). */
export async function loadMany<T>(ctx: Context, name: string, key: string, fetch: (keys: string[]) => Promise<T[]>, keyOf: (r: T) => string) {
  return (await batchLoad(ctx, name, key, async (keys) => groupBy(await fetch(keys), keyOf))) ?? [];
}

/** The filter of an amount range (decimal strings of base units) on `field`. */
export function amountWhere(args: { amountMin?: string | null; amountMax?: string | null }, field = 'amount'): Record<string, { gte?: string; lte?: string }> {
  for (const k of ['amountMin', 'amountMax'] as const)
    if (args[k] != null && !/^\d{1,78}$/.test(args[k]!)) throw fieldError(k, 'must be a decimal string of base units');
  if (args.amountMin == null && args.amountMax == null) return {};
  return { [field]: { ...(args.amountMin != null ? { gte: args.amountMin } : {}), ...(args.amountMax != null ? { lte: args.amountMax } : {}) } };
}

/** The amount range arguments. */
export const amountArgs = builder.args((t) => ({
  amountMin: t.string({ description: 'Only amounts at or above this (base units, decimal string).' }),
  amountMax: t.string({ description: 'Only amounts at or below this (base units, decimal string).' }),
}));

/**
 * The operator searches (audit log, ledger entries, sweeps, reconciliations) as Relay connections
 * (docs/decisions.md, "Issue 19: one paging style"): `first` (1 to 500, default 50) and `after` (a
 * cursor: the id of a row of this search) page forward in the search's own order; `skip` is a
 * bounded compatibility mode for the spec's offset paging (REST `skip`, 0 to 100000), not a second
 * style: with `after`, it must be 0. `last`/`before` are refused (a search pages forward only).
 * `totalCount` counts up to the search's cap (`totalCountExact` false beyond), `offset` and
 * `pageSize` are the paging in force (defaults applied). `run` is the search's service function.
 */
export interface SearchConnection<T> extends ConnectionResult<T> {
  offset: number;
  pageSize: number;
  total: number;
  totalExact: boolean;
}

export const searchArgs = builder.args((t) => ({
  skip: t.int({
    description: `Compatibility mode (the spec's offset paging): rows to skip before the page, 0 to ${SKIP_MAX}; default ${SKIP_DEFAULT}; 0 with after. Prefer after.`,
  }),
}));

/** The field option of a search connection: `first` up to TAKE_MAX (the query cost counts it). */
export const searchSize = { maxSize: TAKE_MAX } as {};

export async function searchConnection<T extends { id: string }>(
  args: { first?: number | null; after?: string | null; last?: number | null; before?: string | null; skip?: number | null },
  run: (paging: {
    skip?: number | null;
    take?: number | null;
    after?: string | null;
  }) => Promise<Page<T> & { totalExact?: boolean; nextCursor?: string | null }>,
): Promise<SearchConnection<T>> {
  for (const k of ['last', 'before'] as const) if (args[k] != null) throw fieldError(k, 'a search pages forward only: use first and after');
  let page: Awaited<ReturnType<typeof run>>;
  try {
    page = await run({ skip: args.skip, take: args.first, after: args.after == null ? null : String(args.after) });
  } catch (e) {
    // The services name the page size `take` (the spec's); here it is `first`.
    const fieldErrors = e instanceof DomainError ? (e.extensions?.fieldErrors as FieldError[] | undefined) : undefined;
    if (!fieldErrors?.some((f) => f.field === 'take')) throw e;
    const renamed = fieldErrors.map((f) => (f.field === 'take' ? { ...f, field: 'first' } : f));
    throw validationFailed(renamed);
  }
  const { items } = page;
  const hasNextPage = page.nextCursor !== undefined ? page.nextCursor !== null : page.skip + items.length < page.total;
  return {
    edges: items.map((node) => ({ cursor: node.id, node })),
    pageInfo: {
      hasNextPage,
      hasPreviousPage: page.skip > 0 || args.after != null,
      startCursor: items[0]?.id ?? null,
      endCursor: items[items.length - 1]?.id ?? null,
    },
    offset: page.skip,
    pageSize: page.take,
    total: page.total,
    totalExact: page.totalExact ?? true,
  };
}

/** The connection type options of the search connections (the second argument of t.connection). */
export const searchConnectionFields = {
  fields: (t: PothosSchemaTypes.ObjectFieldBuilder<Types, object>) => ({
    totalCount: t.int({
      description: 'The number of rows the filters match, counted up to the search’s cap: exact when totalCountExact, else a lower bound.',
      resolve: (c) => (c as SearchConnection<unknown>).total,
    }),
    totalCountExact: t.boolean({
      description: 'False when more rows match than the search counts (totalCount is then the cap).',
      resolve: (c) => (c as SearchConnection<unknown>).totalExact,
    }),
    offset: t.int({ description: 'The rows skipped before this page (skip).', resolve: (c) => (c as SearchConnection<unknown>).offset }),
    pageSize: t.int({ description: 'The page size in force (first, or its default).', resolve: (c) => (c as SearchConnection<unknown>).pageSize }),
  }),
} as never;
