/**
 * Two children settling at the same instant wake their parent exactly once (issue 10): the
 * engine's wake (`wakeParent`) run concurrently for both children, each twice (a settler and a
 * recoverer), against a real store. Shared by the memory/SQLite and the DynamoDB Local runs.
 */
import { expect } from "vitest";
import { childAddress } from "../../src/conversation/task-names.ts";
import type { AttemptContext } from "../../src/engine/engine-context.ts";
import { wakeParent } from "../../src/engine/wake.ts";
import type { Clock } from "../../src/ports/clock.ts";
import type { Doorbell } from "../../src/ports/queue.ts";
import type { Store } from "../../src/store/store.ts";
import type { Submission } from "../../src/store/submission.ts";

const user = (body: string) => ({ kind: "user" as const, body });

/** A waiting parent with two settled children, through the public store API. */
async function seed(store: Store, clock: Clock, tag: string): Promise<{ parent: Submission; children: Submission[] }> {
  const now = clock.now();
  const parentId = `race-${tag}`;
  const instance = `ri-${tag}`;
  const parent = (await store.admitSubmission({ id: parentId, conversationId: `conv-${tag}`, sessionKey: { agent: "lead", instance, session: "default" }, input: user("go"), createdAt: now })).submission;
  await store.claimSubmission({ submissionId: parentId, attemptId: `pa-${tag}`, ownerId: "o", leaseExpiresAt: now + 30_000 });
  const children: Submission[] = [];
  for (const callId of ["call-a", "call-b"]) {
    const at = childAddress({ submissionId: parentId, instance }, callId);
    await store.admitSubmission({
      id: at.submissionId,
      conversationId: `conv-${tag}-${callId}`,
      sessionKey: { agent: "researcher", instance: at.instance, session: at.session },
      input: user(callId),
      createdAt: now,
      parentSubmissionId: parentId,
      parentCallId: callId,
      depth: 1,
    });
    await store.claimSubmission({ submissionId: at.submissionId, attemptId: `ca-${tag}-${callId}`, ownerId: "o", leaseExpiresAt: now + 30_000 });
    await store.reserveSettlement(at.submissionId, `ca-${tag}-${callId}`, { outcome: { status: "succeeded", result: { answer: callId } } });
    await store.finalizeSettlement(at.submissionId);
    children.push(await store.getSubmission(at.submissionId));
  }
  await store.waitSubmission({ submissionId: parentId, attemptId: `pa-${tag}`, pendingCalls: ["call-a", "call-b"] });
  return { parent, children };
}

/**
 * Runs `rounds` races; every round: one requeue, one doorbell, exactly two outcomes in the
 * parent's log. The wakes alternate between `stores` (separate processes' connections).
 */
export async function raceTwoChildren(stores: Store[], clock: Clock, rounds: number): Promise<void> {
  const store = stores[0]!;
  for (let round = 0; round < rounds; round++) {
    const tag = `${Date.now().toString(36)}-${round}`;
    const { parent, children } = await seed(store, clock, tag);
    const rung: Doorbell[] = [];
    const ctxOf = (s: Store) =>
      ({ store: s, clock, queue: { ring: async (d: Doorbell) => void rung.push(d) }, observe: () => {} }) as unknown as AttemptContext;
    const wakes = [...children, ...children].map((child, i) => wakeParent(ctxOf(stores[i % stores.length]!), child, child.outcome!));
    const answers = await Promise.all(wakes);
    expect(answers.filter((a) => a === "requeued"), `round ${round}: ${answers.join(", ")}`).toHaveLength(1);
    expect(answers.filter((a) => a === "delivered" || a === "requeued")).toHaveLength(2);
    expect(rung.map((d) => d.submissionId)).toEqual([parent.id]);
    const after = await store.getSubmission(parent.id);
    expect(after.status).toBe("queued");
    expect(after.pendingCalls).toBeUndefined();
    const outcomes = (await store.readRecords(parent.conversationId)).filter((r) => r.kind === "tool_outcome").map((r) => r.payload);
    expect(outcomes.map((o) => o.callId).sort()).toEqual(["call-a", "call-b"]);
    expect(outcomes.map((o) => (o.content?.[0] as { text: string }).text).sort()).toEqual(['{"answer":"call-a"}', '{"answer":"call-b"}']);
  }
}
