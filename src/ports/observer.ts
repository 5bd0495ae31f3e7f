import type { RecordKind, SettledPayload, SettledUsage } from "../protocol/records.ts";
import type { DispatchMessage, SessionKey, Submission, WaitEntry } from "../store/submission.ts";

/** The ids that tie an event to the records it concerns (same ids as record envelopes). */
export interface Correlation {
  sessionKey: SessionKey;
  conversationId: string;
  submissionId?: string;
  attemptId?: string;
  turnId?: string;
}

/**
 * The correlation of a submission's events: its session, conversation and id, the attempt once
 * claimed, the turn inside a model turn.
 */
export function correlationOf(
  sub: Pick<Submission, "id" | "sessionKey" | "conversationId">,
  attemptId?: string,
  turnId?: string,
): Correlation & { submissionId: string } {
  const c: Correlation & { submissionId: string } = {
    sessionKey: sub.sessionKey,
    conversationId: sub.conversationId,
    submissionId: sub.id,
  };
  if (attemptId !== undefined) c.attemptId = attemptId;
  if (turnId !== undefined) c.turnId = turnId;
  return c;
}

export type Operation = "prompt" | "compact" | "resume";

export type RecoveryDecision =
  | "overflow_compact_retry"
  | "transient_backoff"
  | "provider_backpressure"
  | "dangling_tool_call_reconciled"
  | "continuation"
  | "lease_reclaimed"
  /** A parent's missing `task_spawned` record was written from its child's row. */
  | "spawn_record_reconciled"
  /** The provider repeated a call id the conversation had used: the call got a fresh one. */
  | "call_id_renamed";

/** Every event the harness reports to observers. */
export type HarnessEvent =
  | { type: "submission_admitted"; correlation: Correlation; input: DispatchMessage; replayed: boolean }
  | { type: "submission_claimed"; correlation: Correlation; ownerId: string; attemptCount: number }
  | { type: "attempt_started"; correlation: Correlation }
  | { type: "submission_settled"; correlation: Correlation; payload: SettledPayload }
  | {
      type: "submission_spawned";
      /** The parent's (with the attempt and turn of the `task` call). */
      correlation: Correlation;
      childSubmissionId: string;
      childConversationId: string;
      agent: string;
      callId: string;
    }
  /** Parked on its wait entries (no lease, no invocation, no queue message): children, approvals, callbacks. */
  | { type: "submission_waiting"; correlation: Correlation; pendingCalls: string[]; waitingFor?: WaitEntry[] }
  /** A call of a tool that needs approval waits for a decision (its `approval_requested` record is durable). Times are epoch ms. */
  | { type: "approval_requested"; correlation: Correlation; callId: string; toolName: string; approvalId: string; expiresAt: number }
  /** A person decided (the decision's guarded write landed). */
  | { type: "approval_decided"; correlation: Correlation; callId: string; toolName: string; approved: boolean; reason?: string }
  /** Nobody decided in time: the expiry denied the call. */
  | { type: "approval_expired"; correlation: Correlation; callId: string; toolName: string }
  /** A deferred tool's call handed its callback out (its `callback_started` record is durable). */
  | { type: "callback_started"; correlation: Correlation; callId: string; toolName: string; expiresAt: number }
  /** The callback answered (the answer's guarded write landed); `isError` for an `error` answer. */
  | { type: "callback_answered"; correlation: Correlation; callId: string; toolName: string; isError: boolean }
  /** Nobody answered in time: the call's outcome is "callback expired". */
  | { type: "callback_expired"; correlation: Correlation; callId: string; toolName: string }
  | { type: "submission_resumed"; correlation: Correlation }
  | { type: "operation_started"; correlation: Correlation; operation: Operation }
  | { type: "operation_ended"; correlation: Correlation; operation: Operation; error: string }
  | { type: "turn_started"; correlation: Correlation; turn: number }
  | { type: "turn_ended"; correlation: Correlation; turn: number }
  /**
   * One model response ended (a turn's model call, answered or failed): who answered, how it
   * stopped and the tokens it used. Reported before its `assistant_message_completed` record is
   * written.
   */
  | {
      type: "model_response";
      correlation: Correlation;
      /** pi-ai's provider id (`anthropic`, `openai`, `amazon-bedrock`, …). */
      provider: string;
      /** The model asked for. */
      model: string;
      /** The model that answered, when the provider names one. */
      responseModel?: string;
      responseId?: string;
      /** pi-ai's stop reason: `stop`, `length`, `toolUse`, `error` or `aborted`. */
      stopReason: string;
      /** The provider's error, when it stopped on one. */
      error?: string;
      /** Tokens it used, as the provider reported them; `reasoning` (part of `output`) when reported. */
      usage: SettledUsage & { reasoning?: number };
      /** Epoch ms the request was sent. */
      startedAt: number;
      /** How long the response took, when measured. */
      durationMs?: number;
    }
  | { type: "delta"; correlation: Correlation; kind: Extract<RecordKind, "assistant_text_delta" | "assistant_thinking_delta">; text: string }
  | { type: "tool_call_started"; correlation: Correlation; callId: string; toolName: string }
  | { type: "tool_call_updated"; correlation: Correlation; callId: string; toolName: string; result: unknown }
  | { type: "tool_call_ended"; correlation: Correlation; callId: string; toolName: string; isError: boolean }
  | {
      type: "compaction";
      correlation: Correlation;
      reason: "threshold" | "overflow" | "manual";
      /** The first record kept verbatim. */
      firstKeptEntryId: string;
      /** Estimated tokens of the history the summary replaced, and of the history kept. */
      summarizedTokens: number;
      keptTokens: number;
    }
  | { type: "recovery"; correlation: Correlation; decision: RecoveryDecision; detail: string };

/** Synchronous, read-only, cheap. A throwing observer is logged and never affects a run. */
export type Observer = (event: HarnessEvent) => void;

export type OpKind = "attempt" | "operation" | "turn" | "tool";

export interface OpInfo {
  kind: OpKind;
  correlation: Correlation;
  /** For `operation`. */
  operation?: Operation;
  /** For `tool`. */
  toolName?: string;
  callId?: string;
  /** For `attempt`: the attempts charged so far, this one included (a resume or continuation claim charges none). */
  attemptCount?: number;
  /** For `attempt` of a child submission: its parent's submission and `task` call. */
  parent?: { submissionId: string; callId: string };
  /** For `turn`: the model asked for. */
  model?: { provider: string; id: string };
}

/**
 * Onion middleware around an attempt, operation, turn or tool call. The first registered is
 * outermost. Returning without calling `next` aborts the operation; a thrown error is accounted
 * like any attempt failure.
 */
export type Interceptor = (info: OpInfo, next: () => Promise<void>) => Promise<void>;
