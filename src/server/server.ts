import type { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { serve as serveNode } from "@hono/node-server";
import type { Hono } from "hono";
import type { Runtime } from "../runtime/runtime.ts";
import { createApp, type AppOptions } from "../http/app.ts";
import { mountConsole } from "../console/mount-console.ts";
import { ServerListenFailed } from "./listen-failed.ts";
import { jsonRefusingServer } from "./malformed-requests.ts";
import { isLoopbackHost, LOOPBACK } from "../http/origin-guard.ts";

/** Where and how to listen; the rest configures the HTTP app. */
export interface ServeOptions extends Omit<AppOptions, "shutdown"> {
  /** Default 8484; 0 picks a free port (read it from the handle). */
  port?: number;
  /**
   * Default "127.0.0.1" (pass "0.0.0.0" to listen on every interface). Bound to a loopback
   * address, the server answers only requests whose `Host` is a loopback name or address, plus
   * any in `allowedHosts` (a page re-pointed at 127.0.0.1 by DNS rebinding gets 403).
   */
  hostname?: string;
  /** How long `close` lets open requests finish before cutting connections. Default 5 s. */
  closeGraceMs?: number;
  /**
   * Adds routes of your own beside the harness's (a webhook, a page) before the server listens.
   * They sit outside the `/agents/*` middleware (bring your own auth) and share the app's JSON
   * error handling.
   */
  routes?: (app: Hono) => void;
  /**
   * Serves the console at `/console` (ADR 0054: conversations across agents and instances, each
   * submission's timeline, the approvals inbox, failures, numbers). Its data comes from the API,
   * whose console reads are the operator's alone. Default true; false leaves `/console` unrouted.
   */
  console?: boolean;
}

/** A listening server. */
export interface ServerHandle {
  /** `http://host:port` as actually bound. */
  readonly url: string;
  readonly port: number;
  readonly hostname: string;
  readonly app: Hono;
  /**
   * Stops accepting connections, ends every open stream and `?wait=true` request (their clients
   * resume from the log), and resolves once the server is closed. The runtime stays open: close
   * it after (see {@link closeOnSignals}).
   */
  close(): Promise<void>;
}

/**
 * The library's server entry: the HTTP app over `runtime` on `@hono/node-server`.
 * @throws {ServerListenFailed} `port_in_use` when another process listens on the port (its
 * message names the port), `listen_failed` for other refusals; nothing is left listening.
 */
export async function serve(runtime: Runtime, options: ServeOptions = {}): Promise<ServerHandle> {
  const { port = 8484, hostname = "127.0.0.1", closeGraceMs = 5_000, routes, console: withConsole = true, ...appOptions } = options;
  const shutdown = new AbortController();
  const allowedHosts = isLoopbackHost(hostname) ? [LOOPBACK, ...(appOptions.allowedHosts ?? [])] : appOptions.allowedHosts;
  const app = createApp(runtime, { ...appOptions, allowedHosts, shutdown: shutdown.signal });
  if (withConsole) mountConsole(app);
  routes?.(app);
  const server = serveNode({ fetch: app.fetch, port, hostname, createServer: jsonRefusingServer(app.fetch, hostname) as unknown as typeof createServer });
  await new Promise<void>((resolve, reject) => {
    if (server.listening) return resolve();
    server.once("listening", resolve);
    server.once("error", (err) => {
      shutdown.abort();
      reject(new ServerListenFailed(port, hostname, err));
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  let closing: Promise<void> | undefined;

  return {
    url: `http://${host}:${address.port}`,
    port: address.port,
    hostname: address.address,
    app,
    close() {
      closing ??= new Promise<void>((resolve) => {
        const http = "closeIdleConnections" in server ? server : undefined;
        // Connections whose stream or wait ends below go idle, and a keep-alive client would hold
        // them open: keep closing idle ones until the server is down, then cut the rest.
        const sweepIdle = setInterval(() => http?.closeIdleConnections(), 25);
        const force = setTimeout(() => http?.closeAllConnections(), closeGraceMs);
        server.close(() => {
          clearInterval(sweepIdle);
          clearTimeout(force);
          resolve();
        });
        shutdown.abort();
        http?.closeIdleConnections();
      });
      return closing;
    },
  };
}

/** What {@link closeOnSignals} does on SIGINT / SIGTERM. */
export interface CloseOnSignalsOptions {
  /** Called first, e.g. to log. */
  onSignal?: (signal: NodeJS.Signals) => void;
  /** Default: `process.exit` (0 after a clean close, 1 if closing failed). */
  exit?: (code: number) => void;
}

/**
 * Graceful shutdown on SIGINT / SIGTERM: stop accepting requests and end open streams, then close
 * the runtime — which releases in-flight attempts (not failed: the next process re-attempts
 * them at once) — then exit 0. A second signal exits 1 at once. Returns the uninstaller.
 */
export function closeOnSignals(
  server: Pick<ServerHandle, "close">,
  runtime: Pick<Runtime, "close">,
  options: CloseOnSignalsOptions = {},
): () => void {
  const exit = options.exit ?? ((code: number) => process.exit(code));
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) return exit(1);
    stopping = true;
    options.onSignal?.(signal);
    void (async () => {
      let code = 0;
      try {
        await server.close();
      } catch (err) {
        console.error("server close failed:", err);
        code = 1;
      }
      try {
        await runtime.close();
      } catch (err) {
        console.error("runtime close failed:", err);
        code = 1;
      }
      exit(code);
    })();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  return () => {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  };
}
