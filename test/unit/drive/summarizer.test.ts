import type { StreamFn } from "@earendil-works/pi-agent-core";
import { contentText, type Message } from "@earendil-works/pi-ai";
import { describe, expect, it } from "vitest";
import type { ConversationRecord } from "../../../src/protocol/records.ts";
import { keylessModel, streamBlocks } from "../../../src/agent/block-stream.ts";
import { localModel } from "../../../src/agent/local-model.ts";
import { renderTranscript, summarize, SummarizationError, SUMMARY_TRANSCRIPT_OPEN } from "../../../src/drive/summarizer.ts";
import { idAt, rec } from "../conversation/fixtures.ts";

function history(n: number, size = 10): ConversationRecord[] {
  const records: ConversationRecord[] = [];
  for (let i = 0; i < n; i++) {
    records.push(rec(idAt(2 * i), "user_message", { body: `question ${i} ${"q".repeat(size)}` }));
    const body = { role: "assistant", content: [{ type: "text", text: `answer ${i}` }], api: "x", provider: "x", model: "m", usage: {}, stopReason: "stop", timestamp: 0 };
    records.push(rec(idAt(2 * i + 1), "assistant_message_completed", { message: { role: "assistant", type: "message", body } }));
  }
  return records;
}

const requestText = (messages: readonly Message[]) => {
  const user = messages.find((m) => m.role === "user")!;
  return typeof user.content === "string" ? user.content : contentText(user.content);
};

/** A model whose context holds `window` characters of request: longer requests overflow like Anthropic's API says. */
function smallWindowModel(window: number) {
  const calls: string[] = [];
  const model = { ...keylessModel("small", "test"), contextWindow: 1000 };
  const streamFn: StreamFn = (m, context) => {
    const text = requestText(context.messages);
    calls.push(text);
    if (text.length > window) return streamBlocks(m, () => [{ type: "error", message: "prompt is too long: 250000 tokens > 200000 maximum" }]);
    return streamBlocks(m, () => [{ type: "text", text: `S(${text.length})` }]);
  };
  return { model, streamFn, calls };
}

describe("summarize", () => {
  it("asks the model with the span as a plain-text transcript and returns its text and usage", async () => {
    const { model, streamFn } = localModel();
    const result = await summarize({ model, streamFn, summarized: history(2) });
    expect(result.calls).toBe(1);
    expect(result.summary).toContain("[user] question 0");
    expect(result.summary).toContain("[assistant] answer 1");
  });

  it("is incremental: the previous summary is handed in and the local model keeps it", async () => {
    const { model, streamFn } = localModel();
    const first = await summarize({ model, streamFn, summarized: history(2) });
    const second = await summarize({ model, streamFn, previousSummary: first.summary, summarized: history(1) });
    expect(second.summary.startsWith(first.summary)).toBe(true);
    expect(second.summary.length).toBeGreaterThan(first.summary.length);
  });

  it("splits a span that overflows the summarizer and folds the halves", async () => {
    const { model, streamFn, calls } = smallWindowModel(600);
    const result = await summarize({ model, streamFn, summarized: history(8, 40) });
    expect(calls.length).toBeGreaterThan(2);
    expect(calls[0]!.length).toBeGreaterThan(600);
    // The later calls build on the earlier halves' summaries.
    expect(calls.at(-1)).toContain("<previous-summary>");
    expect(result.summary).toMatch(/^S\(\d+\)$/);
  });

  it("cuts a single message that alone overflows, and gives up with a typed error when nothing fits", async () => {
    const cuttable = smallWindowModel(5000);
    const ok = await summarize({ ...cuttable, summarized: history(1, 20_000).slice(0, 1) });
    expect(ok.summary).toMatch(/^S/);

    const hopeless = smallWindowModel(10);
    const error = await summarize({ ...hopeless, summarized: history(1, 20_000).slice(0, 1) }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SummarizationError);
    expect((error as SummarizationError).overflow).toBe(true);
  });

  it("reports a provider failure as retryable or not", async () => {
    const model = keylessModel("down", "test");
    const down: StreamFn = (m) => streamBlocks(m, () => [{ type: "error", message: "503 overloaded" }]);
    const error = (await summarize({ model, streamFn: down, summarized: history(1) }).catch((e: unknown) => e)) as SummarizationError;
    expect(error.code).toBe("summarization_failed");
    expect(error.retryable).toBe(true);
  });

  it("renders tool calls and results as lines, so no provider sees an orphan call", () => {
    const text = renderTranscript([
      { role: "user", content: "hi", timestamp: 0 },
      { role: "assistant", content: [{ type: "toolCall", id: "c1", name: "clock", arguments: {} }], api: "x", provider: "x", model: "m", usage: {} as never, stopReason: "toolUse", timestamp: 0 },
      { role: "toolResult", toolCallId: "c1", toolName: "clock", content: [{ type: "text", text: "12:00" }], isError: false, timestamp: 0 },
    ]);
    expect(text).toBe("[user] hi\n[tool call] clock {}\n[tool result] clock: 12:00");
    expect(text).not.toContain(SUMMARY_TRANSCRIPT_OPEN);
  });
});
