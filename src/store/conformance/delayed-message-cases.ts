/**
 * Conformance cases of delayed messages (ADR 0025): admitted now, `waiting` outside their
 * session's order (never its head, so the session goes on without them), due in the wait-check
 * index at their time, joining the order then as its newest admission; a cancel before then
 * settles them at once without a record.
 */
import { describe, expect } from "vitest";
import { type CaseBody, type Fixtures, cancellation, expectCode, ids } from "./case-context.ts";

type Register = (name: string, body: CaseBody) => void;

const HOUR = 60 * 60 * 1000;

async function delayed(fx: Fixtures, key = fx.key(), inMs = HOUR) {
  const until = fx.clock.now() + inMs;
  const sub = await fx.admit(key, { delayedUntil: until, input: { kind: "user", body: "remind me", notBefore: new Date(until).toISOString() } });
  return { sub, until, key };
}

export function delayedMessageCases(test: Register): void {
  describe("delayed messages", () => {
    test("DelayedMessageWaitsOutsideTheOrder", async ({ store, fx }) => {
      const { sub, until, key } = await delayed(fx);
      expect(sub).toMatchObject({ status: "waiting", delayedUntil: until, waitCheckAt: until, waitingFor: [{ kind: "time", until }], attemptCount: 0 });
      expect(sub.pendingCalls).toBeUndefined();
      expect((await store.getSubmission(sub.id)).status).toBe("waiting");
      expect(await store.getSessionHead(key), "a delayed message is never its session's head").toBeUndefined();
      expect(await store.sessionLive(key)).toBe(false);
      expect(ids(await store.listRunnable())).not.toContain(sub.id);
      await expectCode(fx.claim(sub), "claim_lost", "claiming a delayed message");
      await expectCode(store.resumeSubmission(sub.id), "claim_lost", "resuming a delayed message (it joins its order instead)");
      await expectCode(store.enqueueInbox(key, { kind: "steer", body: "x" }), "no_run_in_flight", "steering a session whose only submission is delayed");

      // The session goes on without it: a later message is its head and runs.
      const next = await fx.admit(key);
      expect((await store.getSessionHead(key))?.id).toBe(next.id);
      expect(ids(await store.listRunnable())).toContain(next.id);
      const claimed = await fx.claim(next);
      expect(claimed.status).toBe("running");
      const page = await store.listSessionSubmissions(key, { limit: 10 });
      expect(ids(page), "listed from its admission, newest first").toEqual([next.id, sub.id]);
      expect(ids(await store.listSessionSubmissions(key, { limit: 10, status: "waiting" }))).toEqual([sub.id]);
    });

    test("DelayedMessageDueAtItsTime", async ({ store, fx }) => {
      const { sub, until } = await delayed(fx);
      expect(ids(await store.listDueWaits(until - 1)), "not due before its time").not.toContain(sub.id);
      expect(ids(await store.listDueWaits(until)), "due at its time").toContain(sub.id);
      expect(ids(await store.listDueWaits(until + HOUR))).toContain(sub.id);
    });

    test("JoinSessionOrderBehindWhatIsAhead", async ({ store, fx }) => {
      const key = fx.key();
      const first = await fx.admit(key);
      const { sub } = await delayed(fx, key);
      const second = await fx.admit(key);
      const running = await fx.claim(first);

      fx.clock.set(fx.clock.now() + HOUR);
      const joined = await store.joinSessionOrder(sub.id);
      expect(joined.status).toBe("queued");
      expect(joined.delayedUntil).toBeUndefined();
      expect(joined.waitingFor).toBeUndefined();
      expect(joined.waitCheckAt).toBeUndefined();
      expect(joined.pendingResume, "its first claim will charge an attempt").toBe(false);
      expect(joined.updatedAt).toBe(fx.clock.now());
      expect(ids(await store.listDueWaits(fx.clock.now())), "no longer a wait").not.toContain(sub.id);
      expect(ids(await store.listSessionSubmissions(key, { limit: 10 })), "listed at its new place, the newest").toEqual([sub.id, second.id, first.id]);
      await expectCode(store.joinSessionOrder(sub.id), "claim_lost", "joining twice");

      // Behind what was admitted before it joined: first, second, then it.
      expect((await store.getSessionHead(key))?.id).toBe(first.id);
      await store.reserveSettlement(first.id, running.attemptId!);
      await store.finalizeSettlement(first.id);
      expect((await store.getSessionHead(key))?.id).toBe(second.id);
      expect(ids(await store.listRunnable())).not.toContain(sub.id);
      const secondRun = await fx.claim(second);
      await store.reserveSettlement(second.id, secondRun.attemptId!);
      await store.finalizeSettlement(second.id);
      expect((await store.getSessionHead(key))?.id, "then it is the head").toBe(sub.id);
      expect(ids(await store.listRunnable())).toContain(sub.id);
      const claimed = await fx.claim(sub);
      expect(claimed.attemptCount).toBe(1);
    });

    test("JoinSessionOrderOfAnIdleSession", async ({ store, fx }) => {
      const { sub, key } = await delayed(fx);
      const joined = await store.joinSessionOrder(sub.id);
      expect(joined.status).toBe("queued");
      expect((await store.getSessionHead(key))?.id, "nothing ahead: it is the head at once").toBe(sub.id);
      expect(ids(await store.listRunnable())).toContain(sub.id);
      // A message admitted after it queues behind it.
      const after = await fx.admit(key);
      expect((await store.getSessionHead(key))?.id).toBe(sub.id);
      expect(ids(await store.listRunnable())).not.toContain(after.id);
    });

    test("CancelDelayedSettlesAtOnce", async ({ store, fx }) => {
      const { sub, key } = await delayed(fx);
      const later = await fx.admit(key);
      const result = await store.cancelSubmission(sub.id, cancellation("not needed"));
      expect(result, "settled by the cancel itself").toEqual({ wasRunning: false, settled: true });
      const row = await store.getSubmission(sub.id);
      expect(row).toMatchObject({ status: "settled", cancelRequested: true, outcome: { status: "failed", errorCode: "cancelled", error: "cancelled: not needed" } });
      expect(row.waitingFor).toBeUndefined();
      expect(row.delayedUntil).toBeUndefined();
      expect((await fx.log(sub.conversationId)).filter((r) => r.submissionId === sub.id), "no record: it never joined the conversation").toEqual([]);
      expect(ids(await store.listDueWaits(fx.clock.now() + 2 * HOUR))).not.toContain(sub.id);
      await expectCode(store.joinSessionOrder(sub.id), "claim_lost", "joining after the cancel");
      await expectCode(store.cancelSubmission(sub.id, cancellation("again")), "claim_lost", "cancelling it again");
      expect((await store.getSessionHead(key))?.id, "the session's order is untouched").toBe(later.id);
    });

    test("SessionIdleAgainOnceItsDelayedMessageIsCancelled", async ({ store, fx }) => {
      // Conversation retention (ADR 0034), where the store offers it: a session whose only
      // unsettled submission was a delayed message is idle again once that is cancelled.
      if (!store.listIdleConversations) return;
      const { sub } = await delayed(fx);
      await store.cancelSubmission(sub.id, cancellation("not needed"));
      fx.clock.set(fx.clock.now() + 1);
      const idle = await store.listIdleConversations({ idleSince: fx.clock.now(), limit: 1_000 });
      expect(idle.map((c) => c.id), "listed idle: nothing of it is unsettled").toContain(sub.conversationId);
    });

    test("DelayedMessageReplay", async ({ store, fx }) => {
      const { sub, until, key } = await delayed(fx);
      const input = { kind: "user" as const, body: "remind me", notBefore: new Date(until).toISOString() };
      const again = (await store.admitSubmission({ id: sub.id, conversationId: sub.conversationId, sessionKey: key, input, createdAt: fx.clock.now(), delayedUntil: until })).submission;
      expect(again, "the same dispatch again replays the stored row").toEqual(await store.getSubmission(sub.id));
      await expectCode(
        store.admitSubmission({ id: sub.id, conversationId: sub.conversationId, sessionKey: key, input: { ...input, notBefore: new Date(until + 1).toISOString() }, createdAt: fx.clock.now(), delayedUntil: until + 1 }),
        "dispatch_conflict",
        "the same dispatch id for another time",
      );
    });
  });
}
