/**
 * Bundled into every function (esbuild `inject`) when the construct's `tracing.xray` is set:
 * installs the Powertools Tracer's hooks the wiring reads.
 */
import { xrayTracingHooks } from "./xray-hooks.ts";
import { installTracingHooks } from "./tracing-hooks.ts";

installTracingHooks(xrayTracingHooks());
