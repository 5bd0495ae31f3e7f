/**
 * `SubmissionChunker` and `uiMessagesOf`: a submission's records as the AI SDK's UI message
 * chunks, read back with the SDK's own `readUIMessageStream`. A real crash and recovery (two
 * runtimes over one store) leaves a log with a superseded attempt: the reply shows once, the
 * partial taken back with `reset-step`. Steers, subagents, compactions, corrections and a
 * failed settlement become their parts.
 */
import { readUIMessageStream } from "ai";
import { describe, expect, it } from "vitest";
import { SubmissionChunker, uiMessagesOf, type HarnessUIMessage, type HarnessUIMessageChunk } from "../../../src/ai-sdk/index.ts";
import { clockTool } from "../../../src/agent/clock-tool.ts";
import { localModel } from "../../../src/agent/local-model.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";
import { ManualClock } from "../../../src/ports/clock.ts";
import type { ConversationRecord, RecordBody } from "../../../src/protocol/records.ts";
import { createRuntime } from "../../../src/runtime/runtime.ts";
import { settleTicks } from "../../support/runtime-kit.ts";

const textOf = (message: HarnessUIMessage | undefined) => (message?.parts ?? []).map((p) => (p.type === "text" ? p.text : "")).join("");

async function read(chunks: HarnessUIMessageChunk[]): Promise<{ message: HarnessUIMessage | undefined; errors: string[] }> {
  const errors: string[] = [];
  const stream = new ReadableStream<HarnessUIMessageChunk>({
    start(controller) {
      for (const c of chunks) controller.enqueue(c);
      controller.close();
    },
  });
  let message: HarnessUIMessage | undefined;
  for await (const m of readUIMessageStream<HarnessUIMessage>({ stream, onError: (e) => errors.push(String(e)) })) message = m;
  return { message, errors };
}

/** Records of one submission, ids in order, from bodies with their attempt and turn. */
function log(submissionId: string, entries: Array<RecordBody & { attemptId?: string; turnId?: string }>): ConversationRecord[] {
  return entries.map((e, i) => ({
    id: `01J${String(i).padStart(23, "0")}`,
    conversationId: "c1",
    session: "default",
    submissionId,
    time: "2026-01-01T00:00:00.000Z",
    ...e,
  })) as ConversationRecord[];
}

describe("a superseded attempt in the UI messages", () => {
  it("a crash mid-reply and the recovered attempt: the reply shows once, the partial taken back with reset-step", async () => {
    const clock = new ManualClock();
    const store = createMemoryStore({ clock });
    const agents = { assistant: { initialize: () => ({ ...localModel({ chunkSize: 3 }), tools: [clockTool()] }) } };
    const dispatchId = "ui-crash-1";
    let reached!: () => void;
    const atCrash = new Promise<void>((resolve) => (reached = resolve));
    const crashed = createRuntime({
      agents,
      store,
      clock,
      leaseMs: 30_000,
      flushPolicy: { bytes: 0, intervalMs: 0 },
      faults: (phase, id) => {
        if (phase !== "mid_stream" || id !== dispatchId) return;
        reached();
        return new Promise<never>(() => {});
      },
    });
    await crashed.start();
    const { conversationId } = await crashed.dispatch({ agent: "assistant", instance: "ui-crash", dispatchId, message: { kind: "user", body: "tell me a story" } });
    await atCrash;
    await crashed.close({ abandon: true });
    const recovered = createRuntime({ agents, store, clock, leaseMs: 30_000, sweepIntervalMs: 5_000, flushPolicy: { bytes: 0, intervalMs: 0 } });
    await recovered.start();
    const waited = recovered.wait(dispatchId);
    await clock.advance(31_000);
    await clock.advance(5_000);
    await settleTicks();
    await clock.advance(5_000);
    await waited;
    await recovered.close();
    const records = await store.readRecords(conversationId, "");
    const attempts = new Set(records.filter((r) => r.kind === "assistant_text_delta").map((r) => r.attemptId));
    expect(attempts.size, "both attempts streamed text").toBe(2);

    const [user, reply] = await uiMessagesOf(records);
    expect(user).toMatchObject({ role: "user", id: dispatchId });
    expect(textOf(reply)).toBe("You said: tell me a story");

    // Live: the chunks take the partial back when the new attempt's first record arrives.
    const chunker = new SubmissionChunker(dispatchId);
    const chunks: HarnessUIMessageChunk[] = chunker.start();
    for (const record of records) chunks.push(...chunker.apply(record));
    expect(chunks.filter((c) => c.type === "reset-step")).toHaveLength(1);
    const stream = new ReadableStream<HarnessUIMessageChunk>({
      start(controller) {
        for (const c of chunks) controller.enqueue(c);
        controller.close();
      },
    });
    let last: HarnessUIMessage | undefined;
    for await (const m of readUIMessageStream<HarnessUIMessage>({ stream })) last = m;
    expect(textOf(last)).toBe("You said: tell me a story");
  });
});

describe("SubmissionChunker", () => {
  it("steers, a subagent, a compaction, a correction and a failed settlement become parts; the failure is an error chunk", async () => {
    const a = { attemptId: "a1" };
    const records = log("s1", [
      { kind: "user_message", payload: { body: "plan it" }, ...a },
      { kind: "assistant_message_started", payload: { model: "m", messageType: "message" }, ...a, turnId: "t1" },
      { kind: "assistant_thinking_delta", payload: { text: "hmm" }, ...a, turnId: "t1" },
      { kind: "assistant_text_delta", payload: { text: "delegating" }, ...a, turnId: "t1" },
      { kind: "assistant_tool_call", payload: { callId: "k1", toolName: "task", args: { agent: "r", prompt: "look" } }, ...a, turnId: "t1" },
      { kind: "assistant_message_completed", payload: { message: { role: "assistant", type: "message", body: { stopReason: "toolUse" } } }, ...a, turnId: "t1" },
      { kind: "task_spawned", payload: { callId: "k1", agent: "r", childInstance: "i:k1", childConversationId: "c2", childSubmissionId: "s1:k1", prompt: "look" }, ...a },
      { kind: "tool_outcome", payload: { callId: "k1", toolName: "task", content: [{ type: "text", text: "found" }], isError: false }, ...a },
      { kind: "user_message", payload: { body: "and faster", origin: "steer" }, ...a },
      { kind: "compaction", payload: { summary: "so far", startIdx: 0, endIdx: 2, reason: "threshold" }, ...a },
      { kind: "user_message", payload: { body: "not JSON", origin: "correction" }, ...a },
      { kind: "submission_settled", payload: { status: "failed", errorCode: "result_schema_invalid", error: "no JSON" }, ...a },
    ]);
    const chunker = new SubmissionChunker("s1");
    const chunks = [...chunker.start(), ...records.flatMap((r) => chunker.apply(r))];
    expect(chunker.settled).toBe(true);
    expect(chunks.at(-2)).toMatchObject({ type: "finish", finishReason: "error", messageMetadata: { submissionId: "s1", status: "failed" } });
    expect(chunks.at(-1)).toEqual({ type: "error", errorText: "no JSON" });
    const { message, errors } = await read(chunks);
    expect(errors).toEqual(["Error: no JSON"]);
    expect(message!.id).toBe("assistant:s1");
    expect(message!.parts.map((p) => p.type)).toEqual([
      "step-start",
      "reasoning",
      "text",
      "dynamic-tool",
      "data-task",
      "steering-message",
      "data-compaction",
      "data-correction",
      "data-settlement",
    ]);
    expect(message!.parts[3]).toMatchObject({ toolName: "task", state: "output-available", output: { text: "found" } });
    expect(message!.parts[5]).toMatchObject({ parts: [{ type: "text", text: "and faster" }] });
    expect(message!.parts.at(-1)).toMatchObject({ data: { status: "failed", errorCode: "result_schema_invalid", submissionId: "s1" } });
  });

  it("a cancelled submission finishes without an error; records of other submissions are ignored", () => {
    const chunker = new SubmissionChunker("s2");
    const other = log("s9", [{ kind: "user_message", payload: { body: "x" } }]);
    expect(chunker.apply(other[0]!)).toEqual([]);
    const settled = log("s2", [{ kind: "submission_settled", payload: { status: "failed", errorCode: "cancelled", error: "cancelled: stop" } }]);
    const chunks = chunker.apply(settled[0]!);
    expect(chunks.map((c) => c.type)).toEqual(["data-settlement", "finish"]);
    expect(chunks[1]).toMatchObject({ finishReason: "other" });
  });

  it("approvals: requested, then approved (output) or expired (denied); one data-approval part per call, updated in place", async () => {
    const a = { attemptId: "a1" };
    const b = { attemptId: "a2" };
    const expiresAt = "2026-01-02T00:00:00.000Z";
    const records = log("s3", [
      { kind: "user_message", payload: { body: "refund 240 and refund 500" }, ...a },
      { kind: "assistant_message_started", payload: { model: "m", messageType: "message" }, ...a, turnId: "t1" },
      { kind: "assistant_tool_call", payload: { callId: "r1", toolName: "refund", args: { amount: 240 } }, ...a, turnId: "t1" },
      { kind: "assistant_tool_call", payload: { callId: "r2", toolName: "refund", args: { amount: 500 } }, ...a, turnId: "t1" },
      { kind: "assistant_message_completed", payload: { message: { role: "assistant", type: "message", body: { stopReason: "toolUse" } } }, ...a, turnId: "t1" },
      { kind: "approval_requested", payload: { callId: "r1", toolName: "refund", args: { amount: 240 }, approvalId: "s3/r1", expiresAt }, ...a },
      { kind: "approval_requested", payload: { callId: "r2", toolName: "refund", args: { amount: 500 }, approvalId: "s3/r2", expiresAt }, ...a },
      { kind: "approval_decided", payload: { callId: "r1", approved: true, reason: "ok" } },
      { kind: "approval_decided", payload: { callId: "r2", approved: false, reason: "approval expired", expired: true } },
      { kind: "tool_outcome", payload: { callId: "r1", toolName: "refund", content: [{ type: "text", text: "refunded $240" }], isError: false }, ...b },
      { kind: "tool_outcome", payload: { callId: "r2", toolName: "refund", content: [{ type: "text", text: "approval expired" }], isError: true }, ...b },
      { kind: "submission_settled", payload: { status: "succeeded" }, ...b },
    ]);
    const chunker = new SubmissionChunker("s3");
    const upTo = (n: number) => {
      const early = new SubmissionChunker("s3");
      return [...early.start(), ...records.slice(0, n).flatMap((r) => early.apply(r))];
    };
    // While both wait: the AI SDK's approval-requested state and a pending data part each.
    const waiting = (await read(upTo(7))).message!;
    expect(waiting.parts.filter((p) => p.type === "dynamic-tool").map((p) => [p.state, p.approval?.id])).toEqual([
      ["approval-requested", "s3/r1"],
      ["approval-requested", "s3/r2"],
    ]);
    expect(waiting.parts.filter((p) => p.type === "data-approval").map((p) => p.data)).toEqual([
      { state: "pending", approvalId: "s3/r1", expiresAt, submissionId: "s3", callId: "r1", toolName: "refund" },
      { state: "pending", approvalId: "s3/r2", expiresAt, submissionId: "s3", callId: "r2", toolName: "refund" },
    ]);

    const chunks = [...chunker.start(), ...records.flatMap((r) => chunker.apply(r))];
    const { message, errors } = await read(chunks);
    expect(errors).toEqual([]);
    const tools = message!.parts.filter((p) => p.type === "dynamic-tool");
    expect(tools[0]).toMatchObject({ state: "output-available", output: { text: "refunded $240" }, approval: { id: "s3/r1", approved: true, reason: "ok" } });
    expect(tools[1]).toMatchObject({ state: "output-denied", approval: { id: "s3/r2", approved: false, reason: "approval expired" } });
    expect(message!.parts.filter((p) => p.type === "data-approval").map((p) => [p.data.callId, p.data.state, p.data.reason])).toEqual([
      ["r1", "approved", "ok"],
      ["r2", "expired", "approval expired"],
    ]);
    // The history replay builds the same message.
    const [, replayed] = await uiMessagesOf(records);
    expect(replayed!.parts).toEqual(message!.parts);
  });

  it("an approval request without its call record still gets a tool part; a decision of an unknown call adds nothing", () => {
    const chunker = new SubmissionChunker("s4");
    const [asked, stray] = log("s4", [
      { kind: "approval_requested", payload: { callId: "x1", toolName: "refund", args: { amount: 900 }, approvalId: "s4/x1", expiresAt: "2026-01-02T00:00:00.000Z" } },
      { kind: "approval_decided", payload: { callId: "nope", approved: true } },
    ]);
    expect(chunker.apply(asked!).map((c) => c.type)).toEqual(["tool-input-available", "tool-approval-request", "data-approval"]);
    expect(chunker.apply(stray!)).toEqual([]);
  });
});

describe("a retry in the UI messages (ADR 0053)", () => {
  it("each submission_retrying record updates one data-retrying part in place; the reply that follows streams as usual", async () => {
    const retry = { reason: "rate_limited" as const, status: 429, error: "429 slow down", nextAttemptAt: "2026-01-01T00:00:30.000Z", attemptCount: 1, maxAttempts: 10 };
    const records = log("sub-r", [
      { kind: "submission_retrying", payload: retry, attemptId: "a1" },
      { kind: "submission_retrying", payload: { ...retry, reason: "overloaded", status: 529 }, attemptId: "a2" },
      { kind: "assistant_message_started", payload: { model: "m", messageType: "message" }, attemptId: "a3", turnId: "t1" },
      { kind: "assistant_text_delta", payload: { text: "Here." }, attemptId: "a3", turnId: "t1" },
      { kind: "submission_settled", payload: { status: "succeeded" }, attemptId: "a3" },
    ]);
    const chunker = new SubmissionChunker("sub-r");
    const chunks = [...chunker.start(), ...records.flatMap((r) => chunker.apply(r))];
    const parts = chunks.filter((c) => c.type === "data-retrying");
    expect(parts.map((c) => [c.id, c.data.reason, c.data.status, c.data.submissionId])).toEqual([
      ["retrying-sub-r", "rate_limited", 429, "sub-r"],
      ["retrying-sub-r", "overloaded", 529, "sub-r"],
    ]);
    const { message, errors } = await read(chunks);
    expect(errors).toEqual([]);
    expect(textOf(message)).toBe("Here.");
    const shown = message!.parts.filter((p) => p.type === "data-retrying");
    expect(shown, "one part, the last retry").toHaveLength(1);
    expect(shown[0]).toMatchObject({ data: { reason: "overloaded", status: 529 } });
  });
});
