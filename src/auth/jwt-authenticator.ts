/**
 * OIDC / JWT authentication (ADR 0043) on `jose`: a bearer token signed by the issuer's keys (its
 * JWKS, fetched and cached), for the issuer and audience configured. Cognito user pools take the
 * same path (their access tokens carry `client_id` where others carry `aud`).
 */
import type { JWTPayload, JWTVerifyGetKey } from "jose";
import { AuthUnavailable } from "../errors.ts";
import type { Principal } from "../protocol/principal.ts";
import { bearerTokenOf, type Authenticator } from "./authenticate.ts";

/** Options of {@link jwtAuthenticator}. Checked when it is built. */
export interface JwtAuthenticatorOptions {
  /** The token issuer (`iss`), e.g. `https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbC`. */
  issuer: string;
  /**
   * The accepted audience(s): a token's `aud` must name one (or, without `aud`, its `client_id`:
   * a Cognito access token).
   */
  audience: string | readonly string[];
  /**
   * The issuer's key set. Default: the `jwks_uri` of the issuer's OIDC discovery document
   * (`<issuer>/.well-known/openid-configuration`), or `<issuer>/.well-known/jwks.json` where it
   * has none.
   */
  jwksUrl?: string;
  /** Accepted signature algorithms. Default every asymmetric one (RS*, PS*, ES*, EdDSA): never HS* or `none`. */
  algorithms?: readonly string[];
  /** Clock skew tolerated on `exp`/`nbf`/`iat`, in seconds. Default 60. */
  clockToleranceSec?: number;
  /** Claims holding the principal's roles (a list or a space-separated string). Default `roles` and `cognito:groups`. */
  rolesClaims?: readonly string[];
  /** How long a fetched key set is used before it is fetched again, ms. Default 10 min. */
  cacheMaxAgeMs?: number;
  /**
   * A token whose `kid` the set lacks fetches the set again (the issuer rotated its keys), at most
   * once per this many ms. Default 30 s.
   */
  refetchCooldownMs?: number;
  /** A key-set fetch slower than this fails (the request gets 503), ms. Default 5 s. */
  timeoutMs?: number;
  /** The time tokens are checked at (tests). Default the wall clock. */
  now?: () => number;
}

const ASYMMETRIC = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"] as const;

/**
 * Verifies `Authorization: Bearer <jwt>`: signature by a key of the issuer's set (the `kid` picks
 * it; an unknown `kid` fetches the set again, at most every `refetchCooldownMs`: rotation), `iss`, audience,
 * `exp`/`nbf` with the skew, an algorithm from the list. The principal is `{id: sub, roles, claims}`.
 * A missing, malformed or failing token is `null` (401); a key set that cannot be fetched throws
 * `AuthUnavailable` (503): a token is never accepted unchecked.
 */
export function jwtAuthenticator(options: JwtAuthenticatorOptions): Authenticator {
  const issuer = nonEmpty(options.issuer, "issuer");
  const audiences = (typeof options.audience === "string" ? [options.audience] : [...(options.audience ?? [])]).map((a) => nonEmpty(a, "audience"));
  if (audiences.length === 0) throw new Error("jwtAuthenticator: audience is required");
  const algorithms = [...(options.algorithms ?? ASYMMETRIC)];
  const refused = algorithms.filter((a) => !(ASYMMETRIC as readonly string[]).includes(a));
  if (refused.length > 0) throw new Error(`jwtAuthenticator: algorithms must be asymmetric (${ASYMMETRIC.join(", ")}); refused ${refused.join(", ")}`);
  const clockTolerance = options.clockToleranceSec ?? 60;
  if (!Number.isFinite(clockTolerance) || clockTolerance < 0) throw new Error("jwtAuthenticator: clockToleranceSec must be a non-negative number");
  const rolesClaims = options.rolesClaims ?? ["roles", "cognito:groups"];
  const timeoutMs = options.timeoutMs ?? 5_000;
  const cacheMaxAgeMs = options.cacheMaxAgeMs ?? 10 * 60_000;
  const cooldownMs = options.refetchCooldownMs ?? 30_000;
  for (const [name, value] of [["timeoutMs", timeoutMs], ["cacheMaxAgeMs", cacheMaxAgeMs], ["refetchCooldownMs", cooldownMs]] as const) {
    if (!Number.isInteger(value) || value < 0) throw new Error(`jwtAuthenticator: ${name} must be a non-negative integer`);
  }
  if (options.jwksUrl !== undefined) new URL(options.jwksUrl); // throws on a malformed URL, at build
  new URL(issuer);

  // jose is loaded on first use: a function that never sees a JWT keeps it out of its cold start.
  let keys: Promise<{ jose: typeof import("jose"); getKey: JWTVerifyGetKey }> | undefined;
  const keySet = () => {
    keys ??= (async () => {
      const jose = await import("jose");
      const url = options.jwksUrl ?? (await discoverJwksUrl(issuer, timeoutMs));
      const remote = jose.createRemoteJWKSet(new URL(url), { timeoutDuration: timeoutMs, cacheMaxAge: cacheMaxAgeMs, cooldownDuration: cooldownMs });
      return { jose, getKey: remote };
    })();
    keys.catch(() => (keys = undefined)); // an issuer out of reach now is tried again next request
    return keys;
  };

  return async (request) => {
    const token = bearerTokenOf(request);
    if (token === undefined || token.split(".").length !== 3) return null;
    let loaded;
    try {
      loaded = await keySet();
    } catch (err) {
      throw new AuthUnavailable(`the token issuer's keys cannot be fetched: ${errorText(err)}`, { cause: err });
    }
    const { jose, getKey } = loaded;
    let payload: JWTPayload;
    try {
      ({ payload } = await jose.jwtVerify(token, async (header, input) => {
        try {
          return await getKey(header, input);
        } catch (err) {
          if (isTokenFault(jose, err)) throw err;
          throw new AuthUnavailable(`the token issuer's keys cannot be fetched: ${errorText(err)}`, { cause: err });
        }
      }, {
        issuer,
        algorithms,
        clockTolerance,
        ...(options.now ? { currentDate: new Date(options.now()) } : {}),
      }));
    } catch (err) {
      if (err instanceof AuthUnavailable) throw err;
      return null;
    }
    if (!audienceMatches(payload, audiences)) return null;
    if (typeof payload.sub !== "string" || payload.sub === "") return null;
    const roles = rolesClaims.flatMap((claim) => rolesIn(payload[claim]));
    const principal: Principal = { id: payload.sub, roles, claims: payload as Record<string, unknown> };
    return principal;
  };
}

/** `aud` names an accepted audience; a token without `aud` may name it in `client_id` (Cognito access tokens). */
function audienceMatches(payload: JWTPayload, audiences: readonly string[]): boolean {
  if (payload.aud !== undefined) {
    const named = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
    return named.some((a) => audiences.includes(a));
  }
  return typeof payload.client_id === "string" && audiences.includes(payload.client_id);
}

function rolesIn(value: unknown): string[] {
  if (typeof value === "string") return value.split(" ").filter(Boolean);
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === "string");
  return [];
}

/** Errors that say the token is bad (401), as opposed to the key set being out of reach (503). */
function isTokenFault(jose: typeof import("jose"), err: unknown): boolean {
  const e = jose.errors;
  return (
    err instanceof e.JWKSNoMatchingKey ||
    err instanceof e.JWKSMultipleMatchingKeys ||
    err instanceof e.JOSENotSupported ||
    err instanceof e.JOSEAlgNotAllowed ||
    err instanceof e.JWKInvalid ||
    err instanceof e.JWSInvalid
  );
}

/** The issuer's `jwks_uri` from its discovery document; `<issuer>/.well-known/jwks.json` where it has none. */
async function discoverJwksUrl(issuer: string, timeoutMs: number): Promise<string> {
  const base = issuer.replace(/\/+$/, "");
  const response = await fetch(`${base}/.well-known/openid-configuration`, {
    headers: { accept: "application/json" },
    signal: AbortSignal.timeout(timeoutMs),
  });
  if (response.status === 404) return `${base}/.well-known/jwks.json`;
  if (!response.ok) throw new Error(`the issuer's discovery document answered ${response.status}`);
  const document = (await response.json()) as { jwks_uri?: unknown };
  if (typeof document.jwks_uri !== "string") throw new Error("the issuer's discovery document has no jwks_uri");
  return document.jwks_uri;
}

function nonEmpty(value: unknown, what: string): string {
  if (typeof value !== "string" || value === "") throw new Error(`jwtAuthenticator: ${what} must be a non-empty string`);
  return value;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
