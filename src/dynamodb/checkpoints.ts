/**
 * Log checkpoints in the DynamoDB store (ADR 0018): per conversation one item `CONV#<id>` /
 * `CKPT` holding `at` (the last record covered), and the checkpoint's brotli-compressed JSON
 * inline (`z`) when small, else in S3 at `checkpoints/<conversationId>` (one object, rewritten in
 * place). The item's put is conditional on a smaller `at`, so a slower writer never replaces a
 * newer checkpoint; the S3 object is put after it and describes itself, so a reader uses what
 * it finds there (a checkpoint two writers raced for is still a valid one, only older).
 *
 * A read is an eventually consistent GetItem (half a unit for a pointer item; a checkpoint not
 * yet visible just means an older one, or the whole log) plus, for a large one, one S3 GET.
 */
import { GetItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { brotliCompressSync, brotliDecompressSync, constants } from "node:zlib";
import type { LogCheckpoint } from "../conversation/checkpoint.ts";
import type { StoreContext } from "./context.ts";
import { conditionRefusal } from "./errors.ts";
import { type Item, S, str } from "./item.ts";
import { conversationPk } from "./keys.ts";

export const CHECKPOINT_SK = "CKPT";
/** Compressed checkpoints up to this size ride on the item (a read of it stays within one 4 KB unit). */
const INLINE_MAX_BYTES = 3 * 1024;
const BROTLI = { params: { [constants.BROTLI_PARAM_QUALITY]: 5 } };

export class Checkpoints {
  readonly #ctx: StoreContext;

  constructor(ctx: StoreContext) {
    this.#ctx = ctx;
  }

  async read(conversationId: string): Promise<LogCheckpoint | undefined> {
    const res = await this.#ctx.dynamo.send(
      new GetItemCommand({ TableName: this.#ctx.table, Key: key(conversationId), ConsistentRead: false }),
    );
    const item = res.Item;
    if (!item || str(item, "at") === undefined) return undefined;
    const packed = item.z?.B ?? (await this.#ctx.blobs.getKeyed(checkpointObjectKey(conversationId)));
    // The object is put after its item: a writer that died in between left none yet.
    if (packed === undefined) return undefined;
    return JSON.parse(brotliDecompressSync(packed).toString("utf8")) as LogCheckpoint;
  }

  async write(conversationId: string, checkpoint: LogCheckpoint): Promise<void> {
    const packed = brotliCompressSync(Buffer.from(JSON.stringify(checkpoint)), BROTLI);
    const inline = packed.length <= INLINE_MAX_BYTES;
    const item: Item = { ...key(conversationId), at: S(checkpoint.at) };
    if (inline) item.z = { B: packed };
    try {
      await this.#ctx.dynamo.send(
        new PutItemCommand({
          TableName: this.#ctx.table,
          Item: item,
          ConditionExpression: "attribute_not_exists(pk) OR #at < :at",
          ExpressionAttributeNames: { "#at": "at" },
          ExpressionAttributeValues: { ":at": S(checkpoint.at) },
        }),
      );
    } catch (error) {
      if (conditionRefusal(error)) return; // a checkpoint at or after this one is stored
      throw error;
    }
    if (!inline) await this.#ctx.blobs.putKeyed(checkpointObjectKey(conversationId), packed);
  }
}

function key(conversationId: string): Item {
  return { pk: S(conversationPk(conversationId)), sk: S(CHECKPOINT_SK) };
}

/** The S3 key of a conversation's checkpoint when too large for its item. */
export function checkpointObjectKey(conversationId: string): string {
  return `checkpoints/${encodeURIComponent(conversationId)}`;
}
