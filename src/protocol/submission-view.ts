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

/**
 * What a submission is doing, as the console lists and filters it (ADR 0054): the store's status,
 * a waiting one by what it waits for (a person's approval, a callback, a child, a time), a
 * settled one by its outcome (a cancel settles `failed` with a `cancelled` code: here
 * `cancelled`). A settling (`terminalizing`) one reads as `running`.
 */
export type ActivityState =
  | "queued"
  | "running"
  | "waiting_person"
  | "waiting_callback"
  | "waiting_child"
  | "waiting_time"
  | "succeeded"
  | "failed"
  | "cancelled";

/** One submission in the console's listing across agents and instances (ADR 0054). */
export interface ActivitySummary extends SubmissionSummary {
  agent: string;
  instance: string;
  /** What it is doing. */
  state: ActivityState;
  /** The dispatched message's body, cut to 200 characters. */
  preview?: string;
}

/** What the console's listing asks (`GET /console/api/activity`). Times are epoch ms. */
export interface ActivityRequest {
  /** At most this many (1–100). Default 50. */
  limit?: number;
  /** The previous page's `next`. */
  before?: string;
  /** Only this agent's. */
  agent?: string;
  /** Only these states (absent or empty: any). */
  states?: readonly ActivityState[];
  /** Only those whose latest activity is at or after this. */
  since?: number;
  /** Only those whose latest activity is before this. */
  until?: number;
}

/** One page of the console's listing, newest activity first. */
export interface ActivityListPage {
  submissions: ActivitySummary[];
  /** Pass as `before` for the next (older) page; absent when nothing older matches. */
  next?: string;
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
