/**
 * The runtime's request methods: what a caller asks of it (admission, waits, streams, the
 * operator's view, attachments, a conversation's lifecycle). `Runtime` adds its lifecycle and the
 * engine's entry points; `Runtime.as(principal)` gives a caller these, each authorized.
 */
import type { DispatchResult } from "../engine/admission.ts";
import type { CancelResult } from "../engine/cancel.ts";
import type { ConversationDeletionReport } from "../engine/conversation-deletion.ts";
import type { ConversationExport } from "../engine/conversation-export.ts";
import type { DirectUpload } from "../ports/direct-uploads.ts";
import type { AttachmentPolicy } from "../protocol/attachment-policy.ts";
import type { ImportAnswer } from "../protocol/conversation-export.ts";
import type { AttachmentRef, ConversationRecord, SettledPayload } from "../protocol/records.ts";
import type { ActivityListPage, ActivityRequest, SubmissionDetail, SubmissionPage } from "../protocol/submission-view.ts";
import type { Conversation } from "../store/submission.ts";
import type { AttachmentUpload, DirectUploadDeclaration } from "./attachments.ts";
import type { ForkAnswer, ForkRequest } from "./fork-request.ts";
import type { RetryResult } from "./activity-view.ts";
import type { DirectToolCall, DirectToolResult } from "./direct-tool-call.ts";
import type { ApprovalDecision } from "../protocol/approvals.ts";
import type {
  DecisionRequest,
  DispatchRequest,
  InstanceAddress,
  SessionAddress,
  SteerRequest,
  SubmissionAddress,
  SubmissionListRequest,
} from "./requests.ts";

/**
 * Every method that takes a request checks it against the request rules (`requests.ts`): a
 * malformed id is `InvalidRequest`, an unknown agent `UnknownAgent`, a message that breaks
 * admission's rules `InvalidDispatch`; nothing is stored for a refused request.
 */
export interface RuntimeRequests {
  /**
   * Admission; resolves once the submission is durable. A message with `notBefore` ahead (at most
   * a year) is a delayed message: admitted now, it joins its session's order at that time.
   */
  dispatch(request: DispatchRequest): Promise<DispatchResult>;
  /**
   * A person's decision on a call that asked approval (ADR 0025): approved, the call runs once
   * and the run goes on; denied, the model reads the denial. The first decision stands: the same
   * one again answers it again, another is `AlreadyDecided`. `SubmissionNotFound`, `CallNotFound`,
   * `ApprovalNotRequested` (the call asked none), `AlreadySettled`, `InvalidRequest` (a
   * non-boolean `approved`, a reason over 4 KB): nothing stored.
   */
  decide(request: DecisionRequest): Promise<ApprovalDecision>;
  /**
   * A callback's answer, by its id: `{result}` or `{error}` becomes the waiting call's outcome and
   * the run goes on. The same answer again is a replay; another is `AlreadyAnswered`; an unknown or
   * expired id `CallbackNotFound`.
   */
  resolveCallback(callbackId: string, answer: { result: unknown } | { error: string }): Promise<{ status: "answered"; replayed: boolean }>;
  /** The calls a session waits on a person's decision for (its head's, when it waits). */
  pendingApprovals(address: SessionAddress): Promise<
    Array<{ submissionId: string; callId: string; toolName: string; args?: unknown; approvalId: string; /** Epoch ms. */ expiresAt: number }>
  >;
  /**
   * Admits a manual compaction of a session: a submission of its own in the session's order, run
   * by a worker like any other (it settles `succeeded` with `result: {compacted, firstKeptEntryId?}`).
   * With more than one exchange it always compacts something. `ConversationNotFound` for a
   * session without a conversation; nothing is stored for a refused request.
   */
  compact(address: SessionAddress): Promise<DispatchResult>;
  /** Resolves with the settled payload; survives restarts (falls back to polling the store). */
  wait(submissionId: string, options?: { signal?: AbortSignal }): Promise<SettledPayload>;
  /** Injects a user message at the live run's next turn boundary; `NoRunInFlight` otherwise. */
  steer(request: SteerRequest): Promise<void>;
  /** Delivers a user message when the live run would otherwise stop, in the same submission. */
  followUp(request: SteerRequest): Promise<void>;
  /**
   * Cancels a submission: a queued or waiting one settles `failed` with code `cancelled` and error
   * `cancelled: <reason>` (default "cancelled by request") at once; a running one stops at its
   * next safe point (its model stream aborted, what it wrote kept) and settles the same way
   * (`cancelling`). Idempotent: an already cancelled one answers `cancelled` again. Unknown id
   * (or, with `within`, one of another agent instance) → `SubmissionNotFound`; settled otherwise →
   * `AlreadySettled`. The session's next submission then runs.
   */
  cancel(submissionId: string, reason?: string, within?: InstanceAddress): Promise<CancelResult>;
  /** The log strictly after `afterId` (a record id, or "" for all) — the same replay SSE serves. */
  records(conversationId: string, afterId?: string, limit?: number): Promise<ConversationRecord[]>;
  /** The conversation of a session (`ConversationNotFound` when none). */
  conversation(address: SessionAddress): Promise<Conversation>;
  /**
   * True while the session has work that will append to its log: an unsettled session head that
   * is not waiting on subagents. A stream that has read everything up to a moment when the
   * session was not live has read every record the session will have until its next dispatch:
   * that is when an SSE stream ends (DESIGN §3.1). One store read.
   */
  sessionLive(address: SessionAddress): Promise<boolean>;
  /**
   * One page of a session's submissions, newest first (the operator's view); `next` is the
   * `after` of the following page. A bad status, limit or cursor is `InvalidRequest`.
   */
  listSubmissions(request: SubmissionListRequest): Promise<SubmissionPage>;
  /**
   * One submission of an agent instance, with its attempts: `SubmissionNotFound` when the
   * instance has none by that id.
   */
  submission(request: SubmissionAddress): Promise<SubmissionDetail>;
  /**
   * The console's listing across agents and instances (ADR 0054): submissions newest activity
   * first, filtered by agent, state and time, one page at a time (a filtered page may be short
   * and still have a `next`). `InvalidRequest` for a bad limit, state or time.
   */
  activity(request: ActivityRequest): Promise<ActivityListPage>;
  /**
   * Retries a failed or cancelled root submission (ADR 0054): the same input dispatched again to
   * its session, with dispatch id `<id>~retry` (the link to the old one; a second retry of the
   * same submission answers the first). `InvalidRequest` for one that did not fail.
   */
  retry(submissionId: string): Promise<RetryResult>;
  /**
   * Answers a callback by hand (ADR 0054, the console's "for testing"): the call `callId` of
   * `submissionId` as `POST /callbacks/:callbackId` would answer it, for the operator, who holds
   * no callback id. `CallbackNotFound` when the call waits for no callback.
   */
  /**
   * Calls one of an agent's tools directly with arguments (ADR 0054), outside any run: only with
   * `RuntimeConfig.directToolCalls` (else `Forbidden`); `InvalidRequest` naming the agent's tools
   * for an unknown one. A tool that throws answers `isError: true` with its message.
   */
  callTool(call: DirectToolCall): Promise<DirectToolResult>;
  answerCallback(submissionId: string, callId: string, answer: { result: unknown } | { error: string }): Promise<{ status: "answered"; replayed: boolean }>;
  /** Wakes `listener` after each append to the conversation in this process. */
  onAppend(conversationId: string, listener: () => void): () => void;
  /**
   * Stores an attachment's bytes (content-addressed: the same bytes give the same ref, stored
   * once) after the attachment policy's checks: `InvalidAttachment` naming the problem (and, for
   * an unsupported type, the allowed ones), nothing stored. With `uploadedBy`, records that
   * principal as an uploader of the digest (ADR 0046).
   */
  uploadAttachment(upload: AttachmentUpload): Promise<AttachmentRef>;
  /**
   * A direct upload of a large attachment (to S3 on AWS): where to POST the declared bytes. The
   * declaration is checked like an upload's type and size. `UploadsUnsupported` without direct
   * uploads.
   */
  createAttachmentUpload(declared: DirectUploadDeclaration): Promise<DirectUpload>;
  /**
   * Checks a direct upload's bytes against their declared digest and the policy, and makes them
   * an attachment; only then may a dispatch reference the digest. Idempotent. `uploadedBy`
   * becomes an uploader of the digest when this call checked the bytes (not on a repeat).
   */
  completeAttachmentUpload(uploadId: string, uploadedBy?: string): Promise<AttachmentRef>;
  /**
   * An attachment's bytes and ref (`AttachmentNotFound`), to anyone: `Runtime.as(principal)`
   * reads them only for an uploader or through a conversation that references them (ADR 0046).
   */
  attachment(digest: string): Promise<{ ref: AttachmentRef; data: Uint8Array }>;
  /** The attachment policy in force (media type → largest size in bytes) and whether direct uploads exist. */
  attachmentLimits(): { policy: AttachmentPolicy; directUploads: boolean };
  /**
   * Deletes a session's conversation and everything it owns (ADR 0034): records, checkpoint,
   * submissions, the blobs no other conversation references, and its subagents' conversations.
   * Idempotent (`deleted: false` when nothing was left) and resumable (an interrupted deletion
   * is completed by the next call). A session with an unsettled submission is `SessionBusy`,
   * nothing deleted, unless `cancel` is set: then they are cancelled and awaited first.
   */
  deleteConversation(request: SessionAddress & { cancel?: boolean }): Promise<ConversationDeletionReport>;
  /**
   * Forks a session's conversation (edit and retry, ADR 0034): a new session of the same agent
   * (`targetInstance` default the source's, `targetSession` default `fork-<ulid>`) whose history is the
   * source's log up to `fromRecordId` (streaming deltas left out), then, with `message`, that
   * message dispatched into it. The target must have no conversation; a `fromRecordId` the
   * conversation does not hold is `InvalidRequest`.
   */
  fork(request: ForkRequest): Promise<ForkAnswer>;
  /**
   * A session's conversation as an export (ADR 0034): its header, then the lines to stream (every
   * record, the attachments its messages reference, the end line). `ConversationNotFound` when
   * the session has none.
   */
  exportConversation(address: SessionAddress): Promise<ConversationExport>;
  /**
   * Rebuilds an export (its JSON Lines text) as the conversation of a new session: checked whole
   * first (`InvalidExport` naming the line; `ConversationExists` when the session has a
   * conversation), then written with renewed record, conversation and submission ids.
   */
  importConversation(address: SessionAddress, text: string): Promise<ImportAnswer>;
  hasAgent(name: string): boolean;
  /**
   * The agents this runtime serves, in their definition order: name, and the description and
   * result schema their definitions give (none in a process that knows the agents by name only,
   * as the serverless http function does). What the MCP route lists as tools.
   */
  agentCatalog(): AgentCatalogEntry[];
  /**
   * Where a submission is, by its id alone (MCP's task ids): its agent and instance.
   * `SubmissionNotFound` for an unknown id, `InvalidRequest` for a malformed one. One store read.
   */
  locateSubmission(submissionId: string): Promise<SubmissionAddress>;
}

/** One agent as a catalog lists it (`RuntimeRequests.agentCatalog`). */
export interface AgentCatalogEntry {
  name: string;
  /** The definition's description, when it has one and this process loaded it. */
  description?: string;
  /** The definition's result schema (a JSON Schema), when it has one and this process loaded it. */
  resultSchema?: unknown;
}
