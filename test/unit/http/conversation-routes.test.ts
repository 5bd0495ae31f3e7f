/**
 * Deleting a conversation over HTTP in the embedded shape (ADR 0034), on the memory and the
 * SQLite store: `DELETE /agents/:agent/:instance` takes the conversation with its attachments,
 * checkpoint, submissions and its subagent's conversation; a blob another conversation references
 * stays; a second DELETE answers the same; a running submission makes it a 409 (nothing deleted)
 * unless `cancel=true`; bad input is a 400 naming the problem.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkpointOf } from "../../../src/conversation/checkpoint.ts";
import { scriptedModel } from "../../../src/agent/scripted-model.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";
import type { AttachmentRef, ConversationRecord, TaskSpawnedPayload } from "../../../src/protocol/records.ts";
import { createRuntime, type Runtime } from "../../../src/runtime/runtime.ts";
import { serve, type ServerHandle } from "../../../src/server/server.ts";
import { openSqliteStore } from "../../../src/sqlite/index.ts";
import type { Store } from "../../../src/store/store.ts";
import type { SessionKey } from "../../../src/store/submission.ts";
import { pngOfSize } from "../../support/attachment-fixtures.ts";
import { Gate, gatedLocalModel } from "../../support/test-server.ts";

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "deletion-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.each([
  ["memory", () => createMemoryStore()],
  ["sqlite", () => openSqliteStore({ path: join(dir, `store-${Math.random().toString(36).slice(2)}.db`) })],
])("DELETE /agents/:agent/:instance (%s store)", (_name, makeStore) => {
  let store: Store;
  let runtime: Runtime;
  let server: ServerHandle;
  const gate = new Gate();

  beforeAll(async () => {
    store = makeStore();
    const lead = scriptedModel([
      [{ toolCall: { id: "call-1", name: "task", arguments: { agent: "researcher", prompt: "look at it" } } }],
      [{ text: "the parent is done" }],
    ]);
    runtime = createRuntime({
      agents: {
        lead: { initialize: () => ({ model: lead.model, streamFn: lead.streamFn }) },
        researcher: { description: "Looks things up", initialize: () => ({ ...gatedLocalModel(gate) }) },
      },
      store,
      flushPolicy: { bytes: 0, intervalMs: 0 },
      subagents: { lead: ["researcher"] },
      onObserverError: () => {},
    });
    await runtime.start();
    server = await serve(runtime, { port: 0, hostname: "127.0.0.1", log: () => {}, maxRequestWaitMs: 20_000 });
  });
  afterAll(async () => {
    gate.release();
    await server.close();
    await runtime.close();
  });

  async function upload(seed: number): Promise<AttachmentRef> {
    const res = await fetch(`${server.url}/attachments`, { method: "POST", headers: { "content-type": "image/png" }, body: pngOfSize(300, seed) });
    expect(res.status).toBe(201);
    return (await res.json()) as AttachmentRef;
  }

  async function dispatch(agent: string, instance: string, body: string, attachments: AttachmentRef[] = [], wait = true) {
    const res = await fetch(`${server.url}/agents/${agent}/${instance}${wait ? "?wait=true" : ""}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ kind: "user", body, ...(attachments.length > 0 ? { attachments } : {}) }),
    });
    expect(res.status, await res.clone().text()).toBe(wait ? 200 : 202);
    return (await res.json()) as { submissionId: string; conversationId: string; status?: string };
  }

  const remove = (path: string) => fetch(`${server.url}${path}`, { method: "DELETE" });

  it("deletes the conversation with its attachments, checkpoint, submissions and child; keeps a shared blob; answers the same twice", async () => {
    const own = await upload(101);
    const shared = await upload(102);
    const parent = await dispatch("lead", "web", "look at these", [own, shared]);
    expect(parent.status).toBe("succeeded");
    const other = await dispatch("researcher", "other", "this one too", [shared]);
    const key: SessionKey = { agent: "lead", instance: "web", session: "default" };
    const records = await store.readRecords(parent.conversationId, "");
    const spawned = records.find((r) => r.kind === "task_spawned")!.payload as TaskSpawnedPayload;
    const child = await store.getSubmission(spawned.childSubmissionId);
    await store.writeCheckpoint(parent.conversationId, checkpointOf({ earlier: [], records }, records.at(-1)!.id));
    expect(await store.readCheckpoint(parent.conversationId)).toBeDefined();
    const otherRecords = await store.readRecords(other.conversationId, "");

    const res = await remove("/agents/lead/web");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "deleted", session: "default" });

    await expect(store.getConversation(key)).rejects.toMatchObject({ code: "conversation_not_found" });
    expect(await store.readRecords(parent.conversationId, "")).toEqual([]);
    expect(await store.readCheckpoint(parent.conversationId)).toBeUndefined();
    await expect(store.getSubmission(parent.submissionId)).rejects.toMatchObject({ code: "submission_not_found" });
    await expect(store.getConversation(child.sessionKey), "the child's conversation").rejects.toMatchObject({ code: "conversation_not_found" });
    expect(await store.readRecords(child.conversationId, "")).toEqual([]);
    await expect(store.getSubmission(child.id)).rejects.toMatchObject({ code: "submission_not_found" });
    expect((await fetch(`${server.url}/attachments/${own.digest}`)).status, "the blob only it referenced").toBe(404);
    expect((await fetch(`${server.url}/attachments/${shared.digest}`)).status, "the shared blob").toBe(200);
    expect(await store.readRecords(other.conversationId, ""), "the other conversation").toEqual(otherRecords);
    const listing = await fetch(`${server.url}/agents/lead/web/submissions`);
    expect(await listing.json()).toEqual({ submissions: [] });
    expect((await fetch(`${server.url}/agents/lead/web`)).status, "nothing to stream").toBe(404);

    const again = await remove("/agents/lead/web");
    expect(again.status, "a second DELETE").toBe(200);
    expect(await again.json()).toEqual({ status: "deleted", session: "default" });
  });

  it("is a 409 while a submission runs (nothing deleted), and cancels it first with cancel=true", async () => {
    gate.close();
    const running = await dispatch("researcher", "busy", "[hold] take your time", [], false);
    await gate.entered();
    const refused = await remove("/agents/researcher/busy");
    expect(refused.status).toBe(409);
    expect(await refused.json()).toMatchObject({ code: "session_busy" });
    expect((await store.getSubmission(running.submissionId)).status).toBe("running");
    expect((await store.readRecords(running.conversationId, "")).length).toBeGreaterThan(0);

    const cancelled = await remove("/agents/researcher/busy?cancel=true");
    expect(cancelled.status).toBe(200);
    await expect(store.getSubmission(running.submissionId)).rejects.toMatchObject({ code: "submission_not_found" });
    expect(await store.readRecords(running.conversationId, "")).toEqual([]);
    gate.release();
  });

  it("refuses bad input with a 400 or 404 naming the problem", async () => {
    const bad = await remove("/agents/researcher/x?cancel=maybe");
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ code: "invalid_request", error: expect.stringContaining("cancel") });
    const badSession = await remove("/agents/researcher/x?session=" + encodeURIComponent("../.."));
    expect(badSession.status).toBe(400);
    const unknown = await remove("/agents/nobody/x");
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ code: "unknown_agent" });
  });
});

describe.each([
  ["memory", () => createMemoryStore()],
  ["sqlite", () => openSqliteStore({ path: join(dir, `fork-${Math.random().toString(36).slice(2)}.db`) })],
])("POST /agents/:agent/:instance/fork (%s store)", (_name, makeStore) => {
  let store: Store;
  let runtime: Runtime;
  let server: ServerHandle;
  const model = scriptedModel([[{ text: "first answer" }], [{ text: "second answer" }], [{ text: "answer to the edit" }]]);

  beforeAll(async () => {
    store = makeStore();
    runtime = createRuntime({
      agents: { chat: { initialize: () => ({ model: model.model, streamFn: model.streamFn }) } },
      store,
      flushPolicy: { bytes: 0, intervalMs: 0 },
      onObserverError: () => {},
    });
    await runtime.start();
    server = await serve(runtime, { port: 0, hostname: "127.0.0.1", log: () => {}, maxRequestWaitMs: 20_000 });
  });
  afterAll(async () => {
    await server.close();
    await runtime.close();
  });

  const post = (path: string, body: unknown) =>
    fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const textOf = (m: { role: string; content: unknown }) =>
    typeof m.content === "string" ? m.content : (m.content as { type: string; text?: string }[]).map((c) => c.text ?? "").join("");
  const plain = (r: ConversationRecord) => {
    const { id: _id, conversationId: _c, session: _s, ...rest } = r;
    return rest;
  };

  it("forks after a mid-conversation record: the model sees the prefix plus the new message, not what came after", async () => {
    expect((await post("/agents/chat/thread?wait=true", { kind: "user", body: "first question" })).status).toBe(200);
    expect((await post("/agents/chat/thread?wait=true", { kind: "user", body: "second question" })).status).toBe(200);
    const source = await store.getConversation({ agent: "chat", instance: "thread", session: "default" });
    const log = await store.readRecords(source.id, "");
    const firstSettled = log.find((r) => r.kind === "submission_settled")!;

    const res = await post("/agents/chat/thread/fork", { fromRecordId: firstSettled.id, session: "edited", message: { kind: "user", body: "edited second question" } });
    expect(res.status, await res.clone().text()).toBe(201);
    const forked = (await res.json()) as { agent: string; instance: string; session: string; conversationId: string; records: number; submissionId: string };
    expect(forked).toMatchObject({ agent: "chat", instance: "thread", session: "edited", submissionId: expect.any(String) });
    expect(forked.conversationId).not.toBe(source.id);
    const settled = await runtime.wait(forked.submissionId);
    expect(settled.status).toBe("succeeded");

    // The model's context of the forked run: the prefix and the edit.
    const sent = model.calls[2]!.messages.filter((m) => m.role === "user" || m.role === "assistant").map((m) => `${m.role}: ${textOf(m)}`);
    expect(sent).toEqual(["user: first question", "assistant: first answer", "user: edited second question"]);
    // The copied history equals the source's prefix (streaming deltas aside) apart from ids and address.
    const prefix = log.slice(0, log.indexOf(firstSettled) + 1).filter((r) => !r.kind.endsWith("_delta"));
    const copied = (await store.readRecords(forked.conversationId, "")).slice(0, forked.records);
    expect(copied.map(plain).slice(1)).toEqual(prefix.map(plain).slice(1));
    expect(copied[0]).toMatchObject({ kind: "conversation_created", session: "edited", payload: { agent: "chat", instance: "thread", session: "edited" } });
    expect(new Set(copied.map((r) => r.id)).size).toBe(copied.length);
    expect(copied.every((r) => !log.some((s) => s.id === r.id)), "new ids").toBe(true);
    // The source is untouched.
    expect(await store.readRecords(source.id, "")).toEqual(log);
  });

  it("refuses a record the conversation does not hold, a taken target session and a missing fromRecordId (400, nothing created)", async () => {
    const unknown = await post("/agents/chat/thread/fork", { fromRecordId: "01ZZZZZZZZZZZZZZZZZZZZZZZZ", session: "nope" });
    expect(unknown.status).toBe(400);
    expect(await unknown.json()).toMatchObject({ code: "invalid_request", error: expect.stringContaining("fromRecordId") });
    await expect(store.getConversation({ agent: "chat", instance: "thread", session: "nope" })).rejects.toMatchObject({ code: "conversation_not_found" });
    const source = await store.getConversation({ agent: "chat", instance: "thread", session: "default" });
    const first = (await store.readRecords(source.id, ""))[0]!;
    const taken = await post("/agents/chat/thread/fork", { fromRecordId: first.id, session: "default" });
    expect(taken.status).toBe(409);
    expect(await taken.json()).toMatchObject({ code: "conversation_exists", error: expect.stringContaining("already has a conversation") });
    expect((await post("/agents/chat/thread/fork", {})).status).toBe(400);
    expect((await post("/agents/chat/missing/fork", { fromRecordId: first.id })).status).toBe(404);
    // A message a dispatch would refuse is refused before anything is copied.
    const oversized = await post("/agents/chat/thread/fork", { fromRecordId: first.id, session: "too-big", message: { kind: "user", body: "x".repeat(256 * 1024 + 1) } });
    expect(oversized.status).toBe(400);
    expect(await oversized.json()).toMatchObject({ code: "invalid_dispatch", error: expect.stringContaining("body exceeds") });
    await expect(store.getConversation({ agent: "chat", instance: "thread", session: "too-big" })).rejects.toMatchObject({ code: "conversation_not_found" });
  });
});
