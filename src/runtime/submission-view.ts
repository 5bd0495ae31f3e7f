/**
 * The operator's view of submissions: what `GET /agents/:name/:id/submissions[/:submissionId]`
 * answers and `Runtime.listSubmissions` / `Runtime.submission` return. A view is built from the
 * stored row (and its attempt markers): it never reads the conversation log.
 */
import type { SettledPayload } from "../protocol/records.ts";
import { InvalidRequest, isHarnessError, SubmissionNotFound } from "../errors.ts";
import type { ReadStore } from "../store/store.ts";
import type { Attempt, DispatchMessage, InboundKind, Submission, SubmissionStatus } from "../store/submission.ts";
import type { CheckedSubmissionList, SubmissionAddress } from "./requests.ts";

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
   * The settlement's outcome once settled: status, error and code, usage and cost (the
   * structured result only in {@link SubmissionDetail}).
   */
  outcome?: Omit<SettledPayload, "result">;
  /** Set on a subagent's submission. */
  parentSubmissionId?: string;
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

/** The summary of a stored row. */
export function summarize(sub: Submission): SubmissionSummary {
  const view: SubmissionSummary = {
    id: sub.id,
    conversationId: sub.conversationId,
    session: sub.sessionKey.session,
    status: sub.status,
    kind: sub.input.kind,
    attemptCount: sub.attemptCount,
    createdAt: sub.createdAt,
    updatedAt: sub.updatedAt,
  };
  if (sub.status === "settled") view.settledAt = sub.updatedAt;
  if (sub.cancelRequested) view.cancelRequested = true;
  if (sub.lastError) view.lastError = sub.lastError;
  const outcome = outcomeOf(sub);
  if (outcome) {
    const { result: _result, ...rest } = outcome;
    view.outcome = rest;
  }
  if (sub.parentSubmissionId !== undefined) view.parentSubmissionId = sub.parentSubmissionId;
  return view;
}

/** The detail of a stored row and its attempt markers. */
export function detail(sub: Submission, attempts: readonly Attempt[]): SubmissionDetail {
  const view: SubmissionDetail = {
    ...summarize(sub),
    input: sub.input,
    attempts: attempts.map((a) => ({ id: a.id, ownerId: a.ownerId, startedAt: a.startedAt })),
  };
  const outcome = outcomeOf(sub);
  if (outcome) view.outcome = outcome;
  if (sub.status === "running" && sub.leaseExpiresAt !== undefined) view.leaseExpiresAt = sub.leaseExpiresAt;
  if (sub.status === "waiting" && sub.waitUntil !== undefined) view.waitUntil = sub.waitUntil;
  return view;
}

/**
 * The row's settled outcome. A settlement that left none on its row (a cancel while queued)
 * failed with the reason kept as its last error, as `Runtime.wait` reports it.
 */
function outcomeOf(sub: Submission): SettledPayload | undefined {
  if (sub.outcome) return sub.outcome;
  if (sub.status === "settled" && sub.lastError) return { status: "failed", error: sub.lastError };
  return undefined;
}

/**
 * One page of a session's listing: asks the store for one row more than the page holds, so the
 * page knows whether an older one follows. An `after` that is not a submission of this session
 * is the caller's mistake (`InvalidRequest`), not a missing resource.
 */
export async function listSubmissionPage(store: ReadStore, query: CheckedSubmissionList): Promise<SubmissionPage> {
  let rows: Submission[];
  try {
    rows = await store.listSessionSubmissions(query.key, { limit: query.limit + 1, before: query.after, status: query.status });
  } catch (err) {
    if (isHarnessError(err, "submission_not_found")) {
      throw new InvalidRequest(`cursor (after) ${JSON.stringify(query.after)} is not a submission of this session`);
    }
    throw err;
  }
  const page: SubmissionPage = { submissions: rows.slice(0, query.limit).map(summarize) };
  if (rows.length > query.limit) page.next = rows[query.limit - 1]!.id;
  return page;
}

/** One submission of the addressed instance, with its attempts (`SubmissionNotFound` otherwise). */
export async function submissionDetail(store: ReadStore, address: SubmissionAddress): Promise<SubmissionDetail> {
  const sub = await store.getSubmission(address.submissionId);
  if (sub.sessionKey.agent !== address.agent || sub.sessionKey.instance !== address.instance) {
    throw new SubmissionNotFound(address.submissionId);
  }
  return detail(sub, await store.listAttempts(sub.id));
}
