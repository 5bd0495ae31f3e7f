import { describe, expect, it } from "vitest";
import { conversationCreatedDraft } from "../../../src/conversation/conversation-created.ts";
import { AttemptLogWriter } from "../../../src/engine/log-writer.ts";
import { ClaimLost, isHarnessError } from "../../../src/errors.ts";
import { ManualClock } from "../../../src/ports/clock.ts";
import type { ClaimStore, LogStore } from "../../../src/store/store.ts";
import type { SessionKey, Submission } from "../../../src/store/submission.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";

const KEY: SessionKey = { agent: "assistant", instance: "w", session: "default" };

/** A conversation with one claimed submission, over a memory store; its writer is `att-1`'s. */
async function claimed(options: { created?: boolean } = {}) {
  const clock = new ManualClock();
  clock.set(Date.UTC(2026, 0, 1));
  const store = createMemoryStore({ clock });
  const { conversation } = await store.ensureConversation({ id: "conv-1", key: KEY, createdAt: clock.now() });
  if (options.created !== false) {
    await store.appendRecords(conversation.id, [conversationCreatedDraft(conversation.id, KEY, new Date(clock.now()).toISOString())]);
  }
  await store.admitSubmission({ id: "s1", conversationId: conversation.id, sessionKey: KEY, input: { kind: "user", body: "hi" }, createdAt: clock.now() });
  const sub: Submission = await store.claimSubmission({ submissionId: "s1", attemptId: "att-1", ownerId: "o", leaseExpiresAt: clock.now() + 30_000 });
  return { clock, store, sub, log: new AttemptLogWriter(store, clock, sub, "att-1") };
}

describe("the attempt's log writer", () => {
  it("stamps drafts with the attempt's envelope and tracks the record head across appends and drains", async () => {
    const { store, log } = await claimed();
    expect(log.recordHead).toBeUndefined();
    const before = await log.read();
    expect(log.recordHead).toBe(before.at(-1)!.id);
    const draft = log.draft("user_message", { body: "hi" }, "turn-1");
    expect(draft).toEqual({
      kind: "user_message",
      conversationId: "conv-1",
      session: "default",
      submissionId: "s1",
      attemptId: "att-1",
      turnId: "turn-1",
      time: "2026-01-01T00:00:00.000Z",
      payload: { body: "hi" },
    });
    const [appended] = await log.append([draft]);
    expect(log.recordHead).toBe(appended!.id);
    await store.enqueueInbox(KEY, { kind: "steer", body: "shorter" });
    const [steer] = await log.drain(["steer"]);
    expect(steer).toMatchObject({ kind: "user_message", attemptId: "att-1", payload: { body: "shorter", origin: "steer" } });
    expect(log.recordHead).toBe(steer!.id);
    expect(log.correlation).toEqual({ sessionKey: KEY, conversationId: "conv-1", submissionId: "s1", attemptId: "att-1" });
  });

  it("writes conversation_created first into an empty log, once, and hands back only the caller's records", async () => {
    const { store, log } = await claimed({ created: false });
    expect(await log.read()).toEqual([]);
    expect(log.recordHead).toBe("");
    const appended = await log.append([log.draft("user_message", { body: "hi" })]);
    expect(appended.map((r) => r.kind)).toEqual(["user_message"]);
    await log.append([log.draft("user_message", { body: "again" })]);
    const all = await store.readRecords("conv-1");
    expect(all.map((r) => r.kind)).toEqual(["conversation_created", "user_message", "user_message"]);
    expect(all[0]).toMatchObject({ payload: { agent: "assistant", instance: "w", session: "default" } });
  });

  it("serializes concurrent appends in call order (each conditional on the head the previous one left)", async () => {
    const { store, log } = await claimed();
    await log.read();
    const bodies = ["a", "b", "c", "d", "e"];
    await Promise.all(bodies.map((body) => log.append([log.draft("user_message", { body })])));
    const records = await store.readRecords("conv-1");
    expect(records.filter((r) => r.kind === "user_message").map((r) => r.kind === "user_message" && r.payload.body)).toEqual(bodies);
  });

  it("a lost fence is ClaimLost, and so is an append after a head it does not know", async () => {
    const { store, clock, log, sub } = await claimed();
    await log.read();
    // Someone else appended: the head this attempt knows is stale.
    const other = new AttemptLogWriter(store, clock, sub, "att-1");
    await other.read();
    await other.append([other.draft("user_message", { body: "other" })]);
    await expect(log.append([log.draft("user_message", { body: "stale" })])).rejects.toBeInstanceOf(ClaimLost);
    // The lease moved to another attempt.
    await clock.advance(31_000);
    await store.releaseSubmission({ submissionId: "s1", attemptId: "att-1" });
    await store.claimSubmission({ submissionId: "s1", attemptId: "att-2", ownerId: "o", leaseExpiresAt: clock.now() + 30_000 });
    await log.read();
    await expect(log.append([log.draft("user_message", { body: "late" })])).rejects.toBeInstanceOf(ClaimLost);
    await expect(log.drain(["steer"])).rejects.toBeInstanceOf(ClaimLost);
  });

  it("any other store error is StoreFailure, after which the head is unknown and appends follow whatever is there", async () => {
    const { store, clock, sub } = await claimed();
    let failNext = true;
    const flaky: LogStore & Pick<ClaimStore, "getSubmission"> = {
      readRecords: (...args) => store.readRecords(...args),
      readCheckpoint: (...args) => store.readCheckpoint(...args),
      writeCheckpoint: (...args) => store.writeCheckpoint(...args),
      drainInbox: (request) => store.drainInbox(request),
      getSubmission: (id) => store.getSubmission(id),
      appendRecords: async (...args) => {
        const out = await store.appendRecords(...args);
        if (failNext) {
          failNext = false;
          throw new Error("socket hang up"); // the write landed, the response was lost
        }
        return out;
      },
    };
    const log = new AttemptLogWriter(flaky, clock, sub, "att-1");
    await log.read();
    const err = await log.append([log.draft("user_message", { body: "landed" })]).catch((e: unknown) => e);
    expect(isHarnessError(err, "store_failure")).toBe(true);
    expect((err as Error).message).toBe("store error: socket hang up");
    expect(log.recordHead).toBeUndefined();
    const [next] = await log.append([log.draft("user_message", { body: "next" })]);
    expect(log.recordHead).toBe(next!.id);
    const failingRead = new AttemptLogWriter({ ...flaky, readRecords: () => Promise.reject(new Error("throttled")) }, clock, sub, "att-1");
    await expect(failingRead.read()).rejects.toMatchObject({ code: "store_failure" });
  });

  it("a settled record on the record head is refused once another recoverer wrote first; the store refuses a second one anyway", async () => {
    const { store, clock, sub } = await claimed();
    const a = new AttemptLogWriter(store, clock, sub, "att-1");
    const b = new AttemptLogWriter(store, clock, sub, "att-1");
    await a.read();
    await b.read();
    await b.appendSettled({ status: "failed", error: "x" }, { onRecordHead: true });
    await expect(a.appendSettled({ status: "failed", error: "y" }, { onRecordHead: true })).rejects.toBeInstanceOf(ClaimLost);
    await expect(a.appendSettled({ status: "succeeded" })).rejects.toBeInstanceOf(ClaimLost);
    const settled = (await store.readRecords("conv-1")).filter((r) => r.kind === "submission_settled" && r.submissionId === "s1");
    expect(settled).toHaveLength(1);
  });

  it("a settlement that may precede any drive opens an empty log with conversation_created (mayOpenLog)", async () => {
    const { store, clock, sub } = await claimed({ created: false });
    const log = new AttemptLogWriter(store, clock, sub, "att-1");
    await log.appendSettled({ status: "failed", error: "initializer failed" }, { mayOpenLog: true });
    expect((await store.readRecords("conv-1")).map((r) => r.kind)).toEqual(["conversation_created", "submission_settled"]);
  });
});
