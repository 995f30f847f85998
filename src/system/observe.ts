import type { IncomingMessage, ServerResponse } from 'node:http';
import { getOperationAST, type DocumentNode, type ExecutionResult } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { context, propagation, trace, SpanStatusCode, type Span } from '@opentelemetry/api';
import type { Context, Deps } from '../context';
import type { Principal } from '../auth/principal';
import { countRequest as countRateLimited, limitOf, requestRateLimited, setRateLimitHeaders, type RateLimitState } from '../auth/request-limits';
import { httpRoutes, inSpan, metrics, operationLabel, remoteSampled, SpanKind, spanWanted, tracer, tracing, tracingOn } from '../kernel/telemetry';
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

/**
 * The labelled children of the request metrics, found by their labels in nested maps: no label
 * object for prom-client to hash, no key string built per request. (A child still checks its
 * labels on each update: prom-client's own cost.)
 */
interface RequestChild {
  count: { inc: () => void };
  time: { observe: (v: number) => void };
}
const requestChildren = new Map<string, Map<string, Map<number, Map<string, RequestChild>>>>();
function countRequest(route: string, method: string, status: number, principal: string, seconds: number): void {
  let byMethod = requestChildren.get(route);
  if (!byMethod) requestChildren.set(route, (byMethod = new Map()));
  let byStatus = byMethod.get(method);
  if (!byStatus) byMethod.set(method, (byStatus = new Map()));
  let byPrincipal = byStatus.get(status);
  if (!byPrincipal) byStatus.set(status, (byPrincipal = new Map()));
  let c = byPrincipal.get(principal);
  if (!c) {
    const code = String(status);
    byPrincipal.set(
      principal,
      (c = { count: metrics.httpRequests.labels(route, method, code, principal), time: metrics.httpDuration.labels(route, method, code) }),
    );
  }
  c.count.inc();
  c.time.observe(seconds);
}

/** An operation's labels and its metric children, once per parsed document and operation name. */
interface OperationMetrics {
  type: string;
  name: string;
  ok: { inc: () => void };
  error: { inc: () => void };
  time: { observe: (v: number) => void };
}
/** The REST adapter parses its operations once at start-up; yoga caches the documents it parses by their text. */
const operations = new WeakMap<DocumentNode, Map<string, OperationMetrics>>();
function operationOf(document: DocumentNode, operationName: string | null | undefined): OperationMetrics {
  let byName = operations.get(document);
  if (!byName) operations.set(document, (byName = new Map()));
  let labels = byName.get(operationName ?? '');
  if (!labels) {
    const op = getOperationAST(document, operationName);
    const type = op?.operation ?? 'unknown';
    const name = operationLabel(op?.name?.value ?? operationName);
    labels = {
      type,
      name,
      ok: metrics.graphqlOperations.labels(name, type, 'ok'),
      error: metrics.graphqlOperations.labels(name, type, 'error'),
      time: metrics.graphqlDuration.labels(type),
    };
    byName.set(operationName ?? '', labels);
  }
  return labels;
}
function countOperation(op: OperationMetrics, outcome: 'ok' | 'error', seconds: number): void {
  op[outcome].inc();
  op.time.observe(seconds);
}

const outcomeOf = (result: unknown): 'ok' | 'error' => ((result as ExecutionResult | null)?.errors?.length ? 'error' : 'ok');

export function principalLabel(p: Principal | null): string {
  return p?.type ?? 'none';
}

export interface ObservedRequest {
  /**
   * What the context factory learnt: the principal and the rate limit's count. A promise only when
   * the rate limit counts the principal's requests (a statement per lease, src/auth/request-limits.ts);
   * otherwise nothing to await.
   */
  seen(request: Request, principal: Principal | null): Promise<void> | void;
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
    seen(request, principal) {
      if (limitOf(deps.config, principal))
        return countRateLimited(deps, principal).then((limit) => {
          const s = seenOf(request);
          s.principal = principalLabel(principal);
          if (!limit) return;
          s.limit = limit;
          if (limit.exceeded) {
            metrics.rateLimited.inc({ principal: s.principal });
            throw requestRateLimited(limit.resetSeconds);
          }
        });
      if (measuring) seenOf(request).principal = principalLabel(principal);
    },
    plugin: {
      // Not async: a promise to await on every request only for /metrics.
      onRequest({ request, url, endResponse, serverContext }) {
        if (measuring) seenOf(request).path = url.pathname;
        if (url.pathname === '/metrics') return serveMetrics(request, (serverContext as { clientIp?: string }).clientIp ?? 'unknown').then(endResponse);
      },
      onExecute({ args, executeFn, setExecuteFn }) {
        // A span only when one could be recorded (spanWanted): sampled at 0, a request makes none.
        const traced = tracingConfigured && spanWanted();
        if (!measuring && !traced) return;
        const op = operationOf(args.document as DocumentNode, args.operationName);
        const { type, name } = op;
        const started = performance.now();
        if (!traced)
          return {
            onExecuteDone({ result }) {
              countOperation(op, outcomeOf(result), (performance.now() - started) / 1000);
            },
          };
        setExecuteFn((a) =>
          inSpan(`graphql ${type} ${name}`, { 'graphql.operation.type': type, 'graphql.operation.name': name }, async (span) => {
            const result = (await executeFn(a)) as ExecutionResult;
            const outcome = outcomeOf(result);
            if (measuring) countOperation(op, outcome, (performance.now() - started) / 1000);
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
        const span = (serverContext as { span?: Span }).span;
        if (!measuring && !span) return;
        const route = routeOf(request, s?.path ?? new URL(request.url).pathname);
        if (measuring && s) {
          countRequest(route, request.method, answer.status, s.principal, (performance.now() - s.started) / 1000);
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
    // Sampled at 0, a request starts a span only when its caller's trace is sampled (the sampler
    // follows a remote parent): otherwise no span, no trace id, no context (issue 20).
    if (!tracingOn() || (tracing.rootRatio <= 0 && !remoteSampled(req.headers.traceparent))) return handle(req, res, {});
    const parent = propagation.extract(context.active(), req.headers);
    tracer.startActiveSpan(
      `${req.method} request`,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': req.method ?? '', 'url.path': (req.url ?? '').split('?')[0]! } },
      parent,
      (span) => {
        const recorded = span.isRecording();
        if (recorded) tracing.recording++;
        res.once('close', () => {
          if (recorded) tracing.recording--;
          span.end();
        });
        handle(req, res, { span });
      },
    );
  };
}
