import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Server as NetServer } from 'node:net';
import { GraphQLError, type DocumentNode } from 'graphql';
import { WebSocketServer } from 'ws';
import { useServer } from 'graphql-ws/use/ws';
import { createApp, problem, readiness, workerHttpHandler } from './compose';
import type { Context, Deps } from './context';
import { openSocketSession, type SocketSession } from './auth/socket-sessions';
import { graphqlLimits } from './graphql-limits';
import { clientAddress, parseTrustedProxies } from './kernel/client-address';
import { tracedHandler } from './system/observe';
import { stopping } from './kernel/lifecycle';

type EnvelopedRoot = { execute: (a: unknown) => unknown; subscribe: (a: unknown) => unknown };

export interface RunningServer {
  server: Server;
  url: string;
  /**
   * Stops accepting connections and closes websockets with 1001 (going away); requests in flight
   * may finish for `drainMs` (default 0), then every connection is closed.
   */
  close(opts?: { drainMs?: number }): Promise<void>;
}

/** Parse and validation refusals (syntax, limits) answer the subscription with errors; the socket stays open. */
function refusals<T>(run: () => T): T | readonly GraphQLError[] {
  try {
    return run();
  } catch (e) {
    if (e instanceof GraphQLError) return [e];
    throw e;
  }
}

/**
 * HTTP and graphql-ws on one port: yoga serves /graphql (queries and mutations; SSE
 * subscriptions), the REST plugin serves /v1/*, and websocket upgrades on /graphql speak
 * graphql-ws, with the credential in connectionParams (same header names as HTTP). A socket
 * without a valid credential is closed at connection_init (4401); an open one is closed when its
 * credential stops authenticating (src/auth/socket-sessions.ts).
 */
/** Listens, or rejects with one line naming the cause (a port in use, an address refused) and what to set. */
async function listenOn(server: NetServer, port: number, host: string): Promise<void> {
  try {
    await new Promise<void>((ok, fail) => {
      server.once('error', fail);
      server.listen(port, host, () => {
        server.off('error', fail);
        ok();
      });
    });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new Error(
      code === 'EADDRINUSE'
        ? `PORT ${port} is taken on ${host} (another process listens there): stop it, or set PORT to a free port`
        : `cannot listen on ${host}:${port} (${code ?? (err as Error).message}): set PORT and HOST`,
      { cause: err },
    );
  }
}

/** `npm start` checks its port before it starts the database: a taken PORT stops it at once, naming it. */
export async function assertPortFree(port: number, host: string): Promise<void> {
  if (port === 0) return;
  const probe = createNetServer();
  await listenOn(probe, port, host);
  await new Promise<void>((ok) => probe.close(() => ok()));
}

export async function startServer(deps: Deps, port: number, host = '127.0.0.1'): Promise<RunningServer> {
  const yoga = createApp(deps);
  // The client's address (rate limits): the socket's peer, or X-Forwarded-For behind a trusted proxy (TRUST_PROXY).
  const proxies = parseTrustedProxies(deps.config.TRUST_PROXY);
  const clientIpOf = (req: IncomingMessage) => clientAddress(req.socket.remoteAddress, req.headers['x-forwarded-for'], proxies);
  const server = createServer(
    tracedHandler(deps, (req, res, extra) => {
      // Shutting down: keep-alive clients reconnect (to another process) after this answer.
      if (stopping()) res.shouldKeepAlive = false;
      void yoga.handle(req, res, { clientIp: clientIpOf(req), ...extra });
    }),
  );
  server.keepAliveTimeout = 65_000;
  // Listening before the websocket server is attached: attached first, it would re-emit a taken port
  // as an "internal error" while the process ran on. Upgrades are handled once it listens.
  await listenOn(server, port, host);
  // One message at most 1 MiB, as an HTTP body.
  const wss = new WebSocketServer({ server, path: yoga.graphqlEndpoint, maxPayload: graphqlLimits.bodyBytes });
  const sessions = new WeakMap<object, SocketSession>();
  const ws = useServer(
    {
      execute: (args) => (args.rootValue as EnvelopedRoot).execute(args) as never,
      subscribe: (args) => (args.rootValue as EnvelopedRoot).subscribe(args) as never,
      onConnect: async (ctx) => {
        const socket = ctx.extra.socket;
        const session = await openSocketSession(deps, ctx.connectionParams, (code, reason) => socket.close(code, reason));
        if (!session) return false;
        if (socket.readyState !== socket.OPEN) {
          session.stop(); // closed while authenticating
          return false;
        }
        sessions.set(ctx, session);
        return true;
      },
      onClose: (ctx) => sessions.get(ctx)?.stop(),
      onSubscribe: async (ctx, _id, params) => {
        const session = sessions.get(ctx);
        if (!session) return [new GraphQLError('The connection is not authenticated.', { extensions: { code: 'UNAUTHENTICATED' } })];
        const { schema, execute, subscribe, parse, validate } = yoga.getEnveloped({ ...ctx, req: ctx.extra.request, socket: ctx.extra.socket, params });
        const contextValue: Context = {
          deps,
          requestId: crypto.randomUUID(),
          ...session.current(),
          clientIp: clientIpOf(ctx.extra.request),
        };
        const document = refusals(() => parse(params.query) as DocumentNode);
        if (Array.isArray(document)) return document;
        const errors = refusals(() => validate(schema, document as DocumentNode));
        if (errors.length) return errors;
        return {
          schema,
          operationName: params.operationName,
          document: document as DocumentNode,
          variableValues: params.variables,
          contextValue,
          rootValue: { execute, subscribe },
        };
      },
    },
    wss,
  );
  const { port: bound } = server.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  return {
    server,
    url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${bound}`,
    close: ({ drainMs = 0 } = {}) =>
      (closing ??= (async () => {
        // No new connection; idle keep-alive connections close now, busy ones after their response.
        const closed = new Promise<void>((ok) => server.close(() => ok()));
        server.closeIdleConnections();
        await ws.dispose(); // every websocket closed with 1001 "Going away"
        // A keep-alive connection becomes idle when its response ends: close it then.
        const idle = setInterval(() => server.closeIdleConnections(), 50);
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([closed, new Promise<void>((ok) => (timer = setTimeout(ok, drainMs)))]);
        clearTimeout(timer);
        clearInterval(idle);
        server.closeAllConnections();
        await closed;
      })()),
  };
}

/**
 * The worker's HTTP server (`npm run start:worker`, issue 20): no API, no websocket; `GET /healthz`
 * (alive, `"role":"worker"`), `GET /readyz` (database and job runner, as the API's), and any other
 * path handed to compose.ts's workerHttpHandler (/metrics), else 404. Closing it drains as the API's.
 */
export async function startWorkerServer(deps: Deps, port: number, host = '127.0.0.1'): Promise<RunningServer> {
  const extra = workerHttpHandler(deps);
  const send = async (res: ServerResponse, answer: Response) => {
    res.writeHead(answer.status, Object.fromEntries(answer.headers));
    res.end(Buffer.from(await answer.arrayBuffer()));
  };
  const server = createServer((req, res) => {
    if (stopping()) res.shouldKeepAlive = false;
    void (async () => {
      const requestId = crypto.randomUUID();
      const path = new URL(req.url ?? '/', 'http://worker').pathname;
      const read = req.method === 'GET' || req.method === 'HEAD';
      if (read && path === '/healthz')
        return send(res, Response.json({ status: 'ok', mode: deps.config.NODE_ENV, role: 'worker' }, { headers: { 'x-request-id': requestId } }));
      if (read && path === '/readyz') return send(res, await readiness(deps, requestId));
      if (extra && (await extra(req, res))) return;
      return send(res, problem('ROUTE_NOT_FOUND', `A worker serves /healthz and /readyz, not ${path}.`, requestId));
    })().catch((err: unknown) => {
      deps.log.error({ err }, 'worker HTTP server failure');
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  await listenOn(server, port, host);
  const { port: bound } = server.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  return {
    server,
    url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${bound}`,
    close: ({ drainMs = 0 } = {}) =>
      (closing ??= (async () => {
        const closed = new Promise<void>((ok) => server.close(() => ok()));
        server.closeIdleConnections();
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([closed, new Promise<void>((ok) => (timer = setTimeout(ok, Math.min(drainMs, 1000))))]);
        clearTimeout(timer);
        server.closeAllConnections();
        await closed;
      })()),
  };
}
