/**
 * Lean history (ADR 0034) as readers see it: a real run's log, its deltas folded by the runtime's
 * sweep after the retention, reads the same through every reader the harness ships (the message
 * view the chat page and React hook draw from, the AI SDK's UI messages, the CLI's renderer), and
 * so does a log of which only the earlier deltas were folded.
 */
import { describe, expect, it } from "vitest";
import { uiMessagesOf } from "../../../src/ai-sdk/index.ts";
import { clockTool } from "../../../src/agent/clock-tool.ts";
import { localModel } from "../../../src/agent/local-model.ts";
import { RecordRenderer } from "../../../src/cli/record-renderer.ts";
import { MessageView } from "../../../src/client/message-view.ts";
import { isStreamingDelta } from "../../../src/conversation/checkpoint.ts";
import { DEFAULT_DELTA_RETENTION_MS } from "../../../src/conversation/delta-folding.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";
import { ManualClock } from "../../../src/ports/clock.ts";
import type { ConversationRecord } from "../../../src/protocol/records.ts";
import { createRuntime } from "../../../src/runtime/runtime.ts";
import { allRecords } from "../../support/runtime-kit.ts";

function rendered(records: ConversationRecord[]): string {
  const chunks: string[] = [];
  const renderer = new RecordRenderer({ write: (t) => void chunks.push(t), isTTY: false });
  for (const r of records) renderer.render(r);
  renderer.finish();
  return chunks.join("");
}

async function readers(records: ConversationRecord[]) {
  const ui = await uiMessagesOf(records);
  return {
    view: MessageView.of(records).items,
    ui: ui.map((m) => ({ role: m.role, parts: m.parts.filter((p) => p.type === "text" || p.type === "reasoning").map((p) => ("text" in p ? p.text : "")) })),
    cli: rendered(records),
  };
}

describe("lean history: folded deltas, the same conversation for every reader", () => {
  it("the sweep folds a settled run's deltas after the retention; view, UI messages and CLI read the same", async () => {
    const clock = new ManualClock();
    const store = createMemoryStore({ clock });
    const runtime = createRuntime({
      agents: { assistant: { initialize: () => ({ ...localModel({ chunkSize: 4 }), tools: [clockTool()] }) } },
      store,
      clock,
      flushPolicy: { bytes: 0, intervalMs: 0 },
      // The test sweeps itself (the timer would fold them first when the clock jumps an hour).
      sweepIntervalMs: 100 * DEFAULT_DELTA_RETENTION_MS,
    });
    await runtime.start();
    try {
      const first = await runtime.dispatch({ agent: "assistant", instance: "i1", message: { kind: "user", body: "Tell me a story about a lighthouse keeper" } });
      const second = await runtime.dispatch({ agent: "assistant", instance: "i1", message: { kind: "user", body: "What time is it?" } });
      await runtime.wait(second.submissionId);
      expect((await store.getSubmission(first.submissionId)).status).toBe("settled");
      const conversationId = (await store.getSubmission(first.submissionId)).conversationId;
      const full = await allRecords(store, conversationId);
      const deltas = full.filter(isStreamingDelta);
      expect(deltas.length, "the run streamed in many deltas").toBeGreaterThan(5);

      expect((await runtime.sweep()).deltasFolded, "nothing is folded before the retention").toBe(0);
      await clock.advance(DEFAULT_DELTA_RETENTION_MS);
      expect((await runtime.sweep()).deltasFolded).toBe(deltas.length);
      const folded = await allRecords(store, conversationId);
      expect(folded).toEqual(full.filter((r) => !isStreamingDelta(r)));

      const before = await readers(full);
      expect(before.view.some((i) => i.kind === "assistant" && i.text.length > 20), "the reply has text").toBe(true);
      expect(await readers(folded)).toEqual(before);

      // A reader that read part of the reply live and resumes after the fold: the same again.
      const lastSeen = deltas[Math.floor(deltas.length / 2)]!;
      const resumed = [...full.filter((r) => r.id <= lastSeen.id), ...(await store.readRecords(conversationId, lastSeen.id))];
      expect(resumed.filter(isStreamingDelta).length).toBeLessThan(deltas.length);
      expect(await readers(resumed)).toEqual(before);
    } finally {
      await runtime.close();
    }
  });
});
