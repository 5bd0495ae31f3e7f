/**
 * Conformance cases of a parked submission: waiting and resuming, a park refused after a cancel
 * request, the resume claim consuming `pendingResume` without charging an attempt, and the
 * listing of children and expired waits.
 */
import { describe, expect } from "vitest";
import { cancelledOutcome } from "../submission.ts";
import { type CaseBody, cancellation, expectCode, ids, LEASE_MS } from "./case-context.ts";

type Register = (name: string, body: CaseBody) => void;

export function parkCases(test: Register): void {
  describe("wait and resume", () => {
    test("WaitAndResumeTransitions", async ({ store, clock, fx }) => {
      const key = fx.key();
      const sub = await fx.running(key);
      const behind = await fx.admit(key);
      const waitUntil = clock.now() + 60_000;
      await expectCode(
        store.waitSubmission({ submissionId: sub.id, attemptId: "stale-attempt", waitUntil }),
        "claim_lost",
        "waiting under another attempt id",
      );
      await store.waitSubmission({ submissionId: sub.id, attemptId: sub.attemptId!, waitUntil });
      const waiting = await store.getSubmission(sub.id);
      expect(waiting.status, "wait → waiting").toBe("waiting");
      expect(waiting.pendingResume, "wait sets pendingResume").toBe(true);
      expect(waiting.waitUntil).toBe(waitUntil);
      expect(waiting.attemptId, "waiting holds no lease: attemptId").toBeUndefined();
      expect(waiting.ownerId, "waiting holds no lease: ownerId").toBeUndefined();
      expect(waiting.leaseExpiresAt, "waiting holds no lease: leaseExpiresAt").toBeUndefined();
      expect(await store.listRunnable(), "a waiting head is not runnable and blocks its session").toEqual([]);
      expect(await store.listExpiredLeases(clock.now() + 1_000 * LEASE_MS), "waiting rows never lease-expire").toEqual([]);
      await expectCode(
        store.renewLease({ submissionId: sub.id, attemptId: sub.attemptId!, leaseExpiresAt: clock.now() + LEASE_MS }),
        "claim_lost",
        "renewing the lease of a waiting submission",
      );

      await store.resumeSubmission(sub.id);
      const resumed = await store.getSubmission(sub.id);
      expect(resumed.status, "resume → queued").toBe("queued");
      expect(resumed.waitUntil, "resume clears waitUntil").toBeUndefined();
      expect(resumed.pendingResume, "pendingResume survives the requeue (the claim consumes it)").toBe(true);
      expect(ids(await store.listRunnable()), "the resumed head is runnable, not the one behind").toEqual([sub.id]);
      expect(ids(await store.listRunnable())).not.toContain(behind.id);
      await expectCode(store.resumeSubmission(sub.id), "claim_lost", "resuming a queued submission");

      const unbounded = await fx.running();
      await store.waitSubmission({ submissionId: unbounded.id, attemptId: unbounded.attemptId! });
      expect((await store.getSubmission(unbounded.id)).waitUntil, "an unbounded wait stores no waitUntil").toBeUndefined();
    });

    test("WaitRefusedAfterCancelRequested", async ({ store, clock, fx }) => {
      // A cancel that lands between the owner's last renewal and its park: the park is refused
      // (nobody would tell a parked run of the cancel), and nothing changes.
      const sub = await fx.running();
      expect(await store.cancelSubmission(sub.id, cancellation("stop"))).toEqual({ wasRunning: true });
      await expectCode(
        store.waitSubmission({ submissionId: sub.id, attemptId: sub.attemptId!, waitUntil: clock.now() + 60_000, pendingCalls: ["c1"] }),
        "cancel_requested",
        "parking a run whose cancel was requested",
      );
      const after = await store.getSubmission(sub.id);
      expect(after.status, "still running under its attempt").toBe("running");
      expect(after.attemptId).toBe(sub.attemptId);
      expect(after.pendingCalls, "nothing parked").toBeUndefined();
      expect(after.cancellation).toEqual(cancellation("stop"));
      // The owner settles it instead.
      await store.reserveSettlement(sub.id, sub.attemptId!, { outcome: cancelledOutcome(cancellation("stop")) });
      expect((await store.getSubmission(sub.id)).status).toBe("terminalizing");
    });

    test("ResumeClaimConsumesPendingResume", async ({ store, fx }) => {
      const sub = await fx.waiting();
      await store.resumeSubmission(sub.id);
      const claimed = await fx.claim(sub);
      expect(claimed.status).toBe("running");
      expect(claimed.pendingResume, "the resume claim returns pendingResume = true").toBe(true);
      expect(claimed.attemptId, "the resume claim records its attempt").toBeDefined();
      const stored = await store.getSubmission(sub.id);
      expect(stored.pendingResume, "the stored row clears pendingResume at the claim").toBe(false);
      expect(stored.attemptId).toBe(claimed.attemptId);
    });

    test("ResumeClaimDoesNotIncrementAttemptCount", async ({ store, fx }) => {
      const sub = await fx.waiting();
      expect(sub.attemptCount).toBe(1);
      await store.resumeSubmission(sub.id);
      const resumed = await fx.claim(sub);
      expect(resumed.attemptCount, "a resume claim charges no attempt").toBe(1);
      expect((await store.getSubmission(sub.id)).attemptCount).toBe(1);
      await store.releaseSubmission({ submissionId: sub.id, attemptId: resumed.attemptId!, lastError: "transient" });
      const retried = await fx.claim(sub);
      expect(retried.attemptCount, "a retry claim after the resume charges one").toBe(2);
    });

    test("ChildListingAndWaitExpiry", async ({ store, clock, fx }) => {
      const parent = await fx.running();
      const childKey = (call: string) => ({ ...parent.sessionKey, instance: `${parent.sessionKey.instance}:${call}` });
      const c1 = await fx.admit(childKey("call-1"), { parentSubmissionId: parent.id, parentCallId: "call-1", depth: 1 });
      await fx.admit(fx.key());
      const otherParent = await fx.running();
      await fx.admit(fx.key(), { parentSubmissionId: otherParent.id, parentCallId: "call-x", depth: 1 });
      const c2 = await fx.admit(childKey("call-2"), { parentSubmissionId: parent.id, parentCallId: "call-2", depth: 1 });

      let children = await store.listChildSubmissions(parent.id);
      expect(ids(children), "children of the parent, admission order").toEqual([c1.id, c2.id]);
      expect(children.map((c) => c.parentCallId)).toEqual(["call-1", "call-2"]);
      expect(children.map((c) => c.depth)).toEqual([1, 1]);
      expect(children.map((c) => c.parentSubmissionId)).toEqual([parent.id, parent.id]);
      await fx.claim(c1);
      children = await store.listChildSubmissions(parent.id);
      expect(ids(children), "a claim does not change the listing").toEqual([c1.id, c2.id]);
      expect(children[0]!.status).toBe("running");
      expect(await store.listChildSubmissions("no-such-parent")).toEqual([]);
      // Only what a cascade may cancel: a settling (terminalizing) or settled child is left out.
      const running = await store.getSubmission(c1.id);
      await store.reserveSettlement(c1.id, running.attemptId!, { outcome: { status: "succeeded" } });
      expect(ids(await store.listChildSubmissions(parent.id, { unsettledOnly: true })), "a terminalizing child is left out").toEqual([c2.id]);
      await store.finalizeSettlement(c1.id);
      expect(ids(await store.listChildSubmissions(parent.id, { unsettledOnly: true })), "a settled child is left out").toEqual([c2.id]);
      expect(ids(await store.listChildSubmissions(parent.id)), "without the option, every child").toEqual([c1.id, c2.id]);

      // Expired waits are found among the due ones (their check is never after their deadline).
      const checkLate = async (waitUntil?: number) => {
        const sub = await fx.running();
        await store.waitSubmission({ submissionId: sub.id, attemptId: sub.attemptId!, waitUntil, waitCheckAt: clock.now() + 10_000_000_000 });
        return sub;
      };
      const bounded = await checkLate(clock.now() + 1_000);
      const unbounded = await checkLate(undefined);
      const expired = async () => (await store.listDueWaits(clock.now())).filter((s) => s.waitUntil !== undefined && s.waitUntil < clock.now());
      expect(await store.listDueWaits(clock.now()), "no wait has lapsed yet").toEqual([]);
      await clock.advance(2_000);
      expect(ids(await expired()), "only the bounded, lapsed wait").toEqual([bounded.id]);
      await clock.advance(1_000_000_000);
      expect(ids(await expired()), "an unbounded wait never expires").toEqual([bounded.id]);
      expect(ids(await store.listDueWaits(Number.MAX_SAFE_INTEGER)), "it is only checked, at its check time").toContain(unbounded.id);
    });
  });
}
