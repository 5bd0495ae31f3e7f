/**
 * Reading submissions whole (state + input), one by id or many by id, always strongly
 * consistent: a listing found through an (eventually consistent) index is re-read here, and the
 * caller filters on the fresh state.
 */
import { BatchGetItemCommand, GetItemCommand, QueryCommand } from "@aws-sdk/client-dynamodb";
import type { Submission } from "../../ports/submission.ts";
import type { StoreContext } from "./context.ts";
import { type Item, S, str } from "./item.ts";
import { INPUT_SK, STATE_SK, submissionIdOf, submissionPk } from "./keys.ts";
import { jitter } from "./retry.ts";
import { inputFromItem, inputKey, stateKey, submissionFromItems } from "./submission-item.ts";

export interface LoadedSubmission {
  state: Item;
  input: Item;
}

/** Both items of one submission (one Query on its partition), or undefined. */
export async function loadSubmission(ctx: StoreContext, id: string): Promise<LoadedSubmission | undefined> {
  const res = await ctx.dynamo.send(
    new QueryCommand({
      TableName: ctx.table,
      KeyConditionExpression: "pk = :pk AND sk BETWEEN :in AND :st",
      ExpressionAttributeValues: { ":pk": S(submissionPk(id)), ":in": S(INPUT_SK), ":st": S(STATE_SK) },
      ConsistentRead: true,
    }),
  );
  let state: Item | undefined;
  let input: Item | undefined;
  for (const item of res.Items ?? []) {
    if (str(item, "sk") === STATE_SK) state = item;
    else if (str(item, "sk") === INPUT_SK) input = item;
  }
  // Admission writes both in one transaction: one without the other is never visible.
  return state && input ? { state, input } : undefined;
}

/** The state item alone (the small one), strongly consistent, or undefined. */
export async function loadState(ctx: StoreContext, id: string): Promise<Item | undefined> {
  const res = await ctx.dynamo.send(new GetItemCommand({ TableName: ctx.table, Key: stateKey(id), ConsistentRead: true }));
  return res.Item;
}

/** Many submissions by id (BatchGetItem, 100 keys a call, unprocessed keys re-asked). */
export async function loadSubmissions(ctx: StoreContext, ids: readonly string[]): Promise<Map<string, LoadedSubmission>> {
  const unique = [...new Set(ids)];
  const found = new Map<string, Partial<LoadedSubmission>>();
  const keys = unique.flatMap((id) => [stateKey(id), inputKey(id)]);
  for (let start = 0; start < keys.length; start += 100) {
    let pending: Item[] | undefined = keys.slice(start, start + 100);
    for (let round = 0; pending && pending.length > 0; round++) {
      if (round > 0) await new Promise((r) => setTimeout(r, jitter(25, Math.min(round, 8), 2_000)));
      const res = await ctx.dynamo.send(
        new BatchGetItemCommand({ RequestItems: { [ctx.table]: { Keys: pending, ConsistentRead: true } } }),
      );
      for (const item of res.Responses?.[ctx.table] ?? []) {
        const id = submissionIdOf(str(item, "pk")!);
        const entry = found.get(id) ?? {};
        if (str(item, "sk") === STATE_SK) entry.state = item;
        else entry.input = item;
        found.set(id, entry);
      }
      pending = res.UnprocessedKeys?.[ctx.table]?.Keys as Item[] | undefined;
    }
  }
  const out = new Map<string, LoadedSubmission>();
  for (const [id, entry] of found) if (entry.state && entry.input) out.set(id, { state: entry.state, input: entry.input });
  return out;
}

/** The `Submission` of loaded items (restoring a spilled input). */
export async function toSubmission(ctx: StoreContext, loaded: LoadedSubmission): Promise<Submission> {
  return submissionFromItems(loaded.state, await inputFromItem(ctx, loaded.input));
}
