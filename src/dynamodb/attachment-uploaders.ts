/**
 * Who uploaded an attachment (ADR 0046): one item per (digest, uploader), `UPL#<digest>` /
 * `<uploader>`, beside the bytes stored once in S3. Its own partition, not `BLOB#<digest>`'s: an
 * upload is no reference a deletion must count (that would keep every uploaded blob forever).
 * Written with a plain put (idempotent), read with one consistent GetItem.
 */
import { GetItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import type { StoreContext } from "./context.ts";
import { S } from "./item.ts";

function key(digest: string, uploader: string) {
  return { pk: S(`UPL#${digest}`), sk: S(uploader) };
}

/** Records that `uploader` uploaded `digest`. */
export async function addAttachmentUploader(ctx: StoreContext, digest: string, uploader: string): Promise<void> {
  await ctx.dynamo.send(new PutItemCommand({ TableName: ctx.table, Item: key(digest, uploader) }));
}

/** Whether `uploader` uploaded `digest`. */
export async function isAttachmentUploader(ctx: StoreContext, digest: string, uploader: string): Promise<boolean> {
  const res = await ctx.dynamo.send(
    new GetItemCommand({ TableName: ctx.table, Key: key(digest, uploader), ConsistentRead: true, ProjectionExpression: "pk" }),
  );
  return res.Item !== undefined;
}
