import type { LogCheckpoint } from "../conversation/checkpoint.ts";
import type { AttachmentRef, ConversationRecord, RecordDraft, SettledPayload } from "../protocol/records.ts";
import { CancelRequested, ClaimLost, DispatchConflict, InboxNotDrained, NoRunInFlight, SessionBusy, SubmissionNotFound } from "../errors.ts";
import { type Clock, systemClock } from "../ports/clock.ts";
import type { ChildOutcomeDelivered, ChildOutcomeDelivery } from "../store/child-outcome.ts";
import type { AppendOptions, ConversationDeletion, InboxDrain, Store } from "../store/store.ts";
import { attachmentDigests, inputDigests } from "../conversation/attachment-digests.ts";
import type { CallAnswered, CallAnswerWrite, CallWait } from "../store/call-wait.ts";
import {
  type Attempt,
  type Cancellation,
  type Conversation,
  type InboxMessage,
  type LeaseRenewal,
  type LeaseRenewed,
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
  isRunInFlight,
  sessionKeyString,
} from "../store/submission.ts";
import { MemoryAttachments } from "./attachments.ts";
import { MemoryCallWaits } from "./call-waits.ts";
import { MemoryConversationLog } from "./conversation-log.ts";
import { frozenCopy } from "./frozen-copy.ts";
import { jsonEqual } from "./json-equal.ts";
import { clearLease, copy, freezeKey, inAdmissionOrder, leaveWait, pushTo, type Row, sessionId, STATUSES } from "./rows.ts";

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /** Time for `updatedAt`, drained record times and record ids (default: the wall clock). */
  clock?: Clock;
}

/**
 * An in-process {@link Store}: for tests, the keyless quickstart and small embedded runs.
 * Nothing survives the process.
 *
 * Every method does its whole check-and-write synchronously, so each operation is atomic with
 * respect to every other (JavaScript runs one at a time); the promise only wraps the result.
 *
 * Returned records, and the `input` / `sessionKey` of returned submissions, are deep-frozen
 * values shared with the store (copied once, on the way in); everything else returned is a
 * fresh copy. Callers that need to change a record build a new one.
 *
 * The submissions, the inbox and the wake live here; the conversations and their logs are
 * `MemoryConversationLog` (asking this store whether an append's fence holds), the attachments
 * `MemoryAttachments`, and the row helpers `rows.ts`.
 */
export class MemoryStore implements Store {
  readonly #clock: Clock;
  #seq = 0;
  readonly #rows = new Map<string, Row>();
  /** Per session (see {@link sessionId}), its unsettled submissions in admission order: [0] is the head. */
  readonly #sessions = new Map<string, Row[]>();
  /** Per session, every submission in admission order (the operator's listing). */
  readonly #history = new Map<string, Row[]>();
  readonly #byStatus = new Map<SubmissionStatus, Set<Row>>(STATUSES.map((s) => [s, new Set<Row>()]));
  readonly #children = new Map<string, Row[]>();
  readonly #attempts = new Map<string, Attempt[]>();
  readonly #log: MemoryConversationLog;
  readonly #attachments = new MemoryAttachments();
  readonly #callWaits = new MemoryCallWaits();

  constructor(options: MemoryStoreOptions = {}) {
    this.#clock = options.clock ?? systemClock;
    this.#log = new MemoryConversationLog(this.#clock, ({ submissionId, attemptId, onCancel }) => {
      const sub = this.#rows.get(submissionId)?.sub;
      const holds = sub !== undefined && sub.status === "running" && sub.attemptId === attemptId;
      if (holds && sub.cancelRequested) onCancel?.(sub.cancellation ?? DEFAULT_CANCELLATION);
      return holds;
    });
  }

  // ---- SubmissionStore ----------------------------------------------------------------------

  async admitSubmission(sub: NewSubmission): Promise<Submission> {
    const existing = this.#rows.get(sub.id);
    if (existing) {
      if (existing.session !== sessionId(sub.sessionKey) || !jsonEqual(existing.sub.input, sub.input)) throw new DispatchConflict();
      return copy(existing);
    }
    // The session's conversation, created with its first admitted submission.
    const { conversation } = this.#log.ensureConversation({ id: sub.conversationId, key: sub.sessionKey, createdAt: sub.createdAt });
    const stored: Submission = {
      id: sub.id,
      conversationId: conversation.id,
      sessionKey: freezeKey(sub.sessionKey),
      status: "queued",
      input: frozenCopy(sub.input),
      attemptCount: 0,
      createdAt: sub.createdAt,
      updatedAt: this.#clock.now(),
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
    const row: Row = { sub: stored, seq: this.#seq++, session: sessionId(sub.sessionKey), inbox: [] };
    this.#rows.set(sub.id, row);
    this.#byStatus.get(stored.status)!.add(row);
    if (!delayed) pushTo(this.#sessions, row.session, row);
    pushTo(this.#history, row.session, row);
    if (sub.parentSubmissionId !== undefined) pushTo(this.#children, sub.parentSubmissionId, row);
    return copy(row);
  }

  async getSubmission(id: string): Promise<Submission> {
    return copy(this.#row(id));
  }

  async joinSessionOrder(submissionId: string): Promise<Submission> {
    const row = this.#row(submissionId);
    if (row.sub.status !== "waiting" || row.sub.delayedUntil === undefined) {
      throw new ClaimLost(`join: submission ${submissionId} is not a delayed message waiting for its time`);
    }
    leaveWait(row.sub);
    // The session's newest admission: last in its order and in its listing.
    row.seq = this.#seq++;
    pushTo(this.#sessions, row.session, row);
    const history = this.#history.get(row.session)!;
    history.splice(history.indexOf(row), 1);
    history.push(row);
    this.#transition(row, "queued");
    return copy(row);
  }

  async sessionLive(key: SessionKey): Promise<boolean> {
    const head = this.#sessions.get(sessionId(key))?.[0];
    return head !== undefined && head.sub.status !== "waiting";
  }

  async listSessionSubmissions(key: SessionKey, query: SessionSubmissionQuery): Promise<Submission[]> {
    const rows = this.#history.get(sessionId(key)) ?? [];
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
    for (const rows of this.#sessions.values()) {
      const head = rows[0];
      if (head && head.sub.status === "queued") heads.push(head);
    }
    return inAdmissionOrder(heads).map(copy);
  }

  async getSessionHead(key: SessionKey): Promise<Submission | undefined> {
    const head = this.#sessions.get(sessionId(key))?.[0];
    return head ? copy(head) : undefined;
  }

  async listByStatus(status: SubmissionStatus): Promise<Submission[]> {
    return inAdmissionOrder(this.#byStatus.get(status) ?? []).map(copy);
  }

  async claimSubmission(claim: SubmissionClaim): Promise<Submission> {
    const row = this.#row(claim.submissionId);
    const sub = row.sub;
    if (sub.status !== "queued") throw new ClaimLost(`claim: submission ${sub.id} is ${sub.status}, not queued`);
    if (this.#sessions.get(row.session)?.[0] !== row) {
      throw new ClaimLost(`claim: submission ${sub.id} is not the head of its session`);
    }
    const resumed = sub.pendingResume;
    if (!resumed) sub.attemptCount += 1;
    sub.attemptId = claim.attemptId;
    sub.ownerId = claim.ownerId;
    sub.leaseExpiresAt = claim.leaseExpiresAt;
    sub.pendingResume = false;
    this.#transition(row, "running");
    return { ...copy(row), pendingResume: resumed };
  }

  async startAttempt(attempt: Attempt): Promise<void> {
    pushTo(this.#attempts, attempt.submissionId, Object.freeze({ ...attempt }));
  }

  async listAttempts(submissionId: string): Promise<Attempt[]> {
    return (this.#attempts.get(submissionId) ?? []).map((a) => ({ ...a }));
  }

  async renewLease(renewal: LeaseRenewal): Promise<LeaseRenewed> {
    const row = this.#owned(renewal.submissionId, renewal.attemptId, "renew");
    row.sub.leaseExpiresAt = renewal.leaseExpiresAt;
    const { cancelRequested, cancellation } = row.sub;
    return cancellation ? { cancelRequested, cancellation: { ...cancellation } } : { cancelRequested };
  }

  async listExpiredLeases(now: number): Promise<Submission[]> {
    const expired = [...this.#byStatus.get("running")!].filter((r) => (r.sub.leaseExpiresAt ?? Infinity) <= now);
    return inAdmissionOrder(expired).map(copy);
  }

  async releaseSubmission(release: SubmissionRelease): Promise<void> {
    const row = this.#owned(release.submissionId, release.attemptId, "release");
    const sub = row.sub;
    if (release.lastError) sub.lastError = release.lastError;
    if (release.continuation) sub.pendingResume = true;
    if (release.notBefore !== undefined) sub.notBefore = release.notBefore;
    else delete sub.notBefore;
    clearLease(sub);
    this.#transition(row, "queued");
  }

  async waitSubmission(wait: SubmissionWait): Promise<void> {
    const row = this.#owned(wait.submissionId, wait.attemptId, "wait");
    const sub = row.sub;
    if (sub.cancelRequested) throw new CancelRequested(sub.id);
    clearLease(sub);
    sub.pendingResume = true;
    if (wait.waitUntil !== undefined) sub.waitUntil = wait.waitUntil;
    else delete sub.waitUntil;
    sub.waitCheckAt = firstWaitCheck(wait, this.#clock.now());
    const pending = [...new Set(wait.pendingCalls ?? [])];
    if (pending.length > 0) sub.pendingCalls = Object.freeze(pending) as string[];
    else delete sub.pendingCalls;
    if (wait.waitingFor !== undefined && wait.waitingFor.length > 0) sub.waitingFor = frozenCopy(wait.waitingFor);
    else delete sub.waitingFor;
    this.#transition(row, "waiting");
  }

  async resumeSubmission(submissionId: string): Promise<void> {
    const row = this.#row(submissionId);
    if (row.sub.status !== "waiting" || row.sub.delayedUntil !== undefined) {
      throw new ClaimLost(`resume: submission ${submissionId} is ${row.sub.status}, not waiting`);
    }
    leaveWait(row.sub);
    this.#transition(row, "queued");
  }

  async deliverChildOutcome(delivery: ChildOutcomeDelivery): Promise<ChildOutcomeDelivered> {
    const row = this.#row(delivery.parentSubmissionId);
    const sub = row.sub;
    if (sub.status !== "waiting") return { delivered: false, reason: "not_waiting" };
    if (!(sub.pendingCalls ?? []).includes(delivery.callId)) return { delivered: false, reason: "not_pending" };
    return { delivered: true, ...this.#deliver(row, delivery.callId, delivery.drafts) };
  }

  /**
   * Appends `drafts` to a waiting row's log and takes `callId` off its pending calls; the last
   * one requeues it. The caller checked both, in the same synchronous step.
   */
  #deliver(row: Row, callId: string, drafts: RecordDraft[]): { records: ConversationRecord[]; requeued: boolean } {
    const sub = row.sub;
    const records = this.#log.append(sub.conversationId, drafts, {});
    const rest = (sub.pendingCalls ?? []).filter((c) => c !== callId);
    if (rest.length > 0) {
      sub.pendingCalls = Object.freeze(rest) as string[];
      return { records, requeued: false };
    }
    leaveWait(sub);
    this.#transition(row, "queued");
    return { records, requeued: true };
  }

  async getCallWait(submissionId: string, callId: string): Promise<CallWait | undefined> {
    const wait = this.#callWaits.get(submissionId, callId);
    return wait && { ...wait };
  }

  async findCallback(callbackDigest: string): Promise<CallWait | undefined> {
    const wait = this.#callWaits.byDigest(callbackDigest);
    return wait && { ...wait };
  }

  async answerCall(write: CallAnswerWrite): Promise<CallAnswered> {
    const wait = this.#callWaits.get(write.submissionId, write.callId);
    const row = this.#rows.get(write.submissionId);
    if (wait === undefined || row === undefined) return { answered: false, reason: "not_found" };
    if (wait.answer !== undefined) return { answered: false, reason: "already_answered", answer: { ...wait.answer } };
    const sub = row.sub;
    if (sub.status === "terminalizing" || sub.status === "settled") return { answered: false, reason: "settled" };
    // Checked and written in one synchronous step: no other answer or delivery can interleave.
    if (sub.status === "waiting" && (sub.pendingCalls ?? []).includes(write.callId)) {
      const delivered = this.#deliver(row, write.callId, write.drafts);
      this.#callWaits.answer(wait, write.answer);
      return { answered: true, delivered: true, ...delivered };
    }
    this.#callWaits.answer(wait, write.answer);
    return { answered: true, delivered: false };
  }

  async listChildSubmissions(parentSubmissionId: string, options: { unsettledOnly?: boolean } = {}): Promise<Submission[]> {
    const children = this.#children.get(parentSubmissionId) ?? [];
    return (options.unsettledOnly ? children.filter((c) => !isSettling(c.sub.status)) : children).map(copy);
  }

  async listDueWaits(now: number): Promise<Submission[]> {
    const due = [...this.#byStatus.get("waiting")!].filter((r) => r.sub.waitCheckAt! <= now);
    return inAdmissionOrder(due).map(copy);
  }

  async postponeWaitCheck(postponement: WaitCheckPostponement): Promise<boolean> {
    const sub = this.#rows.get(postponement.submissionId)?.sub;
    if (sub?.status !== "waiting" || sub.waitCheckAt !== postponement.waitCheckAt) return false;
    sub.waitCheckAt = Math.min(postponement.nextCheckAt, sub.waitUntil ?? Infinity);
    return true;
  }

  async cancelSubmission(submissionId: string, cancellation: Cancellation): Promise<{ wasRunning: boolean; settled?: boolean }> {
    const row = this.#row(submissionId);
    const sub = row.sub;
    if (sub.status === "waiting" && sub.delayedUntil !== undefined) {
      // Never joined its session's order nor its conversation: settled at once, no record.
      sub.cancelRequested = true;
      sub.cancellation = frozenCopy(cancellation);
      sub.outcome = frozenCopy(cancelledOutcome(cancellation));
      leaveWait(sub);
      this.#transition(row, "settled");
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
        this.#transition(row, "terminalizing");
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
    const row = this.#owned(submissionId, attemptId, "reserve settlement");
    if (options.requireDrainedInbox && row.inbox.length > 0) throw new InboxNotDrained(submissionId);
    if (options.outcome !== undefined) row.sub.outcome = frozenCopy(options.outcome);
    this.#transition(row, "terminalizing");
  }

  async finalizeSettlement(submissionId: string, outcome?: SettledPayload): Promise<void> {
    const row = this.#row(submissionId);
    if (row.sub.status === "settled") return;
    if (row.sub.status !== "terminalizing") {
      throw new ClaimLost(`finalize: submission ${submissionId} is ${row.sub.status}, not terminalizing`);
    }
    if (outcome !== undefined) row.sub.outcome = frozenCopy(outcome);
    this.#transition(row, "settled");
  }

  // ---- ConversationStore --------------------------------------------------------------------

  async ensureConversation(candidate: Conversation): Promise<{ conversation: Conversation; created: boolean }> {
    return this.#log.ensureConversation(candidate);
  }

  async getConversation(key: SessionKey): Promise<Conversation> {
    return this.#log.getConversation(key);
  }

  async appendRecords(conversationId: string, drafts: RecordDraft[], options: AppendOptions = {}): Promise<ConversationRecord[]> {
    const records = this.#log.append(conversationId, drafts, options);
    // Same synchronous step: the call waits the records announce exist as soon as they do.
    this.#callWaits.registerFrom(records);
    return records;
  }

  async readRecords(conversationId: string, afterId = "", limit?: number): Promise<ConversationRecord[]> {
    return this.#log.read(conversationId, afterId, limit);
  }

  async readCheckpoint(conversationId: string): Promise<LogCheckpoint | undefined> {
    return this.#log.readCheckpoint(conversationId);
  }

  async writeCheckpoint(conversationId: string, checkpoint: LogCheckpoint): Promise<void> {
    this.#log.writeCheckpoint(conversationId, checkpoint);
  }

  // ---- AttachmentStore ----------------------------------------------------------------------

  async putAttachment(mediaType: string, data: Uint8Array): Promise<AttachmentRef> {
    return this.#attachments.put(mediaType, data);
  }

  async getAttachment(digest: string): Promise<{ ref: AttachmentRef; data: Uint8Array }> {
    return this.#attachments.get(digest);
  }

  async getAttachmentRef(digest: string): Promise<AttachmentRef> {
    return this.#attachments.ref(digest);
  }

  // ---- InboxStore ---------------------------------------------------------------------------

  async enqueueInbox(key: SessionKey, message: InboxMessage): Promise<{ submissionId: string }> {
    const head = this.#sessions.get(sessionId(key))?.[0];
    if (!head || !isRunInFlight(head.sub)) throw new NoRunInFlight(sessionKeyString(key));
    head.inbox.push({ kind: message.kind, body: message.body });
    return { submissionId: head.sub.id };
  }

  async drainInbox(request: InboxDrain): Promise<ConversationRecord[]> {
    const fence = { submissionId: request.submissionId, attemptId: request.attemptId };
    const row = this.#rows.get(request.submissionId);
    if (!row) throw new ClaimLost(`drain: unknown submission ${request.submissionId}`);
    // The common case (every turn boundary): nothing waiting. Still fenced like an append.
    if (row.inbox.length === 0) return this.#log.append(row.sub.conversationId, [], { fence, expectedHead: request.expectedHead });
    const wanted = new Set(request.kinds);
    const picked = row.inbox.filter((m) => wanted.has(m.kind));
    const sub = row.sub;
    const time = new Date(this.#clock.now()).toISOString();
    const drafts: RecordDraft[] = picked.map((m) => ({
      kind: "user_message",
      conversationId: sub.conversationId,
      session: sub.sessionKey.session,
      submissionId: sub.id,
      attemptId: request.attemptId,
      time,
      payload: { body: m.body, origin: m.kind },
    }));
    // #append checks the fence and head before writing anything; only then mark delivered.
    const records = this.#log.append(sub.conversationId, drafts, { fence, expectedHead: request.expectedHead });
    if (picked.length > 0) row.inbox = row.inbox.filter((m) => !wanted.has(m.kind));
    return records;
  }

  // ---- DeletionStore ------------------------------------------------------------------------

  async deleteConversation(key: SessionKey): Promise<ConversationDeletion> {
    const session = sessionId(key);
    // Unsettled, queued or not (a delayed message waits outside the session's order).
    if ((this.#history.get(session) ?? []).some((row) => row.sub.status !== "settled")) throw new SessionBusy(sessionKeyString(key));
    const conversation = this.#log.find(key);
    if (!conversation) return { deleted: false, blobsDeleted: [] };
    const rows = this.#history.get(session) ?? [];
    const digests = attachmentDigests(this.#log.read(conversation.id));
    for (const row of rows) inputDigests(row.sub.input, digests);
    for (const row of rows) {
      this.#rows.delete(row.sub.id);
      this.#byStatus.get(row.sub.status)!.delete(row);
      this.#attempts.delete(row.sub.id);
      this.#callWaits.forget(row.sub.id);
      this.#children.delete(row.sub.id);
      const parent = row.sub.parentSubmissionId;
      const siblings = parent === undefined ? undefined : this.#children.get(parent);
      if (siblings) this.#children.set(parent!, siblings.filter((r) => r !== row));
    }
    this.#history.delete(session);
    this.#sessions.delete(session);
    this.#log.delete(key, conversation.id);
    const blobsDeleted = [...digests].filter((digest) => !this.#referenced(digest));
    for (const digest of blobsDeleted) this.#attachments.delete(digest);
    return { deleted: true, conversationId: conversation.id, blobsDeleted };
  }

  /** Whether a record or a submission's input still references `digest`. */
  #referenced(digest: string): boolean {
    if (this.#log.references(digest)) return true;
    for (const row of this.#rows.values()) if (inputDigests(row.sub.input).has(digest)) return true;
    return false;
  }

  async close(): Promise<void> {}

  // ---- internals ----------------------------------------------------------------------------

  #row(id: string): Row {
    const row = this.#rows.get(id);
    if (!row) throw new SubmissionNotFound(id);
    return row;
  }

  /** The row, when it is running under `attemptId`; else `ClaimLost`. */
  #owned(id: string, attemptId: string, op: string): Row {
    const row = this.#row(id);
    if (row.sub.status !== "running") throw new ClaimLost(`${op}: submission ${id} is ${row.sub.status}, not running`);
    if (row.sub.attemptId !== attemptId) {
      throw new ClaimLost(`${op}: submission ${id} is held by attempt ${row.sub.attemptId}, not ${attemptId}`);
    }
    return row;
  }

  #transition(row: Row, status: SubmissionStatus): void {
    this.#byStatus.get(row.sub.status)!.delete(row);
    this.#byStatus.get(status)!.add(row);
    row.sub.status = status;
    row.sub.updatedAt = this.#clock.now();
    if (status === "settled") {
      const rows = this.#sessions.get(row.session);
      if (rows) {
        const at = rows.indexOf(row);
        if (at >= 0) rows.splice(at, 1);
        if (rows.length === 0) this.#sessions.delete(row.session);
        // The next one became the head: a transition the sweeper measures staleness from.
        else if (at === 0) rows[0]!.sub.updatedAt = row.sub.updatedAt;
      }
    }
  }
}

/** Creates an empty in-memory store. */
export function createMemoryStore(options: MemoryStoreOptions = {}): Store {
  return new MemoryStore(options);
}

/** Settled, or on its way (a reservation holds its outcome). */
function isSettling(status: Submission["status"]): boolean {
  return status === "settled" || status === "terminalizing";
}

/** The cancellation of a row flagged without one (written before cancellations were stored). */
const DEFAULT_CANCELLATION: Cancellation = { errorCode: "cancelled", error: "cancelled: cancelled by request" };
