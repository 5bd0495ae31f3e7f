import type { ConversationRecord } from "../protocol/records.ts";

/** One record placed in the conversation tree. */
export interface ReducedEntry {
  readonly record: ConversationRecord;
  /** Id of the parent entry; `""` for a root. Only a later compaction ever changes it. */
  parentId: string;
}

/**
 * The conversation tree derived from a record log. It is never stored: every reader reduces
 * the log again, so agent state is never trusted from memory.
 */
export interface ConversationTree {
  /** Every record of the log, in log order (nothing is ever deleted). */
  readonly entries: readonly ReducedEntry[];
  /** Id of the active leaf; `""` for an empty log. */
  readonly leafId: string;
  /** Entries by record id, for O(1) parent walks. */
  readonly index: ReadonlyMap<string, ReducedEntry>;
}

/**
 * Reduces a record log (in log order) to its conversation tree.
 *
 * A record chains onto the current leaf and becomes the leaf, except a `compaction` whose
 * `payload.firstKeptEntryId` names an entry already seen: that compaction becomes a new root,
 * the kept entry is re-parented onto it, and the leaf stays where it was (the kept entry's
 * descendants still lead to it). The summarized history stays in the tree as an abandoned
 * branch: history is re-rooted, never rewritten.
 *
 * Pure, deterministic and prefix-consistent: `reduce(log.slice(0, n))` holds exactly the first
 * n records in order, and an entry's parent changes only when a later compaction re-parents it.
 * O(n) time; the input is not mutated.
 */
export function reduce(records: readonly ConversationRecord[]): ConversationTree {
  const entries: ReducedEntry[] = [];
  const index = new Map<string, ReducedEntry>();
  let leafId = "";
  for (const record of records) {
    const kept = record.kind === "compaction" ? keptEntry(record, index) : undefined;
    if (kept !== undefined) {
      const entry: ReducedEntry = { record, parentId: "" };
      entries.push(entry);
      kept.parentId = record.id;
      index.set(record.id, entry);
      continue;
    }
    const entry: ReducedEntry = { record, parentId: leafId };
    entries.push(entry);
    index.set(record.id, entry);
    leafId = record.id;
  }
  return { entries, leafId, index };
}

/** The entry a compaction keeps, if its pointer names an entry already in the tree. */
function keptEntry(
  record: Extract<ConversationRecord, { kind: "compaction" }>,
  index: ReadonlyMap<string, ReducedEntry>,
): ReducedEntry | undefined {
  // Payloads come from storage: tolerate a missing or malformed pointer (then it chains).
  const pointer: unknown = (record.payload as { firstKeptEntryId?: unknown } | undefined)?.firstKeptEntryId;
  return typeof pointer === "string" && pointer !== "" ? index.get(pointer) : undefined;
}

/**
 * The records from the root of the active branch down to the leaf (root first). This is
 * what the agent sees as its context, before projection.
 */
export function activeLeafPath(tree: ConversationTree): ConversationRecord[] {
  const path: ConversationRecord[] = [];
  let id = tree.leafId;
  // A well-formed log is a forest (a compaction only ever adopts onto a fresh root), so the
  // walk ends at a root. The bound only protects against logs with duplicate record ids.
  for (let steps = 0; id !== "" && steps < tree.entries.length; steps++) {
    const entry = tree.index.get(id);
    if (entry === undefined) break;
    path.push(entry.record);
    id = entry.parentId;
  }
  return path.reverse();
}
