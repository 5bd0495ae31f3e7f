/**
 * `resolute-harness/server`: the embedded server. The HTTP app on `@hono/node-server`, bound to
 * loopback by default (refusing other `Host`s), with graceful shutdown on SIGINT/SIGTERM.
 *
 * @example
 * ```ts
 * import { createRuntime, localModel } from "resolute-harness";
 * import { closeOnSignals, serve } from "resolute-harness/server";
 * import { openSqliteStore } from "resolute-harness/sqlite";
 *
 * const runtime = createRuntime({ store: openSqliteStore({ path: "./harness-data/harness.db" }), agents: { echo: { initialize: () => localModel() } } });
 * await runtime.start();
 * const server = await serve(runtime, { port: 8484 });
 * closeOnSignals(server, runtime);
 * console.log(`listening on ${server.url}`);
 * ```
 *
 * @module
 */
export { closeOnSignals, serve, type CloseOnSignalsOptions, type ServeOptions, type ServerHandle } from "./server.ts";
export { listenFailureHint, ServerListenFailed } from "./listen-failed.ts";
export { mountChatPage, type ChatPageOptions } from "../chat-page/mount-chat-page.ts";
export { mountConsole } from "../console/mount-console.ts";
