import type { LogCheckpoint } from "../conversation/checkpoint.ts";
import type { AttachmentRef, ConversationRecord, RecordDraft, SettledPayload } from "../protocol/records.ts";
import type { CallAnswered, CallAnswerWrite, CallWait } from "./call-wait.ts";
import type { ChildOutcomeDelivered, ChildOutcomeDelivery } from "./child-outcome.ts";
import type { ActivityPage, ActivityQuery } from "./activity.ts";
import type {
  Attempt,
  Cancellation,
  Conversation,
  InboxKind,
  InboxMessage,
  LeaseRenewal,
  LeaseRenewed,
  NewSubmission,
  AdmittedSubmission,
  SessionKey,
  SessionSubmissionQuery,
  Submission,
  SubmissionClaim,
  SubmissionRelease,
  SubmissionStatus,
  SubmissionWait,
  WaitCheckPostponement,
} from "./submission.ts";

/**
 * Submissions and their lifecycle. Every transition is one atomic compare-and-set on the
 * expected prior state; a lost CAS throws `ClaimLost`.
 */
export interface SubmissionStore {
  /**
   * Same id, same session key and identical input → the stored row (replay); same id with another
   * input or another session key (agent, instance, session) → `DispatchConflict`, nothing stored.
   * When the session has no conversation yet, it is created (id `sub.conversationId`, created at
   * `sub.createdAt`) in the same atomic write as the submission, so a refused admission creates
   * none; when it has one, the stored row carries that conversation's id.
   *
   * With `delayedUntil` (a delayed message, ADR 0025) the row is stored `waiting` outside its
   * session's order: never its head, no attempt runs it, `delayedUntil` set, `waitingFor` one
   * `time` entry, its wait check at that time (so `listDueWaits` returns it then); the session's
   * listing shows it from its admission. `joinSessionOrder` releases it.
   */
  admitSubmission(sub: NewSubmission): Promise<AdmittedSubmission>;
  /**
   * A delayed message joins its session's order: waiting → queued as the session's newest
   * admission (its head when nothing is ahead of it), `delayedUntil`, its wait and its check
   * cleared; the listing shows it at its new place. Returns the row (the caller rings it).
   * `ClaimLost` unless it is a delayed message still waiting (released by another sweep, or
   * cancelled).
   */
  joinSessionOrder(submissionId: string): Promise<Submission>;
  /** The row, or `SubmissionNotFound`. */
  getSubmission(id: string): Promise<Submission>;
  /** Per session, the oldest unsettled submission, only when it is queued. */
  listRunnable(): Promise<Submission[]>;
  /**
   * The session's head: its oldest unsettled submission, in any status, or `undefined` when
   * every submission of the session is settled. Used to ring the next head after a settlement
   * and to tell whether a session is busy (SSE idle detection). Must not scan other sessions.
   */
  getSessionHead(key: SessionKey): Promise<Submission | undefined>;
  /**
   * True while the session has a head that is not waiting (on children): a run that will append
   * to its log. Read as cheaply as the store can (an SSE stream asks on every idle poll).
   */
  sessionLive(key: SessionKey): Promise<boolean>;
  /**
   * The session's submissions newest first (reverse admission order): at most `query.limit`,
   * only those admitted before `query.before` when given (the paging cursor), only those in
   * `query.status` when given. Reads the session's own key range or index, never other
   * sessions. `SubmissionNotFound` when `before` is not a submission of this session.
   */
  listSessionSubmissions(key: SessionKey, query: SessionSubmissionQuery): Promise<Submission[]>;
  /**
   * The console's listing across agents and instances (ADR 0054): submissions newest activity
   * first (`updatedAt` descending, then id descending), only those older than `query.before`
   * (a cursor from an earlier page's `next`), filtered by agent, states and time. Reads an
   * index ordered by activity, never a scan of the table; a page reads a bounded amount (a
   * filtered page may come back short with a `next`). A row whose activity changes moves to the
   * front: a paging reader may see it again, or miss it on pages already read. A malformed
   * `before` lists nothing.
   */
  listActivity(query: ActivityQuery): Promise<ActivityPage>;
  /** Every submission in `status`, admission order. */
  listByStatus(status: SubmissionStatus): Promise<Submission[]>;
  /**
   * queued → running, recording attempt, owner and lease. Charges an attempt (`attemptCount+1`)
   * unless the row had `pendingResume`; the returned row carries `pendingResume`, the stored row
   * clears it. `ClaimLost` when not queued or when the submission is not its session's head.
   */
  claimSubmission(claim: SubmissionClaim): Promise<Submission>;
  /** Durable attempt marker, after the claim and before any work. */
  startAttempt(attempt: Attempt): Promise<void>;
  /** Markers in start order. */
  listAttempts(submissionId: string): Promise<Attempt[]>;
  /**
   * `ClaimLost` unless running under this attempt. Answers whether a cancel was requested, from
   * the row the renewal writes (no separate read): the owner's way to learn of a cancel.
   */
  renewLease(renewal: LeaseRenewal): Promise<LeaseRenewed>;
  /** Running submissions whose lease expired at or before `now`. */
  listExpiredLeases(now: number): Promise<Submission[]>;
  /** running → queued. `ClaimLost` unless running under this attempt. */
  releaseSubmission(release: SubmissionRelease): Promise<void>;
  /**
   * running → waiting: lease cleared, `pendingResume` set, `waitUntil`, `pendingCalls` and `waitingFor` stored,
   * and the wait's first check: `waitCheckAt` = the earlier of `wait.waitCheckAt` (unset: the
   * park's own time, so the next sweep checks it) and `waitUntil` (`firstWaitCheck`).
   */
  waitSubmission(wait: SubmissionWait): Promise<void>;
  /**
   * waiting → queued; `pendingResume` survives, `waitUntil`, `waitCheckAt`, `pendingCalls` and
   * `waitingFor` cleared. `ClaimLost` unless waiting (a delayed message: `joinSessionOrder`).
   */
  resumeSubmission(submissionId: string): Promise<void>;
  /**
   * The wake, guarded by the store itself: only while the parent is `waiting` and `callId` is
   * one of its `pendingCalls`, appends `drafts` to the parent's conversation and removes the
   * call from the pending calls, atomically; the delivery that removes the last one also
   * requeues the parent (waiting → queued, like `resumeSubmission`) and says so, and its caller
   * rings the parent's doorbell. A second delivery for the same call is refused (`not_pending`),
   * however the two race; so is any delivery to a parent that is not waiting (`not_waiting`).
   * Nothing decides "every child settled" from a listing. Unknown parent → `SubmissionNotFound`.
   * Any pending call is delivered this way (a child's outcome, or the stored answer of a call
   * wait, ADR 0025); the requeue clears the wait as `resumeSubmission` does.
   */
  deliverChildOutcome(delivery: ChildOutcomeDelivery): Promise<ChildOutcomeDelivered>;
  /** The call wait of a submission's call (registered by its announcing record), or undefined. */
  getCallWait(submissionId: string, callId: string): Promise<CallWait | undefined>;
  /** The callback's call wait by the digest of its id, or undefined. */
  findCallback(callbackDigest: string): Promise<CallWait | undefined>;
  /**
   * The guarded decision (ADR 0025), one atomic write: only when the call wait exists without
   * an answer (else `already_answered` with the first one: a second decision is refused by the
   * store itself, however two race) and its submission is neither terminalizing nor settled,
   * stores the answer; and when the submission is `waiting` with the call in its pending calls,
   * appends `drafts` to its conversation and removes the call in the same write, the last one
   * requeueing it (waiting → queued, as `deliverChildOutcome`). Otherwise the answer is only
   * stored (`delivered: false`): the park delivers it.
   */
  answerCall(write: CallAnswerWrite): Promise<CallAnswered>;
  /**
   * Submissions whose parent is `parentSubmissionId`, admission order, any status; with
   * `unsettledOnly`, only those not `settled` or `terminalizing` (what a cascade may cancel: a
   * store reads no more of the others than it must to tell). May lag a just-admitted child (an
   * index); a parent's own `task_spawned` records name its children exactly.
   */
  listChildSubmissions(parentSubmissionId: string, options?: { unsettledOnly?: boolean }): Promise<Submission[]>;
  /**
   * Waiting submissions whose wait check is due: `waitCheckAt` at or before `now`, admission
   * order (an expired wait, `waitUntil` before `now`, is always among them, as its check is never
   * later than its deadline). Reads the due rows only, through an index ordered by `waitCheckAt`:
   * a wait that is not due costs nothing beyond that one index read. Every row that leaves
   * `waiting` (resume, the last delivery, cancel) leaves the index with it.
   */
  listDueWaits(now: number): Promise<Submission[]>;
  /**
   * Moves a waiting submission's next check to `postponement.nextCheckAt` (clamped to its
   * `waitUntil`), only while it is still waiting with the check the caller found due
   * (`waitCheckAt` unchanged: not resumed, cancelled, re-parked or postponed by another sweep
   * meanwhile). Answers whether it moved; otherwise nothing changes. `updatedAt` is left alone
   * (the wait's age is measured from its park).
   */
  postponeWaitCheck(postponement: WaitCheckPostponement): Promise<boolean>;
  /**
   * queued/waiting → terminalizing with `cancelledOutcome(cancellation)` as the reservation's
   * outcome (`wasRunning: false`; the canceller then appends the settlement record and
   * finalizes, or a recoverer does; a waiting one leaves its wait: `waitUntil`, `waitCheckAt`,
   * `pendingCalls` and `waitingFor` cleared); a delayed message still outside its session's
   * order → settled at once with that outcome and no record (`settled: true`: it never joined
   * the conversation); running → `cancelRequested` and `cancellation` set, status unchanged
   * (`wasRunning: true`; a repeated cancel keeps the first cancellation); terminalizing/settled
   * → `ClaimLost`, nothing stored. Every case sets `cancelRequested`.
   */
  cancelSubmission(submissionId: string, cancellation: Cancellation): Promise<{ wasRunning: boolean; settled?: boolean }>;
  /**
   * running → terminalizing (phase 1 of settlement), storing `outcome` (the settlement record's
   * payload to be) on the row, so a recoverer finishing a crashed settlement writes the real one.
   * `ClaimLost` unless running under this attempt. With `requireDrainedInbox`, `InboxNotDrained`
   * while the submission has undelivered inbox messages (a steer must not vanish behind a
   * settlement).
   */
  reserveSettlement(
    submissionId: string,
    attemptId: string,
    options?: { requireDrainedInbox?: boolean; outcome?: SettledPayload },
  ): Promise<void>;
  /**
   * terminalizing → settled (phase 2), keeping `outcome` (the settlement record's payload) on the
   * row, or without one the outcome stored with the reservation. Idempotent when already settled
   * (the first outcome stays). Like a settlement of a head, it promotes the session's next
   * unsettled submission to head, which sets its `updatedAt`.
   */
  finalizeSettlement(submissionId: string, outcome?: SettledPayload): Promise<void>;
}

export interface AppendOptions {
  /**
   * The id of the last record the writer knows of ("" for an empty log). When given, the
   * append happens only if it is still the conversation's head, else `ClaimLost`.
   */
  expectedHead?: string;
  /** When given, the append happens only if that submission is running under that attempt. */
  fence?: AppendFence;
  /**
   * The records are history copied from another conversation (a fork, an import, ADR 0034):
   * their `approval_requested` and `callback_started` records register no call waits (no
   * submission of this conversation waits on them; an import's renewed submission ids name none).
   * A copied append may go to a conversation id no session holds yet: a copy writes its records
   * under its new id first and gives the id to its session last (`ensureConversation` with that
   * id), so no dispatch into the session can write into a copy half made (issue 33).
   */
  copied?: boolean;
}

/** An append's fence: the submission must run under the attempt. */
export interface AppendFence {
  submissionId: string;
  attemptId: string;
  /**
   * Told, from the row the fence reads anyway (no extra read), that a cancel was requested for
   * the submission: its owner learns a cancel at its next flush, not only at its next lease
   * renewal (DESIGN §3.1 "Control reaches a running worker through state it already reads").
   * The append itself goes on.
   */
  onCancel?: (cancellation: Cancellation) => void;
}

/** The append-only record log, one per session key. */
export interface ConversationStore {
  /**
   * The conversation of `candidate.key`, created from the candidate when absent (without a
   * submission: admission creates it together with its first submission instead).
   */
  ensureConversation(candidate: Conversation): Promise<{ conversation: Conversation; created: boolean }>;
  /** Or `ConversationNotFound`. */
  getConversation(key: SessionKey): Promise<Conversation>;
  /**
   * Appends in order and returns the stored records. The store assigns ids with
   * `nextRecordIds(head, n, now)`, so ids strictly increase per conversation; the batch becomes
   * visible all at once or not at all. `ClaimLost` when `expectedHead` or `fence` does not hold,
   * or when a `submission_settled` draft's submission already has one in the log (one settlement
   * record per submission, whoever writes it). An `approval_requested` or `callback_started`
   * draft registers its call wait (`callWaitOf`) in the same atomic write, unless `copied`; one
   * registered already for that call is left as it is.
   */
  appendRecords(
    conversationId: string,
    drafts: RecordDraft[],
    options?: AppendOptions,
  ): Promise<ConversationRecord[]>;
  /**
   * Records with ids strictly greater than `afterId` ("" = from the start), append order, at
   * most `limit` (default: all). Unknown conversation → empty, no error. Never returns a record
   * while an earlier one is still invisible (readers tailing the log never skip).
   */
  readRecords(conversationId: string, afterId?: string, limit?: number): Promise<ConversationRecord[]>;
  /**
   * The conversation's newest stored checkpoint (ADR 0018), a copy; undefined when none (or for
   * an unknown conversation). Any checkpoint a store returns is valid: it describes a prefix of
   * the log, which never changes.
   */
  readCheckpoint(conversationId: string): Promise<LogCheckpoint | undefined>;
  /**
   * Stores `checkpoint` unless the stored one is at or after its `at` (a slower writer never
   * replaces a newer one). Not fenced: a checkpoint is derived from the log, not a claim on it.
   */
  writeCheckpoint(conversationId: string, checkpoint: LogCheckpoint): Promise<void>;
  /**
   * Lean history (ADR 0034): removes the streaming delta records (`assistant_text_delta`,
   * `assistant_thinking_delta`) of submissions settled at least the store's `deltaRetentionMs`
   * ago (its own clock), and answers how many it removed. The completed message records hold
   * what the deltas streamed, so readers lose no text. Reads never see a gap: `readRecords` after
   * a removed id answers the records after it, as it always does. A store that expires deltas on
   * its own (DynamoDB: a TTL set when they are written, `deltaRetentionMs` after their write)
   * answers 0 and hides an expired delta from reads until the TTL deletes it.
   */
  foldDeltas(): Promise<number>;
}

/**
 * Content-addressed bytes, and who uploaded them (ADR 0046): the bytes are stored once whoever
 * uploads them; each uploader is a row of its own beside them.
 */
export interface AttachmentStore {
  /** Digest `sha256:<hex>` over the bytes; identical bytes → same ref. */
  putAttachment(mediaType: string, data: Uint8Array): Promise<AttachmentRef>;
  /** Or `AttachmentNotFound`. */
  getAttachment(digest: string): Promise<{ ref: AttachmentRef; data: Uint8Array }>;
  /** The ref of a stored attachment without its bytes (admission's check), or `AttachmentNotFound`. */
  getAttachmentRef(digest: string): Promise<AttachmentRef>;
  /**
   * Records that `uploader` (a principal id) uploaded the attachment `digest`, written after its
   * bytes. Idempotent; one row per (digest, uploader), the bytes untouched. A deletion that removes
   * the bytes may leave the row: it grants its uploader only bytes it sent itself.
   */
  addAttachmentUploader(digest: string, uploader: string): Promise<void>;
  /** Whether `uploader` uploaded `digest` (a row {@link addAttachmentUploader} wrote); reads no bytes. */
  isAttachmentUploader(digest: string, uploader: string): Promise<boolean>;
}

/** What a deletion removed (ADR 0034). */
export interface ConversationDeletion {
  /** False when the session had no conversation (nothing was left to delete). */
  deleted: boolean;
  /** The deleted conversation. */
  conversationId?: string;
  /** Digests of the blobs deleted with it (those no other conversation references). */
  blobsDeleted: string[];
}

/** Deleting a session's conversation and everything it owns (ADR 0034). */
export interface DeletionStore {
  /**
   * Deletes the conversation of `key` and everything of it: its records, checkpoint, submissions
   * (rows, attempts, inputs, inbox messages, wait entries) and the blobs only it references (the
   * attachments of its records and, where the store spills, its spilled payloads; a blob another
   * conversation's records reference stays). Refused with `SessionBusy`, nothing deleted, while
   * the session has an unsettled submission. Idempotent (`deleted: false` when the session has no
   * conversation) and resumable: a deletion interrupted midway is finished by the next call. A
   * later admission to the session starts a new conversation. Child sessions are the caller's:
   * each is a session of its own.
   */
  deleteConversation(key: SessionKey): Promise<ConversationDeletion>;
  /**
   * Marks the session's conversation as being deleted, so that from then on admission to it is
   * refused (`SessionBusy`) until {@link deleteConversation} completes or {@link releaseDeletion}
   * clears the mark. Refused with `SessionBusy`, nothing marked, while the session has an
   * unsettled submission. Answers true when this call set the mark; false when the session has no
   * conversation or was marked already (an interrupted deletion: a release must not clear it).
   * A deletion of a session with its subagents' sessions marks them all before deleting any, so
   * a refusal anywhere in the tree changes nothing (ADR 0041).
   */
  reserveDeletion(key: SessionKey): Promise<boolean>;
  /** Clears a mark {@link reserveDeletion} set (a deletion refused elsewhere in its tree); a no-op without one. */
  releaseDeletion(key: SessionKey): Promise<void>;
}

/** What a run asks of its inbox at a safe point. */
export interface InboxDrain {
  submissionId: string;
  attemptId: string;
  kinds: InboxKind[];
  /** As in `appendRecords`: deliver only if this is still the conversation's head. */
  expectedHead?: string;
}

/**
 * Steer and follow-up messages for a session's in-flight run. The run may be in another
 * process (or Lambda), so they are durable and the run drains them at its safe points.
 */
export interface InboxStore {
  /**
   * Accepts a message for the session's in-flight run: its head submission is running or
   * waiting, or queued after a claim (a continuation or retry). Otherwise `NoRunInFlight` and
   * nothing is stored. Returns the submission the message belongs to.
   */
  enqueueInbox(key: SessionKey, message: InboxMessage): Promise<{ submissionId: string }>;
  /**
   * Delivers the submission's undelivered messages of the given kinds, in acceptance order:
   * appends one `user_message` record each (payload `{body, origin}`, and the message's
   * `principalId` when it has one; authored by `attemptId`)
   * and marks them delivered, atomically. Fenced like `appendRecords`. Returns the records.
   */
  drainInbox(request: InboxDrain): Promise<ConversationRecord[]>;
}

/**
 * Everything the engine needs from durable storage: one narrow contract for every backend.
 * Adapters implement it whole (and pass the conformance suite); each consumer asks only for
 * its role below.
 */
export interface Store extends SubmissionStore, ConversationStore, AttachmentStore, InboxStore, DeletionStore, RetentionStore {
  /** Releases connections / file handles. */
  close?(): Promise<void>;
}

// ---- the store by role: what each consumer uses -------------------------------------------

/** Admission: make a dispatch durable, and accept steer / follow-up messages for a run in flight. */
export interface AdmissionStore
  extends Pick<ConversationStore, "ensureConversation" | "appendRecords">,
    Pick<SubmissionStore, "admitSubmission">,
    Pick<InboxStore, "enqueueInbox">,
    Pick<AttachmentStore, "getAttachmentRef"> {}

/** Which idle conversations a retention sweep looks at (ADR 0034). */
export interface IdleConversationQuery {
  /** Epoch ms: conversations whose last record was appended before it (by its id's time), or without records created before it. */
  idleSince: number;
  /** The id of the last conversation of the previous page (the paging cursor). */
  after?: string;
  limit: number;
}

/**
 * Expiring conversations by age (`conversationRetentionMs`, ADR 0034). Optional: a store without
 * it cannot expire conversations by age (the runtime refuses the setting).
 */
export interface RetentionStore {
  /**
   * Conversations idle since `query.idleSince`, at most `query.limit`, in an order the store keeps
   * from page to page (`after`: the last conversation of the previous page; memory and SQLite:
   * id order; DynamoDB: oldest idle first). Idle: the newest record's id time (a record id is a
   * ULID minted at its append) is before it, or the conversation has no record and was created
   * before it (DynamoDB: nothing of the session unsettled since before it). Children may be
   * included (the caller skips them: they go with their parent).
   */
  listIdleConversations?(query: IdleConversationQuery): Promise<Conversation[]>;
}

/** What one attempt's log writer uses: reads, fenced appends and inbox drains of its conversation. */
export interface LogStore
  extends Pick<ConversationStore, "appendRecords" | "readRecords" | "readCheckpoint" | "writeCheckpoint">,
    Pick<InboxStore, "drainInbox"> {}

/**
 * An attempt's claim and lease: claim the head, keep the lease, hand the row back, settle in two
 * phases, and find the session's next head to ring.
 */
export interface ClaimStore
  extends Pick<
    SubmissionStore,
    | "getSubmission"
    | "claimSubmission"
    | "startAttempt"
    | "renewLease"
    | "releaseSubmission"
    | "reserveSettlement"
    | "finalizeSettlement"
    | "getSessionHead"
  > {}

/**
 * Reading and tailing: the replay and live tail, the session's liveness, a settled outcome, and
 * the operator's view of a session's submissions, an attachment and whether a caller uploaded it.
 */
export interface ReadStore
  extends Pick<ConversationStore, "getConversation" | "readRecords">,
    Pick<SubmissionStore, "getSubmission" | "getSessionHead" | "sessionLive" | "listAttempts" | "listSessionSubmissions">,
    Pick<AttachmentStore, "getAttachment" | "isAttachmentUploader"> {}

/**
 * The sweep's listings: what a crash, a lost doorbell or an expired wait left behind; the
 * wait checks it makes (the lost-wake backstop), pushed later each time they find nothing; and
 * the folding of settled submissions' streaming deltas (lean history).
 */
export interface SweepStore
  extends Pick<
    SubmissionStore,
    "listByStatus" | "listExpiredLeases" | "listRunnable" | "listDueWaits" | "postponeWaitCheck" | "joinSessionOrder"
  >,
    Pick<ConversationStore, "foldDeltas"> {}

/**
 * Parents and children: park a parent waiting on its children, hand it a child's outcome (the
 * guarded wake), resume it, list its children.
 */
export interface ParentChildStore
  extends Pick<SubmissionStore, "waitSubmission" | "resumeSubmission" | "listChildSubmissions" | "deliverChildOutcome"> {}

/**
 * Call waits (ADR 0025): find a call's wait (by its call, or a callback's by its digest) and
 * answer it with the guarded decision write.
 */
export interface CallWaitStore extends Pick<SubmissionStore, "getCallWait" | "findCallback" | "answerCall"> {}

/** Cancel: reserve the settlement of a queued or waiting submission at once, or flag a running one. */
export interface CancelStore extends Pick<SubmissionStore, "cancelSubmission"> {}

/** Content-addressed uploads, and who uploaded them (ADR 0046). */
export interface UploadStore extends Pick<AttachmentStore, "putAttachment" | "addAttachmentUploader"> {}

/**
 * Deleting conversations (`DELETE /agents/:agent/:instance`): find a session's submissions and
 * their children's sessions, wait for cancelled ones to settle, delete.
 */
export interface ConversationDeletionStore
  extends DeletionStore,
    Pick<SubmissionStore, "listSessionSubmissions" | "listChildSubmissions" | "getSubmission"> {}

/** The console (ADR 0054): every agent's and instance's submissions by their latest activity. */
export interface ConsoleStore extends Pick<SubmissionStore, "listActivity"> {}

/** Every role; `Store` is exactly their union (a test checks that no method is left without one). */
export type StoreRoles = AdmissionStore &
  LogStore &
  ClaimStore &
  ReadStore &
  SweepStore &
  ParentChildStore &
  CallWaitStore &
  CancelStore &
  UploadStore &
  ConversationDeletionStore &
  RetentionStore &
  ConsoleStore;
