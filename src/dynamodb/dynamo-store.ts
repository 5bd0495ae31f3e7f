/**
 * The serverless Store: DynamoDB is the truth, S3 holds attachments and payloads too large for
 * an item. Composes the parts (submissions, conversation log, inbox, blobs) over one table and
 * one bucket. Table layout and costs: docs/adr/0005-dynamodb-table-design.md.
 */
import type { ActivityPage, ActivityQuery } from "../store/activity.ts";
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { S3Client } from "@aws-sdk/client-s3";
import { monotonicFactory } from "ulid";
import type { LogCheckpoint } from "../conversation/checkpoint.ts";
import type { AttachmentRef, ConversationRecord, RecordDraft, SettledPayload } from "../protocol/records.ts";
import { deltaRetentionOf, MIN_DYNAMO_DELTA_RETENTION_MS } from "../conversation/delta-folding.ts";
import { type Clock, systemClock } from "../ports/clock.ts";
import type { ChildOutcomeDelivered, ChildOutcomeDelivery } from "../store/child-outcome.ts";
import type { AppendOptions, ConversationDeletion, IdleConversationQuery, Store } from "../store/store.ts";
import type { CallAnswered, CallAnswerWrite, CallWait } from "../store/call-wait.ts";
import type {
  Attempt,
  Cancellation,
  Conversation,
  InboxKind,
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
import { addAttachmentUploader, isAttachmentUploader } from "./attachment-uploaders.ts";
import { BlobStore } from "./blob-store.ts";
import { Checkpoints } from "./checkpoints.ts";
import { findCallback, getCallWait } from "./call-wait-items.ts";
import { answerCall } from "./call-waits.ts";
import { deliverChildOutcome } from "./child-outcome.ts";
import { deleteConversation, type DeletionStep, releaseDeletion, reserveDeletion } from "./deletion.ts";
import { IdleSessions } from "./idle-sessions.ts";
import { postponeWaitCheck } from "./wait-check.ts";
import { createDynamoClient } from "./clients.ts";
import type { StoreContext } from "./context.ts";
import { ConversationLog } from "./conversation-log.ts";
import { Conversations } from "./conversations.ts";
import { Inbox } from "./inbox.ts";
import { LogReader } from "./log-reader.ts";
import { DynamoSubmissions } from "./submissions.ts";

export interface DynamoStoreOptions {
  /** The harness table (see `createHarnessTable` / `HARNESS_TABLE`). */
  tableName: string;
  /** The bucket for attachments and spilled payloads. */
  bucketName: string;
  /** Default: `createDynamoClient()` (closed by `close()`); a given client is left open. */
  dynamo?: DynamoDBClient;
  /**
   * Default: `createS3Client()`, made on the store's first S3 call (the S3 SDK is loaded then,
   * not with the store) and closed by `close()`; a given client is left open.
   */
  s3?: S3Client;
  /** Time for `updatedAt`, drained records' `time` and record ids. Default: the wall clock. */
  clock?: Clock;
  /** Tests: called before each step of a deletion (throw to interrupt it there). */
  beforeDeletionStep?: DeletionStep;
  /**
   * A record payload (or input, or inbox body) whose JSON is larger than this many bytes is
   * stored in S3 and referenced from its item. Default 100 KiB, well under the 400 KB item limit.
   */
  spillThresholdBytes?: number;
  /**
   * Lean history (ADR 0034): a model turn's streaming deltas fold this long after the turn began:
   * reads leave them out from then on, and a log batch item holding only deltas carries the
   * table's TTL attribute, so DynamoDB deletes it (within days, for free). At least 15 minutes
   * (a turn is bounded at 10), so a live reader always gets a turn's deltas; `Infinity` keeps
   * them. Default 1 h.
   */
  deltaRetentionMs?: number;
  /**
   * Conversation retention (ADR 0034): keep an index of idle sessions (one index write when a
   * session goes idle, one when it is used again), which `listIdleConversations` reads. Every
   * store instance of a deployment must agree (the construct sets it on every function with its
   * `conversationRetention`). Default false: no cost, and no `listIdleConversations`.
   */
  idleSessions?: boolean;
}

/** Default spill threshold: 100 KiB. */
export const DEFAULT_SPILL_THRESHOLD_BYTES = 100 * 1024;

/** A `Store` on DynamoDB + S3. */
export function createDynamoStore(options: DynamoStoreOptions): Store {
  return new DynamoStore(options);
}

class DynamoStore implements Store {
  readonly #owned: { destroy(): void }[] = [];
  readonly #blobs: BlobStore;
  readonly #submissions: DynamoSubmissions;
  readonly #conversations: Conversations;
  readonly #log: ConversationLog;
  readonly #reader: LogReader;
  readonly #inbox: Inbox;
  readonly #checkpoints: Checkpoints;
  readonly #ctx: StoreContext;
  readonly #beforeDeletionStep: DeletionStep | undefined;
  /** Sessions idle since before `query.idleSince`, oldest first (`idle-sessions.ts`); only with `idleSessions`. */
  readonly listIdleConversations?: (query: IdleConversationQuery) => Promise<Conversation[]>;

  constructor(options: DynamoStoreOptions) {
    const dynamo = options.dynamo ?? createDynamoClient();
    if (!options.dynamo) this.#owned.push(dynamo);
    const clock = options.clock ?? systemClock;
    const ord = monotonicFactory();
    this.#blobs = new BlobStore(options.bucketName, options.s3);
    const threshold = options.spillThresholdBytes ?? DEFAULT_SPILL_THRESHOLD_BYTES;
    if (!(threshold > 0 && threshold <= 350_000)) throw new RangeError(`spillThresholdBytes must be in (0, 350000], got ${threshold}`);
    const ctx: StoreContext = {
      dynamo,
      table: options.tableName,
      blobs: this.#blobs,
      clock,
      spillThresholdBytes: threshold,
      deltaRetentionMs: deltaRetentionOf(options.deltaRetentionMs, MIN_DYNAMO_DELTA_RETENTION_MS),
      idleSessions: options.idleSessions ?? false,
      nextOrd: () => ord(clock.now()),
    };
    this.#ctx = ctx;
    this.#beforeDeletionStep = options.beforeDeletionStep;
    this.#conversations = new Conversations(ctx);
    this.#reader = new LogReader(ctx);
    this.#log = new ConversationLog(ctx, this.#reader);
    this.#submissions = new DynamoSubmissions(ctx, this.#log);
    this.#inbox = new Inbox(ctx, this.#log);
    this.#checkpoints = new Checkpoints(ctx);
    if (ctx.idleSessions) {
      const idle = new IdleSessions(ctx);
      this.listIdleConversations = (query) => idle.list(query);
    }
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
  sessionLive(key: SessionKey): Promise<boolean> {
    return this.#submissions.sessionLive(key);
  }
  deliverChildOutcome(delivery: ChildOutcomeDelivery): Promise<ChildOutcomeDelivered> {
    return deliverChildOutcome(this.#ctx, this.#log, delivery);
  }
  getCallWait(submissionId: string, callId: string): Promise<CallWait | undefined> {
    return getCallWait(this.#ctx, submissionId, callId);
  }
  findCallback(callbackDigest: string): Promise<CallWait | undefined> {
    return findCallback(this.#ctx, callbackDigest);
  }
  answerCall(write: CallAnswerWrite): Promise<CallAnswered> {
    return answerCall(this.#ctx, this.#log, write);
  }
  listChildSubmissions(parentSubmissionId: string, options?: { unsettledOnly?: boolean }): Promise<Submission[]> {
    return this.#submissions.listChildSubmissions(parentSubmissionId, options);
  }
  listDueWaits(now: number): Promise<Submission[]> {
    return this.#submissions.listDueWaits(now);
  }
  postponeWaitCheck(postponement: WaitCheckPostponement): Promise<boolean> {
    return postponeWaitCheck(this.#ctx, postponement);
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
    return this.#conversations.ensureConversation(candidate);
  }
  getConversation(key: SessionKey): Promise<Conversation> {
    return this.#conversations.getConversation(key);
  }
  appendRecords(conversationId: string, drafts: RecordDraft[], options?: AppendOptions): Promise<ConversationRecord[]> {
    return this.#log.appendRecords(conversationId, drafts, options);
  }
  readRecords(conversationId: string, afterId?: string, limit?: number): Promise<ConversationRecord[]> {
    return this.#reader.readRecords(conversationId, afterId, limit);
  }
  /** Nothing to do: delta batches expire by the table's TTL from their write (ADR 0034). */
  async foldDeltas(): Promise<number> {
    return 0;
  }
  readCheckpoint(conversationId: string): Promise<LogCheckpoint | undefined> {
    return this.#checkpoints.read(conversationId);
  }
  writeCheckpoint(conversationId: string, checkpoint: LogCheckpoint): Promise<void> {
    return this.#checkpoints.write(conversationId, checkpoint);
  }

  // ---- attachments ----
  putAttachment(mediaType: string, data: Uint8Array): Promise<AttachmentRef> {
    return this.#blobs.put(mediaType, data);
  }
  getAttachment(digest: string): Promise<{ ref: AttachmentRef; data: Uint8Array }> {
    return this.#blobs.get(digest);
  }
  getAttachmentRef(digest: string): Promise<AttachmentRef> {
    return this.#blobs.ref(digest);
  }
  addAttachmentUploader(digest: string, uploader: string): Promise<void> {
    return addAttachmentUploader(this.#ctx, digest, uploader);
  }
  isAttachmentUploader(digest: string, uploader: string): Promise<boolean> {
    return isAttachmentUploader(this.#ctx, digest, uploader);
  }

  // ---- inbox ----
  enqueueInbox(key: SessionKey, message: InboxMessage): Promise<{ submissionId: string }> {
    return this.#inbox.enqueueInbox(key, message);
  }
  drainInbox(request: {
    submissionId: string;
    attemptId: string;
    kinds: InboxKind[];
    expectedHead?: string;
  }): Promise<ConversationRecord[]> {
    return this.#inbox.drainInbox(request);
  }

  // ---- deletion ----
  deleteConversation(key: SessionKey): Promise<ConversationDeletion> {
    return deleteConversation(this.#ctx, key, this.#beforeDeletionStep);
  }
  reserveDeletion(key: SessionKey): Promise<boolean> {
    return reserveDeletion(this.#ctx, key);
  }
  releaseDeletion(key: SessionKey): Promise<void> {
    return releaseDeletion(this.#ctx, key);
  }

  async close(): Promise<void> {
    for (const client of this.#owned.splice(0)) client.destroy();
    this.#blobs.close();
  }
}
