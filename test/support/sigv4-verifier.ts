/**
 * A SigV4 verifier for tests, built on an independent implementation (AWS's own
 * `@smithy/signature-v4`, the SDK's signer): it recomputes each request's signature from what
 * arrived, as an `AWS_IAM` function URL does, and refuses a mismatch with 403 JSON.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { SignatureV4 } from "@smithy/signature-v4";
import type { MiddlewareHandler } from "hono";
import type { AwsCredentials } from "../../src/client/index.ts";

class NodeSha256 {
  #hash: ReturnType<typeof createHash> | ReturnType<typeof createHmac>;
  constructor(secret?: string | Uint8Array) {
    this.#hash = secret === undefined ? createHash("sha256") : createHmac("sha256", secret);
  }
  update(data: string | Uint8Array): void {
    this.#hash.update(data);
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.#hash.digest());
  }
}

export const SIGV4_AUTH = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$/;


/**
 * Verifies SigV4 as AWS does for an `AWS_IAM` function URL (service `lambda`): the credential
 * scope, the time (±5 min), the payload hash, and the signature recomputed over exactly the
 * signed headers. 403 JSON otherwise. `verdicts` gets one line per request, `method path → verdict`.
 */
export function sigv4Verifier(credentials: AwsCredentials, expectedRegion: string, verdicts: string[] = []): MiddlewareHandler {
  // The session token is checked apart, and signed as the header that arrived (the signer would
  // otherwise put the expected one in its place).
  const keys = { accessKeyId: credentials.accessKeyId, secretAccessKey: credentials.secretAccessKey };
  const signer = new SignatureV4({ credentials: keys, region: expectedRegion, service: "lambda", sha256: NodeSha256 as never, applyChecksum: false });
  return async (c, next) => {
    const where = `${c.req.method} ${new URL(c.req.url).pathname}`;
    const deny = (why: string) => {
      verdicts.push(`${where} → denied: ${why}`);
      return c.json({ error: `signature refused: ${why}`, code: "invalid_signature" }, 403);
    };
    const auth = c.req.header("authorization") ?? "";
    const m = SIGV4_AUTH.exec(auth);
    if (!m) return deny("no SigV4 Authorization");
    const [, keyId, day, region, service, signedHeaders, signature] = m as unknown as string[];
    if (keyId !== credentials.accessKeyId) return deny("unknown key");
    if ((c.req.header("x-amz-security-token") ?? "") !== (credentials.sessionToken ?? "")) return deny("session token");
    if (region !== expectedRegion || service !== "lambda") return deny(`scope ${region}/${service}`);
    const amzDate = c.req.header("x-amz-date") ?? "";
    const at = Date.parse(amzDate.replace(/^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/, "$1-$2-$3T$4:$5:$6Z"));
    if (!Number.isFinite(at) || Math.abs(Date.now() - at) > 5 * 60_000 || amzDate.slice(0, 8) !== day) return deny("stale date");
    const names = signedHeaders!.split(";");
    if (!names.includes("host") || !names.includes("x-amz-date")) return deny("host and date must be signed");
    const body = Buffer.from(await c.req.arrayBuffer());
    if (createHash("sha256").update(body).digest("hex") !== c.req.header("x-amz-content-sha256")) return deny("payload hash");
    const url = new URL(c.req.url);
    const query: Record<string, string | string[]> = {};
    for (const [k, v] of url.searchParams) {
      const prev = query[k];
      query[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
    }
    const headers = Object.fromEntries(names.map((n) => [n, c.req.header(n) ?? ""]));
    const expected = (await signer.sign(
      { method: c.req.method, protocol: url.protocol, hostname: url.hostname, port: Number(url.port), path: url.pathname, query, headers, body } as never,
      { signingDate: new Date(at), signableHeaders: new Set(names) },
    )) as { headers: Record<string, string> };
    const want = SIGV4_AUTH.exec(expected.headers.authorization ?? "")?.[6] ?? "";
    if (want.length !== signature!.length || !timingSafeEqual(Buffer.from(want), Buffer.from(signature!))) return deny("signature");
    verdicts.push(`${where} → verified`);
    await next();
  };
}
