import type { SQLInputValue, SQLOutputValue } from "node:sqlite";
import type { SettledPayload } from "../protocol/records.ts";
import type { Cancellation, DispatchMessage, SessionKey, Submission, SubmissionRetry, SubmissionStatus, WaitEntry } from "../store/submission.ts";

type Row = Record<string, SQLOutputValue>;

/** The indexed form of a session key: a JSON array, so no component can forge another key. */
export function sessionKeyColumn(key: SessionKey): string {
  return JSON.stringify([key.agent, key.instance, key.session]);
}

export function sessionKeyFromColumn(value: string): SessionKey {
  const [agent, instance, session] = JSON.parse(value) as [string, string, string];
  return { agent, instance, session };
}

/** The columns a transition writes, in `UPDATE_SUBMISSION`'s parameter order. */
export const SUBMISSION_SET_COLUMNS = [
  "status",
  "attempt_count",
  "attempt_id",
  "owner_id",
  "lease_expires_at",
  "last_error",
  "updated_at",
  "pending_resume",
  "wait_until",
  "cancel_requested",
  "outcome",
  "pending_calls",
  "not_before",
  "cancellation",
  "wait_check_at",
  "waiting_for",
  "delayed_until",
  "retry",
] as const;

/** Parameters for the `UPDATE ... SET <SUBMISSION_SET_COLUMNS> WHERE id = ?` statement. */
export function submissionUpdateParams(sub: Submission): SQLInputValue[] {
  return [
    sub.status,
    sub.attemptCount,
    sub.attemptId ?? null,
    sub.ownerId ?? null,
    sub.leaseExpiresAt ?? null,
    sub.lastError ?? null,
    sub.updatedAt,
    sub.pendingResume ? 1 : 0,
    sub.waitUntil ?? null,
    sub.cancelRequested ? 1 : 0,
    sub.outcome === undefined ? null : JSON.stringify(sub.outcome),
    sub.pendingCalls === undefined || sub.pendingCalls.length === 0 ? null : JSON.stringify(sub.pendingCalls),
    sub.notBefore ?? null,
    sub.cancellation === undefined ? null : JSON.stringify(sub.cancellation),
    // Only a waiting row has a wait check: leaving `waiting` takes it out of `sub_wait_check`.
    sub.status === "waiting" ? (sub.waitCheckAt ?? null) : null,
    sub.status === "waiting" && sub.waitingFor !== undefined && sub.waitingFor.length > 0 ? JSON.stringify(sub.waitingFor) : null,
    // Outside the order only while it waits for its time (a cancel settles it outright).
    sub.status === "waiting" ? (sub.delayedUntil ?? null) : null,
    sub.retry === undefined ? null : JSON.stringify(sub.retry),
    sub.id,
  ];
}

/** Parameters for the INSERT, in the column order of `INSERT_SUBMISSION`. */
export function submissionInsertParams(sub: Submission): SQLInputValue[] {
  return [
    sub.id,
    sub.conversationId,
    sessionKeyColumn(sub.sessionKey),
    JSON.stringify(sub.input),
    sub.createdAt,
    sub.parentSubmissionId ?? null,
    sub.parentCallId ?? null,
    sub.depth,
    ...submissionUpdateParams(sub).slice(0, -1),
  ];
}

/** A row back into the contract's shape; NULL columns become absent optional fields. */
export function submissionFromRow(row: Row): Submission {
  const sub: Submission = {
    id: row.id as string,
    conversationId: row.conversation_id as string,
    sessionKey: sessionKeyFromColumn(row.session_key as string),
    status: row.status as SubmissionStatus,
    input: JSON.parse(row.input as string) as DispatchMessage,
    attemptCount: row.attempt_count as number,
    createdAt: row.created_at as number,
    updatedAt: row.updated_at as number,
    depth: row.depth as number,
    pendingResume: row.pending_resume === 1,
    cancelRequested: row.cancel_requested === 1,
  };
  if (row.attempt_id !== null) sub.attemptId = row.attempt_id as string;
  if (row.owner_id !== null) sub.ownerId = row.owner_id as string;
  if (row.lease_expires_at !== null) sub.leaseExpiresAt = row.lease_expires_at as number;
  if (row.last_error !== null) sub.lastError = row.last_error as string;
  if (row.outcome !== null && row.outcome !== undefined) sub.outcome = JSON.parse(row.outcome as string) as SettledPayload;
  if (row.cancellation !== null && row.cancellation !== undefined) sub.cancellation = JSON.parse(row.cancellation as string) as Cancellation;
  if (row.parent_submission_id !== null) sub.parentSubmissionId = row.parent_submission_id as string;
  if (row.parent_call_id !== null) sub.parentCallId = row.parent_call_id as string;
  if (row.wait_until !== null) sub.waitUntil = row.wait_until as number;
  if (row.wait_check_at !== null && row.wait_check_at !== undefined) sub.waitCheckAt = row.wait_check_at as number;
  if (row.pending_calls !== null && row.pending_calls !== undefined) sub.pendingCalls = JSON.parse(row.pending_calls as string) as string[];
  if (row.not_before !== null && row.not_before !== undefined) sub.notBefore = row.not_before as number;
  if (row.waiting_for !== null && row.waiting_for !== undefined) sub.waitingFor = JSON.parse(row.waiting_for as string) as WaitEntry[];
  if (row.delayed_until !== null && row.delayed_until !== undefined) sub.delayedUntil = row.delayed_until as number;
  if (row.retry !== null && row.retry !== undefined) sub.retry = JSON.parse(row.retry as string) as SubmissionRetry;
  return sub;
}

/** JSON with object keys sorted, so idempotent admission does not depend on key order. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}
