/** Sending a TransactWriteItems and getting its refusal back as per-item reasons. */
import {
  type AttributeValue,
  type CancellationReason,
  TransactWriteItemsCommand,
  type TransactWriteItem,
} from "@aws-sdk/client-dynamodb";
import type { StoreContext } from "./context.ts";
import { cancellationReasons } from "./errors.ts";
import type { Expr } from "./expression.ts";

/**
 * Runs the transaction; undefined when it committed, else the reasons (one per item, in order).
 * The SDK fills `ClientRequestToken` once per call and reuses it on its own retries, so a
 * transaction whose response was lost is not applied twice: DynamoDB answers the retry with
 * the first outcome (idempotency window: 10 minutes).
 */
export async function transact(ctx: StoreContext, items: TransactWriteItem[]): Promise<CancellationReason[] | undefined> {
  try {
    await ctx.dynamo.send(new TransactWriteItemsCommand({ TransactItems: items }));
    return undefined;
  } catch (error) {
    const reasons = cancellationReasons(error);
    if (!reasons) throw error;
    return reasons;
  }
}

/** A transaction Update item from an expression, returning the current item when refused. */
export function updateItem(
  ctx: StoreContext,
  key: Record<string, AttributeValue>,
  e: Expr,
  condition?: string,
): TransactWriteItem {
  return {
    Update: {
      TableName: ctx.table,
      Key: key,
      UpdateExpression: e.update,
      ...(condition ? { ConditionExpression: condition } : {}),
      ...e.attributes,
      ReturnValuesOnConditionCheckFailure: "ALL_OLD",
    },
  };
}

/** A transaction Put item that must not overwrite an existing one. */
export function putNewItem(ctx: StoreContext, item: Record<string, AttributeValue>): TransactWriteItem {
  return {
    Put: {
      TableName: ctx.table,
      Item: item,
      ConditionExpression: "attribute_not_exists(pk)",
      ReturnValuesOnConditionCheckFailure: "ALL_OLD",
    },
  };
}
