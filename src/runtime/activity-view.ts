/**
 * The console's listing across agents and instances (ADR 0054): the request checked, the store's
 * page (`listActivity`) and each row as the wire's {@link ActivitySummary}.
 */
import { InvalidRequest } from "../errors.ts";
import type { ActivityListPage, ActivityRequest, ActivitySummary } from "../protocol/submission-view.ts";
import { ACTIVITY_PAGE_MAX, ACTIVITY_STATES, type ActivityQuery, activityStateOf, type ActivityState } from "../store/activity.ts";
import type { ConsoleStore, SubmissionStore } from "../store/store.ts";
import type { DispatchRequest } from "./requests.ts";
import type { Submission } from "../store/submission.ts";
import { summarize } from "./submission-view.ts";

/** The listing's page size when the request names none. */
export const ACTIVITY_PAGE_DEFAULT = 50;
/** The longest preview of a dispatched message's body. */
const PREVIEW_CHARS = 200;

/** The store's query for `request`, or `InvalidRequest` naming the field. */
export function checkActivityRequest(request: ActivityRequest): ActivityQuery {
  const limit = request.limit ?? ACTIVITY_PAGE_DEFAULT;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > ACTIVITY_PAGE_MAX) {
    throw new InvalidRequest(`limit must be an integer from 1 to ${ACTIVITY_PAGE_MAX}, got ${String(request.limit)}`);
  }
  const query: ActivityQuery = { limit };
  if (request.before !== undefined) {
    if (typeof request.before !== "string" || request.before.length > 300) throw new InvalidRequest("before must be a cursor from an earlier page's next");
    query.before = request.before;
  }
  if (request.agent !== undefined) {
    if (typeof request.agent !== "string" || request.agent === "" || request.agent.length > 200) throw new InvalidRequest("agent must be an agent name");
    query.agent = request.agent;
  }
  if (request.states !== undefined && request.states.length > 0) {
    for (const state of request.states) {
      if (!ACTIVITY_STATES.includes(state as ActivityState)) {
        throw new InvalidRequest(`state must be one of ${ACTIVITY_STATES.join(", ")}, got ${JSON.stringify(state)}`);
      }
    }
    query.states = [...request.states];
  }
  for (const name of ["since", "until"] as const) {
    const value = request[name];
    if (value === undefined) continue;
    if (!Number.isSafeInteger(value) || value < 0) throw new InvalidRequest(`${name} must be epoch milliseconds, got ${String(value)}`);
    query[name] = value;
  }
  return query;
}

/** The wire's view of a listed row. */
export function activitySummary(sub: Submission): ActivitySummary {
  const view: ActivitySummary = {
    ...summarize(sub),
    agent: sub.sessionKey.agent,
    instance: sub.sessionKey.instance,
    state: activityStateOf(sub),
  };
  const body = sub.input.body;
  if (typeof body === "string" && body !== "") view.preview = body.length > PREVIEW_CHARS ? `${body.slice(0, PREVIEW_CHARS)}…` : body;
  return view;
}

/** One page of the listing. */
export async function activityPage(store: ConsoleStore, request: ActivityRequest): Promise<ActivityListPage> {
  const page = await store.listActivity(checkActivityRequest(request));
  return { submissions: page.submissions.map(activitySummary), ...(page.next === undefined ? {} : { next: page.next }) };
}

/** What `Runtime.retry` answers: the new submission, and the one it retries. */
export interface RetryResult {
  submissionId: string;
  conversationId: string;
  /** The failed submission this one retries. */
  retryOf: string;
  /** True when this submission was retried before: the same retry is answered again. */
  replayed: boolean;
}

/** The dispatch id of a retry of `submissionId`: the link from the new submission to the old. */
export function retryDispatchId(submissionId: string): string {
  return `${submissionId}~retry`;
}

/**
 * Retries a failed (or cancelled) root submission (ADR 0054): a new dispatch of the same input to
 * the same session, with dispatch id `<old id>~retry` (so the new one names the old, and a second
 * retry of the same submission answers the first). `InvalidRequest` for a submission that did not
 * fail, a subagent's (its parent retries it) or a compaction; `SubmissionNotFound` for none.
 */
export async function retrySubmission(
  store: Pick<SubmissionStore, "getSubmission">,
  dispatch: (request: DispatchRequest) => Promise<{ submissionId: string; conversationId: string; replayed: boolean }>,
  submissionId: string,
): Promise<RetryResult> {
  if (typeof submissionId !== "string" || submissionId === "") throw new InvalidRequest("a submission id is required");
  const old = await store.getSubmission(submissionId);
  const state = activityStateOf(old);
  if (state !== "failed" && state !== "cancelled") throw new InvalidRequest(`submission ${submissionId} is ${state}: only a failed or cancelled submission is retried`);
  if (old.parentSubmissionId !== undefined) throw new InvalidRequest(`submission ${submissionId} is a subagent's: its parent's run retries it`);
  if (old.input.kind === "compact") throw new InvalidRequest(`submission ${submissionId} is a compaction: compact the session again instead`);
  const dispatchId = retryDispatchId(old.id);
  if (dispatchId.length > 256) throw new InvalidRequest(`submission ${submissionId}: its id is too long to name a retry`);
  // The same message, now: a delayed message's time has passed, and the sender is the retrier.
  const { notBefore: _notBefore, principalId: _principalId, ...message } = old.input;
  const { agent, instance, session } = old.sessionKey;
  const admitted = await dispatch({ agent, instance, session, dispatchId, message });
  return { submissionId: admitted.submissionId, conversationId: admitted.conversationId, retryOf: old.id, replayed: admitted.replayed };
}
