import type { ConversationRecord, RecordDraft } from "../protocol/records.ts";

/**
 * A child's outcome handed to its waiting parent: the wake. The store appends `drafts` to the
 * parent's conversation and takes `callId` off the parent's pending calls in one atomic write;
 * the write that empties them requeues the parent.
 */
export interface ChildOutcomeDelivery {
  /** The waiting parent. */
  parentSubmissionId: string;
  /** The parent's `task` call the outcome answers (one of its `pendingCalls`). */
  callId: string;
  /**
   * One batch for the parent's log, unfenced (the parent holds no lease while it waits): the
   * `tool_outcome` for `callId`, after a repaired `task_spawned` when the parent's log lacks it.
   */
  drafts: RecordDraft[];
}

/** What a {@link ChildOutcomeDelivery} came to. */
export type ChildOutcomeDelivered =
  /** Appended; `requeued` when it answered the parent's last pending call (waiting → queued). */
  | { delivered: true; records: ConversationRecord[]; requeued: boolean }
  /**
   * Nothing written. `not_waiting`: the parent is not waiting (still running its turn, requeued,
   * or settled). `not_pending`: the parent waits, but not for this call (answered already).
   */
  | { delivered: false; reason: "not_waiting" | "not_pending" };
