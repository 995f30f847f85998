import {
  GraphQLError,
  Kind,
  getNamedType,
  getOperationAST,
  isCompositeType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  typeFromAST,
  type ASTNode,
  type DocumentNode,
  type GraphQLCompositeType,
  type GraphQLInputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
  type VariableDefinitionNode,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Context } from './context';
import { DomainError, validationFailed } from './errors';
import { allows, denial, type Policy } from './auth/policy';

/**
 * The one gate every operation passes before it executes, on REST (the adapter executes through
 * yoga's envelope), GraphQL over HTTP and graphql-ws alike:
 *
 * - every input value (variables and the inline literals of the document) is checked against its
 *   GraphQL type here, with our own messages: graphql-js's coercion messages embed the value they
 *   refuse (a password, a token), ours never do. The failures answer 400 VALIDATION_FAILED with
 *   field errors `{ field, message, code }` (codes from zod's vocabulary), as zod failures do;
 * - every string (JSON scalars included, keys too) is refused when it holds a character that
 *   PostgreSQL cannot store or that disguises text: C0 controls but TAB, LF and CR; DEL; C1
 *   controls; the bidirectional embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069);
 *   unpaired surrogates;
 * - a JSON object key `__proto__` is refused (an object built from it would lose the key);
 * - first of all, the policies of the operation's root fields (those scope-auth applies): an
 *   anonymous caller or one without the permission gets 401/403, as on REST, never the input
 *   rules. One refused root field refuses the whole operation.
 *
 * Nothing executes when the gate refuses, so nothing is written. A valid input costs one walk of
 * the variables (no allocation unless an issue is found).
 */

const MAX_ISSUES = 20;
const MAX_JSON_DEPTH = 32;
const INT_MAX = 2 ** 31 - 1;

/** Characters no text input may hold (see above). */
const forbiddenText =
  /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const FORBIDDEN_MESSAGE = 'Must not contain control characters, bidirectional formatting characters or unpaired surrogates.';

export const hasForbiddenText = (s: string) => forbiddenText.test(s);

type Path = (string | number)[];
type Issue = { path: Path; message: string; code: string };

/** The field name of an issue: relative to the `input` argument (the REST body), dotted. */
export function fieldName(path: Path): string {
  const p = path[0] === 'input' ? path.slice(1) : path;
  return p.length ? p.join('.') : '(input)';
}

function checkJson(value: unknown, path: Path, depth: number, out: Issue[]): void {
  if (out.length >= MAX_ISSUES) return;
  if (typeof value === 'string') {
    if (forbiddenText.test(value)) out.push({ path, message: FORBIDDEN_MESSAGE, code: 'invalid_format' });
    return;
  }
  if (value === null || typeof value !== 'object') return;
  if (depth >= MAX_JSON_DEPTH) {
    out.push({ path, message: `Nested too deeply (at most ${MAX_JSON_DEPTH} levels).`, code: 'too_big' });
    return;
  }
  if (Array.isArray(value)) value.forEach((v, i) => checkJson(v, [...path, i], depth + 1, out));
  else
    for (const [k, v] of Object.entries(value)) {
      if (forbiddenText.test(k)) out.push({ path, message: `A key: ${FORBIDDEN_MESSAGE.toLowerCase()}`, code: 'invalid_format' });
      // Every object built from this one (zod's records, spreads) would take it as the prototype and drop the key silently.
      if (k === '__proto__') out.push({ path, message: 'A key named __proto__ is not accepted.', code: 'invalid_format' });
      checkJson(v, [...path, k], depth + 1, out);
    }
}

/** Checks a runtime value (a variable) against its input type, as graphql-js would coerce it. */
function checkValue(type: GraphQLInputType, value: unknown, path: Path, out: Issue[]): void {
  if (out.length >= MAX_ISSUES) return;
  if (isNonNullType(type)) {
    if (value === null) return void out.push({ path, message: 'Must not be null.', code: 'invalid_type' });
    return checkValue(type.ofType, value, path, out);
  }
  if (value === null) return;
  if (isListType(type)) {
    if (Array.isArray(value)) value.forEach((v, i) => checkValue(type.ofType, v, [...path, i], out));
    else checkValue(type.ofType, value, path, out);
    return;
  }
  if (isInputObjectType(type)) {
    if (typeof value !== 'object' || Array.isArray(value)) return void out.push({ path, message: 'Expected an object.', code: 'invalid_type' });
    const fields = type.getFields();
    const given = value as Record<string, unknown>;
    for (const key of Object.keys(given))
      if (!Object.hasOwn(fields, key))
        out.push({ path: [...path, key.length > 64 ? `${key.slice(0, 64)}…` : key], message: 'Unknown field.', code: 'unrecognized_keys' });
    for (const f of Object.values(fields)) {
      const v = given[f.name];
      if (v === undefined) {
        if (isNonNullType(f.type) && f.defaultValue === undefined) out.push({ path: [...path, f.name], message: 'Required.', code: 'invalid_type' });
      } else checkValue(f.type, v, [...path, f.name], out);
    }
    if (type.isOneOf && Object.values(given).filter((v) => v !== undefined && v !== null).length !== 1)
      out.push({ path, message: 'Give exactly one field.', code: 'invalid_type' });
    return;
  }
  if (isEnumType(type)) {
    if (typeof value !== 'string' || !type.getValue(value))
      out.push({
        path,
        message: `Expected one of: ${type
          .getValues()
          .map((v) => v.name)
          .join(', ')}.`,
        code: 'invalid_value',
      });
    return;
  }
  switch (type.name) {
    case 'String':
    case 'ID':
      // An id is a string: a JSON number is refused (graphql-js would turn 12 into "12").
      if (typeof value !== 'string') out.push({ path, message: 'Expected a string.', code: 'invalid_type' });
      else if (forbiddenText.test(value)) out.push({ path, message: FORBIDDEN_MESSAGE, code: 'invalid_format' });
      return;
    case 'Int':
      if (typeof value !== 'number' || !Number.isInteger(value) || Math.abs(value) > INT_MAX)
        out.push({ path, message: 'Expected a 32-bit integer.', code: 'invalid_type' });
      return;
    case 'Float':
      if (typeof value !== 'number' || !Number.isFinite(value)) out.push({ path, message: 'Expected a number.', code: 'invalid_type' });
      return;
    case 'Boolean':
      if (typeof value !== 'boolean') out.push({ path, message: 'Expected true or false.', code: 'invalid_type' });
      return;
    default: {
      const before = out.length;
      checkJson(value, path, 0, out);
      if (out.length > before) return;
      try {
        type.parseValue(value);
      } catch (e) {
        // Our scalars throw DomainErrors with value-free messages; anything else gets a generic one.
        out.push({ path, message: e instanceof DomainError ? e.message : `Expected a ${type.name}.`, code: 'invalid_format' });
      }
    }
  }
}

/** A variable's input type, resolved once per parsed document (REST's are parsed at start-up, yoga's cached by text) and schema. */
const variableTypes = new WeakMap<VariableDefinitionNode, { schema: GraphQLSchema; type: GraphQLInputType | undefined }>();
function variableTypeOf(schema: GraphQLSchema, def: VariableDefinitionNode): GraphQLInputType | undefined {
  const hit = variableTypes.get(def);
  if (hit?.schema === schema) return hit.type;
  const type = typeFromAST(schema, def.type as never) as GraphQLInputType | undefined;
  variableTypes.set(def, { schema, type });
  return type;
}

function variableIssues(schema: GraphQLSchema, op: OperationDefinitionNode, values: Record<string, unknown> | null | undefined, out: Issue[]): void {
  for (const def of op.variableDefinitions ?? []) {
    const type = variableTypeOf(schema, def);
    if (!type) continue; // the document's own validation reports it
    const name = def.variable.name.value;
    const value = values?.[name];
    if (value === undefined) {
      if (isNonNullType(type) && !def.defaultValue) out.push({ path: [name], message: 'Required.', code: 'invalid_type' });
    } else checkValue(type, value, [name], out);
  }
}

/** Strings written inline in the document (their types were checked by the document's validation). */
function literalIssues(node: ASTNode, out: Issue[]): void {
  const walk = (v: ValueNode, path: Path): void => {
    if (out.length >= MAX_ISSUES) return;
    if (v.kind === Kind.STRING) {
      if (forbiddenText.test(v.value)) out.push({ path, message: FORBIDDEN_MESSAGE, code: 'invalid_format' });
    } else if (v.kind === Kind.LIST) v.values.forEach((x, i) => walk(x, [...path, i]));
    else if (v.kind === Kind.OBJECT) for (const f of v.fields) walk(f.value, [...path, f.name.value]);
  };
  const visit = (n: unknown): void => {
    if (Array.isArray(n)) return n.forEach(visit);
    if (!n || typeof n !== 'object' || !('kind' in n)) return;
    const a = n as ASTNode;
    if (a.kind === Kind.ARGUMENT) return walk(a.value, [a.name.value]);
    if (a.kind === Kind.VARIABLE_DEFINITION) return a.defaultValue ? walk(a.defaultValue, [a.variable.name.value]) : undefined;
    for (const [k, child] of Object.entries(a)) if (k !== 'loc' && child && typeof child === 'object') visit(child);
  };
  visit(node);
}

/** Documents are parsed once and cached (yoga's parse cache, the REST route table): so are their literal issues. */
const literalCache = new WeakMap<DocumentNode, Issue[]>();
function literalIssuesOf(document: DocumentNode): Issue[] {
  let issues = literalCache.get(document);
  if (!issues) literalIssues(document, (issues = []));
  literalCache.set(document, issues);
  return issues;
}

/** The policies of the root fields an operation selects (fragments followed), cached per document. */
const policyCache = new WeakMap<DocumentNode, Map<OperationDefinitionNode, Policy[]>>();
function rootPolicies(schema: GraphQLSchema, document: DocumentNode, op: OperationDefinitionNode): Policy[] {
  let perOp = policyCache.get(document);
  if (!perOp) policyCache.set(document, (perOp = new Map()));
  let found = perOp.get(op);
  if (found) return found;
  found = [];
  const fields = schema.getRootType(op.operation)?.getFields() ?? {};
  const fragments = new Map(document.definitions.flatMap((d) => (d.kind === Kind.FRAGMENT_DEFINITION ? [[d.name.value, d.selectionSet] as const] : [])));
  const seen = new Set<SelectionSetNode>();
  const collect = (set: SelectionSetNode): void => {
    if (seen.has(set)) return;
    seen.add(set);
    for (const s of set.selections) {
      if (s.kind === Kind.FIELD) {
        const policy = (fields[s.name.value]?.extensions?.pothosOptions as { authScopes?: { policy?: Policy } } | undefined)?.authScopes?.policy;
        if (policy) found!.push(policy);
      } else if (s.kind === Kind.INLINE_FRAGMENT) collect(s.selectionSet);
      else {
        const f = fragments.get(s.name.value);
        if (f) collect(f);
      }
    }
  };
  collect(op.selectionSet);
  perOp.set(op, found);
  return found;
}

/**
 * The policies of the fields below the root that take arguments (a connection under
 * `organization(id:)`, as the REST list routes select them), fragments followed, cached per document.
 */
const argumentPolicyCache = new WeakMap<DocumentNode, Map<OperationDefinitionNode, Policy[]>>();
function nestedArgumentPolicies(schema: GraphQLSchema, document: DocumentNode, op: OperationDefinitionNode): Policy[] {
  let perOp = argumentPolicyCache.get(document);
  if (!perOp) argumentPolicyCache.set(document, (perOp = new Map()));
  let found = perOp.get(op);
  if (found) return found;
  const out: Policy[] = [];
  const fragments = new Map(document.definitions.flatMap((d) => (d.kind === Kind.FRAGMENT_DEFINITION ? [[d.name.value, d.selectionSet] as const] : [])));
  const seen = new Set<string>();
  const walk = (set: SelectionSetNode, type: GraphQLCompositeType, depth: number): void => {
    for (const sel of set.selections) {
      if (sel.kind === Kind.FIELD) {
        const field = 'getFields' in type ? type.getFields()[sel.name.value] : undefined;
        if (!field) continue;
        const policy = (field.extensions?.pothosOptions as { authScopes?: { policy?: Policy } } | undefined)?.authScopes?.policy;
        if (depth > 0 && policy && sel.arguments?.length) out.push(policy);
        const named = getNamedType(field.type);
        if (sel.selectionSet && isCompositeType(named)) walk(sel.selectionSet, named, depth + 1);
      } else if (sel.kind === Kind.INLINE_FRAGMENT) {
        const on = sel.typeCondition ? schema.getType(sel.typeCondition.name.value) : type;
        if (on && isCompositeType(on)) walk(sel.selectionSet, on, depth);
      } else {
        const f = fragments.get(sel.name.value);
        if (!f || seen.has(sel.name.value)) continue;
        seen.add(sel.name.value);
        walk(f, type, depth);
      }
    }
  };
  const root = schema.getRootType(op.operation);
  if (root) walk(op.selectionSet, root, 0);
  found = out;
  perOp.set(op, found);
  return found;
}

/** The refusal of the first root field the caller may not run, or null. */
function rootDenial(schema: GraphQLSchema, document: DocumentNode, op: OperationDefinitionNode, ctx: Context): DomainError | null {
  for (const policy of rootPolicies(schema, document, op))
    if (!allows(policy, ctx.principal) || (ctx.credentialError && !policy.public)) return denial(policy, ctx.principal, ctx.credentialError);
  return null;
}

/** The refusal of an operation's input (authentication and authorization first), or null. */
export function refuseInput(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | null | undefined,
  variables: Record<string, unknown> | null | undefined,
  ctx: Context,
): DomainError | null {
  const op = getOperationAST(document, operationName);
  if (!op) return null; // execute reports the missing operation
  // Authentication and authorization of the root fields come first, before any look at the input
  // (the validation plugin checks zod rules before scope-auth would run in the resolver).
  const denied = rootDenial(schema, document, op, ctx);
  if (denied) return denied;
  const issues: Issue[] = [];
  variableIssues(schema, op, variables, issues);
  issues.push(...literalIssuesOf(document));
  if (!issues.length) return null;
  // Input that is refused anyway: a field below the root that takes arguments and that the caller
  // may not run answers its denial first, as a root field does (authentication and authorization
  // before any look at the input). Valid input leaves those fields to their resolvers (null there).
  for (const policy of nestedArgumentPolicies(schema, document, op))
    if (!allows(policy, ctx.principal) || (ctx.credentialError && !policy.public)) return denial(policy, ctx.principal, ctx.credentialError);
  return validationFailed(issues.slice(0, MAX_ISSUES).map((i) => ({ field: fieldName(i.path), message: i.message, code: i.code })));
}

/**
 * graphql-js parse and validation messages quote the offending token or literal (`Expected value of
 * type "String!", found ["…"]`, `String cannot represent a non string value: …`, `Value "…" does
 * not exist in "E" enum`, `Unexpected String "…"`): the quote goes, the rule stays.
 */
export function withoutValues(message: string): string {
  return message
    .replace(/, found [\s\S]*$/, '.')
    .replace(/(cannot represent[^:]*):[\s\S]*$/, '$1.')
    .replace(/^Value "[\s\S]*" does not exist in "(\w+)" enum[\s\S]*$/, 'Value does not exist in "$1" enum.')
    .replace(/^(Syntax Error: Unexpected (?:String|BlockString|Name|Int|Float)) "[\s\S]*$/, '$1.')
    .replace(/^(Variable "\$\w+") got invalid value[\s\S]*$/, '$1 got an invalid value.');
}

/** A GraphQL document error in our error model: value-free message, a code of src/errors.ts. */
function recode(error: GraphQLError, code: 'VALIDATION_FAILED' | 'MALFORMED_REQUEST'): void {
  error.message = withoutValues(error.message);
  const extensions = error.extensions as Record<string, unknown>;
  if (!extensions.code || String(extensions.code).startsWith('GRAPHQL_')) extensions.code = code;
}

/** The gate as a yoga plugin: before execution and before a subscription starts. */
export function inputGatePlugin(): Plugin<Record<string, unknown>, Context> {
  const gate = ({
    args,
    setResultAndStopExecution,
  }: {
    args: {
      schema: GraphQLSchema;
      document: DocumentNode;
      operationName?: string | null;
      variableValues?: Record<string, unknown> | null;
      contextValue: unknown;
    };
    setResultAndStopExecution: (r: { data: null; errors: GraphQLError[] }) => void;
  }) => {
    const refusal = refuseInput(args.schema, args.document, args.operationName, args.variableValues, args.contextValue as Context);
    // `data: null`, as when the root field itself refuses: clients see the same shape as before.
    if (refusal) setResultAndStopExecution({ data: null, errors: [refusal] });
  };
  return {
    onParse:
      () =>
      ({ result }) => {
        if (result instanceof GraphQLError) recode(result, 'MALFORMED_REQUEST');
      },
    onValidate:
      () =>
      ({ result }) => {
        for (const error of result) recode(error, 'VALIDATION_FAILED');
      },
    onExecute: gate as never,
    onSubscribe: gate as never,
  };
}
