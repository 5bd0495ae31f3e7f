/**
 * Conformance cases of the InboxStore (DESIGN §3.1 "a steer is never lost"): acceptance only
 * while a run is in flight, fenced atomic drain into `user_message` records, and settlement
 * refused while messages are undelivered.
 */
import { describe, expect } from "vitest";
import type { ConversationRecord } from "../../protocol/records.ts";
import type { InboxKind, Submission } from "../submission.ts";
import { type CaseBody, expectCode, expectStrictlyIncreasing, ids } from "./case-context.ts";

type Register = (name: string, body: CaseBody) => void;

const BOTH: InboxKind[] = ["steer", "followUp"];

/** `[origin, body]` of drained records, for compact comparisons. */
function drained(records: readonly ConversationRecord[]): [string | undefined, string][] {
  return records.map((r) => {
    const p = r.payload as { body: string; origin?: string };
    return [p.origin, p.body];
  });
}

export function inboxCases(test: Register): void {
  describe("inbox", () => {
    test("InboxRefusedWithoutRunInFlight", async ({ store, fx }) => {
      const none = fx.key();
      await expectCode(store.enqueueInbox(none, { kind: "steer", body: "x" }), "no_run_in_flight", "steer to a session with no submission");

      const fresh = await fx.admit(fx.key());
      await expectCode(
        store.enqueueInbox(fresh.sessionKey, { kind: "steer", body: "too early" }),
        "no_run_in_flight",
        "steer while the head is queued and never claimed",
      );
      await expectCode(
        store.enqueueInbox(fresh.sessionKey, { kind: "followUp", body: "too early" }),
        "no_run_in_flight",
        "follow-up while the head is queued and never claimed",
      );

      const settled = await fx.settled();
      await expectCode(
        store.enqueueInbox(settled.sessionKey, { kind: "followUp", body: "too late" }),
        "no_run_in_flight",
        "follow-up after the only submission settled",
      );

      const reserving = await fx.running();
      await store.reserveSettlement(reserving.id, reserving.attemptId!);
      await expectCode(
        store.enqueueInbox(reserving.sessionKey, { kind: "steer", body: "too late" }),
        "no_run_in_flight",
        "steer while the head is terminalizing",
      );

      // Nothing was stored: the fresh submission's first attempt finds an empty inbox.
      const claimed = await fx.claim(fresh);
      expect(
        await store.drainInbox({ submissionId: fresh.id, attemptId: claimed.attemptId!, kinds: BOTH }),
        "a refused message is not stored",
      ).toEqual([]);
      await store.reserveSettlement(fresh.id, claimed.attemptId!, { requireDrainedInbox: true });
      expect(await store.readRecords(fresh.conversationId, ""), "no record was appended").toEqual([]);
    });

    test("InboxAcceptedWhileRunInFlight", async ({ store, fx }) => {
      const accepted = async (sub: Submission, what: string) => {
        const got = await store.enqueueInbox({ ...sub.sessionKey }, { kind: "steer", body: what });
        expect(got, `steer while ${what} belongs to that submission`).toEqual({ submissionId: sub.id });
      };

      const running = await fx.running();
      const behind = await fx.admit(running.sessionKey);
      await accepted(running, "running (with another queued behind)");
      expect((await store.enqueueInbox(running.sessionKey, { kind: "followUp", body: "more" })).submissionId).toBe(running.id);

      const waiting = await fx.waiting();
      await accepted(waiting, "waiting on children");

      const continued = await fx.running();
      await store.releaseSubmission({ submissionId: continued.id, attemptId: continued.attemptId!, continuation: true });
      await accepted(continued, "queued as a continuation");

      const retried = await fx.running();
      await store.releaseSubmission({ submissionId: retried.id, attemptId: retried.attemptId!, lastError: "transient" });
      await accepted(retried, "queued for a retry");

      const resumed = await fx.waiting();
      await store.resumeSubmission(resumed.id);
      await accepted(resumed, "queued after a resume");

      // What was accepted is delivered to the run's next attempt.
      await store.resumeSubmission(waiting.id);
      const next = await fx.claim(waiting);
      const records = await store.drainInbox({ submissionId: waiting.id, attemptId: next.attemptId!, kinds: BOTH });
      expect(drained(records), "the next attempt drains what the waiting run accepted").toEqual([["steer", "waiting on children"]]);
      expect(ids(await store.listByStatus("queued"))).toContain(behind.id);
    });

    test("InboxDrainDeliversInAcceptanceOrder", async ({ store, clock, fx }) => {
      const sub = await fx.running();
      const key = sub.sessionKey;
      await store.enqueueInbox(key, { kind: "steer", body: "s1" });
      await store.enqueueInbox(key, { kind: "followUp", body: "f1" });
      await store.enqueueInbox(key, { kind: "steer", body: "s2" });
      await clock.advance(500);
      const drain = (kinds: InboxKind[]) => store.drainInbox({ submissionId: sub.id, attemptId: sub.attemptId!, kinds });

      const steers = await drain(["steer"]);
      expect(drained(steers), "only steers, in acceptance order").toEqual([
        ["steer", "s1"],
        ["steer", "s2"],
      ]);
      for (const rec of steers) {
        expect(rec.kind).toBe("user_message");
        expect(rec.payload, "payload is exactly {body, origin}").toEqual({ body: (rec.payload as { body: string }).body, origin: "steer" });
        expect(rec.conversationId).toBe(sub.conversationId);
        expect(rec.session).toBe(key.session);
        expect(rec.submissionId).toBe(sub.id);
        expect(rec.attemptId, "authored by the draining attempt").toBe(sub.attemptId);
        expect(Date.parse(rec.time), "record time is the store clock's now").toBe(clock.now());
      }
      expect(await drain(["steer"]), "a second drain finds nothing (delivered)").toEqual([]);
      const followUps = await drain(["followUp"]);
      expect(drained(followUps)).toEqual([["followUp", "f1"]]);
      expect(await drain(BOTH), "everything delivered").toEqual([]);

      await store.enqueueInbox(key, { kind: "steer", body: "a" });
      await store.enqueueInbox(key, { kind: "followUp", body: "b" });
      await store.enqueueInbox(key, { kind: "steer", body: "c" });
      const mixed = await drain(BOTH);
      expect(drained(mixed), "both kinds interleave in acceptance order").toEqual([
        ["steer", "a"],
        ["followUp", "b"],
        ["steer", "c"],
      ]);
      const all = [...steers, ...followUps, ...mixed];
      expectStrictlyIncreasing(all, "drained record ids");
      expect(await store.readRecords(sub.conversationId, ""), "the drained records are the log").toEqual(all);
    });

    test("InboxMessageKeepsItsPrincipal", async ({ store, fx }) => {
      const sub = await fx.running();
      const key = sub.sessionKey;
      await store.enqueueInbox(key, { kind: "steer", body: "from alice", principalId: "alice" });
      await store.enqueueInbox(key, { kind: "followUp", body: "from bob", principalId: "bob" });
      await store.enqueueInbox(key, { kind: "steer", body: "from nobody" });
      const records = await store.drainInbox({ submissionId: sub.id, attemptId: sub.attemptId!, kinds: BOTH });
      expect(
        records.map((r) => r.payload),
        "each record carries its message's principal (ADR 0043), and none when the message had none",
      ).toEqual([
        { body: "from alice", origin: "steer", principalId: "alice" },
        { body: "from bob", origin: "followUp", principalId: "bob" },
        { body: "from nobody", origin: "steer" },
      ]);
      expect(await store.readRecords(sub.conversationId, ""), "as stored").toEqual(records);
    });

    test("InboxDrainIsFenced", async ({ store, fx }) => {
      const sub = await fx.running();
      const conv = sub.conversationId;
      const [first] = await store.appendRecords(conv, [fx.draft(conv, "before")]);
      await store.enqueueInbox(sub.sessionKey, { kind: "steer", body: "x" });
      const log = await store.readRecords(conv, "");

      await expectCode(
        store.drainInbox({ submissionId: sub.id, attemptId: "other-attempt", kinds: BOTH }),
        "claim_lost",
        "drain under another attempt id",
      );
      await expectCode(
        store.drainInbox({ submissionId: sub.id, attemptId: sub.attemptId!, kinds: BOTH, expectedHead: "" }),
        "claim_lost",
        "drain with a stale expected head",
      );
      expect(await store.readRecords(conv, ""), "refused drains append nothing").toEqual(log);

      const records = await store.drainInbox({
        submissionId: sub.id,
        attemptId: sub.attemptId!,
        kinds: BOTH,
        expectedHead: first!.id,
      });
      expect(drained(records), "a refused drain delivered nothing, so this one delivers").toEqual([["steer", "x"]]);
      expect(
        await store.drainInbox({ submissionId: sub.id, attemptId: sub.attemptId!, kinds: BOTH }),
        "an empty inbox drains to nothing",
      ).toEqual([]);

      await store.enqueueInbox(sub.sessionKey, { kind: "steer", body: "y" });
      await store.releaseSubmission({ submissionId: sub.id, attemptId: sub.attemptId! });
      await expectCode(
        store.drainInbox({ submissionId: sub.id, attemptId: sub.attemptId!, kinds: BOTH }),
        "claim_lost",
        "drain of a released (queued) submission",
      );
    });

    test("InboxSurvivesReclaim", async ({ store, fx }) => {
      const sub = await fx.running();
      await store.enqueueInbox(sub.sessionKey, { kind: "steer", body: "keep me" });
      await store.releaseSubmission({ submissionId: sub.id, attemptId: sub.attemptId!, lastError: "crash" });
      await expectCode(
        store.drainInbox({ submissionId: sub.id, attemptId: sub.attemptId!, kinds: BOTH }),
        "claim_lost",
        "drain by the released attempt",
      );
      const next = await fx.claim(sub);
      const records = await store.drainInbox({ submissionId: sub.id, attemptId: next.attemptId!, kinds: BOTH });
      expect(drained(records), "the next attempt delivers what the lost one did not").toEqual([["steer", "keep me"]]);
      expect(records[0]!.attemptId).toBe(next.attemptId);
    });

    test("SettlementRequiresDrainedInbox", async ({ store, fx }) => {
      const sub = await fx.running();
      await store.enqueueInbox(sub.sessionKey, { kind: "followUp", body: "one more thing" });
      await expectCode(
        store.reserveSettlement(sub.id, sub.attemptId!, { requireDrainedInbox: true }),
        "inbox_not_drained",
        "reserving with an undelivered follow-up",
      );
      expect((await store.getSubmission(sub.id)).status, "a refused reserve leaves the run running").toBe("running");
      expect(await store.drainInbox({ submissionId: sub.id, attemptId: sub.attemptId!, kinds: ["steer"] })).toEqual([]);
      await expectCode(
        store.reserveSettlement(sub.id, sub.attemptId!, { requireDrainedInbox: true }),
        "inbox_not_drained",
        "reserving after draining only steers",
      );
      await store.drainInbox({ submissionId: sub.id, attemptId: sub.attemptId!, kinds: ["followUp"] });
      await store.reserveSettlement(sub.id, sub.attemptId!, { requireDrainedInbox: true });
      expect((await store.getSubmission(sub.id)).status).toBe("terminalizing");

      const other = await fx.running();
      await store.enqueueInbox(other.sessionKey, { kind: "steer", body: "ignored" });
      await store.reserveSettlement(other.id, other.attemptId!);
      expect((await store.getSubmission(other.id)).status, "without the option, reserve ignores the inbox").toBe("terminalizing");

      const stale = await fx.running();
      await expectCode(
        store.reserveSettlement(stale.id, "other-attempt", { requireDrainedInbox: true }),
        "claim_lost",
        "reserving under another attempt id with requireDrainedInbox",
      );
    });
  });
}
