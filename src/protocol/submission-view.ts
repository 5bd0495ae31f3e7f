/**
 * The operator's view of submissions on the wire: what `GET /agents/{agent}/{instance}/submissions`
 * and `…/submissions/{submissionId}` answer, the client returns and `harness ls` prints. Times are
 * epoch ms.
 */
import type { DispatchMessage, InboundKind } from "./dispatch.ts";
import type { RetryReason, SettledPayload } from "./records.ts";

/** Where a submission is in its life: admitted, claimed, parked, settling, done. */
export type SubmissionStatus = "queued" | "running" | "waiting" | "terminalizing" | "settled";

/**
 * One pending entry of a waiting submission (ADR 0025): a child (`task` call), a person's
 * approval, a callback, or a time (a delayed message). Times are epoch ms.
 */
export type WaitEntry =
  | { kind: "child"; callId: string }
  | { kind: "approval"; callId: string; toolName: string; expiresAt: number }
  | { kind: "callback"; callId: string; toolName: string; expiresAt: number }
  | { kind: "time"; until: number };

/** One submission in a session's listing. Times are epoch ms. */
export interface SubmissionSummary {
  id: string;
  conversationId: string;
  session: string;
  status: SubmissionStatus;
  /** The dispatched message's kind. */
  kind: InboundKind;
  /** Attempts charged so far. */
  attemptCount: number;
  createdAt: number;
  /** The last state transition. */
  updatedAt: number;
  /** When it settled (its last transition), once settled. */
  settledAt?: number;
  /** Set while a cancel waits for the running attempt's next turn boundary. */
  cancelRequested?: boolean;
  /** The last run error recorded on a release (a retried attempt's failure). */
  lastError?: string;
  /**
   * While `queued` after a failed try (ADR 0053): why it is not progressing and when it tries
   * again. Absent while it waits for nothing but its turn.
   */
  retry?: SubmissionRetryView;
  /**
   * The settlement's outcome once settled: status, error and code, usage and cost (the
   * structured result only in {@link SubmissionDetail}).
   */
  outcome?: Omit<SettledPayload, "result">;
  /** Set on a subagent's submission. */
  parentSubmissionId?: string;
  /** Who dispatched it (ADR 0043; a subagent's is its parent's); absent without authentication. */
  principalId?: string;
  /**
   * While `waiting`: what it still waits for (ADR 0025): its children, approvals and callbacks
   * not answered yet, and a delayed message's time. Times are epoch ms.
   */
  waitingFor?: WaitEntry[];
}

/** Why a queued submission waits for its next try (ADR 0053). Times are epoch ms. */
export interface SubmissionRetryView {
  reason: RetryReason;
  /** The error as the provider (or the run) reported it (= `lastError`). */
  error: string;
  /** The provider's HTTP status, when it answered. */
  status?: number;
  /** No attempt starts before this; absent: at once. */
  nextAttemptAt?: number;
}

/** One submission in full: its summary, the dispatched message, the result and every attempt. */
export interface SubmissionDetail extends SubmissionSummary {
  input: DispatchMessage;
  /** With the structured result of a succeeded submission that asked for one. */
  outcome?: SettledPayload;
  /** Epoch ms; set while running. */
  leaseExpiresAt?: number;
  /** Epoch ms; set while waiting with a deadline. */
  waitUntil?: number;
  /** The attempt markers, in start order. */
  attempts: AttemptView[];
}

/** One attempt: who ran it and when it started. */
export interface AttemptView {
  id: string;
  ownerId: string;
  startedAt: number;
}

/** One page of a session's submissions, newest first. */
export interface SubmissionPage {
  submissions: SubmissionSummary[];
  /** Pass as `after` for the next (older) page; absent on the last page. */
  next?: string;
}
