import { createYoga, maskError, useExecutionCancellation } from 'graphql-yoga';
import pino, { type Logger } from 'pino';
import { GraphQLError } from 'graphql';
import { schema } from './schema';
import type { Context, Deps } from './context';
import { authenticate } from './auth/authenticate';
import { restPlugin } from '../rest/adapter';
import { fromUnexpected } from './errors';

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

export function createApp(deps: Deps) {
  const requestIds = new WeakMap<Request, string>();
  const idOf = (request: Request) => {
    let id = requestIds.get(request);
    if (!id) requestIds.set(request, (id = requestIdOf(request)));
    return id;
  };
  const yoga = createYoga<{ clientIp?: string }, Context>({
    schema,
    graphqlEndpoint: '/graphql',
    graphiql: deps.config.NODE_ENV === 'development',
    landingPage: false,
    logging: {
      debug: (...a) => deps.log.debug(a.map(String).join(' ')),
      info: (...a) => deps.log.info(a.map(String).join(' ')),
      warn: (...a) => deps.log.warn(a.map(String).join(' ')),
      error: (...a) => deps.log.error(a.map(String).join(' ')),
    },
    maskedErrors: {
      maskError: (error, message, isDev) => {
        // GraphQL's own input errors (variable coercion: unknown enum value, missing or mistyped
        // field) have no code and no path: they are the caller's input, coded like ours.
        if (error instanceof GraphQLError && !error.path && !error.extensions.code && (!error.originalError || error.originalError instanceof GraphQLError))
          return new GraphQLError(error.message, { nodes: error.nodes, extensions: { ...error.extensions, code: 'VALIDATION_FAILED' } });
        if (!(error instanceof GraphQLError) || error.originalError) deps.log.error({ err: (error as { originalError?: unknown }).originalError ?? error }, 'unexpected error');
        const known = fromUnexpected((error as { originalError?: unknown }).originalError ?? error);
        if (known) return new GraphQLError(known.message, { nodes: (error as GraphQLError).nodes, path: (error as GraphQLError).path, extensions: known.extensions });
        return maskError(error, message, isDev);
      },
    },
    context: async ({ request, clientIp }): Promise<Omit<Context, never>> => {
      const { principal, credentialError } = await authenticate(request.headers, deps);
      return { deps, requestId: idOf(request), principal, credentialError, clientIp: clientIp ?? 'unknown' };
    },
    plugins: [
      useExecutionCancellation(),
      restPlugin(deps, idOf),
      {
        onResponse({ request, response }) {
          response.headers.set(REQUEST_ID_HEADER, idOf(request));
        },
      },
    ],
  });
  return yoga;
}
