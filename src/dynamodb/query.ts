import { QueryCommand, type QueryCommandInput } from "@aws-sdk/client-dynamodb";
import type { StoreContext } from "./context.ts";
import type { Item } from "./item.ts";

/** A Query on the harness table (or one of its indexes), without the paging fields. */
export type TableQuery = Omit<QueryCommandInput, "TableName" | "ExclusiveStartKey" | "Limit">;

/**
 * Every item a Query matches, page by page (DynamoDB pages at 1 MB), following
 * `LastEvaluatedKey` to the end — or to `limit` items, asking each page for no more than remain.
 * A caller that stops iterating stops the paging.
 */
export async function* queryItems(ctx: StoreContext, query: TableQuery, limit = Infinity): AsyncGenerator<Item> {
  let remaining = limit;
  let start: Item | undefined;
  do {
    const res = await ctx.dynamo.send(
      new QueryCommand({
        TableName: ctx.table,
        ...query,
        ExclusiveStartKey: start,
        ...(Number.isFinite(remaining) ? { Limit: remaining } : {}),
      }),
    );
    for (const item of res.Items ?? []) {
      if (remaining-- <= 0) return;
      yield item;
    }
    start = res.LastEvaluatedKey;
  } while (start && remaining > 0);
}

/** `queryItems` collected into an array. */
export async function queryAll(ctx: StoreContext, query: TableQuery, limit = Infinity): Promise<Item[]> {
  const items: Item[] = [];
  for await (const item of queryItems(ctx, query, limit)) items.push(item);
  return items;
}
