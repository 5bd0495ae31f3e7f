import { describe, expect, it } from "vitest";
import { RecordRenderer } from "../../../src/cli/record-renderer.ts";
import type { ConversationRecord, RecordKind, RecordPayloads } from "../../../src/protocol/records.ts";

function record<K extends RecordKind>(kind: K, payload: RecordPayloads[K]): ConversationRecord {
  return { id: "r", kind, conversationId: "c", session: "s", submissionId: "sub", time: "2026-01-01T00:00:00Z", payload } as ConversationRecord;
}

function output(isTTY: boolean) {
  const chunks: string[] = [];
  return { out: { write: (t: string) => void chunks.push(t), isTTY }, text: () => chunks.join(""), chunks };
}

describe("RecordRenderer", () => {
  it("renders a turn with a tool call for a pipe: plain text, no spinner, no colour", () => {
    const { out, text } = output(false);
    const r = new RecordRenderer(out);
    r.render(record("user_message", { body: "What time is it?" }));
    r.render(record("assistant_message_started", { model: "m", messageType: "message" }));
    r.render(record("assistant_tool_call", { callId: "c1", toolName: "clock", args: {} }));
    r.render(record("tool_outcome", { callId: "c1", toolName: "clock", content: [{ type: "text", text: "12:00\nUTC" }] }));
    r.render(record("assistant_text_delta", { text: "The time " }));
    r.render(record("assistant_text_delta", { text: "is 12:00." }));
    r.render(record("assistant_message_completed", { message: { role: "assistant", type: "message", body: { stopReason: "stop" } } }));
    r.render(record("submission_settled", { status: "succeeded", usage: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15 } }));
    r.finish();
    expect(text()).toBe(
      ["› What time is it?", "⚙ clock({})", "  ✓ clock: 12:00 UTC", "The time is 12:00.", "— succeeded (10 in / 5 out tokens)", ""].join("\n"),
    );
  });

  it("shows failures, aborted turns, steers and compactions", () => {
    const { out, text } = output(false);
    const r = new RecordRenderer(out);
    r.render(record("user_message", { body: "go left", origin: "steer" }));
    r.render(record("assistant_text_delta", { text: "partial" }));
    r.render(record("assistant_message_completed", { message: { role: "assistant", type: "message", body: { stopReason: "aborted", errorMessage: "Request was aborted" } } }));
    r.render(record("compaction", { summary: "s", startIdx: 0, endIdx: 6, reason: "manual" }));
    r.render(record("submission_settled", { status: "failed", errorCode: "cancelled", error: "cancelled: user asked" }));
    expect(text()).toBe(
      ["› [steer] go left", "partial", "(turn ended: Request was aborted)", "[compacted: 6 message(s) summarized, manual]", "— failed [cancelled] cancelled: user asked", ""].join("\n"),
    );
  });

  it("says why a run waits for its next try: the reason, the provider's status, the next try, the attempts (ADR 0053)", () => {
    const { out, text } = output(false);
    const r = new RecordRenderer(out);
    r.render(record("user_message", { body: "hi" }));
    r.render(record("submission_retrying", { reason: "rate_limited", status: 429, error: "429 slow\ndown", nextAttemptAt: "2026-01-01T00:02:00.000Z", attemptCount: 1, maxAttempts: 10 }));
    r.render(record("submission_retrying", { reason: "unreachable", error: "cannot reach h (ENOTFOUND)", nextAttemptAt: "2026-01-01T00:02:05.000Z", attemptCount: 0, maxAttempts: 10 }));
    r.finish();
    expect(text()).toBe(
      [
        "› hi",
        "  ↻ retrying: the model provider is rate limiting (HTTP 429), next try 2026-01-01T00:02:00Z, attempt 1 of 10: 429 slow down",
        "  ↻ retrying: the model provider is unreachable, next try 2026-01-01T00:02:05Z: cannot reach h (ENOTFOUND)",
        "",
      ].join("\n"),
    );
  });

  it("marks an abandoned attempt's text when the next attempt of the submission starts", () => {
    const { out, text } = output(false);
    const r = new RecordRenderer(out);
    const by = (attemptId: string, rec: ConversationRecord) => ({ ...rec, attemptId }) as ConversationRecord;
    r.render(by("a1", record("user_message", { body: "count" })));
    r.render(by("a1", record("assistant_text_delta", { text: "w00 w01" })));
    r.render(by("a2", record("assistant_message_started", { model: "m", messageType: "message" })));
    r.render(by("a2", record("assistant_text_delta", { text: "w00 w01 w02" })));
    r.render(by("a2", record("assistant_message_completed", { message: { role: "assistant", type: "message", body: { stopReason: "stop" } } })));
    r.render(by("a3", record("submission_settled", { status: "succeeded" })));
    expect(text()).toBe(
      ["› count", "w00 w01", "(attempt interrupted: the text above is abandoned; a new attempt runs the turn again)", "w00 w01 w02", "— succeeded", ""].join("\n"),
    );
  });

  it("shows a call that waits for approval or a callback, and the decision", () => {
    const { out, text } = output(false);
    const r = new RecordRenderer(out);
    r.render(record("assistant_tool_call", { callId: "c1", toolName: "refund", args: { amount: 240 } }));
    r.render(record("approval_requested", { callId: "c1", toolName: "refund", args: { amount: 240 }, approvalId: "sub/c1", expiresAt: "2026-01-02T00:00:00.000Z" }));
    r.render(record("approval_decided", { callId: "c1", approved: true, reason: "fine" }));
    r.render(record("approval_decided", { callId: "c2", approved: false, reason: "no" }));
    r.render(record("approval_decided", { callId: "c3", approved: false, reason: "approval expired", expired: true }));
    r.render(record("callback_started", { callId: "c4", toolName: "wait_for_shipping_label", expiresAt: "2026-01-02T00:00:00.000Z", callbackDigest: "ab" }));
    r.finish();
    expect(text()).toBe(
      [
        '⚙ refund({"amount":240})',
        '  ⏸ refund {"amount":240} waits for approval (call c1, until 2026-01-02T00:00:00.000Z)',
        "  approved call c1: fine",
        "  denied call c2: no",
        "  denied (approval expired) call c3",
        "  ⏸ wait_for_shipping_label waits for its callback (call c4, until 2026-01-02T00:00:00.000Z)",
        "",
      ].join("\n"),
    );
  });

  it("on a terminal, spins while a turn runs with nothing printed, and clears the spinner before output", () => {
    const { out, chunks } = output(true);
    const r = new RecordRenderer(out);
    r.render(record("user_message", { body: "hi" }));
    expect(chunks.at(-1)).toMatch(/^\r\S*⠋/);
    r.render(record("assistant_text_delta", { text: "hello" }));
    expect(chunks.slice(-2)).toEqual(["\r\x1b[K", "hello"]);
    r.finish();
  });
});
