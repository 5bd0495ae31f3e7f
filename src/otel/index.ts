/**
 * `resolute-harness/otel`: OpenTelemetry spans and metrics after the GenAI semantic conventions
 * (`invoke_agent`, `chat <model>`, `execute_tool <name>`), from an observer and an interceptor.
 * Needs `@opentelemetry/api` (an optional peer dependency); the app brings the SDK.
 */
export { INSTRUMENTATION_SCOPE, otelInstrumentation, type OtelInstrumentation, type OtelInstrumentationOptions } from "./instrumentation.ts";
export { submissionContext, submissionSpanContext } from "./submission-trace.ts";
export { ATTR, HARNESS_ATTR, METRIC, OPERATION, providerName } from "./genai.ts";
