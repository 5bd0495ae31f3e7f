/**
 * Deleting a conversation on DynamoDB Local + fauxqs S3 (ADR 0034), beyond the conformance
 * cases: interrupted at each step and retried, the deletion completes; while it is unfinished the
 * session takes no admission; afterwards no item of the conversation, its submissions or its blob
 * references is left in the table, and its objects (attachment, spilled payloads, checkpoint) are
 * gone from the bucket while the other conversation's stay.
 */
import { randomBytes } from "node:crypto";
import { HeadObjectCommand } from "@aws-sdk/client-s3";
import { ScanCommand } from "@aws-sdk/client-dynamodb";
import { expect, it } from "vitest";
import { checkpointOf } from "../../../src/conversation/checkpoint.ts";
import { newId } from "../../../src/conversation/ids.ts";
import { ManualClock } from "../../../src/ports/clock.ts";
import type { AttachmentRef, RecordDraft } from "../../../src/protocol/records.ts";
import type { Store } from "../../../src/store/store.ts";
import type { SessionKey } from "../../../src/store/submission.ts";
import { BUCKET, freshStore, useTestClients } from "../../support/dynamodb-fixtures.ts";

const clients = useTestClients();

/** A settled submission of `key` whose input and record carry `attachments`, with a spilled record and a checkpoint too large for its item. */
async function seed(store: Store, clock: ManualClock, key: SessionKey, attachments: AttachmentRef[]): Promise<{ submissionId: string; conversationId: string }> {
  clock.set(clock.now() + 1);
  const id = newId(clock.now());
  const { conversation } = await store.ensureConversation({ id: newId(clock.now()), key, createdAt: clock.now() });
  await store.admitSubmission({ id, conversationId: conversation.id, sessionKey: key, input: { kind: "user", body: "x".repeat(3_000), attachments }, createdAt: clock.now() });
  const attemptId = newId(clock.now());
  await store.claimSubmission({ submissionId: id, attemptId, ownerId: "o", leaseExpiresAt: clock.now() + 30_000 });
  const noise = randomBytes(6_000).toString("base64"); // incompressible: the checkpoint goes to S3
  const draft = (kind: string, payload: unknown) =>
    ({ kind, conversationId: conversation.id, session: key.session, submissionId: id, time: new Date(clock.now()).toISOString(), payload }) as RecordDraft;
  const records = await store.appendRecords(
    conversation.id,
    [draft("user_message", { body: noise, attachments }), draft("assistant_text_delta", { text: "seen" })],
    { fence: { submissionId: id, attemptId } },
  );
  await store.writeCheckpoint(conversation.id, checkpointOf({ earlier: [], records }, records.at(-1)!.id));
  const outcome = { status: "succeeded", text: noise } as never;
  await store.reserveSettlement(id, attemptId, { outcome });
  await store.finalizeSettlement(id, outcome);
  return { submissionId: id, conversationId: conversation.id };
}

async function allItems(tableName: string): Promise<{ pk: string; sk: string }[]> {
  const out: { pk: string; sk: string }[] = [];
  let start: Record<string, never> | undefined;
  do {
    const res = await clients.dynamo.send(new ScanCommand({ TableName: tableName, ExclusiveStartKey: start, ConsistentRead: true }));
    for (const item of res.Items ?? []) out.push({ pk: item.pk!.S!, sk: item.sk!.S! });
    start = res.LastEvaluatedKey as never;
  } while (start);
  return out;
}

async function objectExists(key: string): Promise<boolean> {
  try {
    await clients.s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key }));
    return true;
  } catch {
    return false;
  }
}

const blobKey = (digest: string) => `blobs/sha256/${digest.slice("sha256:".length)}`;

it.each(["submission", "conversation", "session"])(
  "a deletion interrupted before its %s step is finished by the next call; nothing of it is left in the table or the bucket",
  async (step) => {
    const clock = new ManualClock();
    let failAt: string | undefined = step;
    const { store, tableName, dispose } = await freshStore(clients, clock, {
      spillThresholdBytes: 1_000,
      beforeDeletionStep: (name) => {
        if (failAt !== undefined && name.startsWith(failAt)) {
          failAt = undefined;
          throw new Error(`killed before ${name}`);
        }
      },
    });
    try {
      const own = await store.putAttachment("application/octet-stream", randomBytes(64));
      const shared = await store.putAttachment("application/octet-stream", randomBytes(64));
      const key: SessionKey = { agent: "a", instance: "deleted", session: "default" };
      const otherKey: SessionKey = { agent: "a", instance: "kept", session: "default" };
      const gone = await seed(store, clock, key, [own, shared]);
      const kept = await seed(store, clock, otherKey, [shared]);
      const before = await allItems(tableName);
      const ownDigests = before.filter((i) => i.pk === `CONV#${gone.conversationId}` || i.pk === `SUB#${gone.submissionId}`).filter((i) => i.sk.startsWith("B#")).map((i) => i.sk.slice(2));
      const keptDigests = before.filter((i) => i.pk === `CONV#${kept.conversationId}` || i.pk === `SUB#${kept.submissionId}`).filter((i) => i.sk.startsWith("B#")).map((i) => i.sk.slice(2));
      expect(ownDigests, "the attachments and the spills (input, record, outcome) are referenced").toEqual(expect.arrayContaining([own.digest, shared.digest]));
      expect(ownDigests.length).toBeGreaterThanOrEqual(5);
      expect(await objectExists(`checkpoints/${gone.conversationId}`), "the checkpoint is an object").toBe(true);

      await expect(store.deleteConversation(key)).rejects.toThrow(/killed before/);
      // Unfinished: the session takes nothing new.
      await expect(
        store.admitSubmission({ id: newId(clock.now()), conversationId: gone.conversationId, sessionKey: key, input: { kind: "user", body: "hi" }, createdAt: clock.now() }),
      ).rejects.toMatchObject({ code: "session_busy" });

      const finished = await store.deleteConversation(key);
      expect(finished).toMatchObject({ deleted: true, conversationId: gone.conversationId });
      expect(await store.deleteConversation(key)).toEqual({ deleted: false, blobsDeleted: [] });

      const after = await allItems(tableName);
      const leftovers = after.filter(
        (i) =>
          i.pk.startsWith("SES#a/deleted/") ||
          i.pk === `CONV#${gone.conversationId}` ||
          i.pk === `SUB#${gone.submissionId}` ||
          i.sk === `CONV#${gone.conversationId}` ||
          i.sk === `SUB#${gone.submissionId}`,
      );
      expect(leftovers, "items of the deleted conversation").toEqual([]);
      for (const digest of ownDigests.filter((d) => !keptDigests.includes(d))) {
        expect(await objectExists(blobKey(digest)), `object ${digest}`).toBe(false);
      }
      for (const digest of keptDigests) expect(await objectExists(blobKey(digest)), `kept object ${digest}`).toBe(true);
      expect(await objectExists(`checkpoints/${gone.conversationId}`)).toBe(false);
      expect((await store.readRecords(kept.conversationId, "")).length, "the other conversation").toBe(2);
      expect((await store.getSubmission(kept.submissionId)).outcome).toMatchObject({ status: "succeeded" });

      // A later admission starts afresh.
      const again = (await store.admitSubmission({ id: newId(clock.now()), conversationId: newId(clock.now()), sessionKey: key, input: { kind: "user", body: "hi" }, createdAt: clock.now() })).submission;
      expect(again.conversationId).not.toBe(gone.conversationId);
    } finally {
      await dispose();
    }
  },
);
