import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { scheduleDispatchId, scheduledDispatch } from "../../../src/runtime/scheduled-dispatch.ts";
import { startRuntime } from "../../support/test-server.ts";
import type { Runtime } from "../../../src/runtime/runtime.ts";

/** The dispatch a schedule's firing makes (the construct's schedule function, the scheduler example). */

let runtime: Runtime;
beforeAll(async () => {
  ({ runtime } = await startRuntime());
});
afterAll(async () => {
  await runtime?.close();
});

const firing = (scheduledTime: string | number) => ({
  schedule: "standup",
  agent: "assistant",
  instance: "team",
  body: "write the report",
  scheduledTime,
});

describe("scheduled dispatch", () => {
  it("names a window by the schedule and its scheduled time, whatever form the time comes in", () => {
    expect(scheduleDispatchId("standup", "2026-12-01T09:00:00Z")).toBe("schedule:standup:2026-12-01T09:00:00.000Z");
    expect(scheduleDispatchId("standup", Date.UTC(2026, 11, 1, 9))).toBe("schedule:standup:2026-12-01T09:00:00.000Z");
    expect(() => scheduleDispatchId("standup", "not a time")).toThrow(/invalid scheduled time/);
    expect(() => scheduleDispatchId("stand up", 0)).toThrow(/invalid schedule name/);
  });

  it("admits one submission per window: a retried or duplicated firing replays it", async () => {
    const first = await runtime.dispatch(scheduledDispatch(firing("2026-12-01T09:00:00Z")));
    const retry = await runtime.dispatch(scheduledDispatch(firing("2026-12-01T09:00:00.000Z")));
    const next = await runtime.dispatch(scheduledDispatch(firing("2026-12-01T10:00:00Z")));
    expect(first.replayed).toBe(false);
    expect(retry).toEqual({ ...first, replayed: true });
    expect(next.replayed).toBe(false);
    expect(next.submissionId).not.toBe(first.submissionId);
    expect(first.submissionId).toBe("schedule:standup:2026-12-01T09:00:00.000Z");
    await runtime.wait(first.submissionId);
    const records = await runtime.records(first.conversationId);
    const signal = records.find((r) => r.kind === "signal" && r.submissionId === first.submissionId);
    expect(signal?.payload).toMatchObject({ type: "scheduled_tick", sender: { source: "scheduler", schedule: "standup" }, tag: first.submissionId });
  });

  it("is refused by the runtime's rules like any dispatch (an unknown agent stores nothing)", async () => {
    await expect(runtime.dispatch(scheduledDispatch({ ...firing(0), agent: "nobody" }))).rejects.toMatchObject({ code: "unknown_agent" });
  });
});
