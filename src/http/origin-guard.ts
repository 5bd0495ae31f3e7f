import type { Context, MiddlewareHandler } from "hono";
import { cors } from "hono/cors";
import { errorResponse } from "./http-errors.ts";

/** Cross-origin browser access to the app (off unless given). */
export interface CorsOptions {
  /**
   * The origins whose pages may call the API, each exactly `scheme://host[:port]` as a browser
   * sends it in `Origin` (e.g. `http://localhost:5173`), or `"*"` for any page: then anyone's page
   * can run your agents in a visitor's browser, so use `"*"` only behind auth.
   */
  origins: readonly string[];
  /** How long a browser may cache a preflight's answer. Default 600 s. */
  maxAgeSeconds?: number;
}

/** The word in `allowedHosts` that stands for every loopback name and address. */
export const LOOPBACK = "loopback";

/**
 * Refuses what a browser sends on behalf of a page the app does not trust, before any route runs
 * (so nothing is stored):
 * - a request whose `Origin` is neither the app's own origin nor one of `cors.origins` → 403
 *   `origin_not_allowed`. Browsers send `Origin` on every cross-origin fetch, EventSource and
 *   form POST, so this also stops the "simple" `text/plain` POST that needs no preflight.
 * - when `allowedHosts` is given, a request whose `Host` is not one of them → 403
 *   `host_not_allowed`: a page whose own name was re-pointed at 127.0.0.1 (DNS rebinding) is
 *   same-origin with itself, but its requests still carry its own name in `Host`.
 * Requests without `Origin` (curl, servers, the typed client in Node) pass as before.
 */
export function originGuard(options: { cors?: CorsOptions; allowedHosts?: readonly string[] }): MiddlewareHandler {
  const origins = new Set(options.cors?.origins ?? []);
  const anyOrigin = origins.has("*");
  const hostAllowed = options.allowedHosts ? hostMatcher(options.allowedHosts) : undefined;
  return async (c, next) => {
    if (hostAllowed) {
      const host = c.req.header("host");
      if (host !== undefined && !hostAllowed(hostName(host))) {
        return errorResponse(c, 403, { error: `host ${JSON.stringify(host)} is not allowed`, code: "host_not_allowed" });
      }
    }
    const origin = c.req.header("origin");
    if (origin !== undefined && !anyOrigin && !origins.has(origin) && origin !== ownOrigin(c)) {
      return errorResponse(c, 403, { error: `origin ${JSON.stringify(origin)} is not allowed`, code: "origin_not_allowed" });
    }
    await next();
  };
}

/**
 * `hono/cors` for the allowed origins: answers preflights (204 with the allowed methods and
 * headers) and marks responses, errors included, as readable by the calling page.
 */
export function corsMiddleware(options: CorsOptions): MiddlewareHandler {
  const origins = [...options.origins];
  return cors({
    origin: origins.includes("*") ? "*" : origins,
    allowMethods: ["GET", "POST", "DELETE", "OPTIONS"],
    // What the routes read: a JSON body, a bearer token, the stream offset, MCP's protocol version.
    allowHeaders: ["Content-Type", "Authorization", "Last-Event-ID", "Mcp-Protocol-Version"],
    maxAge: options.maxAgeSeconds ?? 600,
  });
}

/** True for `localhost`, 127.0.0.0/8 and ::1 (what a loopback-bound server is reached by). */
export function isLoopbackHost(name: string): boolean {
  const n = name.toLowerCase();
  return n === "localhost" || n === "::1" || /^127(\.\d{1,3}){3}$/.test(n);
}

function hostMatcher(allowed: readonly string[]): (name: string) => boolean {
  const names = new Set(allowed.map((h) => h.toLowerCase()));
  const loopback = names.has(LOOPBACK);
  return (name) => names.has(name) || (loopback && isLoopbackHost(name));
}

/** The name of a `Host` header without its port (and without an IPv6 literal's brackets). */
function hostName(host: string): string {
  const h = host.trim().toLowerCase();
  if (h.startsWith("[")) return h.slice(1, h.indexOf("]") > 0 ? h.indexOf("]") : undefined);
  const colon = h.lastIndexOf(":");
  return colon >= 0 ? h.slice(0, colon) : h;
}

/** The origin the request was addressed to (scheme and `Host`), which its own pages send. */
function ownOrigin(c: Context): string | undefined {
  const host = c.req.header("host");
  if (!host) return undefined;
  return `${new URL(c.req.url).protocol}//${host.toLowerCase()}`;
}
