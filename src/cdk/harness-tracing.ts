/**
 * The construct's `tracing` option (ADR 0030): X-Ray through the Powertools Tracer, and
 * OpenTelemetry GenAI spans with the SDK in the bundle. Either one bundles a tracing module into
 * every function with esbuild's `inject` (it installs its hooks before the handler runs, see
 * `lambda/tracing-hooks.ts`); without the option nothing of either is bundled.
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { Tracing } from "aws-cdk-lib/aws-lambda";
import type { HarnessTracingOptions } from "./harness-props.ts";

/** The specifier `lambda/otel-inject.ts` imports the app's setup module by. */
export const OTEL_SETUP_ALIAS = "#harness-otel-setup";

/** What one function's bundle and configuration get from the `tracing` option. */
export interface HarnessFunctionTracing {
  /** Tracing modules run at cold start before the handler (absolute paths). */
  readonly inject: readonly string[];
  /** Specifiers those modules import, bound to files. */
  readonly alias: Readonly<Record<string, string>>;
  /** Lambda's own X-Ray tracing mode (`ACTIVE` with `xray`). */
  readonly lambdaTracing?: Tracing;
  /** Environment variables the tracing modules read. */
  readonly environment: Readonly<Record<string, string>>;
}

/**
 * The bundling and configuration of every function for the given option, or undefined when it
 * turns nothing on. `handlerModule(name)` is the path of a module beside the handlers
 * (`lambda/<name>.ts` here, `.js` in the package).
 * @throws when `openTelemetry.setupEntry` does not exist
 */
export function functionTracing(
  options: HarnessTracingOptions | undefined,
  handlerModule: (name: string) => string,
): HarnessFunctionTracing | undefined {
  if (!options || (!options.xray && !options.openTelemetry)) return undefined;
  const inject: string[] = [];
  const alias: Record<string, string> = {};
  const environment: Record<string, string> = {};
  if (options.xray) {
    inject.push(handlerModule("xray-inject"));
    // The Powertools Tracer records no response or error bodies: records may hold user content.
    environment.POWERTOOLS_TRACER_CAPTURE_RESPONSE = "false";
    environment.POWERTOOLS_TRACER_CAPTURE_ERROR = "false";
  }
  if (options.openTelemetry) {
    const setup = resolve(options.openTelemetry.setupEntry);
    if (!existsSync(setup)) {
      throw new Error(`Harness: tracing.openTelemetry.setupEntry ${setup} does not exist (a module that sets up the OpenTelemetry SDK)`);
    }
    inject.push(handlerModule("otel-inject"));
    alias[OTEL_SETUP_ALIAS] = setup;
  }
  return { inject, alias, environment, lambdaTracing: options.xray ? Tracing.ACTIVE : undefined };
}
