/**
 * What a tracing module adds to a function's wiring. The `Harness` construct's `tracing` option
 * bundles such a module into every function with esbuild's `inject` (it runs at cold start, before
 * the handler's module), where it installs its hooks here; the wiring reads them when it builds.
 * Without the option nothing is installed and nothing tracing-related is bundled, so a function
 * pays for tracing only when it is on.
 */
import type { Interceptor, Observer } from "../ports/observer.ts";

/** One tracing module's contribution to the wiring (every field optional). */
export interface LambdaTracingHooks {
  /** Added after the built-in telemetry observer. */
  readonly observers?: readonly Observer[];
  /** Added outside the agents module's interceptors (so they time those too). */
  readonly interceptors?: readonly Interceptor[];
  /** Wraps every AWS SDK client the wiring creates (DynamoDB, SQS), returning it. */
  readonly instrumentClient?: <C extends object>(client: C) => C;
  /**
   * Wraps every invocation's work, inside the log context: where spans are flushed before Lambda
   * freezes the process (it may never thaw it again).
   */
  readonly aroundInvocation?: <T>(work: () => Promise<T>) => Promise<T>;
}

const installed: LambdaTracingHooks[] = [];

/** Called by an injected tracing module at cold start. */
export function installTracingHooks(hooks: LambdaTracingHooks): void {
  installed.push(hooks);
}

/** The hooks installed so far (none unless the construct's `tracing` option bundled a module). */
export function tracingHooks(): readonly LambdaTracingHooks[] {
  return installed;
}

/** Runs `work` inside every hook's `aroundInvocation`, the first installed outermost. */
export function aroundInvocation<T>(hooks: readonly LambdaTracingHooks[], work: () => Promise<T>): Promise<T> {
  return hooks.reduceRight<() => Promise<T>>(
    (inner, hook) => (hook.aroundInvocation ? () => hook.aroundInvocation!(inner) : inner),
    work,
  )();
}

/** `client` passed through every hook's `instrumentClient`. */
export function instrumentClient<C extends object>(hooks: readonly LambdaTracingHooks[], client: C): C {
  return hooks.reduce((c, hook) => (hook.instrumentClient ? hook.instrumentClient(c) : c), client);
}
