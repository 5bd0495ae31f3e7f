/**
 * The open database the SQLite store's parts share: its prepared statements, its clock, the
 * write transaction every compare-and-set runs in, and the row helpers more than one part needs
 * (the fence, settling a session's head, minting record ids under the lock).
 */
import type { DatabaseSync } from "node:sqlite";
import { nextRecordIds } from "../conversation/ids.ts";
import type { ConversationRecord, RecordDraft } from "../protocol/records.ts";
import { ClaimLost, SubmissionNotFound } from "../errors.ts";
import type { Clock } from "../ports/clock.ts";
import type { Cancellation, Submission } from "../store/submission.ts";
import { callWaitOf } from "../store/call-wait.ts";
import { SqliteStoreBusy, isSqliteBusy, isUniqueViolation } from "./busy.ts";
import { GroupCommit } from "./group-commit.ts";
import { type Statements, prepareStatements } from "./statements.ts";
import { sessionKeyColumn, submissionFromRow, submissionUpdateParams } from "./submission-row.ts";

export class SqliteDatabase {
  readonly db: DatabaseSync;
  readonly sql: Statements;
  readonly clock: Clock;
  readonly #group: GroupCommit;

  constructor(db: DatabaseSync, location: string, clock: Clock, busyTimeoutMs: number) {
    this.db = db;
    this.sql = prepareStatements(db);
    this.clock = clock;
    this.#group = new GroupCommit(db, this.sql, (err) =>
      isSqliteBusy(err) ? new SqliteStoreBusy(location, busyTimeoutMs, err) : err,
    );
  }

  /**
   * Runs `fn` in a write transaction: `BEGIN IMMEDIATE … COMMIT`, shared with the other writes of
   * this event-loop turn (group commit, ADR 0022), `fn` in its own savepoint. The write lock is
   * taken before the first read, so a check and the write it guards see the same state (a
   * deferred transaction could fail its upgrade with BUSY_SNAPSHOT, which the busy timeout does
   * not cover). A throw rolls back `fn`'s writes alone. Resolves only after the `COMMIT`.
   */
  write<T>(fn: () => T): Promise<T> {
    return this.#group.run(fn);
  }

  /** Commits the writes queued for this turn now (before the database closes). */
  flushWrites(): void {
    this.#group.flush();
  }

  /** Groups committed and writes run in them since the store opened. */
  get groupCommits(): { groups: number; writes: number } {
    return { groups: this.#group.groups, writes: this.#group.members };
  }

  findSubmission(id: string): Submission | undefined {
    const row = this.sql.getSubmission.get(id);
    return row ? submissionFromRow(row) : undefined;
  }

  mustGetSubmission(id: string): Submission {
    const sub = this.findSubmission(id);
    if (!sub) throw new SubmissionNotFound(id);
    return sub;
  }

  /**
   * The fence every owner-only write checks: running under exactly this attempt. An unknown
   * submission fails the fence too (`ClaimLost`, not `SubmissionNotFound`): the writer has
   * nothing to hold.
   */
  mustHoldRunning(submissionId: string, attemptId: string): Submission {
    const sub = this.findSubmission(submissionId);
    if (sub?.status !== "running" || sub.attemptId !== attemptId) {
      throw new ClaimLost(`submission ${submissionId} is not running under attempt ${attemptId}`);
    }
    return sub;
  }

  /** {@link mustHoldRunning} for a caller that needs only the check (a fenced append), not the row. */
  mustHoldRunningFence(submissionId: string, attemptId: string, onCancel?: (cancellation: Cancellation) => void): void {
    const row = this.sql.fenceOfSubmission.get(submissionId);
    if (row?.status !== "running" || row.attempt_id !== attemptId) {
      throw new ClaimLost(`submission ${submissionId} is not running under attempt ${attemptId}`);
    }
    if (row.cancel_requested === 1 && onCancel) {
      onCancel(typeof row.cancellation === "string" ? (JSON.parse(row.cancellation) as Cancellation) : { errorCode: "cancelled", error: "cancelled: cancelled by request" });
    }
  }

  put(sub: Submission): void {
    this.sql.updateSubmission.run(...submissionUpdateParams(sub));
  }

  /**
   * Writes a settled row; when it was its session's head, the next unsettled one becomes the head
   * at this time (`updatedAt`: the sweeper measures a queued head's staleness from it).
   */
  settle(settled: Submission): void {
    const column = sessionKeyColumn(settled.sessionKey);
    const wasHead = this.sql.headOfSession.get(column)?.id === settled.id;
    this.put(settled);
    if (!wasHead) return;
    const next = this.sql.headOfSession.get(column);
    if (next) this.put({ ...submissionFromRow(next), updatedAt: settled.updatedAt });
  }

  /** The record head of a conversation ("" when its log is empty). */
  head(conversationId: string): string {
    return (this.sql.head.get(conversationId)?.id as string | undefined) ?? "";
  }

  /**
   * Mints ids after `head` and inserts; the caller holds the write lock and checked the head. The
   * call waits the records announce are registered in the same transaction.
   */
  insertRecords(conversationId: string, head: string, drafts: RecordDraft[], options: { registerCallWaits?: boolean } = {}): ConversationRecord[] {
    for (const draft of drafts) {
      if (draft.kind === "submission_settled" && draft.submissionId !== undefined && this.sql.hasSettledRecord.get(conversationId, draft.submissionId)) {
        throw new ClaimLost(`conversation ${conversationId} already holds the settlement of submission ${draft.submissionId}`);
      }
    }
    const ids = nextRecordIds(head, drafts.length, this.clock.now());
    return drafts.map((draft, i) => {
      // `id` first for readable JSON; assigned again so a stray `id` on the draft cannot win.
      const record = { id: ids[i]!, ...draft } as ConversationRecord;
      record.id = ids[i]!;
      try {
        this.sql.insertRecord.run(conversationId, record.id, record.kind, JSON.stringify(record));
      } catch (err) {
        // Ids come from the head held under the lock, so this means another author raced us.
        if (isUniqueViolation(err)) throw new ClaimLost(`record id ${record.id} already exists`);
        throw err;
      }
      const wait = options.registerCallWaits === false ? undefined : callWaitOf(record);
      if (wait !== undefined) this.sql.insertCallWait.run(wait.submissionId, wait.callId, JSON.stringify(wait), wait.callbackDigest ?? null);
      return record;
    });
  }
}
