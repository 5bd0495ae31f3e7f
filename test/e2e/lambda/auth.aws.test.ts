/**
 * Who may do what in the serverless shape (ADR 0043, issue 34): the http function of
 * `src/lambda/` on the local cloud (DynamoDB Local, fauxqs SQS + S3) configured without code, as
 * the construct configures it: `AUTH_ISSUER` / `AUTH_AUDIENCE` naming a token issuer on loopback
 * (`test/support/oidc-issuer.ts`, standing in for Cognito) and `HARNESS_BEARER_TOKEN` for the
 * operator. The matrix of principals (alice, bob, the operator, anonymous) × the main routes ×
 * own/other instance answers as the default policy says, and a refusal leaves the store as it was
 * (compared item by item before and after). Beside it: a key set out of reach is 503
 * `auth_unavailable`, the callback route keeps its own token, and a child runs as its parent's
 * principal. The embedded equivalent is `test/unit/http/caller.test.ts`.
 */
import { createHash } from "node:crypto";
import { fileURLToPath } from "node:url";
import { ListObjectsV2Command } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { childAddress } from "../../../src/conversation/task-names.ts";
import { createS3Client } from "../../../src/dynamodb/index.ts";
import type { UserMessagePayload } from "../../../src/protocol/records.ts";
import { startOidcIssuer, type OidcIssuer } from "../../support/oidc-issuer.ts";
import { uid } from "../../support/local-cloud-http.ts";
import { useLocalCloud } from "../../support/local-cloud-suite.ts";

const agentsModule = fileURLToPath(new URL("../../support/local-cloud-fixtures/subagent-agents.ts", import.meta.url));
const AUDIENCE = "harness-local-cloud";
const OPERATOR_TOKEN = "operator-token-of-the-local-cloud";
const CALLBACK_TOKEN = "callback-token-of-the-local-cloud";

let issuer: OidcIssuer;
// Registered before the local cloud's hook: the issuer's URL is in the http function's environment.
beforeAll(async () => {
  issuer = await startOidcIssuer();
});
afterAll(async () => {
  await issuer?.close();
});

const suite = useLocalCloud(() => ({
  agentsModule,
  // The chat page's files in the http function's asset (the construct's `chatPage`); the suite's own
  // function is told to serve none, a test's extra function to serve it.
  context: { "harness:chatPage": "true" },
  workers: 2,
  workerTimeoutMs: 20_000,
  streamMaxMs: 2_000,
  // Room for ?wait=true's 60 s: the function URL ends a request at this timeout, and the wait answers 3 s before it.
  httpTimeoutMs: 65_000,
  sweeperRateMs: false,
  env: { HARNESS_LEASE_MS: "3000" },
  // Only the http function authenticates; the workers run what it admitted.
  functionEnv: {
    http: {
      AUTH_ISSUER: issuer.url,
      AUTH_AUDIENCE: AUDIENCE,
      HARNESS_BEARER_TOKEN: OPERATOR_TOKEN,
      HARNESS_CALLBACK_TOKEN: CALLBACK_TOKEN,
      HARNESS_ALLOW_UNAUTHENTICATED: "",
      HARNESS_CHAT_PAGE: "",
    },
  },
}));

// Instances of this run (the table may hold earlier runs' items in a reused emulator).
const run = uid();
const ALICE = `alice-${run}`;
const BOB = `bob-${run}`;
const tokens: Record<string, string> = {};
const facts = { alice: { submission: "", record: "" }, bob: { submission: "", record: "" } };

beforeAll(async () => {
  tokens.alice = await issuer.sign(AUDIENCE, { sub: ALICE }, { expiresIn: "30m" });
  tokens.bob = await issuer.sign(AUDIENCE, { sub: BOB }, { expiresIn: "30m" });
  tokens.operator = OPERATOR_TOKEN;
  // Each user has a settled conversation in their own instance.
  for (const who of ["alice", "bob"] as const) {
    const instance = who === "alice" ? ALICE : BOB;
    const res = await call(who, "POST", `/agents/lead/${instance}?wait=true`, { kind: "user", body: `hello from ${who}` });
    expect(res.status, await res.clone().text()).toBe(200);
    const settled = (await res.json()) as { submissionId: string; conversationId: string; status: string };
    expect(settled.status).toBe("succeeded");
    facts[who] = { submission: settled.submissionId, record: (await suite.store.readRecords(settled.conversationId)).at(-1)!.id };
  }
}, 120_000);

function call(who: string | undefined, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
  const auth: Record<string, string> = who === undefined ? {} : { authorization: `Bearer ${tokens[who] ?? who}` };
  return fetch(`${suite.cloud.url}${path}`, {
    method,
    headers: { "content-type": "application/json", ...auth, ...headers },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
}

/** Uploads `text` as `who`; its digest. */
async function upload(who: string, text: string): Promise<string> {
  const res = await call(who, "POST", "/attachments", text, { "content-type": "text/plain" });
  expect(res.status, await res.clone().text()).toBe(201);
  return ((await res.json()) as { digest: string }).digest;
}

const SESSIONS = ["default", "s2", "forked-out", "forked-in", "imported", "nothing-here", "never-used"];

/** What the store holds for an instance: every session's submissions and records, item by item. */
async function fingerprint(instance: string): Promise<string> {
  const parts: unknown[] = [];
  for (const session of SESSIONS) {
    const key = { agent: "lead", instance, session };
    const submissions = await suite.store.listSessionSubmissions(key, { limit: 100 });
    let records: unknown[] = ["none"];
    try {
      records = await suite.store.readRecords((await suite.store.getConversation(key)).id);
    } catch (err) {
      if ((err as { code?: string }).code !== "conversation_not_found") throw err;
    }
    parts.push(session, submissions.map((s) => [s.id, s.status, s.attemptCount]), records);
  }
  return JSON.stringify(parts);
}

type Route = { name: string; method: string; path: (i: string) => string; body?: (i: string) => unknown; ok: number[] };
const instanceOf = (i: "alice" | "bob") => (i === "alice" ? ALICE : BOB);

/** Each route as it addresses user `i`'s instance. `ok` is what an allowed caller may get. */
const ROUTES: Route[] = [
  // With ?wait=true the operator's admission into bob's instance has settled before the next route's "before".
  { name: "dispatch", method: "POST", path: (i) => `/agents/lead/${i}?wait=true`, body: () => ({ kind: "user", body: "hi", session: "s2" }), ok: [200] },
  { name: "stream", method: "GET", path: (i) => `/agents/lead/${i}`, ok: [200, 204] },
  { name: "steer", method: "POST", path: (i) => `/agents/lead/${i}/steer`, body: () => ({ body: "x" }), ok: [409] },
  { name: "list submissions", method: "GET", path: (i) => `/agents/lead/${i}/submissions`, ok: [200] },
  { name: "cancel", method: "POST", path: (i) => `/agents/lead/${i}/submissions/${subOf(i)}/cancel`, ok: [409] },
  { name: "approve", method: "POST", path: (i) => `/agents/lead/${i}/submissions/${subOf(i)}/approvals/call-1`, body: () => ({ approved: true }), ok: [404, 409] },
  { name: "export", method: "GET", path: (i) => `/agents/lead/${i}/export`, ok: [200] },
  { name: "import", method: "POST", path: (i) => `/agents/lead/${i}/import?session=imported`, body: () => "not an export", ok: [400] },
  { name: "delete", method: "DELETE", path: (i) => `/agents/lead/${i}?session=never-used`, ok: [200] },
  // A fork reads its source and writes its target: each side is checked.
  { name: "fork out of it", method: "POST", path: (i) => `/agents/lead/${i}/fork`, body: (i) => ({ fromRecordId: recordOf(i), instance: i, session: "forked-out" }), ok: [201] },
  { name: "fork into it", method: "POST", path: () => `/agents/lead/${ALICE}/fork`, body: (i) => ({ fromRecordId: facts.alice.record, instance: i, session: "forked-in" }), ok: [201] },
];
const subOf = (instance: string) => (instance === ALICE ? facts.alice.submission : facts.bob.submission);
const recordOf = (instance: string) => (instance === ALICE ? facts.alice.record : facts.bob.record);

describe("local cloud: who may do what (AUTH_ISSUER + HARNESS_BEARER_TOKEN on the http function)", () => {
  for (const route of ROUTES) {
    it(`${route.name}: alice reaches her instance, not bob's (403, the store unchanged); the operator both; anonymous neither (401)`, { timeout: 60_000 }, async () => {
      suite.dumpLogsOnFailure();
      const send = (who: string | undefined, instance: string) => call(who, route.method, route.path(instance), route.body?.(instance));
      const bob = instanceOf("bob");

      const before = await fingerprint(bob);
      const refused = await send("alice", bob);
      expect(refused.status, `${route.name} on bob's instance`).toBe(403);
      expect(((await refused.json()) as { code: string }).code).toBe("forbidden");
      const anonymous = await send(undefined, bob);
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get("www-authenticate")).toBe('Bearer realm="harness"');
      await anonymous.body?.cancel();
      const forged = await send(tokens.bob!.slice(0, -4) + "AAAA", bob);
      expect(forged.status).toBe(401);
      await forged.body?.cancel();
      expect(await fingerprint(bob), "a refusal writes nothing").toBe(before);

      const mine = await send("alice", instanceOf("alice"));
      expect(route.ok, `${route.name} on alice's own instance: ${mine.status} ${await mine.clone().text()}`).toContain(mine.status);
      await mine.body?.cancel();

      const operator = await send("operator", bob);
      expect(route.ok, `${route.name} by the operator: ${operator.status}`).toContain(operator.status);
      await operator.body?.cancel();
    });
  }

  it("owned attachments (ADR 0046): bob uploads, alice reading his digest is 403 (directly, through his conversation, or by completing an upload of it); bob and the operator read it", { timeout: 60_000 }, async () => {
    suite.dumpLogsOnFailure();
    const bytes = `bob's note ${run}`;
    const digest = await upload("bob", bytes);
    for (const via of ["", `?agent=lead&instance=${BOB}`, `?agent=lead&instance=${ALICE}`]) {
      const res = await call("alice", "GET", `/attachments/${digest}${via}`);
      expect(res.status, `alice reads bob's digest${via}`).toBe(403);
      expect(((await res.json()) as { code: string }).code).toBe("forbidden");
    }
    // Naming an upload of his digest, without sending the bytes, makes her no uploader.
    const declared = await call("alice", "POST", "/attachments/uploads", { digest, mediaType: "text/plain", size: Buffer.byteLength(bytes) });
    expect(declared.status, await declared.clone().text()).toBe(201);
    const { uploadId } = (await declared.json()) as { uploadId: string };
    const completed = await call("alice", "POST", `/attachments/uploads/${uploadId}/complete`);
    expect(completed.status, await completed.clone().text()).toBe(200);
    expect((await call("alice", "GET", `/attachments/${digest}`)).status, "still bob's").toBe(403);
    expect(await suite.store.isAttachmentUploader(digest, ALICE)).toBe(false);

    const own = await call("bob", "GET", `/attachments/${digest}`);
    expect(own.status).toBe(200);
    expect(await own.text()).toBe(bytes);
    expect((await call("operator", "GET", `/attachments/${digest}`)).status).toBe(200);
    expect((await call(undefined, "GET", `/attachments/${digest}`)).status).toBe(401);
  });

  it("owned attachments: alice may not put bob's digest in a message (403, the store unchanged), and reads it through her own conversation once it references it", { timeout: 90_000 }, async () => {
    suite.dumpLogsOnFailure();
    const bytes = `bob's picture ${run}`;
    const digest = await upload("bob", bytes);
    const attachments = [{ digest, mediaType: "text/plain", size: Buffer.byteLength(bytes) }];
    const before = await fingerprint(ALICE);
    const refused = await call("alice", "POST", `/agents/lead/${ALICE}`, { kind: "user", body: "look", session: "s2", attachments });
    expect(refused.status, await refused.clone().text()).toBe(403);
    expect(await fingerprint(ALICE), "a refusal writes nothing").toBe(before);

    const shared = await call("operator", "POST", `/agents/lead/${ALICE}?wait=true`, { kind: "user", body: "for alice", session: "shared", attachments });
    expect(shared.status, await shared.clone().text()).toBe(200);
    const through = await call("alice", "GET", `/attachments/${digest}?agent=lead&instance=${ALICE}&session=shared`);
    expect(through.status, await through.clone().text()).toBe(200);
    expect(await through.text()).toBe(bytes);
    expect((await call("alice", "GET", `/attachments/${digest}`)).status, "by digest alone it is still bob's").toBe(403);
  });

  it("owned attachments: the same bytes uploaded by two principals are one object in the bucket, and each reads them", { timeout: 60_000 }, async () => {
    suite.dumpLogsOnFailure();
    const bytes = `the same bytes ${run}`;
    const digest = await upload("bob", bytes);
    expect(await upload("alice", bytes)).toBe(digest);
    const hex = createHash("sha256").update(bytes).digest("hex");
    expect(digest).toBe(`sha256:${hex}`);
    const s3 = createS3Client();
    try {
      const listed = await s3.send(new ListObjectsV2Command({ Bucket: suite.cloud.bucketName, Prefix: `blobs/sha256/${hex}` }));
      expect(listed.Contents?.map((o) => o.Key), "one stored blob").toEqual([`blobs/sha256/${hex}`]);
    } finally {
      s3.destroy();
    }
    expect((await call("alice", "GET", `/attachments/${digest}`)).status).toBe(200);
    expect((await call("bob", "GET", `/attachments/${digest}`)).status).toBe(200);
  });

  it("the callback route keeps its own token: a user's token or the operator's is 401 there, the callback token reaches the route", async () => {
    const path = `/callbacks/cb_${"0".repeat(43)}`;
    for (const who of [undefined, "alice", "operator"]) {
      const res = await call(who, "POST", path, { result: 1 });
      expect(res.status, `callback as ${who}`).toBe(401);
      await res.body?.cancel();
    }
    const res = await call(CALLBACK_TOKEN, "POST", path, { result: 1 });
    expect(res.status, await res.clone().text()).toBe(404);
    expect(((await res.json()) as { code: string }).code).toBe("callback_not_found");
  });

  it("a child runs as its parent's principal: the child's message records the parent's caller", { timeout: 90_000 }, async () => {
    suite.dumpLogsOnFailure();
    const res = await call("alice", "POST", `/agents/lead/${ALICE}?wait=true`, { kind: "user", body: "spawn: tea", session: "family" });
    expect(res.status, await res.clone().text()).toBe(200);
    const settled = (await res.json()) as { submissionId: string; conversationId: string; status: string };
    expect(settled.status).toBe("succeeded");
    const parentLog = await suite.store.readRecords(settled.conversationId);
    expect((parentLog.find((r) => r.kind === "user_message")!.payload as UserMessagePayload).principalId).toBe(ALICE);
    const child = childAddress({ submissionId: settled.submissionId, instance: ALICE }, "call-tea");
    const childLog = await suite.store.readRecords((await suite.store.getConversation({ agent: "researcher", instance: child.instance, session: child.session })).id);
    expect((childLog.find((r) => r.kind === "user_message")!.payload as UserMessagePayload).principalId).toBe(ALICE);
    expect(JSON.stringify(parentLog.findLast((r) => r.kind === "assistant_message_completed")!.payload)).toContain("researcher on: tea");
  });

  it("the http function serves the chat page (HARNESS_CHAT_PAGE, the construct's chatPage): the page and its config open, the API behind it still asks for a token", { timeout: 90_000 }, async () => {
    suite.dumpLogsOnFailure();
    const signIn = { url: "https://example.auth.eu-west-1.amazoncognito.com/oauth2/authorize?response_type=token&client_id=web" };
    const fn = await suite.cloud.extraFunction("http", {
      AUTH_ISSUER: issuer.url,
      AUTH_AUDIENCE: AUDIENCE,
      HARNESS_BEARER_TOKEN: OPERATOR_TOKEN,
      HARNESS_ALLOW_UNAUTHENTICATED: "",
      HARNESS_CHAT_PAGE: JSON.stringify({ signIn, instanceClaim: "sub", title: "Acme chat" }),
    });
    try {
      const page = await fetch(`${fn.url}/`);
      expect(page.status, await page.clone().text()).toBe(200);
      expect(page.headers.get("content-type")).toMatch(/^text\/html/);
      expect(await page.text()).toContain("chat.js");
      const script = await fetch(`${fn.url}/chat.js`);
      expect(script.status).toBe(200);
      expect((await script.text()).length).toBeGreaterThan(1000);
      const config = (await (await fetch(`${fn.url}/chat-config.json`)).json()) as Record<string, unknown>;
      expect(config).toMatchObject({ agents: ["lead", "researcher"], title: "Acme chat", signIn, instanceClaim: "sub" });
      const api = await fetch(`${fn.url}/agents/lead/${ALICE}/submissions`);
      expect(api.status).toBe(401);
      const signedIn = await fetch(`${fn.url}/agents/lead/${ALICE}/submissions`, { headers: { authorization: `Bearer ${tokens.alice}` } });
      expect(signedIn.status).toBe(200);
    } finally {
      await fn.close();
    }
    // The suite's own http function has no page: / is not found there.
    expect((await fetch(`${suite.cloud.url}/`)).status).toBe(404);
  });

  it("an issuer whose key set is out of reach: 503 auth_unavailable with Retry-After, never a pass; nothing stored", { timeout: 60_000 }, async () => {
    suite.dumpLogsOnFailure();
    // A fresh http function (no key set cached yet) of an issuer that is down.
    const down = await startOidcIssuer();
    try {
      const token = await down.sign(AUDIENCE, { sub: ALICE });
      down.down = true;
      const fn = await suite.cloud.extraFunction("http", { AUTH_ISSUER: down.url, AUTH_AUDIENCE: AUDIENCE, HARNESS_BEARER_TOKEN: OPERATOR_TOKEN, HARNESS_ALLOW_UNAUTHENTICATED: "" });
      try {
        const before = await fingerprint(ALICE);
        const res = await fetch(`${fn.url}/agents/lead/${ALICE}`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: JSON.stringify({ kind: "user", body: "hi", session: "s2" }) });
        expect(res.status, await res.clone().text()).toBe(503);
        expect(res.headers.get("retry-after")).toBe("5");
        expect(((await res.json()) as { code: string }).code).toBe("auth_unavailable");
        expect(await fingerprint(ALICE)).toBe(before);
        // The issuer back: the same token passes.
        down.down = false;
        const again = await fetch(`${fn.url}/agents/lead/${ALICE}/submissions`, { headers: { authorization: `Bearer ${token}` } });
        expect(again.status, await again.clone().text()).toBe(200);
      } finally {
        await fn.close();
      }
    } finally {
      await down.close();
    }
  });
});
