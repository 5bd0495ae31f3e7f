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

/**
 * The installed hooks live on `globalThis`, not in a module-level array: esbuild adds the injected
 * modules' import to every file of the bundle, this one included, so an injected module may run
 * before this module's own top level has.
 */
function installed(): Promise<LambdaTracingHooks>[] {
  return ((globalThis as Record<symbol, Promise<LambdaTracingHooks>[]>)[Symbol.for("resolute-harness.lambda-tracing-hooks")] ??= []);
}

/**
 * Called by an injected tracing module at cold start, with its hooks or the promise of them (a
 * module loads its SDK with a dynamic import: esbuild injects into every file of a bundle, so an
 * injected module cannot use a top-level await).
 */
export function installTracingHooks(hooks: LambdaTracingHooks | Promise<LambdaTracingHooks>): void {
  installed().push(Promise.resolve(hooks));
}

/**
 * The hooks installed (none unless the construct's `tracing` option bundled a module), once each
 * module has loaded; rejects when one failed to (its setup threw), which fails the wiring.
 */
export function tracingHooks(): Promise<LambdaTracingHooks[]> {
  return Promise.all(installed());
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
