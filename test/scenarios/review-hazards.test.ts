import { describe, expect, it } from "vitest";
import type { ConversationRecord } from "../../src/protocol/records.ts";
import { ClaimLost } from "../../src/errors.ts";
import { ManualClock } from "../../src/ports/clock.ts";
import type { Doorbell, WorkQueue } from "../../src/ports/queue.ts";
import type { Store } from "../../src/store/store.ts";
import { sessionKeyString } from "../../src/store/submission.ts";
import { createRuntime } from "../../src/runtime/runtime.ts";
import { createMemoryStore } from "../../src/memory/index.ts";
import { allRecords, scriptedAgent, settleTicks, startTestServer } from "../support/runtime-kit.ts";

const user = (body: string) => ({ kind: "user" as const, body });
const settledRecords = (records: ConversationRecord[], submissionId: string) =>
  records.filter((r) => r.kind === "submission_settled" && r.submissionId === submissionId);

/** The store with some methods overridden (the rest bound to the real store). */
function overriding(store: Store, overrides: Partial<Store>): Store {
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop in overrides) return (overrides as Record<string | symbol, unknown>)[prop];
      const value = Reflect.get(target, prop, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

describe("review: settlement exactly once under concurrent recovery", () => {
  it("two recoverers of one crashed settlement (sweep and a redelivered doorbell) record it once", async () => {
    const clock = new ManualClock();
    const store = createMemoryStore({ clock });
    const rings: Doorbell[] = [];
    const queue: WorkQueue = { ring: async (d) => void rings.push(d) };
    const { definition } = scriptedAgent([]);
    const runtime = createRuntime({ agents: { assistant: definition }, store, queue, clock, leaseMs: 30_000 });
    const { submissionId, conversationId } = await runtime.dispatch({ agent: "assistant", instance: "w", message: user("hi") });
    const claimed = await store.claimSubmission({ submissionId, attemptId: "a1", ownerId: "dead", leaseExpiresAt: clock.now() + 30_000 });
    await store.reserveSettlement(submissionId, claimed.attemptId!);
    await clock.advance(31_000); // past the settlement grace: the settler is presumed dead

    const doorbell = { submissionId, group: sessionKeyString(claimed.sessionKey) };
    await Promise.all([runtime.sweep(), runtime.handleDoorbell(doorbell)]);

    expect((await store.getSubmission(submissionId)).status).toBe("settled");
    expect(settledRecords(await allRecords(store, conversationId), submissionId)).toHaveLength(1);
  });
});

describe("review: a released submission is rung again (not left to the sweep)", () => {
  it("a store failure while settling releases the run and rings it, so a fresh attempt settles it", async () => {
    const { definition } = scriptedAgent([[{ text: "done" }]]);
    const clock = new ManualClock();
    const base = createMemoryStore({ clock });
    let failures = 1;
    const store = overriding(base, {
      reserveSettlement: async (...args) => {
        if (failures-- > 0) throw new Error("store unavailable");
        return base.reserveSettlement(...args);
      },
    });
    const h = await startTestServer({ agents: { assistant: definition }, clock, store });
    const { submissionId, conversationId } = await h.runtime.dispatch({ agent: "assistant", instance: "w", message: user("go") });
    // No clock movement: the periodic sweep never runs, so only a ring can bring the run back.
    await settleTicks(100);
    const sub = await h.store.getSubmission(submissionId);
    expect(sub.status).toBe("settled");
    expect(sub.attemptCount).toBe(2);
    expect(settledRecords(await allRecords(h.store, conversationId), submissionId)).toHaveLength(1);
    await h.runtime.close();
  });

  it("an append refused while the lease is still held releases the run and rings it", async () => {
    const { definition } = scriptedAgent([[{ text: "first" }], [{ text: "second" }]]);
    const clock = new ManualClock();
    const base = createMemoryStore({ clock });
    let refusals = 1;
    const store = overriding(base, {
      appendRecords: async (conversationId, drafts, options) => {
        if (options?.fence && drafts.some((d) => d.kind === "assistant_message_completed") && refusals-- > 0) {
          throw new ClaimLost("head moved");
        }
        return base.appendRecords(conversationId, drafts, options);
      },
    });
    const h = await startTestServer({ agents: { assistant: definition }, clock, store });
    const { submissionId } = await h.runtime.dispatch({ agent: "assistant", instance: "w", message: user("go") });
    await settleTicks(100);
    const sub = await h.store.getSubmission(submissionId);
    expect(sub.status).toBe("settled");
    await h.runtime.close();
  });
});

describe("review: every conversation starts with conversation_created", () => {
  it("a retried dispatch whose first try failed to write it gets it from the first attempt, once", async () => {
    const { definition } = scriptedAgent([[{ text: "hello" }]]);
    const clock = new ManualClock();
    const base = createMemoryStore({ clock });
    let failures = 1;
    const store = overriding(base, {
      appendRecords: async (conversationId, drafts, options) => {
        if (drafts[0]?.kind === "conversation_created" && drafts.length === 1 && failures-- > 0) throw new Error("store unavailable");
        return base.appendRecords(conversationId, drafts, options);
      },
    });
    const h = await startTestServer({ agents: { assistant: definition }, clock, store });
    const request = { agent: "assistant", instance: "w", dispatchId: "d-1", message: user("go") };
    await expect(h.runtime.dispatch(request), "the first try fails after creating the conversation").rejects.toThrow("store unavailable");
    const { submissionId, conversationId } = await h.runtime.dispatch(request);
    expect((await h.runtime.wait(submissionId)).status).toBe("succeeded");
    const records = await allRecords(h.store, conversationId);
    expect(records[0]?.kind, "the log's first record").toBe("conversation_created");
    expect(records[0]?.payload).toEqual({ agent: "assistant", instance: "w", session: "default" });
    expect(records.filter((r) => r.kind === "conversation_created")).toHaveLength(1);
    expect(records.map((r) => r.kind).slice(1, 2)).toEqual(["user_message"]);
    await h.runtime.close();
  });

  it("a conversation created normally has it once, written by the admission", async () => {
    const { definition } = scriptedAgent([[{ text: "one" }], [{ text: "two" }]]);
    const h = await startTestServer({ agents: { assistant: definition } });
    for (const body of ["a", "b"]) {
      const { submissionId } = await h.runtime.dispatch({ agent: "assistant", instance: "w", message: user(body) });
      expect((await h.runtime.wait(submissionId)).status).toBe("succeeded");
    }
    const conversation = await h.runtime.conversation({ agent: "assistant", instance: "w", session: "default" });
    const records = await allRecords(h.store, conversation.id);
    expect(records.filter((r) => r.kind === "conversation_created").map((r) => r.id)).toEqual([records[0]!.id]);
    expect(records[0]!.submissionId, "written by the admission, not an attempt").toBeUndefined();
    await h.runtime.close();
  });
});
