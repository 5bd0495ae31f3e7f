import { describe, expect, it } from "vitest";

/** The page's own module (plain JS, as the browser loads it). */
const { buildTimeline } = (await import(new URL("../../../src/console/page/timeline.js", import.meta.url).href)) as {
  buildTimeline: (detail: unknown, records: unknown[], now?: number) => { start: number; end: number; spans: { lane: string; kind: string; label: string; start: number; end: number; detail?: string }[]; usage: { input: number; output: number; cost?: number } };
};

const t0 = Date.parse("2026-01-01T00:00:00.000Z");
const at = (ms: number) => new Date(t0 + ms).toISOString();
const rec = (ms: number, kind: string, payload: unknown, attemptId = "a2") => ({ id: `r${ms}`, kind, time: at(ms), submissionId: "s1", attemptId, payload });

describe("buildTimeline", () => {
  it("tells an attempt that parked to wait from one that crashed", () => {
    const detail = { id: "s1", status: "settled", createdAt: t0, updatedAt: t0 + 5_000, attempts: [{ id: "a1", ownerId: "w1", startedAt: t0 }, { id: "a2", ownerId: "w2", startedAt: t0 + 3_000 }], outcome: { status: "succeeded" } };
    const tl = buildTimeline(detail, [rec(100, "approval_requested", { callId: "c1", toolName: "refund" }, "a1"), rec(2_000, "approval_decided", { callId: "c1", approved: false, decidedBy: "bob" })]);
    expect(tl.spans[0]).toMatchObject({ kind: "attempt-parked", detail: "parked to wait for a person's approval (refund); attempt 2 resumed it" });
    expect(tl.spans.find((s) => s.lane === "waits")).toMatchObject({ kind: "wait-denied", detail: "denied by bob · waited 1900 ms" });
  });

  it("places attempts, model and tool calls, approvals and the settlement in time, from the records alone", () => {
    const detail = {
      id: "s1",
      status: "settled",
      createdAt: t0,
      updatedAt: t0 + 10_000,
      attempts: [
        { id: "a1", ownerId: "host-1:111", startedAt: t0 + 100 },
        { id: "a2", ownerId: "host-1:222", startedAt: t0 + 4_000 },
      ],
      outcome: { status: "succeeded", usage: { input: 30, output: 12 }, cost: { total: 0.002 } },
    };
    const records = [
      rec(200, "assistant_message_started", { model: "m" }, "a1"),
      rec(300, "assistant_text_delta", { text: "he" }, "a1"),
      rec(4_100, "assistant_message_started", { model: "m" }),
      rec(4_400, "assistant_tool_call", { callId: "c1", toolName: "refund", args: { amount: 240 } }),
      rec(4_500, "assistant_message_completed", { message: { body: { usage: { input: 10, output: 4 } } } }),
      rec(4_600, "approval_requested", { callId: "c1", toolName: "refund", args: { amount: 240 } }),
      rec(7_000, "approval_decided", { callId: "c1", approved: true, decidedBy: "operator" }),
      rec(7_100, "tool_started", { callId: "c1", toolName: "refund" }),
      rec(7_300, "tool_outcome", { callId: "c1", toolName: "refund", content: [{ type: "text", text: "refunded" }] }),
      rec(9_900, "submission_settled", { status: "succeeded", usage: { input: 30, output: 12 }, cost: { total: 0.002 } }),
      { ...rec(50, "user_message", { body: "other" }), submissionId: "s0" },
    ];
    const tl = buildTimeline(detail, records, t0 + 20_000);
    const kinds = tl.spans.map((s) => `${s.lane}:${s.kind}`);
    expect(kinds).toEqual(["attempts:attempt-lost", "attempts:attempt", "model:model", "waits:wait", "tools:tool", "outcome:settled", "model:model-open"]);
    const [lost, second, model, wait, tool] = tl.spans;
    expect(lost).toMatchObject({ start: t0 + 100, end: t0 + 300, label: "attempt 1 · host-1:111" });
    expect(lost!.detail).toMatch(/ended without settling: crashed or lost its lease; attempt 2 took over/);
    expect(second).toMatchObject({ start: t0 + 4_000, end: t0 + 10_000, detail: "settled: succeeded" });
    expect(model).toMatchObject({ start: t0 + 4_100, end: t0 + 4_500, detail: "10 in / 4 out · first token 300 ms · 400 ms" });
    expect(wait).toMatchObject({ start: t0 + 4_600, end: t0 + 7_000, detail: "approved by operator · waited 2400 ms" });
    expect(tool!.detail).toBe('args {"amount":240} → refunded · 200 ms · approved by operator');
    expect(tl.usage).toEqual({ input: 30, output: 12, cost: 0.002 });
    expect(tl.spans.at(-1), "attempt 1's model call never completed: it ends with its attempt").toMatchObject({ start: t0 + 200, end: t0 + 300, detail: expect.stringMatching(/ended mid-call/) });
  });
});
