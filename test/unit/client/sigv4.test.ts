/**
 * SigV4 signing in the client, checked by a verifier built on an independent implementation
 * (AWS's own `@smithy/signature-v4`, the SDK's signer): it recomputes each request's signature
 * from what arrived, as an `AWS_IAM` function URL does, and refuses a mismatch. The signer
 * (`aws4fetch`) also reproduces the AWS SigV4 test-suite vectors.
 */
import { createHash } from "node:crypto";
import { AwsV4Signer } from "aws4fetch";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, HarnessHttpError, type AwsCredentials, type HarnessClient } from "../../../src/client/index.ts";
import { sigv4Signer } from "../../../src/client/sigv4.ts";
import type { ConversationRecord } from "../../../src/protocol/records.ts";
import { sigv4Verifier } from "../../support/sigv4-verifier.ts";
import { snapshot, startTestServer, type TestServer } from "../../support/test-server.ts";

const REGION = "eu-west-1";
const CREDS: AwsCredentials = {
  accessKeyId: "AKIAHARNESSTEST00001",
  secretAccessKey: "harness/test/secret/key/0000000000000000",
  sessionToken: "session-token-of-a-role",
};

/** What the verifier saw: one line per request, `method path → verdict`. */
const verdicts: string[] = [];

let h: TestServer;
beforeAll(async () => {
  h = await startTestServer({ middleware: [sigv4Verifier(CREDS, REGION, verdicts)], maxRequestWaitMs: 5_000 });
});
afterAll(async () => {
  await h?.close();
});

const user = (body: string) => ({ kind: "user" as const, body });
let seq = 0;
const fresh = () => `parent:call-${++seq}`; // a child-style instance: ':' is encoded in the path

function signedClient(extra: Partial<Parameters<typeof createClient>[0]> = {}): HarnessClient {
  return createClient({ baseUrl: h.url, sigv4: { credentials: CREDS, region: REGION }, ...extra });
}

async function refusal(work: Promise<unknown>): Promise<{ status: number; code: string }> {
  const err = await work.then(() => undefined, (e: unknown) => e);
  if (!(err instanceof HarnessHttpError)) return { status: 0, code: `no HarnessHttpError: ${String(err)}` };
  return { status: err.status, code: err.code };
}

async function collect(records: AsyncIterable<ConversationRecord>): Promise<ConversationRecord[]> {
  const out: ConversationRecord[] = [];
  for await (const r of records) out.push(r);
  return out;
}

describe("the signer", () => {
  it("reproduces the AWS SigV4 test-suite vectors (get-vanilla, post-vanilla)", async () => {
    const vector = { accessKeyId: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY" };
    const common = { url: "https://example.amazonaws.com/", ...vector, service: "service", region: "us-east-1", datetime: "20150830T123600Z" };
    const get = await new AwsV4Signer({ method: "GET", ...common }).sign();
    expect(get.headers.get("authorization")).toBe(
      "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, " +
        "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
    );
    const post = await new AwsV4Signer({ method: "POST", ...common }).sign();
    expect(post.headers.get("authorization")).toMatch(/Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b$/);
  });

  it("signs for lambda in the function URL's region, with the payload hash and session token signed", async () => {
    const sign = sigv4Signer({ credentials: CREDS }, () => new Date("2026-12-01T06:00:00Z"));
    const headers = await sign({
      method: "POST",
      url: "https://abcdefghij0123456789.lambda-url.ap-southeast-2.on.aws/agents/a/w?wait=true",
      headers: new Headers({ "content-type": "application/json" }),
      body: '{"kind":"user","body":"hi"}',
    });
    expect(headers.get("authorization")).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIAHARNESSTEST00001\/20261201\/ap-southeast-2\/lambda\/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token, Signature=[0-9a-f]{64}$/,
    );
    expect(headers.get("x-amz-content-sha256")).toBe(createHash("sha256").update('{"kind":"user","body":"hi"}').digest("hex"));
    expect(headers.get("x-amz-security-token")).toBe(CREDS.sessionToken);
    expect(headers.get("content-type")).toBe("application/json");
  });
});

describe("the client against a SigV4 verifier", () => {
  it("signs dispatch, dispatchAndWait, steer and the streaming GET, each verified", async () => {
    const client = signedClient();
    const i = fresh();
    verdicts.length = 0;
    const ids = await client.dispatch("assistant", i, user("hello"));
    const settled = await client.dispatchAndWait("assistant", i, user("again"), { dispatchId: `d-${i}` });
    expect(settled.status).toBe("succeeded");
    expect(await refusal(client.steer("assistant", i, "shorter"))).toEqual({ status: 409, code: "no_run_in_flight" });
    const records = await collect(client.stream("assistant", i, { session: "default" }));
    expect(records.filter((r) => r.kind === "submission_settled").map((r) => r.submissionId)).toEqual([ids.submissionId, `d-${i}`]);
    const resumed = await collect(client.stream("assistant", i, { after: records[2]!.id }));
    expect(resumed).toEqual(records.slice(3));
    const path = `/agents/assistant/${encodeURIComponent(i)}`;
    // Each stream reads to the end, then reconnects once (signed afresh) to get the idle 204.
    expect(verdicts).toEqual([
      `POST ${path} → verified`,
      `POST ${path} → verified`,
      `POST ${path}/steer → verified`,
      ...Array(4).fill(`GET ${path} → verified`),
    ]);
  });

  it("refuses an unsigned request, a wrong secret and a stale signature, storing nothing", async () => {
    const before = await snapshot(h.store);
    const i = fresh();
    const unsigned = createClient({ baseUrl: h.url });
    expect(await refusal(unsigned.dispatch("assistant", i, user("hi")))).toEqual({ status: 403, code: "invalid_signature" });
    const wrong = signedClient({ sigv4: { credentials: { ...CREDS, secretAccessKey: "not-the-secret" }, region: REGION } });
    expect(await refusal(wrong.dispatch("assistant", i, user("hi")))).toEqual({ status: 403, code: "invalid_signature" });
    expect(await refusal(collect(wrong.stream("assistant", i)))).toEqual({ status: 403, code: "invalid_signature" });
    const otherRegion = signedClient({ sigv4: { credentials: CREDS, region: "us-east-1" } });
    expect(await refusal(otherRegion.dispatch("assistant", i, user("hi")))).toEqual({ status: 403, code: "invalid_signature" });
    expect(await snapshot(h.store)).toBe(before);
    expect(verdicts.at(-1)).toMatch(/denied: scope us-east-1\/lambda/);
  });

  it("refuses a request tampered with after signing: body, path, query, a signed header", async () => {
    const before = await snapshot(h.store);
    const i = fresh();
    const tampered = (change: (url: string, init: RequestInit) => [string, RequestInit]) =>
      signedClient({ fetch: (input, init) => globalThis.fetch(...change(String(input), init ?? {})) });
    const withHeader = (init: RequestInit, name: string, value: string) => {
      const headers = new Headers(init.headers);
      headers.set(name, value);
      return { ...init, headers };
    };
    const cases: Array<[string, (url: string, init: RequestInit) => [string, RequestInit]]> = [
      ["body", (url, init) => [url, { ...init, body: String(init.body).replace("hi", "rm -rf") }]],
      [
        "body with its hash recomputed",
        (url, init) => {
          const body = String(init.body).replace("hi", "rm -rf");
          return [url, { ...withHeader(init, "x-amz-content-sha256", createHash("sha256").update(body).digest("hex")), body }];
        },
      ],
      ["path", (url, init) => [url.replace(encodeURIComponent(i), "victim"), init]],
      ["query", (url, init) => [`${url}?wait=true`, init]],
      [
        "a signed header (the date, one second on)",
        (url, init) => {
          const date = new Headers(init.headers).get("x-amz-date")!;
          const at = Date.parse(date.replace(/^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/, "$1-$2-$3T$4:$5:$6Z")) + 1_000;
          return [url, withHeader(init, "x-amz-date", new Date(at).toISOString().replace(/[:-]|\.\d{3}/g, ""))];
        },
      ],
      ["the session token", (url, init) => [url, withHeader(init, "x-amz-security-token", "another-role")]],
    ];
    for (const [what, change] of cases) {
      verdicts.length = 0;
      expect(await refusal(tampered(change).dispatch("assistant", i, user("hi"))), `${what}: ${verdicts.join("; ")}`).toEqual({ status: 403, code: "invalid_signature" });
    }
    // The streaming GET: a changed offset or session is refused too.
    await signedClient().dispatchAndWait("assistant", i, user("to read"));
    const moved = tampered((url, init) => [url.includes("?") ? `${url}&session=other` : `${url}?session=other`, init]);
    expect(await refusal(collect(moved.stream("assistant", i))), "stream query").toEqual({ status: 403, code: "invalid_signature" });
    const accept = tampered((url, init) => [url, withHeader(init, "accept", "application/json")]);
    expect(await refusal(collect(accept.stream("assistant", i))), "stream header").toEqual({ status: 403, code: "invalid_signature" });
    const after = JSON.parse(await snapshot(h.store)) as { byStatus: { settled: unknown[] } };
    expect(after.byStatus.settled.length, "only the honest dispatch ran").toBe((JSON.parse(before) as typeof after).byStatus.settled.length + 1);
  });

  it("asks a credentials provider on every request (so rotated credentials are used)", async () => {
    let asked = 0;
    const client = createClient({
      baseUrl: h.url,
      sigv4: {
        region: REGION,
        credentials: async () => {
          asked++;
          return CREDS;
        },
      },
    });
    const i = fresh();
    await client.dispatchAndWait("assistant", i, user("hi"));
    await collect(client.stream("assistant", i));
    expect(asked, "one POST, then the stream's GET and its reconnect to the idle 204").toBe(3);
  });

  it("in Node, signs with the default provider chain (here: the environment), loaded on first use", async () => {
    const saved = { ...process.env };
    Object.assign(process.env, {
      AWS_ACCESS_KEY_ID: CREDS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: CREDS.secretAccessKey,
      AWS_SESSION_TOKEN: CREDS.sessionToken,
      AWS_REGION: REGION,
    });
    try {
      const client = createClient({ baseUrl: h.url, sigv4: true });
      const settled = await client.dispatchAndWait("assistant", fresh(), user("from the chain"));
      expect(settled.status).toBe("succeeded");
      expect(verdicts.at(-1)).toMatch(/verified$/);
    } finally {
      for (const k of ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION"]) {
        if (saved[k] === undefined) delete process.env[k];
        else process.env[k] = saved[k];
      }
    }
  });

  it("keeps the client light: no AWS SDK module is imported statically", async () => {
    const { readFileSync, readdirSync } = await import("node:fs");
    const dir = new URL("../../../src/client/", import.meta.url);
    for (const file of readdirSync(dir).filter((f) => f.endsWith(".ts"))) {
      const text = readFileSync(new URL(file, dir), "utf8");
      expect(text, file).not.toMatch(/from "@aws-sdk|from "@smithy|import\("@aws-sdk/);
    }
  });
});
