/**
 * Bundled into every function (esbuild `inject`) when the construct's
 * `tracing.openTelemetry` is set: runs the app's setup module, then installs the OpenTelemetry
 * hooks the wiring reads. `#harness-otel-setup` is bound to the setup module by an esbuild alias.
 */
import * as setup from "#harness-otel-setup";
import { otelTracingHooks } from "./otel-hooks.ts";
import { installTracingHooks } from "./tracing-hooks.ts";

installTracingHooks(otelTracingHooks(setup));
