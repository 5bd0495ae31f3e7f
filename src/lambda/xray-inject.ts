/**
 * Bundled into every function (esbuild `inject`) when the construct's `tracing.xray` is set:
 * installs the Powertools Tracer's hooks the wiring reads. esbuild injects into every entry of a
 * bundle, the result-schema worker thread's too: only the function's own thread loads the tracer.
 */
import { isMainThread } from "node:worker_threads";

// No static import of the harness's modules: esbuild adds this module's import to every file of
// the bundle, so it runs before them; it registers on the same global `tracing-hooks.ts` reads.
if (isMainThread) {
  const registry = ((globalThis as Record<symbol, unknown[]>)[Symbol.for("resolute-harness.lambda-tracing-hooks")] ??= []);
  registry.push(import("./xray-hooks.ts").then(({ xrayTracingHooks }) => xrayTracingHooks()));
}
