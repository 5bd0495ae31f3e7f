import { describe, expect, it } from "vitest";
import { activityCursor, activityStateOf, parseActivityCursor } from "../../../src/store/activity.ts";

describe("activityStateOf", () => {
  it("names what a submission is doing: a waiting one by its pending entries, a settled one by its outcome", () => {
    expect(activityStateOf({ status: "terminalizing" })).toBe("running");
    const approval = { kind: "approval" as const, callId: "a", toolName: "deploy", expiresAt: 1 };
    const child = { kind: "child" as const, callId: "c" };
    expect(activityStateOf({ status: "waiting", pendingCalls: ["c", "a"], waitingFor: [child, approval] }), "a person first").toBe("waiting_person");
    expect(activityStateOf({ status: "waiting", pendingCalls: ["c"], waitingFor: [child, approval] }), "the approval answered").toBe("waiting_child");
    expect(activityStateOf({ status: "waiting", waitingFor: [{ kind: "time", until: 5 }] })).toBe("waiting_time");
    expect(activityStateOf({ status: "settled", outcome: { status: "failed", errorCode: "cancelled_by_parent" } })).toBe("cancelled");
    expect(activityStateOf({ status: "settled", outcome: { status: "failed", errorCode: "attempt_budget_exhausted" } })).toBe("failed");
    expect(activityStateOf({ status: "settled", outcome: { status: "succeeded" } })).toBe("succeeded");
  });

  it("orders cursors as strings in time order and parses them back", () => {
    expect(activityCursor(9, "b") < activityCursor(10, "a")).toBe(true);
    expect(parseActivityCursor(activityCursor(1_765_000_000_000, "01X#y"))).toEqual({ updatedAt: 1_765_000_000_000, id: "01X#y" });
    expect(parseActivityCursor("12#x")).toBeUndefined();
  });
});
