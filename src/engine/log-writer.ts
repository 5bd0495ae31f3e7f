import { checkpointOf, followsCheckpoint, viewFrom, wholeLogView, type LogCheckpoint, type LogView } from "../conversation/checkpoint.ts";
import { conversationCreatedDraft } from "../conversation/conversation-created.ts";
import type { ConversationRecord, ParentRef, RecordDraft, RecordKind, RecordPayloads, SettledPayload } from "../protocol/records.ts";
import { isHarnessError, StoreFailure } from "../errors.ts";
import type { Clock } from "../ports/clock.ts";
import type { LogWriter } from "../ports/log-writer.ts";
import { correlationOf } from "../ports/observer.ts";
import type { AppendFence, ClaimStore, LogStore } from "../store/store.ts";
import type { Cancellation, InboxKind, Submission } from "../store/submission.ts";

/**
 * The engine's {@link LogWriter}: one per attempt (and one per recoverer that settles a
 * crashed settlement). See the interface for the rules every write follows.
 */
export class AttemptLogWriter implements LogWriter {
  readonly correlation: LogWriter["correlation"];
  readonly #store: LogStore & Pick<ClaimStore, "getSubmission">;
  readonly #clock: Clock;
  readonly #attemptId: string | undefined;
  readonly #parent: { submissionId: string; callId: string } | undefined;
  #recordHead: string | undefined;
  /** The log as last read (a checkpoint's view or the whole log), grown by this attempt's appends while they follow it without a gap. */
  #view: LogView | undefined;
  /** The last record `#view` holds; `#viewGrows` false once an append followed an unknown head. */
  #viewHead: string | undefined;
  #viewGrows = false;
  /** The checkpoint `#view` started from (undefined: the whole log). */
  #viewBase: LogCheckpoint | undefined;
  /** JSON bytes of the view's records a rebuild from the stored checkpoint would read again. */
  #uncheckpointedBytes = 0;
  /** The tail of the serialized writes. */
  #writes: Promise<void> = Promise.resolve();
  #timeAt = NaN;
  #timeText = "";

  /** `attemptId` is the writing attempt (undefined only for a recoverer of a row that has none). */
  /** Told when an append's fence finds a cancel requested (the attempt stops at once). */
  readonly #onCancel: ((cancellation: Cancellation) => void) | undefined;
  constructor(
    store: LogStore & Pick<ClaimStore, "getSubmission">,
    clock: Clock,
    sub: Pick<Submission, "id" | "sessionKey" | "conversationId" | "parentSubmissionId" | "parentCallId">,
    attemptId: string | undefined,
    options: { onCancel?: (cancellation: Cancellation) => void } = {},
  ) {
    this.#onCancel = options.onCancel;
    this.#store = store;
    this.#clock = clock;
    this.#attemptId = attemptId;
    this.#parent = sub.parentSubmissionId !== undefined && sub.parentCallId !== undefined ? { submissionId: sub.parentSubmissionId, callId: sub.parentCallId } : undefined;
    this.correlation = correlationOf(sub, attemptId);
  }

  get recordHead(): string | undefined {
    return this.#recordHead;
  }

  get earlier(): readonly ConversationRecord[] {
    return this.#view?.earlier ?? [];
  }

  /**
   * Reads the log from its newest checkpoint on (ADR 0018), or whole when there is none or a
   * record after it rules it out. Returns a copy: the caller keeps its own local log.
   */
  read(): Promise<ConversationRecord[]> {
    return this.#serial(async () => {
      const conversationId = this.correlation.conversationId;
      const stored = await classified(() => this.#store.readCheckpoint(conversationId));
      let view: LogView | undefined;
      let head = "";
      let read: readonly ConversationRecord[] = [];
      let fromCheckpoint = false;
      if (stored) {
        read = await classified(() => this.#store.readRecords(conversationId, stored.at));
        view = viewFrom(stored, read);
        fromCheckpoint = view !== undefined;
        head = read.at(-1)?.id ?? stored.at;
      }
      if (view === undefined) {
        read = await classified(() => this.#store.readRecords(conversationId));
        view = wholeLogView([...read]);
        head = read.at(-1)?.id ?? "";
      }
      this.#view = view;
      this.#viewBase = fromCheckpoint ? stored : undefined;
      this.#viewHead = head;
      this.#viewGrows = true;
      this.#uncheckpointedBytes = jsonBytes(read);
      this.#recordHead = head;
      return [...view.records];
    });
  }

  /**
   * Stores the checkpoint of the log as this attempt knows it exactly (what it read, and what it
   * appended after that without a gap: up to its settlement record, which follows whatever is
   * there), when the next rebuild would otherwise read at least {@link CHECKPOINT_AFTER_BYTES}
   * of it again. Best effort: a failure only leaves the older checkpoint in place.
   */
  async saveCheckpoint(): Promise<void> {
    const view = this.#view;
    const at = this.#viewHead;
    if (view === undefined || at === undefined || at === "" || this.#uncheckpointedBytes < CHECKPOINT_AFTER_BYTES) return;
    this.#uncheckpointedBytes = 0;
    try {
      await this.#store.writeCheckpoint(this.correlation.conversationId, checkpointOf(view, at));
    } catch {
      // The next settlement tries again; until then rebuilds read from the older checkpoint.
    }
  }

  append(drafts: readonly RecordDraft[]): Promise<ConversationRecord[]> {
    const attemptId = this.#attemptId;
    if (attemptId === undefined) return Promise.reject(new Error("a fenced append needs an attempt"));
    return this.#write(drafts, { submissionId: this.correlation.submissionId, attemptId, ...(this.#onCancel ? { onCancel: this.#onCancel } : {}) });
  }

  /**
   * The submission's one `submission_settled` record. Not fenced: the settlement reservation (or,
   * for a recoverer, the `terminalizing` row it found) already says who settles, and the store
   * refuses a second one for the submission (`ClaimLost`). With `onRecordHead` it is conditional
   * on the record head (a recoverer's guard against another recoverer); without, it follows
   * whatever is there. Into an empty log `conversation_created` goes first: known empty from the
   * record head, or, with `mayOpenLog` (a settlement that may precede any drive), looked up.
   */
  appendSettled(payload: SettledPayload, options: { onRecordHead?: boolean; mayOpenLog?: boolean } = {}): Promise<ConversationRecord> {
    const draft = this.#draftAt<"submission_settled">("submission_settled", payload, this.#clock.now());
    return this.#serial(async () => {
      if (options.onRecordHead) return (await this.#appendAt(this.#recordHead, [draft], {})).at(-1)!;
      let head = this.#recordHead === "" ? "" : undefined;
      if (this.#recordHead === undefined && options.mayOpenLog) {
        const first = await classified(() => this.#store.readRecords(this.correlation.conversationId, "", 1));
        if (first.length === 0) head = "";
      }
      if (head === "") {
        try {
          return (await this.#appendAt("", [draft], {})).at(-1)!;
        } catch (err) {
          // Another writer opened the log first: follow it.
          if (!isHarnessError(err, "claim_lost")) throw err;
        }
      }
      return (await this.#appendAt(undefined, [draft], {})).at(-1)!;
    });
  }

  drain(kinds: readonly InboxKind[]): Promise<ConversationRecord[]> {
    const attemptId = this.#attemptId;
    if (attemptId === undefined) return Promise.reject(new Error("a drain needs an attempt"));
    return this.#serial(async () => {
      const records = await classified(() =>
        this.#store.drainInbox({
          submissionId: this.correlation.submissionId,
          attemptId,
          kinds: [...kinds],
          ...(this.#recordHead !== undefined ? { expectedHead: this.#recordHead } : {}),
        }),
      );
      this.#advance(records, this.#recordHead);
      return records;
    });
  }

  draft<K extends RecordKind>(kind: K, payload: RecordPayloads[K], turnId?: string): RecordDraft {
    const draft = this.#draftAt(kind, payload, this.#clock.now());
    if (turnId !== undefined) draft.turnId = turnId;
    return draft;
  }

  #draftAt<K extends RecordKind>(kind: K, payload: RecordPayloads[K], now: number): RecordDraft {
    const { conversationId, sessionKey, submissionId } = this.correlation;
    const draft = { kind, conversationId, session: sessionKey.session, submissionId, time: this.#time(now), payload } as RecordDraft;
    if (this.#attemptId !== undefined) draft.attemptId = this.#attemptId;
    return draft;
  }

  /** RFC 3339 time of `now` (formatted once per clock tick). */
  #time(now: number): string {
    if (now !== this.#timeAt) {
      this.#timeAt = now;
      this.#timeText = new Date(now).toISOString();
    }
    return this.#timeText;
  }

  /** A fenced batch after the record head, one at a time. */
  #write(drafts: readonly RecordDraft[], fence: AppendFence): Promise<ConversationRecord[]> {
    return this.#serial(() => this.#appendAt(this.#recordHead, drafts, { fence }));
  }

  /**
   * One batch after `head` (after whatever is there when undefined); an empty log (`head` "")
   * gets its first record first, conditional on the empty head so it is never written twice.
   * Returns the caller's records.
   */
  async #appendAt(
    head: string | undefined,
    drafts: readonly RecordDraft[],
    options: { fence?: AppendFence },
  ): Promise<ConversationRecord[]> {
    const batch = head === "" ? [await this.#createdDraft(), ...drafts] : [...drafts];
    try {
      const appended = await classified(() =>
        this.#store.appendRecords(this.correlation.conversationId, batch, head === undefined ? options : { ...options, expectedHead: head }),
      );
      this.#advance(appended, head);
      return head === "" ? appended.slice(1) : appended;
    } catch (err) {
      // A store failure may have written the batch or not: the head is unknown from here on.
      if (isHarnessError(err, "store_failure")) this.#recordHead = undefined;
      throw err;
    }
  }

  /**
   * The log's first record, as admission writes it (`engine/admission.ts`): a child's carries its
   * `parentRef`, whose conversation id only the parent's row holds (read here, on this rare path
   * only: admission's own append of the record failed). A parent that is gone leaves it out.
   */
  async #createdDraft(): Promise<RecordDraft> {
    let parentRef: ParentRef | undefined;
    if (this.#parent) {
      const { submissionId, callId } = this.#parent;
      try {
        parentRef = { conversationId: (await classified(() => this.#store.getSubmission(submissionId))).conversationId, callId };
      } catch (err) {
        if (!isHarnessError(err, "store_failure") || !isHarnessError(err.cause, "submission_not_found")) throw err;
      }
    }
    return conversationCreatedDraft(this.correlation.conversationId, this.correlation.sessionKey, this.#time(this.#clock.now()), parentRef);
  }

  /** Moves the record head past `records`, appended after `after` (undefined: after whatever was there). */
  #advance(records: readonly ConversationRecord[], after: string | undefined): void {
    if (records.length === 0) return;
    // (A record that would not follow the checkpoint the view started from ends the view there.)
    const follows = this.#viewBase === undefined || followsCheckpoint(this.#viewBase, records);
    if (this.#viewGrows && after !== undefined && after === this.#viewHead && follows) {
      this.#view!.records.push(...records);
      this.#viewHead = records[records.length - 1]!.id;
      this.#uncheckpointedBytes += jsonBytes(records);
    } else {
      this.#viewGrows = false;
    }
    this.#recordHead = records[records.length - 1]!.id;
  }

  /**
   * Runs store calls one at a time, in call order: parallel tool calls end concurrently, and two
   * appends conditional on the same head would otherwise refuse each other.
   */
  #serial<T>(call: () => Promise<T>): Promise<T> {
    const run = this.#writes.then(call, call);
    this.#writes = run.then(
      () => {},
      () => {},
    );
    return run;
  }
}

/**
 * How much log a rebuild may read again after the newest checkpoint before a settlement stores a
 * new one (JSON bytes): a checkpoint costs a write (and an S3 PUT when large), reading 32 KiB a
 * few read units (ADR 0018).
 */
export const CHECKPOINT_AFTER_BYTES = 32 * 1024;

function jsonBytes(records: readonly ConversationRecord[]): number {
  let bytes = 0;
  for (const r of records) bytes += JSON.stringify(r).length;
  return bytes;
}

/** Runs a store call; a lost compare-and-set stays `ClaimLost`, anything else becomes `StoreFailure`. */
async function classified<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (isHarnessError(err, "claim_lost") || isHarnessError(err, "store_failure")) throw err;
    throw new StoreFailure(err);
  }
}
