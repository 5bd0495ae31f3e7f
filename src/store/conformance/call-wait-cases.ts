/**
 * Conformance cases of call waits (ADR 0025): an approval or a callback registered by the record
 * that announces it, and the guarded decision write (`answerCall`). The store itself keeps the
 * first answer and refuses every other, however two deciders race; an answer to a waiting
 * submission is delivered and requeues it in the same write, one made before the park is stored
 * for the park to deliver.
 */
import { describe, expect } from "vitest";
import type { ConversationRecord, RecordDraft } from "../../protocol/records.ts";
import type { CallAnswer, CallAnswered } from "../call-wait.ts";
import type { Submission, WaitEntry } from "../submission.ts";
import { type CaseBody, type Fixtures, cancellation } from "./case-context.ts";

type Register = (name: string, body: CaseBody) => void;

const DAY = 24 * 60 * 60 * 1000;

/** Envelope of a record of `sub`'s conversation. */
function envelope(fx: Fixtures, sub: Submission) {
  return {
    conversationId: sub.conversationId,
    session: sub.sessionKey.session,
    submissionId: sub.id,
    time: new Date(fx.clock.now()).toISOString(),
  };
}

function approvalRequested(fx: Fixtures, sub: Submission, callId: string, args: unknown = { amount: 240 }): RecordDraft {
  return {
    kind: "approval_requested",
    ...envelope(fx, sub),
    attemptId: sub.attemptId,
    payload: { callId, toolName: "refund", args, approvalId: `${sub.id}/${callId}`, expiresAt: new Date(fx.clock.now() + DAY).toISOString() },
  };
}

function callbackStarted(fx: Fixtures, sub: Submission, callId: string, digest: string): RecordDraft {
  return {
    kind: "callback_started",
    ...envelope(fx, sub),
    attemptId: sub.attemptId,
    payload: { callId, toolName: "wait_for_label", expiresAt: new Date(fx.clock.now() + DAY).toISOString(), callbackDigest: digest },
  };
}

/** The records an approval's decision delivers: `approval_decided`, and for a denial the call's error outcome. */
function decisionDrafts(fx: Fixtures, sub: Submission, callId: string, approved: boolean): RecordDraft[] {
  const drafts: RecordDraft[] = [{ kind: "approval_decided", ...envelope(fx, sub), payload: { callId, approved } }];
  if (!approved) {
    drafts.push({
      kind: "tool_outcome",
      ...envelope(fx, sub),
      payload: { callId, toolName: "refund", content: [{ type: "text", text: "denied by a reviewer" }], isError: true },
    });
  }
  return drafts;
}

function decision(fx: Fixtures, approved: boolean, reason?: string): CallAnswer {
  return { kind: "approval", approved, ...(reason !== undefined ? { reason } : {}), answeredAt: fx.clock.now() };
}

/** A running submission that asked approval for `calls` (its records appended under its fence). */
async function asking(fx: Fixtures, calls: string[]): Promise<Submission> {
  const sub = await fx.running();
  await fx.store.appendRecords(sub.conversationId, calls.map((c) => approvalRequested(fx, sub, c)), {
    fence: { submissionId: sub.id, attemptId: sub.attemptId! },
  });
  return sub;
}

/** `sub` parked on `calls` as approvals. */
async function park(fx: Fixtures, sub: Submission, calls: string[]): Promise<Submission> {
  const waitingFor: WaitEntry[] = calls.map((callId) => ({ kind: "approval", callId, toolName: "refund", expiresAt: fx.clock.now() + DAY }));
  await fx.store.waitSubmission({ submissionId: sub.id, attemptId: sub.attemptId!, pendingCalls: calls, waitingFor, waitUntil: fx.clock.now() + DAY });
  return fx.store.getSubmission(sub.id);
}

function kinds(log: ConversationRecord[]): string[] {
  return log.map((r) => r.kind);
}

export function callWaitCases(test: Register): void {
  describe("call waits", () => {
    test("CallWaitRegisteredWithItsRecord", async ({ store, fx }) => {
      const sub = await fx.running();
      const fence = { submissionId: sub.id, attemptId: sub.attemptId! };
      expect(await store.getCallWait(sub.id, "call-a"), "nothing registered before the record").toBeUndefined();
      await store.appendRecords(sub.conversationId, [approvalRequested(fx, sub, "call-a", { amount: 240, to: "ann" }), callbackStarted(fx, sub, "call-b", "d1gest")], { fence });

      const approval = await store.getCallWait(sub.id, "call-a");
      expect(approval, "the approval_requested record registered its call wait").toEqual({
        submissionId: sub.id,
        conversationId: sub.conversationId,
        session: sub.sessionKey.session,
        callId: "call-a",
        kind: "approval",
        toolName: "refund",
        expiresAt: fx.clock.now() + DAY,
        args: { amount: 240, to: "ann" },
        approvalId: `${sub.id}/call-a`,
      });
      const callback = await store.findCallback("d1gest");
      expect(callback, "the callback_started record registered its callback, found by digest").toMatchObject({
        submissionId: sub.id,
        callId: "call-b",
        kind: "callback",
        toolName: "wait_for_label",
        callbackDigest: "d1gest",
      });
      expect(await store.getCallWait(sub.id, "call-b")).toEqual(callback);
      expect(await store.findCallback("no-such-digest")).toBeUndefined();
      expect(await store.getCallWait(sub.id, "call-z")).toBeUndefined();

      // A record of the same call again (a re-executed call) leaves the first registration.
      fx.clock.set(fx.clock.now() + 1_000);
      await store.appendRecords(sub.conversationId, [approvalRequested(fx, sub, "call-a", { amount: 1 })], { fence });
      expect((await store.getCallWait(sub.id, "call-a"))?.args, "the first registration stays").toEqual({ amount: 240, to: "ann" });
    });

    test("CallWaitNotRegisteredByCopiedRecords", async ({ store, fx }) => {
      const sub = await fx.running();
      const copy = await fx.running();
      // Another conversation's history copied in (a fork, an import): nothing waits on its calls.
      await store.appendRecords(copy.conversationId, [{ ...approvalRequested(fx, sub, "call-c"), conversationId: copy.conversationId }, { ...callbackStarted(fx, sub, "call-d", "c0pied"), conversationId: copy.conversationId }], { copied: true });
      expect((await fx.log(copy.conversationId)).slice(-2).map((r) => r.kind), "the records are appended").toEqual(["approval_requested", "callback_started"]);
      expect(await store.getCallWait(sub.id, "call-c"), "and register no call wait").toBeUndefined();
      expect(await store.findCallback("c0pied"), "nor a callback").toBeUndefined();
    });

    test("CallWaitNotRegisteredByARefusedAppend", async ({ store, fx }) => {
      const sub = await fx.running();
      let refused = false;
      try {
        await store.appendRecords(sub.conversationId, [approvalRequested(fx, sub, "call-a")], { fence: { submissionId: sub.id, attemptId: "not-the-attempt" } });
      } catch {
        refused = true;
      }
      expect(refused, "a stale attempt's append is refused").toBe(true);
      expect(await store.getCallWait(sub.id, "call-a"), "and registers nothing").toBeUndefined();
    });

    test("AnswerCallWhileWaitingDeliversAndRequeues", async ({ store, fx }) => {
      const sub = await park(fx, await asking(fx, ["call-a", "call-b"]), ["call-a", "call-b"]);
      const before = (await fx.log(sub.conversationId)).length;

      const first = await store.answerCall({ submissionId: sub.id, callId: "call-a", answer: decision(fx, true), drafts: decisionDrafts(fx, sub, "call-a", true) });
      expect(first.answered && first.delivered && !first.requeued, "delivered, one call still pending").toBe(true);
      let row = await store.getSubmission(sub.id);
      expect(row.status).toBe("waiting");
      expect(row.pendingCalls).toEqual(["call-b"]);
      expect(row.waitingFor?.map((e) => (e.kind === "time" ? e.kind : e.callId)), "waitingFor keeps what the park wrote").toEqual(["call-a", "call-b"]);
      expect((await store.getCallWait(sub.id, "call-a"))?.answer).toMatchObject({ kind: "approval", approved: true });

      const last = await store.answerCall({ submissionId: sub.id, callId: "call-b", answer: decision(fx, false, "too much"), drafts: decisionDrafts(fx, sub, "call-b", false) });
      expect(last.answered && last.delivered && last.requeued, "the answer to the last pending call requeues").toBe(true);
      row = await store.getSubmission(sub.id);
      expect(row.status).toBe("queued");
      expect(row.pendingResume).toBe(true);
      expect(row.pendingCalls).toBeUndefined();
      expect(row.waitingFor, "the requeue clears the wait").toBeUndefined();
      expect(row.waitCheckAt).toBeUndefined();
      const log = await fx.log(sub.conversationId);
      expect(kinds(log.slice(before)), "each answer's records, in the order answered").toEqual(["approval_decided", "approval_decided", "tool_outcome"]);
      expect(log.slice(before).every((r) => r.attemptId === undefined), "delivered out of band: no attempt authored them").toBe(true);
    });

    test("SecondAnswerRefusedByTheStore", async ({ store, fx }) => {
      const sub = await park(fx, await asking(fx, ["call-a", "call-b"]), ["call-a", "call-b"]);
      const first = await store.answerCall({ submissionId: sub.id, callId: "call-a", answer: decision(fx, true, "ok"), drafts: decisionDrafts(fx, sub, "call-a", true) });
      expect(first.answered).toBe(true);
      const logged = (await fx.log(sub.conversationId)).length;

      const other = await store.answerCall({ submissionId: sub.id, callId: "call-a", answer: decision(fx, false, "no"), drafts: decisionDrafts(fx, sub, "call-a", false) });
      expect(other, "a different decision is refused, with the first one").toMatchObject({ answered: false, reason: "already_answered", answer: { kind: "approval", approved: true, reason: "ok" } });
      const same = await store.answerCall({ submissionId: sub.id, callId: "call-a", answer: decision(fx, true, "ok"), drafts: decisionDrafts(fx, sub, "call-a", true) });
      expect(same, "the same decision again is refused by the store too (the caller answers it as a replay)").toMatchObject({ answered: false, reason: "already_answered" });
      expect((await fx.log(sub.conversationId)).length, "refused answers write nothing").toBe(logged);
      const row = await store.getSubmission(sub.id);
      expect([row.status, row.pendingCalls], "and change nothing").toEqual(["waiting", ["call-b"]]);
    });

    test("AnswerCallRaceOneWinsOneWake", async ({ store, fx }) => {
      // Two decisions for each of two calls at the same instant (two reviewers, two processes):
      // one answer per call, one requeue.
      const calls = ["call-a", "call-b"];
      const sub = await park(fx, await asking(fx, calls), calls);
      const tries: Promise<CallAnswered>[] = [];
      for (const approved of [true, false]) {
        for (const callId of calls) {
          tries.push(store.answerCall({ submissionId: sub.id, callId, answer: decision(fx, approved), drafts: decisionDrafts(fx, sub, callId, approved) }));
        }
      }
      const results = await Promise.all(tries);
      expect(results.filter((r) => r.answered).length, "one answer per call").toBe(2);
      expect(results.filter((r) => r.answered && r.delivered && r.requeued).length, "exactly one requeue").toBe(1);
      expect(results.filter((r) => !r.answered && r.reason === "already_answered").length).toBe(2);
      const decided = (await fx.log(sub.conversationId)).filter((r) => r.kind === "approval_decided").map((r) => r.payload.callId);
      expect(decided.sort(), "one approval_decided per call").toEqual(calls);
      for (const callId of calls) {
        const wait = await store.getCallWait(sub.id, callId);
        const won = results.find((r, i) => r.answered && calls[i % 2] === callId);
        expect(won, `an answer won for ${callId}`).toBeDefined();
        expect(wait?.answer?.kind).toBe("approval");
      }
      expect((await store.getSubmission(sub.id)).status).toBe("queued");
    });

    test("AnswerBeforeTheParkIsStoredForThePark", async ({ store, fx }) => {
      const sub = await asking(fx, ["call-a"]);
      const before = (await fx.log(sub.conversationId)).length;
      const early = await store.answerCall({ submissionId: sub.id, callId: "call-a", answer: decision(fx, true), drafts: decisionDrafts(fx, sub, "call-a", true) });
      expect(early, "a running submission: the answer is stored, not delivered").toEqual({ answered: true, delivered: false });
      expect((await fx.log(sub.conversationId)).length, "nothing appended to a log its run still writes").toBe(before);
      expect((await store.getSubmission(sub.id)).status).toBe("running");
      expect((await store.getCallWait(sub.id, "call-a"))?.answer, "the park finds it").toMatchObject({ approved: true });

      await park(fx, sub, ["call-a"]);
      const delivered = await store.deliverChildOutcome({ parentSubmissionId: sub.id, callId: "call-a", drafts: decisionDrafts(fx, sub, "call-a", true) });
      expect(delivered.delivered && delivered.requeued, "the park delivers the stored answer and requeues").toBe(true);
      const again = await store.answerCall({ submissionId: sub.id, callId: "call-a", answer: decision(fx, false), drafts: decisionDrafts(fx, sub, "call-a", false) });
      expect(again).toMatchObject({ answered: false, reason: "already_answered" });
    });

    test("AnswerCallRefusedForUnknownAndSettled", async ({ store, fx }) => {
      const sub = await park(fx, await asking(fx, ["call-a"]), ["call-a"]);
      expect(
        await store.answerCall({ submissionId: sub.id, callId: "call-never-asked", answer: decision(fx, true), drafts: decisionDrafts(fx, sub, "call-never-asked", true) }),
      ).toEqual({ answered: false, reason: "not_found" });
      expect(
        await store.answerCall({ submissionId: "no-such-submission", callId: "call-a", answer: decision(fx, true), drafts: [] }),
      ).toEqual({ answered: false, reason: "not_found" });

      await store.cancelSubmission(sub.id, cancellation("changed my mind"));
      expect((await store.getSubmission(sub.id)).waitingFor, "a cancelled wait keeps no entries").toBeUndefined();
      const late = await store.answerCall({ submissionId: sub.id, callId: "call-a", answer: decision(fx, true), drafts: decisionDrafts(fx, sub, "call-a", true) });
      expect(late, "a cancelled (terminalizing) submission takes no answer").toEqual({ answered: false, reason: "settled" });
      await store.finalizeSettlement(sub.id);
      expect(await store.answerCall({ submissionId: sub.id, callId: "call-a", answer: decision(fx, true), drafts: [] })).toEqual({ answered: false, reason: "settled" });
      expect((await store.getCallWait(sub.id, "call-a"))?.answer, "and stores none").toBeUndefined();
      expect(kinds(await fx.log(sub.conversationId))).not.toContain("approval_decided");
    });

    test("CallbackAnswerWithResult", async ({ store, fx }) => {
      const sub = await fx.running();
      await store.appendRecords(sub.conversationId, [callbackStarted(fx, sub, "call-c", "digest-c")], { fence: { submissionId: sub.id, attemptId: sub.attemptId! } });
      await store.waitSubmission({
        submissionId: sub.id,
        attemptId: sub.attemptId!,
        pendingCalls: ["call-c"],
        waitingFor: [{ kind: "callback", callId: "call-c", toolName: "wait_for_label", expiresAt: fx.clock.now() + DAY }],
      });
      const wait = (await store.findCallback("digest-c"))!;
      const answer: CallAnswer = { kind: "callback", result: { label: "1Z999", pages: [1, 2] }, answeredAt: fx.clock.now() };
      const outcome: RecordDraft = {
        kind: "tool_outcome",
        ...envelope(fx, sub),
        payload: { callId: "call-c", toolName: "wait_for_label", content: [{ type: "text", text: '{"label":"1Z999","pages":[1,2]}' }] },
      };
      const out = await store.answerCall({ submissionId: wait.submissionId, callId: wait.callId, answer, drafts: [outcome] });
      expect(out.answered && out.delivered && out.requeued).toBe(true);
      expect((await store.findCallback("digest-c"))?.answer, "the answer is kept whole").toEqual(answer);
    });
  });
}
