import type { SettledPayload } from "../protocol/records.ts";
import { CancelRequested, ClaimLost, DispatchConflict, InboxNotDrained, SessionBusy, SubmissionNotFound } from "../errors.ts";
import {
  type Attempt,
  type Cancellation,
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
  cancelledOutcome,
  firstWaitCheck,
  sessionKeyString,
} from "../store/submission.ts";
import { frozenCopy } from "./frozen-copy.ts";
import { jsonEqual } from "./json-equal.ts";
import type { MemoryState } from "./memory-state.ts";
import { type ActivityPage, type ActivityQuery, activityCursor, matchesActivity, parseActivityCursor } from "../store/activity.ts";
import { clearLease, copy, freezeKey, inAdmissionOrder, leaveWait, pushTo, type Row, sessionId } from "./rows.ts";

/**
 * The submission part of the memory store: admission, the session order, claims and leases,
 * waits, cancellation and settlement, over the shared {@link MemoryState}.
 */
export class MemorySubmissions {
  readonly #s: MemoryState;

  constructor(state: MemoryState) {
    this.#s = state;
  }

  async admitSubmission(sub: NewSubmission): Promise<AdmittedSubmission> {
    const existing = this.#s.rows.get(sub.id);
    if (existing) {
      if (existing.session !== sessionId(sub.sessionKey) || !jsonEqual(existing.sub.input, sub.input)) throw new DispatchConflict();
      return { submission: copy(existing), replayed: true };
    }
    // A session being deleted (`reserveDeletion`) takes nothing until its deletion completes.
    if (this.#s.deleting.has(sessionId(sub.sessionKey))) throw new SessionBusy(sessionKeyString(sub.sessionKey));
    // The session's conversation, created with its first admitted submission.
    const { conversation } = this.#s.log.ensureConversation({ id: sub.conversationId, key: sub.sessionKey, createdAt: sub.createdAt });
    const stored: Submission = {
      id: sub.id,
      conversationId: conversation.id,
      sessionKey: freezeKey(sub.sessionKey),
      status: "queued",
      input: frozenCopy(sub.input),
      attemptCount: 0,
      createdAt: sub.createdAt,
      updatedAt: this.#s.clock.now(),
      depth: sub.depth ?? 0,
      pendingResume: false,
      cancelRequested: false,
    };
    if (sub.parentSubmissionId !== undefined) stored.parentSubmissionId = sub.parentSubmissionId;
    if (sub.parentCallId !== undefined) stored.parentCallId = sub.parentCallId;
    const delayed = sub.delayedUntil !== undefined;
    if (delayed) {
      // Outside its session's order until it joins it: waiting for its time, checked then.
      stored.status = "waiting";
      stored.delayedUntil = sub.delayedUntil;
      stored.waitCheckAt = sub.delayedUntil;
      stored.waitingFor = Object.freeze([Object.freeze({ kind: "time" as const, until: sub.delayedUntil! })]) as Submission["waitingFor"];
    }
    const row: Row = { sub: stored, seq: this.#s.seq++, session: sessionId(sub.sessionKey), inbox: [] };
    this.#s.rows.set(sub.id, row);
    this.#s.byStatus.get(stored.status)!.add(row);
    if (!delayed) pushTo(this.#s.sessions, row.session, row);
    pushTo(this.#s.history, row.session, row);
    if (sub.parentSubmissionId !== undefined) pushTo(this.#s.children, sub.parentSubmissionId, row);
    return { submission: copy(row), replayed: false };
  }

  async getSubmission(id: string): Promise<Submission> {
    return copy(this.#s.row(id));
  }

  async joinSessionOrder(submissionId: string): Promise<Submission> {
    const row = this.#s.row(submissionId);
    if (row.sub.status !== "waiting" || row.sub.delayedUntil === undefined) {
      throw new ClaimLost(`join: submission ${submissionId} is not a delayed message waiting for its time`);
    }
    leaveWait(row.sub);
    // The session's newest admission: last in its order and in its listing.
    row.seq = this.#s.seq++;
    pushTo(this.#s.sessions, row.session, row);
    const history = this.#s.history.get(row.session)!;
    history.splice(history.indexOf(row), 1);
    history.push(row);
    this.#s.transition(row, "queued");
    return copy(row);
  }

  async sessionLive(key: SessionKey): Promise<boolean> {
    const head = this.#s.sessions.get(sessionId(key))?.[0];
    return head !== undefined && head.sub.status !== "waiting";
  }

  async listSessionSubmissions(key: SessionKey, query: SessionSubmissionQuery): Promise<Submission[]> {
    const rows = this.#s.history.get(sessionId(key)) ?? [];
    let end = rows.length;
    if (query.before !== undefined) {
      end = rows.findIndex((row) => row.sub.id === query.before);
      if (end < 0) throw new SubmissionNotFound(query.before);
    }
    const page: Submission[] = [];
    for (let i = end - 1; i >= 0 && page.length < query.limit; i--) {
      const row = rows[i]!;
      if (query.status === undefined || row.sub.status === query.status) page.push(copy(row));
    }
    return page;
  }

  async listRunnable(): Promise<Submission[]> {
    const heads: Row[] = [];
    for (const rows of this.#s.sessions.values()) {
      const head = rows[0];
      if (head && head.sub.status === "queued") heads.push(head);
    }
    return inAdmissionOrder(heads).map(copy);
  }

  async getSessionHead(key: SessionKey): Promise<Submission | undefined> {
    const head = this.#s.sessions.get(sessionId(key))?.[0];
    return head ? copy(head) : undefined;
  }

  async listActivity(query: ActivityQuery): Promise<ActivityPage> {
    if (query.before !== undefined && parseActivityCursor(query.before) === undefined) return { submissions: [] };
    const rows = [...this.#s.rows.values()]
      .map((row) => ({ row, cursor: activityCursor(row.sub.updatedAt, row.sub.id) }))
      .filter(({ row, cursor }) => (query.before === undefined || cursor < query.before) && matchesActivity(row.sub, query))
      .sort((a, b) => (a.cursor < b.cursor ? 1 : a.cursor > b.cursor ? -1 : 0));
    const page = rows.slice(0, query.limit);
    const more = rows.length > page.length;
    return { submissions: page.map(({ row }) => copy(row)), ...(more ? { next: page.at(-1)!.cursor } : {}) };
  }

  async listByStatus(status: SubmissionStatus): Promise<Submission[]> {
    return inAdmissionOrder(this.#s.byStatus.get(status) ?? []).map(copy);
  }

  async claimSubmission(claim: SubmissionClaim): Promise<Submission> {
    const row = this.#s.row(claim.submissionId);
    const sub = row.sub;
    if (sub.status !== "queued") throw new ClaimLost(`claim: submission ${sub.id} is ${sub.status}, not queued`);
    if (this.#s.sessions.get(row.session)?.[0] !== row) {
      throw new ClaimLost(`claim: submission ${sub.id} is not the head of its session`);
    }
    const resumed = sub.pendingResume;
    if (!resumed) sub.attemptCount += 1;
    sub.attemptId = claim.attemptId;
    sub.ownerId = claim.ownerId;
    sub.leaseExpiresAt = claim.leaseExpiresAt;
    sub.pendingResume = false;
    this.#s.transition(row, "running");
    return { ...copy(row), pendingResume: resumed };
  }

  async startAttempt(attempt: Attempt): Promise<void> {
    pushTo(this.#s.attempts, attempt.submissionId, Object.freeze({ ...attempt }));
  }

  async listAttempts(submissionId: string): Promise<Attempt[]> {
    return (this.#s.attempts.get(submissionId) ?? []).map((a) => ({ ...a }));
  }

  async renewLease(renewal: LeaseRenewal): Promise<LeaseRenewed> {
    const row = this.#s.owned(renewal.submissionId, renewal.attemptId, "renew");
    row.sub.leaseExpiresAt = renewal.leaseExpiresAt;
    const { cancelRequested, cancellation } = row.sub;
    return cancellation ? { cancelRequested, cancellation: { ...cancellation } } : { cancelRequested };
  }

  async listExpiredLeases(now: number): Promise<Submission[]> {
    const expired = [...this.#s.byStatus.get("running")!].filter((r) => (r.sub.leaseExpiresAt ?? Infinity) <= now);
    return inAdmissionOrder(expired).map(copy);
  }

  async releaseSubmission(release: SubmissionRelease): Promise<void> {
    const row = this.#s.owned(release.submissionId, release.attemptId, "release");
    const sub = row.sub;
    if (release.lastError) sub.lastError = release.lastError;
    if (release.continuation) sub.pendingResume = true;
    if (release.notBefore !== undefined) sub.notBefore = release.notBefore;
    else delete sub.notBefore;
    if (release.retry !== undefined) sub.retry = frozenCopy(release.retry);
    else delete sub.retry;
    clearLease(sub);
    this.#s.transition(row, "queued");
  }

  async waitSubmission(wait: SubmissionWait): Promise<void> {
    const row = this.#s.owned(wait.submissionId, wait.attemptId, "wait");
    const sub = row.sub;
    if (sub.cancelRequested) throw new CancelRequested(sub.id);
    clearLease(sub);
    sub.pendingResume = true;
    if (wait.waitUntil !== undefined) sub.waitUntil = wait.waitUntil;
    else delete sub.waitUntil;
    sub.waitCheckAt = firstWaitCheck(wait, this.#s.clock.now());
    const pending = [...new Set(wait.pendingCalls ?? [])];
    if (pending.length > 0) sub.pendingCalls = Object.freeze(pending) as string[];
    else delete sub.pendingCalls;
    if (wait.waitingFor !== undefined && wait.waitingFor.length > 0) sub.waitingFor = frozenCopy(wait.waitingFor);
    else delete sub.waitingFor;
    this.#s.transition(row, "waiting");
  }

  async resumeSubmission(submissionId: string): Promise<void> {
    const row = this.#s.row(submissionId);
    if (row.sub.status !== "waiting" || row.sub.delayedUntil !== undefined) {
      throw new ClaimLost(`resume: submission ${submissionId} is ${row.sub.status}, not waiting`);
    }
    leaveWait(row.sub);
    this.#s.transition(row, "queued");
  }

  async listChildSubmissions(parentSubmissionId: string, options: { unsettledOnly?: boolean } = {}): Promise<Submission[]> {
    const children = this.#s.children.get(parentSubmissionId) ?? [];
    return (options.unsettledOnly ? children.filter((c) => !isSettling(c.sub.status)) : children).map(copy);
  }

  async listDueWaits(now: number): Promise<Submission[]> {
    const due = [...this.#s.byStatus.get("waiting")!].filter((r) => r.sub.waitCheckAt! <= now);
    return inAdmissionOrder(due).map(copy);
  }

  async postponeWaitCheck(postponement: WaitCheckPostponement): Promise<boolean> {
    const sub = this.#s.rows.get(postponement.submissionId)?.sub;
    if (sub?.status !== "waiting" || sub.waitCheckAt !== postponement.waitCheckAt) return false;
    sub.waitCheckAt = Math.min(postponement.nextCheckAt, sub.waitUntil ?? Infinity);
    return true;
  }

  async cancelSubmission(submissionId: string, cancellation: Cancellation): Promise<{ wasRunning: boolean; settled?: boolean }> {
    const row = this.#s.row(submissionId);
    const sub = row.sub;
    if (sub.status === "waiting" && sub.delayedUntil !== undefined) {
      // Never joined its session's order nor its conversation: settled at once, no record.
      sub.cancelRequested = true;
      sub.cancellation = frozenCopy(cancellation);
      sub.outcome = frozenCopy(cancelledOutcome(cancellation));
      leaveWait(sub);
      this.#s.transition(row, "settled");
      return { wasRunning: false, settled: true };
    }
    switch (sub.status) {
      case "running":
        if (!sub.cancelRequested) {
          sub.cancelRequested = true;
          sub.cancellation = frozenCopy(cancellation);
        }
        return { wasRunning: true };
      case "queued":
      case "waiting":
        sub.cancelRequested = true;
        sub.cancellation = frozenCopy(cancellation);
        sub.outcome = frozenCopy(cancelledOutcome(cancellation));
        leaveWait(sub);
        this.#s.transition(row, "terminalizing");
        return { wasRunning: false };
      default:
        throw new ClaimLost(`cancel: submission ${submissionId} is already ${sub.status}`);
    }
  }

  async reserveSettlement(
    submissionId: string,
    attemptId: string,
    options: { requireDrainedInbox?: boolean; outcome?: SettledPayload } = {},
  ): Promise<void> {
    const row = this.#s.owned(submissionId, attemptId, "reserve settlement");
    if (options.requireDrainedInbox && row.inbox.length > 0) throw new InboxNotDrained(submissionId);
    if (options.outcome !== undefined) row.sub.outcome = frozenCopy(options.outcome);
    this.#s.transition(row, "terminalizing");
  }

  async finalizeSettlement(submissionId: string, outcome?: SettledPayload): Promise<void> {
    const row = this.#s.row(submissionId);
    if (row.sub.status === "settled") return;
    if (row.sub.status !== "terminalizing") {
      throw new ClaimLost(`finalize: submission ${submissionId} is ${row.sub.status}, not terminalizing`);
    }
    if (outcome !== undefined) row.sub.outcome = frozenCopy(outcome);
    this.#s.transition(row, "settled");
    this.#s.log.noteSettled(row.sub.conversationId, submissionId);
  }
}

/** Settled, or on its way (a reservation holds its outcome). */
function isSettling(status: Submission["status"]): boolean {
  return status === "settled" || status === "terminalizing";
}
