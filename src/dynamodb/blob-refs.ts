/**
 * Which conversations and submissions reference which content-addressed blobs (ADR 0034), so
 * deleting a conversation deletes the blobs only it references and keeps shared ones. A reference
 * is two items: `BLOB#<digest>` / `<owner pk>` (who references a blob: one Query) and
 * `<owner pk>` / `B#<digest>` (what an owner references, in the partition its deletion reads
 * anyway). Both are written before the item that references the blob (an input, a record batch,
 * an inbox message, a spilled outcome), like the blob itself: a reference that never got its
 * item only keeps a blob longer, never loses one. Puts are idempotent.
 */
import { BatchWriteItemCommand, PutItemCommand, type WriteRequest } from "@aws-sdk/client-dynamodb";
import type { StoreContext } from "./context.ts";
import { type Item, S } from "./item.ts";

/**
 * Sort-key prefix of an owner's reference items, outside every range the other readers query
 * (a submission's `IN`..`ST`, `AT#`…, `IB#`…; a log's `L#`..`L#~`).
 */
export const BLOB_REF_PREFIX = "B#";

/** The partition of the references to `digest`. */
export function blobRefsPk(digest: string): string {
  return `BLOB#${digest}`;
}

/**
 * Records that the owner partition `ownerPk` (a conversation's `CONV#<id>`, or a submission's
 * `SUB#<id>` for its input, inbox bodies and outcome) references each of `digests` (undefined
 * entries skipped).
 */
export async function noteBlobRefs(ctx: StoreContext, ownerPk: string, digests: Iterable<string | undefined>): Promise<void> {
  const unique = new Set<string>();
  for (const digest of digests) if (digest !== undefined) unique.add(digest);
  if (unique.size === 0) return;
  // Single puts, not BatchWriteItem: every role that appends may put items, and only the
  // deleting one may batch-write (the construct's grants).
  const items = [...unique].flatMap((digest): Item[] => [
    { pk: S(blobRefsPk(digest)), sk: S(ownerPk) },
    { pk: S(ownerPk), sk: S(`${BLOB_REF_PREFIX}${digest}`), digest: S(digest) },
  ]);
  await Promise.all(items.map((Item) => ctx.dynamo.send(new PutItemCommand({ TableName: ctx.table, Item }))));
}

/**
 * Writes `requests` in batches of 25, sending unprocessed items again (with a short backoff)
 * until every one is written.
 */
export async function batchWrite(ctx: StoreContext, requests: WriteRequest[]): Promise<void> {
  for (let i = 0; i < requests.length; i += 25) {
    let pending: WriteRequest[] = requests.slice(i, i + 25);
    for (let attempt = 0; pending.length > 0; attempt++) {
      if (attempt > 0) await new Promise((r) => setTimeout(r, Math.min(1_000, 25 * 2 ** attempt)));
      const res = await ctx.dynamo.send(new BatchWriteItemCommand({ RequestItems: { [ctx.table]: pending } }));
      pending = res.UnprocessedItems?.[ctx.table] ?? [];
    }
  }
}
