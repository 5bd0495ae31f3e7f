/**
 * Conformance cases of `listActivity`, the console's listing across agents and instances
 * (ADR 0054): newest activity first, paged by a cursor, filtered by agent, state and time. A
 * page may come back short (a store bounds what it reads), so the cases read every page.
 */
import { describe, expect } from "vitest";
import type { ActivityQuery } from "../activity.ts";
import type { Store } from "../store.ts";
import type { Submission } from "../submission.ts";
import { type CaseBody, ids } from "./case-context.ts";

type Register = (name: string, body: CaseBody) => void;

/** Every page of `query`, concatenated, checking each page's size and cursor. */
async function listAll(store: Store, query: Omit<ActivityQuery, "before">): Promise<Submission[]> {
  const all: Submission[] = [];
  let before: string | undefined;
  for (let pages = 0; pages < 100; pages++) {
    const page = await store.listActivity({ ...query, ...(before === undefined ? {} : { before }) });
    expect(page.submissions.length, "a page holds at most its limit").toBeLessThanOrEqual(query.limit);
    all.push(...page.submissions);
    if (page.next === undefined) return all;
    expect(page.next, "the cursor moves on").not.toBe(before);
    before = page.next;
  }
  throw new Error("listActivity: no last page after 100 pages");
}

export function activityCases(test: Register): void {
  describe("activity listing", () => {
    test("ActivityNewestFirstAcrossAgentsAndInstances", async ({ store, fx, clock }) => {
      const subs: Submission[] = [];
      for (const [agent, session] of [["alpha", "s1"], ["beta", "s2"], ["alpha", "s3"], ["gamma", "s4"], ["beta", "s5"]] as const) {
        await clock.advance(1_000);
        subs.push(await fx.admit(fx.key(session, agent)));
      }
      const [a, b, c, d, e] = subs as [Submission, Submission, Submission, Submission, Submission];
      expect(ids(await listAll(store, { limit: 10 })), "newest admission first").toEqual(ids([e, d, c, b, a]));

      await clock.advance(1_000);
      await fx.claim(b); // a transition is activity: b moves to the front
      const first = await store.listActivity({ limit: 2 });
      expect(ids(first.submissions), "the first page").toEqual(ids([b, e]));
      expect(first.next, "more to come").toBeDefined();
      expect(first.submissions[0], "rows as getSubmission returns them").toEqual(await store.getSubmission(b.id));
      expect(ids(await listAll(store, { limit: 2 })), "paged by 2").toEqual(ids([b, e, d, c, a]));
      expect(ids(await listAll(store, { limit: 1 })), "paged by 1").toEqual(ids([b, e, d, c, a]));
      expect(await store.listActivity({ limit: 5, before: "not a cursor" }), "a malformed cursor lists nothing").toEqual({ submissions: [] });
    });

    test("ActivityFilteredByAgentStateAndTime", async ({ store, fx, clock }) => {
      const t0 = clock.now();
      const queued = await fx.admit(fx.key("q", "alpha"));
      await clock.advance(1_000);
      const running = await fx.running(fx.key("r", "beta"));
      await clock.advance(1_000);
      const person = await fx.running(fx.key("p", "alpha"));
      await store.waitSubmission({
        submissionId: person.id,
        attemptId: person.attemptId!,
        pendingCalls: ["call-1"],
        waitingFor: [{ kind: "approval", callId: "call-1", toolName: "deploy", expiresAt: t0 + 60_000 }],
      });
      await clock.advance(1_000);
      const child = await fx.running(fx.key("c", "alpha"));
      await store.waitSubmission({ submissionId: child.id, attemptId: child.attemptId!, pendingCalls: ["task-1"], waitingFor: [{ kind: "child", callId: "task-1" }] });
      await clock.advance(1_000);
      const succeeded = await fx.running(fx.key("ok", "beta"));
      await store.reserveSettlement(succeeded.id, succeeded.attemptId!);
      await store.finalizeSettlement(succeeded.id, { status: "succeeded" });
      await clock.advance(1_000);
      const failed = await fx.running(fx.key("bad", "alpha"));
      await store.reserveSettlement(failed.id, failed.attemptId!);
      await store.finalizeSettlement(failed.id, { status: "failed", error: "boom", errorCode: "run_failed" });
      await clock.advance(1_000);
      const cancelled = await fx.cancelled(await fx.admit(fx.key("x", "beta")));
      const tEnd = clock.now();

      expect(ids(await listAll(store, { limit: 3 })), "everything, newest first").toEqual(
        ids([cancelled, failed, succeeded, child, person, running, queued]),
      );
      expect(ids(await listAll(store, { limit: 2, agent: "alpha" })), "agent=alpha").toEqual(ids([failed, child, person, queued]));
      expect(ids(await listAll(store, { limit: 2, agent: "nobody" })), "an unknown agent").toEqual([]);
      expect(ids(await listAll(store, { limit: 5, states: ["failed"] })), "failed, not cancelled").toEqual(ids([failed]));
      expect(ids(await listAll(store, { limit: 5, states: ["cancelled"] })), "cancelled").toEqual(ids([cancelled]));
      expect(ids(await listAll(store, { limit: 5, states: ["waiting_person"] })), "waiting for a person").toEqual(ids([person]));
      expect(ids(await listAll(store, { limit: 5, states: ["waiting_child"] })), "waiting for a child").toEqual(ids([child]));
      expect(ids(await listAll(store, { limit: 5, states: ["running", "queued"] })), "two states").toEqual(ids([running, queued]));
      expect(ids(await listAll(store, { limit: 5, states: ["succeeded"], agent: "beta" })), "state and agent").toEqual(ids([succeeded]));
      expect(ids(await listAll(store, { limit: 2, since: t0 + 2_000, until: t0 + 5_000 })), "since (inclusive) … until (exclusive)").toEqual(
        ids([succeeded, child, person]),
      );
      expect(ids(await listAll(store, { limit: 5, since: tEnd + 1 })), "nothing after the last activity").toEqual([]);
      expect(ids(await listAll(store, { limit: 5, until: t0 })), "nothing before the first").toEqual([]);
    });
  });
}
