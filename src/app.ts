import { createYoga, useExecutionCancellation } from 'graphql-yoga';
import pino, { type DestinationStream, type Logger } from 'pino';
import { GraphQLError } from 'graphql';
import { inputGatePlugin, withoutValues } from './input';
import { schema } from './schema';
import type { Context, Deps } from './context';
import { authenticate } from './auth/authenticate';
import { restPlugin } from '../rest/adapter';

export const REQUEST_ID_HEADER = 'x-request-id';
const requestIdPattern = /^[\w.:-]{1,128}$/;

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino({
    level,
    // Credentials never reach the logs, wherever they would appear.
    redact: {
      // (Belt and braces: no message is ever built from an input value, see src/input.ts.)
      paths: [
        'req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers["x-operator-key"]',
        ...['password', 'newPassword', 'token', 'accessToken', 'refreshToken', 'apiKey', 'secret', 'signingSecret', 'variables'].flatMap((k) => [k, `*.${k}`, `*.*.${k}`]),
      ],
      censor: '[redacted]',
    },
  }, destination);
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
      // Yoga logs an error only when maskError (below) replaced it: maskError itself logs real
      // faults once, with their stack; yoga's copy would log refusals and quote their input.
      error: () => undefined,
    },
    maskedErrors: {
      maskError: (error) => {
        if (error instanceof GraphQLError && (!error.originalError || error.originalError instanceof GraphQLError)) {
          const code = error.extensions.code ?? (error.originalError as GraphQLError | undefined)?.extensions.code;
          // GraphQL's own document errors (syntax, unknown field, a literal of the wrong type) are the
          // caller's input; their messages may quote a literal, so the quoted value is cut off.
          if (!code) return new GraphQLError(withoutValues(error.message), { nodes: error.nodes, extensions: { ...error.extensions, code: 'VALIDATION_FAILED' } });
          // A refusal (DomainError): the caller's business, not a fault of ours.
          deps.log.info({ code, path: error.path?.join('.') }, 'refused');
          return error;
        }
        deps.log.error({ err: (error as { originalError?: unknown }).originalError ?? error, path: (error as GraphQLError).path?.join('.') }, 'unexpected error');
        return new GraphQLError('Unexpected error.', {
          nodes: (error as GraphQLError).nodes,
          path: (error as GraphQLError).path,
          extensions: { code: 'INTERNAL' },
        });
      },
    },
    context: async ({ request, clientIp }): Promise<Omit<Context, never>> => {
      const { principal, credentialError } = await authenticate(request.headers, deps);
      return { deps, requestId: idOf(request), principal, credentialError, clientIp: clientIp ?? 'unknown' };
    },
    plugins: [
      useExecutionCancellation(),
      inputGatePlugin(),
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

