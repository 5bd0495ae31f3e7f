/**
 * The multitenant example's own token issuer, for development only. An ES256 key pair is made at
 * start; its public key is served as a key set (`/.well-known/jwks.json`) with an OIDC discovery
 * document, and `POST /dev/token {"tenant", "user"}` signs a token whose `tenant` claim names the
 * user's tenant. The server verifies these tokens exactly as it would a real issuer's (Cognito,
 * Auth0, Keycloak…): `jwtAuthenticator` fetching this very server's key set over HTTP. Anyone who
 * reaches the port can mint a token, so the example listens on loopback only.
 */
import type { Hono } from "hono";
import { exportJWK, generateKeyPair, SignJWT } from "jose";

/** The audience (`aud`) of the tokens this issuer signs and the server accepts. */
export const DEV_AUDIENCE = "multitenant-example";
/** How long a minted token is valid, seconds. */
export const DEV_TOKEN_TTL_SEC = 3600;
const USER_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** A dev issuer: mounts its routes on an app whose URL is its issuer URL. */
export interface DevIssuer {
  /** Mounts the discovery document, the key set and `POST /dev/token`; `issuerUrl()` is the server's URL once it listens. */
  mount(app: Hono, issuerUrl: () => string): void;
}

/** Makes the key pair. `isTenant` decides which tenants a token may name (no token for an unknown one). */
export async function createDevIssuer(isTenant: (id: string) => boolean): Promise<DevIssuer> {
  const { publicKey, privateKey } = await generateKeyPair("ES256");
  // A new kid per start: a token of an earlier run is refused (its key is gone), not mis-verified.
  const kid = `dev-${Date.now().toString(36)}`;
  const jwk = { ...(await exportJWK(publicKey)), kid, alg: "ES256", use: "sig" };
  const invalid = (error: string) => ({ error, code: "invalid_request" });
  return {
    mount(app, issuerUrl) {
      app.get("/.well-known/openid-configuration", (c) =>
        c.json({ issuer: issuerUrl(), jwks_uri: `${issuerUrl()}/.well-known/jwks.json`, id_token_signing_alg_values_supported: ["ES256"] }),
      );
      app.get("/.well-known/jwks.json", (c) => c.json({ keys: [jwk] }));
      app.post("/dev/token", async (c) => {
        let body: unknown;
        try {
          body = await c.req.json();
        } catch {
          return c.json(invalid('the body must be JSON: {"tenant": "acme", "user": "ann"}'), 400);
        }
        const { tenant, user } = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>;
        if (typeof tenant !== "string" || !isTenant(tenant)) return c.json(invalid(`unknown tenant ${JSON.stringify(tenant ?? null)}`), 400);
        if (typeof user !== "string" || !USER_ID.test(user)) return c.json(invalid("user must be 1 to 64 characters of A-Z a-z 0-9 . _ -"), 400);
        const token = await new SignJWT({ tenant })
          .setProtectedHeader({ alg: "ES256", kid, typ: "JWT" })
          .setIssuer(issuerUrl())
          .setAudience(DEV_AUDIENCE)
          .setSubject(user)
          .setIssuedAt()
          .setExpirationTime(`${DEV_TOKEN_TTL_SEC}s`)
          .sign(privateKey);
        return c.json({ token, tenant, user, expiresIn: DEV_TOKEN_TTL_SEC }, 201);
      });
    },
  };
}
