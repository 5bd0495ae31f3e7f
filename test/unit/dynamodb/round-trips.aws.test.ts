/**
 * The DynamoDB requests on the way to a reply's first token (issue 28): what admission (POST →
 * 202) and a claim (doorbell → the first record) send, counted against DynamoDB Local. Each
 * request is a round trip a user waits on, so the ones that learn nothing new are left out:
 * - an admission whose id was minted for it (no dispatch id) does not look for an earlier one;
 * - a conversation's first record, written as admission creates it, is put without reading the
 *   tail first (the put on the empty log's key is refused if the log has a batch);
 * - a claim returns the input its caller read (an input never changes) instead of reading it;
 * - an append after a read that reached the end of the log takes the tail from that read.
 */
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../../src/ports/clock.ts";
import type { RecordDraft } from "../../../src/protocol/records.ts";
import { countConsumedCapacity, createDynamoClient, createDynamoStore } from "../../../src/dynamodb/index.ts";
import { BUCKET, freshStore, useTestClients } from "../../support/dynamodb-fixtures.ts";

const clients = useTestClients();

describe("round trips of admission and claim (DynamoDB)", () => {
  it("sends only the requests that decide something", async () => {
    const dynamo = createDynamoClient();
    const clock = new ManualClock();
    const { store, tableName, dispose } = await freshStore({ dynamo, s3: clients.s3 }, clock);
    const counter = countConsumedCapacity(dynamo);
    const calls = async (op: () => Promise<unknown>): Promise<string> => {
      counter.reset();
      await op();
      return Object.entries(counter.byCommand)
        .map(([name, c]) => `${name.replace("Command", "")}×${c.calls}`)
        .join(" ");
    };
    const key = { agent: "agent", instance: "round-trips", session: "default" };
    const input = { kind: "user" as const, body: "hello" };
    const draft = (conversationId: string, kind: RecordDraft["kind"], payload: unknown): RecordDraft =>
      ({ kind, conversationId, session: "default", time: new Date(clock.now()).toISOString(), payload }) as RecordDraft;
    try {
      // Admission with a minted id: the counter's reservation and the transaction, nothing read.
      let conversationId = "";
      expect(
        await calls(async () => {
          conversationId = ((await store.admitSubmission({ id: "s1", freshId: true, conversationId: "c1", sessionKey: key, input, createdAt: clock.now() })).submission).conversationId;
        }),
      ).toBe("UpdateItem×1 TransactWriteItems×1");
      // A dispatch id may have been admitted before: that one is looked for (another session's head).
      const other = { ...key, session: "other" };
      expect(await calls(() => store.admitSubmission({ id: "s2", conversationId: "c2", sessionKey: other, input, createdAt: clock.now() }))).toBe(
        "Query×1 UpdateItem×1 TransactWriteItems×1",
      );
      // The conversation's first record, by a store that never saw this log: one put.
      const cold = createDynamoStore({ tableName, bucketName: BUCKET, dynamo, s3: clients.s3, clock });
      expect(
        await calls(() => cold.appendRecords(conversationId, [draft(conversationId, "conversation_created", { agent: "agent", instance: "round-trips", session: "default" })], { expectedHead: "" })),
      ).toBe("PutItem×1");
      // Expecting an empty log that is not: still refused (the put, then the read that tells).
      const again = createDynamoStore({ tableName, bucketName: BUCKET, dynamo, s3: clients.s3, clock });
      await expect(again.appendRecords(conversationId, [draft(conversationId, "conversation_created", {})], { expectedHead: "" })).rejects.toMatchObject({
        code: "claim_lost",
      });
      expect((await store.readRecords(conversationId)).map((r) => r.kind)).toEqual(["conversation_created"]);

      // The claim, with the input its caller read: one conditional update.
      const worker = createDynamoStore({ tableName, bucketName: BUCKET, dynamo, s3: clients.s3, clock });
      const read = await worker.getSubmission("s1");
      let claimedInput: unknown;
      expect(
        await calls(async () => {
          claimedInput = (await worker.claimSubmission({ submissionId: "s1", attemptId: "a1", ownerId: "w", leaseExpiresAt: clock.now() + 30_000, input: read.input }))
            .input;
        }),
      ).toBe("UpdateItem×1");
      expect(claimedInput).toEqual(input);
      // The run reads the log to its end, then appends its first record: no read of the tail.
      await worker.readRecords(conversationId, "");
      expect(
        await calls(() => worker.appendRecords(conversationId, [draft(conversationId, "user_message", { body: "hello" })], { fence: { submissionId: "s1", attemptId: "a1" } })),
      ).toBe("GetItem×1 PutItem×1");
      expect((await store.readRecords(conversationId)).map((r) => r.kind)).toEqual(["conversation_created", "user_message"]);
    } finally {
      counter.detach();
      await dispose();
      dynamo.destroy();
    }
  });

  it("a claim without the caller's input reads it (the store's contract without the hint)", async () => {
    const dynamo = createDynamoClient();
    const clock = new ManualClock();
    const { store, dispose } = await freshStore({ dynamo, s3: clients.s3 }, clock);
    const counter = countConsumedCapacity(dynamo);
    try {
      const key = { agent: "agent", instance: "round-trips-2", session: "default" };
      await store.admitSubmission({ id: "s1", conversationId: "c1", sessionKey: key, input: { kind: "user", body: "hi" }, createdAt: clock.now() });
      counter.reset();
      const claimed = await store.claimSubmission({ submissionId: "s1", attemptId: "a1", ownerId: "w", leaseExpiresAt: clock.now() + 30_000 });
      expect(claimed.input).toEqual({ kind: "user", body: "hi" });
      expect(Object.keys(counter.byCommand).sort()).toEqual(["GetItemCommand", "UpdateItemCommand"]);
    } finally {
      counter.detach();
      await dispose();
      dynamo.destroy();
    }
  });
});
