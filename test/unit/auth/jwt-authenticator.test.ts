/**
 * jwtAuthenticator against a real key set served over HTTP on loopback (an OIDC issuer stand-in):
 * every hostile token the issue names is refused, a key set out of reach is a 503 (never a pass),
 * rotation and Cognito access tokens work.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, type JWK, type JWTPayload } from "jose";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { jwtAuthenticator, type JwtAuthenticatorOptions } from "../../../src/auth/jwt-authenticator.ts";
import { isHarnessError } from "../../../src/errors.ts";

type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>;

let server: Server;
let issuer: string;
let k1: KeyPair;
let k2: KeyPair;
let published: JWK[] = [];
let jwksFetches = 0;
let down = false;

beforeAll(async () => {
  k1 = await generateKeyPair("RS256", { extractable: true });
  k2 = await generateKeyPair("ES256", { extractable: true });
  server = createServer((req, res) => {
    if (down) {
      res.writeHead(503).end();
      return;
    }
    if (req.url === "/.well-known/openid-configuration") {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ issuer, jwks_uri: `${issuer}/keys` }));
      return;
    }
    if (req.url === "/keys") {
      jwksFetches++;
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ keys: published }));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

beforeEach(async () => {
  published = [{ ...(await exportJWK(k1.publicKey)), kid: "k1", alg: "RS256", use: "sig" }];
  jwksFetches = 0;
  down = false;
});

const AUDIENCE = "my-app";

async function token(claims: JWTPayload = {}, { key = k1, kid = "k1", alg = "RS256", expiresIn = "5m" as string | number } = {}): Promise<string> {
  return new SignJWT({ sub: "alice", aud: AUDIENCE, ...claims })
    .setProtectedHeader({ alg, kid })
    .setIssuer((claims.iss as string | undefined) ?? issuer)
    .setIssuedAt()
    .setExpirationTime(expiresIn)
    .sign(key.privateKey);
}

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
    expect(jwksFetches).toBe(1);
    await authenticate(request(await token()));
    expect(jwksFetches, "the key set is cached").toBe(1);
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
      "no sub": await new SignJWT({ aud: AUDIENCE }).setProtectedHeader({ alg: "RS256", kid: "k1" }).setIssuer(issuer).setExpirationTime("5m").sign(k1.privateKey),
      "alg none": `${base64url({ alg: "none", kid: "k1" })}.${base64url({ sub: "alice", aud: AUDIENCE, iss: issuer, exp: Math.floor(Date.now() / 1000) + 300 })}.`,
      "HS256 with the public key as secret": await new SignJWT({ sub: "alice", aud: AUDIENCE })
        .setProtectedHeader({ alg: "HS256", kid: "k1" })
        .setIssuer(issuer)
        .setExpirationTime("5m")
        .sign(new TextEncoder().encode(await exportSPKI(k1.publicKey))),
      "signed by another key under the known kid": await token({}, { key: k2, alg: "ES256" }),
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
    published = [...published, { ...(await exportJWK(k2.publicKey)), kid: "k2", alg: "ES256", use: "sig" }];
    expect(await authenticate(request(await token({}, { key: k2, kid: "k2", alg: "ES256" })))).toMatchObject({ id: "alice" });
    expect(jwksFetches).toBe(2);
  });

  it("a key set out of reach is auth_unavailable (503), never a pass; cached keys keep serving until they age out", async () => {
    down = true;
    const cold = authenticator({ jwksUrl: `${issuer}/keys` });
    const failed = await Promise.resolve(cold(request(await token()))).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(isHarnessError(failed, "auth_unavailable"), String(failed)).toBe(true);

    down = false;
    const warm = authenticator({ jwksUrl: `${issuer}/keys`, cacheMaxAgeMs: 0 });
    expect(await warm(request(await token()))).not.toBeNull();
    down = true;
    const stale = await Promise.resolve(warm(request(await token()))).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(isHarnessError(stale, "auth_unavailable"), "a stale set that cannot be refreshed").toBe(true);

    down = false;
    const cached = authenticator({ jwksUrl: `${issuer}/keys` });
    expect(await cached(request(await token()))).not.toBeNull();
    down = true;
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
