/**
 * The console's listing on DynamoDB (ADR 0054) reads the `byActivity` index, never the table: a
 * page costs one Query of `limit + 1` keys per shard, the page's state items and the matching
 * submissions, however many submissions the table holds and however little a filter matches.
 */
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../../src/ports/clock.ts";
import { countConsumedCapacity } from "../../../src/dynamodb/capacity.ts";
import { createDynamoClient } from "../../../src/dynamodb/index.ts";
import { HARNESS_TABLE, STATUS_SHARDS } from "../../../src/dynamodb/table.ts";
import { freshStore, useTestClients } from "../../support/dynamodb-fixtures.ts";

const clients = useTestClients();

describe("DynamoDB: listActivity", () => {
  // 120 admissions first: minutes on a loaded machine.
  it("reads one bounded page through the activity index, whatever the table holds", { timeout: 240_000 }, async () => {
    const dynamo = createDynamoClient({}, { baseDelayMs: 5, throttlingBaseDelayMs: 10 });
    const clock = new ManualClock();
    const { store, dispose } = await freshStore({ dynamo, s3: clients.s3 }, clock);
    try {
      const admitted: string[] = [];
      for (let i = 0; i < 120; i++) {
        await clock.advance(10);
        const key = { agent: i % 3 === 0 ? "alpha" : "beta", instance: `i${i % 7}`, session: `s${i % 5}` };
        const { conversation } = await store.ensureConversation({ id: `c-${key.agent}-${key.instance}-${key.session}`, key, createdAt: clock.now() });
        const id = `sub-${String(i).padStart(3, "0")}`;
        await store.admitSubmission({ id, conversationId: conversation.id, sessionKey: key, input: { kind: "user", body: `hello ${i}` }, createdAt: clock.now() });
        admitted.push(id);
      }
      const newestFirst = [...admitted].reverse();

      const sent: { name: string; input: Record<string, unknown> }[] = [];
      dynamo.middlewareStack.add(
        (next, context) => async (args) => {
          sent.push({ name: String(context.commandName), input: args.input as Record<string, unknown> });
          return next(args);
        },
        { step: "initialize", name: "activitySpy" },
      );
      const capacity = countConsumedCapacity(dynamo);

      const first = await store.listActivity({ limit: 10 });
      expect(first.submissions.map((s) => s.id)).toEqual(newestFirst.slice(0, 10));
      const second = await store.listActivity({ limit: 10, before: first.next! });
      expect(second.submissions.map((s) => s.id)).toEqual(newestFirst.slice(10, 20));

      const names = new Set(sent.map((c) => c.name));
      expect([...names].sort(), "queries and batch reads, no scan").toEqual(["BatchGetItemCommand", "QueryCommand"]);
      const queries = sent.filter((c) => c.name === "QueryCommand");
      expect(queries, "one query per shard and page").toHaveLength(2 * STATUS_SHARDS);
      for (const q of queries) {
        expect(q.input.IndexName).toBe(HARNESS_TABLE.indexes.byActivity.indexName);
        expect(q.input.Limit, "one page of keys").toBe(11);
      }
      const unfiltered = capacity.readUnits / 2;
      capacity.reset();

      // A filter matching nothing reads no more than a full page: it answers short, with a cursor.
      const none = await store.listActivity({ limit: 10, agent: "nobody" });
      expect(none.submissions).toEqual([]);
      expect(none.next, "there is more to read").toBeDefined();
      const filtered = capacity.readUnits;
      capacity.reset();
      // The bound: per shard a Query of 11 keys (under 4 KB: half a unit each), 10 state peeks at
      // half a unit, and 10 submissions read whole (state + input, a unit each).
      const bound = STATUS_SHARDS * 0.5 + 10 * 0.5 + 10 * 2;
      console.log(`listActivity: a page of 10 from 120 submissions reads ${unfiltered} RCU; a page a filter matches nothing of, ${filtered} RCU (bound ${bound})`);
      expect(unfiltered).toBeLessThanOrEqual(bound);
      expect(filtered, "a filter matching nothing reads the keys and peeks only").toBeLessThanOrEqual(STATUS_SHARDS * 0.5 + 10 * 0.5);
    } finally {
      await dispose();
      dynamo.destroy();
    }
  });
});
