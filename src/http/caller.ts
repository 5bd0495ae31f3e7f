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
  /**
   * The OAuth authorization servers (OIDC issuers) whose users' tokens `authenticate` accepts.
   * Set, the app publishes MCP's protected-resource metadata naming them
   * (`GET /.well-known/oauth-protected-resource/mcp`, RFC 9728) and `/mcp`'s 401 points to it, so
   * an MCP client can send its user to sign in. `authFromEnv` sets it from `AUTH_ISSUER`.
   */
  authorizationServers?: readonly string[];
}

/**
 * Sets `c.var.caller`: with `auth`, the runtime as the principal `authenticate` finds (none → 401
 * `unauthorized` with a `Bearer` challenge; an authenticator that cannot verify now → 503
 * `auth_unavailable`); without it, as the operator (whoever reaches the server may do anything,
 * as before auth existed). Nothing is read or stored for a refused request. `challengeParams` adds
 * parameters to the 401's challenge (`/mcp`'s `resource_metadata`).
 */
export function callerMiddleware(runtime: Runtime, auth: AuthOptions | undefined, challengeParams?: (c: Context) => string): MiddlewareHandler<AppEnv> {
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
    if (principal === null) return unauthorized(c, realm, challengeParams?.(c));
    c.set("caller", runtime.as(principal));
    await next();
  };
}

function unauthorized(c: Context, realm: string, params: string | undefined): Response {
  const tokenGiven = c.req.header("authorization") !== undefined;
  // RFC 6750: a request with a token that failed says so; one without gets the bare challenge.
  const challenge = (tokenGiven ? `Bearer realm="${realm}", error="invalid_token"` : `Bearer realm="${realm}"`) + (params ? `, ${params}` : "");
  return errorResponse(c, 401, { error: tokenGiven ? "unauthorized: the token was not accepted" : "unauthorized: a bearer token is required", code: "unauthorized" }, { "WWW-Authenticate": challenge });
}
