import type { ActivityPage, ActivityQuery } from "../store/activity.ts";
import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type { DatabaseSync } from "node:sqlite";
import { DatabaseSync as Database } from "./node-sqlite.ts";
import type { AttachmentRef, ConversationRecord, RecordDraft, SettledPayload } from "../protocol/records.ts";
import { DEFAULT_DELTA_RETENTION_MS, deltaRetentionOf } from "../conversation/delta-folding.ts";
import { type Clock, systemClock } from "../ports/clock.ts";
import type { ChildOutcomeDelivered, ChildOutcomeDelivery } from "../store/child-outcome.ts";
import type { LogCheckpoint } from "../conversation/checkpoint.ts";
import type { AppendOptions, ConversationDeletion, IdleConversationQuery, InboxDrain, Store } from "../store/store.ts";
import type { CallAnswered, CallAnswerWrite, CallWait } from "../store/call-wait.ts";
import type {
  Attempt,
  Cancellation,
  Conversation,
  InboxMessage,
  LeaseRenewal,
  LeaseRenewed,
  AdmittedSubmission,
  NewSubmission,
  SessionKey,
  SessionSubmissionQuery,
  Submission,
  SubmissionClaim,
  SubmissionRelease,
  SubmissionStatus,
  SubmissionWait,
  WaitCheckPostponement,
} from "../store/submission.ts";
import { SqliteAttachments } from "./attachments.ts";
import { SqliteStoreBusy, isSqliteBusy } from "./busy.ts";
import { SqliteCallWaits } from "./call-waits.ts";
import { deliverChildOutcome } from "./child-outcome.ts";
import { SqliteConversationLog } from "./conversation-log.ts";
import { SqliteDatabase } from "./database.ts";
import { SqliteDeletion } from "./deletion.ts";
import { SqliteInbox } from "./inbox.ts";
import { SqliteStoreOpenFailed } from "./open-failed.ts";
import { assertSchemaReadable, migrate } from "./schema.ts";
import { SqliteSubmissions } from "./submissions.ts";

/**
 * How long a write waits for another process's write lock before failing with
 * `SqliteStoreBusy`. The wait is synchronous (it blocks this process's event loop), and this
 * store's own transactions last well under a millisecond, so a few seconds only ever elapse
 * when another program holds a long transaction on the file.
 */
export const DEFAULT_BUSY_TIMEOUT_MS = 5_000;

export interface SqliteStoreOptions {
  /**
   * A file path (the file and its folders are created when absent; a relative path is resolved
   * from the working directory), or `":memory:"` for a private in-memory database.
   */
  path: string;
  /** Time for `updatedAt`, drained records and record ids. Default: the wall clock. */
  clock?: Clock;
  /** See `DEFAULT_BUSY_TIMEOUT_MS`. */
  busyTimeoutMs?: number;
  /** How long a settled submission's streaming deltas are kept before `foldDeltas` deletes them (default 1 h; `Infinity` keeps them). */
  deltaRetentionMs?: number;
}

/**
 * Opens (creating its folder, the file, or migrating as needed) a SQLite store. Throws
 * `SqliteStoreOpenFailed` naming the path when the folder or file cannot be created or opened,
 * `UnsupportedSchema` for a file written by a newer version, `SqliteStoreBusy` if another
 * process holds the file's write lock past the busy timeout.
 */
export function openSqliteStore(options: SqliteStoreOptions): SqliteStore {
  const busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
  const deltaRetentionMs = deltaRetentionOf(options.deltaRetentionMs);
  const db = openDatabase(options.path, busyTimeoutMs);
  try {
    assertSchemaReadable(db, options.path);
    // WAL: readers never block the writer; NORMAL: no fsync per commit, so a power cut may lose
    // the last commits but never corrupts the file (a process crash loses nothing).
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("PRAGMA synchronous = NORMAL");
    migrate(db, options.path);
    return new SqliteStore(new SqliteDatabase(db, options.path, options.clock ?? systemClock, busyTimeoutMs), deltaRetentionMs);
  } catch (err) {
    db.close();
    throw isSqliteBusy(err) ? new SqliteStoreBusy(options.path, busyTimeoutMs, err) : err;
  }
}

/** `new DatabaseSync` after creating the file's folder, failing with the path named. */
function openDatabase(path: string, busyTimeoutMs: number): DatabaseSync {
  // `:memory:` and `file:` URIs are SQLite's own names, not paths in the file system.
  const onDisk = path !== ":memory:" && !path.startsWith("file:");
  const absolute = onDisk ? resolve(path) : path;
  try {
    if (onDisk) mkdirSync(dirname(absolute), { recursive: true });
    return new Database(path, { timeout: busyTimeoutMs });
  } catch (err) {
    throw new SqliteStoreOpenFailed(absolute, err);
  }
}

/**
 * The embedded `Store` on `node:sqlite`. Every write operation is synchronous under the hood and
 * runs under the write lock of a `BEGIN IMMEDIATE` transaction it shares with the other writes
 * of its event-loop turn (group commit, ADR 0022), in its own savepoint, so compare-and-set
 * checks and their writes cannot interleave with another process's. Composes the parts (submissions, conversation log,
 * inbox, attachments) over one database. Use `openSqliteStore` to create one.
 */
export class SqliteStore implements Store {
  readonly #db: SqliteDatabase;
  readonly #submissions: SqliteSubmissions;
  readonly #log: SqliteConversationLog;
  readonly #inbox: SqliteInbox;
  readonly #attachments: SqliteAttachments;
  readonly #callWaits: SqliteCallWaits;
  readonly #deletion: SqliteDeletion;

  /** @internal Use `openSqliteStore`. */
  constructor(db: SqliteDatabase, deltaRetentionMs = DEFAULT_DELTA_RETENTION_MS) {
    this.#db = db;
    this.#submissions = new SqliteSubmissions(db);
    this.#log = new SqliteConversationLog(db, deltaRetentionMs);
    this.#inbox = new SqliteInbox(db);
    this.#attachments = new SqliteAttachments(db);
    this.#callWaits = new SqliteCallWaits(db);
    this.#deletion = new SqliteDeletion(db);
  }

  /** Closes the database. Later calls reject; a second close is a no-op. */
  async close(): Promise<void> {
    if (!this.#db.db.isOpen) return;
    this.#db.flushWrites(); // what is queued for this turn commits, as if closed a turn later
    this.#db.db.close();
  }

  // ---- submissions ----
  admitSubmission(sub: NewSubmission): Promise<AdmittedSubmission> {
    return this.#submissions.admitSubmission(sub);
  }
  getSubmission(id: string): Promise<Submission> {
    return this.#submissions.getSubmission(id);
  }
  joinSessionOrder(submissionId: string): Promise<Submission> {
    return this.#submissions.joinSessionOrder(submissionId);
  }
  listRunnable(): Promise<Submission[]> {
    return this.#submissions.listRunnable();
  }
  getSessionHead(key: SessionKey): Promise<Submission | undefined> {
    return this.#submissions.getSessionHead(key);
  }
  sessionLive(key: SessionKey): Promise<boolean> {
    return this.#submissions.sessionLive(key);
  }
  listByStatus(status: SubmissionStatus): Promise<Submission[]> {
    return this.#submissions.listByStatus(status);
  }
  listSessionSubmissions(key: SessionKey, query: SessionSubmissionQuery): Promise<Submission[]> {
    return this.#submissions.listSessionSubmissions(key, query);
  }

  listActivity(query: ActivityQuery): Promise<ActivityPage> {
    return this.#submissions.listActivity(query);
  }
  claimSubmission(claim: SubmissionClaim): Promise<Submission> {
    return this.#submissions.claimSubmission(claim);
  }
  startAttempt(attempt: Attempt): Promise<void> {
    return this.#submissions.startAttempt(attempt);
  }
  listAttempts(submissionId: string): Promise<Attempt[]> {
    return this.#submissions.listAttempts(submissionId);
  }
  renewLease(renewal: LeaseRenewal): Promise<LeaseRenewed> {
    return this.#submissions.renewLease(renewal);
  }
  listExpiredLeases(now: number): Promise<Submission[]> {
    return this.#submissions.listExpiredLeases(now);
  }
  releaseSubmission(release: SubmissionRelease): Promise<void> {
    return this.#submissions.releaseSubmission(release);
  }
  waitSubmission(wait: SubmissionWait): Promise<void> {
    return this.#submissions.waitSubmission(wait);
  }
  resumeSubmission(submissionId: string): Promise<void> {
    return this.#submissions.resumeSubmission(submissionId);
  }
  async deliverChildOutcome(delivery: ChildOutcomeDelivery): Promise<ChildOutcomeDelivered> {
    return deliverChildOutcome(this.#db, delivery);
  }
  getCallWait(submissionId: string, callId: string): Promise<CallWait | undefined> {
    return this.#callWaits.getCallWait(submissionId, callId);
  }
  findCallback(callbackDigest: string): Promise<CallWait | undefined> {
    return this.#callWaits.findCallback(callbackDigest);
  }
  answerCall(write: CallAnswerWrite): Promise<CallAnswered> {
    return this.#callWaits.answerCall(write);
  }
  listChildSubmissions(parentSubmissionId: string, options?: { unsettledOnly?: boolean }): Promise<Submission[]> {
    return this.#submissions.listChildSubmissions(parentSubmissionId, options);
  }
  listDueWaits(now: number): Promise<Submission[]> {
    return this.#submissions.listDueWaits(now);
  }
  postponeWaitCheck(postponement: WaitCheckPostponement): Promise<boolean> {
    return this.#submissions.postponeWaitCheck(postponement);
  }
  cancelSubmission(submissionId: string, cancellation: Cancellation): Promise<{ wasRunning: boolean; settled?: boolean }> {
    return this.#submissions.cancelSubmission(submissionId, cancellation);
  }
  reserveSettlement(
    submissionId: string,
    attemptId: string,
    options?: { requireDrainedInbox?: boolean; outcome?: SettledPayload },
  ): Promise<void> {
    return this.#submissions.reserveSettlement(submissionId, attemptId, options);
  }
  finalizeSettlement(submissionId: string, outcome?: SettledPayload): Promise<void> {
    return this.#submissions.finalizeSettlement(submissionId, outcome);
  }

  // ---- conversations ----
  ensureConversation(candidate: Conversation): Promise<{ conversation: Conversation; created: boolean }> {
    return this.#log.ensureConversation(candidate);
  }
  listIdleConversations(query: IdleConversationQuery): Promise<Conversation[]> {
    return this.#log.listIdleConversations(query);
  }

  getConversation(key: SessionKey): Promise<Conversation> {
    return this.#log.getConversation(key);
  }
  appendRecords(conversationId: string, drafts: RecordDraft[], options?: AppendOptions): Promise<ConversationRecord[]> {
    return this.#log.appendRecords(conversationId, drafts, options);
  }
  readRecords(conversationId: string, afterId?: string, limit?: number): Promise<ConversationRecord[]> {
    return this.#log.readRecords(conversationId, afterId, limit);
  }
  foldDeltas(): Promise<number> {
    return this.#log.foldDeltas();
  }
  readCheckpoint(conversationId: string): Promise<LogCheckpoint | undefined> {
    return this.#log.readCheckpoint(conversationId);
  }
  writeCheckpoint(conversationId: string, checkpoint: LogCheckpoint): Promise<void> {
    return this.#log.writeCheckpoint(conversationId, checkpoint);
  }

  // ---- attachments ----
  putAttachment(mediaType: string, data: Uint8Array): Promise<AttachmentRef> {
    return this.#attachments.putAttachment(mediaType, data);
  }
  getAttachment(digest: string): Promise<{ ref: AttachmentRef; data: Uint8Array }> {
    return this.#attachments.getAttachment(digest);
  }
  getAttachmentRef(digest: string): Promise<AttachmentRef> {
    return this.#attachments.getAttachmentRef(digest);
  }
  addAttachmentUploader(digest: string, uploader: string): Promise<void> {
    return this.#attachments.addAttachmentUploader(digest, uploader);
  }
  isAttachmentUploader(digest: string, uploader: string): Promise<boolean> {
    return this.#attachments.isAttachmentUploader(digest, uploader);
  }

  // ---- inbox ----
  enqueueInbox(key: SessionKey, message: InboxMessage): Promise<{ submissionId: string }> {
    return this.#inbox.enqueueInbox(key, message);
  }
  drainInbox(request: InboxDrain): Promise<ConversationRecord[]> {
    return this.#inbox.drainInbox(request);
  }

  // ---- deletion ----
  deleteConversation(key: SessionKey): Promise<ConversationDeletion> {
    return this.#deletion.deleteConversation(key);
  }

  reserveDeletion(key: SessionKey): Promise<boolean> {
    return this.#deletion.reserveDeletion(key);
  }

  releaseDeletion(key: SessionKey): Promise<void> {
    return this.#deletion.releaseDeletion(key);
  }
}
