import {
  GraphQLError,
  Kind,
  getNamedType,
  getNullableType,
  isCompositeType,
  isListType,
  parse,
  type ASTVisitor,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type SelectionSetNode,
  type ValidationContext,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import type { ErrorCode } from './errors';

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
  /** Estimated cost: 1 per field, and a list multiplies the cost of what it selects by listFactor. */
  cost: 20_000,
  listFactor: 10,
} as const;

const code: ErrorCode = 'QUERY_TOO_COMPLEX';

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

/**
 * The cost of an operation, from the schema's types: every field costs 1; a field of a list type
 * multiplies the cost of its selection by listFactor (nested lists multiply again), so a cyclic
 * walk through lists (network { assetNetworks { network { assetNetworks … } } }) grows by ten per
 * level. Fragments count where they are spread (the cost of the answer, not of the text).
 * Introspection (__schema, __type) costs 1: it is static and bounded by the depth limit.
 */
export function operationCost(context: ValidationContext, selectionSet: SelectionSetNode, type: GraphQLCompositeType, spreading = new Set<string>()): number {
  let cost = 0;
  for (const selection of selectionSet.selections) {
    if (selection.kind === Kind.FIELD) {
      cost += 1; // __typename too: every selection visited costs, so counting stops within the limit
      const field = 'getFields' in type ? type.getFields()[selection.name.value] : undefined;
      if (!field || !selection.selectionSet) continue; // leaves, introspection, unknown fields (refused by other rules)
      const named = getNamedType(field.type);
      if (!isCompositeType(named)) continue;
      const inner = operationCost(context, selection.selectionSet, named, spreading);
      cost += (isListType(getNullableType(field.type)) ? graphqlLimits.listFactor : 1) * inner;
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      const on = selection.typeCondition ? context.getSchema().getType(selection.typeCondition.name.value) : type;
      if (on && isCompositeType(on)) cost += operationCost(context, selection.selectionSet, on, spreading);
    } else {
      const name = selection.name.value;
      const fragment: FragmentDefinitionNode | null | undefined = context.getFragment(name);
      if (!fragment || spreading.has(name)) continue; // unknown or cyclic: other rules refuse it
      const on = context.getSchema().getType(fragment.typeCondition.name.value);
      if (!on || !isCompositeType(on)) continue;
      spreading.add(name);
      cost += operationCost(context, fragment.selectionSet, on, spreading);
      spreading.delete(name);
    }
    if (cost > graphqlLimits.cost) return cost; // enough to refuse: stop counting
  }
  return cost;
}

function costRule(context: ValidationContext): ASTVisitor {
  return {
    OperationDefinition(operation) {
      const root = context.getSchema().getRootType(operation.operation);
      if (!root) return;
      const cost = operationCost(context, operation.selectionSet, root);
      if (cost > graphqlLimits.cost)
        throw limitError(
          `Query cost: the limit is ${graphqlLimits.cost}, this operation costs more (lists count ${graphqlLimits.listFactor} times what they select).`,
        );
    },
  };
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
    onValidate({ addValidationRule }) {
      for (const rule of limitRules) addValidationRule(rule);
    },
    // yoga answers parse and validation errors 200 under Accept: application/json (the
    // GraphQL-over-HTTP legacy rule); a refusal by a limit is 400 whatever the Accept header.
    onResultProcess({ result, setResult }) {
      if (Array.isArray(result) || !('errors' in result) || !result.errors?.some((e) => e.extensions?.code === code)) return;
      setResult({ ...result, extensions: { ...result.extensions, http: { status: 400 } } });
    },
  };
}
