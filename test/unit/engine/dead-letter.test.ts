import { describe, expect, it } from "vitest";
import type { AgentDefinition } from "../../../src/agent/agent-definition.ts";
import { ManualClock } from "../../../src/ports/clock.ts";
import type { Doorbell, WorkQueue } from "../../../src/ports/queue.ts";
import { sessionKeyString } from "../../../src/store/submission.ts";
import { createRuntime } from "../../../src/runtime/runtime.ts";
import { scriptedModel } from "../../../src/agent/scripted-model.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";

const MAX_ATTEMPTS = 2;
const LEASE_MS = 30_000;

/** A runtime over a queue that only records rings (a dead-letter consumer never runs the agent). */
function setup() {
  const clock = new ManualClock();
  const store = createMemoryStore({ clock });
  const rings: Doorbell[] = [];
  const queue: WorkQueue = { ring: async (d) => void rings.push(d) };
  const scripted = scriptedModel([]);
  const agent: AgentDefinition = {
    initialize: () => ({ model: scripted.model, streamFn: scripted.streamFn, maxAttempts: MAX_ATTEMPTS }),
  };
  const runtime = createRuntime({ agents: { assistant: agent }, store, queue, clock, leaseMs: LEASE_MS });
  const key = { agent: "assistant", instance: "w", session: "default" };
  const dispatch = async () => {
    const { submissionId } = await runtime.dispatch({ agent: "assistant", instance: "w", message: { kind: "user", body: "hi" } });
    rings.length = 0;
    return { submissionId, doorbell: { submissionId, group: sessionKeyString(key) } };
  };
  /** Charges one attempt that fails (claim + release with an error), as a crashed worker would. */
  const failOnce = async (submissionId: string, error: string) => {
    const sub = await store.claimSubmission({
      submissionId,
      attemptId: `a-${Math.random()}`,
      ownerId: "someone",
      leaseExpiresAt: clock.now() + LEASE_MS,
    });
    await store.releaseSubmission({ submissionId, attemptId: sub.attemptId!, lastError: error });
  };
  return { clock, store, rings, runtime, dispatch, failOnce, scripted };
}

describe("dead-letter handling", () => {
  it("re-rings a queued submission with attempts left, whatever SQS's receive count said", async () => {
    const t = setup();
    const { submissionId, doorbell } = await t.dispatch();
    await t.failOnce(submissionId, "boom");
    expect(await t.runtime.handleDeadLetter(doorbell)).toEqual({
      kind: "rerung",
      reason: "attempt budget left",
      attemptCount: 1,
      maxAttempts: MAX_ATTEMPTS,
    });
    expect(t.rings).toEqual([doorbell]);
    expect((await t.store.getSubmission(submissionId)).status).toBe("queued");
  });

  it("settles attempt_budget_exhausted with the last error once the durable count is spent, without running the agent", async () => {
    const t = setup();
    const { submissionId, doorbell } = await t.dispatch();
    await t.failOnce(submissionId, "first failure");
    await t.failOnce(submissionId, "model unreachable");
    const outcome = await t.runtime.handleDeadLetter(doorbell);
    expect(outcome).toEqual({ kind: "exhausted", attemptCount: 3, maxAttempts: 2 });
    const payload = await t.runtime.wait(submissionId);
    expect(payload).toMatchObject({ status: "failed", errorCode: "attempt_budget_exhausted" });
    expect(payload.error).toContain("last error: model unreachable");
    expect(t.scripted.calls).toHaveLength(0);
    // A second delivery of the same dead letter changes nothing.
    expect(await t.runtime.handleDeadLetter(doorbell)).toEqual({ kind: "dropped", reason: "settled" });
    const settled = (await t.store.readRecords((await t.store.getSubmission(submissionId)).conversationId)).filter(
      (r) => r.kind === "submission_settled",
    );
    expect(settled).toHaveLength(1);
  });

  it("re-rings a running submission whose lease is live, and settles one whose lease expired with the budget spent", async () => {
    const t = setup();
    const { submissionId, doorbell } = await t.dispatch();
    await t.failOnce(submissionId, "e1");
    await t.store.claimSubmission({
      submissionId,
      attemptId: "a-live",
      ownerId: "worker",
      leaseExpiresAt: t.clock.now() + LEASE_MS,
    });
    expect(await t.runtime.handleDeadLetter(doorbell)).toMatchObject({ kind: "rerung", reason: "lease is live" });
    await t.clock.advance(LEASE_MS + 1);
    expect(await t.runtime.handleDeadLetter(doorbell)).toEqual({ kind: "exhausted", attemptCount: 3, maxAttempts: 2 });
    expect((await t.store.getSubmission(submissionId)).status).toBe("settled");
  });

  it("re-rings a continuation even at the budget (its next claim charges nothing)", async () => {
    const t = setup();
    const { submissionId, doorbell } = await t.dispatch();
    await t.failOnce(submissionId, "e1");
    const sub = await t.store.claimSubmission({
      submissionId,
      attemptId: "a-2",
      ownerId: "worker",
      leaseExpiresAt: t.clock.now() + LEASE_MS,
    });
    await t.store.releaseSubmission({ submissionId, attemptId: sub.attemptId!, continuation: true });
    expect(await t.runtime.handleDeadLetter(doorbell)).toMatchObject({
      kind: "rerung",
      reason: "continuation pending (its next claim is free)",
      attemptCount: 2,
    });
    expect((await t.store.getSubmission(submissionId)).status).toBe("queued");
  });

  it("drops doorbells of unknown submissions", async () => {
    const t = setup();
    expect(await t.runtime.handleDeadLetter({ submissionId: "nope", group: "assistant/w/default" })).toEqual({
      kind: "dropped",
      reason: "not_found",
    });
    expect(t.rings).toEqual([]);
  });
});
