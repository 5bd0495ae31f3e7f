import type { AddressInfo } from "node:net";
import { serve as serveNode } from "@hono/node-server";
import { Hono } from "hono";
import type { Runtime } from "../../src/runtime/runtime.ts";
import { errorResponse, toErrorResponse } from "../../src/http/http-errors.ts";
import { LOOPBACK, originGuard } from "../../src/http/origin-guard.ts";
import { githubWebhook, type WebhookOptions } from "./webhook.ts";

/** Where the webhook listener binds and which `Host` names it answers to. */
export interface WebhookListenerOptions extends WebhookOptions {
  port: number;
  hostname: string;
  /**
   * `Host` names (without port) the listener answers to besides loopback ones: a tunnel's public
   * name, unless the tunnel rewrites `Host` to the address it forwards to.
   */
  allowedHosts: readonly string[];
}

/** A listening webhook server. */
export interface WebhookListener {
  readonly url: string;
  close(): Promise<void>;
}

/**
 * The listener a tunnel exposes: `POST /webhooks/github` and `GET /healthz`, nothing else (404
 * JSON). The harness's own routes (dispatch, streams, cancel) are on another, loopback-only port,
 * so nothing reaches them through the tunnel and the signature check cannot be walked around.
 * `Host` must be a loopback name or one of `allowedHosts` (403 `host_not_allowed`): a page
 * re-pointed at this machine by DNS rebinding cannot post deliveries either.
 */
export async function startWebhookListener(runtime: Runtime, options: WebhookListenerOptions): Promise<WebhookListener> {
  const app = new Hono();
  app.onError((err, c) => toErrorResponse(c, err, (message, e) => console.error(message, e)));
  app.notFound((c) => errorResponse(c, 404, { error: "not found: this port serves only the webhook", code: "not_found" }));
  app.use("*", originGuard({ allowedHosts: [LOOPBACK, ...options.allowedHosts] }));
  app.get("/healthz", (c) => c.text("ok"));
  githubWebhook(runtime, options)(app);
  const server = serveNode({ fetch: app.fetch, port: options.port, hostname: options.hostname });
  await new Promise<void>((resolve, reject) => {
    if (server.listening) return resolve();
    server.once("listening", resolve);
    server.once("error", reject);
  });
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        if ("closeAllConnections" in server) server.closeAllConnections();
      }),
  };
}
