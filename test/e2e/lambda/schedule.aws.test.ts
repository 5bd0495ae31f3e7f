/**
 * The schedule function on the local cloud: `src/lambda/schedule.ts` in its own process (names
 * only, as the construct deploys it), fired with the construct's own target input as EventBridge
 * Scheduler fills it in, against DynamoDB Local and fauxqs. A firing dispatches a
 * `scheduled_tick` that a worker runs; a repeated firing of the same scheduled time (a Scheduler
 * retry, a duplicate delivery, two containers at once) replays that submission and never fires
 * twice.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type { DispatchResult } from "../../../src/engine/admission.ts";
import type { Submission } from "../../../src/store/submission.ts";
import { scheduledFiringInput } from "../../../src/runtime/scheduled-dispatch.ts";
import { useLocalCloud } from "../../support/local-cloud-suite.ts";

const agentsModule = fileURLToPath(new URL("../../support/local-cloud-fixtures/agents.ts", import.meta.url));
const suite = useLocalCloud({
  agentsModule,
  // A schedule in the app, so the template has the schedule function (its firings here are the test's own).
  context: { "harness:schedules": JSON.stringify([{ name: "standup", expression: "cron(0 9 * * ? *)", agent: "assistant", instance: "standup", body: "write the standup report" }]) },
  workers: 1,
  workerTimeoutMs: 20_000,
  queueVisibilityTimeoutMs: 30_000,
  sweeperRateMs: false,
  env: { HARNESS_LEASE_MS: "2000" },
});

async function waitSettled(submissionId: string, timeoutMs = 30_000): Promise<Submission> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const sub = await suite.store.getSubmission(submissionId);
    if (sub.status === "settled") return sub;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${submissionId} to settle`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("local cloud: the schedule function", () => {
  it("a firing dispatches one scheduled_tick that a worker runs; the same scheduled time again never fires twice", { timeout: 90_000 }, async () => {
    suite.dumpLogsOnFailure();
    const instance = `sched-${Date.now().toString(36)}`;
    const input = scheduledFiringInput({ schedule: "standup", agent: "assistant", instance, body: "write the standup report" });
    const at = "2026-12-01T09:00:00Z";

    const first = (await suite.cloud.fireSchedule(input, at)) as DispatchResult;
    expect(first).toMatchObject({ submissionId: "schedule:standup:2026-12-01T09:00:00.000Z", replayed: false });
    const settled = await waitSettled(first.submissionId);
    expect(settled.outcome).toMatchObject({ status: "succeeded" });

    // Scheduler retries the invocation, and two containers get the same firing at once.
    const retry = (await suite.cloud.fireSchedule(input, at)) as DispatchResult;
    const [a, b] = await Promise.all([suite.cloud.scheduleFunction(), suite.cloud.scheduleFunction()]);
    const racing = (await Promise.all([suite.cloud.fireSchedule(input, at, a), suite.cloud.fireSchedule(input, at, b)])) as DispatchResult[];
    for (const again of [retry, ...racing]) expect(again).toEqual({ ...first, replayed: true });

    // The next window is a submission of its own, after the first in the session's order.
    const next = (await suite.cloud.fireSchedule(input, "2026-12-01T10:00:00Z")) as DispatchResult;
    expect(next).toMatchObject({ submissionId: "schedule:standup:2026-12-01T10:00:00.000Z", replayed: false });
    await waitSettled(next.submissionId);

    const sessionKey = { agent: "assistant", instance, session: "default" };
    const listed = await suite.store.listSessionSubmissions(sessionKey, { limit: 10 });
    expect(listed.map((s) => s.id).sort()).toEqual([first.submissionId, next.submissionId]);
    const records = await suite.store.readRecords(first.conversationId);
    const ticks = records.filter((r) => r.kind === "signal");
    expect(ticks.map((r) => [r.submissionId, r.kind === "signal" && r.payload.type])).toEqual([
      [first.submissionId, "scheduled_tick"],
      [next.submissionId, "scheduled_tick"],
    ]);
    expect(ticks[0]!.payload).toMatchObject({ sender: { source: "scheduler", schedule: "standup" }, tag: first.submissionId });
    expect(records.filter((r) => r.kind === "submission_settled").map((r) => r.submissionId)).toEqual([first.submissionId, next.submissionId]);
    // Each window ran once: one work-queue delivery path per submission, one attempt each.
    expect((await suite.store.getSubmission(first.submissionId)).attemptCount).toBe(1);
  });

  it("a firing the harness refuses fails the invocation (Scheduler retries it) and stores nothing", { timeout: 60_000 }, async () => {
    suite.dumpLogsOnFailure();
    const instance = `sched-bad-${Date.now().toString(36)}`;
    const input = scheduledFiringInput({ schedule: "nightly", agent: "nobody", instance, body: "x" });
    await expect(suite.cloud.fireSchedule(input, "2026-12-01T00:00:00Z")).rejects.toThrow(/unknown_agent|unknown agent/);
    expect(await suite.store.listSessionSubmissions({ agent: "nobody", instance, session: "default" }, { limit: 10 })).toEqual([]);
  });
});
