import { readFileSync, existsSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  parse,
  validate,
  getOperationAST,
  typeFromAST,
  isInputType,
  isListType,
  isNonNullType,
  isScalarType,
  isInputObjectType,
  getNamedType,
  type DocumentNode,
  type GraphQLError,
  type GraphQLInputType,
  type GraphQLSchema,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { routes, type Route } from './routes';
import { schema } from '../src/schema';
import type { Context, Deps } from '../src/context';
import { DomainError, errorCodes, fieldError, fromUnexpected, problemType, statusOf, type ErrorCode, type FieldError } from '../src/errors';
import { authorize } from '../src/auth/policy';
import { openApiDocument } from './openapi';
import { stuckCountForReadiness } from '../src/operations/recovery';
import { isUuid } from '../src/ids';
import { projectRoot } from '../src/root';
import { configuredEvmNetworks } from '../src/chains/evm/config';
import { evmNodesReadiness } from '../src/chains/evm/watcher';
import { httpRoutes } from '../src/kernel/telemetry';
import { stopping } from '../src/kernel/lifecycle';

const MAX_BODY_BYTES = 1 << 20;
const operationsDir = resolve(projectRoot, 'rest/operations');

export interface CompiledRoute extends Route {
  pattern: RegExp;
  params: string[];
  document?: DocumentNode;
  variableTypes: Map<string, GraphQLInputType>;
}

/** Parses and validates every route's operation against the schema, once, at start-up. */
export function compileRoutes(s: GraphQLSchema = schema): CompiledRoute[] {
  return routes.map((route) => {
    const params: string[] = [];
    const source = route.path
      .replace(/\/$/, '')
      .replace(/[.*+?^$()|[\]\\]/g, '\\$&')
      .replace(/\{(\w+)\}/g, (_m, name: string) => {
        params.push(name);
        return '([^/]+)';
      });
    const compiled: CompiledRoute = { ...route, pattern: new RegExp(`^${source}/?$`), params, variableTypes: new Map() };
    if (route.operation) {
      const file = resolve(operationsDir, `${route.operation}.graphql`);
      if (!existsSync(file)) throw new Error(`route ${route.operationId}: missing rest/operations/${route.operation}.graphql`);
      const document = parse(readFileSync(file, 'utf8'));
      const errors = validate(s, document);
      if (errors.length) throw new Error(`route ${route.operationId}: ${errors.map((e) => e.message).join('; ')}`);
      const op = getOperationAST(document, route.operation);
      if (!op) throw new Error(`route ${route.operationId}: the document must define operation ${route.operation}`);
      for (const v of op.variableDefinitions ?? []) {
        const type = typeFromAST(s, v.type as never);
        if (!type || !isInputType(type)) throw new Error(`route ${route.operationId}: bad variable type`);
        compiled.variableTypes.set(v.variable.name.value, type);
        if (route.variables?.[v.variable.name.value] === 'body' && !isInputObjectType(getNamedType(type)))
          throw new Error(`route ${route.operationId}: the body variable must be an input object`);
      }
      compiled.document = document;
    }
    return compiled;
  });
}

export function pick(data: unknown, path: string): unknown {
  return path.split('.').reduce<unknown>((v, k) => (v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined), data);
}

/** What a list route's document selects of its connection (routes.ts, `success.page`). */
interface ConnectionData {
  nodes: unknown[];
  pageInfo?: { hasNextPage: boolean; endCursor: string | null };
  offset?: number;
  pageSize?: number;
  totalCount?: number;
  totalCountExact?: boolean;
}

/** The cursor of the page after this one (the id of this page's last item), null on the last page; undefined for a route without one. */
export function nextCursorOf(route: Pick<Route, 'success'>, data: unknown): string | null | undefined {
  const { page, body } = route.success;
  if (page !== 'list' && page !== 'search-cursor') return undefined;
  const info = (pick(data, body!) as ConnectionData | null | undefined)?.pageInfo;
  return info?.hasNextPage ? (info.endCursor ?? null) : null;
}

/** The success body of a route: the data at `success.body`, or for a list route its projection of the connection there. */
export function successBody(route: Pick<Route, 'success'>, data: unknown): unknown {
  const { page, body } = route.success;
  const at = pick(data, body!);
  if (!page || !at) return at;
  const c = at as ConnectionData;
  if (page === 'list') return c.nodes;
  const search = { items: c.nodes, skip: c.offset, take: c.pageSize, total: c.totalCount };
  return page === 'search' ? search : { ...search, totalExact: c.totalCountExact, nextCursor: nextCursorOf(route, data) };
}

/** REST's own bounds of a list route's paging parameters (the spec's `limit` and `after`), checked before the connection runs. */
export const LIST_LIMIT_MAX = 500;
function checkListParameters(route: CompiledRoute, variables: Record<string, unknown>): void {
  for (const [name, source] of Object.entries(route.variables ?? {})) {
    const value = variables[name];
    if (value === undefined) continue;
    // A non-numeric limit is left to GraphQL's coercion of the Int variable (400 as before).
    if (source === 'query.limit' && typeof value === 'number' && (!Number.isInteger(value) || value < 1 || value > LIST_LIMIT_MAX))
      throw fieldError('limit', `must be an integer from 1 to ${LIST_LIMIT_MAX}`);
    if (source === 'query.after' && (typeof value !== 'string' || !isUuid(value))) throw fieldError('after', 'must be a cursor returned as nextCursor');
  }
}

/** Problem details (RFC 9457) for an error code. */
export function problem(
  code: ErrorCode,
  detail: string,
  requestId: string,
  extra: Record<string, unknown> = {},
  mediaType = 'application/problem+json',
): Response {
  const { status, title } = errorCodes[code];
  const headers = new Headers({ 'content-type': mediaType, 'x-request-id': requestId });
  if (typeof extra.retryAfterSeconds === 'number') headers.set('retry-after', String(extra.retryAfterSeconds));
  return new Response(JSON.stringify({ type: problemType(code), title, status, detail, code, requestId, ...extra }), { status, headers });
}

const tokenResultFailure = {
  succeeded: false,
  tokenType: 'Bearer',
  accessToken: null,
  accessTokenExpiresAt: null,
  refreshToken: null,
  refreshTokenExpiresAt: null,
  memberId: null,
  organizationId: null,
};

function errorResponse(route: CompiledRoute | null, err: GraphQLError | DomainError, requestId: string): Response {
  const code = (err.extensions?.code as ErrorCode | undefined) ?? undefined;
  const known = code !== undefined && code in errorCodes;
  // GraphQL's own variable and document errors are the caller's input: 400.
  const resolved: ErrorCode = known ? code : !err.path ? 'VALIDATION_FAILED' : 'INTERNAL';
  const extra: Record<string, unknown> = {};
  const fieldErrors = err.extensions?.fieldErrors as FieldError[] | undefined;
  if (fieldErrors) extra.errors = route ? fieldErrors.map((e) => ({ ...e, field: restField(route, e.field) })) : fieldErrors;
  else if (statusOf(resolved) === 400) extra.errors = [{ field: '(input)', message: err.message, code: 'custom' }];
  if (err.extensions?.retryAfterSeconds !== undefined) extra.retryAfterSeconds = err.extensions.retryAfterSeconds;
  // The spec's Login and RefreshToken 401 body is a (failed) TokenResult, in its media type
  // (application/json); the problem members stay beside the TokenResult's.
  const tokenResult = !!route?.tokenResultOn401 && statusOf(resolved) === 401;
  if (tokenResult) Object.assign(extra, tokenResultFailure);
  return problem(resolved, resolved === 'INTERNAL' ? 'Unexpected error.' : err.message, requestId, extra, tokenResult ? 'application/json' : undefined);
}

/** A field error of an operation variable named as the request names it: `take`, not the variable. */
function restField(route: CompiledRoute, field: string): string {
  const head = field.split('.', 1)[0]!;
  const source = route.variables?.[head];
  if (!source || source === 'body' || source.startsWith('path.')) return field;
  return source.slice(source.indexOf('.') + 1) + field.slice(head.length);
}

/** Turns a query-string value into the operation variable's type (Int, Boolean, enums, lists). */
function coerceQuery(raw: string[], type: GraphQLInputType): unknown {
  const t = isNonNullType(type) ? type.ofType : type;
  if (isListType(t)) return raw.map((r) => coerceQuery([r], t.ofType));
  const value = raw[raw.length - 1]!;
  if (isScalarType(t) && t.name === 'Int') return /^-?\d+$/.test(value) ? Number(value) : value;
  if (isScalarType(t) && t.name === 'Boolean') return value === 'true' ? true : value === 'false' ? false : value;
  return value;
}

async function readBody(request: Request, route: CompiledRoute): Promise<unknown> {
  const text = await request.text();
  if (Buffer.byteLength(text) > MAX_BODY_BYTES) throw new DomainError('PAYLOAD_TOO_LARGE', 'The body must be at most 1 MiB.');
  if (!text.trim()) {
    if (route.body === 'required') throw fieldError('(body)', 'This operation needs a JSON body.', 'invalid_type');
    return undefined;
  }
  const type = request.headers.get('content-type') ?? '';
  if (!/^application\/(.+\+)?json\b/i.test(type)) throw new DomainError('UNSUPPORTED_MEDIA_TYPE', 'Send the body as application/json.');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new DomainError('MALFORMED_REQUEST', 'The body is not valid JSON.', {
      fieldErrors: [{ field: '(body)', message: 'Not valid JSON.', code: 'invalid_format' }],
    });
  }
  // Every body is an object; an explicit null is refused, not read as "no body" (whose defaults
  // can mean "everything" or "now").
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw fieldError('(body)', 'The body must be a JSON object.', 'invalid_type');
  return body;
}

/** A path parameter, percent-decoded; a malformed escape is a malformed request (400), not a lookup. */
function decodeParam(name: string, raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    const message = 'Malformed percent-encoding.';
    throw new DomainError('MALFORMED_REQUEST', `${name}: ${message}`, { fieldErrors: [{ field: name, message, code: 'invalid_format' }] });
  }
}

/** The number of segments of a path, a trailing slash ignored (as the route patterns do). */
const segmentsOf = (path: string) => path.replace(/\/$/, '').split('/').length;

/** The compiled routes, and the same grouped by their number of segments (the routes a path can match). */
type RouteIndex = CompiledRoute[] & { bySegments: Map<number, CompiledRoute[]> };
function indexRoutes(compiled: CompiledRoute[]): RouteIndex {
  const bySegments = new Map<number, CompiledRoute[]>();
  for (const r of compiled) {
    const n = segmentsOf(r.path);
    bySegments.set(n, [...(bySegments.get(n) ?? []), r]);
  }
  return Object.assign(compiled, { bySegments });
}

export function restPlugin(deps: Deps, requestIdOf: (r: Request) => string): Plugin<Record<string, unknown>, Context> {
  const compiled = indexRoutes(compileRoutes());
  let openapi: string | undefined;
  let getEnveloped: GetEnveloped | undefined;
  return {
    async onRequest({ request, url, endResponse, serverContext }) {
      const path = url.pathname;
      const requestId = requestIdOf(request);
      if (path === '/healthz') return endResponse(Response.json({ status: 'ok', mode: deps.config.NODE_ENV }, { headers: { 'x-request-id': requestId } }));
      if (path === '/readyz') return endResponse(await readiness(deps, requestId));
      if (path.startsWith('/problems/')) {
        const code = Object.keys(errorCodes).find((c) => problemType(c as ErrorCode) === path) as ErrorCode | undefined;
        return endResponse(code ? Response.json({ type: path, code, ...errorCodes[code] }) : problem('ROUTE_NOT_FOUND', `No problem type ${path}.`, requestId));
      }
      if (!path.startsWith('/v1/') && path !== '/v1') return;
      if (path === '/v1/openapi.json' && request.method === 'GET') {
        openapi ??= JSON.stringify(openApiDocument(compiled, schema));
        return endResponse(new Response(openapi, { headers: { 'content-type': 'application/json', 'x-request-id': requestId } }));
      }
      const started = performance.now();
      const response = await handle(request, path, url, requestId, serverContext as never, compiled, getEnveloped!).catch((err: unknown) => {
        if (err instanceof DomainError) return errorResponse(null, err, requestId);
        // Authentication's look-up outside the operation (the context) can meet an overload too: 503, not 500.
        const known = fromUnexpected(err);
        if (known) {
          deps.log.warn({ err, requestId, code: known.code }, 'REST request refused by the database');
          return errorResponse(null, known, requestId);
        }
        // The client went away (its body stream aborted under us): nobody gets this answer, and it is
        // not our fault — counted and logged as nginx's 499 "client closed request", not as a 500.
        if (request.signal?.aborted) {
          deps.log.info({ requestId, method: request.method, path }, 'request cancelled by the client');
          return new Response(null, { status: 499, headers: { 'x-request-id': requestId } });
        }
        deps.log.error({ err, requestId }, 'REST adapter failure');
        return problem('INTERNAL', 'Unexpected error.', requestId);
      });
      deps.log.info({ requestId, method: request.method, path, status: response.status, ms: Math.round(performance.now() - started) }, 'rest');
      endResponse(response);
    },
    onYogaInit({ yoga }) {
      getEnveloped = yoga.getEnveloped as unknown as GetEnveloped;
    },
  };
}

type GetEnveloped = (initial: Record<string, unknown>) => {
  schema: GraphQLSchema;
  contextFactory: () => Promise<unknown>;
  execute: (args: {
    schema: GraphQLSchema;
    document: DocumentNode;
    operationName?: string;
    variableValues: Record<string, unknown>;
    contextValue: unknown;
  }) => Promise<unknown>;
};

export async function readiness(deps: Deps, requestId: string): Promise<Response> {
  // Shutting down (SIGTERM): not ready, at once and whatever the checks say, so a load balancer
  // deregisters the process before it stops accepting (src/kernel/lifecycle.ts).
  if (stopping()) return Response.json({ status: 'stopping' }, { status: 503, headers: { 'x-request-id': requestId } });
  const checks: Record<string, string> = {};
  try {
    await deps.db.$queryRaw`SELECT 1`;
    checks.database = 'ok';
  } catch {
    checks.database = 'unreachable';
  }
  checks.jobs = deps.boss ? ((await deps.boss.isInstalled().catch(() => false)) ? 'ok' : 'unreachable') : 'disabled';
  const ok = checks.database === 'ok' && checks.jobs !== 'unreachable';
  // Money operations idle past STUCK_AFTER_SECONDS (GET /v1/admin/stuck-operations lists them): reported, not a reason to be unready.
  const stuckOperations = checks.database === 'ok' ? await stuckCountForReadiness(deps).catch(() => null) : null;
  // EVM networks' nodes (issue 18): each says whether its node answers; one down is reported, not a reason to be unready (the others and the API go on).
  const evm = configuredEvmNetworks().length
    ? { evmNetworks: Object.fromEntries(Object.entries(await evmNodesReadiness()).map(([id, why]) => [id, why === null ? 'ok' : `unreachable: ${why}`])) }
    : {};
  return Response.json(
    { status: ok ? 'ready' : 'unavailable', checks, stuckOperations, ...evm },
    { status: ok ? 200 : 503, headers: { 'x-request-id': requestId } },
  );
}

async function handle(
  request: Request,
  path: string,
  url: URL,
  requestId: string,
  serverContext: Record<string, unknown>,
  compiled: RouteIndex,
  getEnveloped: GetEnveloped,
): Promise<Response> {
  // Only the routes with as many segments as the path can match it (a parameter is one segment).
  const candidates = (compiled.bySegments.get(segmentsOf(path)) ?? []).map((r) => ({ r, m: r.pattern.exec(path) })).filter((c) => c.m);
  if (!candidates.length) return problem('ROUTE_NOT_FOUND', `No route ${request.method} ${path}.`, requestId);
  const hit = candidates.find((c) => c.r.method === request.method);
  if (!hit) {
    const res = problem('METHOD_NOT_ALLOWED', `${request.method} is not allowed on ${path}.`, requestId);
    res.headers.set('allow', [...new Set(candidates.map((c) => c.r.method))].join(', '));
    return res;
  }
  const { r: route, m } = hit;
  httpRoutes.set(request, route.path);
  const params = Object.fromEntries(route.params.map((name, i) => [name, decodeParam(name, m![i + 1]!)]));

  const enveloped = getEnveloped({ request, ...serverContext, params: {} });
  const context = (await enveloped.contextFactory()) as unknown as Context;
  // Authentication and authorization come before any look at the input.
  authorize(route.policy, context.principal, context.credentialError);
  if (!route.document) throw new DomainError('NOT_IMPLEMENTED', `${route.operationId} is specified but not built yet.`);
  for (const [name, value] of Object.entries(params)) if (!isUuid(value)) throw new DomainError('NOT_FOUND', `No resource with ${name} ${value}.`);

  const body = route.body ? await readBody(request, route) : undefined;
  const variables: Record<string, unknown> = {};
  for (const [name, source] of Object.entries(route.variables ?? {})) {
    const [kind, key] = source === 'body' ? ['body', ''] : [source.slice(0, source.indexOf('.')), source.slice(source.indexOf('.') + 1)];
    let value: unknown;
    if (kind === 'body') value = body;
    else if (kind === 'path') value = params[key];
    else if (kind === 'header') value = request.headers.get(key) ?? undefined;
    else if (kind === 'query') {
      const all = url.searchParams.getAll(key);
      value = all.length ? coerceQuery(all, route.variableTypes.get(name)!) : undefined;
    }
    if (value !== undefined) variables[name] = value;
  }
  if (route.success.page === 'list') checkListParameters(route, variables);

  const result = (await enveloped.execute({
    schema: enveloped.schema,
    document: route.document,
    operationName: route.operation,
    variableValues: variables,
    contextValue: context,
  })) as { data?: Record<string, unknown> | null; errors?: readonly GraphQLError[] };
  if (result.errors?.length) return errorResponse(route, result.errors[0]!, requestId);

  const headers = new Headers({ 'x-request-id': requestId });
  const { success } = route;
  if (success.location)
    headers.set(
      'location',
      success.location.replace(/\{([\w.]+)\}/g, (_m, p: string) => String(pick(result.data, p))),
    );
  if (success.page === 'list') {
    const cursor = nextCursorOf(route, result.data);
    if (typeof cursor === 'string') {
      const next = new URL(url);
      next.searchParams.set('after', cursor);
      headers.set('link', `<${next.pathname}${next.search}>; rel="next"`);
    }
  }
  if (success.status === 204 || success.body === undefined) return new Response(null, { status: success.status, headers });
  headers.set('content-type', 'application/json');
  return new Response(JSON.stringify(successBody(route, result.data)), { status: success.status, headers });
}
