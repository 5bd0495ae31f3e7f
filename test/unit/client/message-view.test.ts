import { describe, expect, it } from "vitest";
import { MessageView } from "../../../src/client/message-view.ts";
import type { ConversationRecord, RecordKind, RecordPayloads } from "../../../src/protocol/records.ts";

/** Records of one submission, numbered in log order; `at(attempt, turn)` sets the envelope. */
function log() {
  const records: ConversationRecord[] = [];
  const add = <K extends RecordKind>(kind: K, payload: RecordPayloads[K], envelope: { sub?: string; attempt?: string; turn?: string } = {}) => {
    const r = {
      id: `r${String(records.length).padStart(4, "0")}`,
      kind,
      conversationId: "c1",
      session: "s",
      time: "2026-01-01T00:00:00.000Z",
      payload,
      ...(envelope.sub === undefined ? {} : { submissionId: envelope.sub }),
      ...(envelope.attempt === undefined ? {} : { attemptId: envelope.attempt }),
      ...(envelope.turn === undefined ? {} : { turnId: envelope.turn }),
    } as ConversationRecord;
    records.push(r);
    return r;
  };
  return { records, add };
}

const completed = (stopReason: string) => ({ message: { role: "assistant", type: "message", body: { role: "assistant", content: [], stopReason } } });
const words = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `w${String(from + i).padStart(2, "0")} `);

describe("MessageView", () => {
  it("keeps a submission's last submission_retrying record as its retry state until another record of it arrives (ADR 0053)", () => {
    const { add } = log();
    const view = new MessageView();
    const retry = { reason: "unreachable" as const, error: "cannot reach h (ENOTFOUND): Connection error.", nextAttemptAt: "2026-01-01T00:00:02.000Z", attemptCount: 1, maxAttempts: 10 };
    view.apply(add("user_message", { body: "hi" }, { sub: "s1", attempt: "a1" }));
    view.apply(add("submission_retrying", retry, { sub: "s1", attempt: "a1" }));
    expect(view.retrying).toEqual([{ ...retry, submissionId: "s1" }]);
    view.apply(add("submission_retrying", { ...retry, reason: "rate_limited", status: 429 }, { sub: "s1", attempt: "a2" }));
    expect(view.retrying.map((r) => [r.submissionId, r.reason, r.status])).toEqual([["s1", "rate_limited", 429]]);
    expect(view.items.map((i) => i.kind), "not an item on screen").toEqual(["user"]);
    view.apply(add("assistant_message_started", { model: "m", messageType: "message" }, { sub: "s1", attempt: "a3", turn: "t1" }));
    expect(view.retrying, "the run went on").toEqual([]);
  });

  it("drops an abandoned attempt's unfinished message when the next attempt's first record arrives, not only at the end", () => {
    const { records, add } = log();
    const view = new MessageView();
    const apply = (r: ConversationRecord) => view.apply(r);
    apply(add("user_message", { body: "count" }, { sub: "s1", attempt: "a1" }));
    apply(add("assistant_message_started", { model: "m", messageType: "message" }, { sub: "s1", attempt: "a1", turn: "t1" }));
    for (const w of words(0, 9)) apply(add("assistant_text_delta", { text: w }, { sub: "s1", attempt: "a1", turn: "t1" }));
    expect(view.assistantText("s1")).toBe(words(0, 9).join(""));
    // The process died; attempt a2 begins: its first record supersedes a1's open message at once.
    apply(add("assistant_message_started", { model: "m", messageType: "message" }, { sub: "s1", attempt: "a2", turn: "t2" }));
    expect(view.assistantText("s1")).toBe("");
    for (const w of words(0, 24)) apply(add("assistant_text_delta", { text: w }, { sub: "s1", attempt: "a2", turn: "t2" }));
    apply(add("assistant_message_completed", completed("stop"), { sub: "s1", attempt: "a2", turn: "t2" }));
    apply(add("submission_settled", { status: "succeeded" }, { sub: "s1", attempt: "a2" }));

    expect(view.assistantText("s1")).toBe(words(0, 24).join(""));
    expect(view.items.map((i) => i.kind)).toEqual(["user", "assistant", "settled"]);
    // What a client that concatenates every delta shows instead:
    const naive = records.flatMap((r) => (r.kind === "assistant_text_delta" ? [r.payload.text] : [])).join("");
    expect(naive).toBe([...words(0, 9), ...words(0, 24)].join(""));
    // Built from the replay, the view is the same.
    expect(MessageView.of(records).items).toEqual(view.items);
  });

  it("a failed turn's message stays until a later attempt retries it; completed messages of the earlier attempt stay", () => {
    const { add, records } = log();
    add("user_message", { body: "time?" }, { sub: "s1", attempt: "a1" });
    add("assistant_text_delta", { text: "let me look" }, { sub: "s1", attempt: "a1", turn: "t1" });
    add("assistant_message_completed", completed("toolUse"), { sub: "s1", attempt: "a1", turn: "t1" });
    add("assistant_tool_call", { callId: "c1", toolName: "clock", args: {} }, { sub: "s1", attempt: "a1", turn: "t1" });
    add("tool_outcome", { callId: "c1", toolName: "clock", content: [{ type: "text", text: "12:00" }] }, { sub: "s1", attempt: "a1", turn: "t1" });
    add("assistant_text_delta", { text: "It is no" }, { sub: "s1", attempt: "a1", turn: "t2" });
    add("assistant_message_completed", completed("error"), { sub: "s1", attempt: "a1", turn: "t2" });
    const failed = MessageView.of(records);
    expect(failed.items.find((i) => i.kind === "assistant" && i.interrupted)).toMatchObject({ text: "It is no" });

    add("assistant_text_delta", { text: "It is noon." }, { sub: "s1", attempt: "a2", turn: "t3" });
    add("assistant_message_completed", completed("stop"), { sub: "s1", attempt: "a2", turn: "t3" });
    const view = MessageView.of(records);
    expect(view.assistantText("s1")).toBe("let me look\n\nIt is noon.");
    expect(view.items.map((i) => i.kind)).toEqual(["user", "assistant", "tool", "assistant"]);
  });

  it("a settlement leaves an unfinished message marked interrupted; other submissions are untouched", () => {
    const { add, records } = log();
    add("assistant_text_delta", { text: "done" }, { sub: "s0", attempt: "a0", turn: "t0" });
    add("assistant_message_completed", completed("stop"), { sub: "s0", attempt: "a0", turn: "t0" });
    add("assistant_text_delta", { text: "half a rep" }, { sub: "s1", attempt: "a1", turn: "t1" });
    add("submission_settled", { status: "failed", errorCode: "cancelled", error: "cancelled: stop" }, { sub: "s1", attempt: "a1" });
    const view = MessageView.of(records);
    expect(view.items).toMatchObject([
      { kind: "assistant", text: "done", done: true, interrupted: false },
      { kind: "assistant", text: "half a rep", done: true, interrupted: true },
      { kind: "settled", errorCode: "cancelled" },
    ]);
  });

  it("a call that needs approval shows pending on its tool item, then the decision with its reason; the approved call's outcome follows", () => {
    const { add, records } = log();
    add("user_message", { body: "refund 240 and 900" }, { sub: "s1", attempt: "a1" });
    add("assistant_message_completed", completed("toolUse"), { sub: "s1", attempt: "a1", turn: "t1" });
    for (const [callId, amount] of [["c1", 240], ["c2", 900]] as const) {
      add("assistant_tool_call", { callId, toolName: "refund", args: { amount } }, { sub: "s1", attempt: "a1", turn: "t1" });
      add("approval_requested", { callId, toolName: "refund", args: { amount }, approvalId: `s1/${callId}`, expiresAt: "2026-01-02T00:00:00.000Z" }, { sub: "s1", attempt: "a1", turn: "t1" });
    }
    const waiting = MessageView.of(records);
    expect(waiting.items).toMatchObject([
      { kind: "user" },
      { kind: "tool", callId: "c1", name: "refund", args: { amount: 240 }, approval: { state: "pending", approvalId: "s1/c1", expiresAt: "2026-01-02T00:00:00.000Z" } },
      { kind: "tool", callId: "c2", approval: { state: "pending" } },
    ]);
    expect(waiting.items.filter((i) => i.kind === "tool" && i.outcome !== undefined)).toEqual([]);

    add("approval_decided", { callId: "c1", approved: true }, { sub: "s1" });
    add("approval_decided", { callId: "c2", approved: false, reason: "needs a manager" }, { sub: "s1" });
    add("tool_started", { callId: "c1", toolName: "refund" }, { sub: "s1", attempt: "a2" });
    add("tool_outcome", { callId: "c1", toolName: "refund", content: [{ type: "text", text: "refunded $240" }] }, { sub: "s1", attempt: "a2" });
    add("tool_outcome", { callId: "c2", toolName: "refund", content: [{ type: "text", text: "denied by a reviewer: needs a manager" }], isError: true }, { sub: "s1", attempt: "a2" });
    const view = MessageView.of(records);
    const tools = view.items.filter((i) => i.kind === "tool");
    expect(tools).toMatchObject([
      { callId: "c1", outcome: "refunded $240", isError: false, approval: { state: "approved" } },
      { callId: "c2", outcome: "denied by a reviewer: needs a manager", isError: true, approval: { state: "denied", reason: "needs a manager" } },
    ]);
    expect(tools[0]).not.toHaveProperty("approval.reason");
  });

  it("an expired approval reads as expired; an approval whose call record is missing still gets its card", () => {
    const { add, records } = log();
    add("approval_requested", { callId: "c9", toolName: "rm", args: { path: "build" }, approvalId: "s1/c9", expiresAt: "2026-01-02T00:00:00.000Z" }, { sub: "s1", attempt: "a1" });
    add("approval_decided", { callId: "c9", approved: false, reason: "approval expired", expired: true }, { sub: "s1" });
    expect(MessageView.of(records).items).toMatchObject([{ kind: "tool", callId: "c9", name: "rm", args: { path: "build" }, approval: { state: "expired" } }]);
  });
});
