/**
 * Conformance cases of the wake: a parent parked `waiting` on its `task` calls, and the guarded
 * delivery of each child's outcome (`deliverChildOutcome`). The store itself must refuse a
 * second outcome for a call and requeue the parent exactly once, with the last delivery, however
 * deliveries race.
 */
import { describe, expect } from "vitest";
import type { ConversationRecord, RecordDraft } from "../../protocol/records.ts";
import type { ChildOutcomeDelivered } from "../child-outcome.ts";
import type { Submission } from "../submission.ts";
import { type CaseBody, type Fixtures, cancellation, expectCode, ids } from "./case-context.ts";

type Register = (name: string, body: CaseBody) => void;

/** A parent running in a fresh session, parked waiting on `calls`. */
async function parentWaitingOn(fx: Fixtures, calls: string[], waitUntil?: number): Promise<Submission> {
  const parent = await fx.running();
  await fx.store.waitSubmission({ submissionId: parent.id, attemptId: parent.attemptId!, waitUntil, pendingCalls: calls });
  return fx.store.getSubmission(parent.id);
}

/** The `tool_outcome` draft a child's settlement hands its parent for `callId`. */
function outcomeDraft(fx: Fixtures, parent: Submission, callId: string, text = `result of ${callId}`): RecordDraft {
  return {
    kind: "tool_outcome",
    conversationId: parent.conversationId,
    session: parent.sessionKey.session,
    submissionId: parent.id,
    time: new Date(fx.clock.now()).toISOString(),
    payload: { callId, toolName: "task", content: [{ type: "text", text }] },
  };
}

function outcomesIn(log: ConversationRecord[]): string[] {
  return log.flatMap((r) => (r.kind === "tool_outcome" ? [r.payload.callId] : []));
}

export function childOutcomeCases(test: Register): void {
  describe("wake", () => {
    test("WaitStoresPendingCalls", async ({ store, fx }) => {
      const parent = await parentWaitingOn(fx, ["call-a", "call-b"]);
      expect(parent.status).toBe("waiting");
      expect([...(parent.pendingCalls ?? [])].sort(), "the waiting row lists the calls it waits for").toEqual(["call-a", "call-b"]);
      await store.resumeSubmission(parent.id);
      expect((await store.getSubmission(parent.id)).pendingCalls, "resume clears the pending calls").toBeUndefined();

      const cancelled = await parentWaitingOn(fx, ["call-c"]);
      await store.cancelSubmission(cancelled.id, cancellation("parent wait expired"));
      expect((await store.getSubmission(cancelled.id)).pendingCalls, "a cancelled wait keeps no pending calls").toBeUndefined();

      const bare = await fx.waiting();
      expect(bare.pendingCalls, "a wait without calls lists none").toBeUndefined();
    });

    test("ChildOutcomeGuardedAppendAndCounter", async ({ store, fx }) => {
      const parent = await parentWaitingOn(fx, ["call-a", "call-b"]);
      const behind = await fx.admit(parent.sessionKey);

      const first = await store.deliverChildOutcome({
        parentSubmissionId: parent.id,
        callId: "call-a",
        drafts: [outcomeDraft(fx, parent, "call-a")],
      });
      expect(first.delivered, "the first outcome for call-a lands").toBe(true);
      if (!first.delivered) return;
      expect(first.requeued, "one call still pending: the parent keeps waiting").toBe(false);
      expect(first.records.map((r) => r.kind)).toEqual(["tool_outcome"]);
      let row = await store.getSubmission(parent.id);
      expect(row.status).toBe("waiting");
      expect(row.pendingCalls, "call-a is no longer pending").toEqual(["call-b"]);

      const again = await store.deliverChildOutcome({
        parentSubmissionId: parent.id,
        callId: "call-a",
        drafts: [outcomeDraft(fx, parent, "call-a", "a second, different outcome")],
      });
      expect(again, "a second outcome for the same call is refused by the store").toEqual({ delivered: false, reason: "not_pending" });
      expect(outcomesIn(await fx.log(parent.conversationId)), "the refused outcome wrote nothing").toEqual(["call-a"]);

      const unknown = await store.deliverChildOutcome({
        parentSubmissionId: parent.id,
        callId: "call-never-spawned",
        drafts: [outcomeDraft(fx, parent, "call-never-spawned")],
      });
      expect(unknown, "an outcome for a call the parent does not wait for").toEqual({ delivered: false, reason: "not_pending" });

      const last = await store.deliverChildOutcome({
        parentSubmissionId: parent.id,
        callId: "call-b",
        drafts: [outcomeDraft(fx, parent, "call-b")],
      });
      expect(last.delivered && last.requeued, "the delivery that empties the pending calls requeues the parent").toBe(true);
      row = await store.getSubmission(parent.id);
      expect(row.status, "waiting → queued").toBe("queued");
      expect(row.pendingResume, "the requeued parent's next claim is a resume").toBe(true);
      expect(row.pendingCalls).toBeUndefined();
      expect(ids(await store.listRunnable()), "the parent, not the one behind it, is runnable").toContain(parent.id);
      expect(ids(await store.listRunnable())).not.toContain(behind.id);
      const claimed = await fx.claim(parent);
      expect(claimed.attemptCount, "the resume claim charges no attempt").toBe(parent.attemptCount);

      const late = await store.deliverChildOutcome({
        parentSubmissionId: parent.id,
        callId: "call-b",
        drafts: [outcomeDraft(fx, parent, "call-b")],
      });
      expect(late, "a delivery to a parent that is not waiting").toEqual({ delivered: false, reason: "not_waiting" });
      expect(outcomesIn(await fx.log(parent.conversationId)), "each call answered once, in delivery order").toEqual(["call-a", "call-b"]);
    });

    test("ChildOutcomeRefusedUnlessWaiting", async ({ store, fx }) => {
      const running = await fx.running();
      const refused = await store.deliverChildOutcome({
        parentSubmissionId: running.id,
        callId: "call-a",
        drafts: [outcomeDraft(fx, running, "call-a")],
      });
      expect(refused, "a running parent writes its own log: no outcome lands").toEqual({ delivered: false, reason: "not_waiting" });
      expect(outcomesIn(await fx.log(running.conversationId))).toEqual([]);

      const bare = await fx.waiting();
      expect(
        await store.deliverChildOutcome({ parentSubmissionId: bare.id, callId: "call-a", drafts: [outcomeDraft(fx, bare, "call-a")] }),
        "a wait without pending calls takes no outcome",
      ).toEqual({ delivered: false, reason: "not_pending" });

      await expectCode(
        store.deliverChildOutcome({ parentSubmissionId: "no-such-parent", callId: "c", drafts: [outcomeDraft(fx, bare, "c")] }),
        "submission_not_found",
        "delivering to an unknown parent",
      );
    });

    test("ChildOutcomeRepairsSpawnRecordInTheSameBatch", async ({ store, fx }) => {
      const parent = await parentWaitingOn(fx, ["call-a"]);
      const spawned: RecordDraft = {
        kind: "task_spawned",
        conversationId: parent.conversationId,
        session: parent.sessionKey.session,
        submissionId: parent.id,
        time: new Date(fx.clock.now()).toISOString(),
        payload: { callId: "call-a", agent: "researcher", childInstance: "i:call-a", childConversationId: "c", childSubmissionId: "s", prompt: "p" },
      };
      const out = await store.deliverChildOutcome({
        parentSubmissionId: parent.id,
        callId: "call-a",
        drafts: [spawned, outcomeDraft(fx, parent, "call-a")],
      });
      expect(out.delivered && out.records.map((r) => r.kind), "spawn record then outcome, in order").toEqual(["task_spawned", "tool_outcome"]);
      expect((await fx.log(parent.conversationId)).map((r) => r.kind)).toEqual(["task_spawned", "tool_outcome"]);
    });

    test("ChildOutcomeRaceWakesParentOnce", async ({ store, fx }) => {
      // Two children settling at the same instant, each delivering twice (inside its reservation
      // and again after finalizing): every call answered once, the parent requeued once.
      const calls = ["call-a", "call-b"];
      const parent = await parentWaitingOn(fx, calls);
      const deliveries: Promise<ChildOutcomeDelivered>[] = [];
      for (let round = 0; round < 2; round++) {
        for (const callId of calls) {
          deliveries.push(
            store.deliverChildOutcome({ parentSubmissionId: parent.id, callId, drafts: [outcomeDraft(fx, parent, callId, `${callId} #${round}`)] }),
          );
        }
      }
      const results = await Promise.all(deliveries);
      expect(results.filter((r) => r.delivered).length, "exactly one delivery per call").toBe(2);
      expect(results.filter((r) => r.delivered && r.requeued).length, "exactly one delivery requeued the parent").toBe(1);
      expect(outcomesIn(await fx.log(parent.conversationId)).sort()).toEqual(calls);
      expect((await store.getSubmission(parent.id)).status).toBe("queued");
    });

    test("ChildOutcomeAfterParentSettled", async ({ store, fx }) => {
      const parent = await parentWaitingOn(fx, ["call-a"]);
      await fx.cancelled(parent, "cancelled");
      expect(
        await store.deliverChildOutcome({ parentSubmissionId: parent.id, callId: "call-a", drafts: [outcomeDraft(fx, parent, "call-a")] }),
        "a settled parent takes no outcome",
      ).toEqual({ delivered: false, reason: "not_waiting" });
      expect(outcomesIn(await fx.log(parent.conversationId))).toEqual([]);
    });
  });
}
