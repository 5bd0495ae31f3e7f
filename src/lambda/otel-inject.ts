/**
 * Bundled into every function (esbuild `inject`) when the construct's
 * `tracing.openTelemetry` is set: runs the app's setup module, then installs the OpenTelemetry
 * hooks the wiring reads. `#harness-otel-setup` is bound to the setup module by an esbuild alias.
 *
 * esbuild injects into every entry of a bundle, the result-schema worker thread's too: only the
 * function's own thread sets up and traces, so the setup and the hooks are imported on it alone
 * (lazy chunks; the wiring waits for them before it builds).
 */
import { isMainThread } from "node:worker_threads";

// No static import of the harness's modules: esbuild adds this module's import to every file of
// the bundle, so it runs before them; it registers on the same global `tracing-hooks.ts` reads.
if (isMainThread) {
  const registry = ((globalThis as Record<symbol, unknown[]>)[Symbol.for("resolute-harness.lambda-tracing-hooks")] ??= []);
  registry.push(
    Promise.all([import("#harness-otel-setup"), import("./otel-hooks.ts")]).then(([setup, { otelTracingHooks }]) => otelTracingHooks(setup)),
  );
}
