/**
 * `resolute-harness/otel`: OpenTelemetry spans and metrics after the GenAI semantic conventions
 * (`invoke_agent` per attempt, `chat <model>`, `execute_tool <name>`; one trace per submission),
 * from an observer and an interceptor. Needs `@opentelemetry/api` (an optional peer dependency);
 * the app brings the SDK and its exporter (without one every call is a no-op).
 *
 * @example
 * ```ts
 * import { createRuntime, localModel } from "resolute-harness";
 * import { createMemoryStore } from "resolute-harness/memory";
 * import { otelInstrumentation } from "resolute-harness/otel";
 *
 * const otel = otelInstrumentation(); // the global tracer and meter providers the app registered
 * const runtime = createRuntime({
 *   store: createMemoryStore(),
 *   agents: { echo: { initialize: () => localModel() } },
 *   observers: [otel.observer],
 *   interceptors: [otel.interceptor],
 * });
 * ```
 *
 * @module
 */
export { INSTRUMENTATION_SCOPE, otelInstrumentation, type OtelInstrumentation, type OtelInstrumentationOptions } from "./instrumentation.ts";
export type { OtelSetupModule } from "./setup-module.ts";
export { submissionContext, submissionSpanContext } from "./submission-trace.ts";
export { ATTR, HARNESS_ATTR, METRIC, OPERATION, providerName } from "./genai.ts";
