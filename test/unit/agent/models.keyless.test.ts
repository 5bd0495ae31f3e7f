import type { AssistantMessageEvent, Message } from "@earendil-works/pi-ai";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../../src/ports/clock.ts";
import { agentBudgets, AgentSetupError, validateAgentSetup } from "../../../src/agent/agent-setup.ts";
import { clockTool } from "../../../src/agent/clock-tool.ts";
import { defineTool } from "../../../src/agent/define-tool.ts";
import * as schema from "../../../src/agent/tool-schema.ts";
import { compactionSettings } from "../../../src/drive/compaction.ts";
import { localModel } from "../../../src/agent/local-model.ts";
import { scriptedModel } from "../../../src/agent/scripted-model.ts";

// Tests may import pi types: they exercise this layer's pi-facing helpers.
const ctx = (messages: Message[]) => ({ messages }) as never;
const user = (text: string): Message => ({ role: "user", content: text, timestamp: 0 });

async function collect(stream: AsyncIterable<AssistantMessageEvent> & { result(): Promise<unknown> }) {
  const events: AssistantMessageEvent[] = [];
  for await (const e of stream) events.push(e);
  return { events, final: (await stream.result()) as { stopReason: string; content: unknown[]; errorMessage?: string } };
}

describe("localModel", () => {
  it("echoes the last user message in small deltas", async () => {
    const { model, streamFn } = localModel();
    const { events, final } = await collect(await streamFn(model, ctx([user("hello there")])));
    const deltas = events.filter((e) => e.type === "text_delta").map((e) => (e as { delta: string }).delta);
    expect(deltas.join("")).toBe("You said: hello there");
    expect(deltas.length).toBeGreaterThan(3);
    expect(final.stopReason).toBe("stop");
  });

  it("calls the clock tool when asked about the time, then answers with its result", async () => {
    const { model, streamFn } = localModel();
    const first = await collect(await streamFn(model, ctx([user("What time is it?")])));
    expect(first.final.stopReason).toBe("toolUse");
    expect(first.final.content).toEqual([{ type: "toolCall", id: "call_clock_0", name: "clock", arguments: {} }]);
    const clock = new ManualClock(Date.UTC(2026, 0, 2, 3, 4, 5));
    const result = await clockTool(clock).execute("call_clock_0", {});
    expect(result.content).toEqual([{ type: "text", text: "2026-01-02T03:04:05.000Z" }]);
    const second = await collect(
      await streamFn(
        model,
        ctx([
          user("What time is it?"),
          first.final as unknown as Message,
          { role: "toolResult", toolCallId: "call_clock_0", toolName: "clock", content: result.content, isError: false, timestamp: 0 },
        ]),
      ),
    );
    expect(second.final.content).toEqual([{ type: "text", text: "The time is 2026-01-02T03:04:05.000Z." }]);
  });

  it("honours abort", async () => {
    const { model, streamFn } = localModel();
    const ac = new AbortController();
    ac.abort();
    const { final } = await collect(await streamFn(model, ctx([user("hi")]), { signal: ac.signal }));
    expect(final.stopReason).toBe("aborted");
  });
});

describe("scriptedModel", () => {
  it("plays steps in order with fixed chunking, records calls, errors past the script", async () => {
    const s = scriptedModel([
      [{ thinking: "hmm", signature: "sig" }, { text: "abcdefgh" }, { toolCall: { id: "c1", name: "t", arguments: { a: 1 }, thoughtSignature: "ts" } }],
      (messages) => [{ text: `saw ${messages.length}` }],
    ]);
    const a = await collect(await s.streamFn(s.model, ctx([user("x")]), { reasoning: "low" }));
    expect(a.events.filter((e) => e.type === "text_delta").map((e) => (e as { delta: string }).delta)).toEqual(["abcd", "efgh"]);
    expect(a.final.content).toEqual([
      { type: "thinking", thinking: "hmm", thinkingSignature: "sig" },
      { type: "text", text: "abcdefgh" },
      { type: "toolCall", id: "c1", name: "t", arguments: { a: 1 }, thoughtSignature: "ts" },
    ]);
    expect(a.final.stopReason).toBe("toolUse");
    const b = await collect(await s.streamFn(s.model, ctx([user("x"), user("y")])));
    expect(b.final.content).toEqual([{ type: "text", text: "saw 2" }]);
    expect(s.calls.map((c) => c.messages.length)).toEqual([1, 2]);
    expect(s.calls[0]!.reasoning).toBe("low");
    expect(s.remaining()).toBe(0);
    const c = await collect(await s.streamFn(s.model, ctx([])));
    expect(c.final).toMatchObject({ stopReason: "error", errorMessage: "scripted model: no more steps" });
  });

  it("error blocks end the answer as a provider error; emit hooks run in stream order", async () => {
    const seen: string[] = [];
    const s = scriptedModel([[{ text: "ab" }, { emit: () => void seen.push("hook") }, { error: "529 overloaded" }]]);
    const { final } = await collect(await s.streamFn(s.model, ctx([])));
    expect(seen).toEqual(["hook"]);
    expect(final).toMatchObject({ stopReason: "error", errorMessage: "529 overloaded", content: [{ type: "text", text: "ab" }] });
  });

  it("an honest hang ends as aborted when the signal aborts", async () => {
    const s = scriptedModel([[{ text: "a" }, { hang: "honest" }, { text: "never" }]]);
    const ac = new AbortController();
    const stream = await s.streamFn(s.model, ctx([]), { signal: ac.signal });
    setTimeout(() => ac.abort(), 5);
    const { final } = await collect(stream);
    expect(final.stopReason).toBe("aborted");
  });
});

describe("validateAgentSetup", () => {
  const { model, streamFn } = localModel();
  it("accepts a minimal setup and applies defaults", () => {
    const setup = { model, streamFn };
    validateAgentSetup(setup);
    expect(agentBudgets(setup)).toEqual({ maxAttempts: 10, submissionTimeoutMs: 3_600_000, turnTimeoutMs: 600_000, toolTimeoutMs: 600_000 });
    expect(agentBudgets({ ...setup, maxAttempts: 0, submissionTimeoutMs: 5 }).maxAttempts).toBe(10);
  });
  it("the default budget of an agent whose tools wait covers the longest wait plus the default hour (issue 22)", () => {
    const HOUR = 3_600_000;
    const tool = (extra: Record<string, unknown>) =>
      defineTool({ name: `t${Math.random()}`, label: "t", description: "t", parameters: schema.obj({}), execute: async () => ({ content: [], details: {} }), ...extra });
    const deferred = (extra: Record<string, unknown>) =>
      defineTool({ name: `d${Math.random()}`, label: "d", description: "d", parameters: schema.obj({}), start: async () => {}, ...extra });
    const budget = (tools: unknown[], extra: Record<string, unknown> = {}) => agentBudgets({ model, streamFn, tools: tools as never, ...extra }).submissionTimeoutMs;
    expect(budget([]), "no tool waits").toBe(HOUR);
    expect(budget([tool({}), tool({ needsApproval: false })]), "no tool waits").toBe(HOUR);
    expect(budget([tool({ needsApproval: true })]), "an approval's default 24 h").toBe(25 * HOUR);
    expect(budget([tool({ needsApproval: () => false })]), "a function may ask").toBe(25 * HOUR);
    expect(budget([tool({ needsApproval: true, approvalTimeoutMs: 4 * HOUR })])).toBe(5 * HOUR);
    expect(budget([tool({ needsApproval: true })], { approvalTimeoutMs: 2 * HOUR }), "the setup's approval timeout").toBe(3 * HOUR);
    expect(budget([deferred({})]), "a callback's default 24 h").toBe(25 * HOUR);
    expect(budget([deferred({ callbackTimeoutMs: 72 * HOUR }), tool({ needsApproval: true })]), "the longest wait").toBe(73 * HOUR);
    expect(budget([deferred({ callbackTimeoutMs: 72 * HOUR })], { submissionTimeoutMs: 2 * HOUR }), "an explicit budget stands").toBe(2 * HOUR);
  });
  it("names the problem", () => {
    expect(() => validateAgentSetup(null)).toThrow(AgentSetupError);
    expect(() => validateAgentSetup({ streamFn })).toThrow("invalid agent setup: model is required");
    expect(() => validateAgentSetup({ model: { ...model, id: "" }, streamFn })).toThrow("model.id must be a non-empty string");
    expect(() => validateAgentSetup({ model })).toThrow("streamFn must be a function");
    expect(() => validateAgentSetup({ model, streamFn, tools: [clockTool(), clockTool()] })).toThrow('duplicate tool name "clock"');
    expect(() => validateAgentSetup({ model, streamFn, maxAttempts: -1 })).toThrow("maxAttempts must be a finite number >= 0");
    expect(() => validateAgentSetup({ model, streamFn, thinkingLevel: "huge" })).toThrow(/thinkingLevel must be one of/);
  });
  it("checks the compaction knobs and applies their defaults", () => {
    validateAgentSetup({ model, streamFn, compaction: { keepRecentTokens: 8_000, reserveTokens: 20_000, model, streamFn } });
    expect(() => validateAgentSetup({ model, streamFn, compaction: 5 })).toThrow("compaction must be an object");
    expect(() => validateAgentSetup({ model, streamFn, compaction: { keepRecentTokens: -1 } })).toThrow("compaction.keepRecentTokens must be an integer >= 0");
    expect(() => validateAgentSetup({ model, streamFn, compaction: { reserveTokens: 1.5 } })).toThrow("compaction.reserveTokens must be an integer >= 0");
    expect(() => validateAgentSetup({ model, streamFn, compaction: { reserveTokens: 200_000 } })).toThrow(/reserveTokens \(200000\) must be below the model's contextWindow \(200000\)/);
    expect(() => validateAgentSetup({ model, streamFn, compaction: { model: { id: "x" } } })).toThrow("compaction.model.api must be a non-empty string");
    expect(() => validateAgentSetup({ model, streamFn, compaction: { streamFn: "no" } })).toThrow("compaction.streamFn must be a function");
    const summarizer = localModel();
    expect(compactionSettings({ model, streamFn })).toEqual({ keepRecentTokens: 20_000, reserveTokens: 16_384, model, streamFn });
    expect(compactionSettings({ model, streamFn, compaction: { model: summarizer.model, streamFn: summarizer.streamFn } }).streamFn).toBe(summarizer.streamFn);
    // A small window keeps a quarter of itself free by default.
    expect(compactionSettings({ model: { ...model, contextWindow: 8_000 }, streamFn }).reserveTokens).toBe(2_000);
  });
});
