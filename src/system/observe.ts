import type { IncomingMessage, ServerResponse } from 'node:http';
import { getOperationAST, type DocumentNode, type ExecutionResult } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { context, propagation, trace, SpanStatusCode, type Span } from '@opentelemetry/api';
import type { Context, Deps } from '../context';
import type { Principal } from '../auth/principal';
import { countRequest as countRateLimited, requestRateLimited, setRateLimitHeaders, type RateLimitState } from '../auth/request-limits';
import { httpRoutes, inSpan, metrics, operationLabel, SpanKind, tracer, tracingOn } from '../kernel/telemetry';
import { metricsHandler } from './metrics';

/**
 * Per request (issue 20): metrics (http_requests_total by route template, method, status and
 * principal type; latency; GraphQL operations), the request rate limit's headers and its 429, the
 * GraphQL span, and /metrics. One yoga plugin, first of the app's (src/app.ts); the HTTP server
 * span is opened around yoga by the server (tracedHandler, src/server.ts).
 *
 * Instrumented when METRICS=on (metrics) and OTEL_EXPORTER_OTLP_ENDPOINT is set (spans); with
 * both off nothing is recorded per request (the benchmark's uninstrumented app).
 */
interface Seen {
  started: number;
  path?: string;
  principal: string;
  limit?: RateLimitState & { exceeded: boolean };
}

/** The route label of a request that is not a REST route (those are marked by the adapter: httpRoutes). */
function routeOf(request: Request, path: string): string {
  const marked = httpRoutes.get(request);
  if (marked) return marked;
  if (path === '/graphql' || path === '/healthz' || path === '/readyz' || path === '/metrics' || path === '/v1/openapi.json') return path;
  if (path.startsWith('/v1/')) return 'unmatched';
  return 'other';
}

/** The labelled children of the HTTP metrics, by their labels (prom-client hashes a label object on every call otherwise). */
const children = new Map<string, { count: { inc: () => void }; time: { observe: (v: number) => void } }>();
function countRequest(route: string, method: string, status: string, principal: string, seconds: number): void {
  const key = `${route} ${method} ${status} ${principal}`;
  let c = children.get(key);
  if (!c)
    children.set(key, (c = { count: metrics.httpRequests.labels(route, method, status, principal), time: metrics.httpDuration.labels(route, method, status) }));
  c.count.inc();
  c.time.observe(seconds);
}

export function principalLabel(p: Principal | null): string {
  return p?.type ?? 'none';
}

export interface ObservedRequest {
  /** What the context factory learnt: the principal and the rate limit's count. */
  seen(request: Request, principal: Principal | null): Promise<void>;
  plugin: Plugin<Record<string, unknown>, Context>;
}

export function observeRequests(deps: Deps): ObservedRequest {
  const measuring = deps.config.METRICS === 'on';
  const tracingConfigured = !!deps.config.OTEL_EXPORTER_OTLP_ENDPOINT;
  const serveMetrics = metricsHandler(deps);
  const seen = new WeakMap<Request, Seen>();
  const seenOf = (request: Request) => {
    let s = seen.get(request);
    if (!s) seen.set(request, (s = { started: performance.now(), principal: 'none' }));
    return s;
  };
  return {
    async seen(request, principal) {
      const limit = await countRateLimited(deps, principal);
      if (!measuring && !limit) return;
      const s = seenOf(request);
      s.principal = principalLabel(principal);
      if (limit) {
        s.limit = limit;
        if (limit.exceeded) {
          metrics.rateLimited.inc({ principal: s.principal });
          throw requestRateLimited(limit.resetSeconds);
        }
      }
    },
    plugin: {
      async onRequest({ request, url, endResponse, serverContext }) {
        if (measuring) seenOf(request).path = url.pathname;
        if (url.pathname === '/metrics') endResponse(await serveMetrics(request, (serverContext as { clientIp?: string }).clientIp ?? 'unknown'));
      },
      onExecute({ args, executeFn, setExecuteFn }) {
        if (!measuring && !(tracingConfigured && tracingOn())) return;
        const op = getOperationAST(args.document as DocumentNode, args.operationName);
        const type = op?.operation ?? 'unknown';
        const name = operationLabel(op?.name?.value ?? args.operationName);
        setExecuteFn((a) =>
          inSpan(`graphql ${type} ${name}`, { 'graphql.operation.type': type, 'graphql.operation.name': name }, async (span) => {
            const started = performance.now();
            const result = (await executeFn(a)) as ExecutionResult;
            const outcome = result.errors?.length ? 'error' : 'ok';
            if (measuring) {
              metrics.graphqlOperations.inc({ operation: name, type, outcome });
              metrics.graphqlDuration.observe({ type }, (performance.now() - started) / 1000);
            }
            if (outcome === 'error') span?.setStatus({ code: SpanStatusCode.ERROR, message: String(result.errors![0]!.extensions?.code ?? 'error') });
            return result;
          }),
        );
      },
      onResponse({ request, response, serverContext, setResponse }) {
        const s = seen.get(request);
        let answer = response;
        if (s?.limit) {
          // A GraphQL request refused by the limit answers 429 too (REST's problem already says 429).
          if (s.limit.exceeded && response.status !== 429) setResponse((answer = new Response(response.body, { status: 429, headers: response.headers })));
          setRateLimitHeaders(answer.headers, s.limit, s.limit.exceeded);
        }
        const path = s?.path ?? new URL(request.url).pathname;
        const span = (serverContext as { span?: Span }).span;
        if (!measuring && !span) return;
        const route = routeOf(request, path);
        if (measuring && s) {
          const status = String(answer.status);
          countRequest(route, request.method, status, s.principal, (performance.now() - s.started) / 1000);
        }
        if (span) {
          span.updateName(`${request.method} ${route}`);
          span.setAttributes({
            'http.route': route,
            'http.response.status_code': answer.status,
            'ftis.request_id': answer.headers.get('x-request-id') ?? '',
            'ftis.principal_type': s?.principal ?? 'none',
          });
          if (answer.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        }
      },
    },
  };
}

/**
 * The HTTP server span around one request (a caller's W3C `traceparent` continues its trace); yoga
 * gets it in its server context (its attributes are set at the response, above). Without tracing
 * configured, `handle` runs alone.
 */
export function tracedHandler(
  deps: Deps,
  handle: (req: IncomingMessage, res: ServerResponse, extra: { span?: Span }) => void,
): (req: IncomingMessage, res: ServerResponse) => void {
  if (!deps.config.OTEL_EXPORTER_OTLP_ENDPOINT) return (req, res) => handle(req, res, {});
  return (req, res) => {
    if (!tracingOn()) return handle(req, res, {});
    const parent = propagation.extract(context.active(), req.headers);
    tracer.startActiveSpan(
      `${req.method} request`,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': req.method ?? '', 'url.path': (req.url ?? '').split('?')[0]! } },
      parent,
      (span) => {
        res.once('close', () => span.end());
        handle(req, res, { span });
      },
    );
  };
}
