/**
 * Conformance cases of the SubmissionStore's admission and head-of-line order (spec §1.10.1,
 * §1.10.4 cases 1–15); attempts, parking and cancel have files of their own.
 */
import { describe, expect } from "vitest";
import { newId } from "../../conversation/ids.ts";
import { type DispatchMessage } from "../submission.ts";
import { type CaseBody, cancellation, expectCode, ids, LEASE_MS, sortedIds } from "./case-context.ts";

type Register = (name: string, body: CaseBody) => void;

export function submissionCases(test: Register): void {
  describe("admission", () => {
    test("AdmissionIdempotentReplay", async ({ store, clock, fx }) => {
      const key = fx.key();
      const first = await fx.admit(key);
      expect(first.status, "status of a fresh admission").toBe("queued");
      expect(first.attemptCount, "attemptCount of a fresh admission").toBe(0);
      expect(first.pendingResume, "pendingResume of a fresh admission").toBe(false);
      expect(first.cancelRequested, "cancelRequested of a fresh admission").toBe(false);
      expect(first.depth, "depth defaults to 0").toBe(0);
      expect(first.sessionKey).toEqual(key);

      await clock.advance(5_000);
      const replay = () =>
        store.admitSubmission({
          id: first.id,
          conversationId: first.conversationId,
          sessionKey: { ...key },
          input: structuredClone(first.input),
          createdAt: clock.now(),
        });
      const { submission: again, replayed } = await replay();
      expect(replayed, "an admission of a stored id is a replay").toBe(true);
      expect(again.id, "replay returns the same submission").toBe(first.id);
      expect(again.status, "replay status").toBe("queued");
      expect(again.createdAt, "replay returns the stored row, not the new candidate").toBe(first.createdAt);

      const claimed = await fx.claim(first);
      const afterClaim = (await replay()).submission;
      expect(afterClaim.status, "a replay after the claim returns the stored (running) row").toBe("running");
      expect(afterClaim.attemptId).toBe(claimed.attemptId);
      expect(afterClaim.attemptCount).toBe(1);
      expect(ids(await store.listByStatus("running")), "a replay never adds a row").toEqual([first.id]);
      expect(await store.listByStatus("queued")).toEqual([]);
    });

    test("AdmissionPayloadConflict", async ({ store, fx }) => {
      const key = fx.key();
      const first = await fx.admit(key, { input: { kind: "user", body: "original" } });
      await expectCode(
        store.admitSubmission({
          id: first.id,
          conversationId: first.conversationId,
          sessionKey: key,
          input: { kind: "user", body: "different" },
          createdAt: first.createdAt,
        }),
        "dispatch_conflict",
        "re-admitting the same id with a different body",
      );
      const stored = await store.getSubmission(first.id);
      expect(stored.input, "a conflicting admission leaves the stored input alone").toEqual({
        kind: "user",
        body: "original",
      });
    });

    test("AdmissionFreshIdIsAHintOnly", async ({ store, clock, fx }) => {
      // `freshId` lets a store skip looking for an earlier admission; it must still never admit twice.
      const key = fx.key();
      const admit = (body: string) =>
        store.admitSubmission({ id: "fresh-1", freshId: true, conversationId: newId(clock.now()), sessionKey: key, input: { kind: "user", body }, createdAt: clock.now() });
      const { submission: first, replayed: firstReplayed } = await admit("one");
      expect(firstReplayed, "the first admission is not a replay").toBe(false);
      await clock.advance(1_000);
      const { submission: again, replayed } = await admit("one");
      expect(replayed).toBe(true);
      expect(again.id).toBe(first.id);
      expect(again.createdAt, "the stored row, not a second one").toBe(first.createdAt);
      expect(again.conversationId).toBe(first.conversationId);
      await expectCode(admit("two"), "dispatch_conflict", "the same id with another body");
      expect(ids(await store.listByStatus("queued")), "one submission").toEqual([first.id]);
    });

    test("AdmissionReplayInTheSameMillisecond", async ({ store, clock, fx }) => {
      // A retry can reach the store within the millisecond of the first admission (a warm
      // process, a double submit): the store tells the replay by its own write, not by the time.
      const key = fx.key();
      const candidate = { id: fx.id(), conversationId: newId(clock.now()), sessionKey: key, input: { kind: "user" as const, body: "once" }, createdAt: clock.now() };
      const first = await store.admitSubmission(candidate);
      const again = await store.admitSubmission({ ...candidate, conversationId: newId(clock.now()) });
      expect(first.replayed, "the first admission").toBe(false);
      expect(again.replayed, "the same dispatch again, same createdAt").toBe(true);
      expect(again.submission).toEqual(first.submission);
    });

    test("AdmissionCreatesTheConversationWithTheSubmission", async ({ store, clock, fx }) => {
      const key = fx.key();
      await expectCode(store.getConversation(key), "conversation_not_found", "before the first admission");
      const candidate = newId(clock.now());
      const first = (await store.admitSubmission({ id: fx.id(), conversationId: candidate, sessionKey: key, input: { kind: "user", body: "one" }, createdAt: clock.now() })).submission;
      expect(first.conversationId, "the first admission's candidate becomes the conversation").toBe(candidate);
      const conversation = await store.getConversation(key);
      expect(conversation).toMatchObject({ id: candidate, key, createdAt: first.createdAt });
      const second = (await store.admitSubmission({ id: fx.id(), conversationId: newId(clock.now()), sessionKey: key, input: { kind: "user", body: "two" }, createdAt: clock.now() })).submission;
      expect(second.conversationId, "a later admission joins the session's conversation, whatever its candidate").toBe(candidate);
      expect((await store.getSubmission(second.id)).conversationId).toBe(candidate);
      expect((await store.getConversation(key)).id).toBe(candidate);
    });

    test("AdmissionRefusedStoresNothing", async ({ store, clock, fx }) => {
      const a = fx.key();
      const first = await fx.admit(a, { input: { kind: "user", body: "original" } });
      for (const [what, target, body] of [
        ["another body, another instance", fx.key(), "other"],
        ["the same body, another instance", fx.key(), "original"],
        ["the same body, another session of the instance", { ...a, session: "other-session" }, "original"],
        ["the same body, another agent", { ...a, agent: "another-agent" }, "original"],
      ] as const) {
        await expectCode(
          store.admitSubmission({ id: first.id, conversationId: newId(clock.now()), sessionKey: target, input: { kind: "user", body }, createdAt: clock.now() }),
          "dispatch_conflict",
          `the dispatch id again with ${what}`,
        );
        await expectCode(store.getConversation(target), "conversation_not_found", `no conversation after a refused dispatch (${what})`);
        expect(await store.getSessionHead(target), `no submission after a refused dispatch (${what})`).toBeUndefined();
        expect(await store.listSessionSubmissions(target, { limit: 10 })).toEqual([]);
      }
      const stored = await store.getSubmission(first.id);
      expect(stored.sessionKey, "the first admission's target is kept").toEqual(a);
      expect(stored.input).toEqual({ kind: "user", body: "original" });
    });

    test("AdmissionComparesEveryInputField", async ({ store, fx }) => {
      const base: DispatchMessage = {
        kind: "signal",
        body: "the body",
        attachments: [{ digest: `sha256:${"a".repeat(64)}`, mediaType: "text/plain", size: 3 }],
        signal: { type: "comment", sender: { id: "u1", name: "Ann" }, tag: "t1" },
        resultSchema: { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"] },
        resultRetries: 1,
      };
      const variants: [string, (m: DispatchMessage) => void][] = [
        ["kind", (m) => (m.kind = "user")],
        ["body", (m) => (m.body = "another body")],
        ["attachments[0].digest", (m) => (m.attachments![0]!.digest = `sha256:${"b".repeat(64)}`)],
        ["attachments[0].mediaType", (m) => (m.attachments![0]!.mediaType = "image/png")],
        ["attachments[0].size", (m) => (m.attachments![0]!.size = 4)],
        ["attachments (one more)", (m) => m.attachments!.push({ digest: `sha256:${"c".repeat(64)}`, mediaType: "a/b", size: 1 })],
        ["attachments (removed)", (m) => delete m.attachments],
        ["signal.type", (m) => (m.signal!.type = "reaction")],
        ["signal.sender value", (m) => (m.signal!.sender!.name = "Bob")],
        ["signal.sender extra key", (m) => (m.signal!.sender!.team = "x")],
        ["signal.sender (removed)", (m) => delete m.signal!.sender],
        ["signal.tag", (m) => (m.signal!.tag = "t2")],
        ["signal (removed)", (m) => delete m.signal],
        ["resultSchema nested value", (m) => ((m.resultSchema as { required: string[] }).required = [])],
        ["resultSchema (removed)", (m) => delete m.resultSchema],
        ["resultRetries", (m) => (m.resultRetries = 2)],
        ["resultRetries (removed)", (m) => delete m.resultRetries],
      ];
      const key = fx.key();
      const first = await fx.admit(key, { input: structuredClone(base) });
      for (const [field, change] of variants) {
        const input = structuredClone(base);
        change(input);
        await expectCode(
          store.admitSubmission({
            id: first.id,
            conversationId: first.conversationId,
            sessionKey: key,
            input,
            createdAt: first.createdAt,
          }),
          "dispatch_conflict",
          `re-admission differing only in ${field}`,
        );
      }
      const replay = (await store.admitSubmission({
        id: first.id,
        conversationId: first.conversationId,
        sessionKey: key,
        input: structuredClone(base),
        createdAt: first.createdAt,
      })).submission;
      expect(replay.id, "an identical full input still replays").toBe(first.id);
      expect((await store.getSubmission(first.id)).input, "stored input after the conflicts").toEqual(base);

      // Fields absent at first admission count too.
      const bare = await fx.admit(fx.key(), { input: { kind: "user", body: "bare" } });
      const additions: [string, Partial<DispatchMessage>][] = [
        ["resultSchema", { resultSchema: { type: "string" } }],
        ["resultRetries", { resultRetries: 3 }],
        ["attachments", { attachments: [{ digest: `sha256:${"d".repeat(64)}`, mediaType: "a/b", size: 1 }] }],
        ["signal", { signal: { type: "comment" } }],
      ];
      for (const [field, extra] of additions) {
        await expectCode(
          store.admitSubmission({
            id: bare.id,
            conversationId: bare.conversationId,
            sessionKey: bare.sessionKey,
            input: { kind: "user", body: "bare", ...extra },
            createdAt: bare.createdAt,
          }),
          "dispatch_conflict",
          `re-admission adding ${field}`,
        );
      }
    });

    test("GetSubmissionNotFound", async ({ store }) => {
      await expectCode(store.getSubmission("no-such-submission"), "submission_not_found", "getSubmission of an unknown id");
    });
  });

  describe("head of line", () => {
    test("RunnableHeadPerSession", async ({ store, fx }) => {
      const keyA = fx.key();
      const keyB = { ...keyA, session: "other" };
      const a1 = await fx.admit(keyA);
      const a2 = await fx.admit(keyA);
      const b1 = await fx.admit(keyB);
      const runnable = await store.listRunnable();
      expect(sortedIds(runnable), "runnable = exactly the head of each session").toEqual([a1.id, b1.id].sort());
      expect(ids(runnable)).not.toContain(a2.id);
      for (const sub of runnable) expect(sub.status).toBe("queued");
    });

    test("RunnableExcludesBusySessions", async ({ store, fx }) => {
      const keyA = fx.key();
      const keyB = fx.key();
      const a1 = await fx.admit(keyA);
      await fx.admit(keyA);
      const b1 = await fx.admit(keyB);
      const claimed = await fx.claim(a1);
      expect(ids(await store.listRunnable()), "a running head blocks its session").toEqual([b1.id]);
      await store.reserveSettlement(a1.id, claimed.attemptId!);
      expect(ids(await store.listRunnable()), "a terminalizing head blocks its session").toEqual([b1.id]);
    });

    test("SessionHead", async ({ store, fx }) => {
      const key = fx.key();
      expect(await store.getSessionHead(key), "a session with no submission has no head").toBeUndefined();
      const a1 = await fx.admit(key);
      const a2 = await fx.admit(key);
      const sibling = await fx.admit({ ...key, session: "sibling" });
      const head = async () => (await store.getSessionHead({ ...key }))?.id;
      expect(await head(), "the oldest unsettled submission, queued").toBe(a1.id);
      const claimed = await fx.claim(a1);
      const running = await store.getSessionHead(key);
      expect(running?.status, "the head in any status: running").toBe("running");
      expect(running?.attemptId).toBe(claimed.attemptId);
      await store.waitSubmission({ submissionId: a1.id, attemptId: claimed.attemptId! });
      expect(await head(), "the head in any status: waiting").toBe(a1.id);
      await store.resumeSubmission(a1.id);
      const again = await fx.claim(a1);
      await store.reserveSettlement(a1.id, again.attemptId!);
      expect(await head(), "the head in any status: terminalizing").toBe(a1.id);
      await store.finalizeSettlement(a1.id);
      expect(await head(), "a settled head hands over to the next").toBe(a2.id);
      await fx.cancelled(a2);
      expect(await store.getSessionHead(key), "every submission settled: no head").toBeUndefined();
      expect((await store.getSessionHead(sibling.sessionKey))?.id, "sessions are separate").toBe(sibling.id);
    });

    test("SessionLiveFollowsItsHead", async ({ store, fx }) => {
      const key = fx.key();
      const live = () => store.sessionLive({ ...key });
      expect(await live(), "no submission").toBe(false);
      const a1 = await fx.admit(key);
      const a2 = await fx.admit(key);
      expect(await live(), "a queued head").toBe(true);
      const first = await fx.claim(a1);
      expect(await live(), "a running head").toBe(true);
      await store.waitSubmission({ submissionId: a1.id, attemptId: first.attemptId! });
      expect(await live(), "a head waiting on children").toBe(false);
      expect(await store.sessionLive({ ...key, session: "other" }), "another session").toBe(false);
      await store.resumeSubmission(a1.id);
      expect(await live(), "resumed").toBe(true);
      const second = await fx.claim(a1);
      await store.waitSubmission({ submissionId: a1.id, attemptId: second.attemptId! });
      expect(await live()).toBe(false);
      await store.cancelSubmission(a1.id, cancellation("stop waiting"));
      expect(await live(), "a cancelled head, settling").toBe(true);
      await store.finalizeSettlement(a1.id);
      expect(await live(), "the next head, queued").toBe(true);
      const third = await fx.claim(a2);
      await store.reserveSettlement(a2.id, third.attemptId!);
      expect(await live(), "a settling head").toBe(true);
      await store.finalizeSettlement(a2.id);
      expect(await live(), "every submission settled").toBe(false);
    });

    test("ListByStatus", async ({ store, fx }) => {
      const s1 = await fx.admit(fx.key());
      const s2 = await fx.admit(fx.key());
      const s3 = await fx.admit(fx.key());
      await fx.claim(s2);
      expect(ids(await store.listByStatus("queued")), "queued, admission order").toEqual([s1.id, s3.id]);
      expect(ids(await store.listByStatus("running")), "running").toEqual([s2.id]);
      expect(await store.listByStatus("waiting")).toEqual([]);
      expect(await store.listByStatus("terminalizing")).toEqual([]);
      expect(await store.listByStatus("settled")).toEqual([]);
    });

    test("ClaimCAS", async ({ store, clock, fx }) => {
      const sub = await fx.admit(fx.key());
      const attemptId = newId(clock.now());
      const lease = clock.now() + LEASE_MS;
      const claimed = await store.claimSubmission({ submissionId: sub.id, attemptId, ownerId: "owner-a", leaseExpiresAt: lease });
      expect(claimed.status, "claimed row status").toBe("running");
      expect(claimed.attemptCount, "a first claim charges one attempt").toBe(1);
      expect(claimed.attemptId).toBe(attemptId);
      expect(claimed.ownerId).toBe("owner-a");
      expect(claimed.leaseExpiresAt).toBe(lease);
      expect(claimed.pendingResume).toBe(false);
      const stored = await store.getSubmission(sub.id);
      expect(stored.status).toBe("running");
      expect(stored.attemptId).toBe(attemptId);
      expect(stored.ownerId).toBe("owner-a");
      expect(stored.leaseExpiresAt).toBe(lease);
      expect(stored.attemptCount).toBe(1);

      await expectCode(
        store.claimSubmission({ submissionId: sub.id, attemptId: newId(clock.now()), ownerId: "owner-b", leaseExpiresAt: lease }),
        "claim_lost",
        "a second claim of a running submission",
      );
      const after = await store.getSubmission(sub.id);
      expect(after.attemptId, "a lost claim changes nothing").toBe(attemptId);
      expect(after.ownerId).toBe("owner-a");
      expect(after.attemptCount).toBe(1);
    });

    test("ClaimRefusesNonHead", async ({ store, fx }) => {
      const key = fx.key();
      const a1 = await fx.admit(key);
      const a2 = await fx.admit(key);
      await expectCode(fx.claim(a2), "claim_lost", "claiming a queued submission behind a queued head");
      let stored = await store.getSubmission(a2.id);
      expect(stored.status, "the refused submission stays queued").toBe("queued");
      expect(stored.attemptCount, "a refused claim charges nothing").toBe(0);

      const claimed = await fx.claim(a1);
      await expectCode(fx.claim(a2), "claim_lost", "claiming a queued submission behind a running head");
      await store.waitSubmission({ submissionId: a1.id, attemptId: claimed.attemptId! });
      await expectCode(fx.claim(a2), "claim_lost", "claiming a queued submission behind a waiting head");

      await fx.cancelled(a1, "done");
      const a2claimed = await fx.claim(a2);
      expect(a2claimed.status, "once the head settles, the next one is claimable").toBe("running");
      stored = await store.getSubmission(a2.id);
      expect(stored.attemptCount).toBe(1);
    });
  });
}
