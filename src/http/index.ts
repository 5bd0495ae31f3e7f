/** The HTTP surface (`resolute-harness/http`): one Hono app for node-server and Lambda alike. */
export { APP_DEFAULTS, createApp, type AppOptions } from "./app.ts";
export { bearerAuth, type BearerAuthOptions } from "./bearer-auth.ts";
export { parseCorsOrigins } from "./cors-origins.ts";
export { isLoopbackHost, LOOPBACK, type CorsOptions } from "./origin-guard.ts";
export type { ErrorBody, TransportErrorCode } from "./http-errors.ts";
