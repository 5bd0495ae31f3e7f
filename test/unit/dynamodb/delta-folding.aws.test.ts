/**
 * Lean history on DynamoDB (ADR 0034), against DynamoDB Local: the table has TTL on
 * `expiresAt`; a log batch of deltas only carries it (its turn's start plus the retention, in
 * seconds), a batch that also holds other records carries `deltasFoldAt` and stays, a batch that
 * raises the log's epoch never expires; reads leave a folded turn's deltas out at that time, all
 * at once, before any TTL deleted them (DynamoDB Local never does); the retention is checked.
 */
import { DescribeTimeToLiveCommand, QueryCommand } from "@aws-sdk/client-dynamodb";
import { describe, expect, it } from "vitest";
import { newId } from "../../../src/conversation/ids.ts";
import { DEFAULT_DELTA_RETENTION_MS } from "../../../src/conversation/delta-folding.ts";
import { createDynamoStore, HARNESS_TABLE } from "../../../src/dynamodb/index.ts";
import { batchEntries } from "../../../src/dynamodb/log-batch.ts";
import { ManualClock } from "../../../src/ports/clock.ts";
import type { RecordDraft } from "../../../src/protocol/records.ts";
import { BUCKET, freshStore, useTestClients } from "../../support/dynamodb-fixtures.ts";

const clients = useTestClients();

describe("DynamoDB lean history", () => {
  it("delta batches carry the TTL from their turn's start, mixed batches a fold time, and reads leave a turn's deltas out at once", async () => {
    const clock = new ManualClock();
    const made = await freshStore(clients, clock);
    const { store, tableName } = made;
    try {
      const ttl = await clients.dynamo.send(new DescribeTimeToLiveCommand({ TableName: tableName }));
      expect(ttl.TimeToLiveDescription).toMatchObject({ TimeToLiveStatus: "ENABLED", AttributeName: HARNESS_TABLE.timeToLiveAttribute });

      const key = { agent: "a", instance: "i", session: "default" };
      const { conversation } = await store.ensureConversation({ id: newId(clock.now()), key, createdAt: clock.now() });
      const sub = (await store.admitSubmission({ id: newId(clock.now() + 1), conversationId: conversation.id, sessionKey: key, input: { kind: "user", body: "hi" }, createdAt: clock.now() })).submission;
      const run = await store.claimSubmission({ submissionId: sub.id, attemptId: newId(clock.now()), ownerId: "o", leaseExpiresAt: clock.now() + 30_000 });
      const fence = { fence: { submissionId: sub.id, attemptId: run.attemptId! } };
      const turnStart = clock.now();
      const turnId = newId(turnStart);
      const draft = (kind: RecordDraft["kind"], payload: unknown): RecordDraft =>
        ({ kind, conversationId: conversation.id, session: "default", submissionId: sub.id, turnId, time: new Date(clock.now()).toISOString(), payload }) as RecordDraft;
      const [started] = await store.appendRecords(conversation.id, [draft("assistant_message_started", { model: "m", messageType: "message" })], fence);
      await clock.advance(5_000);
      const [d1] = await store.appendRecords(conversation.id, [draft("assistant_text_delta", { text: "Hel" })], fence);
      await clock.advance(5_000);
      const [d2, completed] = await store.appendRecords(
        conversation.id,
        [draft("assistant_text_delta", { text: "lo" }), draft("assistant_message_completed", { message: { role: "assistant", type: "message", body: { content: [{ type: "text", text: "Hello" }] } } })],
        fence,
      );

      const items = (
        await clients.dynamo.send(
          new QueryCommand({ TableName: tableName, KeyConditionExpression: "pk = :pk", ExpressionAttributeValues: { ":pk": { S: `CONV#${conversation.id}` } }, ConsistentRead: true }),
        )
      ).Items!.filter((i) => batchEntries(i).length > 0);
      const holding = (id: string) => items.find((i) => batchEntries(i).some((e) => e.rest.id === id))!;
      const foldAtS = String(Math.ceil((turnStart + DEFAULT_DELTA_RETENTION_MS) / 1000));
      expect(holding(started!.id).expiresAt, "the turn's first batch raises the epoch and has no delta: it stays").toBeUndefined();
      expect(holding(d1!.id).expiresAt, "a batch of deltas only expires, counted from its turn's start").toEqual({ N: foldAtS });
      expect(holding(d2!.id).expiresAt, "a batch that holds the completed message stays").toBeUndefined();
      expect(holding(d2!.id).deltasFoldAt, "its deltas fold with the turn's").toEqual({ N: foldAtS });

      // Just before: everything; from the turn's fold time on: no delta of the turn, before any TTL deletion.
      clock.set(turnStart + DEFAULT_DELTA_RETENTION_MS - 1_000);
      expect(await store.readRecords(conversation.id)).toEqual([started, d1, d2, completed]);
      clock.set(Number(foldAtS) * 1000);
      expect(await store.readRecords(conversation.id)).toEqual([started, completed]);
      expect(await store.readRecords(conversation.id, d1!.id), "a reader resuming after a folded delta").toEqual([completed]);
      expect(await store.readRecords(conversation.id, d2!.id)).toEqual([completed]);
    } finally {
      await made.dispose();
    }
  });

  it("refuses a retention a live reader could miss deltas under", () => {
    const options = { tableName: "t", bucketName: BUCKET, dynamo: clients.dynamo, s3: clients.s3 };
    expect(() => createDynamoStore({ ...options, deltaRetentionMs: 60_000 })).toThrow(/deltaRetentionMs must be .* at least 900000/);
    expect(() => createDynamoStore({ ...options, deltaRetentionMs: Number.NaN })).toThrow(RangeError);
  });

  it("keeps deltas with an infinite retention", async () => {
    const clock = new ManualClock();
    const made = await freshStore(clients, clock, { deltaRetentionMs: Number.POSITIVE_INFINITY });
    try {
      const key = { agent: "a", instance: "i", session: "default" };
      const { conversation } = await made.store.ensureConversation({ id: newId(clock.now()), key, createdAt: clock.now() });
      const [delta] = await made.store.appendRecords(conversation.id, [
        { kind: "assistant_text_delta", conversationId: conversation.id, session: "default", time: new Date(clock.now()).toISOString(), payload: { text: "x" } },
      ]);
      clock.set(clock.now() + 1000 * DEFAULT_DELTA_RETENTION_MS);
      expect(await made.store.readRecords(conversation.id)).toEqual([delta]);
    } finally {
      await made.dispose();
    }
  });
});
