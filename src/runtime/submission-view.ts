/**
 * The operator's view of submissions: what `GET /agents/:agent/:instance/submissions[/:submissionId]`
 * answers and `Runtime.listSubmissions` / `Runtime.submission` return. A view is built from the
 * stored row (and its attempt markers): it never reads the conversation log.
 */
import type { SettledPayload } from "../protocol/records.ts";
import { InvalidRequest, isHarnessError, SubmissionNotFound } from "../errors.ts";
import type { ReadStore } from "../store/store.ts";
import type { AttemptView, SubmissionDetail, SubmissionPage, SubmissionSummary } from "../protocol/submission-view.ts";
import { type Attempt, pendingEntries, type Submission } from "../store/submission.ts";
import type { CheckedSubmissionList, SubmissionAddress } from "./requests.ts";

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
  // Queued after a failed try: why, and when it tries again (ADR 0053).
  if (sub.status === "queued" && sub.retry !== undefined && !sub.cancelRequested) {
    view.retry = { reason: sub.retry.reason, error: sub.lastError ?? "" };
    if (sub.retry.status !== undefined) view.retry.status = sub.retry.status;
    if (sub.notBefore !== undefined) view.retry.nextAttemptAt = sub.notBefore;
  }
  const outcome = outcomeOf(sub);
  if (outcome) {
    const { result: _result, ...rest } = outcome;
    view.outcome = rest;
  }
  if (sub.parentSubmissionId !== undefined) view.parentSubmissionId = sub.parentSubmissionId;
  if (sub.input.principalId !== undefined) view.principalId = sub.input.principalId;
  const waiting = pendingEntries(sub);
  if (waiting.length > 0) view.waitingFor = waiting;
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
