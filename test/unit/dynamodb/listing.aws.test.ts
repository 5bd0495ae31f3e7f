/**
 * The operator's listing on DynamoDB reads the listed session's partition and the submissions it
 * names, never the table: a page of 2 from a busy table costs what a page of 2 costs.
 */
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../../src/ports/clock.ts";
import type { SessionKey } from "../../../src/store/submission.ts";
import { createDynamoClient } from "../../../src/dynamodb/index.ts";
import { sessionPk } from "../../../src/dynamodb/keys.ts";
import { freshStore, useTestClients } from "../../support/dynamodb-fixtures.ts";

const clients = useTestClients();

describe("DynamoDB: listSessionSubmissions", () => {
  it("queries only the session's partition and reads only the listed submissions", async () => {
    const dynamo = createDynamoClient({}, { baseDelayMs: 5, throttlingBaseDelayMs: 10 });
    const clock = new ManualClock();
    const { store, dispose } = await freshStore({ dynamo, s3: clients.s3 }, clock);
    try {
      const admit = async (key: SessionKey, n: number) => {
        const { conversation } = await store.ensureConversation({ id: `c-${key.session}`, key, createdAt: clock.now() });
        const ids: string[] = [];
        for (let i = 0; i < n; i++) {
          const id = `${key.session}-${String(i).padStart(3, "0")}`;
          await store.admitSubmission({ id, conversationId: conversation.id, sessionKey: key, input: { kind: "user", body: id }, createdAt: clock.now() });
          ids.push(id);
        }
        return ids;
      };
      const key = { agent: "agent", instance: "ops", session: "listed" };
      const mine = await admit(key, 12);
      for (let s = 0; s < 4; s++) await admit({ ...key, session: `noise-${s}` }, 6);

      const sent: { name: string; input: Record<string, unknown> }[] = [];
      dynamo.middlewareStack.add(
        (next, context) => async (args) => {
          sent.push({ name: String(context.commandName), input: args.input as Record<string, unknown> });
          return next(args);
        },
        { step: "initialize", name: "listingSpy" },
      );
      const page = await store.listSessionSubmissions(key, { limit: 3, before: mine[9] });
      expect(page.map((s) => s.id)).toEqual([mine[8], mine[7], mine[6]]);

      const names = sent.map((c) => c.name);
      expect(names.filter((n) => !["QueryCommand", "GetItemCommand", "BatchGetItemCommand"].includes(n)), names.join(" ")).toEqual([]);
      const queries = sent.filter((c) => c.name === "QueryCommand");
      expect(queries).toHaveLength(1);
      expect(queries[0]!.input.IndexName, "the base table, not an index").toBeUndefined();
      expect(queries[0]!.input.ExpressionAttributeValues).toMatchObject({ ":pk": { S: sessionPk(key) } });
      expect(queries[0]!.input.Limit, "asks for one page, not the session").toBe(3);
      const batchKeys = sent
        .filter((c) => c.name === "BatchGetItemCommand")
        .flatMap((c) => Object.values(c.input.RequestItems as Record<string, { Keys: unknown[] }>).flatMap((r) => r.Keys));
      expect(batchKeys, "state + input of the three listed").toHaveLength(6);
    } finally {
      await dispose();
      dynamo.destroy();
    }
  });
});
