/**
 * Conformance cases of attempts: markers, lease renewal and expiry, release (a continuation and
 * backpressure charge no attempt), two-phase settlement, and the bookkeeping every transition keeps
 * (updatedAt, copies returned) (spec §1.10.4).
 */
import { describe, expect } from "vitest";
import { type DispatchMessage, type Submission } from "../submission.ts";
import { type CaseBody, cancellation, expectCode, ids, LEASE_MS, tryMutate } from "./case-context.ts";

type Register = (name: string, body: CaseBody) => void;

export function attemptCases(test: Register): void {
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

    test("ReleaseStoresWhyItRetries", async ({ store, fx, clock }) => {
      // ADR 0053: the reason rides with the release, so any instance's view of the row says it.
      const sub = await fx.running();
      const notBefore = clock.now() + 30_000;
      const retry = { reason: "rate_limited" as const, status: 429 };
      await store.releaseSubmission({ submissionId: sub.id, attemptId: sub.attemptId!, lastError: "429 slow down", continuation: true, notBefore, retry });
      const stored = await store.getSubmission(sub.id);
      expect(stored.retry, "the release stores its reason").toEqual(retry);
      expect(stored.lastError).toBe("429 slow down");
      const listed = await store.listSessionSubmissions(sub.sessionKey, { limit: 5 });
      expect(listed.map((s) => s.retry), "the session's listing carries it").toEqual([retry]);

      const next = await fx.claim(sub);
      expect((await store.getSubmission(sub.id)).retry, "it survives the re-claim").toEqual(retry);
      await store.releaseSubmission({ submissionId: sub.id, attemptId: next.attemptId!, lastError: "getaddrinfo ENOTFOUND", retry: { reason: "unreachable" } });
      expect((await store.getSubmission(sub.id)).retry, "a later release's reason replaces it").toEqual({ reason: "unreachable" });

      const last = await fx.claim(sub);
      await store.releaseSubmission({ submissionId: sub.id, attemptId: last.attemptId!, continuation: true });
      expect((await store.getSubmission(sub.id)).retry, "a release without a reason clears it").toBeUndefined();
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
      const admitted = (await store.admitSubmission(candidate)).submission;
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
