/**
 * One committed append of a conversation log as one item: the batch. A conversation's batches
 * form a chain in its partition `CONV#<id>`: each batch's sort key is `L#<prev>`, where `prev`
 * is the last id minted by the batch before it ("" for the first). Two writers that read the
 * same tail both put `L#<tail>`; `attribute_not_exists` lets exactly one of them win, so the
 * chain never forks, and sort-key order is append order.
 *
 * A batch holds its records (ids, drafts, payloads or S3 refs of spilled payloads) as one JSON
 * array, brotli-compressed when that is smaller: DynamoDB bills writes per started KB of item,
 * and record envelopes and text compress well. A batch with no records is a takeover marker
 * (`conversation-log.ts`): it mints one id, so later batches chain after it, but readers skip it.
 */
import { brotliCompressSync, brotliDecompressSync, constants } from "node:zlib";
import type { ConversationRecord } from "../protocol/records.ts";
import type { Item } from "./item.ts";
import { reqStr, S, str } from "./item.ts";
import { conversationPk } from "./keys.ts";

export const BATCH_PREFIX = "L#";
/**
 * Lean history (ADR 0034). The deltas of a model turn fold `deltaRetentionMs` after the turn
 * began (its id's time), all at the same instant. A batch of deltas only carries the table's TTL
 * attribute `expiresAt` (epoch seconds) and DynamoDB deletes it, for free, within days; a batch
 * that also holds other records (the turn's last deltas go with its completed message) stays and
 * carries `deltasFoldAt` instead. Reads leave out the deltas of a batch from either time on, so
 * what a reader sees never depends on when the TTL gets to an item, and a turn's deltas are seen
 * all or not at all.
 */
export const EXPIRES_AT = "expiresAt";
export const DELTAS_FOLD_AT = "deltasFoldAt";
/** Sorts after every batch key (ids are Crockford base32). */
export const BATCH_KEY_END = "L#~";
/** Compress record JSON from this size on (below it brotli's framing eats the gain). */
const COMPRESS_FROM_BYTES = 200;
/** Fast settings: for items of a few KB, quality 5 compresses as well as 11 in a tenth of the time. */
const BROTLI = { params: { [constants.BROTLI_PARAM_QUALITY]: 5 } };

/** The sort key of the batch that follows `prev` (the last id of the batch before it). */
export function batchSk(prev: string): string {
  return `${BATCH_PREFIX}${prev}`;
}

/** A record as a batch keeps it: everything but the payload, and the payload or its S3 ref. */
export interface StoredRecord {
  /** The record without `payload`, as JSON (its `id` included). */
  rest: string;
  /** The payload as JSON, unless spilled. */
  payload?: string;
  /** The digest of the spilled payload JSON in the blob store. */
  payloadRef?: string;
}

/** What a writer needs to know of a batch to append after it. */
export interface BatchHeader {
  /** The last id the batch minted: the next batch's key is `L#<end>`. */
  end: string;
  /** The last visible record id at this point of the log ("" when none yet). */
  head: string;
  /** The highest fence epoch written so far (`log-epoch.ts`); "" when none. */
  epoch: string;
  /** The token of the append that wrote it (recognises a retried put whose response was lost). */
  tx: string;
}

export function encodeBatch(conversationId: string, prev: string, header: BatchHeader, records: StoredRecord[]): Item {
  const item: Item = {
    pk: S(conversationPk(conversationId)),
    sk: S(batchSk(prev)),
    endId: S(header.end),
    tx: S(header.tx),
  };
  if (header.head !== "") item.headId = S(header.head);
  if (header.epoch !== "") item.ep = S(header.epoch);
  if (records.length === 0) return item;
  const json = `[${records.map(encodeRecord).join(",")}]`;
  const raw = Buffer.from(json);
  const packed = raw.length >= COMPRESS_FROM_BYTES ? brotliCompressSync(raw, BROTLI) : undefined;
  if (packed && packed.length < raw.length) item.z = { B: packed };
  else item.j = S(json);
  return item;
}

export function batchHeader(item: Item): BatchHeader {
  return { end: reqStr(item, "endId"), head: str(item, "headId") ?? "", epoch: str(item, "ep") ?? "", tx: str(item, "tx") ?? "" };
}

/** The `prev` of a batch item: its sort key without the prefix. */
export function batchPrev(item: Item): string {
  return reqStr(item, "sk").slice(BATCH_PREFIX.length);
}

/** A record read back from a batch: everything but the payload, and the payload or its ref. */
export interface BatchEntry {
  /** The record without `payload` (its `id` included). */
  rest: { id: string } & Record<string, unknown>;
  payload?: unknown;
  payloadRef?: string;
}

/**
 * Marks when a batch's deltas fold (rounded up to the second, as DynamoDB's TTL counts): the
 * whole item expires when `deltasOnly`, else only its deltas are left out of reads.
 */
export function foldBatchDeltasAt(item: Item, atMs: number, deltasOnly: boolean): void {
  item[deltasOnly ? EXPIRES_AT : DELTAS_FOLD_AT] = { N: String(Math.ceil(atMs / 1000)) };
}

/** Whether a batch item's deltas have folded at `nowMs` (an expired item may not be deleted yet). */
export function batchDeltasFolded(item: Item, nowMs: number): boolean {
  const at = item[EXPIRES_AT]?.N ?? item[DELTAS_FOLD_AT]?.N;
  return at !== undefined && Number(at) * 1000 <= nowMs;
}

/** The records of a batch item, in append order; spilled payloads are still refs. */
export function batchEntries(item: Item): BatchEntry[] {
  const packed = item.z?.B;
  const json = packed ? brotliDecompressSync(packed).toString("utf8") : item.j?.S;
  if (json === undefined) return [];
  return (JSON.parse(json) as [BatchEntry["rest"], unknown, string?][]).map(([rest, payload, payloadRef]) =>
    payloadRef === undefined ? { rest, payload } : { rest, payloadRef },
  );
}

/** A stored record with its payload JSON as a full record. */
export function recordFrom(rest: string, payload: string): ConversationRecord {
  return { ...JSON.parse(rest), payload: JSON.parse(payload) } as ConversationRecord;
}

/** `[rest, payload]` or `[rest, null, ref]`: the JSON texts are spliced, not re-serialized. */
function encodeRecord(record: StoredRecord): string {
  if (record.payloadRef !== undefined) return `[${record.rest},null,${JSON.stringify(record.payloadRef)}]`;
  return `[${record.rest},${record.payload}]`;
}
