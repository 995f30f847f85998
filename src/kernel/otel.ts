import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, TracerProvider } from '@opentelemetry/sdk-trace';
import type { Config } from '../config';
import { tracing } from './telemetry';

/**
 * Starts the OpenTelemetry SDK when OTEL_EXPORTER_OTLP_ENDPOINT is set (off by default): spans go
 * in batches over OTLP/HTTP (protobuf-free JSON is not needed: the exporter's default) to
 * `<endpoint>/v1/traces`; a root span is sampled with OTEL_TRACES_SAMPLE_RATIO (children follow
 * their parent's decision, so a trace is whole or absent). W3C trace context is the propagator
 * (incoming `traceparent` continues a caller's trace; jobs carry it in their data). Once per process.
 * Answers the stop (flush and shut down) for the shutdown, or null when tracing stays off.
 */
export function startTracing(config: Config): { stop: () => Promise<void> } | null {
  const endpoint = config.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!endpoint || tracing.started) return null;
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': config.OTEL_SERVICE_NAME }),
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(config.OTEL_TRACES_SAMPLE_RATIO) }),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: new OTLPTraceExporter({ url: `${endpoint.replace(/\/$/, '')}/v1/traces` }),
        scheduledDelayMillis: 1000,
      }),
    ],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  tracing.rootRatio = config.OTEL_TRACES_SAMPLE_RATIO;
  tracing.started = true;
  const stop = async () => {
    await provider.forceFlush().catch(() => undefined);
    await provider.shutdown().catch(() => undefined);
  };
  stopper = stop;
  return { stop };
}

let stopper: (() => Promise<void>) | null = null;

/** Exports the spans still buffered and stops the exporter (the shutdown's step); a no-op when tracing is off. */
export async function stopTracing(): Promise<void> {
  const stop = stopper;
  stopper = null;
  await stop?.();
}
