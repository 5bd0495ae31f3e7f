/**
 * Log checkpoints in the DynamoDB store (ADR 0018), beyond the conformance cases: a large one
 * goes to S3 and its item carries only `at`, a small one rides on the item, an older one never
 * replaces a newer one whichever way it is stored, and an item whose S3 object was never written
 * (its writer died in between) reads as no checkpoint.
 */
import { randomUUID } from "node:crypto";
import { GetItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { describe, expect, it } from "vitest";
import type { LogCheckpoint } from "../../../src/conversation/checkpoint.ts";
import type { ConversationRecord } from "../../../src/protocol/records.ts";
import { ManualClock } from "../../../src/ports/clock.ts";
import { freshStore, useTestClients } from "../../support/dynamodb-fixtures.ts";

const clients = useTestClients();

/** A checkpoint at `at` whose path holds `bytes` of text that does not compress away. */
function checkpoint(at: string, bytes: number): LogCheckpoint {
  let x = 1;
  let text = "";
  while (text.length < bytes) {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    text += x.toString(36);
  }
  const record = { id: at, kind: "user_message", conversationId: "c", session: "default", time: "2026-12-01T00:00:00.000Z", payload: { body: text } } as ConversationRecord;
  return { at, path: [record], open: [] };
}

describe("DynamoDB log checkpoints", () => {
  it("stores large ones in S3 and small ones on the item, keeps the newest, and ignores an item without its object", async () => {
    const { store, tableName, dispose } = await freshStore(clients, new ManualClock());
    // The bucket is shared by the test files: conversation ids of their own.
    const a = `conv-a-${randomUUID()}`;
    const b = `conv-b-${randomUUID()}`;
    try {
      const item = async (conversationId: string) =>
        (await clients.dynamo.send(new GetItemCommand({ TableName: tableName, Key: { pk: { S: `CONV#${conversationId}` }, sk: { S: "CKPT" } }, ConsistentRead: true }))).Item;

      const large = checkpoint("01K000000000000000000000B0", 40_000);
      await store.writeCheckpoint(a, large);
      expect((await item(a))?.z, "a large checkpoint is not on the item").toBeUndefined();
      expect(await store.readCheckpoint(a)).toEqual(large);

      await store.writeCheckpoint(a, checkpoint("01K000000000000000000000A0", 100));
      expect(await store.readCheckpoint(a), "an older small one does not replace it").toEqual(large);

      const small = checkpoint("01K000000000000000000000C0", 100);
      await store.writeCheckpoint(a, small);
      expect((await item(a))?.z, "a small checkpoint rides on the item").toBeDefined();
      expect(await store.readCheckpoint(a)).toEqual(small);

      await store.writeCheckpoint(a, checkpoint("01K000000000000000000000B5", 40_000));
      expect(await store.readCheckpoint(a), "an older large one does not replace it either").toEqual(small);

      // A writer that died between its item and its object.
      await clients.dynamo.send(
        new PutItemCommand({ TableName: tableName, Item: { pk: { S: `CONV#${b}` }, sk: { S: "CKPT" }, at: { S: "01K000000000000000000000D0" } } }),
      );
      expect(await store.readCheckpoint(b), "an item without its object").toBeUndefined();
    } finally {
      await dispose();
    }
  });
});
