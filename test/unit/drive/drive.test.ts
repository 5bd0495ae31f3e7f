import { describe, expect, it } from "vitest";
import { DANGLING_TOOL_CALL_MESSAGE } from "../../../src/conversation/dangling.ts";
import type { AgentTool } from "../../../src/agent/agent-setup.ts";
import { clockTool } from "../../../src/agent/clock-tool.ts";
import { scriptedModel } from "../../../src/agent/scripted-model.ts";
import { comparable, Harness, summary, until } from "../../support/drive-kit.ts";

const NOON = Date.UTC(2026, 0, 1, 12, 0, 0);

describe("drive: a multi-turn tool conversation", () => {
  it("writes the exact record sequence, with envelopes, and reports observer events", async () => {
    const h = new Harness();
    h.clock.set(NOON);
    await h.admit({ kind: "user", body: "What time is it?" });
    await h.claim();
    const s = scriptedModel(
      [
        [{ text: "Let me check." }, { toolCall: { id: "c1", name: "clock", arguments: {} } }],
        [{ text: "It is noon." }],
      ],
      { now: () => h.clock.now() },
    );
    const outcome = await h.drive({ model: s.model, streamFn: s.streamFn, systemPrompt: "Be terse.", tools: [clockTool(h.clock)] });
    expect(outcome).toMatchObject({ kind: "completed" });

    const records = await h.records();
    expect(records.map(summary)).toEqual([
      "user_message: What time is it?",
      "assistant_message_started",
      // The scripted model streams 4-character fragments; a message's first is written at once (ADR 0036).
      "assistant_text_delta: Let ",
      "assistant_text_delta: me check.",
      "assistant_tool_call: c1 clock",
      "assistant_message_completed: toolUse",
      'tool_outcome: c1 [{"type":"text","text":"2026-01-01T12:00:00.000Z"}]',
      "assistant_message_started",
      "assistant_text_delta: It i",
      "assistant_text_delta: s noon.",
      "assistant_message_completed: stop",
    ]);
    for (const r of records) {
      expect(r).toMatchObject({ conversationId: "conv-1", session: "default", submissionId: "sub-1", attemptId: "att-1" });
      expect(r.time).toBe("2026-01-01T12:00:00.000Z");
    }
    expect(records[0]!.turnId).toBeUndefined();
    const turn1 = records[1]!.turnId;
    const turn2 = records[7]!.turnId;
    expect(turn1).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(turn2).not.toBe(turn1);
    expect(records.slice(1, 7).every((r) => r.turnId === turn1)).toBe(true);
    expect(records.slice(7).every((r) => r.turnId === turn2)).toBe(true);
    const completed = records[5]!;
    expect(completed.kind === "assistant_message_completed" && completed.payload.message).toMatchObject({
      role: "assistant",
      type: "message",
      body: { role: "assistant", stopReason: "toolUse", content: [{ type: "text", text: "Let me check." }, { type: "toolCall", id: "c1" }] },
    });
    expect(records[6]).toMatchObject({ payload: { data: { now: "2026-01-01T12:00:00.000Z" }, isError: false } });

    // The provider saw the system prompt (with the tool) first, then the tool result.
    expect(s.calls[0]!.messages[0]).toMatchObject({ role: "system", content: "Be terse.", toolsAdded: [{ name: "clock" }] });
    expect(s.calls[1]!.messages.map((m) => m.role)).toEqual(["system", "user", "assistant", "toolResult"]);

    const types = h.events.filter((e) => e.type !== "delta").map((e) => ("turn" in e ? `${e.type}:${e.turn}` : e.type));
    expect(types).toEqual([
      "operation_started",
      "turn_started:1",
      "model_response",
      "tool_call_started",
      "tool_call_ended",
      "turn_ended:1",
      "turn_started:2",
      "model_response",
      "turn_ended:2",
      "operation_ended",
    ]);
    // Each model response is reported with its model, stop reason and usage, in its turn.
    const responses = h.events.filter((e) => e.type === "model_response");
    expect(responses[0]).toMatchObject({ model: s.model.id, provider: s.model.provider, stopReason: "toolUse", correlation: { turnId: turn1 } });
    expect(responses[1]).toMatchObject({ stopReason: "stop", correlation: { turnId: turn2 }, usage: { input: expect.any(Number), output: expect.any(Number) } });
    expect(h.events[0]).toMatchObject({ operation: "prompt", correlation: { submissionId: "sub-1", attemptId: "att-1", conversationId: "conv-1" } });
    expect(h.events.at(-1)).toMatchObject({ type: "operation_ended", operation: "prompt", error: "" });
    const toolEnded = h.events.find((e) => e.type === "tool_call_ended")!;
    expect(toolEnded).toMatchObject({ callId: "c1", toolName: "clock", isError: false, correlation: { turnId: turn1 } });
  });

  it("records a signal input as a signal record", async () => {
    const h = new Harness();
    await h.admit({ kind: "signal", body: "deploy finished", signal: { type: "ci", sender: { source: "ci" }, tag: "t1" } });
    await h.claim();
    const s = scriptedModel([[{ text: "ok" }]]);
    expect(await h.drive({ model: s.model, streamFn: s.streamFn })).toMatchObject({ kind: "completed" });
    const [input] = await h.records();
    expect(input).toMatchObject({ kind: "signal", payload: { type: "ci", body: "deploy finished", sender: { source: "ci" }, tag: "t1" } });
    expect(s.calls[0]!.messages.at(-1)).toMatchObject({ role: "user" });
  });
});

describe("drive: the log is the truth", () => {
  it("records the input once and runs nothing when driven again over a finished run", async () => {
    const h = new Harness();
    await h.admit({ kind: "user", body: "hi" });
    await h.claim();
    const s = scriptedModel([[{ text: "hello" }]]);
    const setup = { model: s.model, streamFn: s.streamFn };
    expect(await h.drive(setup)).toMatchObject({ kind: "completed" });
    const before = await h.records();
    expect(await h.drive(setup)).toMatchObject({ kind: "completed" });
    expect(await h.records()).toEqual(before);
    expect(s.calls).toHaveLength(1);
    expect(before.filter((r) => r.kind === "user_message")).toHaveLength(1);
  });

  it("after a crash mid-tool: synthesizes the dangling outcome, replays the thought signature, completes", async () => {
    const h = new Harness();
    await h.admit({ kind: "user", body: "Run the job" });
    await h.claim();
    // Attempt 1: the tool is running when the process "dies" (the attempt's signal aborts).
    const crash = new AbortController();
    const job: AgentTool = {
      name: "job",
      label: "Job",
      description: "Runs a job",
      parameters: { type: "object", properties: {} },
      execute: () => {
        crash.abort();
        return new Promise(() => {}); // never finishes, ignores abort
      },
    };
    const first = scriptedModel([
      [{ thinking: "plan", signature: "think-sig" }, { toolCall: { id: "call-1", name: "job", arguments: { n: 1 }, thoughtSignature: "c2lnLTE=" } }],
    ]);
    expect(await h.drive({ model: first.model, streamFn: first.streamFn, tools: [job] }, { signal: crash.signal })).toEqual({
      kind: "interrupted",
    });
    const crashed = await h.records();
    expect(crashed.map(summary)).toEqual([
      "user_message: Run the job",
      "assistant_message_started",
      "assistant_thinking_delta: plan",
      "assistant_tool_call: call-1 job",
      "assistant_message_completed: toolUse",
    ]);
    expect(crashed[3]).toMatchObject({ payload: { callId: "call-1", toolName: "job", args: { n: 1 }, thoughtSignature: "c2lnLTE=" } });

    // The sweeper recovers the expired lease; attempt 2 drives over what the log holds.
    await h.clock.advance(31_000);
    await h.release({ lastError: "lease expired" });
    await h.claim();
    const second = scriptedModel([[{ text: "The job was interrupted." }]]);
    expect(await h.drive({ model: second.model, streamFn: second.streamFn, tools: [job] })).toMatchObject({ kind: "completed" });
    const records = await h.records();
    expect(records.slice(5).map(summary)).toEqual([
      `tool_outcome: call-1 error ${JSON.stringify([{ type: "text", text: DANGLING_TOOL_CALL_MESSAGE }])}`,
      "assistant_message_started",
      "assistant_text_delta: The ",
      "assistant_text_delta: job was interrupted.",
      "assistant_message_completed: stop",
    ]);
    expect(records[5]).toMatchObject({ attemptId: "att-2", submissionId: "sub-1" });
    expect(records[5]!.turnId).toBeUndefined();
    expect(records.filter((r) => r.kind === "user_message")).toHaveLength(1);
    const recovery = h.events.find((e) => e.type === "recovery");
    expect(recovery).toMatchObject({ decision: "dangling_tool_call_reconciled", correlation: { attemptId: "att-2" } });
    // The provider got the call back with its signatures, answered by the synthesized outcome.
    const sent = second.calls[0]!.messages;
    expect(sent.map((m) => m.role)).toEqual(["system", "user", "assistant", "toolResult"]);
    expect(sent[2]).toMatchObject({
      content: [
        { type: "thinking", thinking: "plan", thinkingSignature: "think-sig" },
        { type: "toolCall", id: "call-1", thoughtSignature: "c2lnLTE=" },
      ],
    });
    expect(sent[3]).toMatchObject({ toolCallId: "call-1", isError: true, content: [{ type: "text", text: DANGLING_TOOL_CALL_MESSAGE }] });
    // pendingResume was not set by a crash release: the operation is a prompt.
    expect(h.events.filter((e) => e.type === "operation_started").map((e) => "operation" in e && e.operation)).toEqual([
      "prompt",
      "prompt",
    ]);
  });

  it("shouldYield hands off where the next step is a model call; a second drive finishes it identically", async () => {
    const script = () => [
      [{ text: "Checking." }, { toolCall: { id: "c1", name: "clock", arguments: {} } }],
      [{ text: "Done." }],
    ];
    // Reference: one drive.
    const ref = new Harness();
    await ref.admit({ kind: "user", body: "time?" });
    await ref.claim();
    const refModel = scriptedModel(script(), { now: () => ref.clock.now() });
    expect(await ref.drive({ model: refModel.model, streamFn: refModel.streamFn, tools: [clockTool(ref.clock)] })).toMatchObject({
      kind: "completed",
    });

    const h = new Harness();
    await h.admit({ kind: "user", body: "time?" });
    await h.claim();
    const m = scriptedModel(script(), { now: () => h.clock.now() });
    const setup = { model: m.model, streamFn: m.streamFn, tools: [clockTool(h.clock)] };
    expect(await h.drive(setup, { shouldYield: () => true })).toEqual({ kind: "continuation" });
    const handedOff = await h.records();
    expect(handedOff.at(-1)!.kind).toBe("tool_outcome");
    expect(m.calls).toHaveLength(1);
    await h.release({ continuation: true });
    const resumed = await h.claim();
    expect(resumed.pendingResume).toBe(true);
    expect(await h.drive(setup)).toMatchObject({ kind: "completed" });
    const records = await h.records();
    expect(records.map(comparable)).toEqual((await ref.records()).map(comparable));
    expect(new Set(records.map((r) => r.attemptId))).toEqual(new Set(["att-1", "att-2"]));
    expect(h.events.filter((e) => e.type === "operation_started").map((e) => "operation" in e && e.operation)).toEqual([
      "prompt",
      "resume",
    ]);
  });
});

describe("drive: delta batching", () => {
  it("batches deltas into records by the policy while observers see every fragment", async () => {
    const h = new Harness();
    await h.admit({ kind: "user", body: "spell" });
    await h.claim();
    const s = scriptedModel([
      [{ text: "abcdefghijklmnopqrst" }, { emit: () => h.clock.set(h.clock.now() + 300) }, { thinking: "xy" }, { text: "zz" }],
    ]);
    expect(await h.drive({ model: s.model, streamFn: s.streamFn }, { flushPolicy: { bytes: 8, intervalMs: 200 } })).toMatchObject({
      kind: "completed",
    });
    const records = await h.records();
    expect(records.map(summary)).toEqual([
      "user_message: spell",
      "assistant_message_started",
      // The message's first text fragment is written at once (ADR 0036), the rest by the 8-byte policy.
      "assistant_text_delta: abcd",
      "assistant_text_delta: efghijkl",
      "assistant_text_delta: mnopqrst",
      // The first thinking fragment is written at once too; the later text waits for the message's end.
      "assistant_thinking_delta: xy",
      "assistant_text_delta: zz",
      "assistant_message_completed: stop",
    ]);
    const deltas = h.events.filter((e) => e.type === "delta").map((e) => ("text" in e ? e.text : ""));
    expect(deltas).toEqual(["abcd", "efgh", "ijkl", "mnop", "qrst", "xy", "zz"]);
  });

  it("flushes a batch whose first fragment is older than the interval when the next fragment arrives", async () => {
    const h = new Harness();
    await h.admit({ kind: "user", body: "slow" });
    await h.claim();
    const s = scriptedModel([
      [
        // The message's first fragment is written at once (ADR 0036); "cd" starts the batch.
        { text: "ab" },
        { text: "cd" },
        // Providers run ahead of the consumer: move time once "cd" was processed.
        {
          emit: async () => {
            await until(() => h.events.filter((e) => e.type === "delta").length === 2);
            h.clock.set(h.clock.now() + 250);
          },
        },
        { text: "ef" },
        { text: "gh" },
      ],
    ]);
    await h.drive({ model: s.model, streamFn: s.streamFn });
    const texts = (await h.records()).filter((r) => r.kind === "assistant_text_delta").map(summary);
    expect(texts).toEqual(["assistant_text_delta: ab", "assistant_text_delta: cdef", "assistant_text_delta: gh"]);
  });
});
