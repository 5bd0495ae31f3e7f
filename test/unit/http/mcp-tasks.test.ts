/** MCP task statuses from submissions (ADR 0051) and the opaque cursor of `tasks/list`. */
import { describe, expect, it } from "vitest";
import { decodeTaskCursor, encodeTaskCursor, taskOf, taskStatusOf } from "../../../src/http/mcp-tasks.ts";
import type { SubmissionSummary } from "../../../src/protocol/submission-view.ts";

const sub = (over: Partial<SubmissionSummary>): SubmissionSummary => ({
  id: "01JSUB",
  conversationId: "01JCONV",
  session: "default",
  status: "running",
  kind: "user",
  attemptCount: 1,
  createdAt: Date.UTC(2026, 0, 1),
  updatedAt: Date.UTC(2026, 0, 1, 0, 1),
  ...over,
});

describe("taskStatusOf", () => {
  it("maps queued, running, settling and waiting on anything but a person to working", () => {
    for (const status of ["queued", "running", "terminalizing"] as const) expect(taskStatusOf(sub({ status }))).toBe("working");
    expect(taskStatusOf(sub({ status: "waiting", waitingFor: [{ kind: "child", callId: "c" }, { kind: "time", until: 1 }] }))).toBe("working");
  });
  it("maps waiting on an approval to input_required", () => {
    expect(taskStatusOf(sub({ status: "waiting", waitingFor: [{ kind: "approval", callId: "c", toolName: "refund", expiresAt: 1 }] }))).toBe("input_required");
  });
  it("maps settled to completed, failed, or cancelled (its own cancel or its parent's)", () => {
    expect(taskStatusOf(sub({ status: "settled", outcome: { status: "succeeded" } }))).toBe("completed");
    expect(taskStatusOf(sub({ status: "settled", outcome: { status: "failed", errorCode: "run_failed" } }))).toBe("failed");
    expect(taskStatusOf(sub({ status: "settled", outcome: { status: "failed", errorCode: "cancelled" } }))).toBe("cancelled");
    expect(taskStatusOf(sub({ status: "settled", outcome: { status: "failed", errorCode: "cancelled_by_parent" } }))).toBe("cancelled");
  });
});

describe("taskOf", () => {
  it("is the submission: its id, ISO times, no ttl of its own, a poll interval, and why it waits", () => {
    expect(taskOf(sub({ status: "waiting", waitingFor: [{ kind: "approval", callId: "c", toolName: "refund", expiresAt: 1 }] }))).toEqual({
      taskId: "01JSUB",
      status: "input_required",
      ttl: null,
      createdAt: "2026-01-01T00:00:00.000Z",
      lastUpdatedAt: "2026-01-01T00:01:00.000Z",
      pollInterval: 1000,
      statusMessage: "waiting for approval of refund: call tasks/result to be asked",
    });
    expect(taskOf(sub({ status: "settled", outcome: { status: "failed", error: "boom" } })).statusMessage).toBe("boom");
  });
});

describe("task cursors", () => {
  it("round-trip, and anything else is not one", () => {
    expect(decodeTaskCursor(encodeTaskCursor({ agent: 2, after: "01JX" }))).toEqual({ agent: 2, after: "01JX" });
    expect(decodeTaskCursor(encodeTaskCursor({ agent: 0 }))).toEqual({ agent: 0 });
    for (const bad of ["", "not base64 json", Buffer.from('{"agent":-1}').toString("base64url"), Buffer.from('{"agent":1,"after":3}').toString("base64url")]) {
      expect(decodeTaskCursor(bad)).toBeUndefined();
    }
  });
});
