/**
 * Tool approval in the embedded shape, over HTTP (issue 22, ADR 0025): a call of a tool that
 * needs approval parks its submission `waiting` (no lease, nothing running) until a person
 * decides through `POST …/submissions/:id/approvals/:callId`; approved it runs once, denied or
 * expired the model reads the denial. Answers, idempotency and bad input per the issue.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { ConversationRecord } from "../../src/protocol/records.ts";
import { serve, type ServerHandle } from "../../src/server/server.ts";
import { ManualClock } from "../../src/ports/clock.ts";
import type { HarnessEvent } from "../../src/ports/observer.ts";
import type { Store } from "../../src/store/store.ts";
import { createRuntime, type Runtime } from "../../src/runtime/runtime.ts";
import { defineTool } from "../../src/agent/define-tool.ts";
import type { ScriptStep } from "../../src/agent/scripted-model.ts";
import { scriptedModel } from "../../src/agent/scripted-model.ts";
import * as schema from "../../src/agent/tool-schema.ts";
import { createMemoryStore } from "../../src/memory/index.ts";
import { allRecords, settleTicks } from "../support/runtime-kit.ts";
import { textOf, toolResults } from "../support/model-messages.ts";

const HOUR = 60 * 60 * 1000;

/** A `refund` tool that needs approval above $100, counting its runs. */
function refundTool(runs: { amount: number }[], extra: { approvalTimeoutMs?: number } = {}) {
  return defineTool({
    name: "refund",
    label: "Refund",
    description: "Refund an amount to the customer.",
    parameters: schema.obj({ amount: schema.num() }),
    needsApproval: (args) => args.amount > 100,
    ...extra,
    execute: async (_id, { amount }) => {
      runs.push({ amount });
      return { content: [{ type: "text", text: `refunded $${amount}` }], details: { amount } };
    },
  });
}

const refundCall = (id: string, amount: number): ScriptStep => [{ toolCall: { id, name: "refund", arguments: { amount } } }];
/** A last step that says what the tools answered. */
const summary: ScriptStep = (messages) => [{ text: `done: ${toolResults(messages).map((m) => textOf(m)).join(" | ")}` }];

interface Setup {
  runtime: Runtime;
  store: Store;
  server: ServerHandle;
  clock: ManualClock;
  events: HarnessEvent[];
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

async function setup(steps: ScriptStep[], tools: ReturnType<typeof refundTool>[], options: { submissionTimeoutMs?: number } = {}): Promise<Setup> {
  const clock = new ManualClock(Date.parse("2026-03-01T12:00:00Z"));
  const store = createMemoryStore({ clock });
  const scripted = scriptedModel(steps);
  const events: HarnessEvent[] = [];
  const runtime = createRuntime({
    agents: { support: { initialize: () => ({ model: scripted.model, streamFn: scripted.streamFn, tools, submissionTimeoutMs: options.submissionTimeoutMs ?? 48 * HOUR }) } },
    store,
    clock,
    observers: [(e) => events.push(e)],
    sweepIntervalMs: 60_000,
  });
  await runtime.start();
  const server = await serve(runtime, { port: 0, log: () => {} });
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { "content-type": "application/json" },
      ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, json: text === "" ? undefined : JSON.parse(text) };
  };
  open = { runtime, store, server, clock, events, scripted, post: (p, b) => call("POST", p, b), get: (p) => call("GET", p) };
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

async function dispatch(s: Setup, body: string, instance = "shop") {
  const res = await s.post(`/agents/support/${instance}`, { kind: "user", body });
  expect(res.status).toBe(202);
  return res.json as { submissionId: string; conversationId: string };
}

const waiting = (s: Setup, id: string) => until("the park", () => s.store.getSubmission(id), (sub) => sub.status === "waiting");
const kinds = (log: ConversationRecord[]) => log.map((r) => r.kind).filter((k) => !k.startsWith("assistant_text") && k !== "assistant_message_started");

describe("tool approval (embedded, over HTTP)", () => {
  it("approve: the call waits parked, then runs once and the turn goes on", async () => {
    const runs: { amount: number }[] = [];
    const s = await setup([refundCall("call-1", 240), summary], [refundTool(runs)]);
    const { submissionId, conversationId } = await dispatch(s, "refund 240 please");
    const parked = await waiting(s, submissionId);
    expect(parked.leaseExpiresAt, "a waiting submission holds no lease").toBeUndefined();
    expect(parked.pendingCalls).toEqual(["call-1"]);
    expect(runs, "nothing ran before the decision").toEqual([]);

    const listed = await s.get(`/agents/support/shop/submissions`);
    expect(listed.json.submissions[0]).toMatchObject({ id: submissionId, status: "waiting", waitingFor: [{ kind: "approval", callId: "call-1", toolName: "refund" }] });
    const pending = await s.get(`/agents/support/shop/approvals`);
    expect(pending.json.approvals).toEqual([
      { submissionId, callId: "call-1", toolName: "refund", args: { amount: 240 }, approvalId: `${submissionId}/call-1`, expiresAt: s.clock.now() + 24 * HOUR },
    ]);

    const decided = await s.post(`/agents/support/shop/submissions/${submissionId}/approvals/call-1`, { approved: true, reason: "looks right" });
    expect(decided.status).toBe(200);
    expect(decided.json).toEqual({ submissionId, callId: "call-1", approved: true, reason: "looks right", decidedAt: s.clock.now() });
    expect(await s.runtime.wait(submissionId)).toMatchObject({ status: "succeeded" });
    expect(runs, "the approved call ran once").toEqual([{ amount: 240 }]);
    expect(textOf(s.scripted.calls[1]!.messages.at(-1) as never)).toBe("refunded $240");

    const log = await allRecords(s.store, conversationId);
    expect(kinds(log)).toEqual([
      "conversation_created",
      "user_message",
      "assistant_tool_call",
      "assistant_message_completed",
      "approval_requested",
      "approval_decided",
      "tool_started",
      "tool_outcome",
      "assistant_message_completed",
      "submission_settled",
    ]);
    expect(log.find((r) => r.kind === "approval_requested")?.payload).toEqual({
      callId: "call-1",
      toolName: "refund",
      args: { amount: 240 },
      approvalId: `${submissionId}/call-1`,
      expiresAt: new Date(s.clock.now() + 24 * HOUR).toISOString(),
    });
    expect(log.find((r) => r.kind === "approval_decided")?.payload).toEqual({ callId: "call-1", approved: true, reason: "looks right" });
    const sub = await s.store.getSubmission(submissionId);
    expect(sub.attemptCount, "the resume charged no attempt").toBe(1);
    const types = s.events.filter((e) => e.correlation.submissionId === submissionId).map((e) => e.type);
    expect(types.filter((t) => t === "approval_requested")).toHaveLength(1);
    expect(types.filter((t) => t === "approval_decided")).toHaveLength(1);
    expect(types.filter((t) => t === "submission_waiting")).toHaveLength(1);
    expect(types.filter((t) => t === "submission_resumed"), "woken once").toHaveLength(1);

    // The same decision again: 200 with the decision as it stands; another one: 409.
    const again = await s.post(`/agents/support/shop/submissions/${submissionId}/approvals/call-1`, { approved: true });
    expect(again.status).toBe(200);
    expect(again.json).toMatchObject({ approved: true, reason: "looks right" });
    const other = await s.post(`/agents/support/shop/submissions/${submissionId}/approvals/call-1`, { approved: false });
    expect(other.status).toBe(409);
    expect(other.json.code).toBe("already_decided");
    expect(runs).toHaveLength(1);
  });

  it("an approved call's partial results reach observers while it runs (tool_call_updated), as in a model turn", async () => {
    const streaming = defineTool({
      name: "refund",
      label: "Refund",
      description: "Refund, reporting progress.",
      parameters: schema.obj({ amount: schema.num() }),
      needsApproval: true,
      execute: async (_id, { amount }, _signal, onUpdate) => {
        onUpdate?.({ content: [{ type: "text", text: "step 1" }], details: { step: 1 } });
        onUpdate?.({ content: [{ type: "text", text: "step 2" }], details: { step: 2 } });
        return { content: [{ type: "text", text: `refunded $${amount}` }], details: { step: 3 } };
      },
    });
    const s = await setup([refundCall("call-1", 240), summary], [streaming as unknown as ReturnType<typeof refundTool>]);
    const { submissionId } = await dispatch(s, "refund 240");
    await waiting(s, submissionId);
    expect((await s.post(`/agents/support/shop/submissions/${submissionId}/approvals/call-1`, { approved: true })).status).toBe(200);
    expect(await s.runtime.wait(submissionId)).toMatchObject({ status: "succeeded" });
    const calls = s.events.filter((e) => e.correlation.submissionId === submissionId && e.type.startsWith("tool_call_"));
    // The model turn's call (answered by the approval request), then the approved run.
    expect(calls.map((e) => [e.type, (e as { result?: { details?: unknown } }).result?.details])).toEqual([
      ["tool_call_started", undefined],
      ["tool_call_ended", undefined],
      ["tool_call_started", undefined],
      ["tool_call_updated", { step: 1 }],
      ["tool_call_updated", { step: 2 }],
      ["tool_call_ended", undefined],
    ]);
  });

  it("deny: nothing runs, the model reads the reviewer's reason", async () => {
    const runs: { amount: number }[] = [];
    const s = await setup([refundCall("call-1", 500), summary], [refundTool(runs)]);
    const { submissionId, conversationId } = await dispatch(s, "refund 500");
    await waiting(s, submissionId);
    const denied = await s.post(`/agents/support/shop/submissions/${submissionId}/approvals/call-1`, { approved: false, reason: "over the limit" });
    expect(denied.status).toBe(200);
    expect(denied.json).toMatchObject({ approved: false, reason: "over the limit" });
    expect(await s.runtime.wait(submissionId)).toMatchObject({ status: "succeeded" });
    expect(runs).toEqual([]);
    expect(textOf(s.scripted.calls[1]!.messages.at(-1) as never)).toBe("denied by a reviewer: over the limit");
    const log = await allRecords(s.store, conversationId);
    expect(kinds(log)).not.toContain("tool_started");
    expect(log.filter((r) => r.kind === "tool_outcome").map((r) => r.payload)).toEqual([
      { callId: "call-1", toolName: "refund", content: [{ type: "text", text: "denied by a reviewer: over the limit" }], isError: true },
    ]);
  });

  it("a call under the threshold runs without asking", async () => {
    const runs: { amount: number }[] = [];
    const s = await setup([refundCall("call-1", 40), summary], [refundTool(runs)]);
    const { submissionId, conversationId } = await dispatch(s, "refund 40");
    expect(await s.runtime.wait(submissionId)).toMatchObject({ status: "succeeded" });
    expect(runs).toEqual([{ amount: 40 }]);
    expect(kinds(await allRecords(s.store, conversationId))).not.toContain("approval_requested");
    const res = await s.post(`/agents/support/shop/submissions/${submissionId}/approvals/call-1`, { approved: true });
    expect(res.status, "approving a call that needs no approval").toBe(409);
    expect(res.json.code).toBe("approval_not_requested");
  });

  it("expiry: nobody decides in time, the sweep denies it (approval expired)", async () => {
    const runs: { amount: number }[] = [];
    const s = await setup([refundCall("call-1", 900), summary], [refundTool(runs, { approvalTimeoutMs: 10 * 60_000 })]);
    const { submissionId, conversationId } = await dispatch(s, "refund 900");
    const parked = await waiting(s, submissionId);
    expect(parked.waitCheckAt, "its first check is no later than its expiry").toBeLessThanOrEqual(s.clock.now() + 10 * 60_000);
    s.clock.set(s.clock.now() + 10 * 60_000 + 1);
    // Checks that come due before the expiry find nothing; the one at the expiry denies it.
    for (let i = 0; i < 5 && (await s.store.getSubmission(submissionId)).status === "waiting"; i++) await s.runtime.sweep();
    expect(await s.runtime.wait(submissionId)).toMatchObject({ status: "succeeded" });
    expect(runs).toEqual([]);
    const log = await allRecords(s.store, conversationId);
    expect(log.find((r) => r.kind === "approval_decided")?.payload).toEqual({ callId: "call-1", approved: false, reason: "approval expired", expired: true });
    expect(textOf(s.scripted.calls[1]!.messages.at(-1) as never)).toBe("denied: approval expired");
    expect(s.events.filter((e) => e.type === "approval_expired")).toHaveLength(1);
    const late = await s.post(`/agents/support/shop/submissions/${submissionId}/approvals/call-1`, { approved: true });
    expect(late.status).toBe(409);
    expect(late.json).toMatchObject({ code: "already_decided" });
  });

  it("the default budget does not cut the default wait short: decided after 23 h, the call runs and the turn goes on", async () => {
    const runs: { amount: number }[] = [];
    // submissionTimeoutMs 0: the default, which covers the tool's 24 h wait and an hour to run.
    const s = await setup([refundCall("call-1", 240), summary], [refundTool(runs)], { submissionTimeoutMs: 0 });
    const { submissionId } = await dispatch(s, "refund 240");
    const parked = await waiting(s, submissionId);
    expect(parked.waitingFor).toEqual([{ kind: "approval", callId: "call-1", toolName: "refund", expiresAt: s.clock.now() + 24 * HOUR }]);
    s.clock.set(s.clock.now() + 23 * HOUR);
    await s.runtime.sweep();
    expect((await s.store.getSubmission(submissionId)).status).toBe("waiting");
    expect((await s.post(`/agents/support/shop/submissions/${submissionId}/approvals/call-1`, { approved: true })).status).toBe(200);
    expect(await s.runtime.wait(submissionId)).toMatchObject({ status: "succeeded" });
    expect(runs).toEqual([{ amount: 240 }]);
  });

  it("an explicit budget bounds the wait: a 2 h budget expires a 24 h approval at 2 h", async () => {
    const runs: { amount: number }[] = [];
    const s = await setup([refundCall("call-1", 240), summary], [refundTool(runs)], { submissionTimeoutMs: 2 * HOUR });
    const { submissionId } = await dispatch(s, "refund 240");
    const parked = await waiting(s, submissionId);
    const expiresAt = (parked.waitingFor![0] as { expiresAt: number }).expiresAt;
    expect(expiresAt).toBeLessThanOrEqual(parked.createdAt + 2 * HOUR);
    expect(expiresAt).toBeGreaterThan(s.clock.now() + HOUR);
  });

  it("two approvals in one batch are decided independently; the run resumes after the last", async () => {
    const runs: { amount: number }[] = [];
    const s = await setup(
      [[{ toolCall: { id: "call-a", name: "refund", arguments: { amount: 200 } } }, { toolCall: { id: "call-b", name: "refund", arguments: { amount: 300 } } }], summary],
      [refundTool(runs)],
    );
    const { submissionId } = await dispatch(s, "two refunds");
    const parked = await waiting(s, submissionId);
    expect([...parked.pendingCalls!].sort()).toEqual(["call-a", "call-b"]);
    expect((await s.post(`/agents/support/shop/submissions/${submissionId}/approvals/call-b`, { approved: false })).status).toBe(200);
    await settleTicks();
    const still = await s.store.getSubmission(submissionId);
    expect(still.status, "one decision left: still waiting").toBe("waiting");
    expect(still.pendingCalls).toEqual(["call-a"]);
    expect((await s.get(`/agents/support/shop/submissions/${submissionId}`)).json.waitingFor).toEqual([
      { kind: "approval", callId: "call-a", toolName: "refund", expiresAt: s.clock.now() + 24 * HOUR },
    ]);
    expect((await s.post(`/agents/support/shop/submissions/${submissionId}/approvals/call-a`, { approved: true })).status).toBe(200);
    expect(await s.runtime.wait(submissionId)).toMatchObject({ status: "succeeded" });
    expect(runs).toEqual([{ amount: 200 }]);
    expect(toolResults(s.scripted.calls[1]!.messages).map((m) => textOf(m))).toEqual(["refunded $200", "denied by a reviewer"]);
    expect(s.events.filter((e) => e.type === "submission_resumed" && e.correlation.submissionId === submissionId)).toHaveLength(1);
  });

  it("a decision made while the batch still runs (before the park) is kept and delivered by the park", async () => {
    const runs: { amount: number }[] = [];
    let release!: () => void;
    const slowDone = new Promise<void>((resolve) => (release = resolve));
    let slowStarted!: () => void;
    const slowRunning = new Promise<void>((resolve) => (slowStarted = resolve));
    const slow = defineTool({
      name: "slow",
      label: "Slow",
      description: "Takes its time.",
      parameters: schema.obj({}),
      execute: async () => {
        slowStarted();
        await slowDone;
        return { content: [{ type: "text", text: "slow done" }], details: {} };
      },
    });
    const s = await setup(
      [[{ toolCall: { id: "call-r", name: "refund", arguments: { amount: 150 } } }, { toolCall: { id: "call-s", name: "slow", arguments: {} } }], summary],
      [refundTool(runs), slow as never],
    );
    const { submissionId, conversationId } = await dispatch(s, "refund and wait");
    await slowRunning;
    await until("approval_requested", () => allRecords(s.store, conversationId), (log) => log.some((r) => r.kind === "approval_requested"));
    expect((await s.store.getSubmission(submissionId)).status, "the batch still runs").toBe("running");
    const early = await s.post(`/agents/support/shop/submissions/${submissionId}/approvals/call-r`, { approved: true });
    expect(early.status).toBe(200);
    release();
    expect(await s.runtime.wait(submissionId)).toMatchObject({ status: "succeeded" });
    expect(runs).toEqual([{ amount: 150 }]);
    const log = await allRecords(s.store, conversationId);
    expect(log.filter((r) => r.kind === "approval_decided")).toHaveLength(1);
  });

  it("an approval beside a task call in one batch: one wait, woken once, after both are answered", async () => {
    const runs: { amount: number }[] = [];
    const clock = new ManualClock(Date.parse("2026-03-01T12:00:00Z"));
    const store = createMemoryStore({ clock });
    let releaseChild!: () => void;
    const childMayAnswer = new Promise<void>((resolve) => (releaseChild = resolve));
    const lead = scriptedModel([
      [{ toolCall: { id: "call-r", name: "refund", arguments: { amount: 250 } } }, { toolCall: { id: "call-t", name: "task", arguments: { agent: "researcher", prompt: "check the order" } } }],
      summary,
    ]);
    const researcher = scriptedModel([[{ emit: () => childMayAnswer }, { text: "order is fine" }]]);
    const events: HarnessEvent[] = [];
    const runtime = createRuntime({
      agents: {
        support: { initialize: () => ({ model: lead.model, streamFn: lead.streamFn, tools: [refundTool(runs)], submissionTimeoutMs: 48 * HOUR }) },
        researcher: { initialize: () => ({ model: researcher.model, streamFn: researcher.streamFn }) },
      },
      store,
      clock,
      observers: [(e) => events.push(e)],
      subagents: { support: ["researcher"] },
      sweepIntervalMs: 60_000,
    });
    await runtime.start();
    const server = await serve(runtime, { port: 0, log: () => {} });
    open = { runtime, store, server, clock, events, scripted: lead, post: async () => ({ status: 0, json: undefined }), get: async () => ({ status: 0, json: undefined }) };
    const res = await fetch(`${server.url}/agents/support/shop`, { method: "POST", body: JSON.stringify({ kind: "user", body: "refund and check" }) });
    const { submissionId } = (await res.json()) as { submissionId: string };
    const parked = await until("the park", () => store.getSubmission(submissionId), (sub) => sub.status === "waiting");
    expect([...parked.pendingCalls!].sort()).toEqual(["call-r", "call-t"]);
    expect(parked.waitingFor?.map((e) => e.kind).sort()).toEqual(["approval", "child"]);

    const decided = await fetch(`${server.url}/agents/support/shop/submissions/${submissionId}/approvals/call-r`, { method: "POST", body: JSON.stringify({ approved: true }) });
    expect(decided.status).toBe(200);
    await settleTicks();
    expect((await store.getSubmission(submissionId)).pendingCalls, "the child still runs: still waiting").toEqual(["call-t"]);
    releaseChild();
    expect(await runtime.wait(submissionId)).toMatchObject({ status: "succeeded" });
    expect(runs).toEqual([{ amount: 250 }]);
    expect(toolResults(lead.calls[1]!.messages).map((m) => textOf(m))).toEqual(["refunded $250", "order is fine"]);
    expect(events.filter((e) => e.type === "submission_resumed" && e.correlation.submissionId === submissionId), "woken once").toHaveLength(1);
    expect(events.filter((e) => e.type === "submission_waiting" && e.correlation.submissionId === submissionId)).toHaveLength(1);
  });

  it("bad input: a clear 4xx JSON error, nothing stored", async () => {
    const runs: { amount: number }[] = [];
    const s = await setup([refundCall("call-1", 240), summary], [refundTool(runs)]);
    const { submissionId, conversationId } = await dispatch(s, "refund 240");
    await waiting(s, submissionId);
    const base = `/agents/support/shop/submissions/${submissionId}/approvals`;
    const logBefore = (await allRecords(s.store, conversationId)).length;

    const cases: Array<[string, string, unknown, number, string]> = [
      ["a non-boolean approved", `${base}/call-1`, { approved: "yes" }, 400, "invalid_request"],
      ["approved missing", `${base}/call-1`, { reason: "x" }, 400, "invalid_request"],
      ["a reason over 4 KB", `${base}/call-1`, { approved: true, reason: "x".repeat(4097) }, 400, "invalid_request"],
      ["a body that is not JSON", `${base}/call-1`, "approved=true", 400, "invalid_request"],
      ["an unknown call", `${base}/call-404`, { approved: true }, 404, "call_not_found"],
      ["an unknown submission", `/agents/support/shop/submissions/nope/approvals/call-1`, { approved: true }, 404, "submission_not_found"],
      ["another instance's submission", `/agents/support/other/submissions/${submissionId}/approvals/call-1`, { approved: true }, 404, "submission_not_found"],
    ];
    for (const [what, path, body, status, code] of cases) {
      const res = await s.post(path, body);
      expect(res.status, what).toBe(status);
      expect(res.json, what).toMatchObject({ code });
      expect(typeof res.json.error, what).toBe("string");
    }
    expect((await s.store.getCallWait(submissionId, "call-1"))?.answer, "nothing decided").toBeUndefined();
    expect((await allRecords(s.store, conversationId)).length, "nothing appended").toBe(logBefore);
    expect((await s.store.getSubmission(submissionId)).status).toBe("waiting");

    // A cancelled submission takes no decision.
    expect((await s.post(`/agents/support/shop/submissions/${submissionId}/cancel`, {})).status).toBe(200);
    const late = await s.post(`${base}/call-1`, { approved: true });
    expect(late.status).toBe(409);
    expect(late.json.code).toBe("already_settled");
    expect(runs).toEqual([]);
  });
});
