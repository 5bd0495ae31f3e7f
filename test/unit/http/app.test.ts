import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Runtime } from "../../../src/runtime/runtime.ts";
import { bearerAuth } from "../../../src/http/bearer-auth.ts";
import { createApp, REQUEST_WAIT_MARGIN_MS } from "../../../src/http/app.ts";
import { createRuntime } from "../../../src/runtime/runtime.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";
import { localModel } from "../../../src/agent/local-model.ts";
import { ownerPolicy } from "../../../src/auth/owner-policy.ts";
import { handle } from "hono/aws-lambda";
import { startTestServer, startRuntime, eventually, type TestServer } from "../../support/test-server.ts";
import { rawPost } from "../../support/raw-post.ts";

let h: TestServer;
beforeAll(async () => {
  h = await startTestServer({ maxRequestWaitMs: 5_000 });
});
afterAll(async () => {
  await h?.close();
});

let seq = 0;
const fresh = (prefix = "i") => `${prefix}-${++seq}`;

function post(path: string, body: unknown, init: RequestInit = {}): Promise<Response> {
  return fetch(`${h.url}${path}`, {
    method: "POST",
    body: typeof body === "string" ? body : JSON.stringify(body),
    ...init,
  });
}

async function expectError(res: Response, status: number, code: string, message?: RegExp) {
  expect(res.status).toBe(status);
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  const body = (await res.json()) as { error: string; code: string };
  expect(typeof body.error).toBe("string");
  expect(body.code).toBe(code);
  if (message) expect(body.error).toMatch(message);
  return body;
}

describe("POST /agents/:agent/:instance/compact", () => {
  it("admits a manual compaction in the session's order; ?wait=true answers its outcome; the record is on the log", async () => {
    const instance = fresh();
    for (const body of ["one", "two", "three"]) {
      expect((await post(`/agents/assistant/${instance}?wait=true`, { kind: "user", body })).status).toBe(200);
    }
    // No body at all is an empty request.
    const queued = await fetch(`${h.url}/agents/assistant/${instance}/compact`, { method: "POST" });
    expect(queued.status).toBe(202);
    const ids = (await queued.json()) as { submissionId: string; conversationId: string };
    expect(Object.keys(ids).sort()).toEqual(["conversationId", "submissionId"]);
    const first = await h.runtime.wait(ids.submissionId);
    expect(first).toMatchObject({ status: "succeeded", result: { compacted: true, firstKeptEntryId: expect.any(String) } });

    expect((await post(`/agents/assistant/${instance}?wait=true`, { kind: "user", body: "four" })).status).toBe(200);
    const waited = await post(`/agents/assistant/${instance}/compact?wait=true`, {});
    expect(waited.status).toBe(200);
    const outcome = (await waited.json()) as Record<string, unknown>;
    expect(outcome).toMatchObject({ status: "succeeded", result: { compacted: true }, usage: { output: expect.any(Number) } });

    const compactions = (await h.runtime.records(ids.conversationId)).filter((r) => r.kind === "compaction");
    expect(compactions.map((r) => r.kind === "compaction" && r.payload.reason)).toEqual(["manual", "manual"]);
    const [one, two] = compactions.map((r) => (r.kind === "compaction" ? r.payload.summary : ""));
    expect(two!.startsWith(one!)).toBe(true);
    expect(two).toContain("[user] three");
  });

  it("answers succeeded with compacted false when there is one exchange; 404 without a conversation; 400 for a bad body", async () => {
    const instance = fresh();
    await post(`/agents/assistant/${instance}?wait=true`, { kind: "user", body: "only" });
    const res = await post(`/agents/assistant/${instance}/compact?wait=true`, { session: "default" });
    expect(await res.json()).toMatchObject({ status: "succeeded", result: { compacted: false } });
    await expectError(await post(`/agents/assistant/${fresh()}/compact`, {}), 404, "conversation_not_found");
    await expectError(await post(`/agents/nobody/${instance}/compact`, {}), 404, "unknown_agent");
    await expectError(await post(`/agents/assistant/${instance}/compact`, { session: 5 }), 400, "invalid_request", /session must be a string/);
    await expectError(await post(`/agents/assistant/${instance}/compact`, "[1]"), 400, "invalid_request");
  });
});

describe("GET /healthz", () => {
  it("answers 200 ok", async () => {
    const res = await fetch(`${h.url}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("ok");
  });
});

describe("POST /agents/:agent/:instance", () => {
  it("answers 202 with the ids after durable admission, and the work proceeds", async () => {
    const res = await post(`/agents/assistant/${fresh()}`, { kind: "user", body: "hello" });
    expect(res.status).toBe(202);
    const ids = (await res.json()) as { submissionId: string; conversationId: string };
    expect(ids.submissionId).toMatch(/^[0-9A-Z]{26}$/);
    expect(ids.conversationId).toMatch(/^[0-9A-Z]{26}$/);
    const settled = await h.runtime.wait(ids.submissionId);
    expect(settled.status).toBe("succeeded");
    const records = await h.runtime.records(ids.conversationId);
    expect(records.map((r) => r.kind)).toContain("assistant_message_completed");
  });

  it("accepts a JSON body whatever content type the client declares", async () => {
    for (const contentType of ["application/x-www-form-urlencoded", "text/plain", "application/octet-stream", undefined]) {
      const headers: Record<string, string> = contentType ? { "content-type": contentType } : {};
      const res = await post(`/agents/assistant/${fresh()}`, { kind: "user", body: "hi" }, { headers });
      expect(res.status, String(contentType)).toBe(202);
    }
  });

  it("replays an identical dispatch with the same ids and refuses a changed payload with 409", async () => {
    const instance = fresh();
    const first = await post(`/agents/assistant/${instance}`, { kind: "user", body: "once", dispatchId: "d-1" });
    expect(first.status).toBe(202);
    const ids = await first.json();
    const again = await post(`/agents/assistant/${instance}`, { kind: "user", body: "once", dispatchId: "d-1" });
    expect(again.status).toBe(202);
    expect(await again.json()).toEqual(ids);
    const changed = await post(`/agents/assistant/${instance}`, { kind: "user", body: "twice", dispatchId: "d-1" });
    await expectError(changed, 409, "dispatch_conflict");
  });

  it("?wait=true answers 200 with the flattened settled outcome", async () => {
    const res = await post(`/agents/assistant/${fresh()}?wait=true`, { kind: "user", body: "hello there" });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ status: "succeeded" });
    expect(Object.keys(body).sort()).toEqual(["conversationId", "status", "submissionId", "usage"]);
  });

  it("?wait=true answers 200 even when the submission failed", async () => {
    const res = await post(`/agents/assistant/${fresh()}?wait=true`, {
      kind: "user",
      body: "prose only",
      resultSchema: { type: "object", required: ["answer"] },
      resultRetries: 0,
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body.status).toBe("failed");
    expect(body.errorCode).toBe("result_schema_invalid");
    expect(typeof body.error).toBe("string");
    expect(body.submissionId).toBeTypeOf("string");
    expect(body.conversationId).toBeTypeOf("string");
  });

  it("?wait=true answers 202 with the ids once maxRequestWaitMs passes, and the work goes on", async () => {
    const short = await startTestServer({ maxRequestWaitMs: 200 });
    try {
      const instance = fresh();
      const started = Date.now();
      const res = await fetch(`${short.url}/agents/assistant/${instance}?wait=true`, {
        method: "POST",
        body: JSON.stringify({ kind: "user", body: "[hold] take your time" }),
      });
      expect(res.status).toBe(202);
      expect(Date.now() - started).toBeGreaterThanOrEqual(190);
      const ids = (await res.json()) as { submissionId: string; status?: string };
      expect(Object.keys(ids).sort(), "the ids, and where it is").toEqual(["conversationId", "status", "submissionId"]);
      expect(ids.status).toBe("running");
      short.gate.release();
      expect((await short.runtime.wait(ids.submissionId)).status).toBe("succeeded");
    } finally {
      await short.close();
    }
  });

  it("?wait=true answers 202 REQUEST_WAIT_MARGIN_MS before the request's time runs out (timeLeftMs: a Lambda invocation's)", async () => {
    // 60 s of waiting allowed, but only the margin + 300 ms left to answer in (a function timeout).
    const bounded = await startTestServer({ maxRequestWaitMs: 60_000, timeLeftMs: () => REQUEST_WAIT_MARGIN_MS + 300 });
    try {
      const res = await fetch(`${bounded.url}/agents/assistant/${fresh()}?wait=true`, {
        method: "POST",
        body: JSON.stringify({ kind: "user", body: "[hold] take your time" }),
      });
      expect(res.status).toBe(202);
      const ids = (await res.json()) as { submissionId: string };
      bounded.gate.release();
      expect((await bounded.runtime.wait(ids.submissionId)).status).toBe("succeeded");
    } finally {
      await bounded.close();
    }
  });

  it("maps validation failures to 400 and unknown agents to 404", async () => {
    const i = fresh();
    await expectError(await post(`/agents/nobody/${i}`, { kind: "user", body: "x" }), 404, "unknown_agent");
    await expectError(await post(`/agents/assistant/${i}`, { kind: "shout", body: "x" }), 400, "invalid_dispatch", /unknown inbound kind/);
    await expectError(await post(`/agents/assistant/${i}`, { kind: "user" }), 400, "invalid_dispatch", /body is required/);
    // The field and what it takes (issue 37: `unknown inbound kind ""`, "body is required" for 42).
    await expectError(await post(`/agents/assistant/${i}`, { body: "x" }), 400, "invalid_dispatch", /^kind is required: "user" \(a message\) or "signal"$/);
    await expectError(await post(`/agents/assistant/${i}`, { kind: 1, body: "x" }), 400, "invalid_dispatch", /^kind must be "user" or "signal"; got the number 1$/);
    await expectError(await post(`/agents/assistant/${i}`, { kind: "shout", body: "x" }), 400, "invalid_dispatch", /^unknown inbound kind "shout": kind must be "user" or "signal"$/);
    await expectError(await post(`/agents/assistant/${i}`, { kind: "user", body: 42 }), 400, "invalid_dispatch", /^body must be a string \(the message's text\); got the number 42$/);
    await expectError(await post(`/agents/assistant/${i}`, { kind: "user", body: ["a"] }), 400, "invalid_dispatch", /^body must be a string \(the message's text\); got an array$/);
    await expectError(await post(`/agents/assistant/${i}`, { kind: "signal", body: "x" }), 400, "invalid_dispatch", /signal type/);
    await expectError(
      await post(`/agents/assistant/${i}`, { kind: "user", body: "x", signal: { type: "t" } }),
      400,
      "invalid_dispatch",
      /must not carry signal/,
    );
    await expectError(await post(`/agents/assistant/${i}`, "{not json"), 400, "invalid_request", /^decode request body: /);
    await expectError(await post(`/agents/assistant/${i}`, ""), 400, "invalid_request", /^decode request body: /);
    await expectError(await post(`/agents/assistant/${i}`, "[1,2]"), 400, "invalid_request", /^decode request body: /);
    await expectError(await post(`/agents/assistant/${i}`, { kind: "user", body: "x", session: 5 }), 400, "invalid_request");
    await expectError(
      await post(`/agents/assistant/${i}`, { kind: "user", body: "x", session: "bad session" }),
      400,
      "invalid_request",
      /invalid session/,
    );
    await expectError(
      await post(`/agents/assistant/${i}`, { kind: "user", body: "x", dispatchId: "a/b" }),
      400,
      "invalid_request",
      /invalid dispatch id/,
    );
    await expect(h.runtime.conversation({ agent: "assistant", instance: i, session: "default" })).rejects.toMatchObject({
      code: "conversation_not_found",
    });
  });

  it("refuses bad ids in the path with 400 and stores nothing", async () => {
    await expectError(await post(`/agents/assistant/bad%20id`, { kind: "user", body: "x" }), 400, "invalid_request", /instance id/);
    await expectError(await post(`/agents/${"a".repeat(65)}/x`, { kind: "user", body: "x" }), 400, "invalid_request", /agent name/);
    await expectError(await post(`/agents/assistant/${"i".repeat(257)}`, { kind: "user", body: "x" }), 400, "invalid_request");
    // `:` is allowed in instance ids (child instances are parent:callId).
    const res = await post(`/agents/assistant/parent:call-1`, { kind: "user", body: "x" });
    expect(res.status).toBe(202);
  });

  it("answers 413 for a body over maxBodyBytes", async () => {
    const small = await startTestServer({ maxBodyBytes: 1024 });
    try {
      const res = await fetch(`${small.url}/agents/assistant/${fresh()}`, {
        method: "POST",
        body: JSON.stringify({ kind: "user", body: "x".repeat(2000) }),
      });
      await expectError(res, 413, "payload_too_large");
      // Also without a content-length (a streamed body).
      const streamed = await fetch(`${small.url}/agents/assistant/${fresh()}`, {
        method: "POST",
        body: new Blob([JSON.stringify({ kind: "user", body: "x".repeat(2000) })]).stream(),
        duplex: "half",
      } as RequestInit);
      await expectError(streamed, 413, "payload_too_large");
    } finally {
      await small.close();
    }
  });
});

describe("POST …/steer and …/followup", () => {
  it("answers 409 when no run is in flight, 404 for an unknown agent, 400 for a bad body", async () => {
    const i = fresh();
    for (const route of ["steer", "followup"]) {
      await expectError(await post(`/agents/assistant/${i}/${route}`, { body: "answer in French" }), 409, "no_run_in_flight");
      await expectError(await post(`/agents/nobody/${i}/${route}`, { body: "x" }), 404, "unknown_agent");
      await expectError(await post(`/agents/assistant/${i}/${route}`, {}), 400, "invalid_request", /body is required/);
      await expectError(await post(`/agents/assistant/${i}/${route}`, { body: 7 }), 400, "invalid_request", /^body must be a string; got the number 7$/);
      await expectError(await post(`/agents/assistant/${i}/${route}`, { body: "" }), 400, "invalid_request");
      await expectError(await post(`/agents/assistant/${i}/${route}`, "nope"), 400, "invalid_request", /^decode request body/);
      await expectError(await post(`/agents/assistant/${i}/${route}`, { body: "x", session: "a b" }), 400, "invalid_request");
    }
  });

  it("steer answers 200 injected while a run is in flight, and the run answers it", async () => {
    const i = fresh();
    h.gate.close();
    const res = await post(`/agents/assistant/${i}`, { kind: "user", body: "[hold] hello" });
    const ids = (await res.json()) as { submissionId: string; conversationId: string };
    await h.gate.entered();
    const steer = await post(`/agents/assistant/${i}/steer`, { body: "answer in French" });
    expect(steer.status).toBe(200);
    expect(await steer.json()).toEqual({ status: "injected" });
    h.gate.release();
    expect((await h.runtime.wait(ids.submissionId)).status).toBe("succeeded");
    const records = await h.runtime.records(ids.conversationId);
    const steered = records.find((r) => r.kind === "user_message" && (r.payload as { origin?: string }).origin === "steer");
    expect(steered).toBeDefined();
    const texts = records
      .filter((r) => r.kind === "assistant_message_completed")
      .map((r) => JSON.stringify(r.payload));
    expect(texts.some((t) => t.includes("answer in French"))).toBe(true);
  });

  it("followup answers 200 injected while a run is in flight, in the same submission", async () => {
    const i = fresh();
    h.gate.close();
    const res = await post(`/agents/assistant/${i}`, { kind: "user", body: "[hold] first" });
    const ids = (await res.json()) as { submissionId: string; conversationId: string };
    await h.gate.entered();
    const follow = await post(`/agents/assistant/${i}/followup`, { body: "and then?" });
    expect(follow.status).toBe(200);
    expect(await follow.json()).toEqual({ status: "injected" });
    h.gate.release();
    expect((await h.runtime.wait(ids.submissionId)).status).toBe("succeeded");
    const records = await h.runtime.records(ids.conversationId);
    const injected = records.find((r) => r.kind === "user_message" && (r.payload as { origin?: string }).origin === "followUp");
    expect(injected?.submissionId).toBe(ids.submissionId);
  });
});

describe("POST …/submissions/:submissionId/cancel", () => {
  it("stops a running submission (202 cancelling), settles a queued one at once (200 cancelled), is idempotent, 404 unknown, 409 settled otherwise", async () => {
    const i = fresh();
    h.gate.close();
    const running = (await (await post(`/agents/assistant/${i}`, { kind: "user", body: "[hold] long" })).json()) as { submissionId: string; conversationId: string };
    await h.gate.entered();
    const queued = (await (await post(`/agents/assistant/${i}`, { kind: "user", body: "behind" })).json()) as { submissionId: string };
    const cancel = (id: string, body?: unknown) => fetch(`${h.url}/agents/assistant/${i}/submissions/${id}/cancel`, { method: "POST", ...(body === undefined ? {} : { body: JSON.stringify(body) }) });

    const behind = await cancel(queued.submissionId, { reason: "not needed" });
    expect(behind.status).toBe(200);
    const outcome = { status: "failed", error: "cancelled: not needed", errorCode: "cancelled" };
    expect(await behind.json()).toEqual({ submissionId: queued.submissionId, status: "cancelled", outcome });
    // No body at all is a cancel with the default reason.
    const stopping = await cancel(running.submissionId);
    expect(stopping.status).toBe(202);
    expect(await stopping.json()).toEqual({ submissionId: running.submissionId, status: "cancelling" });
    expect(await h.runtime.wait(running.submissionId)).toMatchObject({ status: "failed", error: "cancelled: cancelled by request", errorCode: "cancelled" });
    expect(await h.runtime.wait(queued.submissionId)).toEqual(outcome);

    const again = await cancel(queued.submissionId, { reason: "twice" });
    expect(again.status).toBe(200);
    expect(((await again.json()) as { outcome: unknown }).outcome, "the first reason stays").toEqual(outcome);
    // (The cancelled turn's "[hold]" input is still in the transcript the next run sends.)
    h.gate.release();
    const next = await post(`/agents/assistant/${i}?wait=true`, { kind: "user", body: "then this" });
    const done = (await next.json()) as { submissionId: string; status: string };
    expect(done.status, "the session's next submission runs").toBe("succeeded");
    await expectError(await cancel(done.submissionId), 409, "already_settled");
    await expectError(await cancel("no-such-submission"), 404, "submission_not_found");
    await expectError(await fetch(`${h.url}/agents/assistant/other-${i}/submissions/${done.submissionId}/cancel`, { method: "POST" }), 404, "submission_not_found");
    await expectError(await fetch(`${h.url}/agents/nobody/${i}/submissions/${done.submissionId}/cancel`, { method: "POST" }), 404, "unknown_agent");
    await expectError(await cancel(done.submissionId, { reason: 7 }), 400, "invalid_request", /reason must be a string/);
    await expectError(await cancel(done.submissionId, "[1]"), 400, "invalid_request");
    const records = await h.runtime.records(running.conversationId);
    expect(records.filter((r) => r.kind === "submission_settled").map((r) => r.submissionId)).toEqual([running.submissionId, queued.submissionId, done.submissionId]);
  });
});

describe("errors", () => {
  it("unknown routes are 404 JSON", async () => {
    const res = await fetch(`${h.url}/nowhere`);
    await expectError(res, 404, "not_found");
  });

  it("an unexpected failure is a 500 with a generic message, logged", async () => {
    const logged: unknown[] = [];
    const broken = {
      hasAgent: () => true,
      attachmentLimits: () => ({ policy: { "image/png": 1024 }, directUploads: false }),
      dispatch: async () => {
        throw new Error("database on fire: secret detail");
      },
      as: () => broken,
    } as unknown as Runtime;
    const app = createApp(broken, { log: (_m, err) => logged.push(err) });
    const res = await app.request("/agents/assistant/x", { method: "POST", body: '{"kind":"user","body":"x"}' });
    const body = await expectError(res, 500, "internal");
    expect(body.error).not.toMatch(/secret/);
    expect(logged).toHaveLength(1);
  });
});

describe("bearerAuth", () => {
  it("answers 401 JSON without the right token and lets the right one through; /healthz stays open", async () => {
    const { runtime } = await startRuntime();
    try {
      const app = createApp(runtime, { middleware: [bearerAuth({ token: "s3cret" })], log: () => {} });
      const body = JSON.stringify({ kind: "user", body: "hi" });
      for (const authorization of [undefined, "Bearer wrong", "Basic czNjcmV0", "Bearer"]) {
        const headers: Record<string, string> = authorization ? { authorization } : {};
        const res = await app.request("/agents/assistant/a", { method: "POST", body, headers });
        expect(res.status, String(authorization)).toBe(401);
        expect(res.headers.get("content-type")).toMatch(/^application\/json/);
        expect(await res.json()).toEqual({ error: "unauthorized", code: "unauthorized" });
      }
      const ok = await app.request("/agents/assistant/a", { method: "POST", body, headers: { authorization: "Bearer s3cret" } });
      expect(ok.status).toBe(202);
      const stream = await app.request("/agents/assistant/a");
      expect(stream.status).toBe(401);
      expect((await app.request("/healthz")).status).toBe(200);
      await eventually(async () => ((await runtime.sessionLive({ agent: "assistant", instance: "a" })) ? undefined : true));
    } finally {
      await runtime.close();
    }
  });
});

describe("serve({routes})", () => {
  it("serves the caller's routes beside the harness's, outside the /agents middleware, with JSON errors", async () => {
    const own = await startTestServer({
      middleware: [bearerAuth({ token: "s3cret" })],
      routes: (app) => {
        app.post("/hooks/echo", async (c) => c.json({ got: await c.req.text() }, 201));
        app.get("/hooks/boom", () => {
          throw new Error("boom");
        });
      },
    });
    try {
      const res = await fetch(`${own.url}/hooks/echo`, { method: "POST", body: "ping" });
      expect(res.status).toBe(201);
      expect(await res.json()).toEqual({ got: "ping" });
      const boom = await fetch(`${own.url}/hooks/boom`);
      expect(boom.status).toBe(500);
      expect(await boom.json()).toEqual({ error: "internal server error", code: "internal" });
      expect((await fetch(`${own.url}/agents/assistant/a`, { method: "POST", body: "{}" })).status).toBe(401);
    } finally {
      await own.close();
    }
  });
});

/**
 * POSTs a body that never ends (64 KiB chunks, no Content-Length) until the server answers, and
 * resolves with the answer and how much was sent by then; gives up after `capBytes` sent. A
 * server that read such a body whole would never answer.
 */
function endlessPost(url: string, method = "POST", capBytes = 32 * 1024 * 1024): Promise<{ status: number; body: string; sentBytes: number }> {
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered = false;
    const req = httpRequest(url, { method, headers: { "content-type": "application/json" } }, (res) => {
      answered = true;
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (body += d));
      res.on("end", () => {
        resolve({ status: res.statusCode ?? 0, body, sentBytes: sent });
        req.destroy();
      });
    });
    req.on("error", (err) => {
      if (!answered) reject(err);
    });
    const chunk = Buffer.alloc(64 * 1024, "x");
    req.write('{"body":"');
    const pump = () => {
      while (!answered) {
        if (sent >= capBytes) {
          req.destroy();
          return reject(new Error(`${method} ${url}: sent ${sent} bytes and no answer (the server is reading the whole body)`));
        }
        sent += chunk.length;
        if (!req.write(chunk)) return void req.once("drain", pump);
      }
    };
    pump();
  });
}

describe("every route's body has a limit (issue 33, point 6)", () => {
  it("a body that never ends gets 413 JSON on every POST route, well before it is read whole", async () => {
    const limits = { maxBodyBytes: 64 * 1024, maxImportBytes: 128 * 1024, maxUploadBytes: 96 * 1024 };
    const s = await startTestServer(limits);
    try {
      const routes: [string, string, number][] = [
        ["POST", "/agents/assistant/x", limits.maxBodyBytes],
        ["POST", "/agents/assistant/x/compact", limits.maxBodyBytes],
        ["POST", "/agents/assistant/x/steer", limits.maxBodyBytes],
        ["POST", "/agents/assistant/x/followup", limits.maxBodyBytes],
        ["POST", "/agents/assistant/x/fork", limits.maxBodyBytes],
        ["POST", "/agents/assistant/x/submissions/s1/cancel", limits.maxBodyBytes],
        ["POST", "/agents/assistant/x/submissions/s1/approvals/c1", limits.maxBodyBytes],
        ["POST", "/agents/assistant/x/import", limits.maxImportBytes],
        ["POST", "/callbacks/cb1", limits.maxBodyBytes],
        ["POST", "/attachments", limits.maxUploadBytes],
        ["POST", "/attachments/uploads", limits.maxBodyBytes],
        ["POST", "/attachments/uploads/u1/complete", limits.maxBodyBytes],
      ];
      for (const [method, path, limit] of routes) {
        const answer = await endlessPost(`${s.url}${path}`, method);
        expect(answer.status, `${method} ${path}: ${answer.body}`).toBe(413);
        expect(JSON.parse(answer.body), `${method} ${path}`).toMatchObject({ code: "payload_too_large", error: expect.stringContaining(String(limit)) });
        // Answered once the limit was passed, not after reading 32 MiB (socket buffers let the
        // client run a few MiB ahead of what the server read).
        expect(answer.sentBytes, `${method} ${path}`).toBeLessThan(limit + 8 * 1024 * 1024);
      }
      await expect(s.store.getConversation({ agent: "assistant", instance: "x", session: "default" })).rejects.toMatchObject({ code: "conversation_not_found" });
    } finally {
      await s.close();
    }
  });
});

describe("a path with . or .. segments (issue 33, point 13)", () => {
  const paths = ["/callbacks/../agents/assistant/demo", "/callbacks/%2e%2E/agents/assistant/demo", "/agents/assistant/./demo", "/attachments/..%2Fagents/assistant/demo/x/.."];
  const message = JSON.stringify({ kind: "user", body: "hi" });

  it("the embedded server refuses it with 400 JSON before any route (or its middleware) sees the resolved path; nothing admitted", async () => {
    for (const path of paths) {
      const answer = await rawPost(h.url, path, message);
      expect(answer.status, path).toBe(400);
      expect(JSON.parse(answer.body), path).toEqual({ error: 'request path has a "." or ".." segment', code: "invalid_request" });
    }
    await expect(h.store.getConversation({ agent: "assistant", instance: "demo", session: "default" })).rejects.toMatchObject({ code: "conversation_not_found" });
    expect((await rawPost(h.url, "/agents/assistant/demo..dots", message)).status).toBe(202);
  });

  it("a Lambda function URL event through hono's Lambda adapter (as src/lambda/http.ts serves the app) is refused the same way", async () => {
    const { runtime, store } = await startRuntime();
    try {
      const lambda = handle(createApp(runtime));
      const event = (rawPath: string) => ({
        version: "2.0",
        routeKey: "$default",
        rawPath,
        rawQueryString: "",
        headers: { host: "abc.lambda-url.eu-west-1.on.aws", "content-type": "application/json" },
        requestContext: { domainName: "abc.lambda-url.eu-west-1.on.aws", http: { method: "POST", path: rawPath, protocol: "HTTP/1.1", sourceIp: "127.0.0.1", userAgent: "test" } },
        body: message,
        isBase64Encoded: false,
      });
      for (const path of paths) {
        const answer = (await lambda(event(path) as never, {} as never)) as { statusCode: number; body: string };
        expect(answer.statusCode, path).toBe(400);
        expect(JSON.parse(answer.body), path).toMatchObject({ code: "invalid_request" });
      }
      await expect(store.getConversation({ agent: "assistant", instance: "demo", session: "default" })).rejects.toMatchObject({ code: "conversation_not_found" });
      expect(((await lambda(event("/agents/assistant/demo") as never, {} as never)) as { statusCode: number }).statusCode).toBe(202);
    } finally {
      await runtime.close();
    }
  });
});

describe("a write that names its instance in its body is checked as a write there (issue 33, point 8; ADR 0043)", () => {
  it("a tenant's fork into another tenant, or into an instance that is no tenant, is 403 and copies nothing; within its own tenant it is 201", async () => {
    const store = createMemoryStore();
    const tenants = new Set(["acme", "globex"]);
    const owner = ownerPolicy({ ownerClaim: "tenant" });
    // The multitenant example's policy: known tenants only, each principal its own tenant's.
    const runtime = createRuntime({
      agents: { assistant: { initialize: () => localModel({ chunkSize: 4 }) } },
      store,
      flushPolicy: { bytes: 0, intervalMs: 0 },
      authorize: (principal, action, target) => (target.kind === "session" && !tenants.has(target.instance) ? false : owner(principal, action, target)),
    });
    await runtime.start();
    const app = createApp(runtime, {
      log: () => {},
      auth: { authenticate: (request) => (request.headers.get("authorization") === "Bearer ann-of-acme" ? { id: "ann", claims: { tenant: "acme" } } : null) },
    });
    const call = (method: string, path: string, body?: unknown) =>
      app.request(path, { method, headers: { authorization: "Bearer ann-of-acme" }, ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }) });
    try {
      const admitted = await call("POST", "/agents/assistant/acme?wait=true", { kind: "user", body: "hi", session: "s1" });
      expect(admitted.status).toBe(200);
      const source = await store.getConversation({ agent: "assistant", instance: "acme", session: "s1" });
      const from = (await runtime.records(source.id)).at(-1)!.id;
      for (const instance of ["globex", "initech"]) {
        const forked = await call("POST", "/agents/assistant/acme/fork?session=s1", { fromRecordId: from, instance, session: "copy", message: { kind: "user", body: "go on" } });
        await expectError(forked, 403, "forbidden");
        await expect(store.getConversation({ agent: "assistant", instance, session: "copy" })).rejects.toMatchObject({ code: "conversation_not_found" });
        // As a direct write there is.
        await expectError(await call("POST", `/agents/assistant/${instance}`, { kind: "user", body: "hi" }), 403, "forbidden");
        await expectError(await call("POST", `/agents/assistant/${instance}/import?session=copy`, ""), 403, "forbidden");
        await expect(store.getConversation({ agent: "assistant", instance, session: "default" })).rejects.toMatchObject({ code: "conversation_not_found" });
      }
      // Into its own tenant (the default target), the fork goes through.
      const own = await call("POST", "/agents/assistant/acme/fork?session=s1", { fromRecordId: from, session: "copy" });
      expect(own.status, await own.clone().text()).toBe(201);
      expect(await own.json()).toMatchObject({ instance: "acme", session: "copy" });
    } finally {
      await runtime.close();
    }
  });
});
