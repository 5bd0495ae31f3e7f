/**
 * Submissions in the SQLite store: admission, claims and leases, waiting, cancel and the
 * two-phase settlement. Each compare-and-set is one `BEGIN IMMEDIATE` transaction.
 */
import { type ActivityPage, type ActivityQuery, activityCursor, matchesActivity, parseActivityCursor } from "../store/activity.ts";
import type { SettledPayload } from "../protocol/records.ts";
import { CancelRequested, ClaimLost, DispatchConflict, InboxNotDrained, SessionBusy, SubmissionNotFound } from "../errors.ts";
import {
  type Attempt,
  type Cancellation,
  cancelledOutcome,
  type LeaseRenewal,
  type LeaseRenewed,
  type AdmittedSubmission,
  type NewSubmission,
  type SessionKey,
  type SessionSubmissionQuery,
  type Submission,
  type SubmissionClaim,
  type SubmissionRelease,
  type SubmissionStatus,
  type SubmissionWait,
  type WaitCheckPostponement,
  firstWaitCheck,
  sessionKeyString,
} from "../store/submission.ts";
import { requeue } from "./call-waits.ts";
import type { SqliteDatabase } from "./database.ts";
import { canonicalJson, sessionKeyColumn, submissionFromRow, submissionInsertParams } from "./submission-row.ts";

export class SqliteSubmissions {
  readonly #db: SqliteDatabase;

  constructor(db: SqliteDatabase) {
    this.#db = db;
  }

  async admitSubmission(sub: NewSubmission): Promise<AdmittedSubmission> {
    return this.#db.write(() => {
      const existing = this.#db.findSubmission(sub.id);
      if (existing) {
        const sameTarget = sessionKeyString(existing.sessionKey) === sessionKeyString(sub.sessionKey);
        if (!sameTarget || canonicalJson(existing.input) !== canonicalJson(sub.input)) throw new DispatchConflict();
        return { submission: existing, replayed: true };
      }
      // The session's conversation, created with its first admitted submission (same transaction).
      const sessionKey = sessionKeyColumn(sub.sessionKey);
      this.#db.sql.insertConversation.run(sub.conversationId, sessionKey, sub.createdAt);
      const conversation = this.#db.sql.getConversationByKey.get(sessionKey)!;
      // A session being deleted (`reserveDeletion`) takes nothing until its deletion completes.
      if (conversation.deleting !== null && conversation.deleting !== undefined) throw new SessionBusy(sessionKeyString(sub.sessionKey));
      const row: Submission = {
        id: sub.id,
        conversationId: conversation.id as string,
        sessionKey: { agent: sub.sessionKey.agent, instance: sub.sessionKey.instance, session: sub.sessionKey.session },
        status: "queued",
        input: sub.input,
        attemptCount: 0,
        createdAt: sub.createdAt,
        updatedAt: this.#db.clock.now(),
        depth: sub.depth ?? 0,
        pendingResume: false,
        cancelRequested: false,
      };
      if (sub.parentSubmissionId !== undefined) row.parentSubmissionId = sub.parentSubmissionId;
      if (sub.parentCallId !== undefined) row.parentCallId = sub.parentCallId;
      if (sub.delayedUntil !== undefined) {
        // Outside its session's order until it joins it (`delayed_until`): waiting for its time.
        row.status = "waiting";
        row.delayedUntil = sub.delayedUntil;
        row.waitCheckAt = sub.delayedUntil;
        row.waitingFor = [{ kind: "time", until: sub.delayedUntil }];
      }
      this.#db.sql.insertSubmission.run(...submissionInsertParams(row));
      // Read back so the caller gets exactly what a later get/replay returns.
      return { submission: this.#db.mustGetSubmission(sub.id), replayed: false };
    });
  }

  async getSubmission(id: string): Promise<Submission> {
    return this.#db.mustGetSubmission(id);
  }

  async joinSessionOrder(submissionId: string): Promise<Submission> {
    return this.#db.write(() => {
      if (this.#db.sql.joinSessionOrder.run(this.#db.clock.now(), submissionId).changes === 0) {
        this.#db.mustGetSubmission(submissionId);
        throw new ClaimLost(`submission ${submissionId} is not a delayed message waiting for its time`);
      }
      return this.#db.mustGetSubmission(submissionId);
    });
  }

  async listRunnable(): Promise<Submission[]> {
    return this.#db.sql.listRunnable.all().map(submissionFromRow);
  }

  async getSessionHead(key: SessionKey): Promise<Submission | undefined> {
    const row = this.#db.sql.headOfSession.get(sessionKeyColumn(key));
    return row ? submissionFromRow(row) : undefined;
  }

  async sessionLive(key: SessionKey): Promise<boolean> {
    const row = this.#db.sql.headStatusOfSession.get(sessionKeyColumn(key));
    return row !== undefined && row.status !== "waiting";
  }

  async listSessionSubmissions(key: SessionKey, query: SessionSubmissionQuery): Promise<Submission[]> {
    const session = sessionKeyColumn(key);
    let before = Number.MAX_SAFE_INTEGER;
    if (query.before !== undefined) {
      const row = this.#db.sql.sessionSubmissionSeq.get(query.before, session);
      if (!row) throw new SubmissionNotFound(query.before);
      before = row.seq as number;
    }
    return this.#db.sql.listSessionSubmissions.all(session, before, query.status ?? null, query.limit).map(submissionFromRow);
  }

  async listActivity(query: ActivityQuery): Promise<ActivityPage> {
    let cursor = query.before === undefined ? { updatedAt: Number.MAX_SAFE_INTEGER, id: "" } : parseActivityCursor(query.before);
    if (cursor === undefined) return { submissions: [] };
    const page: Submission[] = [];
    // Read in chunks until the page and one more are found (the one more tells there is a next).
    const chunk = Math.max(query.limit + 1, 50);
    for (;;) {
      const rows: Parameters<typeof submissionFromRow>[0][] = this.#db.sql.listActivity.all(
        cursor.updatedAt,
        cursor.id,
        query.agent ?? null,
        query.since ?? 0,
        query.until ?? Number.MAX_SAFE_INTEGER,
        chunk,
      );
      for (const row of rows) {
        const sub = submissionFromRow(row);
        if (!matchesActivity(sub, query)) continue;
        if (page.length === query.limit) return { submissions: page, next: activityCursor(page.at(-1)!.updatedAt, page.at(-1)!.id) };
        page.push(sub);
      }
      if (rows.length < chunk) return { submissions: page };
      const last = rows.at(-1)!;
      cursor = { updatedAt: last.updated_at as number, id: last.id as string };
    }
  }

  async listByStatus(status: SubmissionStatus): Promise<Submission[]> {
    return this.#db.sql.listByStatus.all(status).map(submissionFromRow);
  }

  async claimSubmission(claim: SubmissionClaim): Promise<Submission> {
    return this.#db.write(() => {
      const sub = this.#db.mustGetSubmission(claim.submissionId);
      if (sub.status !== "queued") throw new ClaimLost(`submission ${sub.id} is ${sub.status}, not queued`);
      const head = this.#db.sql.headOfSession.get(sessionKeyColumn(sub.sessionKey));
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
        updatedAt: this.#db.clock.now(),
      };
      this.#db.put({ ...claimed, pendingResume: false });
      return claimed;
    });
  }

  async startAttempt(attempt: Attempt): Promise<void> {
    return this.#db.write(() => {
      this.#db.sql.insertAttempt.run(attempt.id, attempt.submissionId, attempt.ownerId, attempt.startedAt);
    });
  }

  async listAttempts(submissionId: string): Promise<Attempt[]> {
    return this.#db.sql.listAttempts.all(submissionId).map((row) => ({
      id: row.id as string,
      submissionId: row.submission_id as string,
      ownerId: row.owner_id as string,
      startedAt: row.started_at as number,
    }));
  }

  async renewLease(renewal: LeaseRenewal): Promise<LeaseRenewed> {
    return this.#db.write(() => {
      const sub = this.#db.mustHoldRunning(renewal.submissionId, renewal.attemptId);
      this.#db.put({ ...sub, leaseExpiresAt: renewal.leaseExpiresAt });
      return sub.cancellation ? { cancelRequested: true, cancellation: sub.cancellation } : { cancelRequested: sub.cancelRequested };
    });
  }

  async listExpiredLeases(now: number): Promise<Submission[]> {
    return this.#db.sql.listExpiredLeases.all(now).map(submissionFromRow);
  }

  async releaseSubmission(release: SubmissionRelease): Promise<void> {
    return this.#db.write(() => {
      const sub = this.#db.mustHoldRunning(release.submissionId, release.attemptId);
      const next: Submission = {
        ...withoutLease(sub),
        status: "queued",
        updatedAt: this.#db.clock.now(),
        pendingResume: sub.pendingResume || release.continuation === true,
      };
      if (release.lastError) next.lastError = release.lastError;
      if (release.notBefore !== undefined) next.notBefore = release.notBefore;
      else delete next.notBefore;
      if (release.retry !== undefined) next.retry = release.retry;
      else delete next.retry;
      this.#db.put(next);
    });
  }

  async waitSubmission(wait: SubmissionWait): Promise<void> {
    return this.#db.write(() => {
      const sub = this.#db.mustHoldRunning(wait.submissionId, wait.attemptId);
      if (sub.cancelRequested) throw new CancelRequested(sub.id);
      const next: Submission = {
        ...withoutLease(sub),
        status: "waiting",
        updatedAt: this.#db.clock.now(),
        pendingResume: true,
      };
      delete next.waitUntil;
      if (wait.waitUntil !== undefined) next.waitUntil = wait.waitUntil;
      next.waitCheckAt = firstWaitCheck(wait, next.updatedAt);
      delete next.pendingCalls;
      const pending = [...new Set(wait.pendingCalls ?? [])];
      if (pending.length > 0) next.pendingCalls = pending;
      delete next.waitingFor;
      if (wait.waitingFor !== undefined && wait.waitingFor.length > 0) next.waitingFor = wait.waitingFor;
      this.#db.put(next);
    });
  }

  async resumeSubmission(submissionId: string): Promise<void> {
    return this.#db.write(() => {
      const sub = this.#db.mustGetSubmission(submissionId);
      if (sub.status !== "waiting" || sub.delayedUntil !== undefined) {
        throw new ClaimLost(`submission ${sub.id} is ${sub.status}${sub.delayedUntil !== undefined ? " (a delayed message)" : ""}, not waiting`);
      }
      this.#db.put(requeue(sub, this.#db.clock.now()));
    });
  }

  async listChildSubmissions(parentSubmissionId: string, options: { unsettledOnly?: boolean } = {}): Promise<Submission[]> {
    const children = this.#db.sql.listChildren.all(parentSubmissionId).map(submissionFromRow);
    return options.unsettledOnly ? children.filter((c) => c.status !== "settled" && c.status !== "terminalizing") : children;
  }

  async listDueWaits(now: number): Promise<Submission[]> {
    return this.#db.sql.listDueWaits.all(now).map(submissionFromRow);
  }

  async postponeWaitCheck(postponement: WaitCheckPostponement): Promise<boolean> {
    // One conditional UPDATE: atomic by itself, no read first.
    const { submissionId, waitCheckAt, nextCheckAt } = postponement;
    return this.#db.write(() => this.#db.sql.postponeWaitCheck.run(nextCheckAt, submissionId, waitCheckAt).changes > 0);
  }

  async cancelSubmission(submissionId: string, cancellation: Cancellation): Promise<{ wasRunning: boolean; settled?: boolean }> {
    return this.#db.write(() => {
      const sub = this.#db.mustGetSubmission(submissionId);
      if (sub.status === "waiting" && sub.delayedUntil !== undefined) {
        // Never joined its session's order nor its conversation: settled at once, no record.
        this.#db.put({ ...sub, status: "settled", cancelRequested: true, cancellation, outcome: cancelledOutcome(cancellation), updatedAt: this.#db.clock.now() });
        return { wasRunning: false, settled: true };
      }
      switch (sub.status) {
        case "queued":
        case "waiting": {
          const next: Submission = {
            ...sub,
            status: "terminalizing",
            cancelRequested: true,
            cancellation,
            outcome: cancelledOutcome(cancellation),
            updatedAt: this.#db.clock.now(),
            pendingCalls: undefined,
          };
          delete next.waitUntil;
          this.#db.put(next);
          return { wasRunning: false };
        }
        case "running":
          if (!sub.cancelRequested) this.#db.put({ ...sub, cancelRequested: true, cancellation });
          return { wasRunning: true };
        default:
          throw new ClaimLost(`submission ${sub.id} is already ${sub.status}`);
      }
    });
  }

  async reserveSettlement(
    submissionId: string,
    attemptId: string,
    options?: { requireDrainedInbox?: boolean; outcome?: SettledPayload },
  ): Promise<void> {
    return this.#db.write(() => {
      const sub = this.#db.mustHoldRunning(submissionId, attemptId);
      if (options?.requireDrainedInbox && this.#db.sql.hasPendingInbox.get(submissionId)) {
        throw new InboxNotDrained(submissionId);
      }
      const outcome = options?.outcome === undefined ? {} : { outcome: options.outcome };
      this.#db.put({ ...sub, status: "terminalizing", updatedAt: this.#db.clock.now(), ...outcome });
    });
  }

  async finalizeSettlement(submissionId: string, outcome?: SettledPayload): Promise<void> {
    return this.#db.write(() => {
      const sub = this.#db.mustGetSubmission(submissionId);
      if (sub.status === "settled") return;
      if (sub.status !== "terminalizing") {
        throw new ClaimLost(`submission ${sub.id} is ${sub.status}, not terminalizing`);
      }
      this.#db.settle({ ...sub, status: "settled", updatedAt: this.#db.clock.now(), ...(outcome === undefined ? {} : { outcome }) });
    });
  }
}

function withoutLease(sub: Submission): Submission {
  const next = { ...sub };
  delete next.attemptId;
  delete next.ownerId;
  delete next.leaseExpiresAt;
  return next;
}
