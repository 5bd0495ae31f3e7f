/**
 * Listings through the two sparse KEYS_ONLY indexes. An index is eventually consistent, so each
 * listing re-reads the submissions it found (strongly consistent, `loader.ts`) and keeps only
 * those whose fresh state still qualifies; results come in admission order (`ord`). Every
 * Query follows `LastEvaluatedKey` to the end. Nothing scans the table.
 */
import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import type { Submission } from "../store/submission.ts";
import type { StoreContext } from "./context.ts";
import { queryAll } from "./query.ts";
import { type Item, S, str } from "./item.ts";
import { submissionIdOf } from "./keys.ts";
import { type LoadedSubmission, loadSubmissions, peekStates, toSubmission } from "./loader.ts";
import { HARNESS_TABLE, STATUS_SHARDS, type StatusBucket, statusBucketKey } from "./table.ts";

/** Ids of every submission in `bucket` (all shards), optionally with `byStatusSk < below`. */
export async function idsInBucket(ctx: StoreContext, bucket: StatusBucket, below?: string): Promise<string[]> {
  const index = HARNESS_TABLE.indexes.byStatus;
  const shards = Array.from({ length: STATUS_SHARDS }, (_, shard) =>
    queryKeys(ctx, index.indexName, {
      KeyConditionExpression: below === undefined ? "#pk = :pk" : "#pk = :pk AND #sk < :below",
      ExpressionAttributeNames: below === undefined ? { "#pk": index.partitionKey } : { "#pk": index.partitionKey, "#sk": index.sortKey },
      ExpressionAttributeValues: {
        ":pk": S(statusBucketKey(bucket, shard)),
        ...(below === undefined ? {} : { ":below": S(below) }),
      },
    }),
  );
  return (await Promise.all(shards)).flat().map((key) => submissionIdOf(str(key, "pk")!));
}

/**
 * The peeked state items of a bucket, one read shared by the listings that ask for the same
 * bucket at the same time (a sweep lists terminalizing settlements and expired leases, both
 * in `running`, together): the read starts after each of them was asked for.
 */
export class BucketPeeks {
  readonly #ctx: StoreContext;
  readonly #inFlight = new Map<string, Promise<Item[]>>();

  constructor(ctx: StoreContext) {
    this.#ctx = ctx;
  }

  peek(bucket: StatusBucket, below?: string): Promise<Item[]> {
    const key = `${bucket} ${below ?? ""}`;
    const shared = this.#inFlight.get(key);
    if (shared) return shared;
    const read = (async () => {
      const ids = await idsInBucket(this.#ctx, bucket, below);
      return ids.length === 0 ? [] : peekStates(this.#ctx, ids);
    })().finally(() => this.#inFlight.delete(key));
    this.#inFlight.set(key, read);
    return read;
  }
}

/** Ids of the children of `parentId`. */
export async function childIds(ctx: StoreContext, parentId: string): Promise<string[]> {
  const index = HARNESS_TABLE.indexes.byParent;
  const keys = await queryKeys(ctx, index.indexName, {
    KeyConditionExpression: "#pk = :pk",
    ExpressionAttributeNames: { "#pk": index.partitionKey },
    ExpressionAttributeValues: { ":pk": S(parentId) },
  });
  return keys.map((key) => submissionIdOf(str(key, "pk")!));
}

/**
 * Keeps those of `ids` whose fresh state passes `keep`, in admission order. The state items are
 * peeked at first (eventually consistent, inputs left alone): a sweep with nothing to do reads
 * each running submission's small state item at half a unit, not its input. Only the candidates
 * are read again, strongly consistent and whole, and filtered on that read.
 */
export async function freshSubmissions(
  ctx: StoreContext,
  ids: readonly string[] | Promise<Item[]>,
  keep: (state: Item) => boolean,
): Promise<Submission[]> {
  const peeked = ids instanceof Promise ? await ids : ids.length === 0 ? [] : await peekStates(ctx, ids);
  const candidates = peeked.filter(keep).map((state) => str(state, "id")!);
  if (candidates.length === 0) return [];
  const loaded = [...(await loadSubmissions(ctx, candidates)).values()].filter((l: LoadedSubmission) => keep(l.state));
  loaded.sort((a, b) => compare(str(a.state, "ord")!, str(b.state, "ord")!));
  return Promise.all(loaded.map((l) => toSubmission(ctx, l)));
}

async function queryKeys(
  ctx: StoreContext,
  indexName: string,
  query: {
    KeyConditionExpression: string;
    ExpressionAttributeNames: Record<string, string>;
    ExpressionAttributeValues: Record<string, AttributeValue>;
  },
): Promise<Item[]> {
  return queryAll(ctx, { IndexName: indexName, ...query });
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
