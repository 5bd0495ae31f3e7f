/**
 * Reading submissions whole (state + input), one by id or many by id, always strongly
 * consistent: a listing found through an (eventually consistent) index is re-read here, and the
 * caller filters on the fresh state.
 */
import { BatchGetItemCommand, GetItemCommand, QueryCommand } from "@aws-sdk/client-dynamodb";
import type { SettledPayload } from "../protocol/records.ts";
import type { Submission } from "../store/submission.ts";
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
  const found = await batchGet(ctx, [...new Set(ids)].flatMap((id) => [stateKey(id), inputKey(id)]), true);
  const out = new Map<string, LoadedSubmission>();
  for (const [id, entry] of found) if (entry.state && entry.input) out.set(id, { state: entry.state, input: entry.input });
  return out;
}

/**
 * The state items of many submissions, eventually consistent (half the read units of a strong
 * read, and no input item): for picking candidates that a strong read then confirms.
 */
export async function peekStates(ctx: StoreContext, ids: readonly string[]): Promise<Item[]> {
  const found = await batchGet(ctx, [...new Set(ids)].map(stateKey), false);
  return [...found.values()].flatMap((entry) => (entry.state ? [entry.state] : []));
}

async function batchGet(ctx: StoreContext, keys: Item[], consistent: boolean): Promise<Map<string, Partial<LoadedSubmission>>> {
  const found = new Map<string, Partial<LoadedSubmission>>();
  for (let start = 0; start < keys.length; start += 100) {
    let pending: Item[] | undefined = keys.slice(start, start + 100);
    for (let round = 0; pending && pending.length > 0; round++) {
      if (round > 0) await new Promise((r) => setTimeout(r, jitter(25, Math.min(round, 8), 2_000)));
      const res = await ctx.dynamo.send(
        new BatchGetItemCommand({ RequestItems: { [ctx.table]: { Keys: pending, ConsistentRead: consistent } } }),
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
  return found;
}

/** The `Submission` of loaded items (restoring a spilled input). */
export async function toSubmission(ctx: StoreContext, loaded: LoadedSubmission): Promise<Submission> {
  const sub = submissionFromItems(loaded.state, await inputFromItem(ctx, loaded.input));
  const ref = str(loaded.state, "outcomeRef");
  if (ref !== undefined) sub.outcome = JSON.parse(await ctx.blobs.getText(ref)) as SettledPayload;
  return sub;
}
