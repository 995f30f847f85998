import { context, propagation, trace, SpanKind, SpanStatusCode, TraceFlags, type Attributes, type Context as OtelContext, type Span } from '@opentelemetry/api';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * The process's metrics and traces (issue 20; docs/observability.md). Kernel, so every domain
 * records its own (webhooks, ledger, chains, jobs); the /metrics handler is src/system/metrics.ts,
 * the OpenTelemetry SDK's start src/kernel/otel.ts.
 *
 * Metrics: one prom-client registry per process (not prom-client's global one), Prometheus naming
 * (`_total` counters, `_seconds` durations, base units). Every label is bounded: route templates
 * (never raw URLs), queue names, outcomes, principal types, network ids from the configuration;
 * GraphQL operation names are kept for the first MAX_OPERATION_NAMES distinct well-formed names,
 * later ones count as "other".
 *
 * Traces: through @opentelemetry/api only; without the SDK started (OTEL_EXPORTER_OTLP_ENDPOINT
 * unset) every call is a no-op. An app built with METRICS=off and no OTLP endpoint records
 * nothing per request (src/app.ts): the benchmark's uninstrumented figure.
 */
export const registry = new Registry();

const seconds = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export const metrics = {
  httpRequests: new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by route template, method, status and principal type.',
    labelNames: ['route', 'method', 'status', 'principal'] as const,
    registers: [registry],
  }),
  httpDuration: new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time to answer an HTTP request (until the response is handed to the server), by route template, method and status.',
    labelNames: ['route', 'method', 'status'] as const,
    buckets: seconds,
    registers: [registry],
  }),
  graphqlOperations: new Counter({
    name: 'graphql_operations_total',
    help: 'GraphQL operations executed (REST routes included, they run one each), by operation name and type and outcome (ok or error).',
    labelNames: ['operation', 'type', 'outcome'] as const,
    registers: [registry],
  }),
  graphqlDuration: new Histogram({
    name: 'graphql_operation_duration_seconds',
    help: 'GraphQL execution time, by operation type.',
    labelNames: ['type'] as const,
    buckets: seconds,
    registers: [registry],
  }),
  rateLimited: new Counter({
    name: 'http_rate_limited_total',
    help: 'Requests refused with 429 by the request rate limit, by principal type.',
    labelNames: ['principal'] as const,
    registers: [registry],
  }),
  jobRuns: new Counter({
    name: 'job_runs_total',
    help: 'Jobs run by this process, by queue and outcome (completed, failed).',
    labelNames: ['queue', 'outcome'] as const,
    registers: [registry],
  }),
  jobDuration: new Histogram({
    name: 'job_duration_seconds',
    help: "A job's handler time (a batch handler: the batch's), by queue.",
    labelNames: ['queue'] as const,
    buckets: [...seconds, 30, 60],
    registers: [registry],
  }),
  webhookAttempts: new Counter({
    name: 'webhook_delivery_attempts_total',
    help: 'Webhook delivery attempts made by this process, by outcome (SUCCESS, HTTP_ERROR, TIMEOUT, CONNECTION_ERROR, BLOCKED_DESTINATION).',
    labelNames: ['outcome'] as const,
    registers: [registry],
  }),
  webhookAttemptDuration: new Histogram({
    name: 'webhook_delivery_attempt_duration_seconds',
    help: 'Latency of one delivery attempt (connect, response, body), by outcome.',
    labelNames: ['outcome'] as const,
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  }),
  webhookDeadLettered: new Counter({
    name: 'webhook_deliveries_dead_lettered_total',
    help: 'Deliveries that became dead-letter (their tenth attempt failed), recorded by this process.',
    registers: [registry],
  }),
  ledgerPostings: new Counter({
    name: 'ledger_postings_total',
    help: 'Ledger transactions posted by this process (replays excluded; a posting inside a caller transaction that rolls back is counted).',
    registers: [registry],
  }),
  ledgerBatchSize: new Histogram({
    name: 'ledger_post_batch_size',
    help: 'Ledger transactions per ledger_post call (the batcher groups stand-alone postings).',
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256],
    registers: [registry],
  }),
  chainLag: new Gauge({
    name: 'chain_watcher_lag_blocks',
    help: "Blocks between a network's head and the watcher's cursor, as of its last step in this process.",
    labelNames: ['network'] as const,
    registers: [registry],
  }),
};

/** The REST route template a request matched (set by the REST adapter): the `route` label, never the raw path. */
export const httpRoutes = new WeakMap<Request, string>();

const MAX_OPERATION_NAMES = 200;
const operationNames = new Set<string>();
/** A bounded label for a client-chosen GraphQL operation name. */
export function operationLabel(name: string | null | undefined): string {
  if (!name) return 'anonymous';
  if (operationNames.has(name)) return name;
  if (!/^[_A-Za-z]\w{0,63}$/.test(name) || operationNames.size >= MAX_OPERATION_NAMES) return 'other';
  operationNames.add(name);
  return name;
}

// ---------------------------------------------------------------------------------------------
// Traces

export const tracer = trace.getTracer('ftis');

/**
 * Whether spans are made at all: the SDK started (src/kernel/otel.ts), and the share of root
 * traces it samples (OTEL_TRACES_SAMPLE_RATIO), and how many recorded spans of this process are
 * open (`recording`): none open, no active context can hold a sampled span, so the checks per SQL
 * statement and per job send stop at that count (no context lookup at all).
 */
export const tracing = { started: false, rootRatio: 1, recording: 0 };
export const tracingOn = () => tracing.started;

/**
 * Whether a span started now (under `parent`, default the active context) could be recorded. The
 * sampler follows a parent's decision and samples roots at `rootRatio`, so under an unsampled
 * parent, or with no parent while roots are sampled at 0, no span is made at all: no span object,
 * no random trace id, no context to carry (issue 20: instrumentation sampled at 0 costs next to
 * nothing). The answer the SDK's sampler would give, decided before asking it.
 */
export function spanWanted(parent?: OtelContext): boolean {
  if (!tracing.started) return false;
  // The active context holds a sampled span only while a recorded one is open (a remote parent is
  // always handed in as `parent`: a request's in tracedHandler, a job's in work.ts).
  if (!parent && tracing.recording === 0 && tracing.rootRatio <= 0) return false;
  const parentSpan = trace.getSpan(parent ?? context.active());
  return parentSpan ? (parentSpan.spanContext().traceFlags & TraceFlags.SAMPLED) !== 0 : tracing.rootRatio > 0;
}

const TRACEPARENT = /^[\da-f]{2}-[\da-f]{32}-[\da-f]{16}-([\da-f]{2})/;
/**
 * Whether a request's W3C `traceparent` header asks its trace be sampled (flag 01). A request with
 * none, a malformed one or an unsampled one starts no span while roots are sampled at 0.
 */
export function remoteSampled(traceparent: string | string[] | undefined): boolean {
  if (typeof traceparent !== 'string') return false;
  const flags = TRACEPARENT.exec(traceparent.trim())?.[1];
  return flags !== undefined && (parseInt(flags, 16) & 1) === 1;
}

/**
 * Runs `fn` in a new span, child of the active one (or of `parent`); the span ends when `fn`
 * settles and records its exception. Without tracing, `fn` runs alone.
 */
export async function inSpan<T>(
  name: string,
  attributes: Attributes,
  fn: (span: Span | undefined) => Promise<T>,
  opts: { kind?: SpanKind; parent?: OtelContext } = {},
): Promise<T> {
  // Under a span of a trace not sampled (local, or remote: a job's sender), children are not sampled
  // either (the sampler follows the parent), nor roots sampled at 0: no span is made at all.
  if (!spanWanted(opts.parent)) return fn(undefined);
  return tracer.startActiveSpan(name, { kind: opts.kind ?? SpanKind.INTERNAL, attributes }, opts.parent ?? context.active(), async (span) => {
    const recorded = span.isRecording();
    if (recorded) tracing.recording++;
    try {
      return await fn(span);
    } catch (err) {
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw err;
    } finally {
      if (recorded) tracing.recording--;
      span.end();
    }
  });
}

/** The trace and span ids of the active recorded span, for log lines (the pino mixin). */
export function traceFields(): { traceId?: string; spanId?: string } {
  if (!tracing.recording) return {};
  const span = trace.getActiveSpan();
  if (!span?.isRecording()) return {};
  const { traceId, spanId } = span.spanContext();
  return { traceId, spanId };
}

/** The key a job's data carries its sender's trace context under (W3C traceparent), when traced. */
export const JOB_TRACE_KEY = '_trace';

/** The active trace context as a carrier for a job's data, or undefined when nothing is traced. */
export function traceCarrier(): Record<string, string> | undefined {
  if (!tracing.recording || !trace.getActiveSpan()?.isRecording()) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ? carrier : undefined;
}

/** A job's data with the active trace context under JOB_TRACE_KEY when a trace is recorded (an object's; anything else as it is). */
export function withTrace(data: unknown): unknown {
  const carrier = traceCarrier();
  return carrier && data && typeof data === 'object' && !Array.isArray(data) ? { ...data, [JOB_TRACE_KEY]: carrier } : data;
}

/** The trace context a job's data carries (traceCarrier at its send), or the active context. */
export function contextOfJob(data: unknown): OtelContext {
  const carrier = data && typeof data === 'object' ? (data as Record<string, unknown>)[JOB_TRACE_KEY] : undefined;
  if (!carrier || typeof carrier !== 'object') return context.active();
  return propagation.extract(context.active(), carrier as Record<string, string>);
}

export { SpanKind };
