import {
  getNamedType,
  getOperationAST,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  isUnionType,
  Kind,
  type DocumentNode,
  type FieldNode,
  type GraphQLField,
  type FragmentDefinitionNode,
  type GraphQLEnumType,
  type GraphQLInputObjectType,
  type GraphQLInputType,
  type GraphQLNamedType,
  type GraphQLOutputType,
  type GraphQLScalarType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import type { CompiledRoute } from './adapter';
import { principalsOf } from '../src/auth/policy';
import type { PrincipalKind } from '../src/auth/principal';
import { errorCodes, type ErrorCode } from '../src/errors';

/**
 * The OpenAPI 3.1 document (GET /v1/openapi.json), generated from the route table and the
 * GraphQL schema: nothing in here is written per route. Parameters come from the route's
 * declarative `variables` and the operation's variable types, request bodies from the GraphQL
 * input type of the variable mapped from 'body', success bodies from the operation's selection
 * set at `success.body`, and error responses from `errors` plus the generic statuses.
 */

type Schema = Record<string, unknown>;

/** Which security scheme carries each principal's credential. */
const schemeOf: Record<PrincipalKind, string> = {
  member: 'MemberBearer',
  apiKey: 'ApiKey',
  accountHolder: 'AccountHolderBearer',
  operator: 'OperatorKey',
};

/**
 * The one-credential rule, said beside every scheme: generated clients (openapi-fetch,
 * @hey-api/openapi-ts) send every configured scheme's header by default.
 */
export const oneCredentialRule =
  'Send exactly one credential per request: a request carrying more than one of `X-Api-Key`, `Authorization` and `X-Operator-Key` ' +
  'is refused with 401 `MULTIPLE_CREDENTIALS`, whichever would have been valid. A generated client configured with several schemes ' +
  'must send only the one the operation needs.';

const securitySchemes = {
  ApiKey: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Api-Key',
    description: `An application's API key, scoped to one environment (SANDBOX or PRODUCTION). ${oneCredentialRule}`,
  },
  MemberBearer: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    'x-audience': 'member',
    description: `A member session: the accessToken of Login or RefreshToken (a JWT with audience "member"), as \`Authorization: Bearer <token>\`. ${oneCredentialRule}`,
  },
  AccountHolderBearer: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    'x-audience': 'account-holder',
    description: `An account holder session: the accessToken of LoginAccountHolder (a JWT with audience "account-holder"), as \`Authorization: Bearer <token>\`. ${oneCredentialRule}`,
  },
  OperatorKey: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Operator-Key',
    description: `A platform operator key (created with \`npm run operator:create\`). ${oneCredentialRule}`,
  },
};

/**
 * Public routes guarded by the failed-attempt limiter (src/auth/rate-limit.ts): they answer 429
 * with Retry-After. (The route table has no flag for it yet.)
 */
const rateLimited = new Set(['Login', 'RefreshToken', 'LoginAccountHolder', 'RequestPasswordReset', 'RefreshAccountHolderToken']);

/**
 * The failure fields the adapter adds to 401 bodies of routes with tokenResultOn401: every field
 * of the GraphQL TokenResult, with succeeded false, tokenType "Bearer" and the rest null.
 */
function tokenResultFailure(schema: GraphQLSchema): Schema {
  const type = schema.getType('TokenResult');
  const names = isObjectType(type)
    ? Object.keys(type.getFields())
    : ['succeeded', 'tokenType', 'accessToken', 'accessTokenExpiresAt', 'refreshToken', 'refreshTokenExpiresAt'];
  const fixed: Record<string, Schema> = { succeeded: { type: 'boolean', const: false }, tokenType: { type: 'string', const: 'Bearer' } };
  return {
    type: 'object',
    description: "A failed TokenResult (the spec's 401 of Login and RefreshToken, application/json): the body also carries the problem members.",
    properties: Object.fromEntries(names.map((n) => [n, fixed[n] ?? { type: 'null' }])),
    required: names,
  };
}

const problemSchema: Schema = {
  type: 'object',
  description: 'RFC 9457 problem details. `code` is stable; `type` resolves to a description of the code.',
  properties: {
    type: { type: 'string', format: 'uri-reference', examples: ['/problems/not-found'] },
    title: { type: 'string' },
    status: { type: 'integer', minimum: 400, maximum: 599 },
    detail: { type: 'string' },
    code: { type: 'string', enum: Object.keys(errorCodes) },
    requestId: { type: 'string', description: 'Also sent as the X-Request-Id header.' },
    errors: {
      type: 'array',
      description: 'Per-field validation failures.',
      items: {
        type: 'object',
        properties: { field: { type: 'string' }, message: { type: 'string' } },
        required: ['field', 'message'],
        additionalProperties: false,
      },
    },
    retryAfterSeconds: { type: 'integer', minimum: 0, description: 'With 429 or 503: also sent as the Retry-After header.' },
  },
  required: ['type', 'title', 'status', 'detail', 'code', 'requestId'],
};

const principalDescription: Record<PrincipalKind, string> = {
  member: '**member** — a person of an organization, with a role and its permissions (MemberBearer)',
  apiKey: "**apiKey** — an application's API key in one environment (ApiKey)",
  accountHolder: '**accountHolder** — an end customer with a session (AccountHolderBearer)',
  operator: '**operator** — a platform operator (OperatorKey)',
};

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

function nullable(s: Schema): Schema {
  if (typeof s.type === 'string' && !('$ref' in s)) return { ...s, type: [s.type, 'null'] };
  if (Array.isArray(s.type)) return s.type.includes('null') ? s : { ...s, type: [...s.type, 'null'] };
  if (Object.keys(s).length === 0 || (Object.keys(s).length === 1 && 'description' in s)) return s; // any JSON
  return { anyOf: [s, { type: 'null' }] };
}

function scalarSchema(t: GraphQLScalarType): Schema {
  switch (t.name) {
    case 'ID':
      return { type: 'string', format: 'uuid' }; // every ID of the API is a UUID (v7 for ours)
    case 'String':
      return { type: 'string' };
    case 'Int':
      return { type: 'integer', format: 'int32' };
    case 'Float':
      return { type: 'number' };
    case 'Boolean':
      return { type: 'boolean' };
    case 'DateTime':
      return { type: 'string', format: 'date-time' };
    case 'JSON':
      return { description: 'Arbitrary JSON.' };
    default:
      return t.description ? { description: t.description } : {};
  }
}

const headerName = (h: string) => h.replace(/(^|-)([a-z])/g, (_m, sep: string, c: string) => sep + c.toUpperCase());

/** Statuses answered by the generic machinery, with the error codes that map to each. */
const codesByStatus = new Map<number, ErrorCode[]>();
for (const [code, { status }] of Object.entries(errorCodes) as [ErrorCode, { status: number }][])
  codesByStatus.set(status, [...(codesByStatus.get(status) ?? []), code]);

const statusText: Record<number, string> = {
  400: 'The request is malformed or fails validation',
  401: 'No valid credential',
  403: 'The credential may not run this operation',
  404: 'Not found',
  409: 'Conflict with the current state',
  413: 'Request body too large',
  415: 'The body is not application/json',
  429: 'Too many failed attempts',
  500: 'Internal error',
  501: 'Specified but not built yet',
};

/** Generic error statuses of a route, besides its own `errors`. */
export function genericStatuses(route: CompiledRoute): number[] {
  const out: number[] = [];
  const takesQuery = Object.values(route.variables ?? {}).some((s) => s.startsWith('query.'));
  if (route.body || route.params.length || takesQuery) out.push(400);
  if (!route.policy.public) out.push(401, 403);
  if (route.body) out.push(413, 415);
  if (route.policy.public && rateLimited.has(route.operationId)) out.push(429);
  out.push(500);
  if (!route.operation) out.push(501);
  return out;
}

/** The component of a success body that is `{ id }` alone: the spec's CreatedResourceResponse. */
const createdResource = 'CreatedResourceResponse';

/** Where an output schema is: the top of a success body (named by the route, or by default), or nested (its GraphQL type's name). */
type Naming = { top: true; name?: string } | undefined;

class Generator {
  readonly components: Record<string, Schema> = {};

  /**
   * @param inputNames the spec's name of each GraphQL input type that is a route's body
   * (CreateAccountInput -> CreateAccountRequest), used wherever that input type appears.
   */
  constructor(
    private schema: GraphQLSchema,
    private inputNames: Map<string, string> = new Map(),
  ) {}

  private register(name: string, build: () => Schema): Schema {
    if (!(name in this.components)) {
      this.components[name] = {}; // placeholder: recursive input types refer back to it
      this.components[name] = build();
    }
    return ref(name);
  }

  enumSchema(t: GraphQLEnumType): Schema {
    return this.register(t.name, () => ({
      type: 'string',
      enum: t.getValues().map((v) => v.name),
      ...(t.description ? { description: t.description } : {}),
    }));
  }

  // Inputs: what GraphQL accepts for the variable.
  input(type: GraphQLInputType): Schema {
    if (isNonNullType(type)) return this.inputInner(type.ofType);
    return nullable(this.inputInner(type));
  }

  /** The type without its nullability (parameters and bodies are absent rather than null). */
  bare(type: GraphQLInputType): Schema {
    return this.inputInner(isNonNullType(type) ? type.ofType : type);
  }

  private inputInner(t: GraphQLInputType): Schema {
    if (isListType(t)) return { type: 'array', items: this.input(t.ofType) };
    if (isEnumType(t)) return this.enumSchema(t);
    if (isScalarType(t)) return scalarSchema(t);
    if (isInputObjectType(t)) return this.inputObject(t);
    return {};
  }

  private inputObject(t: GraphQLInputObjectType): Schema {
    return this.register(this.inputNames.get(t.name) ?? t.name, () => {
      const properties: Record<string, Schema> = {};
      const required: string[] = [];
      for (const f of Object.values(t.getFields())) {
        let s = this.input(f.type);
        const extra: Schema = {};
        if (f.description) extra.description = f.description;
        if (f.defaultValue !== undefined) extra.default = f.defaultValue;
        if (f.deprecationReason) extra.deprecated = true;
        if (Object.keys(extra).length) s = '$ref' in s ? { allOf: [s], ...extra } : { ...s, ...extra };
        properties[f.name] = s;
        if (isNonNullType(f.type) && f.defaultValue === undefined) required.push(f.name);
      }
      return {
        type: 'object',
        ...(t.description ? { description: t.description } : {}),
        properties,
        ...(required.length ? { required } : {}),
        additionalProperties: false,
      };
    });
  }

  // Outputs: the shape of the data the operation selects.
  output(type: GraphQLOutputType, selectionSet: SelectionSetNode | undefined, doc: DocumentNode, owner: string, naming?: Naming): Schema {
    if (isNonNullType(type)) return this.outputInner(type.ofType, selectionSet, doc, owner, naming);
    return nullable(this.outputInner(type, selectionSet, doc, owner, naming));
  }

  private outputInner(t: GraphQLOutputType, selectionSet: SelectionSetNode | undefined, doc: DocumentNode, owner: string, naming?: Naming): Schema {
    if (isListType(t)) return { type: 'array', items: this.output(t.ofType, selectionSet, doc, owner, naming) };
    if (isEnumType(t)) return this.enumSchema(t);
    if (isScalarType(t)) return scalarSchema(t);
    if (!selectionSet) return { type: 'object' };
    const named = t as GraphQLNamedType;
    const built = this.selection(named, selectionSet, doc, owner);
    if (!isObjectType(named)) return built;
    const idOnly = Object.keys((built as { properties: object }).properties).join() === 'id';
    const name = naming?.name ?? (naming && idOnly ? createdResource : undefined);
    return name ? this.registerNamed(name, built, owner) : this.registerOutput(named.name, built, owner);
  }

  /** A component the route table names (the spec's name): every route naming it must answer the same shape. */
  private registerNamed(name: string, built: Schema, owner: string): Schema {
    const existing = this.components[name];
    if (existing && JSON.stringify(existing) !== JSON.stringify(built))
      throw new Error(`OpenAPI component ${name}: ${owner} answers another shape than an earlier route of that name`);
    this.components[name] = built;
    return ref(name);
  }

  /** Names an output object schema after its GraphQL type; a different selection of the same type gets the operation's name too. */
  private registerOutput(typeName: string, built: Schema, owner: string): Schema {
    const json = JSON.stringify(built);
    for (const name of [typeName, `${typeName}_${owner}`]) {
      const existing = this.components[name];
      if (!existing) {
        this.components[name] = built;
        return ref(name);
      }
      if (JSON.stringify(existing) === json) return ref(name);
    }
    for (let i = 2; ; i++) {
      const name = `${typeName}_${owner}_${i}`;
      const existing = this.components[name];
      if (!existing) {
        this.components[name] = built;
        return ref(name);
      }
      if (JSON.stringify(existing) === json) return ref(name);
    }
  }

  /** The fields a selection set returns, as an object schema (every selected key is always present). */
  selection(parent: GraphQLNamedType, selectionSet: SelectionSetNode, doc: DocumentNode, owner: string): Schema {
    const properties: Record<string, Schema> = {};
    const required: string[] = [];
    const fragments = new Map(doc.definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION).map((d) => [d.name.value, d]));
    const visit = (set: SelectionSetNode, conditional: boolean) => {
      for (const sel of set.selections) {
        if (sel.kind === Kind.FIELD) {
          const key = sel.alias?.value ?? sel.name.value;
          properties[key] = this.field(parent, sel, doc, owner);
          if (!conditional && !required.includes(key)) required.push(key);
        } else {
          const typeCondition = sel.kind === Kind.INLINE_FRAGMENT ? sel.typeCondition?.name.value : fragments.get(sel.name.value)?.typeCondition.name.value;
          const inner = sel.kind === Kind.INLINE_FRAGMENT ? sel.selectionSet : fragments.get(sel.name.value)?.selectionSet;
          if (!inner) continue;
          const applies = !typeCondition || typeCondition === parent.name;
          if (applies) visit(inner, conditional || (sel.directives?.length ?? 0) > 0);
          else {
            const cond = this.schema.getType(typeCondition!);
            if (!cond) continue;
            const sub = this.selection(cond, inner, doc, owner) as { properties: Record<string, Schema> };
            for (const [k, v] of Object.entries(sub.properties)) properties[k] ??= v;
          }
        }
      }
    };
    visit(selectionSet, false);
    return { type: 'object', properties, required, additionalProperties: false };
  }

  private field(parent: GraphQLNamedType, sel: FieldNode, doc: DocumentNode, owner: string): Schema {
    const name = sel.name.value;
    if (name === '__typename') return { type: 'string', ...(isObjectType(parent) ? { const: parent.name } : {}) };
    if (!isObjectType(parent) && !isInterfaceType(parent)) return {};
    const def = parent.getFields()[name];
    if (!def) return {};
    let s = this.output(def.type, sel.selectionSet, doc, owner);
    const skippable = sel.directives?.some((d) => d.name.value === 'skip' || d.name.value === 'include');
    if (def.description && !('$ref' in s) && !('anyOf' in s)) s = { ...s, description: def.description };
    if (def.deprecationReason) s = { ...s, deprecated: true };
    return skippable ? nullable(s) : s;
  }

  /** The body of an operator search route (routes.ts, `success.page`): its items and paging, as a named component. */
  searchPage(name: string, items: Schema | undefined, cursor: boolean): Schema {
    const int = (description: string) => ({ type: 'integer', description });
    return this.register(name, () => ({
      type: 'object',
      description: 'A page of an operator search (the GraphQL search connection of the same name, projected).',
      required: ['items', 'skip', 'take', 'total', ...(cursor ? ['totalExact', 'nextCursor'] : [])],
      properties: {
        items: items ?? { type: 'array' },
        skip: int('The rows skipped before this page.'),
        take: int('The page size in force.'),
        total: int(cursor ? 'The rows the filters match, counted up to 1000: exact when totalExact.' : 'The rows the filters match.'),
        ...(cursor
          ? {
              totalExact: { type: 'boolean', description: 'False when more rows match than total counts.' },
              nextCursor: nullable({ type: 'string', description: 'Pass as after for the next page; null on the last page.' }),
            }
          : {}),
      },
    }));
  }

  /** The schema of `data` at a dot path of the operation's result. */
  atPath(op: OperationDefinitionNode, doc: DocumentNode, path: string, owner: string, name?: string): Schema | undefined {
    const root =
      op.operation === 'query' ? this.schema.getQueryType() : op.operation === 'mutation' ? this.schema.getMutationType() : this.schema.getSubscriptionType();
    if (!root) return undefined;
    let parent: GraphQLNamedType = root;
    let set: SelectionSetNode | undefined = op.selectionSet;
    const keys = path.split('.');
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      const sel: FieldNode | undefined = set?.selections.find((s): s is FieldNode => s.kind === Kind.FIELD && (s.alias?.value ?? s.name.value) === key);
      if (!sel || (!isObjectType(parent) && !isInterfaceType(parent))) return undefined;
      const def: GraphQLField<unknown, unknown> | undefined = parent.getFields()[sel.name.value];
      if (!def) return undefined;
      if (i === keys.length - 1) return this.output(def.type, sel.selectionSet, doc, owner, { top: true, name });
      parent = getNamedType(def.type);
      set = sel.selectionSet;
      if (isUnionType(parent)) return undefined;
    }
    return undefined;
  }
}

/** Headers of every answer (src/app.ts sets them). */
const commonHeaders = {
  'X-Request-Id': { $ref: '#/components/headers/RequestId' },
  'Cache-Control': { $ref: '#/components/headers/CacheControl' },
};

function problemResponse(status: number, schema: Schema = ref('Problem'), mediaType = 'application/problem+json'): Schema {
  const codes = codesByStatus.get(status) ?? [];
  const headers: Record<string, unknown> = { ...commonHeaders };
  if (status === 429) headers['Retry-After'] = { description: 'Seconds until the next attempt may succeed.', schema: { type: 'integer', minimum: 0 } };
  return {
    description: `${statusText[status] ?? codes.map((c) => errorCodes[c].title).join('; ')}${codes.length ? ` (code: ${codes.join(', ')})` : ''}.`,
    headers,
    content: { [mediaType]: { schema } },
  };
}

/** The spec's name of each GraphQL input type that is a route's body, from the route table (two names for one type: an error). */
function inputNamesOf(routes: CompiledRoute[]): Map<string, string> {
  const names = new Map<string, string>();
  for (const route of routes) {
    const variable = Object.entries(route.variables ?? {}).find(([, source]) => source === 'body')?.[0];
    const type = variable ? route.variableTypes.get(variable) : undefined;
    if (!type || !route.schemas?.request) continue;
    const graphqlName = getNamedType(type).name;
    const known = names.get(graphqlName);
    if (known && known !== route.schemas.request) throw new Error(`${graphqlName} is both ${known} and ${route.schemas.request}`);
    names.set(graphqlName, route.schemas.request);
  }
  return names;
}

export function openApiDocument(routes: CompiledRoute[], schema: GraphQLSchema): Record<string, unknown> {
  const gen = new Generator(schema, inputNamesOf(routes));
  gen.components.Problem = problemSchema;
  const paths: Record<string, Record<string, unknown>> = {};
  const tags: string[] = [];
  let usesTokenFailure = false;

  for (const route of routes) {
    if (!tags.includes(route.tag)) tags.push(route.tag);
    const op = route.document && route.operation ? getOperationAST(route.document, route.operation) : null;
    const defaults = new Map((op?.variableDefinitions ?? []).map((v) => [v.variable.name.value, v.defaultValue]));
    const principals = principalsOf(route.policy);

    // Parameters.
    const parameters: Schema[] = route.params.map((name) => ({
      name,
      in: 'path',
      required: true,
      schema: { type: 'string', format: 'uuid' },
    }));
    let bodyVariable: string | undefined;
    for (const [variable, source] of Object.entries(route.variables ?? {})) {
      if (source === 'body') {
        bodyVariable = variable;
        continue;
      }
      const kind = source.slice(0, source.indexOf('.'));
      const key = source.slice(source.indexOf('.') + 1);
      if (kind === 'path') continue;
      const type = route.variableTypes.get(variable);
      const required = !!type && isNonNullType(type) && !defaults.get(variable);
      // A list's cursor is the id of the previous page's last item (a connection's cursor, typed String in the graph).
      const cursor = route.success.page && source === 'query.after';
      const s = cursor ? { type: 'string', format: 'uuid' } : type ? gen.bare(type) : { type: 'string' };
      if (kind === 'query')
        parameters.push({
          name: key,
          in: 'query',
          required,
          schema: s,
          ...(type && isListType(isNonNullType(type) ? type.ofType : type) ? { style: 'form', explode: true } : {}),
        });
      else if (kind === 'header')
        parameters.push({
          name: headerName(key),
          in: 'header',
          required,
          schema: s,
          ...(key.toLowerCase() === 'idempotency-key'
            ? { description: 'Replays the first answer for the same key and body; the same key with a different body is refused (409).' }
            : {}),
        });
    }

    // Request body.
    let requestBody: Schema | undefined;
    if (route.body) {
      const type = bodyVariable ? route.variableTypes.get(bodyVariable) : undefined;
      const s = type ? gen.bare(type) : { type: 'object', description: 'Not specified yet: the route is not built.' };
      requestBody = { required: route.body === 'required', content: { 'application/json': { schema: s } } };
    }

    // Responses.
    const responses: Record<string, unknown> = {};
    const { success } = route;
    const headers: Record<string, unknown> = { ...commonHeaders };
    if (success.location) {
      const example = success.location.replace(/\{[\w.]+\}/g, '{id}');
      headers.Location = {
        description: `The created resource: ${example}. Its id is the last path segment.`,
        required: true,
        schema: { type: 'string', format: 'uri-reference' },
      };
    }
    if (success.page === 'list')
      headers.Link = { description: 'The next page, when there is one: `<...?after=cursor>; rel="next"`.', schema: { type: 'string' } };
    const successResponse: Schema = { description: success.status === 201 ? 'Created' : success.status === 204 ? 'No content' : 'Success', headers };
    if (success.status !== 204 && success.body !== undefined) {
      const s =
        !op || !route.document
          ? undefined
          : success.page === 'list'
            ? gen.atPath(op, route.document, `${success.body}.nodes`, route.operationId, route.schemas?.response)
            : success.page
              ? gen.searchPage(
                  route.schemas?.response ?? `${route.operationId}Page`,
                  gen.atPath(op, route.document, `${success.body}.nodes`, route.operationId),
                  success.page === 'search-cursor',
                )
              : gen.atPath(op, route.document, success.body, route.operationId, route.schemas?.response);
      successResponse.content = { 'application/json': { schema: s ?? {} } };
    }
    responses[String(success.status)] = successResponse;
    const errorStatuses = [...new Set([...(route.errors ?? []), ...genericStatuses(route)])].sort((a, b) => a - b);
    for (const status of errorStatuses) {
      if (status === 401 && route.tokenResultOn401) {
        usesTokenFailure = true;
        responses['401'] = problemResponse(401, { allOf: [ref('Problem'), ref('TokenResultFailure')] }, 'application/json');
      } else responses[String(status)] = problemResponse(status);
    }

    const operation: Schema = {
      operationId: route.operationId,
      summary: route.summary,
      ...(route.operation ? {} : { description: 'Specified but not built yet: answers 501 after authentication and authorization.' }),
      tags: [route.tag],
      ...(route.extension ? { 'x-extension': true } : {}),
      security: principals.map((p) => ({ [schemeOf[p]]: [] })),
      'x-principals': principals,
      ...(typeof route.policy.member === 'string' && route.policy.member !== 'any' ? { 'x-permission': route.policy.member } : {}),
      ...(route.operation ? { 'x-graphql-operation': route.operation } : {}),
      ...(parameters.length ? { parameters } : {}),
      ...(requestBody ? { requestBody } : {}),
      responses,
    };
    (paths[route.path] ??= {})[route.method.toLowerCase()] = operation;
  }
  if (usesTokenFailure) gen.components.TokenResultFailure = tokenResultFailure(schema);

  const kinds: PrincipalKind[] = ['member', 'apiKey', 'accountHolder', 'operator'];
  return {
    openapi: '3.1.0',
    info: {
      title: 'Financial transaction infrastructure API',
      version: 'v1',
      description: [
        'Programmable financial transaction infrastructure. The REST API is generated from the GraphQL API (POST ' +
          '/graphql): every route runs one GraphQL operation.',
        '',
        'Exactly one principal authenticates a request, or none (public routes):',
        ...kinds.map((k) => `- ${principalDescription[k]}`),
        '',
        oneCredentialRule,
        '',
        'A 201 answers the new resource in `Location` and, except where the specification fixes no body ' +
          '(CreateAccount, CreatePaymentIntent, RegisterWallet, CreateSigningRequest: read the id as the last segment of ' +
          '`Location`), as `{ "id": … }` (CreatedResourceResponse) too.',
        '',
        'Each operation lists the principals it accepts in `security` and `x-principals`. Errors are RFC 9457 problem ' +
          'details (application/problem+json). Operations marked `x-extension` are ours, beyond the specification.',
      ].join('\n'),
    },
    servers: [{ url: '/' }],
    tags: tags.map((name) => ({ name })),
    paths,
    components: {
      schemas: Object.fromEntries(Object.entries(gen.components).sort(([a], [b]) => a.localeCompare(b))),
      headers: {
        RequestId: { description: "The request id: the caller's X-Request-Id when well-formed, else a new UUID.", required: true, schema: { type: 'string' } },
        CacheControl: {
          description: 'Always `no-store`: answers carry credentials and tenant data.',
          required: true,
          schema: { type: 'string', const: 'no-store' },
        },
      },
      securitySchemes,
    },
  };
}
