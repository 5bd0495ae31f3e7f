import { describe, expect, it } from "vitest";
import { activitySummary, checkActivityRequest, retryDispatchId } from "../../../src/runtime/activity-view.ts";
import type { Submission } from "../../../src/store/submission.ts";

describe("the console's listing request", () => {
  it("defaults the page to 50 and checks every field, naming it", () => {
    expect(checkActivityRequest({})).toEqual({ limit: 50 });
    expect(checkActivityRequest({ limit: 5, agent: "a", states: ["failed"], since: 1, until: 2, before: "x" })).toEqual({
      limit: 5,
      agent: "a",
      states: ["failed"],
      since: 1,
      until: 2,
      before: "x",
    });
    expect(() => checkActivityRequest({ limit: 101 })).toThrow(/limit must be an integer from 1 to 100/);
    expect(() => checkActivityRequest({ states: ["done" as never] })).toThrow(/state must be one of queued, running/);
    expect(() => checkActivityRequest({ since: -1 })).toThrow(/since must be epoch milliseconds/);
  });

  it("shows a row with its agent, instance, state and the start of its message", () => {
    const sub = {
      id: "s1",
      conversationId: "c1",
      sessionKey: { agent: "a", instance: "i", session: "default" },
      status: "settled",
      input: { kind: "user", body: "x".repeat(300) },
      attemptCount: 1,
      createdAt: 1,
      updatedAt: 2,
      depth: 0,
      pendingResume: false,
      cancelRequested: false,
      outcome: { status: "failed", errorCode: "cancelled", error: "cancelled: bye" },
    } satisfies Submission;
    const view = activitySummary(sub);
    expect(view).toMatchObject({ agent: "a", instance: "i", state: "cancelled", settledAt: 2 });
    expect(view.preview).toHaveLength(201);
    expect(retryDispatchId("s1")).toBe("s1~retry");
  });
});
