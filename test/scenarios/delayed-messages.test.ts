/**
 * Delayed messages in the embedded shape, over HTTP (issue 22, ADR 0025): a dispatch with
 * `notBefore` is admitted now (202 with its ids, idempotent by dispatch id) and joins its
 * session's order only at that time; the session goes on meanwhile; a cancel before then settles
 * it with no record. Bad input: a clear 400, nothing stored.
 */
import { afterEach, describe, expect, it } from "vitest";
import { serve, type ServerHandle } from "../../src/server/server.ts";
import { type Clock, ManualClock, systemClock } from "../../src/ports/clock.ts";
import type { Store } from "../../src/store/store.ts";
import { createRuntime, type Runtime } from "../../src/runtime/runtime.ts";
import { scriptedModel, type ScriptStep } from "../../src/agent/scripted-model.ts";
import { createMemoryStore } from "../../src/memory/index.ts";
import { safeCallId } from "../../src/conversation/task-names.ts";
import { allRecords } from "../support/runtime-kit.ts";
import { lastUserText } from "../support/model-messages.ts";

const HOUR = 60 * 60 * 1000;
const echo: ScriptStep = (messages) => [{ text: `re: ${lastUserText(messages)}` }];

interface Setup {
  runtime: Runtime;
  store: Store;
  server: ServerHandle;
  scripted: ReturnType<typeof scriptedModel>;
  post(path: string, body: unknown): Promise<{ status: number; json: any }>;
  get(path: string): Promise<{ status: number; json: any }>;
}

let open: Setup | undefined;
afterEach(async () => {
  await open?.server.close();
  await open?.runtime.close();
  open = undefined;
});

async function setup(clock: Clock): Promise<Setup> {
  const store = createMemoryStore({ clock });
  const scripted = scriptedModel(Array.from({ length: 10 }, () => echo));
  const runtime = createRuntime({
    agents: { assistant: { initialize: () => ({ model: scripted.model, streamFn: scripted.streamFn }) } },
    store,
    clock,
    sweepIntervalMs: 60_000,
  });
  await runtime.start();
  const server = await serve(runtime, { port: 0, log: () => {} });
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${server.url}${path}`, { method, headers: { "content-type": "application/json" }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const text = await res.text();
    return { status: res.status, json: text === "" ? undefined : JSON.parse(text) };
  };
  open = { runtime, store, server, scripted, post: (p, b) => call("POST", p, b), get: (p) => call("GET", p) };
  return open;
}

describe("delayed messages (embedded, over HTTP)", () => {
  it("runs at its time, behind what was admitted before then; the session goes on meanwhile", async () => {
    const clock = new ManualClock(Date.parse("2026-03-01T12:00:00Z"));
    const s = await setup(clock);
    const notBefore = new Date(clock.now() + HOUR).toISOString();
    const admitted = await s.post("/agents/assistant/desk", { kind: "user", body: "remind me", notBefore, dispatchId: "reminder-1" });
    expect(admitted.status).toBe(202);
    const { submissionId, conversationId } = admitted.json;
    expect(submissionId).toBe("reminder-1");
    expect(typeof conversationId).toBe("string");
    // Idempotent by dispatch id, like any dispatch.
    expect((await s.post("/agents/assistant/desk", { kind: "user", body: "remind me", notBefore, dispatchId: "reminder-1" })).json).toEqual(admitted.json);

    const listed = await s.get("/agents/assistant/desk/submissions");
    expect(listed.json.submissions).toEqual([
      expect.objectContaining({ id: submissionId, status: "waiting", waitingFor: [{ kind: "time", until: clock.now() + HOUR }] }),
    ]);

    // The session goes on without it.
    const now = await s.post("/agents/assistant/desk", { kind: "user", body: "hello now" });
    expect(await s.runtime.wait(now.json.submissionId)).toMatchObject({ status: "succeeded" });
    expect(s.scripted.calls).toHaveLength(1);
    expect((await s.store.getSubmission(submissionId)).status).toBe("waiting");
    await s.runtime.sweep();
    expect((await s.store.getSubmission(submissionId)).status, "not before its time").toBe("waiting");

    clock.set(clock.now() + HOUR);
    const report = await s.runtime.sweep();
    expect(report.released).toBe(1);
    expect(await s.runtime.wait(submissionId)).toMatchObject({ status: "succeeded" });
    expect(lastUserText(s.scripted.calls[1]!.messages)).toBe("remind me");
    const log = await allRecords(s.store, conversationId);
    const inputs = log.filter((r) => r.kind === "user_message").map((r) => r.submissionId);
    expect(inputs, "it joined the conversation after the message that ran meanwhile").toEqual([now.json.submissionId, submissionId]);
    const row = await s.store.getSubmission(submissionId);
    expect(row.attemptCount).toBe(1);
  });

  it("with the wall clock, the runtime's timer runs it at its time (no sweep needed)", async () => {
    const s = await setup(systemClock);
    const at = Date.now() + 1_500;
    const admitted = await s.post("/agents/assistant/desk", { kind: "user", body: "soon", notBefore: new Date(at).toISOString() });
    expect(admitted.status).toBe(202);
    expect((await s.store.getSubmission(admitted.json.submissionId)).status).toBe("waiting");
    const settled = await s.runtime.wait(admitted.json.submissionId);
    expect(settled).toMatchObject({ status: "succeeded" });
    expect(Date.now()).toBeGreaterThanOrEqual(at);
  });

  it("cancelled before its time: settled at once, no record, never runs", async () => {
    const clock = new ManualClock(Date.parse("2026-03-01T12:00:00Z"));
    const s = await setup(clock);
    const admitted = await s.post("/agents/assistant/desk", { kind: "user", body: "never", notBefore: new Date(clock.now() + HOUR).toISOString() });
    const { submissionId, conversationId } = admitted.json;
    const cancelled = await s.post(`/agents/assistant/desk/submissions/${submissionId}/cancel`, { reason: "not needed" });
    expect(cancelled).toEqual({ status: 200, json: { submissionId, status: "cancelled", outcome: { status: "failed", error: "cancelled: not needed", errorCode: "cancelled" } } });
    expect(await s.runtime.wait(submissionId)).toEqual({ status: "failed", error: "cancelled: not needed", errorCode: "cancelled" });
    clock.set(clock.now() + 2 * HOUR);
    expect((await s.runtime.sweep()).released).toBe(0);
    expect(s.scripted.calls).toHaveLength(0);
    expect((await allRecords(s.store, conversationId)).filter((r) => r.submissionId === submissionId)).toEqual([]);
  });

  it("a notBefore in the past runs now; one beyond a year, or not a time, is a 400 and stores nothing", async () => {
    const clock = new ManualClock(Date.parse("2026-03-01T12:00:00Z"));
    const s = await setup(clock);
    const past = await s.post("/agents/assistant/desk", { kind: "user", body: "late", notBefore: "2026-02-01T00:00:00Z" });
    expect(past.status).toBe(202);
    expect(await s.runtime.wait(past.json.submissionId)).toMatchObject({ status: "succeeded" });

    const bad: Array<[string, unknown]> = [
      ["beyond a year", new Date(clock.now() + 367 * 24 * HOUR).toISOString()],
      ["not a time", "tomorrow at 9"],
      ["without a zone", "2026-03-02T09:00:00"],
      ["not a string", 1767225600000],
    ];
    for (const [what, notBefore] of bad) {
      const res = await s.post("/agents/assistant/other", { kind: "user", body: "x", notBefore, dispatchId: `bad-${what.replace(/ /g, "-")}` });
      expect(res.status, what).toBe(400);
      expect(res.json.code, what).toMatch(/invalid_dispatch|invalid_request/);
      expect(res.json.error, what).toContain("notBefore");
    }
    expect((await s.get("/agents/assistant/other/submissions")).json.submissions, "nothing stored").toEqual([]);
    const nextYear = await s.post("/agents/assistant/other", { kind: "user", body: "in a year", notBefore: new Date(clock.now() + 365 * 24 * HOUR).toISOString() });
    expect(nextYear.status, "up to a year ahead is fine").toBe(202);
  });
});

describe("the schedule_message tool", () => {
  it("an agent schedules its own follow-up: admitted delayed, named after the call, it arrives as a scheduled_message signal", async () => {
    const { scheduleMessageTool } = await import("../../src/agent/schedule-message-tool.ts");
    const clock = new ManualClock(Date.parse("2026-03-01T12:00:00Z"));
    const store = createMemoryStore({ clock });
    const scripted = scriptedModel([
      [{ toolCall: { id: "call-remind", name: "schedule_message", arguments: { message: "check the invoice", at: "2026-03-02T09:00:00Z" } } }],
      [{ text: "I will remind you." }],
      (messages) => [{ text: `reminder: ${lastUserText(messages)}` }],
    ]);
    const runtime = createRuntime({
      agents: { assistant: { initialize: () => ({ model: scripted.model, streamFn: scripted.streamFn, tools: [scheduleMessageTool()], submissionTimeoutMs: 48 * HOUR }) } },
      store,
      clock,
      sweepIntervalMs: 60_000,
    });
    await runtime.start();
    try {
      const first = await runtime.dispatch({ agent: "assistant", instance: "me", message: { kind: "user", body: "remind me tomorrow at 9 to check the invoice" } });
      expect(await runtime.wait(first.submissionId)).toMatchObject({ status: "succeeded" });
      const listed = await runtime.listSubmissions({ agent: "assistant", instance: "me" });
      const scheduled = listed.submissions.find((s) => s.id !== first.submissionId)!;
      expect(scheduled.id, "named after the call").toBe(`${first.submissionId}:sched:${safeCallId("call-remind")}`);
      expect(scheduled).toMatchObject({ status: "waiting", kind: "signal", waitingFor: [{ kind: "time", until: Date.parse("2026-03-02T09:00:00Z") }] });
      clock.set(Date.parse("2026-03-02T09:00:00Z"));
      expect((await runtime.sweep()).released).toBe(1);
      expect(await runtime.wait(scheduled.id)).toMatchObject({ status: "succeeded" });
      const log = await allRecords(store, first.conversationId);
      const signal = log.find((r) => r.kind === "signal" && r.submissionId === scheduled.id);
      expect(signal?.payload).toEqual({ type: "scheduled_message", body: "check the invoice", sender: { source: "schedule_message", submissionId: first.submissionId } });
      expect(scripted.calls).toHaveLength(3);
    } finally {
      await runtime.close();
    }
  });

  it("a scheduled message arms the runtime's timer as a notBefore dispatch does: it runs at its time, not at the next sweep (issue 33)", async () => {
    const { scheduleMessageTool } = await import("../../src/agent/schedule-message-tool.ts");
    const scripted = scriptedModel([
      [{ toolCall: { id: "call-soon", name: "schedule_message", arguments: { message: "time is up", delaySeconds: 0.2 } } }],
      [{ text: "I will tell you." }],
      (messages) => [{ text: `reminder: ${lastUserText(messages)}` }],
    ]);
    const runtime = createRuntime({
      agents: { assistant: { initialize: () => ({ model: scripted.model, streamFn: scripted.streamFn, tools: [scheduleMessageTool()] }) } },
      store: createMemoryStore(),
      // The next sweep is an hour away: only the timer can release the message while the test runs.
      sweepIntervalMs: HOUR,
    });
    await runtime.start();
    try {
      const first = await runtime.dispatch({ agent: "assistant", instance: "me", message: { kind: "user", body: "tell me in a moment" } });
      expect(await runtime.wait(first.submissionId)).toMatchObject({ status: "succeeded" });
      const scheduledId = `${first.submissionId}:sched:${safeCallId("call-soon")}`;
      const deadline = Date.now() + 20_000;
      let status = (await runtime.submission({ agent: "assistant", instance: "me", submissionId: scheduledId })).status;
      while (status !== "settled" && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
        status = (await runtime.submission({ agent: "assistant", instance: "me", submissionId: scheduledId })).status;
      }
      expect(status, "released by the timer, with no sweep in between").toBe("settled");
      expect(await runtime.wait(scheduledId)).toMatchObject({ status: "succeeded" });
      expect(scripted.calls, "the reminder reached the model").toHaveLength(3);
    } finally {
      await runtime.close();
    }
  });
});
