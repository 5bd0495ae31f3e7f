/**
 * The canonical records of a conversation: the durable log, the reducer's input and, as JSON,
 * the SSE wire format (`id:` = record id, `event:` = kind, `data:` = the record's JSON).
 * Field names are part of the interface and match the reference system.
 */

/** A content-addressed attachment: bytes live in the AttachmentStore. */
export interface AttachmentRef {
  /** `"sha256:<hex>"` over the raw bytes. */
  digest: string;
  mediaType: string;
  size: number;
}

/** Present on a child (task-spawned) conversation: where in the parent it was spawned. */
export interface ParentRef {
  conversationId: string;
  /** The parent's `assistant_tool_call` call id (record ids are never pre-minted). */
  callId: string;
}

export interface ConversationCreatedPayload {
  agent: string;
  instance: string;
  session: string;
  parentRef?: ParentRef;
}

export interface UserMessagePayload {
  body: string;
  attachments?: AttachmentRef[];
  /** Set when the message was injected into a live run rather than dispatched. */
  origin?: "steer" | "followUp" | "correction";
  /** Who sent it: the authenticated caller's principal id (ADR 0043); absent without authentication. */
  principalId?: string;
}

export interface SignalPayload {
  type: string;
  body: string;
  sender?: Record<string, string>;
  tag?: string;
  /** Who dispatched it: the authenticated caller's principal id (ADR 0043). */
  principalId?: string;
}

export interface AssistantMessageStartedPayload {
  model: string;
  messageType: string;
}

export interface TextDeltaPayload {
  text: string;
}

export interface AssistantToolCallPayload {
  callId: string;
  toolName: string;
  args?: unknown;
  /** Opaque provider signature (base64) that must be replayed with the call on recovery. */
  thoughtSignature?: string;
}

/** One block of tool output, as pi-ai's ToolResult content. */
export type ToolContent =
  | { type: "text"; text: string }
  | { type: "image"; data: string; mimeType: string };

export interface ToolOutcomePayload {
  callId: string;
  toolName: string;
  content?: ToolContent[];
  data?: unknown;
  isError?: boolean;
}

/** The stored assistant message, in pi-ai's wire form (`body` holds the full message). */
export interface MessagePayload {
  role: string;
  type: string;
  body?: unknown;
}

export interface AssistantMessageCompletedPayload {
  message: MessagePayload;
}

export interface CompactionPayload {
  summary: string;
  /** The first record kept verbatim; the reducer re-parents it onto this summary. */
  firstKeptEntryId?: string;
  /** The summarized span as indices into the projected messages (system message not counted): `[startIdx, endIdx)`. */
  startIdx: number;
  endIdx: number;
  /** The summarizer's usage (pi-ai `Usage`), when the provider reported one. */
  usage?: unknown;
  /** Why it ran: before a turn that would pass the threshold, after a context overflow, or asked for. */
  reason?: "threshold" | "overflow" | "manual";
}

export type SettledStatus = "succeeded" | "failed";

/** The settled error codes of a failed submission. */
export type SettledErrorCode =
  | "run_failed"
  | "attempt_budget_exhausted"
  | "timeout_exceeded"
  | "settlement_indeterminate"
  | "result_schema_invalid"
  | "cancelled"
  | "cancelled_by_parent"
  | "context_overflow";

/** Tokens a submission consumed, summed over its turns in every attempt and its compactions. */
export interface SettledUsage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  totalTokens: number;
}

/** What those tokens cost in USD, from the model catalog's prices. */
export interface SettledCost {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  total: number;
}

export interface SettledPayload {
  status: SettledStatus;
  error?: string;
  errorCode?: SettledErrorCode;
  result?: unknown;
  /** Absent on settlements made without running the submission (a cancel while queued, say). */
  usage?: SettledUsage;
  /** Present when the model has prices. */
  cost?: SettledCost;
  /**
   * The submission's messages are left out of every later projection (its records stay in the
   * log): set on a `context_overflow` settlement, so an input that cannot fit the context window
   * does not make every later submission of the session overflow too.
   */
  excludedFromContext?: true;
}

export interface TaskSpawnedPayload {
  callId: string;
  agent: string;
  childInstance: string;
  childConversationId: string;
  childSubmissionId: string;
  prompt: string;
}

/**
 * A call of a tool that needs approval was made: instead of its `tool_outcome`, the run waits for
 * a person's decision (ADR 0025). Appending it registers the call's wait in the store.
 */
export interface ApprovalRequestedPayload {
  callId: string;
  toolName: string;
  /** The call's arguments, as the model gave them. */
  args?: unknown;
  /** `<submissionId>/<callId>`: unique in a deployment (audit logs, observers). */
  approvalId: string;
  /** RFC 3339 time after which an undecided call is denied ("approval expired"). */
  expiresAt: string;
}

/** A decision on an `approval_requested` call, delivered in the store's guarded write that requeues the run. */
export interface ApprovalDecidedPayload {
  callId: string;
  approved: boolean;
  reason?: string;
  /** Set when nobody decided in time: the expiry denied it. */
  expired?: true;
  /** Who decided: the authenticated caller's principal id (ADR 0043); absent without authentication. */
  decidedBy?: string;
}

/**
 * A deferred tool's call handed a callback out and waits for it (ADR 0025): written before the
 * tool's `start` runs, so a re-executed call never starts twice. Appending it registers the
 * call's wait; the callback id itself is never recorded, only its digest.
 */
export interface CallbackStartedPayload {
  callId: string;
  toolName: string;
  /** RFC 3339 time after which an unanswered callback answers the call "callback expired". */
  expiresAt: string;
  /** sha256 (hex) of the callback id. */
  callbackDigest: string;
}

/**
 * A tool call runs outside its model turn (an approved call, when its run resumes): a call with
 * this record and no `tool_outcome` was interrupted while it ran and is never run again.
 */
export interface ToolStartedPayload {
  callId: string;
  toolName: string;
}

/**
 * Why a run is not progressing, told before it waits for its next try (ADR 0053): the provider
 * could not be reached (DNS, connection refused), rate limited it (429), was overloaded (529) or
 * unavailable (503), or the attempt failed in a way worth another attempt (`transient`: a 5xx,
 * a dropped stream, a timed-out turn, a store error).
 */
export type RetryReason = "unreachable" | "rate_limited" | "overloaded" | "unavailable" | "transient";

/**
 * A run waits for its next try (ADR 0053): written by the attempt that failed, fenced like its
 * other records, before it hands the submission back. Not part of any model context.
 */
export interface SubmissionRetryingPayload {
  reason: RetryReason;
  /** The error as the provider (or the run) reported it. */
  error: string;
  /** The provider's HTTP status, when it answered. */
  status?: number;
  /** RFC 3339 time of the next try (no attempt starts before it). */
  nextAttemptAt: string;
  /** Attempts charged so far; a wait the provider asked for charges none. */
  attemptCount: number;
  /** The attempt budget (the agent's `maxAttempts`). */
  maxAttempts: number;
}

/** Payload type of each record kind. */
export interface RecordPayloads {
  conversation_created: ConversationCreatedPayload;
  user_message: UserMessagePayload;
  signal: SignalPayload;
  assistant_message_started: AssistantMessageStartedPayload;
  assistant_text_delta: TextDeltaPayload;
  assistant_thinking_delta: TextDeltaPayload;
  assistant_tool_call: AssistantToolCallPayload;
  tool_outcome: ToolOutcomePayload;
  assistant_message_completed: AssistantMessageCompletedPayload;
  compaction: CompactionPayload;
  submission_settled: SettledPayload;
  task_spawned: TaskSpawnedPayload;
  approval_requested: ApprovalRequestedPayload;
  approval_decided: ApprovalDecidedPayload;
  callback_started: CallbackStartedPayload;
  tool_started: ToolStartedPayload;
  submission_retrying: SubmissionRetryingPayload;
}

export type RecordKind = keyof RecordPayloads;

export const RECORD_KINDS: readonly RecordKind[] = [
  "conversation_created",
  "user_message",
  "signal",
  "assistant_message_started",
  "assistant_text_delta",
  "assistant_thinking_delta",
  "assistant_tool_call",
  "tool_outcome",
  "assistant_message_completed",
  "compaction",
  "submission_settled",
  "task_spawned",
  "approval_requested",
  "approval_decided",
  "callback_started",
  "tool_started",
  "submission_retrying",
];

/**
 * Whether a record kind is a streaming delta's (text or thinking): the finished message record
 * holds what such deltas streamed, so folding, checkpoints and the SSE poll treat them apart.
 */
export function isStreamingDeltaKind(kind: unknown): boolean {
  return kind === "assistant_text_delta" || kind === "assistant_thinking_delta";
}

/** Everything a record says except its id, which the store assigns at append. */
export interface RecordDraftOf<K extends RecordKind> {
  kind: K;
  conversationId: string;
  session: string;
  submissionId?: string;
  turnId?: string;
  /** Which attempt authored the record. */
  attemptId?: string;
  /** RFC 3339 time the record was authored. */
  time: string;
  payload: RecordPayloads[K];
}

export type RecordDraft = { [K in RecordKind]: RecordDraftOf<K> }[RecordKind];

/** What a record says before its writer adds the envelope: its kind and payload. */
export type RecordBody = { [K in RecordKind]: { kind: K; payload: RecordPayloads[K] } }[RecordKind];

/** A stored record: a draft plus its id (a ULID; the SSE event id and stream offset). */
export type ConversationRecordOf<K extends RecordKind> = RecordDraftOf<K> & { id: string };

export type ConversationRecord = { [K in RecordKind]: ConversationRecordOf<K> }[RecordKind];

/** Narrows a record to one kind. */
export function isKind<K extends RecordKind>(
  rec: ConversationRecord,
  kind: K,
): rec is Extract<ConversationRecord, { kind: K }> {
  return rec.kind === kind;
}
