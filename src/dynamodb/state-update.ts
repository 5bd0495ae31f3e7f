/**
 * One conditional write of a submission's state item, with "already done by me" recognition.
 * Each write stamps the state with a fresh token (`lastTx`). When the SDK retries a write whose
 * first response was lost, the retry fails its condition; the refusal carries the current item
 * (`ALL_OLD`), and if that item bears this call's token the first try did land: success.
 */
import { randomUUID } from "node:crypto";
import { UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import type { StoreContext } from "./context.ts";
import { conditionRefusal } from "./errors.ts";
import type { Expr } from "./expression.ts";
import { type Item, S, str } from "./item.ts";
import { stateKey } from "./submission-item.ts";

export type UpdateOutcome = { done: true; item: Item } | { done: false; current: Item | undefined };

/** Applies `e`'s update to the state of `id` if `condition` holds; `done` with the new item. */
export async function updateState(ctx: StoreContext, id: string, e: Expr, condition: string): Promise<UpdateOutcome> {
  const token = randomUUID();
  e.set("lastTx", S(token));
  try {
    const res = await ctx.dynamo.send(
      new UpdateItemCommand({
        TableName: ctx.table,
        Key: stateKey(id),
        UpdateExpression: e.update,
        ConditionExpression: condition,
        ...e.attributes,
        ReturnValues: "ALL_NEW",
        ReturnValuesOnConditionCheckFailure: "ALL_OLD",
      }),
    );
    return { done: true, item: res.Attributes! };
  } catch (error) {
    const refusal = conditionRefusal(error);
    if (!refusal) throw error;
    if (refusal.item && str(refusal.item, "lastTx") === token) return { done: true, item: refusal.item };
    return { done: false, current: refusal.item };
  }
}
