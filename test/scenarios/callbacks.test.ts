/**
 * Callbacks in the embedded shape, over HTTP (issue 22, ADR 0025): a deferred tool's call runs
 * `start` once (after its `callback_started` record), hands the callback id out, and the run
 * parks until `POST /callbacks/:callbackId` answers with a result or an error. Replays, refusals,
 * expiry and a failed start.
 */
import { afterEach, describe, expect, it } from "vitest";
import { callbackDigest } from "../../src/conversation/callback-id.ts";
import type { ConversationRecord } from "../../src/protocol/records.ts";
import { serve, type ServerHandle } from "../../src/server/server.ts";
import { ManualClock } from "../../src/ports/clock.ts";
import type { HarnessEvent } from "../../src/ports/observer.ts";
import type { Store } from "../../src/store/store.ts";
import { createRuntime, type Runtime } from "../../src/runtime/runtime.ts";
import { defineTool } from "../../src/agent/define-tool.ts";
import { type ScriptStep, scriptedModel } from "../../src/agent/scripted-model.ts";
import * as schema from "../../src/agent/tool-schema.ts";
import { createMemoryStore } from "../../src/memory/index.ts";
import { allRecords } from "../support/runtime-kit.ts";
import { textOf, toolResults } from "../support/model-messages.ts";

const HOUR = 60 * 60 * 1000;

interface Started {
  callId: string;
  callbackId: string;
  callbackPath: string;
  order: string;
}

/** A deferred tool that hands its callback to `handed` (and can be told to fail). */
function labelTool(handed: Started[], options: { fail?: string; callbackTimeoutMs?: number } = {}) {
  return defineTool({
    name: "wait_for_shipping_label",
    label: "Shipping label",
    description: "Asks the warehouse for a shipping label and waits for it.",
    parameters: schema.obj({ order: schema.str() }),
    ...(options.callbackTimeoutMs !== undefined ? { callbackTimeoutMs: options.callbackTimeoutMs } : {}),
    start: async ({ order }, { callbackId, callbackPath, callId }) => {
      if (options.fail) throw new Error(options.fail);
      handed.push({ callId, callbackId, callbackPath, order });
    },
  });
}

const labelCall = (id: string): ScriptStep => [{ toolCall: { id, name: "wait_for_shipping_label", arguments: { order: "A-17" } } }];
const summary: ScriptStep = (messages) => [{ text: `done: ${toolResults(messages).map((m) => textOf(m)).join(" | ")}` }];

interface Setup {
  runtime: Runtime;
  store: Store;
  server: ServerHandle;
  clock: ManualClock;
  events: HarnessEvent[];
  scripted: ReturnType<typeof scriptedModel>;
  post(path: string, body: unknown): Promise<{ status: number; json: any }>;
}

let open: Setup | undefined;
afterEach(async () => {
  await open?.server.close();
  await open?.runtime.close();
  open = undefined;
});

async function setup(steps: ScriptStep[], tools: unknown[], maxBodyBytes?: number): Promise<Setup> {
  const clock = new ManualClock(Date.parse("2026-03-01T12:00:00Z"));
  const store = createMemoryStore({ clock });
  const scripted = scriptedModel(steps);
  const events: HarnessEvent[] = [];
  const runtime = createRuntime({
    agents: { support: { initialize: () => ({ model: scripted.model, streamFn: scripted.streamFn, tools: tools as never, submissionTimeoutMs: 48 * HOUR }) } },
    store,
    clock,
    observers: [(e) => events.push(e)],
    sweepIntervalMs: 60_000,
  });
  await runtime.start();
  const server = await serve(runtime, { port: 0, log: () => {}, ...(maxBodyBytes ? { maxBodyBytes } : {}) });
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: typeof body === "string" ? body : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, json: text === "" ? undefined : JSON.parse(text) };
  };
  open = { runtime, store, server, clock, events, scripted, post };
  return open;
}

async function until<T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean, ms = 5_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function dispatch(s: Setup, body: string) {
  const res = await s.post(`/agents/support/shop`, { kind: "user", body });
  expect(res.status).toBe(202);
  return res.json as { submissionId: string; conversationId: string };
}

const kinds = (log: ConversationRecord[]) => log.map((r) => r.kind).filter((k) => !k.startsWith("assistant_text") && k !== "assistant_message_started");

describe("callbacks (embedded, over HTTP)", () => {
  it("answered with a result: start ran once, the run waited parked, the result is the call's outcome", async () => {
    const handed: Started[] = [];
    const s = await setup([labelCall("call-1"), summary], [labelTool(handed)]);
    const { submissionId, conversationId } = await dispatch(s, "label for A-17");
    const parked = await until("the park", () => s.store.getSubmission(submissionId), (sub) => sub.status === "waiting");
    expect(parked.waitingFor).toEqual([{ kind: "callback", callId: "call-1", toolName: "wait_for_shipping_label", expiresAt: s.clock.now() + 24 * HOUR }]);
    expect(handed).toHaveLength(1);
    const [{ callbackId, callbackPath }] = handed as [Started];
    expect(callbackId).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(callbackPath).toBe(`/callbacks/${callbackId}`);

    // The id itself is nowhere: only its digest is recorded and stored.
    const log = await allRecords(s.store, conversationId);
    expect(JSON.stringify(log)).not.toContain(callbackId);
    expect(log.find((r) => r.kind === "callback_started")?.payload).toEqual({
      callId: "call-1",
      toolName: "wait_for_shipping_label",
      expiresAt: new Date(s.clock.now() + 24 * HOUR).toISOString(),
      callbackDigest: callbackDigest(callbackId),
    });
    expect(JSON.stringify(await s.store.findCallback(callbackDigest(callbackId)))).not.toContain(callbackId);

    const answered = await s.post(callbackPath, { result: { label: "1Z999AA1", carrier: "UPS" } });
    expect(answered).toEqual({ status: 200, json: { status: "answered", replayed: false } });
    expect(await s.runtime.wait(submissionId)).toMatchObject({ status: "succeeded" });
    expect(textOf(s.scripted.calls[1]!.messages.at(-1) as never)).toBe('{"label":"1Z999AA1","carrier":"UPS"}');
    expect(kinds(await allRecords(s.store, conversationId))).toEqual([
      "conversation_created",
      "user_message",
      "assistant_tool_call",
      "assistant_message_completed",
      "callback_started",
      "tool_outcome",
      "assistant_message_completed",
      "submission_settled",
    ]);
    expect(handed, "start ran once").toHaveLength(1);

    // The same answer again: 200, a replay; another one: 409.
    expect(await s.post(callbackPath, { result: { carrier: "UPS", label: "1Z999AA1" } })).toEqual({ status: 200, json: { status: "answered", replayed: true } });
    const other = await s.post(callbackPath, { result: { label: "other" } });
    expect(other.status).toBe(409);
    expect(other.json.code).toBe("already_answered");
    const types = s.events.filter((e) => e.correlation.submissionId === submissionId).map((e) => e.type);
    expect(types.filter((t) => t === "callback_started")).toHaveLength(1);
    expect(types.filter((t) => t === "callback_answered")).toHaveLength(1);
    expect(types.filter((t) => t === "submission_resumed")).toHaveLength(1);
  });

  it("answered with an error: the call's outcome is the error, the model reads it", async () => {
    const handed: Started[] = [];
    const s = await setup([labelCall("call-1"), summary], [labelTool(handed)]);
    const { submissionId, conversationId } = await dispatch(s, "label please");
    await until("start", async () => handed.length, (n) => n === 1);
    await until("the park", () => s.store.getSubmission(submissionId), (sub) => sub.status === "waiting");
    expect((await s.post(handed[0]!.callbackPath, { error: "warehouse closed" })).status).toBe(200);
    expect(await s.runtime.wait(submissionId)).toMatchObject({ status: "succeeded" });
    const outcome = (await allRecords(s.store, conversationId)).find((r) => r.kind === "tool_outcome");
    expect(outcome?.payload).toEqual({ callId: "call-1", toolName: "wait_for_shipping_label", content: [{ type: "text", text: "warehouse closed" }], isError: true });
    expect(textOf(s.scripted.calls[1]!.messages.at(-1) as never)).toBe("warehouse closed");
  });

  it("an answer that comes while start is still returning (before the park) is kept and delivered", async () => {
    const answeredEarly: Array<{ status: number }> = [];
    let s!: Setup;
    const eager = defineTool({
      name: "eager",
      label: "Eager",
      description: "Its callback answers at once.",
      parameters: schema.obj({}),
      start: async (_args, { callbackPath }) => {
        answeredEarly.push(await s.post(callbackPath, { result: "fast" }));
      },
    });
    s = await setup([[{ toolCall: { id: "call-e", name: "eager", arguments: {} } }], summary], [eager]);
    const { submissionId } = await dispatch(s, "go");
    expect(await s.runtime.wait(submissionId)).toMatchObject({ status: "succeeded" });
    expect(answeredEarly).toEqual([{ status: 200, json: { status: "answered", replayed: false } }]);
    expect(textOf(s.scripted.calls[1]!.messages.at(-1) as never)).toBe("fast");
  });

  it("unknown, ill-formed and expired ids are 404; bad bodies 400 and too large 413; nothing stored", async () => {
    const handed: Started[] = [];
    const s = await setup([labelCall("call-1"), summary], [labelTool(handed, { callbackTimeoutMs: 10 * 60_000 })], 64 * 1024);
    const { submissionId, conversationId } = await dispatch(s, "label");
    await until("the park", () => s.store.getSubmission(submissionId), (sub) => sub.status === "waiting");
    const path = handed[0]!.callbackPath;
    const before = (await allRecords(s.store, conversationId)).length;
    const refused: Array<[string, string, unknown, number, string]> = [
      ["an unknown id", "/callbacks/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", { result: 1 }, 404, "callback_not_found"],
      ["an ill-formed id", "/callbacks/no", { result: 1 }, 404, "callback_not_found"],
      ["neither result nor error", path, { answer: 1 }, 400, "invalid_request"],
      ["both result and error", path, { result: 1, error: "x" }, 400, "invalid_request"],
      ["a non-string error", path, { error: 42 }, 400, "invalid_request"],
      ["a body that is not JSON", path, "result=1", 400, "invalid_request"],
      ["a body over the limit", path, { result: "x".repeat(70 * 1024) }, 413, "payload_too_large"],
    ];
    for (const [what, p, body, status, code] of refused) {
      const res = await s.post(p, body);
      expect(res.status, what).toBe(status);
      expect(res.json, what).toMatchObject({ code });
    }
    expect((await allRecords(s.store, conversationId)).length, "nothing appended").toBe(before);
    expect((await s.store.getSubmission(submissionId)).status).toBe("waiting");

    // Past its expiry: answered "callback expired" (at the first sweep, or by a late caller).
    s.clock.set(s.clock.now() + 10 * 60_000 + 1);
    const late = await s.post(path, { result: "too late" });
    expect(late.status).toBe(404);
    expect(late.json.code).toBe("callback_not_found");
    expect(await s.runtime.wait(submissionId)).toMatchObject({ status: "succeeded" });
    expect(textOf(s.scripted.calls[1]!.messages.at(-1) as never)).toBe("callback expired");
    expect(s.events.filter((e) => e.type === "callback_expired")).toHaveLength(1);
    expect((await s.post(path, { result: "later still" })).status).toBe(404);
  });

  it("a sweep expires an unanswered callback at its time", async () => {
    const handed: Started[] = [];
    const s = await setup([labelCall("call-1"), summary], [labelTool(handed, { callbackTimeoutMs: 30 * 60_000 })]);
    const { submissionId } = await dispatch(s, "label");
    await until("the park", () => s.store.getSubmission(submissionId), (sub) => sub.status === "waiting");
    s.clock.set(s.clock.now() + 30 * 60_000);
    for (let i = 0; i < 5 && (await s.store.getSubmission(submissionId)).status === "waiting"; i++) await s.runtime.sweep();
    expect(await s.runtime.wait(submissionId)).toMatchObject({ status: "succeeded" });
    expect(textOf(s.scripted.calls[1]!.messages.at(-1) as never)).toBe("callback expired");
  });

  it("a start that fails answers the call with its error and closes the callback", async () => {
    const handed: Started[] = [];
    const s = await setup([labelCall("call-1"), summary], [labelTool(handed, { fail: "warehouse API down" })]);
    const { submissionId, conversationId } = await dispatch(s, "label");
    expect(await s.runtime.wait(submissionId)).toMatchObject({ status: "succeeded" });
    expect(textOf(s.scripted.calls[1]!.messages.at(-1) as never)).toContain("warehouse API down");
    const log = await allRecords(s.store, conversationId);
    const digest = log.find((r) => r.kind === "callback_started")!.payload as { callbackDigest: string };
    const wait = await s.store.findCallback(digest.callbackDigest);
    expect(wait?.answer, "closed: its id answers nothing").toMatchObject({ kind: "callback", expired: true, error: "start failed: warehouse API down" });
  });
});
