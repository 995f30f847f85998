import { createYoga, useExecutionCancellation, type Plugin } from 'graphql-yoga';
import pino, { type DestinationStream, type Logger } from 'pino';
import { GraphQLError, NoSchemaIntrospectionCustomRule } from 'graphql';
import { postureOf, type Config } from './config';
import { inputGatePlugin, withoutValues } from './input';
import { schema } from './schema';
import type { Context, Deps } from './context';
import { authenticate } from './auth/authenticate';
import { graphqlLimits, useGraphqlLimits } from './graphql-limits';
import { fromUnexpected } from './errors';
import { graphiqlOptions, pagesPlugin, renderGraphiqlPage } from './pages/pages';
import { assetsPrefix } from './pages/assets';
import { observeRequests } from './system/observe';
import { traceFields } from './kernel/telemetry';

export const REQUEST_ID_HEADER = 'x-request-id';
const requestIdPattern = /^[\w.:-]{1,128}$/;

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      // Credentials never reach the logs, wherever they would appear.
      redact: {
        // (Belt and braces: no message is ever built from an input value, see src/input.ts.)
        paths: [
          'req.headers.authorization',
          'req.headers["x-api-key"]',
          'req.headers["x-operator-key"]',
          ...['password', 'newPassword', 'token', 'accessToken', 'refreshToken', 'apiKey', 'secret', 'signingSecret', 'variables'].flatMap((k) => [
            k,
            `*.${k}`,
            `*.*.${k}`,
          ]),
        ],
        censor: '[redacted]',
      },
      // The trace of a traced request (src/kernel/telemetry.ts): its lines carry traceId and spanId.
      mixin: traceFields,
      // Synchronous writes to stdout: a line is out when the call returns, so nothing is lost to a crash
      // or an exit, and lines keep their order (async writes let a fatal line overtake the one before it).
    },
    destination ?? pino.destination({ dest: 1, sync: true }),
  );
}

/** The request id: the caller's X-Request-Id when well-formed, else a new UUID. */
export function requestIdOf(request: Request): string {
  const given = request.headers.get(REQUEST_ID_HEADER);
  return given && requestIdPattern.test(given) ? given : crypto.randomUUID();
}

/** A request's URL: the one yoga parsed already (@whatwg-node's Request keeps it as `parsedUrl`), else parsed here. */
const urlOf = (request: Request): URL => (request as Request & { parsedUrl?: URL }).parsedUrl ?? new URL(request.url);

export type App = ReturnType<typeof createYogaApp>;

/** The REST adapter's yoga plugin (rest/adapter.ts), handed in by the composition root (src/compose.ts). */
export type RestPluginFactory = (deps: Deps, requestIdOf: (request: Request) => string) => Plugin<Record<string, unknown>, Context>;

/** graphql-js's suggestions (" Did you mean "x", "y", or "z"?", " Did you mean the enum value "X"?"): always GraphQL names. */
const suggestion = / Did you mean (?:[a-z ]+ )?"[_A-Za-z]\w*"(?:(?:, |,? or )"[_A-Za-z]\w*")*\?/g;

function withoutSuggestions<E extends Error>(error: E): E {
  if (error.message.includes('Did you mean')) error.message = error.message.replace(suggestion, '');
  return error;
}

/**
 * The schema stays private (production, unless GRAPHQL_INTROSPECTION=on): introspection refused at
 * validation (graphql-js's NoSchemaIntrospectionCustomRule; __typename still works) and no error
 * message suggests names. A validation rule, so it holds for HTTP, graphql-ws and the REST adapter
 * alike (the REST documents never introspect).
 */
const hiddenSchema: Plugin = {
  onValidate({ addValidationRule }) {
    addValidationRule(NoSchemaIntrospectionCustomRule);
    return ({ valid, result, setResult }) => {
      if (!valid) setResult(result.map(withoutSuggestions));
    };
  },
};

/** Headers a browser script may read on a cross-origin answer. */
const exposedHeaders = ['Location', 'Link', 'Retry-After', REQUEST_ID_HEADER];

/**
 * CORS: CORS_ORIGINS is an allow-list of exact origins (others get no CORS header); without it, any
 * origin in development and test, none in production. Credentials are headers (Authorization,
 * X-Api-Key), never cookies, so Access-Control-Allow-Credentials is never sent: no origin is ever
 * reflected together with it.
 */
function corsOf(config: Config) {
  const common = { credentials: false, exposedHeaders, maxAge: 600 };
  if (config.CORS_ORIGINS.length) {
    const allowed = new Set(config.CORS_ORIGINS);
    return (request: Request) => {
      const origin = request.headers.get('origin');
      return origin && allowed.has(origin) ? { ...common, origin: [origin] } : false;
    };
  }
  return config.NODE_ENV === 'production' ? false : { ...common, origin: '*' };
}

export function createYogaApp(deps: Deps, restPlugin: RestPluginFactory) {
  const requestIds = new WeakMap<Request, string>();
  const idOf = (request: Request) => {
    let id = requestIds.get(request);
    if (!id) requestIds.set(request, (id = requestIdOf(request)));
    return id;
  };
  const posture = postureOf(deps.config);
  const observer = observeRequests(deps);
  const stripSuggestions = posture.introspection ? <E extends Error>(e: E) => e : withoutSuggestions;
  const yoga = createYoga<{ clientIp?: string }, Context>({
    schema,
    graphqlEndpoint: '/graphql',
    // Example operations and a headers template; every asset served from this process (no CDN): src/pages.
    graphiql: posture.graphiql && graphiqlOptions(),
    renderGraphiQL: renderGraphiqlPage,
    landingPage: false,
    cors: corsOf(deps.config),
    // Bodies over 1 MiB answer 413 (a Content-Length over it at once; a longer stream when it passes it).
    maxRequestBodySize: graphqlLimits.bodyBytes,
    logging: {
      debug: (...a) => deps.log.debug(a.map(String).join(' ')),
      info: (...a) => deps.log.info(a.map(String).join(' ')),
      warn: (...a) => deps.log.warn(a.map(String).join(' ')),
      // Yoga logs an error only when maskError (below) replaced it: maskError itself logs real
      // faults once, with their stack; yoga's copy would log refusals and quote their input.
      error: () => undefined,
    },
    maskedErrors: {
      maskError: (error) => {
        // yoga's body limit, with the code REST answers for the same 1 MiB.
        if (error instanceof GraphQLError && error.extensions.code === 'REQUEST_ENTITY_TOO_LARGE')
          return new GraphQLError(`The body must be at most ${graphqlLimits.bodyBytes / (1 << 20)} MiB.`, {
            extensions: { code: 'PAYLOAD_TOO_LARGE', http: { status: 413 } },
          });
        if (error instanceof GraphQLError && (!error.originalError || error.originalError instanceof GraphQLError)) {
          const code = error.extensions.code ?? (error.originalError as GraphQLError | undefined)?.extensions.code;
          // GraphQL's own document errors (syntax, unknown field, a literal of the wrong type) are the
          // caller's input; their messages may quote a literal, so the quoted value is cut off.
          if (!code)
            return new GraphQLError(withoutValues(stripSuggestions(error).message), {
              nodes: error.nodes,
              extensions: { ...error.extensions, code: 'VALIDATION_FAILED' },
            });
          // A refusal (DomainError): the caller's business, not a fault of ours.
          deps.log.info({ code, path: error.path?.join('.') }, 'refused');
          return stripSuggestions(error);
        }
        const original = (error as { originalError?: unknown }).originalError ?? error;
        // Last resort for a database refusal that is the caller's (a numeric overflow): 409, not 500.
        const known = fromUnexpected(original);
        if (known) {
          const level = known.code === 'SERVICE_UNAVAILABLE' ? 'warn' : 'info';
          deps.log[level]({ code: known.extensions.code, path: (error as GraphQLError).path?.join('.') }, 'refused by the database');
          return new GraphQLError(known.message, { nodes: (error as GraphQLError).nodes, path: (error as GraphQLError).path, extensions: known.extensions });
        }
        deps.log.error({ err: original, path: (error as GraphQLError).path?.join('.') }, 'unexpected error');
        return new GraphQLError('Unexpected error.', {
          nodes: (error as GraphQLError).nodes,
          path: (error as GraphQLError).path,
          extensions: { code: 'INTERNAL' },
        });
      },
    },
    context: async ({ request, clientIp }): Promise<Omit<Context, never>> => {
      const { principal, credentialError } = await authenticate(request.headers, deps);
      // Metrics learn the principal type; the request rate limit counts the request (429 past it).
      const counted = observer.seen(request, principal);
      if (counted) await counted;
      return { deps, requestId: idOf(request), principal, credentialError, clientIp: clientIp ?? 'unknown' };
    },
    plugins: [
      // First: it times the whole request and serves /metrics (src/system/observe.ts).
      observer.plugin,
      useExecutionCancellation(),
      !posture.introspection && hiddenSchema,
      useGraphqlLimits(),
      inputGatePlugin(),
      restPlugin(deps, idOf),
      pagesPlugin(deps.config),
      {
        onResponse({ request, response }) {
          response.headers.set(REQUEST_ID_HEADER, idOf(request));
          // Answers carry credentials (API keys, webhook secrets, tokens) and tenant data: no cache keeps any.
          // (The static assets of the pages, addressed by their content hash, are cached: src/pages/assets.ts.)
          if (!urlOf(request).pathname.startsWith(assetsPrefix)) response.headers.set('cache-control', 'no-store');
        },
      },
    ],
  });
  return yoga;
}
