import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anyOf, bearerTokenAuthenticator } from "../../../src/auth/authenticate.ts";
import type { ActivityListPage } from "../../../src/protocol/submission-view.ts";
import type { Runtime } from "../../../src/runtime/runtime.ts";
import { appFor, startRuntime, type Gate } from "../../support/test-server.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";
import { createRuntime } from "../../../src/runtime/runtime.ts";
import { localModel } from "../../../src/agent/local-model.ts";
import { clockTool } from "../../../src/agent/clock-tool.ts";
import { OPERATOR_PRINCIPAL } from "../../../src/protocol/principal.ts";

/**
 * The console's API (ADR 0054): the listing across agents and instances and the retry are the
 * operator's alone (the policy's `console` action on the deployment), a session's records go by
 * the session's own rule, and bad queries are 400s naming the field.
 */
let runtime: Runtime;
let gate: Gate;
let app: ReturnType<typeof appFor>;
const OPERATOR = { authorization: "Bearer op-token" };
const ALICE = { authorization: "Bearer alice" };

beforeAll(async () => {
  ({ runtime, gate } = await startRuntime());
  app = appFor(runtime, {
    auth: {
      authenticate: anyOf(bearerTokenAuthenticator({ token: "op-token" }), (req) => (req.headers.get("authorization") === "Bearer alice" ? { id: "alice" } : null)),
    },
  });
});
afterAll(async () => {
  gate.release();
  await runtime.close();
});

async function call(path: string, headers: Record<string, string>, init: RequestInit = {}) {
  const res = await app.request(path, { ...init, headers: { ...headers, "content-type": "application/json" } });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe("the console's API", () => {
  it("lists every agent instance's submissions newest first for the operator, and refuses anyone else with 403", async () => {
    const first = await runtime.dispatch({ agent: "assistant", instance: "alice", message: { kind: "user", body: "from alice" } });
    const second = await runtime.dispatch({ agent: "assistant", instance: "bob", message: { kind: "user", body: "from bob" } });
    const page = await call("/console/api/activity?limit=10", OPERATOR);
    expect(page.status).toBe(200);
    const rows = (page.body as unknown as ActivityListPage).submissions;
    expect(rows.map((r) => r.id)).toEqual(expect.arrayContaining([first.submissionId, second.submissionId]));
    expect(rows.find((r) => r.id === second.submissionId)).toMatchObject({ agent: "assistant", instance: "bob", preview: "from bob" });

    const refused = await call("/console/api/activity", ALICE);
    expect(refused).toEqual({ status: 403, body: { error: expect.stringContaining("the deployment"), code: "forbidden" } });
    expect((await call("/console/api/activity", {})).status, "no token").toBe(401);

    // A session's records go by the session's rule: alice reads her own, not bob's.
    const own = await call("/console/api/records?agent=assistant&instance=alice", ALICE);
    expect(own.status).toBe(200);
    expect((own.body.records as { kind: string }[]).map((r) => r.kind)).toContain("user_message");
    expect((await call("/console/api/records?agent=assistant&instance=bob", ALICE)).status).toBe(403);
  });

  it("answers 400 naming the field for a bad state, limit or time, and reads nothing", async () => {
    for (const [query, words] of [
      ["state=finished", "state must be one of"],
      ["limit=0", "limit must be an integer from 1 to 100"],
      ["limit=1000", "limit must be an integer from 1 to 100"],
      ["since=yesterday", "invalid since"],
    ] as const) {
      const res = await call(`/console/api/activity?${query}`, OPERATOR);
      expect(res.status, query).toBe(400);
      expect(res.body).toMatchObject({ code: "invalid_request", error: expect.stringContaining(words) });
    }
    const filtered = await call("/console/api/activity?state=failed,cancelled&agent=assistant", OPERATOR);
    expect(filtered.status).toBe(200);
  });

  it("retries a cancelled submission as a new dispatch of the same input named after it, once", async () => {
    const running = await runtime.dispatch({ agent: "assistant", instance: "retry", message: { kind: "user", body: "first" } });
    // A delayed message cancelled before its time settles at once (a queued one behind a run would wait for it).
    const notBefore = new Date(Date.now() + 3_600_000).toISOString();
    const queued = await runtime.dispatch({ agent: "assistant", instance: "retry", message: { kind: "user", body: "again please", notBefore } });
    await runtime.cancel(queued.submissionId, "changed my mind");

    expect((await call(`/console/api/submissions/${queued.submissionId}/retry`, ALICE, { method: "POST" })).status, "the operator's alone").toBe(403);
    const retried = await call(`/console/api/submissions/${queued.submissionId}/retry`, OPERATOR, { method: "POST" });
    expect(retried).toEqual({ status: 202, body: { submissionId: `${queued.submissionId}~retry`, conversationId: running.conversationId, retryOf: queued.submissionId, replayed: false } });
    const again = await call(`/console/api/submissions/${queued.submissionId}/retry`, OPERATOR, { method: "POST" });
    expect(again.status, "a second retry answers the first").toBe(200);
    const detail = await runtime.submission({ agent: "assistant", instance: "retry", submissionId: `${queued.submissionId}~retry` });
    expect(detail.input.body).toBe("again please");
    expect(detail.input.notBefore, "the retry runs now").toBeUndefined();

    const notFailed = await call(`/console/api/submissions/${running.submissionId}/retry`, OPERATOR, { method: "POST" });
    expect(notFailed.status).toBe(400);
    expect(notFailed.body).toMatchObject({ code: "invalid_request", error: expect.stringContaining("only a failed or cancelled submission is retried") });
    expect((await call("/console/api/submissions/nope/retry", OPERATOR, { method: "POST" })).status).toBe(404);
  });

  it("calls an agent's tool directly only where directToolCalls is on (harness dev), for the operator", async () => {
    const path = "/console/api/agents/assistant/tools-1/tools/clock";
    const off = await call(path, OPERATOR, { method: "POST", body: "{}" });
    expect(off).toEqual({ status: 403, body: { error: expect.stringContaining("harness dev only"), code: "forbidden" } });

    const store = createMemoryStore();
    const dev = createRuntime({ agents: { assistant: { initialize: () => ({ ...localModel(), tools: [clockTool()] }) } }, store, directToolCalls: true });
    await dev.start();
    try {
      const devApp = appFor(dev, { auth: { authenticate: (req) => (req.headers.get("authorization") === "Bearer op-token" ? OPERATOR_PRINCIPAL : req.headers.get("authorization") === "Bearer alice" ? { id: "alice" } : null) } });
      const post = async (p: string, headers: Record<string, string>, body: unknown) => {
        const res = await devApp.request(p, { method: "POST", headers: { ...headers, "content-type": "application/json" }, body: JSON.stringify(body) });
        return { status: res.status, body: (await res.json()) as Record<string, unknown> };
      };
      const answered = await post(path, OPERATOR, { args: {} });
      expect(answered.status).toBe(200);
      expect(answered.body).toMatchObject({ toolName: "clock", isError: false, content: [{ type: "text", text: expect.stringMatching(/\d{4}-\d\d-\d\dT/) }] });
      expect((await post(path, ALICE, { args: {} })).status, "the operator's alone").toBe(403);
      const unknown = await post("/console/api/agents/assistant/tools-1/tools/nope", OPERATOR, {});
      expect(unknown).toEqual({ status: 400, body: { error: 'agent assistant has no tool "nope"; its tools: clock', code: "invalid_request" } });
      expect((await post(path, OPERATOR, { args: [1] })).body).toMatchObject({ code: "invalid_request", error: "args must be a JSON object" });
      expect(await store.listActivity({ limit: 10 }), "nothing written").toEqual({ submissions: [] });
    } finally {
      await dev.close();
    }
  });

  it("answers a callback by hand for the operator only; a call that waits for no callback is 404", async () => {
    const path = "/console/api/submissions/some-submission/callbacks/call-1";
    const body = JSON.stringify({ result: { tracking: "1Z" } });
    expect((await call(path, ALICE, { method: "POST", body })).status).toBe(403);
    expect(await call(path, OPERATOR, { method: "POST", body })).toEqual({ status: 404, body: { error: expect.any(String), code: "callback_not_found" } });
    const bad = await call(path, OPERATOR, { method: "POST", body: JSON.stringify({ result: 1, error: "x" }) });
    expect(bad).toEqual({ status: 400, body: { error: "a callback answer has exactly one of result and error", code: "invalid_request" } });
  });
});
