/** The embedded server entry: the HTTP app on `@hono/node-server`, with graceful shutdown. */
export { closeOnSignals, serve, type CloseOnSignalsOptions, type ServeOptions, type ServerHandle } from "./server.ts";
