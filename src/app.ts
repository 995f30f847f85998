import { createYoga, maskError, useExecutionCancellation, type Plugin } from 'graphql-yoga';
import pino, { type Logger } from 'pino';
import { GraphQLError, NoSchemaIntrospectionCustomRule } from 'graphql';
import { postureOf, type Config } from './config';
import { schema } from './schema';
import type { Context, Deps } from './context';
import { authenticate } from './auth/authenticate';
import { restPlugin } from '../rest/adapter';
import { graphqlLimits, useGraphqlLimits } from './graphql-limits';

export const REQUEST_ID_HEADER = 'x-request-id';
const requestIdPattern = /^[\w.:-]{1,128}$/;

export function createLogger(level: string): Logger {
  return pino({
    level,
    // Credentials never reach the logs, wherever they would appear.
    redact: {
      paths: ['req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers["x-operator-key"]', '*.password', '*.token', '*.refreshToken', '*.apiKey', '*.secret'],
      censor: '[redacted]',
    },
  });
}

/** The request id: the caller's X-Request-Id when well-formed, else a new UUID. */
export function requestIdOf(request: Request): string {
  const given = request.headers.get(REQUEST_ID_HEADER);
  return given && requestIdPattern.test(given) ? given : crypto.randomUUID();
}

export type App = ReturnType<typeof createApp>;

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

export function createApp(deps: Deps) {
  const requestIds = new WeakMap<Request, string>();
  const idOf = (request: Request) => {
    let id = requestIds.get(request);
    if (!id) requestIds.set(request, (id = requestIdOf(request)));
    return id;
  };
  const posture = postureOf(deps.config);
  const stripSuggestions = posture.introspection ? <E extends Error>(e: E) => e : withoutSuggestions;
  const yoga = createYoga<{ clientIp?: string }, Context>({
    schema,
    graphqlEndpoint: '/graphql',
    graphiql: posture.graphiql,
    // Served from this process (no CDN), loaded on the first GraphiQL page only.
    renderGraphiQL: async (options) => (await import('@graphql-yoga/render-graphiql')).renderGraphiQL(options),
    landingPage: false,
    cors: corsOf(deps.config),
    // Bodies over 1 MiB answer 413 (a Content-Length over it at once; a longer stream when it passes it).
    maxRequestBodySize: graphqlLimits.bodyBytes,
    logging: {
      debug: (...a) => deps.log.debug(a.map(String).join(' ')),
      info: (...a) => deps.log.info(a.map(String).join(' ')),
      warn: (...a) => deps.log.warn(a.map(String).join(' ')),
      error: (...a) => deps.log.error(a.map(String).join(' ')),
    },
    maskedErrors: {
      maskError: (error, message, isDev) => {
        // yoga's body limit, with the code REST answers for the same 1 MiB.
        if (error instanceof GraphQLError && error.extensions.code === 'REQUEST_ENTITY_TOO_LARGE')
          return new GraphQLError(`The body must be at most ${graphqlLimits.bodyBytes / (1 << 20)} MiB.`, { extensions: { code: 'PAYLOAD_TOO_LARGE', http: { status: 413 } } });
        // GraphQL's own input errors (variable coercion: unknown enum value, missing or mistyped
        // field) have no code and no path: they are the caller's input, coded like ours.
        if (error instanceof GraphQLError && !error.path && !error.extensions.code && (!error.originalError || error.originalError instanceof GraphQLError))
          return new GraphQLError(stripSuggestions(error).message, { nodes: error.nodes, extensions: { ...error.extensions, code: 'VALIDATION_FAILED' } });
        if (!(error instanceof GraphQLError) || error.originalError) deps.log.error({ err: (error as { originalError?: unknown }).originalError ?? error }, 'unexpected error');
        return stripSuggestions(maskError(error, message, isDev));
      },
    },
    context: async ({ request, clientIp }): Promise<Omit<Context, never>> => {
      const { principal, credentialError } = await authenticate(request.headers, deps);
      return { deps, requestId: idOf(request), principal, credentialError, clientIp: clientIp ?? 'unknown' };
    },
    plugins: [
      useExecutionCancellation(),
      !posture.introspection && hiddenSchema,
      useGraphqlLimits(),
      restPlugin(deps, idOf),
      {
        onResponse({ request, response }) {
          response.headers.set(REQUEST_ID_HEADER, idOf(request));
          // Answers carry credentials (API keys, webhook secrets, tokens) and tenant data: no cache keeps any.
          response.headers.set('cache-control', 'no-store');
        },
      },
    ],
  });
  return yoga;
}
