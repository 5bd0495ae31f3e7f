/**
 * Typed errors shared by every layer. Each carries a stable `code` (snake_case) that the HTTP
 * transport maps to a status and that callers branch on instead of matching messages.
 */
import type { HarnessErrorCode } from "./protocol/error-body.ts";

export type { HarnessErrorCode };

/** Base class: an error with a machine-readable `code`. */
export class HarnessError extends Error {
  readonly code: HarnessErrorCode;
  constructor(code: HarnessErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/** Same dispatch id admitted again with a different payload. */
export class DispatchConflict extends HarnessError {
  constructor(message = "dispatch id reused with a different payload") {
    super("dispatch_conflict", message);
  }
}

export class SubmissionNotFound extends HarnessError {
  constructor(id: string) {
    super("submission_not_found", `submission not found: ${id}`);
  }
}

export class ConversationNotFound extends HarnessError {
  constructor(what: string) {
    super("conversation_not_found", `conversation not found: ${what}`);
  }
}

/**
 * A compare-and-set lost: the row is not in the expected state, another attempt holds it, the
 * submission is not its session's head, or an append's expected head / fence did not match.
 */
export class ClaimLost extends HarnessError {
  constructor(message = "claim lost") {
    super("claim_lost", message);
  }
}

export class AttachmentNotFound extends HarnessError {
  constructor(digest: string) {
    super("attachment_not_found", `attachment not found: ${digest}`);
  }
}

/**
 * An upload the attachment policy refuses: an unsupported media type (the message names the
 * allowed ones), a size over its type's limit, bytes that are not what the type says, or a direct
 * upload whose bytes do not match its declared digest. Nothing was stored.
 */
export class InvalidAttachment extends HarnessError {
  constructor(message: string) {
    super("invalid_attachment", message);
  }
}

/**
 * An import body that is not a conversation export (ADR 0034): a line that is not JSON, an
 * unknown line type or record kind, records out of order, an attachment whose bytes do not match
 * its digest or that the attachment policy refuses, a missing end line. The message names the
 * line. Nothing was written.
 */
export class InvalidExport extends HarnessError {
  constructor(message: string) {
    super("invalid_export", message);
  }
}

/** An import into a session that already has a conversation: an import never writes into history. */
export class ConversationExists extends HarnessError {
  constructor(session: string) {
    super("conversation_exists", `session ${session} already has a conversation: copy into a new session, or delete it first`);
  }
}

/** A direct upload id that names no pending or completed upload. */
export class UploadNotFound extends HarnessError {
  constructor(uploadId: string) {
    super("upload_not_found", `upload not found: ${uploadId}`);
  }
}

/** Direct uploads need blob storage that takes uploads itself (S3); this deployment has none. */
export class UploadsUnsupported extends HarnessError {
  constructor(inlineLimit: number) {
    super("uploads_unsupported", `direct uploads are not available here: POST /attachments takes attachments of up to ${inlineLimit} bytes`);
  }
}

/** A store file or table was written by a newer schema than this code understands. */
export class UnsupportedSchema extends HarnessError {
  constructor(message: string) {
    super("unsupported_schema", message);
  }
}

/** Steer / follow-up with no run in flight for the session. Nothing was persisted. */
export class NoRunInFlight extends HarnessError {
  constructor(session: string) {
    super("no_run_in_flight", `no run in flight for session ${session}`);
  }
}

/** Settlement refused: steer / follow-up messages landed that the run has not delivered yet. */
export class InboxNotDrained extends HarnessError {
  constructor(submissionId: string) {
    super("inbox_not_drained", `submission ${submissionId} has undelivered inbox messages`);
  }
}

export class UnknownAgent extends HarnessError {
  constructor(name: string) {
    super("unknown_agent", `unknown agent: ${name}`);
  }
}

/**
 * An agent this process knows by name only (see `namesOnlyAgents`) was asked to run: this
 * process admits or sweeps, another one (the worker) runs agents.
 */
export class AgentNotLoaded extends HarnessError {
  constructor(name: string) {
    super("agent_not_loaded", `agent ${name} is known here by name only: this process admits work, the worker runs agents`);
  }
}

/** Admission refused the message; nothing was stored. */
export class InvalidDispatch extends HarnessError {
  constructor(message: string) {
    super("invalid_dispatch", message);
  }
}

/**
 * A request the runtime refuses before doing anything: a malformed agent name, instance id,
 * session, dispatch id or record offset, or a steer / follow-up without a valid body. Nothing
 * was stored. (A message that breaks admission's rules is {@link InvalidDispatch}.)
 */
export class InvalidRequest extends HarnessError {
  constructor(message: string) {
    super("invalid_request", message);
  }
}

/**
 * The policy refused the caller this action on this target (ADR 0043). Checked before the runtime
 * reads or writes anything, so a refusal says nothing of whether the target exists.
 */
export class Forbidden extends HarnessError {
  readonly action: string;
  constructor(action: string, what: string) {
    super("forbidden", `forbidden: ${action} on ${what}`);
    this.action = action;
  }
}

/**
 * The caller could not be authenticated because what verifies credentials is out of reach (a JWT
 * issuer's key set that cannot be fetched): a 503, never a pass.
 */
export class AuthUnavailable extends HarnessError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("auth_unavailable", message, options);
  }
}

export class RuntimeClosed extends HarnessError {
  constructor() {
    super("runtime_closed", "runtime is closed");
  }
}

export class SessionBusy extends HarnessError {
  constructor(session: string) {
    super("session_busy", `session is busy: ${session}`);
  }
}

/** A cancel of a submission that has settled (or is settling) with another outcome than a cancel. */
export class AlreadySettled extends HarnessError {
  /**
   * `cancelLost`: a cancel had been requested (answered `cancelling`), but the run ended with its
   * own outcome before it learnt of it.
   */
  constructor(submissionId: string, status: string, options: { cancelLost?: boolean } = {}) {
    super(
      "already_settled",
      options.cancelLost
        ? `submission ${submissionId} settled ${status}: the run ended before the cancel requested earlier reached it (the cancel lost the race); nothing to cancel`
        : `submission ${submissionId} already settled (${status}): nothing to cancel`,
    );
  }
}

/**
 * A park refused (`waitSubmission`): a cancel was requested for the running submission after its
 * owner last renewed its lease. Nothing changed; the owner still holds the row and settles it
 * with the cancellation instead of parking a run nobody would tell of the cancel.
 */
export class CancelRequested extends HarnessError {
  constructor(submissionId: string) {
    super("cancel_requested", `submission ${submissionId} has a cancel requested: it is settled, not parked`);
  }
}

/** A decision for a call its submission never made (ADR 0025). */
export class CallNotFound extends HarnessError {
  constructor(submissionId: string, callId: string) {
    super("call_not_found", `submission ${submissionId} has no call ${JSON.stringify(callId)}`);
  }
}

/** A decision for a call that asked no approval (its tool needs none, or it waits for a callback). */
export class ApprovalNotRequested extends HarnessError {
  constructor(submissionId: string, callId: string) {
    super("approval_not_requested", `call ${JSON.stringify(callId)} of submission ${submissionId} asked no approval`);
  }
}

/** A decision that differs from the one already made for the call (the first one stands). */
export class AlreadyDecided extends HarnessError {
  /** The decision that stands. */
  readonly decision: { approved: boolean; reason?: string };
  constructor(callId: string, decision: { approved: boolean; reason?: string }) {
    super("already_decided", `call ${JSON.stringify(callId)} was already ${decision.approved ? "approved" : "denied"}${decision.reason ? ` (${decision.reason})` : ""}`);
    this.decision = decision;
  }
}

/** A callback id no call waits on: never issued, already closed, or expired. */
export class CallbackNotFound extends HarnessError {
  constructor() {
    super("callback_not_found", "unknown or expired callback");
  }
}

/** A callback answered differently before (its first answer stands). */
export class AlreadyAnswered extends HarnessError {
  constructor() {
    super("already_answered", "the callback was already answered with another answer");
  }
}

/**
 * A store call failed for another reason than a lost compare-and-set (a throttle, a timeout, an
 * unreachable backend): the attempt is handed back for a fresh one.
 */
export class StoreFailure extends HarnessError {
  constructor(cause: unknown) {
    super("store_failure", `store error: ${errorText(cause)}`, { cause });
  }
}

/**
 * The submission is stored (queued) but its doorbell could not be rung: the queue was unreachable.
 * Nothing is lost: a retry with the same dispatch id rings it again, and the sweeper rings a
 * queued head that waited too long.
 */
export class QueueUnavailable extends HarnessError {
  constructor(submissionId: string, cause: unknown) {
    super(
      "queue_unavailable",
      `submission ${submissionId} is stored but the queue could not be reached: retry with the same dispatchId (or the sweeper starts it within a minute)`,
      { cause },
    );
  }
}

/**
 * Names of errors a store backend raises for a condition that passes: optimistic retries
 * exhausted under contention, a locked SQLite file, DynamoDB throttling, a timeout, a 5xx.
 */
const TRANSIENT_STORE_ERRORS = new Set([
  "DynamoStoreContended",
  "SqliteStoreBusy",
  "ThrottlingException",
  "ProvisionedThroughputExceededException",
  "RequestLimitExceeded",
  "TransactionConflictException",
  "TransactionInProgressException",
  "InternalServerError",
  "ServiceUnavailable",
  "RequestTimeout",
  "RequestTimeoutException",
  "TimeoutError",
]);
const TRANSIENT_SOCKET_CODES = new Set(["ECONNRESET", "ECONNREFUSED", "ETIMEDOUT", "EPIPE", "EAI_AGAIN"]);

/**
 * True for a store failure that passes by itself (contention, throttling, a timeout, a 5xx, a
 * dropped connection): a request that met it is answered 503 with `Retry-After`, not 500. Read
 * from the error and its causes by name and shape (the transport imports no store adapter).
 */
export function isTransientStoreError(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if (isHarnessError(e, "store_unavailable")) return true;
    if (TRANSIENT_STORE_ERRORS.has(e.name)) return true;
    const shaped = e as { code?: unknown; $retryable?: unknown; $metadata?: { httpStatusCode?: number } };
    if (shaped.$retryable !== undefined) return true;
    if ((shaped.$metadata?.httpStatusCode ?? 0) >= 500) return true;
    if (typeof shaped.code === "string" && TRANSIENT_SOCKET_CODES.has(shaped.code)) return true;
  }
  return false;
}

/** The message of anything thrown. */
export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** True when `err` is a HarnessError, optionally with the given code. */
export function isHarnessError(err: unknown, code?: HarnessErrorCode): err is HarnessError {
  return err instanceof HarnessError && (code === undefined || err.code === code);
}
