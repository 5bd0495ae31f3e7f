/**
 * Conformance cases of the wait check (ADR 0021): a waiting row is indexed by the time the sweep
 * next checks it (`waitCheckAt`, never after its `waitUntil`); `listDueWaits` returns the due
 * waiting rows only, `postponeWaitCheck` moves a check later only while the row still waits with
 * the check its caller found due, and every way out of `waiting` takes the row out of the index.
 */
import { describe, expect } from "vitest";
import type { Submission } from "../submission.ts";
import { type CaseBody, type Fixtures, cancellation, ids } from "./case-context.ts";

type Register = (name: string, body: CaseBody) => void;

/** A submission running in a fresh session, parked waiting with these times (and `calls`). */
async function parked(fx: Fixtures, times: { waitUntil?: number; waitCheckAt?: number }, calls?: string[]): Promise<Submission> {
  const sub = await fx.running();
  await fx.store.waitSubmission({ submissionId: sub.id, attemptId: sub.attemptId!, ...times, pendingCalls: calls });
  return fx.store.getSubmission(sub.id);
}

const FAR = Number.MAX_SAFE_INTEGER;

export function waitCheckCases(test: Register): void {
  describe("wait check", () => {
    test("WaitCheckSetByThePark", async ({ clock, fx }) => {
      const t = clock.now();
      const checked = await parked(fx, { waitCheckAt: t + 5_000 });
      expect(checked.waitCheckAt, "the check the park asked for").toBe(t + 5_000);
      const early = await parked(fx, { waitUntil: t + 2_000, waitCheckAt: t + 5_000 });
      expect(early.waitCheckAt, "never after the wait's deadline").toBe(t + 2_000);
      expect(early.waitUntil).toBe(t + 2_000);
      const unasked = await parked(fx, { waitUntil: t + 60_000 });
      expect(unasked.waitCheckAt, "none asked for: the park's own time (due at the next sweep)").toBe(unasked.updatedAt);
      expect((await fx.running()).waitCheckAt, "a row that does not wait has no check").toBeUndefined();
    });

    test("DueWaitsListsOnlyDueWaitingRows", async ({ store, clock, fx }) => {
      const t = clock.now() + 1_000;
      const second = await parked(fx, { waitCheckAt: t + 5_000 });
      const first = await parked(fx, { waitCheckAt: t + 1_000 });
      const expiring = await parked(fx, { waitUntil: t + 3_000, waitCheckAt: t + 100_000 });
      const later = await parked(fx, { waitCheckAt: t + 100_000 });
      await fx.running();
      await fx.admit(fx.key());
      await fx.settled();
      expect(await store.listDueWaits(t), "nothing due yet").toEqual([]);
      expect(ids(await store.listDueWaits(t + 1_000)), "due at its check time").toEqual([first.id]);
      expect(ids(await store.listDueWaits(t + 3_001)), "an expired wait is due: its check is never after its deadline").toEqual([first.id, expiring.id]);
      expect(ids(await store.listDueWaits(t + 5_000)), "admission order").toEqual([second.id, first.id, expiring.id]);
      expect(ids(await store.listDueWaits(FAR)), "every waiting row, once its check comes").toEqual([second.id, first.id, expiring.id, later.id]);
    });

    test("PostponeWaitCheckMovesTheCheck", async ({ store, clock, fx }) => {
      const t = clock.now() + 1_000;
      const sub = await parked(fx, { waitCheckAt: t });
      const moved = await store.postponeWaitCheck({ submissionId: sub.id, waitCheckAt: t, nextCheckAt: t + 60_000 });
      expect(moved, "a waiting row with the check found due").toBe(true);
      const after = await store.getSubmission(sub.id);
      expect(after.waitCheckAt).toBe(t + 60_000);
      expect(after.updatedAt, "the wait's age still counts from its park").toBe(sub.updatedAt);
      expect(after.status).toBe("waiting");
      expect(ids(await store.listDueWaits(t + 59_999)), "out of the due set until the new check").not.toContain(sub.id);
      expect(ids(await store.listDueWaits(t + 60_000))).toContain(sub.id);

      const stale = await store.postponeWaitCheck({ submissionId: sub.id, waitCheckAt: t, nextCheckAt: t + 1_000_000 });
      expect(stale, "a check already moved (another sweep's) is not moved again").toBe(false);
      expect((await store.getSubmission(sub.id)).waitCheckAt).toBe(t + 60_000);

      const bounded = await parked(fx, { waitUntil: t + 3_000, waitCheckAt: t });
      expect(await store.postponeWaitCheck({ submissionId: bounded.id, waitCheckAt: t, nextCheckAt: t + 60_000 })).toBe(true);
      expect((await store.getSubmission(bounded.id)).waitCheckAt, "never past the deadline").toBe(t + 3_000);
      expect(ids(await store.listDueWaits(t + 3_000))).toContain(bounded.id);
    });

    test("PostponeWaitCheckRacesOnce", async ({ store, clock, fx }) => {
      const t = clock.now() + 1_000;
      const sub = await parked(fx, { waitCheckAt: t });
      const results = await Promise.all(
        [10_000, 20_000, 30_000].map((d) => store.postponeWaitCheck({ submissionId: sub.id, waitCheckAt: t, nextCheckAt: t + d })),
      );
      expect(results.filter(Boolean), "one of racing sweeps moves the check").toHaveLength(1);
      const winner = [10_000, 20_000, 30_000][results.indexOf(true)]!;
      expect((await store.getSubmission(sub.id)).waitCheckAt).toBe(t + winner);
    });

    test("PostponeWaitCheckOfARowNoLongerWaitingChangesNothing", async ({ store, clock, fx }) => {
      const t = clock.now() + 1_000;
      const postpone = (sub: Submission) => store.postponeWaitCheck({ submissionId: sub.id, waitCheckAt: sub.waitCheckAt!, nextCheckAt: t + 60_000 });

      const resumed = await parked(fx, { waitCheckAt: t });
      await store.resumeSubmission(resumed.id);
      expect(await postpone(resumed), "resumed").toBe(false);
      const queued = await store.getSubmission(resumed.id);
      expect(queued.status).toBe("queued");
      expect(queued.waitCheckAt).toBeUndefined();

      const cancelled = await parked(fx, { waitCheckAt: t });
      await store.cancelSubmission(cancelled.id, cancellation("stop"));
      expect(await postpone(cancelled), "cancelled").toBe(false);
      expect((await store.getSubmission(cancelled.id)).status).toBe("terminalizing");

      // Resumed, claimed and parked again: a check found due for the earlier wait is not this one's.
      const reparked = await parked(fx, { waitCheckAt: t });
      await store.resumeSubmission(reparked.id);
      const again = await fx.claim(reparked);
      await store.waitSubmission({ submissionId: again.id, attemptId: again.attemptId!, waitCheckAt: t + 500 });
      expect(await postpone(reparked), "re-parked since").toBe(false);
      expect((await store.getSubmission(reparked.id)).waitCheckAt, "the new wait's own check stands").toBe(t + 500);

      expect(await store.postponeWaitCheck({ submissionId: "no-such-submission", waitCheckAt: t, nextCheckAt: t + 1 })).toBe(false);
    });

    test("LeavingTheWaitClearsItsCheck", async ({ store, clock, fx }) => {
      const t = clock.now() + 1_000;
      const resumed = await parked(fx, { waitCheckAt: t });
      await store.resumeSubmission(resumed.id);
      const cancelled = await parked(fx, { waitCheckAt: t });
      await store.cancelSubmission(cancelled.id, cancellation("stop"));
      // The last delivery requeues: a child's outcome, or the expiry's `task wait expired`.
      const answered = await parked(fx, { waitUntil: t, waitCheckAt: t }, ["call-1"]);
      const delivery = await store.deliverChildOutcome({
        parentSubmissionId: answered.id,
        callId: "call-1",
        drafts: [
          {
            kind: "tool_outcome",
            conversationId: answered.conversationId,
            session: answered.sessionKey.session,
            submissionId: answered.id,
            time: new Date(clock.now()).toISOString(),
            payload: { callId: "call-1", toolName: "task", content: [{ type: "text", text: "task wait expired" }], isError: true },
          },
        ],
      });
      expect(delivery).toMatchObject({ delivered: true, requeued: true });
      const stillWaiting = await parked(fx, { waitCheckAt: t });
      for (const sub of [resumed, cancelled, answered]) {
        const row = await store.getSubmission(sub.id);
        expect(row.status).not.toBe("waiting");
        expect(row.waitCheckAt, `${row.status}: no check`).toBeUndefined();
        expect(row.waitUntil).toBeUndefined();
      }
      expect(ids(await store.listDueWaits(FAR)), "only the row still waiting is ever due").toEqual([stillWaiting.id]);
    });
  });
}
