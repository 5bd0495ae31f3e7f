import { isStreamingDeltaKind, type ConversationRecord } from "../protocol/records.ts";
import { activeLeafPath, reduce } from "./reducer.ts";

/**
 * A rebuild's starting point at a record of the log (ADR 0018): what a rebuild from the start of
 * the log would still use of everything up to that record, so a later rebuild reads only the log
 * after it. Derived data, never the truth: any checkpoint of a conversation is valid (it describes
 * an immutable prefix of an append-only log), so whoever stores one only has to keep the newest.
 */
export interface LogCheckpoint {
  /** The last record it covers: the log read after this id continues it. */
  at: string;
  /**
   * The active path of the log up to `at` (root first), streaming deltas left out: reducing it
   * and then the records after `at` gives the tree the whole log gives, on that path.
   */
  path: ConversationRecord[];
  /**
   * Records up to `at` that are not on `path`, of submissions not settled by `at` (streaming
   * deltas left out), in log order: what a submission still running needs of its own earlier
   * records (its input, turns, corrections, usage) once a compaction cut them off the path.
   */
  open: ConversationRecord[];
}

/** What a rebuild reads: records to reduce, and the running submissions' earlier records. */
export interface LogView {
  /** Reduces to the conversation's active path as the whole log does (deltas before a checkpoint left out). */
  records: ConversationRecord[];
  /** The checkpoint's `open` records (not to be reduced: they are off the path). */
  earlier: ConversationRecord[];
}

/** Text and thinking deltas: the finished message record holds what they streamed. */
export function isStreamingDelta(record: ConversationRecord): boolean {
  return isStreamingDeltaKind(record.kind);
}

/** The view of a whole log read from its start. */
export function wholeLogView(records: ConversationRecord[]): LogView {
  return { records, earlier: [] };
}

/**
 * The checkpoint at `at` of a view whose records end at `at` (the view read, plus every record
 * appended after it, without a gap). Pure.
 */
export function checkpointOf(view: LogView, at: string): LogCheckpoint {
  const path = activeLeafPath(reduce(view.records)).filter((r) => !isStreamingDelta(r));
  const onPath = new Set(path.map((r) => r.id));
  const settled = new Set<string>();
  for (const r of [...view.earlier, ...view.records]) {
    if (r.kind === "submission_settled" && r.submissionId !== undefined) settled.add(r.submissionId);
  }
  const open = [...view.earlier, ...view.records.filter((r) => !onPath.has(r.id) && !isStreamingDelta(r))]
    .filter((r) => r.submissionId !== undefined && !settled.has(r.submissionId))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { at, path, open };
}

/**
 * The view of the log from a checkpoint and the records after it (`tail`, ids above `at`), or
 * undefined when the tail does not {@link followsCheckpoint follow it}: the caller then reads
 * the whole log.
 */
export function viewFrom(checkpoint: LogCheckpoint, tail: readonly ConversationRecord[]): LogView | undefined {
  if (!followsCheckpoint(checkpoint, tail)) return undefined;
  return { records: [...checkpoint.path, ...tail], earlier: [...checkpoint.open] };
}

/**
 * Whether records after a checkpoint reduce after its path as they do after the whole log up to
 * it: false when a compaction among them names, as its first kept entry, a record up to `at` that
 * is not on the checkpoint's path (the whole log's reducer would re-root there, the checkpoint's
 * cannot). The harness never writes one (it keeps an entry of the active path it reduced).
 */
export function followsCheckpoint(checkpoint: LogCheckpoint, records: readonly ConversationRecord[]): boolean {
  let known: Set<string> | undefined;
  for (const r of records) {
    if (r.kind !== "compaction") continue;
    const pointer: unknown = (r.payload as { firstKeptEntryId?: unknown } | undefined)?.firstKeptEntryId;
    if (typeof pointer !== "string" || pointer === "" || pointer > checkpoint.at) continue;
    known ??= new Set(checkpoint.path.map((p) => p.id));
    if (!known.has(pointer)) return false;
  }
  return true;
}
