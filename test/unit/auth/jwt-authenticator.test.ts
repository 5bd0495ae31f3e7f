/**
 * jwtAuthenticator against a real key set served over HTTP on loopback (an OIDC issuer stand-in):
 * every hostile token the issue names is refused, a key set out of reach is a 503 (never a pass),
 * rotation and Cognito access tokens work.
 */
import { exportSPKI, SignJWT } from "jose";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { jwtAuthenticator, type JwtAuthenticatorOptions } from "../../../src/auth/jwt-authenticator.ts";
import { isHarnessError } from "../../../src/errors.ts";
import { startOidcIssuer, type OidcIssuer } from "../../support/oidc-issuer.ts";

let oidc: OidcIssuer;
let issuer: string;
beforeAll(async () => {
  oidc = await startOidcIssuer();
  issuer = oidc.url;
});
afterAll(() => oidc.close());

beforeEach(() => {
  oidc.published = oidc.published.slice(0, 1);
  oidc.jwksFetches = 0;
  oidc.down = false;
});

const AUDIENCE = "my-app";
const token = (claims = {}, options: Parameters<OidcIssuer["sign"]>[2] = {}) => oidc.sign(AUDIENCE, claims, options);

function request(bearer?: string): Request {
  return new Request("http://harness.test/agents/a/b", bearer === undefined ? {} : { headers: { authorization: `Bearer ${bearer}` } });
}

const authenticator = (options: Partial<JwtAuthenticatorOptions> = {}) => jwtAuthenticator({ issuer, audience: AUDIENCE, ...options });

function base64url(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString("base64url");
}

describe("jwtAuthenticator", () => {
  it("accepts a token signed by the issuer's key: the principal is its sub, roles and claims (key set found by discovery)", async () => {
    const authenticate = authenticator();
    const principal = await authenticate(request(await token({ roles: ["approver"], tenant: "acme" })));
    expect(principal).toMatchObject({ id: "alice", roles: ["approver"], claims: { tenant: "acme", sub: "alice" } });
    expect(oidc.jwksFetches).toBe(1);
    await authenticate(request(await token()));
    expect(oidc.jwksFetches, "the key set is cached").toBe(1);
  });

  it("refuses (null, a 401) no token, a malformed one, and each hostile token", async () => {
    const authenticate = authenticator();
    const refused: Record<string, string | undefined> = {
      "no header": undefined,
      "not a JWT": "opaque-token",
      expired: await token({}, { expiresIn: Math.floor(Date.now() / 1000) - 3600 }),
      "wrong audience": await token({ aud: "someone-else" }),
      "wrong issuer": await token({ iss: "https://evil.example.com" }),
      "unknown kid": await token({}, { kid: "nobody" }),
      "no sub": await new SignJWT({ aud: AUDIENCE }).setProtectedHeader({ alg: "RS256", kid: "k1" }).setIssuer(issuer).setExpirationTime("5m").sign(oidc.k1.privateKey),
      "alg none": `${base64url({ alg: "none", kid: "k1" })}.${base64url({ sub: "alice", aud: AUDIENCE, iss: issuer, exp: Math.floor(Date.now() / 1000) + 300 })}.`,
      "HS256 with the public key as secret": await new SignJWT({ sub: "alice", aud: AUDIENCE })
        .setProtectedHeader({ alg: "HS256", kid: "k1" })
        .setIssuer(issuer)
        .setExpirationTime("5m")
        .sign(new TextEncoder().encode(await exportSPKI(oidc.k1.publicKey))),
      "signed by another key under the known kid": await token({}, { key: oidc.k2, alg: "ES256" }),
    };
    for (const [what, bearer] of Object.entries(refused)) {
      expect(await authenticate(request(bearer)), what).toBeNull();
    }
  });

  it("tolerates the configured clock skew, no more", async () => {
    const justExpired = await token({}, { expiresIn: Math.floor(Date.now() / 1000) - 30 });
    expect(await authenticator()(request(justExpired)), "30 s late, within the default 60 s").not.toBeNull();
    expect(await authenticator({ clockToleranceSec: 5 })(request(justExpired)), "30 s late, past 5 s").toBeNull();
  });

  it("follows a key rotation: a new kid fetches the set again", async () => {
    const authenticate = authenticator({ refetchCooldownMs: 0 });
    expect(await authenticate(request(await token()))).not.toBeNull();
    await oidc.publish(oidc.k2, "k2", "ES256");
    expect(await authenticate(request(await token({}, { key: oidc.k2, kid: "k2", alg: "ES256" })))).toMatchObject({ id: "alice" });
    expect(oidc.jwksFetches).toBe(2);
  });

  it("a key set out of reach is auth_unavailable (503), never a pass; cached keys keep serving until they age out", async () => {
    oidc.down = true;
    const cold = authenticator({ jwksUrl: `${issuer}/keys` });
    const failed = await Promise.resolve(cold(request(await token()))).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(isHarnessError(failed, "auth_unavailable"), String(failed)).toBe(true);

    oidc.down = false;
    const warm = authenticator({ jwksUrl: `${issuer}/keys`, cacheMaxAgeMs: 0 });
    expect(await warm(request(await token()))).not.toBeNull();
    oidc.down = true;
    const stale = await Promise.resolve(warm(request(await token()))).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(isHarnessError(stale, "auth_unavailable"), "a stale set that cannot be refreshed").toBe(true);

    oidc.down = false;
    const cached = authenticator({ jwksUrl: `${issuer}/keys` });
    expect(await cached(request(await token()))).not.toBeNull();
    oidc.down = true;
    expect(await cached(request(await token())), "keys fetched a moment ago still verify").toMatchObject({ id: "alice" });
  });

  it("reads a Cognito access token's client_id where it has no aud", async () => {
    const access = await token({ aud: undefined, client_id: AUDIENCE, token_use: "access", "cognito:groups": ["operator"] });
    expect(await authenticator()(request(access))).toMatchObject({ id: "alice", roles: ["operator"] });
    const other = await token({ aud: undefined, client_id: "another-client", token_use: "access" });
    expect(await authenticator()(request(other))).toBeNull();
  });

  it("checks its options when built: symmetric algorithms, an empty issuer or audience, bad durations", () => {
    expect(() => jwtAuthenticator({ issuer, audience: AUDIENCE, algorithms: ["HS256"] })).toThrow(/asymmetric/);
    expect(() => jwtAuthenticator({ issuer: "", audience: AUDIENCE })).toThrow(/issuer/);
    expect(() => jwtAuthenticator({ issuer, audience: [] })).toThrow(/audience/);
    expect(() => jwtAuthenticator({ issuer, audience: AUDIENCE, timeoutMs: -1 })).toThrow(/timeoutMs/);
    expect(() => jwtAuthenticator({ issuer: "not a url", audience: AUDIENCE })).toThrow();
  });
});
