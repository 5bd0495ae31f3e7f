/**
 * Who is calling, for every API route (ADR 0043): the app authenticates the request once and hands
 * its routes the runtime as that principal reaches it (`c.var.caller`), so a route reaches no
 * unscoped runtime and checks no access of its own.
 */
import type { Context, MiddlewareHandler } from "hono";
import { AuthUnavailable } from "../errors.ts";
import type { CallerRuntime } from "../runtime/caller-runtime.ts";
import type { Runtime } from "../runtime/runtime.ts";
import { checkedPrincipal, type Authenticator } from "../auth/authenticate.ts";
import { errorResponse } from "./http-errors.ts";

/** What the app's routes find on their context. */
export interface AppEnv {
  Variables: {
    /** The runtime as the authenticated caller reaches it. */
    caller: CallerRuntime;
  };
}

/** Authentication of the API routes. */
export interface AuthOptions {
  /** Who is calling: a principal, or `null` for 401 (see `bearerTokenAuthenticator`, `jwtAuthenticator`, `anyOf`). */
  authenticate: Authenticator;
  /** The `realm` of the 401's `WWW-Authenticate` challenge. Default `"harness"`. */
  realm?: string;
}

/**
 * Sets `c.var.caller`: with `auth`, the runtime as the principal `authenticate` finds (none → 401
 * `unauthorized` with a `Bearer` challenge; an authenticator that cannot verify now → 503
 * `auth_unavailable`); without it, as the operator (whoever reaches the server may do anything,
 * as before auth existed). Nothing is read or stored for a refused request.
 */
export function callerMiddleware(runtime: Runtime, auth: AuthOptions | undefined): MiddlewareHandler<AppEnv> {
  if (auth === undefined) {
    return async (c, next) => {
      c.set("caller", runtime.as());
      await next();
    };
  }
  if (typeof auth.authenticate !== "function") throw new Error("createApp: auth.authenticate must be a function");
  const realm = (auth.realm ?? "harness").replace(/["\\]/g, "");
  return async (c, next) => {
    let principal;
    try {
      principal = checkedPrincipal(await auth.authenticate(c.req.raw));
    } catch (err) {
      if (err instanceof AuthUnavailable) {
        return errorResponse(c, 503, { error: err.message, code: "auth_unavailable" }, { "Retry-After": "5" });
      }
      throw err;
    }
    if (principal === null) return unauthorized(c, realm);
    c.set("caller", runtime.as(principal));
    await next();
  };
}

function unauthorized(c: Context, realm: string): Response {
  const tokenGiven = c.req.header("authorization") !== undefined;
  // RFC 6750: a request with a token that failed says so; one without gets the bare challenge.
  const challenge = tokenGiven ? `Bearer realm="${realm}", error="invalid_token"` : `Bearer realm="${realm}"`;
  return errorResponse(c, 401, { error: tokenGiven ? "unauthorized: the token was not accepted" : "unauthorized: a bearer token is required", code: "unauthorized" }, { "WWW-Authenticate": challenge });
}
