import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkpointOf, followsCheckpoint, viewFrom, wholeLogView, type LogCheckpoint, type LogView } from "../../../src/conversation/checkpoint.ts";
import type { ConversationRecord } from "../../../src/protocol/records.ts";
import { expectSameRebuild, unsettledIn } from "../../../src/store/conformance/checkpoint-cases.ts";
import { randomLog, seededRandom } from "../../../src/store/conformance/random-log.ts";
import { idAt, rec } from "./fixtures.ts";

/** A log generated with sequential ids (no store). */
async function generated(seed: number) {
  let n = 0;
  const random = seededRandom(seed);
  const log = await randomLog(random, {
    conversationId: "conv-1",
    session: "default",
    append: async (drafts) => drafts.map((d) => ({ ...d, id: idAt(n++) }) as ConversationRecord),
  });
  return { log, random };
}

describe("log checkpoints (ADR 0018)", () => {
  it("a rebuild from a chain of checkpoints equals the whole log's, for every running submission (random logs)", async () => {
    let fromCheckpoint = 0;
    let fellBack = 0;
    let unexplained = 0;
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 2 ** 30 }), async (seed) => {
        const { log, random } = await generated(seed);
        const records = log.records;
        // Cut points where a worker rebuilt and then stored a checkpoint, in order.
        const cuts = [...new Set(Array.from({ length: 1 + Math.floor(random() * 5) }, () => 1 + Math.floor(random() * records.length)))].sort((a, b) => a - b);
        let checkpoint: LogCheckpoint | undefined;
        /** The checkpoint the current view was read from (undefined: the whole log). */
        let base: LogCheckpoint | undefined;
        let view: LogView = wholeLogView([]);
        let at = 0;
        const rebuildAt = (end: number): LogView => {
          const tail = records.slice(at, end);
          // Either a new worker reads (checkpoint + the log after it), or the same attempt goes
          // on appending to the view it read (it stops when a record does not follow the
          // checkpoint that view started from, as the log writer does).
          if (checkpoint === undefined || (random() < 0.3 && (base === undefined || followsCheckpoint(base, tail)))) {
            return { records: [...view.records, ...tail], earlier: view.earlier };
          }
          base = checkpoint;
          const read = viewFrom(checkpoint, tail);
          if (read) fromCheckpoint++;
          else {
            base = undefined;
            fellBack++;
            if (log.oddPointers === 0) unexplained++;
          }
          return read ?? wholeLogView(records.slice(0, end));
        };
        for (const cut of cuts) {
          view = rebuildAt(cut);
          const prefix = records.slice(0, cut);
          for (const id of [...unsettledIn(prefix), "fresh"]) expectSameRebuild(prefix, view, id, `seed ${seed} at ${cut}`);
          checkpoint = checkpointOf(view, records[cut - 1]!.id);
          at = cut;
        }
        const last = rebuildAt(records.length);
        for (const id of [...unsettledIn(records), ...log.running, "fresh"]) expectSameRebuild(records, last, id, `seed ${seed} at the end`);
      }),
      { numRuns: 300 },
    );
    expect(fromCheckpoint, "rebuilds that started from a checkpoint").toBeGreaterThan(300);
    expect(unexplained, "fallbacks to the whole log without an odd compaction pointer").toBe(0);
    expect(fellBack, "fallbacks happen only for odd pointers").toBeLessThan(fromCheckpoint / 5);
  });

  it("leaves streaming deltas out of the path, and keeps a running submission's records a compaction cut off", () => {
    const log = [
      rec(idAt(0), "conversation_created", { agent: "a", instance: "i", session: "s" }),
      { ...rec(idAt(1), "user_message", { body: "one" }), submissionId: "s1" },
      { ...rec(idAt(2), "assistant_message_started", { model: "m", messageType: "message" }), submissionId: "s1" },
      { ...rec(idAt(3), "assistant_text_delta", { text: "he" }), submissionId: "s1" },
      { ...rec(idAt(4), "assistant_message_completed", { message: { role: "assistant", type: "message" } }), submissionId: "s1" },
      { ...rec(idAt(5), "user_message", { body: "steer", origin: "steer" }), submissionId: "s1" },
      { ...rec(idAt(6), "compaction", { summary: "s", startIdx: 0, endIdx: 2, firstKeptEntryId: idAt(5) }), submissionId: "s1" },
    ];
    const checkpoint = checkpointOf(wholeLogView(log), idAt(6));
    expect(checkpoint.path.map((r) => r.id)).toEqual([idAt(6), idAt(5)]);
    expect(checkpoint.open.map((r) => r.id), "s1's own earlier records, deltas aside").toEqual([idAt(1), idAt(2), idAt(4)]);
    const settled = [...log, { ...rec(idAt(7), "submission_settled", { status: "succeeded" }), submissionId: "s1" }];
    expect(checkpointOf(wholeLogView(settled), idAt(7)).open, "nothing once s1 settled").toEqual([]);
  });

  it("refuses a tail whose compaction keeps an entry the checkpoint does not hold", () => {
    const log = [
      rec(idAt(0), "user_message", { body: "one" }),
      rec(idAt(1), "assistant_text_delta", { text: "x" }),
      rec(idAt(2), "user_message", { body: "two" }),
    ];
    const checkpoint = checkpointOf(wholeLogView(log), idAt(2));
    const compaction = (kept: string) => [rec(idAt(3), "compaction", { summary: "s", startIdx: 0, endIdx: 1, firstKeptEntryId: kept })];
    expect(viewFrom(checkpoint, compaction(idAt(2))), "a path entry").toBeDefined();
    expect(viewFrom(checkpoint, compaction(idAt(9))), "a later id").toBeDefined();
    expect(viewFrom(checkpoint, compaction(idAt(1))), "a delta left out").toBeUndefined();
  });
});
