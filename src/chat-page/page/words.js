// What the page says about statuses and errors, in plain words. The wire's codes stay in the
// `data-*` attributes (and the submission's tooltip) for tools and tests; people read these.

/**
 * A submission's status in the listing. `retry`: why it waits for its next try (its
 * `submission_retrying` record as the message view keeps it, else the listing's `retry`).
 */
export function statusWords(submission, retry = submission.retry) {
  if (submission.status === "settled") return submission.outcome ? outcomeWords(submission.outcome) : "finished";
  if (submission.cancelRequested) return "stopping";
  if (retry) return retryWords(retry);
  switch (submission.status) {
    case "queued":
      return "waiting its turn";
    case "running":
      return "running";
    case "waiting":
      return waitingWords(submission.waitingFor);
    case "terminalizing":
      return "finishing";
    default:
      return submission.status;
  }
}

/** Why a run is not progressing, in plain words (ADR 0053). */
const RETRY_REASONS = {
  unreachable: "the model provider cannot be reached",
  rate_limited: "the model provider is rate limiting",
  overloaded: "the model provider is overloaded",
  unavailable: "the model provider is unavailable",
  transient: "the last try failed",
};

/** "retrying: the model provider is rate limiting (HTTP 429) · next try 12:00:30 · attempt 1 of 10". */
export function retryWords(retry) {
  const why = `${RETRY_REASONS[retry.reason] ?? "the last try failed"}${retry.status ? ` (HTTP ${retry.status})` : ""}`;
  const at = retry.nextAttemptAt === undefined ? undefined : new Date(retry.nextAttemptAt);
  const next = at && Number.isFinite(at.getTime()) ? ` · next try ${at.toLocaleTimeString()}` : "";
  const attempts = retry.attemptCount > 0 && retry.maxAttempts ? ` · attempt ${retry.attemptCount} of ${retry.maxAttempts}` : "";
  return `retrying: ${why}${next}${attempts}`;
}

/** What a waiting submission waits for (its listing's `waitingFor`), the first reason first. */
function waitingWords(waits) {
  const kinds = new Set((waits ?? []).map((w) => w.kind));
  if (kinds.has("approval")) return "waiting for approval";
  if (kinds.has("callback")) return "waiting for an outside answer";
  if (kinds.has("child")) return "waiting for a subagent";
  if (kinds.has("time")) return "scheduled";
  return "waiting";
}

/** The status line of a call that needs approval. */
export function approvalWords(item) {
  const { approval } = item;
  const reason = approval.reason ? `: ${approval.reason}` : "";
  switch (approval.state) {
    case "pending":
      return `waits for your approval (until ${new Date(approval.expiresAt).toLocaleString()})`;
    case "approved":
      return `approved${reason} · ${item.outcome === undefined ? "running…" : item.isError ? "failed" : "done"}`;
    case "expired":
      return "denied: nobody decided in time";
    default:
      return `denied${reason}`;
  }
}

/** A settled outcome in a few words: "done", "cancelled", "failed: timed out". */
export function outcomeWords(outcome) {
  if (outcome.status === "succeeded") return "done";
  if (outcome.errorCode === "cancelled") return "cancelled";
  if (outcome.errorCode === "cancelled_by_parent") return "cancelled with its parent";
  return `failed: ${FAILURES[outcome.errorCode] ?? "error"}`;
}

/** Why a submission failed, by its error code. */
const FAILURES = {
  run_failed: "the run stopped with an error",
  attempt_budget_exhausted: "it kept failing and ran out of retries",
  timeout_exceeded: "it took too long",
  settlement_indeterminate: "its outcome could not be recorded",
  result_schema_invalid: "the reply did not match the requested format",
  context_overflow: "the conversation is too long for the model",
};

/** The settlement line under a reply. */
export function settlementWords(item) {
  const tokens = item.usage?.totalTokens ? ` · ${item.usage.totalTokens.toLocaleString("en")} tokens` : "";
  if (item.status === "succeeded") return `Done${tokens}`;
  if (item.errorCode === "cancelled" || item.errorCode === "cancelled_by_parent") {
    const reason = item.error?.replace(/^cancelled(?: by parent)?:\s*/, "");
    return `Cancelled${reason && reason !== item.error ? ` (${reason})` : ""}${tokens}`;
  }
  const why = FAILURES[item.errorCode] ?? "the run stopped with an error";
  return `Failed: ${why}${item.error ? ` (${item.error})` : ""}${tokens}`;
}

/** What a refused request means for the person who clicked. */
const REFUSALS = {
  no_run_in_flight: "Nothing is running in this session right now, so there is nothing to steer.",
  conversation_not_found: "This session has no conversation yet: send a message first.",
  already_settled: "That reply had already finished, so there was nothing to cancel.",
  submission_not_found: "That submission is not in this session any more.",
  unknown_agent: "The server has no agent by this name.",
  payload_too_large: "That message is too long to send.",
  runtime_closed: "The server is shutting down. Try again once it is back.",
  unauthorized: "The server asks for a sign-in that this page does not have.",
  origin_not_allowed: "The server refuses requests from this page's address.",
  host_not_allowed: "The server refuses requests from this page's address.",
  internal: "Something went wrong on the server. Its log says what.",
};

/** What a refused Approve/Deny means (the decision that stands shows on the card once its record arrives). */
const DECISION_REFUSALS = {
  already_decided: "Someone already decided this call the other way; the card shows their decision.",
  already_settled: "That reply had already finished, so the decision came too late.",
  approval_not_requested: "This call does not wait for an approval.",
  call_not_found: "That call is not part of this reply.",
  submission_not_found: "That reply is not in this session any more.",
  payload_too_large: "That reason is too long: keep it under 4 KB.",
};

/** The sentence shown for a refused decision. */
export function decisionRefusalWords(code, message) {
  return DECISION_REFUSALS[code] ?? refusalWords(code, message);
}

/** The sentence shown for a refused request: its code in plain words, else the server's message. */
export function refusalWords(code, message) {
  const known = REFUSALS[code];
  if (known) return known;
  if (message) return `The server refused that: ${message.charAt(0).toLowerCase()}${message.slice(1)}`;
  return "The server refused that request.";
}
