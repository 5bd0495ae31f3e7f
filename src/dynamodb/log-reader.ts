/**
 * Reading a conversation's log: the batch items of its partition, strongly consistent, from a
 * record id on (ADR 0009). A read after a record that ends a batch starts at that batch's
 * successor's key; any other start first reads the batch holding it. Spilled payloads are
 * fetched back from S3.
 */
import { QueryCommand } from "@aws-sdk/client-dynamodb";
import { isStreamingDeltaKind, type ConversationRecord } from "../protocol/records.ts";
import { BoundedMap } from "./bounded-map.ts";
import type { StoreContext } from "./context.ts";
import { type Item, S } from "./item.ts";
import { conversationPk } from "./keys.ts";
import { BATCH_KEY_END, BATCH_PREFIX, type BatchHeader, batchDeltasFolded, batchEntries, batchHeader, batchPrev, batchSk } from "./log-batch.ts";

export class LogReader {
  readonly #ctx: StoreContext;
  /** Record ids known to end a batch: a read after one of them needs no look back. */
  readonly #ends = new BoundedMap<string, true>(20_000);
  /**
   * Told the log's last batch whenever a read reached the end of the log: the writer's first
   * append after a read (a claimed run's rebuild, then its first record) then needs no read of
   * the tail. A sight that is stale by then costs a refused put and a read, as any stale tail.
   */
  onTail: ((conversationId: string, tail: BatchHeader) => void) | undefined;

  constructor(ctx: StoreContext) {
    this.#ctx = ctx;
  }

  /** Notes that record `id` ends a batch of `conversationId` (the writer tells what it put). */
  noteBatchEnd(conversationId: string, id: string): void {
    this.#ends.set(endKey(conversationId, id), true);
  }

  async readRecords(conversationId: string, afterId = "", limit?: number): Promise<ConversationRecord[]> {
    const max = limit === undefined ? Number.POSITIVE_INFINITY : Math.max(0, Math.floor(limit));
    // Every batch key sorts below BATCH_KEY_END; an afterId above it (no id can be) would make
    // the key range empty, which DynamoDB refuses as an invalid BETWEEN.
    if (max === 0 || batchSk(afterId) > BATCH_KEY_END) return [];
    const out: ConversationRecord[] = [];
    const batches = this.#batchesFrom(conversationId, afterId === "" ? BATCH_PREFIX : batchSk(afterId), () => max - out.length);
    try {
      let next = await batches.next();
      // The batches keyed from `L#<afterId>` on hold every record after afterId only when
      // afterId ends a batch; otherwise the rest of its own batch comes first.
      const boundary = afterId === "" || (!next.done && batchPrev(next.value) === afterId) || this.#ends.has(endKey(conversationId, afterId));
      if (!boundary) {
        const before = await this.#batchBefore(conversationId, afterId);
        if (before) await this.#take(conversationId, before, afterId, out, max);
      }
      for (; !next.done && out.length < max; next = await batches.next()) await this.#take(conversationId, next.value, afterId, out, max);
    } finally {
      await batches.return(undefined);
    }
    return out;
  }

  /** Batch items from sort key `lo` on, strongly consistent, a page sized to what is still wanted. */
  async *#batchesFrom(conversationId: string, lo: string, wanted: () => number): AsyncGenerator<Item, void, undefined> {
    let start: Item | undefined;
    let last: Item | undefined;
    do {
      const want = wanted();
      const res = await this.#ctx.dynamo.send(
        new QueryCommand({
          TableName: this.#ctx.table,
          KeyConditionExpression: "pk = :pk AND sk BETWEEN :lo AND :hi",
          ExpressionAttributeValues: { ":pk": S(conversationPk(conversationId)), ":lo": S(lo), ":hi": S(BATCH_KEY_END) },
          ConsistentRead: true,
          ExclusiveStartKey: start,
          // A batch holds one record or more (a marker none): a page of `want` batches
          // usually covers a limited read; an unlimited one takes DynamoDB's 1 MB pages.
          ...(Number.isFinite(want) ? { Limit: Math.max(1, Math.min(want, 25)) } : {}),
        }),
      );
      for (const item of res.Items ?? []) {
        last = item;
        yield item;
      }
      start = res.LastEvaluatedKey;
    } while (start);
    // Reached only when the reader asked past the last item: `last` is the log's tail.
    if (last) this.onTail?.(conversationId, batchHeader(last));
  }

  /** The batch before sort key `L#<afterId>`: the one holding afterId when it ends no batch. */
  async #batchBefore(conversationId: string, afterId: string): Promise<Item | undefined> {
    const res = await this.#ctx.dynamo.send(
      new QueryCommand({
        TableName: this.#ctx.table,
        KeyConditionExpression: "pk = :pk AND sk BETWEEN :lo AND :hi",
        ExpressionAttributeValues: { ":pk": S(conversationPk(conversationId)), ":lo": S(BATCH_PREFIX), ":hi": S(batchSk(afterId)) },
        ScanIndexForward: false,
        Limit: 1,
        ConsistentRead: true,
      }),
    );
    return res.Items?.[0];
  }

  /** Appends a batch's records after `afterId` to `out`, up to `max`, restoring spilled payloads. */
  async #take(conversationId: string, item: Item, afterId: string, out: ConversationRecord[], max: number): Promise<void> {
    const entries = batchEntries(item);
    if (entries.length === 0) return;
    this.noteBatchEnd(conversationId, entries[entries.length - 1]!.rest.id);
    // Folded deltas (ADR 0034): gone for readers from their time on, whenever the TTL deletes them.
    const folded = batchDeltasFolded(item, this.#ctx.clock.now());
    const taken = entries.filter((e) => e.rest.id > afterId && !(folded && isStreamingDeltaKind(e.rest.kind))).slice(0, max - out.length);
    const payloads = await Promise.all(
      taken.map(async (e) => (e.payloadRef === undefined ? e.payload : JSON.parse(await this.#ctx.blobs.getText(e.payloadRef)))),
    );
    taken.forEach((e, i) => out.push({ ...e.rest, payload: payloads[i] } as ConversationRecord));
  }
}

/** Key of the fact "record `id` ends a batch of `conversationId`". */
function endKey(conversationId: string, id: string): string {
  return `${conversationId} ${id}`;
}
