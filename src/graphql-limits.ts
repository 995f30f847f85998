import {
  GraphQLError,
  Kind,
  getNamedType,
  getNullableType,
  isCompositeType,
  isListType,
  parse,
  type ASTVisitor,
  type DocumentNode,
  type ExecutionArgs,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLField,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type ValueNode,
  type SelectionSetNode,
  type ValidationContext,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import type { ErrorCode, FieldError } from './errors';

/**
 * Bounds on what a client-supplied GraphQL document may ask (docs/graphql.md). They apply to
 * documents sent to /graphql (HTTP and graphql-ws); the REST routes execute their own operations,
 * parsed and validated once at start-up, and never reach these hooks. Every refusal happens before
 * execution: 400 with `extensions.code` QUERY_TOO_COMPLEX naming the limit (413 PAYLOAD_TOO_LARGE for
 * the body).
 */
export const graphqlLimits = {
  /** Request body of POST /graphql, and one graphql-ws message: the same 1 MiB as REST. */
  bodyBytes: 1 << 20,
  /** Lexical tokens of a document, counted while parsing: the parser stops at the first one over. */
  tokens: 3000,
  /** Nested selection levels of an operation (fragments flattened: the depth of the answer). */
  depth: 12,
  /** Aliased fields of an operation (`__typename` aliases not counted). */
  aliases: 30,
  /**
   * Estimated cost (measureOperation): 1 per field; a page multiplies what it selects by its size
   * (its maximum when none is given), an unpaged list by listFactor.
   */
  cost: 50_000,
  listFactor: 10,
  /**
   * The largest page size argument a request may give, by name: relay connections (`first`, `last`;
   * 500 on the connections REST list routes and operator searches read, declared as their `maxSize`)
   * and `limit` (stuckOperations, 1 to 500). Over it: 400
   * VALIDATION_FAILED naming the argument, before execution (literals at validation, variables once
   * their values are known).
   */
  pageSize: { first: 100, last: 100, limit: 500 },
} as const;

const code: ErrorCode = 'QUERY_TOO_COMPLEX';
/** The field error code of a page size over its maximum (a VALIDATION_FAILED refusal before execution). */
const pageSizeCode = 'page_size';

/** A refusal of a document by a limit (400 on HTTP whatever the Accept header: see useGraphqlLimits). */
export function limitError(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code } });
}

/** The parse function with the token bound: graphql-js counts tokens as it lexes and aborts past it. */
export function parseWithLimits(source: string, options?: Parameters<typeof parse>[1]) {
  try {
    return parse(source, { ...options, maxTokens: graphqlLimits.tokens });
  } catch (e) {
    if (e instanceof GraphQLError && /contains more tha\w* \d+ tokens/.test(e.message))
      throw limitError(`The document has more than ${graphqlLimits.tokens} tokens (the limit).`);
    throw e;
  }
}

/** armor's rejection handlers get "Syntax Error: <limit> exceeded, found N."; the refusal names the limit. */
const rejectAs = (what: string) => (_ctx: ValidationContext | null, err: GraphQLError) => {
  throw limitError(`${what}: ${err.message.replace(/^Syntax Error: /, '')}`);
};

/** A page size argument of a field: its name and the largest value a request may give. */
interface SizeArgument {
  name: string;
  max: number;
}

/**
 * The page size arguments of a field (`first`, `last`, `limit`): none for a field without. The maximum is graphqlLimits.pageSize's, or the field's own `maxSize` when its Pothos options
 * set one (a relay connection declared with `maxSize`).
 */
function sizeArgumentsOf(field: GraphQLField<unknown, unknown>): SizeArgument[] {
  const own = (field.extensions?.pothosOptions as { maxSize?: unknown } | undefined)?.maxSize;
  return field.args
    .filter((a) => a.name in graphqlLimits.pageSize)
    .map((a) => ({ name: a.name, max: typeof own === 'number' ? own : graphqlLimits.pageSize[a.name as keyof typeof graphqlLimits.pageSize] }));
}

/** What measuring an operation found: its cost, and the page sizes over their maximum. */
export interface Measure {
  cost: number;
  /** Page size arguments over the field's maximum, as field errors (`accounts.first`). */
  oversized: FieldError[];
  /** A page size came from a variable whose value was not known (validation): counted at its maximum. */
  variableSizes: boolean;
}

/**
 * The estimated cost of an operation, from the schema's types (docs/graphql.md):
 *
 * - every field costs 1 (`__typename` too);
 * - a field with a page size argument (`first`, `last`, `limit`) multiplies the cost of its
 *   selection by the size asked, or by its maximum when none is given; the lists directly inside
 *   (a connection's `edges` and `nodes`, a page's `items`) are that page and do not multiply again;
 * - any other field of a list type (an unpaged list) multiplies by listFactor; nested lists
 *   multiply again, so a cyclic walk through lists grows by ten per level.
 *
 * Fragments count where they are spread (the cost of the answer, not of the text); a fragment spread
 * inside itself is not followed (the NoFragmentCycles rule refuses it). Introspection costs 1.
 * `variables` are the request's once known; without them a variable page size counts at its maximum.
 * Counting stops once the cost passes the limit.
 */
export function measureOperation(
  schema: GraphQLSchema,
  fragments: (name: string) => FragmentDefinitionNode | null | undefined,
  operation: OperationDefinitionNode,
  variables?: Record<string, unknown> | null,
): Measure {
  const measure: Measure = { cost: 0, oversized: [], variableSizes: false };
  const root = schema.getRootType(operation.operation);
  if (!root) return measure;
  const defaults = new Map(operation.variableDefinitions?.map((d) => [d.variable.name.value, d.defaultValue]) ?? []);
  const sizeOf = (value: ValueNode | undefined, arg: SizeArgument, path: string): number => {
    let asked: unknown = undefined;
    if (value?.kind === Kind.INT) asked = Number(value.value);
    else if (value?.kind === Kind.VARIABLE) {
      const name = value.name.value;
      const fallback = defaults.get(name);
      if (variables && name in variables) asked = variables[name];
      else if (variables && fallback?.kind === Kind.INT) asked = Number(fallback.value);
      else if (!variables) measure.variableSizes = true;
    }
    if (typeof asked !== 'number' || !Number.isFinite(asked)) return arg.max; // absent or null: the most it can be
    if (asked > arg.max && !measure.oversized.some((e) => e.field === path))
      measure.oversized.push({ field: path, message: `must be at most ${arg.max} (the maximum page size)`, code: pageSizeCode });
    return Math.max(0, Math.min(asked, arg.max));
  };
  const spreading = new Set<string>();
  const walk = (selectionSet: SelectionSetNode, type: GraphQLCompositeType, pageInside: boolean, path: string): number => {
    let cost = 0;
    for (const selection of selectionSet.selections) {
      if (selection.kind === Kind.FIELD) {
        cost += 1;
        const field = 'getFields' in type ? type.getFields()[selection.name.value] : undefined;
        if (!field) continue; // introspection, unknown fields (refused by other rules)
        const here = path ? `${path}.${selection.name.value}` : selection.name.value;
        const sizes = sizeArgumentsOf(field);
        // The size asked (first and last together: the larger), or the maximum when none is given.
        let size: number | null = null;
        if (sizes.length) {
          const given = sizes.flatMap((arg) => {
            const value = selection.arguments?.find((a) => a.name.value === arg.name)?.value;
            return value ? [sizeOf(value, arg, `${here}.${arg.name}`)] : [];
          });
          size = Math.max(...(given.length ? given : sizes.map((a) => a.max)));
        }
        if (!selection.selectionSet) continue;
        const named = getNamedType(field.type);
        if (!isCompositeType(named)) continue;
        const list = isListType(getNullableType(field.type));
        const inner = walk(selection.selectionSet, named, size !== null && !list, here);
        cost += (size ?? (list ? (pageInside ? 1 : graphqlLimits.listFactor) : 1)) * inner;
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        const on = selection.typeCondition ? schema.getType(selection.typeCondition.name.value) : type;
        if (on && isCompositeType(on)) cost += walk(selection.selectionSet, on, pageInside, path);
      } else {
        const name = selection.name.value;
        const fragment = fragments(name);
        if (!fragment || spreading.has(name)) continue;
        const on = schema.getType(fragment.typeCondition.name.value);
        if (!on || !isCompositeType(on)) continue;
        spreading.add(name);
        cost += walk(fragment.selectionSet, on, pageInside, path);
        spreading.delete(name);
      }
      if (cost > graphqlLimits.cost) return cost; // enough to refuse: stop counting
    }
    return cost;
  };
  measure.cost = walk(operation.selectionSet, root, false, '');
  return measure;
}

const costMessage = () =>
  `Query cost: the limit is ${graphqlLimits.cost}, this operation costs more (a page counts its size, or its maximum when ` +
  `none is given, times what it selects; an unpaged list ${graphqlLimits.listFactor} times).`;

/** The refusal of page sizes over their maximum: 400 VALIDATION_FAILED naming each argument, before execution. */
export function oversizedError(oversized: FieldError[]): GraphQLError {
  return new GraphQLError(oversized.map((e) => `${e.field}: ${e.message}`).join('; '), {
    extensions: { code: 'VALIDATION_FAILED', fieldErrors: oversized },
  });
}

/** A refusal by a limit, or a page size over its maximum (answered 400, before execution). */
const isRefusal = (e: GraphQLError) =>
  e.extensions?.code === code || (e.extensions?.fieldErrors as FieldError[] | undefined)?.some((f) => f.code === pageSizeCode) === true;

/** Operations whose cost depends on variables: measured again with them before they execute. */
const measuredAtExecution = new WeakSet<DocumentNode>();

function costRule(context: ValidationContext): ASTVisitor {
  return {
    OperationDefinition(operation) {
      const m = measureOperation(context.getSchema(), (name) => context.getFragment(name), operation);
      if (m.oversized.length) throw oversizedError(m.oversized);
      if (m.variableSizes) measuredAtExecution.add(context.getDocument());
      else if (m.cost > graphqlLimits.cost) throw limitError(costMessage());
    },
  };
}

/**
 * The refusal, if any, of a valid document whose page sizes are variables, once the request's
 * variables are known: a value over the maximum, or the cost with them over the limit.
 */
export function refusalWithVariables(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | null | undefined,
  variables: Record<string, unknown> | null | undefined,
): GraphQLError | null {
  if (!measuredAtExecution.has(document)) return null;
  const fragments = new Map<string, FragmentDefinitionNode>();
  const operations: OperationDefinitionNode[] = [];
  for (const d of document.definitions) {
    if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
    else if (d.kind === Kind.OPERATION_DEFINITION) operations.push(d);
  }
  const operation = operationName ? operations.find((o) => o.name?.value === operationName) : operations.length === 1 ? operations[0] : undefined;
  if (!operation) return null; // graphql-js refuses it
  const m = measureOperation(schema, (name) => fragments.get(name), operation, variables && typeof variables === 'object' ? variables : {});
  if (m.oversized.length) return oversizedError(m.oversized);
  if (m.cost > graphqlLimits.cost) return limitError(costMessage());
  return null;
}

/** The validation rules of the limits (depth and aliases by graphql-armor, cost our own). */
export const limitRules = [
  maxDepthRule({ n: graphqlLimits.depth, flattenFragments: true, propagateOnRejection: false, onReject: [rejectAs('Query depth')] }),
  maxAliasesRule({ n: graphqlLimits.aliases, propagateOnRejection: false, onReject: [rejectAs('Aliases')] }),
  costRule,
];

/**
 * The yoga plugin: the token bound in parse, then depth, aliases and cost as validation rules
 * that throw on the first limit exceeded, so validation stops there. Yoga caches parse results
 * (and parse refusals) by document text and validation results by document, so a document is
 * measured once per process.
 */
export function useGraphqlLimits(): Plugin {
  return {
    onParse({ setParseFn }) {
      setParseFn(parseWithLimits as never);
    },
    onValidate({ addValidationRule, params, context }) {
      for (const rule of limitRules) addValidationRule(rule);
      // After validation (cached per document), before the context (authentication) is built: a
      // document measured at its maximum sizes is measured again with the request's variables.
      // Thrown like the rules' refusals, so yoga's validation cache (keyed by document) never keeps it.
      return ({ valid }) => {
        if (!valid) return;
        const request = (context as { params?: { operationName?: string | null; variables?: Record<string, unknown> | null } }).params;
        const refusal = refusalWithVariables(params.schema, params.documentAST, request?.operationName, request?.variables);
        if (refusal) throw refusal;
      };
    },
    // yoga answers parse and validation errors 200 under Accept: application/json (the
    // GraphQL-over-HTTP legacy rule); a refusal by a limit is 400 whatever the Accept header.
    onResultProcess({ result, setResult }) {
      if (Array.isArray(result) || !('errors' in result) || !result.errors?.some(isRefusal)) return;
      setResult({ ...result, extensions: { ...result.extensions, http: { status: 400 } } });
    },
  };
}
