/**
 * Conformance cases of deleting a conversation (ADR 0034): everything a session's conversation
 * owns goes (records, checkpoint, submissions with their attempts, the blobs only it references),
 * a blob another conversation references stays, a second deletion answers `deleted: false`, a
 * session with an unsettled submission is refused with nothing deleted, and the session starts
 * a new conversation afterwards. A deletion's reservation (ADR 0041) refuses admission to the
 * session until it is released or the deletion completes, so a deletion of a session with its
 * subagents' sessions that is refused anywhere deletes nothing.
 */
import { randomBytes } from "node:crypto";
import { expect } from "vitest";
import { checkpointOf } from "../../conversation/checkpoint.ts";
import { deleteSessionConversation } from "../../engine/conversation-deletion.ts";
import type { AttachmentRef, RecordDraft } from "../../protocol/records.ts";
import type { Store } from "../store.ts";
import type { SessionKey, Submission } from "../submission.ts";
import { type CaseBody, type Fixtures, expectCode } from "./case-context.ts";

type Register = (name: string, body: CaseBody) => void;

/** A submission of `key` with `attachments` on its input and on its `user_message` record, settled with a large outcome. */
async function conversationWithAttachments(fx: Fixtures, key: SessionKey, attachments: AttachmentRef[]): Promise<Submission> {
  const admitted = await fx.admit(key, { input: { kind: "user", body: "look at these", attachments } });
  const sub = await fx.claim(admitted);
  const fence = { fence: { submissionId: sub.id, attemptId: sub.attemptId! } };
  const message = fx.draft(sub.conversationId, "", {
    kind: "user_message",
    submissionId: sub.id,
    payload: { body: "look at these", attachments },
  } as Partial<RecordDraft>);
  const records = await fx.store.appendRecords(sub.conversationId, [message, fx.draft(sub.conversationId, "I see them", { submissionId: sub.id } as Partial<RecordDraft>)], fence);
  await fx.store.writeCheckpoint(sub.conversationId, checkpointOf({ earlier: [], records }, records.at(-1)!.id));
  await fx.store.startAttempt({ id: sub.attemptId!, submissionId: sub.id, ownerId: "owner-1", startedAt: fx.clock.now() });
  // An outcome larger than a small item: where a store spills it, the spill is the conversation's too.
  const outcome = { status: "completed", text: "x".repeat(4_000) } as never;
  await fx.store.reserveSettlement(sub.id, sub.attemptId!, { outcome });
  await fx.store.finalizeSettlement(sub.id, outcome);
  return fx.store.getSubmission(sub.id);
}

async function blob(fx: Fixtures, label: string): Promise<AttachmentRef> {
  return fx.store.putAttachment("application/octet-stream", new Uint8Array([...Buffer.from(label), ...randomBytes(32)]));
}

/** A parent submission of `parentKey` (left running) with a child in a session of its own, settled. */
async function parentWithSettledChild(fx: Fixtures): Promise<{ parentKey: SessionKey; childKey: SessionKey; parent: Submission; child: Submission }> {
  const parentKey = fx.key("parent");
  const childKey = fx.key("child", "helper");
  const parent = await fx.running(parentKey);
  const admitted = await fx.admit(childKey, { parentSubmissionId: parent.id, parentCallId: "call-1", depth: 1 });
  const run = await fx.claim(admitted);
  await fx.store.appendRecords(run.conversationId, [fx.draft(run.conversationId, "the child's answer", { submissionId: run.id } as Partial<RecordDraft>)], {
    fence: { submissionId: run.id, attemptId: run.attemptId! },
  });
  await fx.store.reserveSettlement(run.id, run.attemptId!);
  await fx.store.finalizeSettlement(run.id);
  return { parentKey, childKey, parent, child: await fx.store.getSubmission(run.id) };
}

/** Settles a running submission. */
async function settle(store: Store, sub: Submission): Promise<void> {
  await store.reserveSettlement(sub.id, sub.attemptId!);
  await store.finalizeSettlement(sub.id);
}

export function deletionCases(test: Register): void {
  test("DeleteConversation removes what it owns and keeps a blob another conversation references", async ({ store, fx }) => {
    const own = await blob(fx, "own");
    // Who uploaded a blob (ADR 0046) is no reference: it keeps nothing from a deletion.
    await fx.store.addAttachmentUploader(own.digest, "alice");
    const shared = await blob(fx, "shared");
    const sharedByRecord = await blob(fx, "shared by a record");
    const key = fx.key();
    const other = fx.key();
    const sub = await conversationWithAttachments(fx, key, [own, shared, sharedByRecord]);
    const second = await fx.settled(key);
    const kept = await fx.admit(other, { input: { kind: "user", body: "mine too", attachments: [shared] } });
    const keptRun = await fx.claim(kept);
    await store.appendRecords(keptRun.conversationId, [
      fx.draft(keptRun.conversationId, "", { kind: "user_message", submissionId: kept.id, payload: { body: "and this", attachments: [sharedByRecord] } } as Partial<RecordDraft>),
    ]);
    const keptLog = await fx.log(keptRun.conversationId);

    const deletion = await store.deleteConversation(key);
    expect(deletion.deleted, "the first deletion deletes").toBe(true);
    expect(deletion.conversationId).toBe(sub.conversationId);
    // A store that spills large payloads to blobs deletes those spills too; no shared blob is listed.
    expect(deletion.blobsDeleted, "the blob no other conversation references").toContain(own.digest);
    expect(deletion.blobsDeleted, "blobs another conversation references").not.toContain(shared.digest);
    expect(deletion.blobsDeleted).not.toContain(sharedByRecord.digest);

    await expectCode(store.getConversation(key), "conversation_not_found", "the deleted conversation");
    expect(await store.readRecords(sub.conversationId, ""), "its records").toEqual([]);
    expect(await store.readCheckpoint(sub.conversationId), "its checkpoint").toBeUndefined();
    await expectCode(store.getSubmission(sub.id), "submission_not_found", "its first submission");
    await expectCode(store.getSubmission(second.id), "submission_not_found", "its second submission");
    expect(await store.listAttempts(sub.id), "its attempts").toEqual([]);
    expect(await store.listSessionSubmissions(key, { limit: 10 }), "the session's listing").toEqual([]);
    expect(await store.getSessionHead(key), "the session's head").toBeUndefined();
    await expectCode(store.getAttachmentRef(own.digest), "attachment_not_found", "the blob only it referenced");
    expect(await store.getAttachmentRef(shared.digest), "a blob another submission's input references").toEqual(shared);
    expect(await store.getAttachmentRef(sharedByRecord.digest), "a blob another conversation's record references").toEqual(sharedByRecord);
    expect(await fx.log(keptRun.conversationId), "the other conversation").toEqual(keptLog);
    expect((await store.getSubmission(kept.id)).status, "the other session's submission").toBe("running");

    expect(await store.deleteConversation(key), "a second deletion").toEqual({ deleted: false, blobsDeleted: [] });

    const again = await fx.admit(key);
    expect(again.conversationId, "a later admission starts a new conversation").not.toBe(sub.conversationId);
    expect(await fx.log(again.conversationId)).toEqual([]);
  });

  test("DeleteConversation is refused while a submission of the session is unsettled, deleting nothing", async ({ store, fx }) => {
    const own = await blob(fx, "busy");
    const key = fx.key();
    const first = await conversationWithAttachments(fx, key, [own]);
    const queued = await fx.admit(key);
    await expectCode(store.deleteConversation(key), "session_busy", "a queued submission");
    const running = await fx.claim(queued);
    await expectCode(store.deleteConversation(key), "session_busy", "a running submission");
    expect((await store.getConversation(key)).id, "the conversation stays").toBe(first.conversationId);
    expect((await fx.log(first.conversationId)).length, "its records stay").toBeGreaterThan(0);
    expect(await store.getAttachmentRef(own.digest), "its blob stays").toEqual(own);
    await store.reserveSettlement(running.id, running.attemptId!);
    await store.finalizeSettlement(running.id);
    // A delayed message waits outside the session's order: unsettled all the same.
    const delayed = (await store.admitSubmission({
      id: fx.id(),
      conversationId: first.conversationId,
      sessionKey: key,
      input: { kind: "user", body: "later" },
      createdAt: fx.clock.now(),
      delayedUntil: fx.clock.now() + 60_000,
    })).submission;
    await expectCode(store.deleteConversation(key), "session_busy", "a delayed message");
    await store.cancelSubmission(delayed.id, { errorCode: "cancelled", error: "cancelled: bye" });
    expect((await store.getSubmission(delayed.id)).status).toBe("settled");
    expect((await store.deleteConversation(key)).deleted, "settled: deleted").toBe(true);
  });

  test("DeleteConversation of a session that never had a conversation answers deleted: false", async ({ store, fx }) => {
    expect(await store.deleteConversation(fx.key())).toEqual({ deleted: false, blobsDeleted: [] });
  });

  test("ReserveDeletion marks a settled session: admission is refused until it is released or the deletion completes", async ({ store, fx }) => {
    expect(await store.reserveDeletion(fx.key()), "no conversation: nothing to mark").toBe(false);
    const key = fx.key();
    const first = await fx.settled(key);
    const queued = await fx.admit(key);
    await expectCode(store.reserveDeletion(key), "session_busy", "a queued submission");
    const again = await fx.admit(key, { id: fx.id() });
    expect(again.conversationId, "a refused reservation marks nothing").toBe(first.conversationId);
    await fx.cancelled(queued);
    await fx.cancelled(again);
    const before = await fx.log(first.conversationId);

    expect(await store.reserveDeletion(key), "the first reservation marks").toBe(true);
    await expectCode(fx.admit(key), "session_busy", "an admission to a marked session");
    expect(await store.reserveDeletion(key), "marked already").toBe(false);
    expect(await fx.log(first.conversationId), "a reservation deletes nothing").toEqual(before);
    expect((await store.getSubmission(first.id)).status).toBe("settled");

    await store.releaseDeletion(key);
    await store.releaseDeletion(key);
    const later = await fx.admit(key);
    expect(later.conversationId, "released: admitted to the same conversation").toBe(first.conversationId);
    await fx.cancelled(later);

    expect(await store.reserveDeletion(key)).toBe(true);
    expect((await store.deleteConversation(key)).deleted, "a reserved session is deleted").toBe(true);
    const fresh = await fx.admit(key);
    expect(fresh.conversationId, "after the deletion the session takes a new conversation").not.toBe(first.conversationId);
  });

  test("A deletion refused because the parent is busy deletes none of its subagents' conversations", async ({ store, fx }) => {
    const { parentKey, childKey, parent, child } = await parentWithSettledChild(fx);
    const childLog = await fx.log(child.conversationId);
    await expectCode(deleteSessionConversation(store, parentKey), "session_busy", "the parent is running");
    expect((await store.getSubmission(child.id)).status, "the settled child stays").toBe("settled");
    expect(await fx.log(child.conversationId), "its conversation stays").toEqual(childLog);
    expect((await store.getConversation(childKey)).id).toBe(child.conversationId);
    expect((await store.listChildSubmissions(parent.id)).map((s) => s.id), "the parent still finds it").toEqual([child.id]);
    // Nothing was left marked: both sessions take admissions.
    await fx.cancelled(await fx.admit(childKey));
    await settle(store, parent);
    await fx.cancelled(await fx.admit(parentKey));
  });

  test("A deletion refused because a subagent's session is busy deletes nothing and leaves the parent open", async ({ store, fx }) => {
    const { parentKey, childKey, parent, child } = await parentWithSettledChild(fx);
    await settle(store, parent);
    const busy = await fx.admit(childKey);
    await expectCode(deleteSessionConversation(store, parentKey), "session_busy", "the child's session is busy");
    expect((await store.getSubmission(child.id)).status).toBe("settled");
    expect((await store.getConversation(parentKey)).id).toBe(parent.conversationId);
    const next = await fx.admit(parentKey);
    expect(next.conversationId, "the parent's mark was released").toBe(parent.conversationId);
    await fx.cancelled(next);
    await fx.cancelled(busy);
    const report = await deleteSessionConversation(store, parentKey);
    expect(report).toMatchObject({ deleted: true, conversationId: parent.conversationId, childSessions: 1 });
    await expectCode(store.getConversation(childKey), "conversation_not_found", "the child's conversation");
  });

  test("A deletion races an admission to the parent: the admission is refused, never the deletion after its children went", async ({ store, fx }) => {
    const { parentKey, childKey, parent, child } = await parentWithSettledChild(fx);
    await settle(store, parent);
    // The admission lands between the parent's check and its children's deletion.
    let raced: unknown;
    const racing = new Proxy(store, {
      get(target, prop, receiver) {
        if (prop === "listChildSubmissions") {
          return async (...args: Parameters<Store["listChildSubmissions"]>) => {
            if (raced === undefined) raced = await fx.admit(parentKey).catch((err: unknown) => err);
            return target.listChildSubmissions(...args);
          };
        }
        const value = Reflect.get(target, prop, receiver) as unknown;
        return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const report = await deleteSessionConversation(racing, parentKey);
    expect(raced, "the racing admission is refused").toMatchObject({ code: "session_busy" });
    expect(report).toMatchObject({ deleted: true, conversationId: parent.conversationId, childSessions: 1 });
    await expectCode(store.getSubmission(child.id), "submission_not_found", "the child");
    await expectCode(store.getConversation(childKey), "conversation_not_found", "the child's conversation");
    await expectCode(store.getConversation(parentKey), "conversation_not_found", "the parent's conversation");
  });
}
