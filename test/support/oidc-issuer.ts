/**
 * A token issuer for tests: an OIDC discovery document and a JWKS served over HTTP on loopback,
 * RSA and EC keys to sign with, a switch that takes the key set down, and a count of key-set
 * fetches. Stands in for Cognito / Auth0 / any OIDC provider.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, SignJWT, type JWK, type JWTPayload } from "jose";

export type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>;

export interface OidcIssuer {
  /** The issuer URL (`iss`), `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** An RS256 key published as `k1`, and an ES256 key not published until `publish(k2)`. */
  readonly k1: KeyPair;
  readonly k2: KeyPair;
  /** The keys the set serves now. */
  published: JWK[];
  /** While true, every request answers 503. */
  down: boolean;
  /** Key-set fetches so far. */
  jwksFetches: number;
  /** Publishes `key` under `kid` beside the others. */
  publish(key: KeyPair, kid: string, alg: string): Promise<void>;
  /** A token for `audience` with `claims` (default `sub: "alice"`), signed by k1 unless told. */
  sign(audience: string, claims?: JWTPayload, options?: { key?: KeyPair; kid?: string; alg?: string; expiresIn?: string | number }): Promise<string>;
  close(): Promise<void>;
}

export async function startOidcIssuer(): Promise<OidcIssuer> {
  const k1 = await generateKeyPair("RS256", { extractable: true });
  const k2 = await generateKeyPair("ES256", { extractable: true });
  let server!: Server;
  const issuer: OidcIssuer = {
    url: "",
    k1,
    k2,
    published: [],
    down: false,
    jwksFetches: 0,
    async publish(key, kid, alg) {
      issuer.published = [...issuer.published, { ...(await exportJWK(key.publicKey)), kid, alg, use: "sig" }];
    },
    async sign(audience, claims = {}, { key = k1, kid = "k1", alg = "RS256", expiresIn = "5m" } = {}) {
      return new SignJWT({ sub: "alice", aud: audience, ...claims })
        .setProtectedHeader({ alg, kid })
        .setIssuer((claims.iss as string | undefined) ?? issuer.url)
        .setIssuedAt()
        .setExpirationTime(expiresIn)
        .sign(key.privateKey);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  server = createServer((req, res) => {
    if (issuer.down) return void res.writeHead(503).end();
    if (req.url === "/.well-known/openid-configuration") {
      return void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ issuer: issuer.url, jwks_uri: `${issuer.url}/keys` }));
    }
    if (req.url === "/keys") {
      issuer.jwksFetches++;
      return void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ keys: issuer.published }));
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  (issuer as { url: string }).url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  await issuer.publish(k1, "k1", "RS256");
  return issuer;
}
