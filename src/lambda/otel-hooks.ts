/**
 * OpenTelemetry on Lambda (ADR 0030): the GenAI spans and metrics of `resolute-harness/otel`,
 * with the SDK the app set up in its own module (bundled by the construct's
 * `tracing.openTelemetry.setupEntry`), flushed at the end of every invocation.
 */
import { metrics, type TracerProvider, trace } from "@opentelemetry/api";
import { INSTRUMENTATION_SCOPE, otelInstrumentation } from "../otel/instrumentation.ts";
import type { OtelSetupModule } from "../otel/setup-module.ts";
import type { LambdaTracingHooks } from "./tracing-hooks.ts";

/** A provider that can be flushed (the SDK's tracer and meter providers can). */
interface Flushable {
  forceFlush(): Promise<void>;
}


/**
 * The hooks of OpenTelemetry on Lambda: `otelInstrumentation`'s observer and interceptor on the
 * setup module's providers (or the global ones), and after every invocation a flush of both.
 * Lambda freezes the process once the handler returns and may never thaw it, so a batch exporter
 * must send before that: the flush is awaited, and a failed one is reported, never thrown.
 */
export function otelTracingHooks(setup: OtelSetupModule, onFlushError: (err: unknown) => void = reportFlushError): LambdaTracingHooks {
  const otel = otelInstrumentation({
    tracer: setup.tracerProvider?.getTracer(INSTRUMENTATION_SCOPE),
    meter: setup.meterProvider?.getMeter(INSTRUMENTATION_SCOPE),
    attributes: setup.attributes,
  });
  const flush = async () => {
    const providers: unknown[] = [setup.tracerProvider ?? globalTracerProvider(), setup.meterProvider ?? metrics.getMeterProvider()];
    await Promise.all(providers.filter(isFlushable).map((p) => p.forceFlush().catch(onFlushError)));
  };
  return {
    observers: [otel.observer],
    interceptors: [otel.interceptor],
    aroundInvocation: async (work) => {
      try {
        return await work();
      } finally {
        await flush();
      }
    },
  };
}

/** The SDK provider behind the API's proxy (the proxy itself has no `forceFlush`). */
function globalTracerProvider(): TracerProvider {
  const proxy = trace.getTracerProvider() as TracerProvider & { getDelegate?: () => TracerProvider };
  return proxy.getDelegate?.() ?? proxy;
}

function isFlushable(p: unknown): p is Flushable {
  return typeof (p as Partial<Flushable> | undefined)?.forceFlush === "function";
}

function reportFlushError(err: unknown): void {
  console.error(JSON.stringify({ level: "ERROR", message: "OpenTelemetry flush failed", error: String(err) }));
}
