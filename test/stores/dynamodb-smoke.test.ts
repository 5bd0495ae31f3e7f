import { expect, it } from "vitest";
import { DynamoDBClient, ListTablesCommand } from "@aws-sdk/client-dynamodb";
it("lists tables", async () => {
  const c = new DynamoDBClient({});
  const r = await c.send(new ListTablesCommand({}));
  expect(Array.isArray(r.TableNames)).toBe(true);
});
