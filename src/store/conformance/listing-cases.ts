/**
 * Conformance cases of `listSessionSubmissions`, the operator's view of one session: newest
 * first, paged by a cursor, filtered by status, and blind to every other session.
 */
import { describe, expect } from "vitest";
import { type CaseBody, expectCode, ids } from "./case-context.ts";

type Register = (name: string, body: CaseBody) => void;

export function listingCases(test: Register): void {
  describe("session listing", () => {
    test("SessionListingNewestFirstPaged", async ({ store, fx }) => {
      const key = fx.key();
      const admitted = [];
      for (let i = 0; i < 5; i++) admitted.push(await fx.admit(key));
      const newestFirst = ids(admitted).reverse();

      expect(ids(await store.listSessionSubmissions(key, { limit: 10 })), "every submission, newest first").toEqual(newestFirst);
      const first = await store.listSessionSubmissions(key, { limit: 2 });
      expect(ids(first), "the first page").toEqual(newestFirst.slice(0, 2));
      const second = await store.listSessionSubmissions(key, { limit: 2, before: first[1]!.id });
      expect(ids(second), "the page after the first page's last id").toEqual(newestFirst.slice(2, 4));
      const third = await store.listSessionSubmissions(key, { limit: 2, before: second[1]!.id });
      expect(ids(third), "the last page is short").toEqual(newestFirst.slice(4));
      expect(await store.listSessionSubmissions(key, { limit: 2, before: third[0]!.id }), "nothing before the oldest").toEqual([]);
      expect(first[0], "rows as getSubmission returns them").toEqual(await store.getSubmission(first[0]!.id));
    });

    test("SessionListingSettledAndStatusFilter", async ({ store, fx }) => {
      const key = fx.key();
      const done = await fx.admit(key);
      const claimed = await fx.claim(done);
      await store.reserveSettlement(done.id, claimed.attemptId!);
      await store.finalizeSettlement(done.id, { status: "succeeded" });
      const running = await fx.claim(await fx.admit(key));
      const queued = [await fx.admit(key), await fx.admit(key)];

      const all = await store.listSessionSubmissions(key, { limit: 10 });
      expect(ids(all), "settled submissions stay listed").toEqual([queued[1]!.id, queued[0]!.id, running.id, done.id]);
      expect(all.map((s) => s.status)).toEqual(["queued", "queued", "running", "settled"]);
      expect(all[3]!.outcome, "a settled row carries its outcome").toEqual({ status: "succeeded" });

      expect(ids(await store.listSessionSubmissions(key, { limit: 10, status: "settled" })), "status=settled").toEqual([done.id]);
      expect(ids(await store.listSessionSubmissions(key, { limit: 1, status: "queued" })), "status with a limit").toEqual([
        queued[1]!.id,
      ]);
      expect(
        ids(await store.listSessionSubmissions(key, { limit: 10, status: "queued", before: queued[1]!.id })),
        "status after a cursor",
      ).toEqual([queued[0]!.id]);
      expect(await store.listSessionSubmissions(key, { limit: 10, status: "waiting" }), "no waiting one").toEqual([]);
    });

    test("SessionListingScopedToItsSession", async ({ store, fx }) => {
      const key = fx.key("alpha");
      const sibling = { ...key, session: "beta" };
      const other = fx.key("alpha");
      const mine = await fx.admit(key);
      const theirs = await fx.admit(sibling);
      await fx.admit(other);
      expect(ids(await store.listSessionSubmissions(key, { limit: 10 })), "only the session's own").toEqual([mine.id]);
      expect(ids(await store.listSessionSubmissions(sibling, { limit: 10 }))).toEqual([theirs.id]);
      expect(await store.listSessionSubmissions(fx.key("never-used"), { limit: 10 }), "an unknown session lists nothing").toEqual([]);
      await expectCode(
        store.listSessionSubmissions(key, { limit: 10, before: theirs.id }),
        "submission_not_found",
        "a cursor from another session",
      );
      await expectCode(
        store.listSessionSubmissions(key, { limit: 10, before: "no-such-submission" }),
        "submission_not_found",
        "an unknown cursor",
      );
    });
  });
}
