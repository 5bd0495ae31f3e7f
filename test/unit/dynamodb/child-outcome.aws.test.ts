/**
 * The wake on DynamoDB across store instances (separate Lambdas): children settling at the same
 * instant from different instances wake their parent exactly once, and a delivery whose response
 * is lost is applied once. Against DynamoDB Local.
 */
import { describe, expect, it } from "vitest";
import { newId } from "../../../src/conversation/ids.ts";
import type { RecordDraft } from "../../../src/protocol/records.ts";
import type { ChildOutcomeDelivered } from "../../../src/store/child-outcome.ts";
import { ManualClock } from "../../../src/ports/clock.ts";
import type { Store } from "../../../src/store/store.ts";
import type { Submission } from "../../../src/store/submission.ts";
import { createDynamoClient, createDynamoStore } from "../../../src/dynamodb/index.ts";
import { BUCKET, freshStore, useTestClients } from "../../support/dynamodb-fixtures.ts";

const clients = useTestClients();

async function parentWaitingOn(store: Store, clock: ManualClock, calls: string[], n: number): Promise<Submission> {
  const key = { agent: "triage", instance: `i-${n}`, session: "default" };
  const { conversation } = await store.ensureConversation({ id: newId(clock.now()), key, createdAt: clock.now() });
  const sub = (await store.admitSubmission({ id: newId(clock.now()), conversationId: conversation.id, sessionKey: key, input: { kind: "user", body: "p" }, createdAt: clock.now() })).submission;
  const claimed = await store.claimSubmission({ submissionId: sub.id, attemptId: newId(clock.now()), ownerId: "o", leaseExpiresAt: clock.now() + 30_000 });
  await store.waitSubmission({ submissionId: sub.id, attemptId: claimed.attemptId!, pendingCalls: calls });
  return store.getSubmission(sub.id);
}

function outcome(parent: Submission, callId: string, clock: ManualClock): RecordDraft {
  return {
    kind: "tool_outcome",
    conversationId: parent.conversationId,
    session: "default",
    submissionId: parent.id,
    time: new Date(clock.now()).toISOString(),
    payload: { callId, toolName: "task", content: [{ type: "text", text: `done ${callId}` }] },
  };
}

describe("deliverChildOutcome across store instances", () => {
  it("three children settling at once from three instances, each delivering twice, wake the parent once", async () => {
    const clock = new ManualClock();
    const made = await freshStore(clients, clock);
    const instances = [0, 1, 2].map(() => createDynamoStore({ tableName: made.tableName, bucketName: BUCKET, dynamo: clients.dynamo, s3: clients.s3, clock }));
    for (let round = 0; round < 5; round++) {
      const calls = ["call-a", "call-b", "call-c"];
      const parent = await parentWaitingOn(made.store, clock, calls, round);
      const results = await Promise.all(
        [0, 1].flatMap(() => calls.map((callId, i) => instances[i]!.deliverChildOutcome({ parentSubmissionId: parent.id, callId, drafts: [outcome(parent, callId, clock)] }))),
      );
      const delivered = results.filter((r): r is Extract<ChildOutcomeDelivered, { delivered: true }> => r.delivered);
      expect(delivered.length, `round ${round}: one delivery per call`).toBe(3);
      expect(delivered.filter((r) => r.requeued).length, `round ${round}: one requeue`).toBe(1);
      const log = await made.store.readRecords(parent.conversationId);
      expect(log.filter((r) => r.kind === "tool_outcome").map((r) => (r.payload as { callId: string }).callId).sort()).toEqual(calls);
      const row = await made.store.getSubmission(parent.id);
      expect(row.status).toBe("queued");
      expect(await made.store.sessionLive(parent.sessionKey), "the requeued head is live again").toBe(true);
      expect((await made.store.listRunnable()).map((s) => s.id)).toContain(parent.id);
    }
    await made.dispose();
  });

  it("a delivery whose response is lost is applied once (the SDK's retry reuses the transaction token)", async () => {
    const clock = new ManualClock();
    const dynamo = createDynamoClient({}, { baseDelayMs: 2, throttlingBaseDelayMs: 5 });
    let lose = true;
    let sends = 0;
    dynamo.middlewareStack.add(
      (next, context) => async (args) => {
        const result = await next(args);
        if (context.commandName === "TransactWriteItemsCommand") {
          sends++;
          if (lose) {
            lose = false;
            throw Object.assign(new Error("socket hang up"), { code: "ECONNRESET", $metadata: {} });
          }
        }
        return result;
      },
      { step: "deserialize", priority: "high", name: "loseFirstTransaction" },
    );
    const made = await freshStore({ dynamo, s3: clients.s3 }, clock);
    const parent = await parentWaitingOn(made.store, clock, ["call-a"], 0);
    sends = 0;
    lose = true;
    const out = await made.store.deliverChildOutcome({ parentSubmissionId: parent.id, callId: "call-a", drafts: [outcome(parent, "call-a", clock)] });
    expect(sends, "the transaction was sent twice").toBe(2);
    expect(out.delivered && out.requeued).toBe(true);
    expect((await made.store.readRecords(parent.conversationId)).filter((r) => r.kind === "tool_outcome").length).toBe(1);
    await made.dispose();
    dynamo.destroy();
  });
});
