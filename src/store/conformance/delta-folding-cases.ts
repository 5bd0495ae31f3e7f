/**
 * Conformance cases of lean history (ADR 0034): a settled submission's streaming deltas are gone
 * from reads once the store's delta retention (default 1 h) has passed and `foldDeltas` ran; the
 * other records stay; a read after a folded delta's id goes on with the next record, no gap and
 * no duplicate; deltas of a submission that has not settled, or settled recently, stay.
 *
 * A store may fold by settlement time (SQLite, memory) or by the time of the deltas' turn
 * (DynamoDB, whose TTL deletes them), and may keep stored a delta it no longer returns; the cases
 * hold for both.
 */
import { expect } from "vitest";
import { isStreamingDelta } from "../../conversation/checkpoint.ts";
import { DEFAULT_DELTA_RETENTION_MS } from "../../conversation/delta-folding.ts";
import type { ConversationRecord, RecordDraft } from "../../protocol/records.ts";
import type { Submission } from "../submission.ts";
import type { CaseBody, Fixtures } from "./case-context.ts";

type Register = (name: string, body: CaseBody) => void;

const COMPLETED = {
  kind: "assistant_message_completed",
  payload: { message: { role: "assistant", type: "message", body: { role: "assistant", content: [{ type: "text", text: "Hello world" }], stopReason: "stop" } } },
} as Partial<RecordDraft>;

/** A model turn as the turn recorder writes it: started, deltas each in its own append, the last delta with the completed message. */
async function turn(fx: Fixtures, sub: Submission): Promise<{ alone: ConversationRecord[]; all: ConversationRecord[] }> {
  // A turn id is a ULID of the turn's start, as the turn recorder mints it.
  const turnId = fx.id();
  const fence = { fence: { submissionId: sub.id, attemptId: sub.attemptId! } };
  const c = sub.conversationId;
  const own = { submissionId: sub.id, attemptId: sub.attemptId, turnId } as Partial<RecordDraft>;
  const all: ConversationRecord[] = [];
  all.push(...(await fx.store.appendRecords(c, [fx.draft(c, "", { ...own, kind: "assistant_message_started", payload: { model: "m", messageType: "message" } } as Partial<RecordDraft>)], fence)));
  const alone: ConversationRecord[] = [];
  for (const text of ["Hel", "lo"]) alone.push(...(await fx.store.appendRecords(c, [fx.draft(c, text, own)], fence)));
  alone.push(...(await fx.store.appendRecords(c, [fx.draft(c, "thinking", { ...own, kind: "assistant_thinking_delta" } as Partial<RecordDraft>)], fence)));
  all.push(...alone);
  all.push(...(await fx.store.appendRecords(c, [fx.draft(c, " world", own), fx.draft(c, "", { ...own, ...COMPLETED } as Partial<RecordDraft>)], fence)));
  return { alone, all };
}

async function settle(fx: Fixtures, sub: Submission): Promise<ConversationRecord> {
  const settled = fx.draft(sub.conversationId, "", { kind: "submission_settled", submissionId: sub.id, payload: { status: "succeeded" } } as Partial<RecordDraft>);
  const [record] = await fx.store.appendRecords(sub.conversationId, [settled], { fence: { submissionId: sub.id, attemptId: sub.attemptId! } });
  await fx.store.reserveSettlement(sub.id, sub.attemptId!);
  await fx.store.finalizeSettlement(sub.id);
  return record!;
}

export function deltaFoldingCases(test: Register): void {
  test("FoldDeltas removes a settled submission's deltas after the retention; a read after a folded id goes on with the next record", async ({ store, clock, fx }) => {
    const key = fx.key();
    const first = await fx.claim(await fx.admit(key));
    const { alone, all } = await turn(fx, first);
    all.push(await settle(fx, first));
    const settledAt = clock.now();

    clock.set(settledAt + DEFAULT_DELTA_RETENTION_MS - 2_000);
    expect(await store.foldDeltas(), "nothing is due before the retention has passed").toBe(0);
    expect(await fx.log(first.conversationId), "every record is still there").toEqual(all);

    // A later submission of the session streams while the first one's deltas come due.
    const second = await fx.claim(await fx.admit(key));
    const fence = { fence: { submissionId: second.id, attemptId: second.attemptId! } };
    const [live] = await store.appendRecords(second.conversationId, [fx.draft(second.conversationId, "still streaming", { submissionId: second.id, attemptId: second.attemptId })], fence);

    clock.set(settledAt + DEFAULT_DELTA_RETENTION_MS + 1_000);
    const folded = await store.foldDeltas();
    expect(folded, "a count (0 where the store's TTL folds on its own)").toBeGreaterThanOrEqual(0);
    const log = await fx.log(first.conversationId);
    const ids = new Set(log.map((r) => r.id));
    for (const delta of alone) expect(ids.has(delta.id), `the delta ${delta.id} is folded`).toBe(false);
    expect(log, "every other record stays, in order; the unsettled submission's delta too").toEqual([...all.filter((r) => !isStreamingDelta(r)), live]);
    expect(await store.foldDeltas(), "a second fold finds nothing").toBe(0);

    // A reader that had read up to a folded delta resumes after it: the next record, no gap, no duplicate.
    for (const delta of alone) {
      const after = await store.readRecords(first.conversationId, delta.id);
      expect(after, `a read after ${delta.id}`).toEqual(log.filter((r) => r.id > delta.id));
      expect(await store.readRecords(first.conversationId, delta.id, 1), "limited to one").toEqual(log.filter((r) => r.id > delta.id).slice(0, 1));
    }
  });

  test("FoldDeltas folds a delayed message's deltas, its range starting when it joined its session's order", async ({ store, clock, fx }) => {
    const key = fx.key();
    const joinsAt = clock.now() + 3 * 3_600_000;
    const delayed = await fx.admit(key, { input: { kind: "user", body: "later", notBefore: new Date(joinsAt).toISOString() }, delayedUntil: joinsAt });
    // The session goes on while it waits.
    const meanwhile = await fx.claim(await fx.admit(key));
    const { all: before } = await turn(fx, meanwhile);
    before.push(await settle(fx, meanwhile));
    clock.set(joinsAt);
    await store.joinSessionOrder(delayed.id);
    const sub = await fx.claim(delayed);
    const { alone, all } = await turn(fx, sub);
    all.push(await settle(fx, sub));
    clock.set(clock.now() + DEFAULT_DELTA_RETENTION_MS + 1_000);
    await store.foldDeltas();
    const ids = new Set((await fx.log(sub.conversationId)).map((r) => r.id));
    for (const delta of alone) expect(ids.has(delta.id), `the delayed message's delta ${delta.id} is folded`).toBe(false);
    for (const record of [...before, ...all].filter((r) => !isStreamingDelta(r))) expect(ids.has(record.id), `${record.kind} ${record.id} stays`).toBe(true);
  });

  test("FoldDeltas keeps the deltas of a submission that has not settled", async ({ store, clock, fx }) => {
    const sub = await fx.claim(await fx.admit(fx.key()));
    const fence = { fence: { submissionId: sub.id, attemptId: sub.attemptId! } };
    const [delta] = await store.appendRecords(sub.conversationId, [fx.draft(sub.conversationId, "partial", { submissionId: sub.id, attemptId: sub.attemptId })], fence);
    clock.set(clock.now() + 30_000);
    await store.foldDeltas();
    expect(await fx.log(sub.conversationId), "a young delta of a running submission stays").toEqual([delta]);
  });
}
