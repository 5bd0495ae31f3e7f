import type { RetryReason, SettledErrorCode, SettledPayload } from "../protocol/records.ts";
import type { DispatchMessage, SessionKey } from "../protocol/dispatch.ts";
import type { SubmissionStatus, WaitEntry } from "../protocol/submission-view.ts";

// The wire types a submission row is made of, for adapters that import the SPI alone.
export type { DispatchMessage, InboundKind, SessionKey, SignalMeta } from "../protocol/dispatch.ts";
export type { RetryReason } from "../protocol/records.ts";
export { sessionKeyString } from "../protocol/dispatch.ts";
export type { SubmissionStatus, WaitEntry } from "../protocol/submission-view.ts";

/** One admitted unit of work for a session: the unit of leasing, attempts and settlement. */
export interface Submission {
  /** = the dispatch id (idempotency key) or a fresh ULID. */
  id: string;
  conversationId: string;
  sessionKey: SessionKey;
  status: SubmissionStatus;
  input: DispatchMessage;
  /** Attempts charged so far (a resume or continuation claim does not charge one). */
  attemptCount: number;
  attemptId?: string;
  ownerId?: string;
  /** Epoch ms. */
  leaseExpiresAt?: number;
  /** The last run error recorded on release; survives re-claims. */
  lastError?: string;
  /**
   * Why the last release handed it back for another try (ADR 0053), with `lastError`: set by a
   * release that gives one, cleared by a release that gives none; survives re-claims.
   */
  retry?: SubmissionRetry;
  /** Epoch ms of admission: the durability-timeout anchor. */
  createdAt: number;
  /** Epoch ms of the last state transition (the sweeper's staleness measure). */
  updatedAt: number;
  parentSubmissionId?: string;
  parentCallId?: string;
  /** 0 for roots; a child is its parent + 1. */
  depth: number;
  /** The next claim continues from the log without charging an attempt. */
  pendingResume: boolean;
  /** Epoch ms; unset = unbounded wait. */
  waitUntil?: number;
  /**
   * While waiting: when the sweep next checks the wait (epoch ms), the earlier of `waitUntil`
   * and the lost-wake backstop's next look (its wait check, ADR 0021). Waiting rows are indexed
   * by it, so a wait that is not due costs the sweep no read.
   */
  waitCheckAt?: number;
  /**
   * While waiting: the call ids whose answers have not been delivered yet (children, approvals,
   * callbacks: the count the last delivery takes to zero). Absent when not waiting on calls.
   */
  pendingCalls?: string[];
  /**
   * While waiting: what it was parked on (ADR 0025), as the park (or a delayed admission) wrote
   * it; the entries with a call are still pending while their call is in `pendingCalls`.
   */
  waitingFor?: WaitEntry[];
  /**
   * A delayed message waiting to join its session's order (ADR 0025): epoch ms of its
   * `notBefore`. Such a row is `waiting`, outside its session's order (never its head) until
   * `joinSessionOrder`, and its wait check is this time.
   */
  delayedUntil?: number;
  /** The owner should cancel at its next safe point (it learns it from its lease renewal). */
  cancelRequested: boolean;
  /** Set with `cancelRequested`: the settlement the cancel asked for (the first cancel's). */
  cancellation?: Cancellation;
  /**
   * Epoch ms before which no attempt may start: set by a release under provider backpressure
   * (a 429 with `Retry-After`, say); unset = at once.
   */
  notBefore?: number;
  /**
   * The payload of its `submission_settled` record, stored with the settlement's reservation (a
   * `terminalizing` row that has one is finished with it by a recoverer) and kept by the
   * finalize: a waiter reads the outcome from the row instead of looking for the record in the log.
   */
  outcome?: SettledPayload;
}


/**
 * The entries a waiting submission still waits for: those of `waitingFor` whose call is still
 * pending, and its time. Empty when it is not waiting.
 */
export function pendingEntries(sub: Pick<Submission, "status" | "waitingFor" | "pendingCalls">): WaitEntry[] {
  if (sub.status !== "waiting") return [];
  const pending = new Set(sub.pendingCalls ?? []);
  return (sub.waitingFor ?? []).filter((e) => e.kind === "time" || pending.has(e.callId));
}

/**
 * Epoch ms its durability budget counts from: its admission, or a delayed message's `notBefore`
 * (its budget starts when it joins its session's order, not while it waits for its time). It is
 * also where its own records start (less clock skew): nothing of it runs before it joins, so a
 * read of "its records" (its earlier attempts' usage, the orphan cascade's spawns, the folding
 * of its deltas) starts there and not at its admission, and skips what the session wrote while
 * a delayed message waited.
 */
export function budgetStart(sub: Pick<Submission, "createdAt" | "input">): number {
  return joinedOrderAt(sub.createdAt, sub.input.notBefore);
}

/** {@link budgetStart} from the stored columns: admission time and the input's `notBefore`. */
export function joinedOrderAt(createdAt: number, notBefore: string | undefined | null): number {
  const at = typeof notBefore === "string" ? Date.parse(notBefore) : Number.NaN;
  return Number.isFinite(at) ? Math.max(createdAt, at) : createdAt;
}

/** Why a release handed a submission back for another try (ADR 0053). */
export interface SubmissionRetry {
  reason: RetryReason;
  /** The provider's HTTP status, when it answered. */
  status?: number;
}

/** Why a submission is cancelled: the error code and message it settles `failed` with. */
export interface Cancellation {
  errorCode: Extract<SettledErrorCode, "cancelled" | "cancelled_by_parent">;
  /** E.g. `cancelled: cancelled by request`. */
  error: string;
}

/** The outcome a cancellation settles with. */
export function cancelledOutcome(cancellation: Cancellation): SettledPayload {
  return { status: "failed", error: cancellation.error, errorCode: cancellation.errorCode };
}

/** What a lease renewal learns from the row it updates (no extra read). */
export interface LeaseRenewed {
  cancelRequested: boolean;
  cancellation?: Cancellation;
}

/** What `SubmissionStore.listSessionSubmissions` lists: one page of a session's submissions. */
export interface SessionSubmissionQuery {
  /** At most this many (a positive integer). */
  limit: number;
  /** Only submissions admitted before this one (a submission id of the session): the next page. */
  before?: string;
  /** Only submissions in this status. */
  status?: SubmissionStatus;
}

/**
 * A run is in flight from its claim to its settlement: running, waiting, or queued again after
 * a claim (a retry or continuation), terminalizing excluded. Only then does `enqueueInbox`
 * accept a steer or follow-up for it.
 */
export function isRunInFlight(sub: Submission): boolean {
  switch (sub.status) {
    case "running":
    case "waiting":
      return true;
    case "queued":
      return sub.attemptCount > 0 || sub.pendingResume;
    default:
      return false;
  }
}

/** What admission hands the store; the store fills the lifecycle fields. */
export interface NewSubmission {
  id: string;
  /**
   * The id was minted by this admission (the dispatch carried no id): no earlier admission can
   * hold it, so a store need not look for one before writing. A hint only: a store still refuses
   * a second submission with the same id (and answers a replay with the stored row).
   */
  freshId?: boolean;
  conversationId: string;
  sessionKey: SessionKey;
  input: DispatchMessage;
  createdAt: number;
  parentSubmissionId?: string;
  parentCallId?: string;
  depth?: number;
  /**
   * A delayed message's time (epoch ms, in the future): admitted `waiting` outside its session's
   * order until `joinSessionOrder` (see `Submission.delayedUntil`).
   */
  delayedUntil?: number;
}

/** What `admitSubmission` answers: the stored row, and whether an earlier admission wrote it. */
export interface AdmittedSubmission {
  submission: Submission;
  /**
   * The row was there before this admission (the same dispatch id admitted earlier): told by the
   * store's own write, not by comparing times, so a retry within the same millisecond is still
   * a replay.
   */
  replayed: boolean;
}

export interface SubmissionClaim {
  submissionId: string;
  attemptId: string;
  ownerId: string;
  leaseExpiresAt: number;
  /**
   * The submission's input as the caller read it: an input never changes after admission, so a
   * store may return this instead of reading it again (one read fewer per claim on DynamoDB).
   */
  input?: DispatchMessage;
}

export interface Attempt {
  id: string;
  submissionId: string;
  ownerId: string;
  startedAt: number;
}

export interface LeaseRenewal {
  submissionId: string;
  attemptId: string;
  leaseExpiresAt: number;
}

export interface SubmissionRelease {
  submissionId: string;
  attemptId: string;
  /** Non-empty overwrites the stored lastError; empty keeps it. */
  lastError?: string;
  /**
   * A planned hand-off (e.g. before the Lambda time limit), not a failure: the next claim does
   * not charge an attempt.
   */
  continuation?: boolean;
  /** Stored as the submission's `notBefore` (absent clears it). */
  notBefore?: number;
  /** Stored as the submission's `retry` (absent clears it). */
  retry?: SubmissionRetry;
}

export interface SubmissionWait {
  submissionId: string;
  attemptId: string;
  /** Epoch ms; unset = unbounded. */
  waitUntil?: number;
  /**
   * Epoch ms of the wait's first check (the backstop's first look for a lost wake); the store
   * keeps the earlier of it and `waitUntil`. Unset: the park's own time (checked at the next sweep).
   */
  waitCheckAt?: number;
  /**
   * The call ids the submission waits for (`deliverChildOutcome` and `answerCall` answer them one
   * by one; the last requeues it). Empty or absent: nothing but `resumeSubmission` or a cancel
   * ends the wait.
   */
  pendingCalls?: string[];
  /** What it waits for, stored as given (`Submission.waitingFor`). */
  waitingFor?: WaitEntry[];
}

/**
 * The `waitCheckAt` a store keeps for `wait` parked at `now`: its first check, never after its
 * deadline; unset, `now` (the next sweep checks it).
 */
export function firstWaitCheck(wait: SubmissionWait, now: number): number {
  return Math.min(wait.waitCheckAt ?? now, wait.waitUntil ?? Number.POSITIVE_INFINITY);
}

/** A wait check that found nothing to do, pushing the next one later (`postponeWaitCheck`). */
export interface WaitCheckPostponement {
  submissionId: string;
  /** The `waitCheckAt` the caller found due: the postponement applies only while it is unchanged. */
  waitCheckAt: number;
  /** Epoch ms of the next check (the store clamps it to the wait's `waitUntil`). */
  nextCheckAt: number;
}

/** A conversation: one per session key. */
export interface Conversation {
  id: string;
  key: SessionKey;
  createdAt: number;
}

export type InboxKind = "steer" | "followUp";

/** A steer or follow-up accepted for a session's in-flight run. */
export interface InboxMessage {
  kind: InboxKind;
  body: string;
  /** Who sent it (ADR 0043): goes on the `user_message` record the drain appends. Absent without authentication. */
  principalId?: string;
}
