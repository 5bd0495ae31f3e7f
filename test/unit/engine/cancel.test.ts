/**
 * Cancel in the embedded shape (issue 9): a queued, a running (mid-stream) and a waiting
 * submission; idempotency and refusals; a canceller that dies after the store reserved the
 * settlement. Every case checks the log (streams see the settlement) and that the session's
 * next submission runs.
 */
import { describe, expect, it } from "vitest";
import type { ConversationRecord } from "../../../src/protocol/records.ts";
import { createRuntime } from "../../../src/runtime/runtime.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";
import { ManualClock } from "../../../src/ports/clock.ts";
import { allRecords, scriptedAgent, settleTicks, startTestServer } from "../../support/runtime-kit.ts";

const user = (body: string) => ({ kind: "user" as const, body });
const at = { agent: "assistant", instance: "w" };
const settledOf = (records: ConversationRecord[], submissionId: string) =>
  records.filter((r) => r.kind === "submission_settled" && r.submissionId === submissionId).map((r) => r.payload);
const byRequest = (reason = "cancelled by request") => ({ status: "failed", error: `cancelled: ${reason}`, errorCode: "cancelled" });

describe("cancel (embedded)", () => {
  it("a queued head settles failed/cancelled at once, with its record; wait and the log see it", async () => {
    const clock = new ManualClock();
    const store = createMemoryStore({ clock });
    const { definition } = scriptedAgent([[{ text: "never" }]]);
    // Not started: nothing consumes the queue, so the submission stays queued.
    const runtime = createRuntime({ agents: { assistant: definition }, store, clock });
    const { submissionId, conversationId } = await runtime.dispatch({ ...at, message: user("hi") });
    const answer = await runtime.cancel(submissionId, "changed my mind", at);
    expect(answer).toEqual({ submissionId, status: "cancelled", outcome: byRequest("changed my mind") });
    expect((await store.getSubmission(submissionId)).status).toBe("settled");
    expect(await runtime.wait(submissionId)).toEqual(byRequest("changed my mind"));
    const records = await allRecords(store, conversationId);
    expect(records.map((r) => r.kind)).toEqual(["conversation_created", "submission_settled"]);
    expect(settledOf(records, submissionId)).toEqual([byRequest("changed my mind")]);
    // Idempotent; the first reason stays.
    expect(await runtime.cancel(submissionId, "again", at)).toEqual(answer);
    expect(settledOf(await allRecords(store, conversationId), submissionId)).toHaveLength(1);
    await runtime.close();
  });

  it("a running submission stops mid-stream, keeps its partial output, settles cancelled; the queued one behind it (cancelled too) follows in order; the next runs", async () => {
    let streaming!: () => void;
    const streamingNow = new Promise<void>((resolve) => (streaming = resolve));
    const { definition, scripted } = scriptedAgent([
      [{ text: "partial answer " }, { emit: () => streaming() }, { hang: "honest" }],
      [{ text: "third runs" }],
    ]);
    const h = await startTestServer({ agents: { assistant: definition } });
    const first = await h.runtime.dispatch({ ...at, message: user("long one") });
    await streamingNow;
    const second = await h.runtime.dispatch({ ...at, message: user("behind") });
    // Behind the head: reserved at once, its record waits for its turn.
    expect(await h.runtime.cancel(second.submissionId, undefined, at)).toEqual({ submissionId: second.submissionId, status: "cancelled", outcome: byRequest() });
    const secondWait = h.runtime.wait(second.submissionId);
    const firstWait = h.runtime.wait(first.submissionId);

    expect(await h.runtime.cancel(first.submissionId, "user pressed stop", at)).toEqual({ submissionId: first.submissionId, status: "cancelling" });
    // The attempt runs here: it renews at once and learns of the cancel (no lease period passes).
    expect(await firstWait).toMatchObject(byRequest("user pressed stop"));
    expect(await secondWait).toEqual(byRequest());
    const third = await h.runtime.dispatch({ ...at, message: user("next") });
    expect(await h.runtime.wait(third.submissionId)).toMatchObject({ status: "succeeded" });

    const records = await allRecords(h.store, first.conversationId);
    const kinds = records.map((r) => `${r.kind}:${r.submissionId === first.submissionId ? 1 : r.submissionId === second.submissionId ? 2 : 3}`);
    expect(kinds.filter((k) => k.startsWith("submission_settled"))).toEqual(["submission_settled:1", "submission_settled:2", "submission_settled:3"]);
    const firstText = records.filter((r) => r.submissionId === first.submissionId && r.kind === "assistant_text_delta").map((r) => (r.payload as { text: string }).text).join("");
    expect(firstText, "the partial output stays in the log").toBe("partial answer ");
    const ended = records.find((r) => r.submissionId === first.submissionId && r.kind === "assistant_message_completed");
    expect(ended, "the in-flight turn is recorded truthfully (an aborted message)").toBeDefined();
    expect(JSON.stringify(ended!.payload)).toContain('"stopReason":"aborted"');
    expect(records.filter((r) => r.submissionId === second.submissionId).map((r) => r.kind), "the cancelled-behind one never ran").toEqual(["submission_settled"]);
    expect(scripted.calls).toHaveLength(2);
    expect((await h.store.getSubmission(first.submissionId)).attemptCount).toBe(1);
    // A settled submission cancels no more: 409 already_settled.
    await expect(h.runtime.cancel(third.submissionId, undefined, at)).rejects.toMatchObject({ code: "already_settled" });
    // Again for the cancelled running one: cancelled.
    expect((await h.runtime.cancel(first.submissionId, undefined, at)).status).toBe("cancelled");
    await h.runtime.close();
  });

  it("a waiting submission settles at once and the session's next one runs", async () => {
    const { definition } = scriptedAgent([[{ text: "after the wait" }]]);
    const h = await startTestServer({ agents: { assistant: definition } });
    await h.runtime.close();
    // A parent parked on its children (what a subagent run leaves), built through the store.
    const { conversation } = await h.store.ensureConversation({ id: "conv-w", key: { ...at, session: "default" }, createdAt: h.clock.now() });
    await h.store.admitSubmission({ id: "parent", conversationId: conversation.id, sessionKey: conversation.key, input: user("spawn"), createdAt: h.clock.now() });
    await h.store.claimSubmission({ submissionId: "parent", attemptId: "a1", ownerId: "o", leaseExpiresAt: h.clock.now() + 30_000 });
    await h.store.waitSubmission({ submissionId: "parent", attemptId: "a1", waitUntil: h.clock.now() + 3_600_000 });
    const runtime = await h.restart();
    const answer = await runtime.cancel("parent", "took too long", at);
    expect(answer.outcome).toEqual(byRequest("took too long"));
    expect((await h.store.getSubmission("parent")).status).toBe("settled");
    expect(settledOf(await allRecords(h.store, conversation.id), "parent")).toEqual([byRequest("took too long")]);
    const next = await runtime.dispatch({ ...at, message: user("next") });
    expect(await runtime.wait(next.submissionId)).toMatchObject({ status: "succeeded" });
    await runtime.close();
  });

  it("refuses what it cannot cancel and stores nothing: unknown id, another instance, bad id or reason", async () => {
    const { definition } = scriptedAgent([[{ text: "ok" }]]);
    const h = await startTestServer({ agents: { assistant: definition } });
    const done = await h.runtime.dispatch({ ...at, message: user("hi") });
    await h.runtime.wait(done.submissionId);
    await expect(h.runtime.cancel("no-such", undefined, at)).rejects.toMatchObject({ code: "submission_not_found" });
    await expect(h.runtime.cancel(done.submissionId, undefined, { agent: "assistant", instance: "other" })).rejects.toMatchObject({ code: "submission_not_found" });
    await expect(h.runtime.cancel("bad/id", undefined, at)).rejects.toMatchObject({ code: "invalid_request" });
    await expect(h.runtime.cancel(done.submissionId, "x".repeat(2_000), at)).rejects.toMatchObject({ code: "invalid_request" });
    await expect(h.runtime.cancel(done.submissionId, undefined, { agent: "nobody", instance: "w" })).rejects.toMatchObject({ code: "unknown_agent" });
    const row = await h.store.getSubmission(done.submissionId);
    expect(row.outcome).toMatchObject({ status: "succeeded" });
    expect(row.cancelRequested).toBe(false);
    await h.runtime.close();
  });

  it("a canceller crashed at the fault seam's cancel_reserved: the next process's sweep writes the cancel outcome; the next runs", async () => {
    const { definition } = scriptedAgent([[{ text: "next one" }]]);
    let reachedSeam!: () => void;
    const atSeam = new Promise<void>((resolve) => (reachedSeam = resolve));
    // Stops dead at the phase, as a killed process would (the hook never returns).
    const faults = (phase: string) => {
      if (phase !== "cancel_reserved") return;
      reachedSeam();
      return new Promise<never>(() => {});
    };
    const h = await startTestServer({ agents: { assistant: definition }, faults });
    await h.runtime.close();
    const crashed = await h.restart({ faults });
    // Admitted through the store (no doorbell, the manual clock holds the sweep): a queued head.
    const { conversation } = await h.store.ensureConversation({ id: "conv-k", key: { ...at, session: "default" }, createdAt: h.clock.now() });
    await h.store.admitSubmission({ id: "k1", conversationId: conversation.id, sessionKey: conversation.key, input: user("a"), createdAt: h.clock.now() });
    await h.store.admitSubmission({ id: "k2", conversationId: conversation.id, sessionKey: conversation.key, input: user("b"), createdAt: h.clock.now() });
    void crashed.cancel("k1", "mid-cancel crash", at);
    await atSeam;
    await crashed.close({ abandon: true });
    expect((await h.store.getSubmission("k1")).status, "reserved, record not yet written").toBe("terminalizing");
    expect(settledOf(await allRecords(h.store, conversation.id), "k1")).toEqual([]);

    const runtime = await h.restart();
    const waiting = runtime.wait("k1");
    await h.clock.advance(31_000);
    await h.clock.advance(5_000);
    expect(await waiting).toEqual(byRequest("mid-cancel crash"));
    expect(settledOf(await allRecords(h.store, conversation.id), "k1")).toEqual([byRequest("mid-cancel crash")]);
    expect(await runtime.wait("k2")).toMatchObject({ status: "succeeded" });
    await settleTicks();
    await runtime.close();
  });

  it("a canceller that dies after the reservation: the sweep writes the stored cancel outcome", async () => {
    const { definition } = scriptedAgent([[{ text: "next one" }]]);
    const h = await startTestServer({ agents: { assistant: definition } });
    await h.runtime.close();
    const { conversation } = await h.store.ensureConversation({ id: "conv-c", key: { ...at, session: "default" }, createdAt: h.clock.now() });
    await h.store.admitSubmission({ id: "q1", conversationId: conversation.id, sessionKey: conversation.key, input: user("a"), createdAt: h.clock.now() });
    await h.store.admitSubmission({ id: "q2", conversationId: conversation.id, sessionKey: conversation.key, input: user("b"), createdAt: h.clock.now() });
    // The store's half of a cancel, then the canceller is gone.
    await h.store.cancelSubmission("q1", { errorCode: "cancelled", error: "cancelled: gone" });
    const runtime = await h.restart();
    const waiting = runtime.wait("q1");
    await h.clock.advance(31_000);
    await h.clock.advance(5_000);
    expect(await waiting).toEqual(byRequest("gone"));
    expect(settledOf(await allRecords(h.store, conversation.id), "q1")).toEqual([byRequest("gone")]);
    expect(await runtime.wait("q2")).toMatchObject({ status: "succeeded" });
    await settleTicks();
    await runtime.close();
  });
});
