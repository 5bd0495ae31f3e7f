/**
 * Lean history in the serverless shape (ADR 0034), on the local cloud (the http and worker
 * functions of `src/lambda/`, DynamoDB Local, fauxqs): the worker writes a turn's delta-only log
 * items with the table's TTL attribute; once they are gone (as DynamoDB's TTL deletes them; the
 * test deletes them itself, DynamoDB Local never expires anything), an SSE reader of the http
 * function resuming from one of their ids goes on with the next record, no gap and no duplicate,
 * and shows the same reply as the live stream did.
 */
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { DeleteItemCommand, QueryCommand } from "@aws-sdk/client-dynamodb";
import { describe, expect, it } from "vitest";
import { createClient } from "../../../src/client/index.ts";
import { MessageView } from "../../../src/client/message-view.ts";
import { isStreamingDelta } from "../../../src/conversation/checkpoint.ts";
import { createDynamoClient } from "../../../src/dynamodb/clients.ts";
import { batchEntries } from "../../../src/dynamodb/log-batch.ts";
import type { ConversationRecord } from "../../../src/protocol/records.ts";
import { parseSse, recordsOf } from "../../support/test-server.ts";
import { useLocalCloud } from "../../support/local-cloud-suite.ts";

const agentsModule = fileURLToPath(new URL("../../support/local-cloud-fixtures/agents.ts", import.meta.url));
// Every fragment its own delta record, so the reply has delta-only log items.
const suite = useLocalCloud({
  agentsModule,
  workers: 1,
  workerTimeoutMs: 20_000,
  streamMaxMs: 3_000,
  httpTimeoutMs: 30_000,
  sweeperRateMs: false,
  functionEnv: { worker: { HARNESS_FLUSH_BYTES: "1", HARNESS_FLUSH_INTERVAL_MS: "1" } },
});

const text = (records: ConversationRecord[]) => MessageView.of(records).assistantText();

describe("local cloud: lean history", () => {
  it("a reader resuming from a delta id whose item the TTL deleted gets the next record, no gap, no duplicate", async () => {
    suite.dumpLogsOnFailure();
    const client = createClient({ baseUrl: suite.cloud.url });
    const instance = `lean-${randomUUID().slice(0, 8)}`;
    const done = await client.dispatchAndWait("assistant", instance, { kind: "user", body: "please repeat this sentence back to me word by word" });
    expect(done.status).toBe("succeeded");
    const url = `${suite.cloud.url}/agents/assistant/${instance}`;
    const seen = recordsOf(parseSse(await (await fetch(url)).text()));
    const deltas = seen.filter(isStreamingDelta);
    expect(deltas.length, "the reply came in several deltas").toBeGreaterThan(3);

    const dynamo = createDynamoClient();
    try {
      const items =
        (
          await dynamo.send(
            new QueryCommand({ TableName: suite.cloud.tableName, KeyConditionExpression: "pk = :pk", ExpressionAttributeValues: { ":pk": { S: `CONV#${done.conversationId}` } }, ConsistentRead: true }),
          )
        ).Items ?? [];
      const expiring = items.filter((i) => i.expiresAt !== undefined);
      expect(expiring.length, "the worker wrote delta-only items with the TTL attribute").toBeGreaterThan(0);
      for (const item of expiring) {
        expect(batchEntries(item).every((e) => e.rest.kind === "assistant_text_delta" || e.rest.kind === "assistant_thinking_delta")).toBe(true);
        const at = Number(item.expiresAt!.N) * 1000;
        expect(at - Date.now(), "about an hour from now (the default retention)").toBeGreaterThan(50 * 60_000);
        // TTL is in epoch seconds, rounded up (log-batch.ts): up to a second past the hour.
        expect(at - Date.now()).toBeLessThanOrEqual(60 * 60_000 + 1_000);
      }
      // What DynamoDB's TTL does once they expire.
      for (const item of expiring) await dynamo.send(new DeleteItemCommand({ TableName: suite.cloud.tableName, Key: { pk: item.pk!, sk: item.sk! } }));
      const gone = new Set(expiring.flatMap((i) => batchEntries(i).map((e) => e.rest.id)));

      const stored = await suite.store.readRecords(done.conversationId);
      expect(stored.filter((r) => gone.has(r.id))).toEqual([]);
      const cut = deltas.filter((d) => gone.has(d.id))[Math.floor(gone.size / 2)]!;
      const resumed = recordsOf(parseSse(await (await fetch(url, { headers: { "Last-Event-ID": cut.id } })).text()));
      expect(resumed, "the records after the deleted id").toEqual(stored.filter((r) => r.id > cut.id));
      const shown = [...seen.filter((r) => r.id <= cut.id), ...resumed];
      expect(new Set(shown.map((r) => r.id)).size, "no record twice").toBe(shown.length);
      expect(shown.filter((r) => !isStreamingDelta(r)), "no record missing").toEqual(seen.filter((r) => !isStreamingDelta(r)));
      expect(text(shown)).toBe(text(seen));

      // A fresh replay: the completed message carries the reply.
      const replay = recordsOf(parseSse(await (await fetch(url)).text()));
      expect(replay).toEqual(stored);
      expect(text(replay)).toBe(text(seen));
      expect(text(seen)).toContain("word by word");
    } finally {
      dynamo.destroy();
    }
  });
});
