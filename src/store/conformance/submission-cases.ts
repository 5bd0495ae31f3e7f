/**
 * Conformance cases of the SubmissionStore: admission, head-of-line, claim/lease/release,
 * wait/resume, settlement, cancel (spec §1.10.1, §1.10.4 cases 1–15) and the seed semantics of
 * `pendingResume`.
 */
import { describe, expect } from "vitest";
import { newId } from "../../conversation/ids.ts";
import { cancelledOutcome, type DispatchMessage, type Submission } from "../submission.ts";
import { type CaseBody, cancellation, expectCode, ids, LEASE_MS, sortedIds, tryMutate } from "./case-context.ts";

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
      const again = await replay();
      expect(again.id, "replay returns the same submission").toBe(first.id);
      expect(again.status, "replay status").toBe("queued");
      expect(again.createdAt, "replay returns the stored row, not the new candidate").toBe(first.createdAt);

      const claimed = await fx.claim(first);
      const afterClaim = await replay();
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

    test("AdmissionCreatesTheConversationWithTheSubmission", async ({ store, clock, fx }) => {
      const key = fx.key();
      await expectCode(store.getConversation(key), "conversation_not_found", "before the first admission");
      const candidate = newId(clock.now());
      const first = await store.admitSubmission({ id: fx.id(), conversationId: candidate, sessionKey: key, input: { kind: "user", body: "one" }, createdAt: clock.now() });
      expect(first.conversationId, "the first admission's candidate becomes the conversation").toBe(candidate);
      const conversation = await store.getConversation(key);
      expect(conversation).toMatchObject({ id: candidate, key, createdAt: first.createdAt });
      const second = await store.admitSubmission({ id: fx.id(), conversationId: newId(clock.now()), sessionKey: key, input: { kind: "user", body: "two" }, createdAt: clock.now() });
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
      const replay = await store.admitSubmission({
        id: first.id,
        conversationId: first.conversationId,
        sessionKey: key,
        input: structuredClone(base),
        createdAt: first.createdAt,
      });
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

  describe("attempts and leases", () => {
    test("AttemptMarkers", async ({ store, clock, fx }) => {
      const sub = await fx.admit(fx.key());
      const c1 = await fx.claim(sub);
      const m1 = { id: c1.attemptId!, submissionId: sub.id, ownerId: "owner-1", startedAt: clock.now() };
      await store.startAttempt(m1);
      await store.releaseSubmission({ submissionId: sub.id, attemptId: c1.attemptId!, lastError: "x" });
      await clock.advance(10);
      const c2 = await fx.claim(sub);
      const m2 = { id: c2.attemptId!, submissionId: sub.id, ownerId: "owner-2", startedAt: clock.now() };
      await store.startAttempt(m2);
      const other = await fx.running();
      await store.startAttempt({ id: other.attemptId!, submissionId: other.id, ownerId: "o", startedAt: clock.now() });

      expect(await store.listAttempts(sub.id), "markers in start order").toEqual([m1, m2]);
      expect(await store.listAttempts("no-such-submission"), "no markers for an unknown id").toEqual([]);
    });

    test("LeaseRenewAndExpiry", async ({ store, clock, fx }) => {
      const sub = await fx.running();
      const lease = sub.leaseExpiresAt!;
      expect(ids(await store.listExpiredLeases(clock.now())), "not expired before the lease").toEqual([]);
      expect(ids(await store.listExpiredLeases(lease + 1)), "expired after the lease").toEqual([sub.id]);

      await store.renewLease({ submissionId: sub.id, attemptId: sub.attemptId!, leaseExpiresAt: lease + LEASE_MS });
      expect((await store.getSubmission(sub.id)).leaseExpiresAt, "renew stores the new lease").toBe(lease + LEASE_MS);
      expect(ids(await store.listExpiredLeases(lease + 1)), "renewal pushes expiry out").toEqual([]);
      expect(ids(await store.listExpiredLeases(lease + LEASE_MS + 1))).toEqual([sub.id]);

      await expectCode(
        store.renewLease({ submissionId: sub.id, attemptId: "stale-attempt", leaseExpiresAt: lease + 10 * LEASE_MS }),
        "claim_lost",
        "renewing under another attempt id",
      );
      expect((await store.getSubmission(sub.id)).leaseExpiresAt, "a stale renew changes nothing").toBe(lease + LEASE_MS);

      await store.releaseSubmission({ submissionId: sub.id, attemptId: sub.attemptId! });
      await expectCode(
        store.renewLease({ submissionId: sub.id, attemptId: sub.attemptId!, leaseExpiresAt: lease + 10 * LEASE_MS }),
        "claim_lost",
        "renewing a released (queued) submission",
      );
    });

    test("LeaseExpiryBoundary", async ({ store, clock, fx }) => {
      const sub = await fx.running();
      const lease = sub.leaseExpiresAt!;
      expect(ids(await store.listExpiredLeases(lease - 1)), "one ms before the lease").toEqual([]);
      expect(ids(await store.listExpiredLeases(lease)), "a lease expiring exactly at now is expired").toEqual([sub.id]);

      await fx.admit(fx.key());
      await fx.waiting(clock.now() + 1_000);
      const far = clock.now() + 1_000 * LEASE_MS;
      expect(ids(await store.listExpiredLeases(far)), "queued and waiting rows hold no lease").toEqual([sub.id]);
    });

    test("ReleaseSubmission", async ({ store, fx }) => {
      const sub = await fx.running();
      await expectCode(
        store.releaseSubmission({ submissionId: sub.id, attemptId: "stale-attempt", lastError: "nope" }),
        "claim_lost",
        "releasing under another attempt id",
      );
      await store.releaseSubmission({ submissionId: sub.id, attemptId: sub.attemptId!, lastError: "model exploded" });
      let stored = await store.getSubmission(sub.id);
      expect(stored.status, "release → queued").toBe("queued");
      expect(stored.lastError).toBe("model exploded");
      expect(stored.attemptCount, "release preserves the attempt count").toBe(1);
      expect(stored.pendingResume, "a plain release is not a continuation").toBe(false);
      await expectCode(
        store.releaseSubmission({ submissionId: sub.id, attemptId: sub.attemptId! }),
        "claim_lost",
        "releasing a submission that is already queued",
      );

      const again = await fx.claim(sub);
      expect(again.attemptCount, "re-claim after a failure release charges an attempt").toBe(2);
      expect(again.lastError, "lastError survives the re-claim").toBe("model exploded");

      await store.releaseSubmission({ submissionId: sub.id, attemptId: again.attemptId! });
      stored = await store.getSubmission(sub.id);
      expect(stored.lastError, "an error-less release keeps lastError").toBe("model exploded");
      const third = await fx.claim(sub);
      await store.releaseSubmission({ submissionId: sub.id, attemptId: third.attemptId!, lastError: "" });
      stored = await store.getSubmission(sub.id);
      expect(stored.lastError, "an empty lastError keeps the stored one").toBe("model exploded");
    });

    test("ContinuationReleaseChargesNoAttempt", async ({ store, fx }) => {
      const sub = await fx.running();
      await store.releaseSubmission({ submissionId: sub.id, attemptId: sub.attemptId!, continuation: true });
      let stored = await store.getSubmission(sub.id);
      expect(stored.status).toBe("queued");
      expect(stored.pendingResume, "a continuation release sets pendingResume").toBe(true);
      expect(stored.attemptCount).toBe(1);

      const next = await fx.claim(sub);
      expect(next.attemptCount, "the claim after a continuation charges no attempt").toBe(1);
      expect(next.pendingResume, "the claimed row carries pendingResume").toBe(true);
      stored = await store.getSubmission(sub.id);
      expect(stored.pendingResume, "the stored row clears pendingResume").toBe(false);
      expect(stored.attemptCount).toBe(1);

      await store.releaseSubmission({ submissionId: sub.id, attemptId: next.attemptId!, lastError: "boom" });
      const failed = await fx.claim(sub);
      expect(failed.attemptCount, "a failure release afterwards charges again").toBe(2);
      expect(failed.pendingResume).toBe(false);
    });

    test("BackpressureReleaseStoresNotBefore", async ({ store, fx, clock }) => {
      const sub = await fx.running();
      const notBefore = clock.now() + 40_000;
      await store.releaseSubmission({ submissionId: sub.id, attemptId: sub.attemptId!, lastError: "429 rate limited", continuation: true, notBefore });
      const stored = await store.getSubmission(sub.id);
      expect(stored.status).toBe("queued");
      expect(stored.notBefore, "the release stores notBefore").toBe(notBefore);
      expect(stored.pendingResume, "backpressure charges no attempt").toBe(true);
      expect((await store.listRunnable()).map((s) => s.notBefore), "listings carry it").toEqual([notBefore]);

      const next = await fx.claim(sub);
      expect(next.attemptCount).toBe(1);
      await store.releaseSubmission({ submissionId: sub.id, attemptId: next.attemptId!, lastError: "500" });
      expect((await store.getSubmission(sub.id)).notBefore, "a release without notBefore clears it").toBeUndefined();
    });
  });

  describe("settlement", () => {
    test("SettlementPhases", async ({ store, fx }) => {
      const key = fx.key();
      const a1 = await fx.admit(key);
      const a2 = await fx.admit(key);
      const claimed = await fx.claim(a1);
      await expectCode(store.reserveSettlement(a1.id, "stale-attempt"), "claim_lost", "reserving under another attempt id");
      await store.reserveSettlement(a1.id, claimed.attemptId!);
      expect((await store.getSubmission(a1.id)).status, "reserve → terminalizing").toBe("terminalizing");
      expect(await store.listRunnable(), "a terminalizing head still blocks its session").toEqual([]);
      await expectCode(store.reserveSettlement(a1.id, claimed.attemptId!), "claim_lost", "a second reserve");
      await expectCode(store.reserveSettlement(a2.id, "any"), "claim_lost", "reserving a queued submission");

      await store.finalizeSettlement(a1.id);
      expect((await store.getSubmission(a1.id)).status, "finalize → settled").toBe("settled");
      expect(ids(await store.listRunnable()), "a settled head frees the session").toEqual([a2.id]);
    });

    test("FinalizeIdempotent", async ({ store, fx }) => {
      const sub = await fx.running();
      await store.reserveSettlement(sub.id, sub.attemptId!);
      await store.finalizeSettlement(sub.id);
      await store.finalizeSettlement(sub.id);
      expect((await store.getSubmission(sub.id)).status).toBe("settled");
      const queued = await fx.admit(fx.key());
      await expectCode(store.finalizeSettlement(queued.id), "claim_lost", "finalizing a queued (unreserved) submission");
      expect((await store.getSubmission(queued.id)).status).toBe("queued");
    });
  });

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

  describe("bookkeeping", () => {
    test("UpdatedAtMovesOnTransitions", async ({ store, clock, fx }) => {
      const sub = await fx.admit(fx.key());
      const step = async (what: string, act: () => Promise<unknown>) => {
        const before = (await store.getSubmission(sub.id)).updatedAt;
        await clock.advance(1_000);
        await act();
        const after = (await store.getSubmission(sub.id)).updatedAt;
        expect(after, `updatedAt after ${what} is the store clock's now`).toBe(clock.now());
        expect(after, `updatedAt moves forward on ${what}`).toBeGreaterThan(before);
      };
      let claim!: Submission;
      await step("claim", async () => (claim = await fx.claim(sub)));
      await step("release", () => store.releaseSubmission({ submissionId: sub.id, attemptId: claim.attemptId! }));
      await step("claim after release", async () => (claim = await fx.claim(sub)));
      await step("wait", () => store.waitSubmission({ submissionId: sub.id, attemptId: claim.attemptId! }));
      await step("resume", () => store.resumeSubmission(sub.id));
      await step("resume claim", async () => (claim = await fx.claim(sub)));
      await step("reserve", () => store.reserveSettlement(sub.id, claim.attemptId!));
      await step("finalize", () => store.finalizeSettlement(sub.id));

      const other = await fx.admit(fx.key());
      await clock.advance(1_000);
      await store.cancelSubmission(other.id, cancellation("bye"));
      expect((await store.getSubmission(other.id)).updatedAt, "updatedAt after cancel").toBe(clock.now());
    });

    test("ReturnedSubmissionsAreCopies", async ({ store, fx }) => {
      const key = fx.key();
      const conversationId = await fx.conversation(key);
      const input: DispatchMessage = {
        kind: "signal",
        body: "original",
        signal: { type: "comment", sender: { id: "u1" } },
        attachments: [{ digest: `sha256:${"e".repeat(64)}`, mediaType: "text/plain", size: 1 }],
        resultSchema: { type: "object" },
      };
      const candidate = { id: fx.id(), conversationId, sessionKey: key, input, createdAt: fx.clock.now() };
      const admitted = await store.admitSubmission(candidate);
      const snapshot = structuredClone(await store.getSubmission(admitted.id));

      // The caller's objects, mutated after admission.
      input.body = "changed";
      input.signal!.sender!.id = "u2";
      input.attachments![0]!.size = 99;
      (input.resultSchema as { type: string }).type = "string";
      key.session = "changed";

      const mutateRow = (row: Submission) => {
        tryMutate(() => (row.status = "settled"));
        tryMutate(() => (row.attemptCount = 42));
        tryMutate(() => (row.input.body = "mutated"));
        tryMutate(() => (row.input.signal!.sender!.id = "mutated"));
        tryMutate(() => (row.input.attachments![0]!.size = 77));
        tryMutate(() => (row.sessionKey.instance = "mutated"));
      };
      mutateRow(admitted);
      mutateRow(await store.getSubmission(admitted.id));
      for (const row of await store.listRunnable()) mutateRow(row);
      for (const row of await store.listByStatus("queued")) mutateRow(row);
      expect(await store.getSubmission(admitted.id), "stored row after mutating returned copies").toEqual(snapshot);

      const claimed = await fx.claim(admitted);
      const runningSnapshot = structuredClone(await store.getSubmission(admitted.id));
      mutateRow(claimed);
      tryMutate(() => (claimed.attemptId = "mutated"));
      for (const row of await store.listByStatus("running")) mutateRow(row);
      for (const row of await store.listExpiredLeases(Number.MAX_SAFE_INTEGER)) mutateRow(row);
      expect(await store.getSubmission(admitted.id), "stored row after mutating the claimed copy").toEqual(runningSnapshot);

      const attempt = { id: claimed.attemptId!, submissionId: admitted.id, ownerId: "o", startedAt: 1 };
      await store.startAttempt(attempt);
      attempt.ownerId = "mutated";
      const [listed] = await store.listAttempts(admitted.id);
      tryMutate(() => (listed!.startedAt = 2));
      expect(await store.listAttempts(admitted.id), "attempt markers are copies").toEqual([
        { id: claimed.attemptId!, submissionId: admitted.id, ownerId: "o", startedAt: 1 },
      ]);
    });
  });
}
