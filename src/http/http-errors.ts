import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { isHarnessError, isTransientStoreError, type HarnessErrorCode } from "../errors.ts";
import type { ErrorBody, TransportErrorCode } from "../protocol/error-body.ts";

export type { ErrorBody, TransportErrorCode };

/** A request the transport refuses before it reaches the runtime (nothing is stored). */
export class RequestError extends Error {
  readonly status: ContentfulStatusCode;
  readonly code: TransportErrorCode;
  constructor(status: ContentfulStatusCode, code: TransportErrorCode, message: string) {
    super(message);
    this.name = "RequestError";
    this.status = status;
    this.code = code;
  }
}

/** HTTP status of each runtime error code; a code missing here is a 500. */
const STATUS_BY_CODE: Partial<Record<HarnessErrorCode, ContentfulStatusCode>> = {
  invalid_dispatch: 400,
  invalid_request: 400,
  attachment_not_found: 400,
  invalid_attachment: 400,
  invalid_export: 400,
  conversation_exists: 409,
  upload_not_found: 404,
  uploads_unsupported: 501,
  unknown_agent: 404,
  conversation_not_found: 404,
  submission_not_found: 404,
  dispatch_conflict: 409,
  no_run_in_flight: 409,
  session_busy: 409,
  already_settled: 409,
  call_not_found: 404,
  approval_not_requested: 409,
  already_decided: 409,
  callback_not_found: 404,
  already_answered: 409,
  runtime_closed: 503,
  schema_checker_busy: 503,
  forbidden: 403,
  auth_unavailable: 503,
};

/** A JSON error response (`application/json`). */
export function errorResponse(c: Context, status: ContentfulStatusCode, body: ErrorBody, headers?: Record<string, string>): Response {
  return c.json(body, status, headers);
}

/** Seconds a client waits before retrying a request the store could not serve just now. */
export const STORE_RETRY_AFTER_SECONDS = 1;

/**
 * Maps any error to its JSON response: typed runtime errors by `code`, the transport's own
 * refusals by their status, Hono's HTTP exceptions (auth, body limit) as they are, anything else
 * to a 500 with a generic message (the detail goes to `log`, never to the client).
 */
export function toErrorResponse(c: Context, err: unknown, log: (message: string, err: unknown) => void): Response {
  if (err instanceof RequestError) return errorResponse(c, err.status, { error: err.message, code: err.code });
  if (isHarnessError(err)) {
    const status = STATUS_BY_CODE[err.code];
    if (status !== undefined) return errorResponse(c, status, { error: err.message, code: err.code });
  }
  if (err instanceof HTTPException) {
    if (err.res) return err.getResponse();
    const status = err.status as ContentfulStatusCode;
    const code: TransportErrorCode = status === 401 ? "unauthorized" : status === 413 ? "payload_too_large" : "invalid_request";
    return errorResponse(c, status, { error: err.message || "request refused", code });
  }
  if (isHarnessError(err, "queue_unavailable")) {
    log(`${c.req.method} ${c.req.path}: queue unavailable`, err);
    return errorResponse(c, 503, { error: err.message, code: err.code }, { "Retry-After": String(STORE_RETRY_AFTER_SECONDS) });
  }
  if (isTransientStoreError(err) || isHarnessError(err, "store_failure")) {
    // Contention, throttling, a timeout: nothing was stored (a write is atomic, and a replay of
    // the same dispatch id finds one whose answer was lost). The client retries.
    log(`${c.req.method} ${c.req.path}: store unavailable`, err);
    return errorResponse(
      c,
      503,
      { error: "the store is busy or unavailable; nothing was stored: retry after a moment", code: "store_unavailable" },
      { "Retry-After": String(STORE_RETRY_AFTER_SECONDS) },
    );
  }
  log(`${c.req.method} ${c.req.path} failed`, err);
  return errorResponse(c, 500, { error: "internal server error", code: "internal" });
}
