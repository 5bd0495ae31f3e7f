import { describe, expect, it } from "vitest";
import type { ConversationRecord, RecordKind, RecordPayloads } from "../../../../src/protocol/records.ts";
import type { Submission } from "../../../../src/store/submission.ts";
import { checkInvariants, type SessionEvidence } from "../../../../dev/soak/invariants.ts";

let n = 0;
function r<K extends RecordKind>(kind: K, payload: RecordPayloads[K], extra: Partial<ConversationRecord> = {}): ConversationRecord {
  n++;
  return { id: `R${String(n).padStart(6, "0")}`, kind, conversationId: "c", session: "default", time: "t", payload, ...extra } as ConversationRecord;
}

/** A healthy session: two submissions, the second with a tool call answered once. */
function healthy(): SessionEvidence {
  n = 0;
  const log = [
    r("conversation_created", { agent: "a", instance: "i", session: "default" }),
    r("user_message", { body: "hi" }, { submissionId: "s1", attemptId: "a1" }),
    r("submission_settled", { status: "succeeded" }, { submissionId: "s1", attemptId: "a1" }),
    r("user_message", { body: "time?" }, { submissionId: "s2", attemptId: "a2" }),
    r("assistant_tool_call", { callId: "c1", toolName: "clock" }, { submissionId: "s2", attemptId: "a3" }),
    r("tool_outcome", { callId: "c1", toolName: "clock" }, { submissionId: "s2", attemptId: "a3" }),
    r("submission_settled", { status: "succeeded" }, { submissionId: "s2", attemptId: "a3" }),
  ];
  return { key: "a/i/default", acknowledged: ["s1", "s2"], log, live: [log.slice(2, 5)] };
}

const check = (session: SessionEvidence, unsettled: Submission[] = []) => checkInvariants({ sessions: [session], unsettled });

describe("soak invariants", () => {
  it("hold for a healthy session", () => {
    expect(check(healthy())).toEqual([]);
  });

  it("catch a submission whose cancel was answered 200 but that settled otherwise", () => {
    const cancelled = healthy();
    cancelled.cancelled = ["s1"];
    expect(check(cancelled)).toContain("a/i/default: submission s1: its cancel was answered 200, yet it settled succeeded");
    const honoured = healthy();
    honoured.log = honoured.log.map((x) =>
      x.kind === "submission_settled" && x.submissionId === "s1" ? { ...x, payload: { status: "failed", errorCode: "cancelled", error: "cancelled" } } as ConversationRecord : x,
    );
    honoured.live = [];
    honoured.cancelled = ["s1"];
    expect(check(honoured)).toEqual([]);
  });

  it("catch a submission settled twice, never, or without being acknowledged", () => {
    const twice = healthy();
    twice.log = [...twice.log, r("submission_settled", { status: "failed" }, { submissionId: "s2" })];
    expect(check(twice)).toContain("a/i/default: submission s2 settled 2 times");
    const never = healthy();
    never.acknowledged = ["s1", "s2", "s3"];
    expect(check(never)).toContain("a/i/default: submission s3 settled 0 times");
    const stranger = healthy();
    stranger.acknowledged = ["s2"];
    expect(check(stranger).join("\n")).toContain("submission s1 settled but was never acknowledged");
    // A compaction POST cut by a crash may have been admitted: one such settlement is allowed.
    stranger.unconfirmed = 1;
    expect(check(stranger)).toEqual([]);
  });

  it("catch settlements out of admission order", () => {
    const s = healthy();
    s.acknowledged = ["s2", "s1"];
    expect(check(s).join("\n")).toContain("settled out of admission order");
  });

  it("catch ids that do not strictly increase, and a log without its first record", () => {
    const s = healthy();
    s.log = [s.log[0]!, s.log[2]!, s.log[1]!, ...s.log.slice(3)];
    expect(check(s).join("\n")).toContain("ids must strictly increase");
    const headless = healthy();
    headless.log = headless.log.slice(1);
    headless.live = [];
    expect(check(headless).join("\n")).toContain("not conversation_created");
  });

  it("catch a live reader that skipped, repeated or invented a record", () => {
    const skipped = healthy();
    skipped.live = [[skipped.log[2]!, skipped.log[4]!]];
    expect(check(skipped).join("\n")).toContain("a skipped, duplicated or reordered record");
    const invented = healthy();
    invented.live = [[r("user_message", { body: "ghost" })]];
    expect(check(invented).join("\n")).toContain("which is not in the log");
    const altered = healthy();
    altered.live = [[{ ...altered.log[3]!, payload: { body: "changed" } } as ConversationRecord]];
    expect(check(altered).join("\n")).toContain("with other content");
  });

  it("catch a settling attempt's tool call without exactly one outcome, but not a superseded attempt's", () => {
    const missing = healthy();
    missing.log = missing.log.filter((x) => x.kind !== "tool_outcome");
    missing.live = [];
    expect(check(missing)).toContain("a/i/default: tool call c1 of submission s2 has 0 outcomes");
    const superseded = healthy();
    superseded.log = superseded.log.map((x) => (x.kind === "assistant_tool_call" ? { ...x, attemptId: "a2" } : x)).filter((x) => x.kind !== "tool_outcome");
    superseded.live = [];
    expect(check(superseded)).toEqual([]);
  });

  it("catch work left unsettled", () => {
    const row = { id: "s9", status: "running", leaseExpiresAt: 1 } as Submission;
    expect(check(healthy(), [row])).toEqual(["s9: left running after the run (holding a lease)"]);
  });
});
