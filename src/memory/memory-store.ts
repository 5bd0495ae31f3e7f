import type { ActivityPage, ActivityQuery } from "../store/activity.ts";
import type { LogCheckpoint } from "../conversation/checkpoint.ts";
import type { AttachmentRef, ConversationRecord, RecordDraft, SettledPayload } from "../protocol/records.ts";
import { deltaRetentionOf } from "../conversation/delta-folding.ts";
import { type Clock, systemClock } from "../ports/clock.ts";
import type { ChildOutcomeDelivered, ChildOutcomeDelivery } from "../store/child-outcome.ts";
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
import { MemoryCallAnswers } from "./call-answers.ts";
import { MemoryDeletion } from "./deletion.ts";
import { MemoryInbox } from "./inbox.ts";
import { MemoryState } from "./memory-state.ts";
import { MemorySubmissions } from "./submissions.ts";

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /** Time for `updatedAt`, drained record times and record ids (default: the wall clock). */
  clock?: Clock;
  /** How long a settled submission's streaming deltas are kept before `foldDeltas` removes them (default 1 h; `Infinity` keeps them). */
  deltaRetentionMs?: number;
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
 * The maps live in one `MemoryState`; the parts that work on them are `MemorySubmissions`
 * (admission, order, leases, waits, cancellation, settlement), `MemoryCallAnswers` (a child's
 * outcome and a call's answer), `MemoryInbox` and `MemoryDeletion`; the conversations and their
 * logs are `MemoryConversationLog` (asking the state whether an append's fence holds), the
 * attachments `MemoryAttachments`, and the row helpers `rows.ts`. This class only routes.
 */
export class MemoryStore implements Store {
  readonly #state: MemoryState;
  readonly #submissions: MemorySubmissions;
  readonly #calls: MemoryCallAnswers;
  readonly #inbox: MemoryInbox;
  readonly #deletion: MemoryDeletion;
  readonly #deltaRetentionMs: number;

  constructor(options: MemoryStoreOptions = {}) {
    this.#state = new MemoryState(options.clock ?? systemClock);
    this.#deltaRetentionMs = deltaRetentionOf(options.deltaRetentionMs);
    this.#submissions = new MemorySubmissions(this.#state);
    this.#calls = new MemoryCallAnswers(this.#state);
    this.#inbox = new MemoryInbox(this.#state);
    this.#deletion = new MemoryDeletion(this.#state);
  }

  // ---- SubmissionStore ----------------------------------------------------------------------

  admitSubmission(sub: NewSubmission): Promise<AdmittedSubmission> {
    return this.#submissions.admitSubmission(sub);
  }

  getSubmission(id: string): Promise<Submission> {
    return this.#submissions.getSubmission(id);
  }

  joinSessionOrder(submissionId: string): Promise<Submission> {
    return this.#submissions.joinSessionOrder(submissionId);
  }

  sessionLive(key: SessionKey): Promise<boolean> {
    return this.#submissions.sessionLive(key);
  }

  listSessionSubmissions(key: SessionKey, query: SessionSubmissionQuery): Promise<Submission[]> {
    return this.#submissions.listSessionSubmissions(key, query);
  }

  listActivity(query: ActivityQuery): Promise<ActivityPage> {
    return this.#submissions.listActivity(query);
  }

  listRunnable(): Promise<Submission[]> {
    return this.#submissions.listRunnable();
  }

  getSessionHead(key: SessionKey): Promise<Submission | undefined> {
    return this.#submissions.getSessionHead(key);
  }

  listByStatus(status: SubmissionStatus): Promise<Submission[]> {
    return this.#submissions.listByStatus(status);
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

  listChildSubmissions(parentSubmissionId: string, options: { unsettledOnly?: boolean } = {}): Promise<Submission[]> {
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
    options: { requireDrainedInbox?: boolean; outcome?: SettledPayload } = {},
  ): Promise<void> {
    return this.#submissions.reserveSettlement(submissionId, attemptId, options);
  }

  finalizeSettlement(submissionId: string, outcome?: SettledPayload): Promise<void> {
    return this.#submissions.finalizeSettlement(submissionId, outcome);
  }

  // ---- child outcomes and call answers ------------------------------------------------------

  deliverChildOutcome(delivery: ChildOutcomeDelivery): Promise<ChildOutcomeDelivered> {
    return this.#calls.deliverChildOutcome(delivery);
  }

  getCallWait(submissionId: string, callId: string): Promise<CallWait | undefined> {
    return this.#calls.getCallWait(submissionId, callId);
  }

  findCallback(callbackDigest: string): Promise<CallWait | undefined> {
    return this.#calls.findCallback(callbackDigest);
  }

  answerCall(write: CallAnswerWrite): Promise<CallAnswered> {
    return this.#calls.answerCall(write);
  }

  // ---- ConversationStore --------------------------------------------------------------------

  async ensureConversation(candidate: Conversation): Promise<{ conversation: Conversation; created: boolean }> {
    return this.#state.log.ensureConversation(candidate);
  }

  async listIdleConversations(query: IdleConversationQuery): Promise<Conversation[]> {
    return this.#state.log.idleConversations(query);
  }

  async getConversation(key: SessionKey): Promise<Conversation> {
    return this.#state.log.getConversation(key);
  }

  async appendRecords(conversationId: string, drafts: RecordDraft[], options: AppendOptions = {}): Promise<ConversationRecord[]> {
    const records = this.#state.log.append(conversationId, drafts, options);
    // Same synchronous step: the call waits the records announce exist as soon as they do.
    if (!options.copied) this.#state.callWaits.registerFrom(records);
    return records;
  }

  async readRecords(conversationId: string, afterId = "", limit?: number): Promise<ConversationRecord[]> {
    return this.#state.log.read(conversationId, afterId, limit);
  }

  async readCheckpoint(conversationId: string): Promise<LogCheckpoint | undefined> {
    return this.#state.log.readCheckpoint(conversationId);
  }

  async writeCheckpoint(conversationId: string, checkpoint: LogCheckpoint): Promise<void> {
    this.#state.log.writeCheckpoint(conversationId, checkpoint);
  }

  async foldDeltas(): Promise<number> {
    return this.#state.log.foldDeltas(this.#deltaRetentionMs);
  }

  // ---- AttachmentStore ----------------------------------------------------------------------

  async putAttachment(mediaType: string, data: Uint8Array): Promise<AttachmentRef> {
    return this.#state.attachments.put(mediaType, data);
  }

  async getAttachment(digest: string): Promise<{ ref: AttachmentRef; data: Uint8Array }> {
    return this.#state.attachments.get(digest);
  }

  async getAttachmentRef(digest: string): Promise<AttachmentRef> {
    return this.#state.attachments.ref(digest);
  }

  async addAttachmentUploader(digest: string, uploader: string): Promise<void> {
    this.#state.attachments.addUploader(digest, uploader);
  }

  async isAttachmentUploader(digest: string, uploader: string): Promise<boolean> {
    return this.#state.attachments.isUploader(digest, uploader);
  }

  // ---- InboxStore ---------------------------------------------------------------------------

  enqueueInbox(key: SessionKey, message: InboxMessage): Promise<{ submissionId: string }> {
    return this.#inbox.enqueueInbox(key, message);
  }

  drainInbox(request: InboxDrain): Promise<ConversationRecord[]> {
    return this.#inbox.drainInbox(request);
  }

  // ---- DeletionStore ------------------------------------------------------------------------

  deleteConversation(key: SessionKey): Promise<ConversationDeletion> {
    return this.#deletion.deleteConversation(key);
  }

  reserveDeletion(key: SessionKey): Promise<boolean> {
    return this.#deletion.reserveDeletion(key);
  }

  releaseDeletion(key: SessionKey): Promise<void> {
    return this.#deletion.releaseDeletion(key);
  }

  async close(): Promise<void> {}
}

/** Creates an empty in-memory store. */
export function createMemoryStore(options: MemoryStoreOptions = {}): Store {
  return new MemoryStore(options);
}
