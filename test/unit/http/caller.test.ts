/**
 * The HTTP surface with authentication on (ADR 0043): every API route refuses an anonymous
 * request with 401 and a challenge, and the matrix of principals (alice, bob, the operator,
 * anonymous) × routes × own/other instance answers as the default policy says, writing nothing on
 * a refusal. Embedded server on the memory store.
 */
import { inspectRoutes } from "hono/dev";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { anyOf, bearerTokenAuthenticator } from "../../../src/auth/authenticate.ts";
import { startTestServer, type TestServer } from "../../support/test-server.ts";

const TOKENS: Record<string, string> = { alice: "token-of-alice", bob: "token-of-bob", operator: "token-of-operator" };
const users = (request: Request) => {
  const header = request.headers.get("authorization");
  if (header === `Bearer ${TOKENS.alice}`) return { id: "alice" };
  if (header === `Bearer ${TOKENS.bob}`) return { id: "bob" };
  return null;
};

let h: TestServer;
let aliceRecord = "";
let bobRecord = "";
let bobSubmission = "";
let aliceSubmission = "";
beforeAll(async () => {
  h = await startTestServer({
    maxRequestWaitMs: 10_000,
    auth: { authenticate: anyOf(bearerTokenAuthenticator({ token: TOKENS.operator! }), users) },
  });
  // Each user has a conversation in their own instance.
  for (const who of ["alice", "bob"]) {
    const res = await call(who, "POST", `/agents/assistant/${who}?wait=true`, { kind: "user", body: `hello from ${who}` });
    expect(res.status).toBe(200);
    const settled = (await res.json()) as { submissionId: string; conversationId: string };
    const records = await h.runtime.records(settled.conversationId);
    if (who === "alice") [aliceSubmission, aliceRecord] = [settled.submissionId, records.at(-1)!.id];
    else [bobSubmission, bobRecord] = [settled.submissionId, records.at(-1)!.id];
  }
});
afterAll(async () => {
  await h?.close();
});

function call(who: string | undefined, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
  const auth: Record<string, string> = who === undefined ? {} : { authorization: `Bearer ${TOKENS[who]}` };
  return fetch(`${h.url}${path}`, {
    method,
    headers: { ...auth, ...headers },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
}

describe("authentication", () => {
  it("every route of the API answers 401 with a Bearer challenge to an anonymous request; /healthz stays open", async () => {
    const routes = inspectRoutes(h.server.app).filter((r) => !r.isMiddleware);
    const open = new Set(["/healthz", "/callbacks/:callbackId"]);
    const checked: string[] = [];
    for (const route of routes) {
      if (open.has(route.path) || route.method === "ALL") continue;
      // The console's page and its scripts are open (ADR 0054): its data comes from the API routes.
      if (route.path.startsWith("/console") && !route.path.startsWith("/console/api/")) {
        expect((await call(undefined, "GET", route.path)).status, route.path).toBe(200);
        continue;
      }
      const path = route.path
        .replace(":agent", "assistant")
        .replace(":instance", "bob")
        .replace(":submissionId", bobSubmission)
        .replace(":digest", `sha256:${"0".repeat(64)}`)
        .replace(/:[A-Za-z]+/g, "x");
      const res = await call(undefined, route.method, path, route.method === "GET" || route.method === "DELETE" ? undefined : "{}");
      expect(res.status, `${route.method} ${route.path}`).toBe(401);
      expect(res.headers.get("www-authenticate"), route.path).toBe('Bearer realm="harness"');
      expect(((await res.json()) as { code: string }).code).toBe("unauthorized");
      checked.push(`${route.method} ${route.path}`);
    }
    expect(checked.length, checked.join("\n")).toBeGreaterThanOrEqual(18);
    expect((await call(undefined, "GET", "/healthz")).status).toBe(200);
  });

  it("a token that is not accepted says so in the challenge; nothing is stored", async () => {
    const res = await fetch(`${h.url}/agents/assistant/bob`, { method: "POST", headers: { authorization: "Bearer nope" }, body: JSON.stringify({ kind: "user", body: "x" }) });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe('Bearer realm="harness", error="invalid_token"');
    expect((await h.runtime.listSubmissions({ agent: "assistant", instance: "bob" })).submissions).toHaveLength(1);
  });
});

/** What an instance holds, to compare before and after a refused request. */
async function fingerprint(instance: string): Promise<string> {
  const parts: unknown[] = [];
  for (const session of ["default", "s2", "forked-out", "forked-in", "imported"]) {
    const page = await h.runtime.listSubmissions({ agent: "assistant", instance, session, limit: 100 });
    let records: unknown[] = [];
    try {
      records = await h.runtime.records((await h.runtime.conversation({ agent: "assistant", instance, session })).id);
    } catch {
      records = ["none"];
    }
    parts.push(page.submissions.map((s) => [s.id, s.status]), records);
  }
  return JSON.stringify(parts);
}

type Route = { name: string; method: string; path: (i: string) => string; body?: (i: string) => unknown; ok: number[] };

/** Each route as it addresses instance `i` (own or other). `ok` is what an allowed caller may get. */
const ROUTES: Route[] = [
  { name: "dispatch", method: "POST", path: (i) => `/agents/assistant/${i}`, body: () => ({ kind: "user", body: "hi", session: "s2" }), ok: [202] },
  { name: "stream", method: "GET", path: (i) => `/agents/assistant/${i}`, ok: [200, 204] },
  { name: "steer", method: "POST", path: (i) => `/agents/assistant/${i}/steer`, body: () => ({ body: "x" }), ok: [409] },
  { name: "follow-up", method: "POST", path: (i) => `/agents/assistant/${i}/followup`, body: () => ({ body: "x" }), ok: [409] },
  { name: "list submissions", method: "GET", path: (i) => `/agents/assistant/${i}/submissions`, ok: [200] },
  { name: "a submission", method: "GET", path: (i) => `/agents/assistant/${i}/submissions/${subOf(i)}`, ok: [200] },
  { name: "cancel", method: "POST", path: (i) => `/agents/assistant/${i}/submissions/${subOf(i)}/cancel`, ok: [409] },
  { name: "decide", method: "POST", path: (i) => `/agents/assistant/${i}/submissions/${subOf(i)}/approvals/call-1`, body: () => ({ approved: true }), ok: [404, 409] },
  { name: "approvals", method: "GET", path: (i) => `/agents/assistant/${i}/approvals`, ok: [200] },
  { name: "export", method: "GET", path: (i) => `/agents/assistant/${i}/export`, ok: [200] },
  { name: "import", method: "POST", path: (i) => `/agents/assistant/${i}/import?session=imported`, body: () => "not an export", ok: [400] },
  { name: "compact", method: "POST", path: (i) => `/agents/assistant/${i}/compact`, body: () => ({ session: "nothing-here" }), ok: [404] },
  { name: "delete", method: "DELETE", path: (i) => `/agents/assistant/${i}?session=never-used`, ok: [200] },
  // A fork reads its source and writes its target: each side is checked.
  { name: "fork out of it", method: "POST", path: (i) => `/agents/assistant/${i}/fork`, body: (i) => ({ fromRecordId: recordOf(i), instance: i, session: "forked-out" }), ok: [201] },
  { name: "fork into it", method: "POST", path: () => `/agents/assistant/alice/fork`, body: (i) => ({ fromRecordId: aliceRecord, instance: i, session: "forked-in" }), ok: [201] },
];
const subOf = (i: string) => (i === "alice" ? aliceSubmission : bobSubmission);
const recordOf = (i: string) => (i === "alice" ? aliceRecord : bobRecord);

describe("the default policy, route by route", () => {
  for (const route of ROUTES) {
    it(`${route.name}: alice reaches her instance, not bob's (403, nothing written); the operator both; anonymous neither`, async () => {
      const send = (who: string | undefined, instance: string) => call(who, route.method, route.path(instance), route.body?.(instance));

      const before = await fingerprint("bob");
      const refused = await send("alice", "bob");
      expect(refused.status, `${route.name} on bob's instance`).toBe(403);
      expect(((await refused.json()) as { code: string }).code).toBe("forbidden");
      expect(await fingerprint("bob"), "a refusal writes nothing").toBe(before);

      const anonymous = await send(undefined, "bob");
      expect(anonymous.status).toBe(401);

      const mine = await send("alice", "alice");
      expect(route.ok, `${route.name} on alice's own instance: ${mine.status} ${await mine.clone().text()}`).toContain(mine.status);
      await mine.body?.cancel();

      const operator = await send("operator", "bob");
      expect(route.ok, `${route.name} by the operator: ${operator.status}`).toContain(operator.status);
      await operator.body?.cancel();
    });
  }

});

describe("owned attachments (ADR 0046)", () => {
  const read = (who: string | undefined, digest: string, via = "") => call(who, "GET", `/attachments/${digest}${via}`);
  const upload = async (who: string, text: string) => {
    const res = await call(who, "POST", "/attachments", text, { "content-type": "text/plain" });
    expect(res.status).toBe(201);
    return ((await res.json()) as { digest: string }).digest;
  };

  it("bob uploads; alice reading his digest is 403 and nothing is read, whichever conversation she names that does not reference it; bob and the operator read it", async () => {
    const digest = await upload("bob", "bob's note");
    const reads = vi.spyOn(h.store, "getAttachment");
    try {
      for (const via of ["", "?agent=assistant&instance=alice", "?agent=assistant&instance=bob", "?agent=assistant&instance=alice&session=s2"]) {
        const res = await read("alice", digest, via);
        expect(res.status, `alice reads bob's digest${via}`).toBe(403);
        expect(((await res.json()) as { code: string }).code).toBe("forbidden");
      }
      expect(reads, "no bytes were read for a refusal").not.toHaveBeenCalled();
    } finally {
      reads.mockRestore();
    }
    expect((await read(undefined, digest)).status).toBe(401);
    const own = await read("bob", digest);
    expect(own.status).toBe(200);
    expect(await own.text()).toBe("bob's note");
    expect((await read("operator", digest)).status).toBe(200);
    expect((await read("alice", digest, "?agent=assistant")).status, "half a conversation's name").toBe(400);
  });

  it("alice may not put bob's digest in a message (403, nothing written); she reads it through her own conversation once it references it", async () => {
    const digest = await upload("bob", "bob's picture");
    const attachments = [{ digest, mediaType: "text/plain", size: "bob's picture".length }];
    const before = await fingerprint("alice");
    const refused = await call("alice", "POST", "/agents/assistant/alice", { kind: "user", body: "look", session: "s2", attachments });
    expect(refused.status).toBe(403);
    expect(await fingerprint("alice"), "nothing written").toBe(before);

    // The operator shares it into alice's conversation (it reaches everything).
    const shared = await call("operator", "POST", "/agents/assistant/alice?wait=true", { kind: "user", body: "for alice", session: "shared", attachments });
    expect(shared.status, await shared.clone().text()).toBe(200);
    const through = await read("alice", digest, "?agent=assistant&instance=alice&session=shared");
    expect(through.status, await through.clone().text()).toBe(200);
    expect(await through.text()).toBe("bob's picture");
    expect((await read("alice", digest)).status, "by digest alone it is still bob's").toBe(403);
    // Her conversation references it: she may send it there again (the chat page's retry).
    const again = await call("alice", "POST", "/agents/assistant/alice?wait=true", { kind: "user", body: "again", session: "shared", attachments });
    expect(again.status, await again.clone().text()).toBe(200);
  });

  it("the same bytes uploaded by two principals are stored once, and each may then read them by digest", async () => {
    const first = await upload("bob", "the same bytes");
    expect(await upload("alice", "the same bytes"), "content-addressed: one digest, one blob").toBe(first);
    expect(await h.store.isAttachmentUploader(first, "alice")).toBe(true);
    expect(await h.store.isAttachmentUploader(first, "bob")).toBe(true);
    expect((await read("alice", first)).status).toBe(200);
    expect((await read("bob", first)).status).toBe(200);
  });
});

describe("who said it", () => {
  it("a steer and a follow-up record their sender's principal id, as a dispatch does", async () => {
    h.gate.close();
    const res = await call("alice", "POST", "/agents/assistant/alice", { kind: "user", body: "[hold] start", session: "steered" });
    expect(res.status).toBe(202);
    const ids = (await res.json()) as { submissionId: string; conversationId: string };
    await h.gate.entered();
    const steer = await call("alice", "POST", "/agents/assistant/alice/steer", { session: "steered", body: "a steer" });
    expect(steer.status, await steer.clone().text()).toBe(200);
    expect((await call("alice", "POST", "/agents/assistant/alice/followup", { session: "steered", body: "a follow-up" })).status).toBe(200);
    h.gate.release();
    expect((await h.runtime.wait(ids.submissionId)).status).toBe("succeeded");
    const said = (await h.runtime.records(ids.conversationId))
      .filter((r) => r.kind === "user_message")
      .map((r) => r.payload as { body: string; origin?: string; principalId?: string });
    expect(said).toEqual([
      { body: "[hold] start", principalId: "alice" },
      { body: "a steer", origin: "steer", principalId: "alice" },
      { body: "a follow-up", origin: "followUp", principalId: "alice" },
    ]);
  });
});
