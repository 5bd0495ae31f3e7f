import { describe, expect, it } from "vitest";
import type { AgentEvent } from "@earendil-works/pi-agent-core";
import type { AssistantMessage } from "@earendil-works/pi-ai";
import { DANGLING_TOOL_CALL_MESSAGE } from "../../../src/conversation/dangling.ts";
import type { ConversationRecord } from "../../../src/protocol/records.ts";
import type { Correlation } from "../../../src/ports/observer.ts";
import { agentEventEffects } from "../../../src/drive/agent-events.ts";
import { emptyAssistantMessage, keylessModel } from "../../../src/agent/block-stream.ts";
import { classifyLastAssistant, operationError, timeoutOutcome } from "../../../src/drive/drive-outcome.ts";
import { inputRecord, rebuild } from "../../../src/drive/rebuild.ts";
import { rec } from "../conversation/fixtures.ts";

const model = keylessModel("m-1", "test");
const correlation: Correlation = {
  sessionKey: { agent: "a", instance: "i", session: "default" },
  conversationId: "conv-1",
  submissionId: "s1",
  attemptId: "att-1",
  turnId: "t1",
};
const view = { correlation, turn: 2, modelId: "m-1" };
const assistant = (over: Partial<AssistantMessage> = {}): AssistantMessage => ({ ...emptyAssistantMessage(model, 0, "stop"), ...over });

describe("agent events → records and observer events (pure)", () => {
  it("turn boundaries are observer events only", () => {
    expect(agentEventEffects({ type: "turn_start" } as AgentEvent, view)).toEqual({ observe: [{ type: "turn_started", correlation, turn: 2 }] });
    expect(agentEventEffects({ type: "turn_end" } as AgentEvent, view).observe).toEqual([{ type: "turn_ended", correlation, turn: 2 }]);
  });

  it("an assistant message opens with assistant_message_started; a user message start records nothing", () => {
    expect(agentEventEffects({ type: "message_start", message: assistant() } as AgentEvent, view)).toEqual({
      observe: [],
      records: [{ kind: "assistant_message_started", payload: { model: "m-1", messageType: "message" } }],
    });
    expect(agentEventEffects({ type: "message_start", message: { role: "user", content: "x", timestamp: 0 } } as AgentEvent, view)).toEqual({ observe: [] });
  });

  it("a text or thinking delta is an observer delta and a delta for the batcher; other updates are nothing", () => {
    const update = (e: object) => ({ type: "message_update", message: assistant(), assistantMessageEvent: e }) as AgentEvent;
    expect(agentEventEffects(update({ type: "text_delta", delta: "Hi", contentIndex: 0 }), view)).toEqual({
      observe: [{ type: "delta", correlation, kind: "assistant_text_delta", text: "Hi" }],
      delta: { kind: "assistant_text_delta", text: "Hi" },
    });
    expect(agentEventEffects(update({ type: "thinking_delta", delta: "hm", contentIndex: 0 }), view).delta).toEqual({
      kind: "assistant_thinking_delta",
      text: "hm",
    });
    expect(agentEventEffects(update({ type: "toolcall_delta", delta: "{", contentIndex: 0 }), view)).toEqual({ observe: [] });
  });

  it("an assistant message end records its tool calls (with thought signatures) then the message; a failed one only the message", () => {
    const message = assistant({
      stopReason: "toolUse",
      content: [
        { type: "text", text: "Let me check." },
        { type: "toolCall", id: "c1", name: "clock", arguments: {}, thoughtSignature: "sig" },
        { type: "toolCall", id: "c2", name: "clock", arguments: { tz: "UTC" } },
      ],
    });
    const effects = agentEventEffects({ type: "message_end", message } as AgentEvent, view);
    expect(effects.records).toEqual([
      { kind: "assistant_tool_call", payload: { callId: "c1", toolName: "clock", args: {}, thoughtSignature: "sig" } },
      { kind: "assistant_tool_call", payload: { callId: "c2", toolName: "clock", args: { tz: "UTC" } } },
      { kind: "assistant_message_completed", payload: { message: { role: "assistant", type: "message", body: message } } },
    ]);
    expect(effects.assistantEnded).toBe(message);
    const failed = assistant({ stopReason: "error", errorMessage: "overloaded", content: [{ type: "toolCall", id: "c3", name: "x", arguments: {} }] });
    expect(agentEventEffects({ type: "message_end", message: failed } as AgentEvent, view).records!.map((r) => r.kind)).toEqual([
      "assistant_message_completed",
    ]);
    // Any other message end only flushes the pending deltas.
    expect(agentEventEffects({ type: "message_end", message: { role: "user", content: "x", timestamp: 0 } } as AgentEvent, view)).toEqual({
      observe: [],
      records: [],
    });
  });

  it("a tool call is observed as it starts and updates; its outcome is recorded, and observed once durable", () => {
    expect(agentEventEffects({ type: "tool_execution_start", toolCallId: "c1", toolName: "clock", args: {} } as AgentEvent, view).observe).toEqual([
      { type: "tool_call_started", correlation, callId: "c1", toolName: "clock" },
    ]);
    expect(
      agentEventEffects({ type: "tool_execution_update", toolCallId: "c1", toolName: "clock", args: {}, partialResult: { p: 1 } } as AgentEvent, view)
        .observe,
    ).toEqual([{ type: "tool_call_updated", correlation, callId: "c1", toolName: "clock", result: { p: 1 } }]);
    const end = agentEventEffects(
      { type: "tool_execution_end", toolCallId: "c1", toolName: "clock", result: { content: [{ type: "text", text: "noon" }], details: { now: 1 } }, isError: false } as AgentEvent,
      view,
    );
    expect(end).toEqual({
      observe: [],
      records: [{ kind: "tool_outcome", payload: { callId: "c1", toolName: "clock", content: [{ type: "text", text: "noon" }], isError: false, data: { now: 1 } } }],
      observeAfter: [{ type: "tool_call_ended", correlation, callId: "c1", toolName: "clock", isError: false }],
    });
  });
});

describe("rebuild: an attempt's starting point from the log (pure)", () => {
  const mine = (r: ConversationRecord): ConversationRecord => ({ ...r, submissionId: "s1" });

  it("an empty log: the input is missing, nothing dangles", () => {
    expect(rebuild([], "s1", { kind: "user", body: "hi" })).toEqual({
      path: [],
      missing: [{ kind: "user_message", payload: { body: "hi" } }],
      dangling: [],
      corrections: 0,
      turns: 0,
    });
  });

  it("answers a dangling tool call before anything else, counts this submission's turns and corrections, and records the input once", () => {
    const records = [
      rec("r01", "conversation_created", { agent: "a", instance: "i", session: "default" }),
      mine(rec("r02", "user_message", { body: "hi" })),
      mine(rec("r03", "assistant_message_started", { model: "m", messageType: "message" })),
      mine(rec("r04", "assistant_message_completed", { message: { role: "assistant", type: "message", body: assistant() } })),
      mine(rec("r05", "user_message", { body: "fix it", origin: "correction" })),
      mine(rec("r06", "assistant_message_started", { model: "m", messageType: "message" })),
      mine(rec("r07", "assistant_tool_call", { callId: "c1", toolName: "clock", args: {} })),
    ];
    const start = rebuild(records, "s1", { kind: "user", body: "hi" });
    expect(start.path.map((r) => r.id)).toEqual(records.map((r) => r.id));
    expect(start.missing).toEqual([
      { kind: "tool_outcome", payload: { callId: "c1", toolName: "clock", content: [{ type: "text", text: DANGLING_TOOL_CALL_MESSAGE }], isError: true } },
    ]);
    expect(start.dangling.map((d) => d.callId)).toEqual(["c1"]);
    expect(start).toMatchObject({ corrections: 1, turns: 2 });
    // Another submission's records count for nothing here: its input is missing.
    expect(rebuild(records, "s2", { kind: "user", body: "next" }).missing.at(-1)).toEqual({ kind: "user_message", payload: { body: "next" } });
  });

  it("a signal input becomes a signal record; attachments stay on a user message", () => {
    expect(inputRecord({ kind: "signal", body: "deployed", signal: { type: "ci", sender: { s: "ci" }, tag: "t" } })).toEqual({
      kind: "signal",
      payload: { type: "ci", body: "deployed", sender: { s: "ci" }, tag: "t" },
    });
    const ref = { digest: "sha256:ab", mediaType: "text/plain", size: 2 };
    expect(inputRecord({ kind: "user", body: "see", attachments: [ref] })).toEqual({ kind: "user_message", payload: { body: "see", attachments: [ref] } });
  });
});

describe("drive outcomes (pure)", () => {
  it("a normal stop is no outcome; a timed-out turn, an abort or a retryable error is transient; anything else fails the run", () => {
    expect(classifyLastAssistant(undefined, {})).toBeUndefined();
    expect(classifyLastAssistant(assistant(), {})).toBeUndefined();
    const failed = assistant({ stopReason: "error", errorMessage: "boom" });
    expect(classifyLastAssistant(failed, { turnTimeout: "model turn timed out after 1s" })).toEqual({ kind: "transient", error: "model turn timed out after 1s" });
    expect(classifyLastAssistant(assistant({ stopReason: "aborted" }), {})).toEqual({ kind: "transient", error: 'model turn ended with stop reason "aborted"' });
    expect(classifyLastAssistant(assistant({ stopReason: "error", errorMessage: "429 rate limit exceeded" }), {})).toMatchObject({ kind: "transient" });
    expect(classifyLastAssistant(failed, {})).toMatchObject({ kind: "failed", errorCode: "run_failed", error: "boom" });
    // The drive compacts and retries on this classification; it settles only when that cannot cure it.
    expect(classifyLastAssistant(assistant({ stopReason: "error", errorMessage: "prompt is too long: 300000 tokens > 200000 maximum" }), {})).toEqual({
      kind: "failed",
      errorCode: "context_overflow",
      error: "prompt is too long: 300000 tokens > 200000 maximum",
    });
  });

  it("the durability timeout and the operation's reported error", () => {
    expect(timeoutOutcome(60_000)).toMatchObject({ kind: "failed", errorCode: "timeout_exceeded", error: "durability timeout exceeded mid-run (budget 1m0s)" });
    expect(operationError(undefined)).toBe("");
    expect(operationError({ kind: "completed" })).toBe("");
    expect(operationError({ kind: "interrupted" })).toBe("interrupted");
    expect(operationError({ kind: "transient", error: "x" })).toBe("x");
  });
});
