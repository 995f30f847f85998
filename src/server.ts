import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import { useServer } from 'graphql-ws/use/ws';
import { createApp } from './app';
import type { Context, Deps } from './context';
import { authenticate } from './auth/authenticate';

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

/**
 * HTTP and graphql-ws on one port: yoga serves /graphql (queries and mutations; SSE
 * subscriptions), the REST plugin serves /v1/*, and websocket upgrades on /graphql speak
 * graphql-ws, with the credential in connectionParams (same header names as HTTP).
 */
export async function startServer(deps: Deps, port: number, host = '127.0.0.1'): Promise<RunningServer> {
  const yoga = createApp(deps);
  const server = createServer((req, res) => void yoga.handle(req, res, { clientIp: req.socket.remoteAddress ?? 'unknown' }));
  server.keepAliveTimeout = 65_000;
  const wss = new WebSocketServer({ server, path: yoga.graphqlEndpoint });
  const ws = useServer(
    {
      execute: (args) => (args.rootValue as EnvelopedRoot).execute(args) as never,
      subscribe: (args) => (args.rootValue as EnvelopedRoot).subscribe(args) as never,
      onSubscribe: async (ctx, _id, params) => {
        const headers = new Headers();
        for (const [k, v] of Object.entries(ctx.connectionParams ?? {})) if (typeof v === 'string') headers.set(k, v);
        const { schema, execute, subscribe, parse, validate } = yoga.getEnveloped({ ...ctx, req: ctx.extra.request, socket: ctx.extra.socket, params });
        const auth = await authenticate(headers, deps);
        const contextValue: Context = { deps, requestId: crypto.randomUUID(), ...auth, clientIp: ctx.extra.request.socket.remoteAddress ?? 'unknown' };
        const args = {
          schema,
          operationName: params.operationName,
          document: parse(params.query),
          variableValues: params.variables,
          contextValue,
          rootValue: { execute, subscribe },
        };
        const errors = validate(args.schema, args.document);
        if (errors.length) return errors;
        return args;
      },
    },
    wss,
  );
  await new Promise<void>((ok) => server.listen(port, host, ok));
  const { port: bound } = server.address() as AddressInfo;
  return {
    server,
    url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${bound}`,
    close: async ({ drainMs = 0 } = {}) => {
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
    },
  };
}
