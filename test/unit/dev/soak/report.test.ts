import { describe, expect, it } from "vitest";
import { drainMsOf } from "../../../../dev/soak/report.ts";
import { createMemoryStore } from "../../../../src/memory/index.ts";
import { ManualClock } from "../../../../src/ports/clock.ts";

describe("drainMsOf", () => {
  it("is the time from the load's end to the last settlement of an acknowledged submission (0 when all settled before)", async () => {
    const clock = new ManualClock();
    const store = createMemoryStore({ clock });
    const key = { agent: "a", instance: "i", session: "default" };
    const admit = (id: string) => store.admitSubmission({ id, conversationId: "c", sessionKey: key, input: { kind: "user", body: id }, createdAt: clock.now() });
    const settle = async (id: string) => {
      await store.claimSubmission({ submissionId: id, attemptId: `at-${id}`, ownerId: "o", leaseExpiresAt: clock.now() + 30_000 });
      await store.reserveSettlement(id, `at-${id}`, { outcome: { status: "succeeded" } });
      await store.finalizeSettlement(id);
    };
    await admit("s1");
    await admit("s2");
    await clock.advance(1_000);
    await settle("s1");
    const loadEndedAt = clock.now();
    const sessions = [{ key: "a/i/default", acknowledged: ["s1", "s2"], log: [], live: [] }];
    expect(await drainMsOf(store, sessions, loadEndedAt), "s2 still queued").toBe(0);
    await clock.advance(4_500);
    await settle("s2");
    expect(await drainMsOf(store, sessions, loadEndedAt)).toBe(4_500);
  });
});
