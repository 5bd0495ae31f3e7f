import { describe, expect, it } from "vitest";
import type { ConversationRecord } from "../../../src/protocol/records.ts";
import { activeLeafPath, reduce } from "../../../src/conversation/reducer.ts";
import { planCompaction, recordTokens } from "../../../src/drive/compaction-plan.ts";
import { projectPath } from "../../../src/drive/projection.ts";
import { idAt, rec } from "../conversation/fixtures.ts";

/** A log built exchange by exchange: user → assistant (optionally with a tool call and its outcome). */
class Log {
  readonly records: ConversationRecord[] = [];
  #n = 0;
  #id = () => idAt(this.#n++);

  constructor() {
    this.records.push(rec(this.#id(), "conversation_created", { agent: "a", instance: "i", session: "s" }));
  }

  exchange(user: string, reply: string, tool?: { callId: string; result: string }): this {
    this.records.push(rec(this.#id(), "user_message", { body: user }));
    if (tool) {
      const call = { type: "toolCall", id: tool.callId, name: "lookup", arguments: { q: user } };
      this.records.push(rec(this.#id(), "assistant_tool_call", { callId: tool.callId, toolName: "lookup", args: { q: user } }));
      this.records.push(rec(this.#id(), "assistant_message_completed", { message: { role: "assistant", type: "message", body: assistant([call], "toolUse") } }));
      this.records.push(rec(this.#id(), "tool_outcome", { callId: tool.callId, toolName: "lookup", content: [{ type: "text", text: tool.result }] }));
    }
    this.records.push(rec(this.#id(), "assistant_message_completed", { message: { role: "assistant", type: "message", body: assistant([{ type: "text", text: reply }]) } }));
    this.records.push(rec(this.#id(), "submission_settled", { status: "succeeded" }));
    return this;
  }

  compaction(summary: string, firstKeptEntryId: string): this {
    this.records.push(rec(this.#id(), "compaction", { summary, firstKeptEntryId, startIdx: 0, endIdx: 0 }));
    return this;
  }

  path(): ConversationRecord[] {
    return activeLeafPath(reduce(this.records));
  }
}

function assistant(content: unknown[], stopReason = "stop") {
  return { role: "assistant", content, api: "x", provider: "x", model: "m", usage: {}, stopReason, timestamp: 0 };
}

const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(" ");

describe("planCompaction", () => {
  it("keeps the shortest suffix starting at a user message that holds keepRecentTokens, and summarizes the rest", () => {
    const log = new Log();
    for (let i = 0; i < 6; i++) log.exchange(`question ${i} ${words(200)}`, `answer ${i} ${words(200)}`);
    const path = log.path();
    const perExchange = path.filter((r) => r.kind === "user_message" || r.kind === "assistant_message_completed").reduce((n, r) => n + recordTokens(r), 0) / 6;

    const plan = planCompaction(path, { keepRecentTokens: Math.ceil(perExchange * 2) })!;
    const kept = path.find((r) => r.id === plan.firstKeptEntryId)!;
    expect(kept.kind).toBe("user_message");
    // Two exchanges are exactly the budget: the kept suffix holds the last two questions.
    expect(kept.kind === "user_message" && kept.payload.body.startsWith("question 4")).toBe(true);
    expect(plan.keptTokens).toBeGreaterThanOrEqual(Math.ceil(perExchange * 2) - 1);
    expect(plan.summarized[0]!.kind).toBe("conversation_created");
    expect(plan.summarized.at(-1)!.kind).toBe("submission_settled");
    expect(plan.previousSummary).toBeUndefined();
    // Four exchanges summarized = eight projected messages.
    expect([plan.startIdx, plan.endIdx]).toEqual([0, 8]);
  });

  it("never separates a tool call from its outcome: the cut is always at a user-side message", () => {
    const log = new Log();
    for (let i = 0; i < 5; i++) log.exchange(`q${i}`, `a${i} ${words(50)}`, { callId: `call-${i}`, result: words(300) });
    const path = log.path();
    for (let keep = 1; keep < 3000; keep += 97) {
      const plan = planCompaction(path, { keepRecentTokens: keep });
      if (plan === undefined) continue;
      const cut = path.findIndex((r) => r.id === plan.firstKeptEntryId);
      const before = new Set(path.slice(0, cut).filter((r) => r.kind === "assistant_tool_call").map((r) => (r.kind === "assistant_tool_call" ? r.payload.callId : "")));
      const after = path.slice(cut).filter((r) => r.kind === "tool_outcome").map((r) => (r.kind === "tool_outcome" ? r.payload.callId : ""));
      expect(after.filter((id) => before.has(id))).toEqual([]);
      expect(["user_message", "signal"]).toContain(path[cut]!.kind);
    }
  });

  it("an automatic compaction does nothing when everything fits; a manual one keeps only the last exchange", () => {
    const log = new Log().exchange("one", "1").exchange("two", "2").exchange("three", "3");
    const path = log.path();
    expect(planCompaction(path, { keepRecentTokens: 20_000 })).toBeUndefined();
    const manual = planCompaction(path, { keepRecentTokens: 20_000, manual: true })!;
    const kept = path.find((r) => r.id === manual.firstKeptEntryId)!;
    expect(kept.kind === "user_message" && kept.payload.body).toBe("three");
  });

  it("has nothing to compact with a single exchange, even manually", () => {
    const path = new Log().exchange(words(5000), words(5000)).path();
    expect(planCompaction(path, { keepRecentTokens: 10, manual: true })).toBeUndefined();
    expect(planCompaction([], { keepRecentTokens: 10, manual: true })).toBeUndefined();
  });

  it("after a compaction the path starts at its summary: the next plan builds on it and summarizes only what followed", () => {
    const log = new Log();
    for (let i = 0; i < 4; i++) log.exchange(`q${i} ${words(100)}`, `a${i} ${words(100)}`);
    const first = planCompaction(log.path(), { keepRecentTokens: 1, manual: true })!;
    log.compaction("SUMMARY-1", first.firstKeptEntryId);
    for (let i = 4; i < 7; i++) log.exchange(`q${i} ${words(100)}`, `a${i} ${words(100)}`);

    const path = log.path();
    expect(path[0]!.kind).toBe("compaction");
    const second = planCompaction(path, { keepRecentTokens: 1, manual: true })!;
    expect(second.previousSummary).toBe("SUMMARY-1");
    expect(second.summarized[0]!.id).toBe(first.firstKeptEntryId);
    expect(second.startIdx).toBe(1);
    const summarizedMessages = projectPath(second.summarized).messages.length;
    expect(second.endIdx).toBe(1 + summarizedMessages);
    // The projection of the path after the second compaction starts with its summary.
    log.compaction("SUMMARY-2", second.firstKeptEntryId);
    const after = projectPath(log.path()).messages;
    expect(JSON.stringify(after[0])).toContain("SUMMARY-2");
    expect(JSON.stringify(after)).not.toContain("SUMMARY-1");
  });

  it("counts what the model sees: failed assistant messages and never-projected kinds weigh nothing", () => {
    expect(recordTokens(rec("x", "assistant_text_delta", { text: words(500) }))).toBe(0);
    expect(recordTokens(rec("x", "assistant_message_completed", { message: { role: "assistant", type: "message", body: assistant([{ type: "text", text: words(500) }], "error") } }))).toBe(0);
    expect(recordTokens(rec("x", "tool_outcome", { callId: "c", toolName: "t", content: [{ type: "text", text: "x".repeat(350) }], data: { big: "y".repeat(10_000) } }))).toBe(100);
  });
});
