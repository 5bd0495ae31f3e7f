import type { Attributes, MeterProvider, TracerProvider } from "@opentelemetry/api";

/**
 * What the module behind the `Harness` construct's `tracing.openTelemetry.setupEntry` may export. It runs once per
 * container, before the handler: set up the SDK there (a tracer provider with an exporter, a
 * meter provider with a reader), registered globally or exported, or both.
 */
export interface OtelSetupModule {
  /** The tracer provider to use (default: the global one the module registered). */
  readonly tracerProvider?: TracerProvider;
  /** The meter provider to use (default: the global one). */
  readonly meterProvider?: MeterProvider;
  /** Added to every span (e.g. `deployment.environment.name`). */
  readonly attributes?: Attributes;
}
