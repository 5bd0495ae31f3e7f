/**
 * `resolute-harness/http`: the HTTP surface as one Hono app, the same on `@hono/node-server` and on
 * Lambda response streaming: 202 admission, `?wait=true`, SSE replay and live tail, steer,
 * follow-up, compact, cancel and the operator's view of submissions; JSON `{error, code}` bodies.
 *
 * @example Mounting the app in a server of your own:
 * ```ts
 * import { serve } from "@hono/node-server";
 * import { createRuntime, localModel } from "resolute-harness";
 * import { createApp } from "resolute-harness/http";
 * import { createMemoryStore } from "resolute-harness/memory";
 *
 * const runtime = createRuntime({ store: createMemoryStore(), agents: { echo: { initialize: () => localModel() } } });
 * await runtime.start();
 * serve({ fetch: createApp(runtime).fetch, port: 8484 });
 * ```
 *
 * @module
 */
export { APP_DEFAULTS, createApp, type AppOptions } from "./app.ts";
export { bearerAuth, type BearerAuthOptions } from "./bearer-auth.ts";
export type { AuthOptions } from "./caller.ts";
export { parseCorsOrigins } from "./cors-origins.ts";
export { isLoopbackHost, LOOPBACK, type CorsOptions } from "./origin-guard.ts";
export type { ErrorBody, TransportErrorCode } from "./http-errors.ts";
