/**
 * Authentication (ADR 0043): an {@link Authenticator} turns a request into the {@link Principal}
 * calling it, or `null` (401). Two ship: {@link bearerTokenAuthenticator} (the deployment's own
 * token: the operator) and `jwtAuthenticator` (`jwt-authenticator.ts`: OIDC / Cognito users);
 * {@link anyOf} tries several in turn. What a principal may then do is the runtime's policy.
 */
import { timingSafeEqual } from "node:crypto";
import { OPERATOR_PRINCIPAL, type Principal } from "../protocol/principal.ts";

/**
 * Who is calling: the principal, or `null` when the request carries no credential this
 * authenticator accepts (the app answers 401 with a `WWW-Authenticate` challenge). Throw
 * `AuthUnavailable` when what verifies credentials cannot be reached (503): never allow then.
 */
export type Authenticator = (request: Request) => Promise<Principal | null> | Principal | null;

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function bearerTokenOf(request: Request): string | undefined {
  const header = request.headers.get("authorization");
  if (header === null) return undefined;
  const match = /^Bearer[ ]+([A-Za-z0-9._~+/-]+=*)[ ]*$/i.exec(header);
  return match?.[1];
}

/** Options of {@link bearerTokenAuthenticator}. */
export interface BearerTokenAuthenticatorOptions {
  /** The accepted token, or several (while rotating). Each non-empty. */
  token: string | readonly string[];
  /** Who a holder of the token is. Default the operator (`{id: "operator", roles: ["operator"]}`). */
  principal?: Principal;
}

/**
 * A fixed bearer token (or several), compared in constant time: its holder is `principal` (the
 * operator by default). Any other request is `null`.
 */
export function bearerTokenAuthenticator(options: BearerTokenAuthenticatorOptions): Authenticator {
  const tokens = (typeof options.token === "string" ? [options.token] : [...options.token]).map((t) => {
    if (typeof t !== "string" || t === "") throw new Error("bearerTokenAuthenticator: token must be a non-empty string (or a non-empty list of them)");
    return Buffer.from(t, "utf8");
  });
  if (tokens.length === 0) throw new Error("bearerTokenAuthenticator: at least one token is required");
  const principal = options.principal ?? OPERATOR_PRINCIPAL;
  return (request) => {
    const given = bearerTokenOf(request);
    if (given === undefined) return null;
    const bytes = Buffer.from(given, "utf8");
    // Every token is compared (no early exit), each in constant time for its length.
    let matched = false;
    for (const token of tokens) if (token.length === bytes.length && timingSafeEqual(token, bytes)) matched = true;
    return matched ? principal : null;
  };
}

/** The first principal any of `authenticators` finds, tried in order; `null` when none does. */
export function anyOf(...authenticators: Authenticator[]): Authenticator {
  if (authenticators.length === 0) throw new Error("anyOf: at least one authenticator is required");
  return async (request) => {
    for (const authenticate of authenticators) {
      const principal = await authenticate(request);
      if (principal !== null) return principal;
    }
    return null;
  };
}

/** Checks what an authenticator returned: a principal with a non-empty string id, else a refusal. */
export function checkedPrincipal(value: unknown): Principal | null {
  if (value === null || value === undefined) return null;
  const p = value as Principal;
  if (typeof p !== "object" || typeof p.id !== "string" || p.id === "") {
    throw new Error("an authenticator returned something that is not a principal ({id: non-empty string, roles?, claims?})");
  }
  if (p.roles !== undefined && (!Array.isArray(p.roles) || p.roles.some((r) => typeof r !== "string"))) {
    throw new Error("an authenticator returned a principal whose roles are not a list of strings");
  }
  return p;
}
