/**
 * The JSON body of every error answer, `{error, code}`, and the codes it can carry: what the HTTP
 * surface writes and the client reads. Branch on `code`; `error` is for people.
 */

/** Every error code the harness raises on purpose. */
export type HarnessErrorCode =
  | "dispatch_conflict"
  | "submission_not_found"
  | "conversation_not_found"
  | "claim_lost"
  | "attachment_not_found"
  | "invalid_attachment"
  | "invalid_export"
  | "conversation_exists"
  | "upload_not_found"
  | "uploads_unsupported"
  | "unsupported_schema"
  | "no_run_in_flight"
  | "inbox_not_drained"
  | "unknown_agent"
  | "agent_not_loaded"
  | "invalid_dispatch"
  | "invalid_request"
  | "runtime_closed"
  | "session_busy"
  | "schema_checker_busy"
  | "already_settled"
  | "cancel_requested"
  | "store_failure"
  | "store_unavailable"
  | "queue_unavailable"
  | "call_not_found"
  | "approval_not_requested"
  | "already_decided"
  | "callback_not_found"
  | "already_answered"
  | "forbidden"
  | "auth_unavailable";

/** Codes the transport raises itself, beside the harness's own {@link HarnessErrorCode}s. */
export type TransportErrorCode =
  | "invalid_request"
  | "payload_too_large"
  | "unauthorized"
  | "forbidden"
  | "origin_not_allowed"
  | "host_not_allowed"
  | "not_found"
  | "internal";

/** The JSON body of every error response. */
export interface ErrorBody {
  error: string;
  code: HarnessErrorCode | TransportErrorCode;
}

/**
 * The body as the client reads it: an `ErrorBody` when `value` has a string `error` and `code`,
 * else undefined (a proxy's page, a truncated answer). Codes stay open-ended, so a newer server's
 * codes still read.
 */
export function errorBodyOf(value: unknown): { error: string; code: string } | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const { error, code } = value as { error?: unknown; code?: unknown };
  return typeof error === "string" && typeof code === "string" ? { error, code } : undefined;
}
