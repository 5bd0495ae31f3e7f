import { conversationCreatedDraft } from "../conversation/conversation-created.ts";
import type { ConversationRecord, RecordDraft, RecordKind, RecordPayloads, SettledPayload } from "../conversation/records.ts";
import { isHarnessError, StoreFailure } from "../errors.ts";
import type { Clock } from "../ports/clock.ts";
import type { LogWriter } from "../ports/log-writer.ts";
import { correlationOf } from "../ports/observer.ts";
import type { LogStore } from "../ports/store.ts";
import type { InboxKind, Submission } from "../ports/submission.ts";

/**
 * The engine's {@link LogWriter}: one per attempt (and one per recoverer that settles a
 * crashed settlement). See the interface for the rules every write follows.
 */
export class AttemptLogWriter implements LogWriter {
  readonly correlation: LogWriter["correlation"];
  readonly #store: LogStore;
  readonly #clock: Clock;
  readonly #attemptId: string | undefined;
  #recordHead: string | undefined;
  /** The tail of the serialized writes. */
  #writes: Promise<void> = Promise.resolve();
  #timeAt = NaN;
  #timeText = "";

  /** `attemptId` is the writing attempt (undefined only for a recoverer of a row that has none). */
  constructor(store: LogStore, clock: Clock, sub: Pick<Submission, "id" | "sessionKey" | "conversationId">, attemptId: string | undefined) {
    this.#store = store;
    this.#clock = clock;
    this.#attemptId = attemptId;
    this.correlation = correlationOf(sub, attemptId);
  }

  get recordHead(): string | undefined {
    return this.#recordHead;
  }

  read(): Promise<ConversationRecord[]> {
    return this.#serial(async () => {
      const records = await classified(() => this.#store.readRecords(this.correlation.conversationId));
      this.#recordHead = records.at(-1)?.id ?? "";
      return records;
    });
  }

  append(drafts: readonly RecordDraft[]): Promise<ConversationRecord[]> {
    const attemptId = this.#attemptId;
    if (attemptId === undefined) return Promise.reject(new Error("a fenced append needs an attempt"));
    return this.#write(drafts, { submissionId: this.correlation.submissionId, attemptId });
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
      this.#advance(records);
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
  #write(drafts: readonly RecordDraft[], fence: { submissionId: string; attemptId: string }): Promise<ConversationRecord[]> {
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
    options: { fence?: { submissionId: string; attemptId: string } },
  ): Promise<ConversationRecord[]> {
    const batch =
      head === ""
        ? [conversationCreatedDraft(this.correlation.conversationId, this.correlation.sessionKey, this.#time(this.#clock.now())), ...drafts]
        : [...drafts];
    try {
      const appended = await classified(() =>
        this.#store.appendRecords(this.correlation.conversationId, batch, head === undefined ? options : { ...options, expectedHead: head }),
      );
      this.#advance(appended);
      return head === "" ? appended.slice(1) : appended;
    } catch (err) {
      // A store failure may have written the batch or not: the head is unknown from here on.
      if (isHarnessError(err, "store_failure")) this.#recordHead = undefined;
      throw err;
    }
  }

  #advance(records: readonly ConversationRecord[]): void {
    if (records.length > 0) this.#recordHead = records[records.length - 1]!.id;
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

/** Runs a store call; a lost compare-and-set stays `ClaimLost`, anything else becomes `StoreFailure`. */
async function classified<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (isHarnessError(err, "claim_lost") || isHarnessError(err, "store_failure")) throw err;
    throw new StoreFailure(err);
  }
}
