/**
 * Conformance cases of cancel: its transitions from each status, a lease renewal that answers the
 * request, cancels in session order, and the outcome a reservation and a finalize keep.
 */
import { describe, expect } from "vitest";
import { cancelledOutcome } from "../submission.ts";
import { type CaseBody, cancellation, expectCode, ids, LEASE_MS } from "./case-context.ts";

type Register = (name: string, body: CaseBody) => void;

export function cancelCases(test: Register): void {
  describe("cancel", () => {
    test("CancelSubmissionTransitions", async ({ store, fx }) => {
      const queued = await fx.admit(fx.key());
      const asked = cancellation("user cancelled");
      expect(await store.cancelSubmission(queued.id, asked)).toEqual({ wasRunning: false });
      let stored = await store.getSubmission(queued.id);
      expect(stored.status, "queued → terminalizing (the cancel reserves the settlement)").toBe("terminalizing");
      expect(stored.outcome, "the reservation's outcome: failed with the cancellation").toEqual({
        status: "failed",
        error: "cancelled: user cancelled",
        errorCode: "cancelled",
      });
      expect(stored.cancelRequested).toBe(true);
      expect(stored.cancellation).toEqual(asked);
      expect(ids(await store.listRunnable()), "a cancelled submission is not runnable").not.toContain(queued.id);
      expect(ids(await store.listByStatus("terminalizing")), "a recoverer finds it").toContain(queued.id);
      await store.finalizeSettlement(queued.id);
      stored = await store.getSubmission(queued.id);
      expect(stored.status).toBe("settled");
      expect(stored.outcome, "the finalize keeps the reserved outcome").toEqual(cancelledOutcome(asked));

      const waiting = await fx.waiting();
      const byParent = { errorCode: "cancelled_by_parent" as const, error: "cancelled: parent settled" };
      expect(await store.cancelSubmission(waiting.id, byParent)).toEqual({ wasRunning: false });
      stored = await store.getSubmission(waiting.id);
      expect(stored.status, "waiting → terminalizing").toBe("terminalizing");
      expect(stored.waitUntil).toBeUndefined();
      expect(stored.outcome).toEqual(cancelledOutcome(byParent));
      expect(ids(await store.listDueWaits(Number.MAX_SAFE_INTEGER)), "no longer waiting").not.toContain(waiting.id);

      const running = await fx.running();
      expect(await store.cancelSubmission(running.id, cancellation("stop"))).toEqual({ wasRunning: true });
      stored = await store.getSubmission(running.id);
      expect(stored.status, "a running submission keeps running").toBe("running");
      expect(stored.cancelRequested, "running → cancelRequested").toBe(true);
      expect(stored.cancellation).toEqual(cancellation("stop"));
      expect(stored.outcome, "nothing reserved yet").toBeUndefined();
      expect(stored.attemptId, "the owner keeps its attempt").toBe(running.attemptId);
      expect(await store.cancelSubmission(running.id, cancellation("again"))).toEqual({ wasRunning: true });
      expect((await store.getSubmission(running.id)).cancellation, "a repeated cancel keeps the first").toEqual(cancellation("stop"));

      const terminalizing = await fx.running();
      await store.reserveSettlement(terminalizing.id, terminalizing.attemptId!);
      await expectCode(store.cancelSubmission(terminalizing.id, cancellation("late")), "claim_lost", "cancelling a terminalizing submission");
      expect((await store.getSubmission(terminalizing.id)).cancelRequested, "a refused cancel stores nothing").toBe(false);
      const settled = await fx.settled();
      await expectCode(store.cancelSubmission(settled.id, cancellation("late")), "claim_lost", "cancelling a settled submission");
      const after = await store.getSubmission(settled.id);
      expect(after.cancelRequested, "a refused cancel stores nothing").toBe(false);
      expect(after.cancellation).toBeUndefined();
      await expectCode(store.cancelSubmission("no-such-submission", cancellation("x")), "submission_not_found", "an unknown id");
    });

    test("RenewLeaseAnswersCancelRequested", async ({ store, clock, fx }) => {
      const sub = await fx.running();
      const renew = () => store.renewLease({ submissionId: sub.id, attemptId: sub.attemptId!, leaseExpiresAt: clock.now() + LEASE_MS });
      expect(await renew(), "no cancel yet").toEqual({ cancelRequested: false });
      await store.cancelSubmission(sub.id, cancellation("enough"));
      expect(await renew(), "the renewal tells the owner").toEqual({ cancelRequested: true, cancellation: cancellation("enough") });
      // Handed back (the owner died): the next claim sees it too.
      await store.releaseSubmission({ submissionId: sub.id, attemptId: sub.attemptId! });
      const again = await fx.claim(sub);
      expect(again.cancelRequested, "a cancel survives a release").toBe(true);
      expect(again.cancellation).toEqual(cancellation("enough"));
    });

    test("CancelFreesOrSkipsInSessionOrder", async ({ store, fx }) => {
      const key = fx.key();
      const a1 = await fx.admit(key);
      const a2 = await fx.admit(key);
      const a3 = await fx.admit(key);
      await store.cancelSubmission(a2.id, cancellation("skip me"));
      expect(ids(await store.listRunnable()), "cancelling one behind the head leaves the head runnable").toEqual([a1.id]);
      expect((await fx.claim(a1)).status).toBe("running");
      const a1Row = await store.getSubmission(a1.id);
      await store.reserveSettlement(a1.id, a1Row.attemptId!, { outcome: { status: "succeeded" } });
      await store.finalizeSettlement(a1.id);
      const head = await store.getSessionHead(key);
      expect(head?.id, "the cancelled one keeps its place in line").toBe(a2.id);
      expect(head?.status, "promoted as it is: settling").toBe("terminalizing");
      expect(await store.listRunnable(), "nothing runs past a settling head").toEqual([]);
      await store.finalizeSettlement(a2.id);
      expect(ids(await store.listRunnable()), "its settlement frees the session for the next one").toEqual([a3.id]);
      expect((await fx.claim(a3)).status).toBe("running");

      const other = fx.key();
      const b1 = await fx.admit(other);
      const b2 = await fx.admit(other);
      await fx.cancelled(b1, "head");
      expect(ids(await store.listRunnable()).filter((id) => id === b2.id), "a cancelled head frees the session").toEqual([b2.id]);
    });

    test("ReservationKeepsTheOutcome", async ({ store, fx }) => {
      // A recoverer finishing a crashed settlement writes the outcome the settler had.
      const sub = await fx.running();
      const outcome = { status: "succeeded" as const, result: { text: "y".repeat(5_000) }, usage: { input: 1, output: 2, cacheRead: 0, cacheWrite: 0, totalTokens: 3 } };
      await store.reserveSettlement(sub.id, sub.attemptId!, { outcome });
      const reserved = await store.getSubmission(sub.id);
      expect(reserved.status).toBe("terminalizing");
      expect(reserved.outcome, "the reservation stores the outcome").toEqual(outcome);
      expect((await store.listByStatus("terminalizing")).find((s) => s.id === sub.id)?.outcome, "listed with it").toEqual(outcome);
      await store.finalizeSettlement(sub.id);
      expect((await store.getSubmission(sub.id)).outcome, "a finalize without one keeps it").toEqual(outcome);
    });

    test("FinalizeKeepsTheOutcome", async ({ store, fx }) => {
      // A waiter reads the outcome from the row, not from the log.
      const sub = await fx.running();
      await store.reserveSettlement(sub.id, sub.attemptId!);
      expect((await store.getSubmission(sub.id)).outcome, "no outcome before the finalize").toBeUndefined();
      const outcome = { status: "succeeded" as const, result: { answer: 42, text: "x".repeat(5_000) } };
      await store.finalizeSettlement(sub.id, outcome);
      expect((await store.getSubmission(sub.id)).outcome).toEqual(outcome);
      await store.finalizeSettlement(sub.id, { status: "failed", error: "late" });
      expect((await store.getSubmission(sub.id)).outcome, "a repeated finalize keeps the first outcome").toEqual(outcome);
      const small = await fx.running();
      await store.reserveSettlement(small.id, small.attemptId!);
      await store.finalizeSettlement(small.id, { status: "failed", error: "boom", errorCode: "run_failed" });
      expect((await store.getSubmission(small.id)).outcome).toEqual({ status: "failed", error: "boom", errorCode: "run_failed" });
      const bare = await fx.settled();
      expect(bare.outcome, "finalized without one").toBeUndefined();
    });

    test("PromotionToHeadMovesUpdatedAt", async ({ store, clock, fx }) => {
      // The sweeper re-rings queued heads that have not moved for a while: a head promoted a
      // moment ago by its predecessor's settlement (or cancel) has just moved.
      const key = fx.key();
      const a1 = await fx.admit(key);
      const a2 = await fx.admit(key);
      const a3 = await fx.admit(key);
      const admitted = (await store.getSubmission(a2.id)).updatedAt;
      const claimed = await fx.claim(a1);
      clock.set(clock.now() + 60_000);
      await store.reserveSettlement(a1.id, claimed.attemptId!);
      clock.set(clock.now() + 1_000);
      await store.finalizeSettlement(a1.id);
      expect((await store.getSubmission(a2.id)).updatedAt, "promoted by a settlement").toBe(clock.now());
      expect(admitted).toBeLessThan(clock.now());
      clock.set(clock.now() + 60_000);
      await fx.cancelled(a2, "skip");
      expect((await store.getSubmission(a3.id)).updatedAt, "promoted by a cancel of the head").toBe(clock.now());
      const behind = await fx.admit(key);
      const before = (await store.getSubmission(behind.id)).updatedAt;
      clock.set(clock.now() + 1_000);
      await fx.cancelled(a3, "skip too");
      expect((await store.getSubmission(behind.id)).updatedAt).toBe(clock.now());
      expect(before).toBeLessThan(clock.now());
    });
  });
}
