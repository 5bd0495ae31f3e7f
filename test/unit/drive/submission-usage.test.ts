import { describe, expect, it } from "vitest";
import type { ConversationRecord } from "../../../src/protocol/records.ts";
import { submissionUsage } from "../../../src/drive/submission-usage.ts";
import { rec } from "../conversation/fixtures.ts";

function completed(id: string, submissionId: string, usage: unknown, stopReason = "stop"): ConversationRecord {
  const body = { role: "assistant", content: [], api: "x", provider: "x", model: "m", usage, stopReason, timestamp: 0 };
  return { ...rec(id, "assistant_message_completed", { message: { role: "assistant", type: "message", body } }), submissionId } as ConversationRecord;
}

const priced = (input: number, output: number) => ({
  input,
  output,
  cacheRead: 1,
  cacheWrite: 2,
  totalTokens: input + output + 3,
  cost: { input: input / 1e6, output: output / 1e6, cacheRead: 0, cacheWrite: 0, total: (input + output) / 1e6 },
});

describe("submissionUsage", () => {
  it("sums every completed assistant message of the submission, failed and abandoned attempts included, and its compactions", () => {
    const records: ConversationRecord[] = [
      completed("r1", "s1", priced(100, 10)),
      completed("r2", "s1", priced(200, 0), "error"),
      completed("r3", "other", priced(9999, 9999)),
      { ...rec("r4", "compaction", { summary: "x", startIdx: 0, endIdx: 2, usage: priced(50, 5), reason: "overflow" }), submissionId: "s1" } as ConversationRecord,
      { ...rec("r5", "user_message", { body: "hi" }), submissionId: "s1" } as ConversationRecord,
    ];
    const { usage, cost } = submissionUsage(records, "s1");
    expect(usage).toEqual({ input: 350, output: 15, cacheRead: 3, cacheWrite: 6, totalTokens: 374 });
    expect(cost!.total).toBeCloseTo(365 / 1e6, 12);
  });

  it("has no cost when nothing had a price, and tolerates malformed stored usage", () => {
    const records = [completed("r1", "s1", { input: 5, output: "x", cost: null }), completed("r2", "s1", undefined), completed("r3", "s1", { input: -4, output: 2 })];
    const result = submissionUsage(records, "s1");
    expect(result).toEqual({ usage: { input: 5, output: 2, cacheRead: 0, cacheWrite: 0, totalTokens: 7 } });
  });
});
