import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { contentDigest } from "../../conversation/content-digest.ts";
import { nextRecordIds } from "../../conversation/ids.ts";
import type { AttachmentRef, ConversationRecord, RecordDraft, SettledPayload } from "../../conversation/records.ts";
import {
  AttachmentNotFound,
  ClaimLost,
  ConversationNotFound,
  DispatchConflict,
  InboxNotDrained,
  NoRunInFlight,
  SubmissionNotFound,
} from "../../errors.ts";
import { type Clock, systemClock } from "../../ports/clock.ts";
import type { ChildOutcomeDelivered, ChildOutcomeDelivery } from "../../ports/child-outcome.ts";
import type { AppendOptions, InboxDrain, Store } from "../../ports/store.ts";
import {
  type Attempt,
  type Conversation,
  type InboxKind,
  type InboxMessage,
  type LeaseRenewal,
  type NewSubmission,
  type SessionKey,
  type Submission,
  type SubmissionClaim,
  type SubmissionRelease,
  type SubmissionStatus,
  type SubmissionWait,
  isRunInFlight,
  sessionKeyString,
} from "../../ports/submission.ts";
import { SqliteStoreBusy, isSqliteBusy, isUniqueViolation } from "./busy.ts";
import { SqliteStoreOpenFailed } from "./open-failed.ts";
import { assertSchemaReadable, migrate } from "./schema.ts";
import { type Statements, prepareStatements } from "./statements.ts";
import {
  canonicalJson,
  sessionKeyColumn,
  sessionKeyFromColumn,
  submissionFromRow,
  submissionInsertParams,
  submissionUpdateParams,
} from "./submission-row.ts";

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
}

/**
 * Opens (creating its folder, the file, or migrating as needed) a SQLite store. Throws
 * `SqliteStoreOpenFailed` naming the path when the folder or file cannot be created or opened,
 * `UnsupportedSchema` for a file written by a newer version, `SqliteStoreBusy` if another
 * process holds the file's write lock past the busy timeout.
 */
export function openSqliteStore(options: SqliteStoreOptions): SqliteStore {
  const busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
  const db = openDatabase(options.path, busyTimeoutMs);
  try {
    assertSchemaReadable(db, options.path);
    // WAL: readers never block the writer; NORMAL: no fsync per commit, so a power cut may lose
    // the last commits but never corrupts the file (a process crash loses nothing).
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("PRAGMA synchronous = NORMAL");
    migrate(db, options.path);
    return new SqliteStore(db, options.path, options.clock ?? systemClock, busyTimeoutMs);
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
    return new DatabaseSync(path, { timeout: busyTimeoutMs });
  } catch (err) {
    throw new SqliteStoreOpenFailed(absolute, err);
  }
}

/**
 * The embedded `Store` on `node:sqlite`. Every operation is synchronous under the hood and at
 * most one short `BEGIN IMMEDIATE` transaction, so compare-and-set checks and their writes
 * cannot interleave with another process's. Use `openSqliteStore` to create one.
 */
export class SqliteStore implements Store {
  readonly #db: DatabaseSync;
  readonly #sql: Statements;
  readonly #clock: Clock;
  readonly #location: string;
  readonly #busyTimeoutMs: number;

  /** @internal Use `openSqliteStore`. */
  constructor(db: DatabaseSync, location: string, clock: Clock, busyTimeoutMs: number) {
    this.#db = db;
    this.#sql = prepareStatements(db);
    this.#clock = clock;
    this.#location = location;
    this.#busyTimeoutMs = busyTimeoutMs;
  }

  /** Closes the database. Later calls reject; a second close is a no-op. */
  async close(): Promise<void> {
    if (this.#db.isOpen) this.#db.close();
  }

  // ---- submissions ----

  async admitSubmission(sub: NewSubmission): Promise<Submission> {
    return this.#write(() => {
      const existing = this.#findSubmission(sub.id);
      if (existing) {
        if (canonicalJson(existing.input) !== canonicalJson(sub.input)) throw new DispatchConflict();
        return existing;
      }
      const row: Submission = {
        id: sub.id,
        conversationId: sub.conversationId,
        sessionKey: { agent: sub.sessionKey.agent, instance: sub.sessionKey.instance, session: sub.sessionKey.session },
        status: "queued",
        input: sub.input,
        attemptCount: 0,
        createdAt: sub.createdAt,
        updatedAt: this.#clock.now(),
        depth: sub.depth ?? 0,
        pendingResume: false,
        cancelRequested: false,
      };
      if (sub.parentSubmissionId !== undefined) row.parentSubmissionId = sub.parentSubmissionId;
      if (sub.parentCallId !== undefined) row.parentCallId = sub.parentCallId;
      this.#sql.insertSubmission.run(...submissionInsertParams(row));
      // Read back so the caller gets exactly what a later get/replay returns.
      return this.#mustGetSubmission(sub.id);
    });
  }

  async getSubmission(id: string): Promise<Submission> {
    return this.#mustGetSubmission(id);
  }

  async listRunnable(): Promise<Submission[]> {
    return this.#sql.listRunnable.all().map(submissionFromRow);
  }

  async getSessionHead(key: SessionKey): Promise<Submission | undefined> {
    const row = this.#sql.headOfSession.get(sessionKeyColumn(key));
    return row ? submissionFromRow(row) : undefined;
  }

  async sessionLive(key: SessionKey): Promise<boolean> {
    const row = this.#sql.headOfSession.get(sessionKeyColumn(key));
    return row !== undefined && row.status !== "waiting";
  }

  async listByStatus(status: SubmissionStatus): Promise<Submission[]> {
    return this.#sql.listByStatus.all(status).map(submissionFromRow);
  }

  async claimSubmission(claim: SubmissionClaim): Promise<Submission> {
    return this.#write(() => {
      const sub = this.#mustGetSubmission(claim.submissionId);
      if (sub.status !== "queued") throw new ClaimLost(`submission ${sub.id} is ${sub.status}, not queued`);
      const head = this.#sql.headOfSession.get(sessionKeyColumn(sub.sessionKey));
      if (head?.id !== sub.id) {
        throw new ClaimLost(`submission ${sub.id} is not the head of session ${sessionKeyString(sub.sessionKey)}`);
      }
      const claimed: Submission = {
        ...sub,
        status: "running",
        attemptId: claim.attemptId,
        ownerId: claim.ownerId,
        leaseExpiresAt: claim.leaseExpiresAt,
        attemptCount: sub.pendingResume ? sub.attemptCount : sub.attemptCount + 1,
        updatedAt: this.#clock.now(),
      };
      this.#put({ ...claimed, pendingResume: false });
      return claimed;
    });
  }

  async startAttempt(attempt: Attempt): Promise<void> {
    this.#write(() => {
      this.#sql.insertAttempt.run(attempt.id, attempt.submissionId, attempt.ownerId, attempt.startedAt);
    });
  }

  async listAttempts(submissionId: string): Promise<Attempt[]> {
    return this.#sql.listAttempts.all(submissionId).map((row) => ({
      id: row.id as string,
      submissionId: row.submission_id as string,
      ownerId: row.owner_id as string,
      startedAt: row.started_at as number,
    }));
  }

  async renewLease(renewal: LeaseRenewal): Promise<void> {
    this.#write(() => {
      const sub = this.#mustHoldRunning(renewal.submissionId, renewal.attemptId);
      this.#put({ ...sub, leaseExpiresAt: renewal.leaseExpiresAt });
    });
  }

  async listExpiredLeases(now: number): Promise<Submission[]> {
    return this.#sql.listExpiredLeases.all(now).map(submissionFromRow);
  }

  async releaseSubmission(release: SubmissionRelease): Promise<void> {
    this.#write(() => {
      const sub = this.#mustHoldRunning(release.submissionId, release.attemptId);
      const next: Submission = {
        ...withoutLease(sub),
        status: "queued",
        updatedAt: this.#clock.now(),
        pendingResume: sub.pendingResume || release.continuation === true,
      };
      if (release.lastError) next.lastError = release.lastError;
      this.#put(next);
    });
  }

  async waitSubmission(wait: SubmissionWait): Promise<void> {
    this.#write(() => {
      const sub = this.#mustHoldRunning(wait.submissionId, wait.attemptId);
      const next: Submission = {
        ...withoutLease(sub),
        status: "waiting",
        updatedAt: this.#clock.now(),
        pendingResume: true,
      };
      delete next.waitUntil;
      if (wait.waitUntil !== undefined) next.waitUntil = wait.waitUntil;
      delete next.pendingCalls;
      const pending = [...new Set(wait.pendingCalls ?? [])];
      if (pending.length > 0) next.pendingCalls = pending;
      this.#put(next);
    });
  }

  async resumeSubmission(submissionId: string): Promise<void> {
    this.#write(() => {
      const sub = this.#mustGetSubmission(submissionId);
      if (sub.status !== "waiting") throw new ClaimLost(`submission ${sub.id} is ${sub.status}, not waiting`);
      const next: Submission = { ...sub, status: "queued", updatedAt: this.#clock.now() };
      delete next.waitUntil;
      delete next.pendingCalls;
      this.#put(next);
    });
  }

  async deliverChildOutcome(delivery: ChildOutcomeDelivery): Promise<ChildOutcomeDelivered> {
    return this.#write(() => {
      // Checked and written under one write lock: a second delivery of the call sees it gone.
      const sub = this.#mustGetSubmission(delivery.parentSubmissionId);
      if (sub.status !== "waiting") return { delivered: false, reason: "not_waiting" } as const;
      const pending = sub.pendingCalls ?? [];
      if (!pending.includes(delivery.callId)) return { delivered: false, reason: "not_pending" } as const;
      const records = this.#insertRecords(sub.conversationId, this.#head(sub.conversationId), delivery.drafts);
      const next: Submission = { ...sub, pendingCalls: pending.filter((c) => c !== delivery.callId) };
      const requeued = next.pendingCalls!.length === 0;
      if (requeued) {
        next.status = "queued";
        next.updatedAt = this.#clock.now();
        delete next.waitUntil;
        delete next.pendingCalls;
      }
      this.#put(next);
      return { delivered: true, records, requeued };
    });
  }

  async listChildSubmissions(parentSubmissionId: string): Promise<Submission[]> {
    return this.#sql.listChildren.all(parentSubmissionId).map(submissionFromRow);
  }

  async listExpiredWaits(now: number): Promise<Submission[]> {
    return this.#sql.listExpiredWaits.all(now).map(submissionFromRow);
  }

  async cancelSubmission(submissionId: string, reason: string): Promise<{ wasRunning: boolean }> {
    return this.#write(() => {
      const sub = this.#mustGetSubmission(submissionId);
      switch (sub.status) {
        case "queued":
        case "waiting":
          this.#settle({ ...sub, status: "settled", lastError: reason, updatedAt: this.#clock.now(), pendingCalls: undefined });
          return { wasRunning: false };
        case "running":
          this.#put({ ...sub, cancelRequested: true });
          return { wasRunning: true };
        default:
          throw new ClaimLost(`submission ${sub.id} is already ${sub.status}`);
      }
    });
  }

  async reserveSettlement(
    submissionId: string,
    attemptId: string,
    options?: { requireDrainedInbox?: boolean },
  ): Promise<void> {
    this.#write(() => {
      const sub = this.#mustHoldRunning(submissionId, attemptId);
      if (options?.requireDrainedInbox && this.#sql.hasPendingInbox.get(submissionId)) {
        throw new InboxNotDrained(submissionId);
      }
      this.#put({ ...sub, status: "terminalizing", updatedAt: this.#clock.now() });
    });
  }

  async finalizeSettlement(submissionId: string, outcome?: SettledPayload): Promise<void> {
    this.#write(() => {
      const sub = this.#mustGetSubmission(submissionId);
      if (sub.status === "settled") return;
      if (sub.status !== "terminalizing") {
        throw new ClaimLost(`submission ${sub.id} is ${sub.status}, not terminalizing`);
      }
      this.#settle({ ...sub, status: "settled", updatedAt: this.#clock.now(), ...(outcome === undefined ? {} : { outcome }) });
    });
  }

  // ---- conversations ----

  async ensureConversation(candidate: Conversation): Promise<{ conversation: Conversation; created: boolean }> {
    return this.#write(() => {
      const key = sessionKeyColumn(candidate.key);
      const { changes } = this.#sql.insertConversation.run(candidate.id, key, candidate.createdAt);
      return { conversation: this.#conversationByKey(key)!, created: changes === 1 };
    });
  }

  async getConversation(key: SessionKey): Promise<Conversation> {
    const conversation = this.#conversationByKey(sessionKeyColumn(key));
    if (!conversation) throw new ConversationNotFound(sessionKeyString(key));
    return conversation;
  }

  async appendRecords(
    conversationId: string,
    drafts: RecordDraft[],
    options?: AppendOptions,
  ): Promise<ConversationRecord[]> {
    return this.#write(() => {
      const row = this.#sql.appendHead.get(conversationId)!;
      if (row.known !== 1) throw new ConversationNotFound(conversationId);
      const head = (row.head as string | null) ?? "";
      if (options?.expectedHead !== undefined && options.expectedHead !== head) {
        throw new ClaimLost(`conversation ${conversationId} head is ${head || "empty"}, not ${options.expectedHead || "empty"}`);
      }
      if (options?.fence) this.#mustHoldRunning(options.fence.submissionId, options.fence.attemptId);
      return this.#insertRecords(conversationId, head, drafts);
    });
  }

  async readRecords(conversationId: string, afterId = "", limit?: number): Promise<ConversationRecord[]> {
    const max = limit === undefined ? -1 : Math.max(0, Math.floor(limit));
    return this.#sql.readRecords
      .all(conversationId, afterId, max)
      .map((row) => JSON.parse(row.record as string) as ConversationRecord);
  }

  // ---- attachments ----

  async putAttachment(mediaType: string, data: Uint8Array): Promise<AttachmentRef> {
    const digest = contentDigest(data);
    return this.#write(() => {
      this.#sql.insertAttachment.run(digest, mediaType, data.byteLength, data);
      // Identical bytes keep the first ref (its media type), so every put of them agrees with get.
      return attachmentRefFromRow(this.#sql.attachmentRef.get(digest)!);
    });
  }

  async getAttachment(digest: string): Promise<{ ref: AttachmentRef; data: Uint8Array }> {
    const row = this.#sql.getAttachment.get(digest);
    if (!row) throw new AttachmentNotFound(digest);
    return { ref: attachmentRefFromRow(row), data: row.data as Uint8Array };
  }

  // ---- inbox ----

  async enqueueInbox(key: SessionKey, message: InboxMessage): Promise<{ submissionId: string }> {
    return this.#write(() => {
      const row = this.#sql.headOfSession.get(sessionKeyColumn(key));
      const head = row ? submissionFromRow(row) : undefined;
      if (!head || !isRunInFlight(head)) throw new NoRunInFlight(sessionKeyString(key));
      this.#sql.insertInbox.run(head.id, message.kind, message.body, this.#clock.now());
      return { submissionId: head.id };
    });
  }

  async drainInbox(request: InboxDrain): Promise<ConversationRecord[]> {
    return this.#write(() => {
      const sub = this.#mustHoldRunning(request.submissionId, request.attemptId);
      const head = this.#head(sub.conversationId);
      if (request.expectedHead !== undefined && request.expectedHead !== head) {
        throw new ClaimLost(`conversation ${sub.conversationId} head moved`);
      }
      const pending = this.#sql.pendingInbox
        .all(sub.id)
        .filter((m) => request.kinds.includes(m.kind as InboxKind));
      if (pending.length === 0) return [];
      const time = new Date(this.#clock.now()).toISOString();
      const drafts: RecordDraft[] = pending.map((m) => ({
        kind: "user_message",
        conversationId: sub.conversationId,
        session: sub.sessionKey.session,
        submissionId: sub.id,
        attemptId: request.attemptId,
        time,
        payload: { body: m.body as string, origin: m.kind as InboxKind },
      }));
      const records = this.#insertRecords(sub.conversationId, head, drafts);
      pending.forEach((m, i) => this.#sql.markDelivered.run(records[i]!.id, m.seq as number));
      return records;
    });
  }

  // ---- internals ----

  /**
   * Runs `fn` inside `BEGIN IMMEDIATE … COMMIT`: the write lock is taken before the first read,
   * so a check and the write it guards see the same state (a deferred transaction could fail
   * its upgrade with BUSY_SNAPSHOT, which the busy timeout does not cover). Rolls back on any
   * throw.
   */
  #write<T>(fn: () => T): T {
    try {
      this.#sql.begin.run();
    } catch (err) {
      throw isSqliteBusy(err) ? new SqliteStoreBusy(this.#location, this.#busyTimeoutMs, err) : err;
    }
    try {
      const result = fn();
      this.#sql.commit.run();
      return result;
    } catch (err) {
      if (this.#db.isTransaction) this.#sql.rollback.run();
      throw isSqliteBusy(err) ? new SqliteStoreBusy(this.#location, this.#busyTimeoutMs, err) : err;
    }
  }

  #findSubmission(id: string): Submission | undefined {
    const row = this.#sql.getSubmission.get(id);
    return row ? submissionFromRow(row) : undefined;
  }

  #mustGetSubmission(id: string): Submission {
    const sub = this.#findSubmission(id);
    if (!sub) throw new SubmissionNotFound(id);
    return sub;
  }

  /**
   * The fence every owner-only write checks: running under exactly this attempt. An unknown
   * submission fails the fence too (`ClaimLost`, not `SubmissionNotFound`): the writer has
   * nothing to hold.
   */
  #mustHoldRunning(submissionId: string, attemptId: string): Submission {
    const sub = this.#findSubmission(submissionId);
    if (sub?.status !== "running" || sub.attemptId !== attemptId) {
      throw new ClaimLost(`submission ${submissionId} is not running under attempt ${attemptId}`);
    }
    return sub;
  }

  #put(sub: Submission): void {
    this.#sql.updateSubmission.run(...submissionUpdateParams(sub));
  }

  /**
   * Writes a settled row; when it was its session's head, the next unsettled one becomes the head
   * at this time (`updatedAt`: the sweeper measures a queued head's staleness from it).
   */
  #settle(settled: Submission): void {
    const column = sessionKeyColumn(settled.sessionKey);
    const wasHead = this.#sql.headOfSession.get(column)?.id === settled.id;
    this.#put(settled);
    if (!wasHead) return;
    const next = this.#sql.headOfSession.get(column);
    if (next) this.#put({ ...submissionFromRow(next), updatedAt: settled.updatedAt });
  }

  #head(conversationId: string): string {
    return (this.#sql.head.get(conversationId)?.id as string | undefined) ?? "";
  }

  /** Mints ids after `head` and inserts; the caller holds the write lock and checked the head. */
  #insertRecords(conversationId: string, head: string, drafts: RecordDraft[]): ConversationRecord[] {
    for (const draft of drafts) {
      if (draft.kind === "submission_settled" && draft.submissionId !== undefined && this.#sql.hasSettledRecord.get(conversationId, draft.submissionId)) {
        throw new ClaimLost(`conversation ${conversationId} already holds the settlement of submission ${draft.submissionId}`);
      }
    }
    const ids = nextRecordIds(head, drafts.length, this.#clock.now());
    return drafts.map((draft, i) => {
      // `id` first for readable JSON; assigned again so a stray `id` on the draft cannot win.
      const record = { id: ids[i]!, ...draft } as ConversationRecord;
      record.id = ids[i]!;
      try {
        this.#sql.insertRecord.run(conversationId, record.id, record.kind, JSON.stringify(record));
      } catch (err) {
        // Ids come from the head held under the lock, so this means another author raced us.
        if (isUniqueViolation(err)) throw new ClaimLost(`record id ${record.id} already exists`);
        throw err;
      }
      return record;
    });
  }

  #conversationByKey(key: string): Conversation | undefined {
    const row = this.#sql.getConversationByKey.get(key);
    if (!row) return undefined;
    return {
      id: row.id as string,
      key: sessionKeyFromColumn(row.session_key as string),
      createdAt: row.created_at as number,
    };
  }
}

function withoutLease(sub: Submission): Submission {
  const next = { ...sub };
  delete next.attemptId;
  delete next.ownerId;
  delete next.leaseExpiresAt;
  return next;
}

function attachmentRefFromRow(row: Record<string, unknown>): AttachmentRef {
  return { digest: row.digest as string, mediaType: row.media_type as string, size: row.size as number };
}
