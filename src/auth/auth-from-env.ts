/**
 * Auth configured without code (ADR 0043): `npm start`, `harness dev`, the examples and the Lambda
 * http function read the same variables.
 */
import type { Authorize } from "../protocol/principal.ts";
import { anyOf, bearerTokenAuthenticator, type Authenticator } from "./authenticate.ts";
import { jwtAuthenticator } from "./jwt-authenticator.ts";
import { ownerPolicy } from "./owner-policy.ts";

/** The variables {@link authFromEnv} reads. */
export const AUTH_ENV = {
  /** Comma-separated tokens whose holder is the operator. */
  bearerToken: "HARNESS_BEARER_TOKEN",
  /** The OIDC issuer of users' tokens (turns JWT authentication on). */
  issuer: "AUTH_ISSUER",
  /** Comma-separated accepted audiences (an app client id): required with `AUTH_ISSUER`. */
  audience: "AUTH_AUDIENCE",
  /** The issuer's key set (default: from its discovery document, or `<issuer>/.well-known/jwks.json`). */
  jwksUrl: "AUTH_JWKS_URL",
  /** The claim naming the instance a user owns (default `sub`: each user their own instance). */
  ownerClaim: "AUTH_OWNER_CLAIM",
} as const;

/** What {@link authFromEnv} builds: who is calling, and the policy for what they may do. */
export interface EnvAuth {
  authenticate: Authenticator;
  authorize: Authorize;
  /** What is on, for a start-up line: e.g. `["operator token", "JWT from https://…"]`. */
  describe: string[];
  /** The issuer of users' tokens (`AUTH_ISSUER`), when set: MCP's protected-resource metadata names it. */
  authorizationServers?: string[];
}

/**
 * Auth from the environment: the operator's bearer token(s) (`HARNESS_BEARER_TOKEN`) and/or users'
 * JWTs (`AUTH_ISSUER` + `AUTH_AUDIENCE`, `AUTH_JWKS_URL`), with the owner policy
 * (`AUTH_OWNER_CLAIM`). Undefined when none is set: the server then has no authentication (bind it
 * to loopback). Throws a plain `Error` naming the variable for a half-made configuration.
 */
export function authFromEnv(env: Readonly<Record<string, string | undefined>>): EnvAuth | undefined {
  const read = (name: string) => (env[name] ?? "").trim();
  const list = (name: string) => read(name).split(",").map((t) => t.trim()).filter(Boolean);
  const tokens = list(AUTH_ENV.bearerToken);
  const issuer = read(AUTH_ENV.issuer);
  const audiences = list(AUTH_ENV.audience);
  const jwksUrl = read(AUTH_ENV.jwksUrl);
  const ownerClaim = read(AUTH_ENV.ownerClaim);
  if (issuer === "") {
    for (const name of [AUTH_ENV.audience, AUTH_ENV.jwksUrl, AUTH_ENV.ownerClaim]) {
      if (read(name) !== "") throw new Error(`${name} is set but ${AUTH_ENV.issuer} is not: set the issuer of your users' tokens too`);
    }
  } else if (audiences.length === 0) {
    throw new Error(`${AUTH_ENV.issuer} is set but ${AUTH_ENV.audience} is not: name the audience (your app client id) tokens must carry`);
  }
  const authenticators: Authenticator[] = [];
  const describe: string[] = [];
  if (tokens.length > 0) {
    authenticators.push(bearerTokenAuthenticator({ token: tokens }));
    describe.push("operator token");
  }
  if (issuer !== "") {
    try {
      authenticators.push(jwtAuthenticator({ issuer, audience: audiences, ...(jwksUrl === "" ? {} : { jwksUrl }) }));
    } catch (err) {
      throw new Error(`${AUTH_ENV.issuer}/${AUTH_ENV.jwksUrl}: ${(err as Error).message}`);
    }
    describe.push(`JWT from ${issuer}`);
  }
  if (authenticators.length === 0) return undefined;
  return {
    authenticate: authenticators.length === 1 ? authenticators[0]! : anyOf(...authenticators),
    // "sub" is the principal's id already: the default.
    authorize: ownerPolicy(ownerClaim === "" || ownerClaim === "sub" ? {} : { ownerClaim }),
    describe,
    ...(issuer !== "" ? { authorizationServers: [issuer] } : {}),
  };
}
