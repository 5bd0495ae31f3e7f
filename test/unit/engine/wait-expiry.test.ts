/**
 * Wait expiry (`expireWait`, harness-spec §1.13) when a child settled but its wake was lost: the
 * parent gets that child's real outcome, not `task wait expired`; the unsettled child's call is
 * answered expired and the child cancelled (a `maxChildWaitMs` wait).
 */
import { expect, it } from "vitest";
import { childAddress } from "../../../src/conversation/task-names.ts";
import type { AttemptContext } from "../../../src/engine/engine-context.ts";
import { expireWait } from "../../../src/engine/wait-expiry.ts";
import { TASK_WAIT_EXPIRED } from "../../../src/engine/wake.ts";
import { ManualClock } from "../../../src/ports/clock.ts";
import type { Doorbell } from "../../../src/ports/queue.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";

const user = (body: string) => ({ kind: "user" as const, body });

it("an expiring wait hands a settled child's real outcome (its wake lost) to the parent, expires the other call, cancels its child", async () => {
  const clock = new ManualClock();
  // One clock for the park (its `updatedAt`) and the wait's deadline, as in a runtime.
  const store = createMemoryStore({ clock });
  const now = clock.now();
  const parentId = "parent-1";
  await store.admitSubmission({ id: parentId, conversationId: "conv-parent", sessionKey: { agent: "lead", instance: "i", session: "default" }, input: user("go"), createdAt: now });
  await store.claimSubmission({ submissionId: parentId, attemptId: "pa", ownerId: "o", leaseExpiresAt: now + 30_000 });
  const childOf = (callId: string) => childAddress({ submissionId: parentId, instance: "i" }, callId);
  for (const callId of ["call-done", "call-slow"]) {
    const at = childOf(callId);
    await store.admitSubmission({
      id: at.submissionId,
      conversationId: `conv-${callId}`,
      sessionKey: { agent: "researcher", instance: at.instance, session: at.session },
      input: user(callId),
      createdAt: now,
      parentSubmissionId: parentId,
      parentCallId: callId,
      depth: 1,
    });
    await store.claimSubmission({ submissionId: at.submissionId, attemptId: `ca-${callId}`, ownerId: "o", leaseExpiresAt: now + 3_600_000 });
  }
  // The done child settled while its parent was still running: its wake found the parent not waiting.
  await store.reserveSettlement(childOf("call-done").submissionId, "ca-call-done", { outcome: { status: "succeeded", result: { answer: 42 } } });
  await store.finalizeSettlement(childOf("call-done").submissionId);
  await store.waitSubmission({ submissionId: parentId, attemptId: "pa", pendingCalls: ["call-done", "call-slow"], waitUntil: now + 60_000 });

  const rung: Doorbell[] = [];
  const ctx = {
    store,
    clock,
    queue: { ring: async (d: Doorbell) => void rung.push(d) },
    observe: () => {},
    subagents: { limits: { maxChildWaitMs: 60_000 } },
  } as unknown as AttemptContext;
  clock.advance(61_000);
  await expireWait(ctx, await store.getSubmission(parentId));

  const outcomes = (await store.readRecords("conv-parent")).filter((r) => r.kind === "tool_outcome").map((r) => r.payload);
  expect(outcomes).toEqual([
    { callId: "call-done", toolName: "task", content: [{ type: "text", text: '{"answer":42}' }] },
    { callId: "call-slow", toolName: "task", content: [{ type: "text", text: TASK_WAIT_EXPIRED }], isError: true },
  ]);
  expect((await store.getSubmission(parentId)).status).toBe("queued");
  expect(rung.map((d) => d.submissionId)).toEqual([parentId]);
  const slow = await store.getSubmission(childOf("call-slow").submissionId);
  expect(slow).toMatchObject({ status: "running", cancelRequested: true, cancellation: { errorCode: "cancelled_by_parent", error: "cancelled: parent wait expired" } });
});
