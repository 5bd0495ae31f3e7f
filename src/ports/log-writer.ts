import type { ConversationRecord, RecordDraft, RecordKind, RecordPayloads } from "../protocol/records.ts";
import type { Correlation } from "./observer.ts";
import type { InboxKind } from "../store/submission.ts";

/**
 * One attempt's writer of its conversation's log: the engine creates it when it claims a
 * submission and hands it to the drive, and settlement appends through it too, so its errors
 * mean the same everywhere. It tracks the record head (the id of the last record the attempt
 * knows of), fences every append by the attempt and makes it conditional on that head, runs
 * writes one at a time in call order, and classifies store errors: `ClaimLost` when another
 * attempt (or recoverer) owns the log now, `StoreFailure` for anything else (retry the attempt).
 */
export interface LogWriter {
  /** The ids every record of this attempt carries, as an observer event's correlation. */
  readonly correlation: Readonly<Correlation> & { readonly submissionId: string };
  /** The record head: "" for an empty log, `undefined` before the first read or after a write of unknown outcome. */
  readonly recordHead: string | undefined;
  /**
   * Reads the log as a rebuild needs it and takes its last record as the record head: from the
   * newest checkpoint on (its path, then the records after it; ADR 0018), or the whole log.
   */
  read(): Promise<ConversationRecord[]>;
  /**
   * Records of the last `read` that it does not return because a checkpoint keeps them off its
   * path: earlier records of submissions still running (a submission's own counts and usage).
   */
  readonly earlier: readonly ConversationRecord[];
  /**
   * Appends `drafts` as one batch after the record head; on an empty log the conversation's
   * first record (`conversation_created`) goes first.
   */
  append(drafts: readonly RecordDraft[]): Promise<ConversationRecord[]>;
  /** Delivers the inbox's messages of `kinds` as `user_message` records (an empty drain still checks the fence). */
  drain(kinds: readonly InboxKind[]): Promise<ConversationRecord[]>;
  /** A record of this attempt, stamped now; `turnId` for a record inside a model turn. */
  draft<K extends RecordKind>(kind: K, payload: RecordPayloads[K], turnId?: string): RecordDraft;
}
