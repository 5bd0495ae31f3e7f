import type { Context, MiddlewareHandler } from "hono";
import { bearerAuth as honoBearerAuth } from "hono/bearer-auth";
import type { ErrorBody } from "./http-errors.ts";

export interface BearerAuthOptions {
  /** The accepted token, or several (e.g. while rotating). */
  token: string | string[];
}

/**
 * The simple auth option: requests must carry `Authorization: Bearer <token>`. A missing,
 * malformed or wrong token answers 401 with the JSON error body every route uses. Built on
 * Hono's bearer-auth middleware (constant-time comparison). For a browser `EventSource`, which
 * cannot set headers, put a proxy or a cookie-based middleware in front instead.
 */
export function bearerAuth(options: BearerAuthOptions): MiddlewareHandler {
  const tokens = Array.isArray(options.token) ? options.token : [options.token];
  if (tokens.length === 0 || tokens.some((t) => typeof t !== "string" || t === "")) {
    throw new Error("bearerAuth: token must be a non-empty string (or a non-empty list of them)");
  }
  const unauthorized = (c: Context) => {
    const body: ErrorBody = { error: "unauthorized", code: "unauthorized" };
    return c.json(body, 401);
  };
  return honoBearerAuth({
    token: tokens,
    noAuthenticationHeader: { message: unauthorized },
    invalidAuthenticationHeader: { message: unauthorized },
    invalidToken: { message: unauthorized },
  });
}
