/**
 * The app's OpenTelemetry setup module (`OtelSetupModule`), bound to `#harness-otel-setup` by an
 * esbuild alias when the `Harness` construct's `tracing.openTelemetry` is set. This declaration
 * only lets the type checker see what `otel-inject.ts` imports.
 */
declare module "#harness-otel-setup" {
  type Module = import("../otel/setup-module.ts").OtelSetupModule;
  export const tracerProvider: Module["tracerProvider"];
  export const meterProvider: Module["meterProvider"];
  export const attributes: Module["attributes"];
}
