import { errorBodyOf, type ErrorBody } from "../protocol/error-body.ts";

/**
 * A `code` the harness answers with (`ErrorBody["code"]`), or `"unexpected_response"` when the
 * answer was not the harness's (a proxy's HTML error page, a 200 that is not an event stream).
 * Open-ended so a newer server's codes still type-check.
 */
export type HarnessHttpErrorCode = ErrorBody["code"] | "unexpected_response" | (string & {});

/** A refused or unexpected HTTP answer from the harness, with the server's `{error, code}`. */
export class HarnessHttpError extends Error {
  /** The HTTP status. */
  readonly status: number;
  /** The machine-readable code from the body; branch on this, not on the message. */
  readonly code: HarnessHttpErrorCode;

  constructor(status: number, code: HarnessHttpErrorCode, message: string) {
    super(message);
    this.name = "HarnessHttpError";
    this.status = status;
    this.code = code;
  }

  /** Builds the error from a non-success response, reading its JSON `{error, code}` body. */
  static async fromResponse(res: Response): Promise<HarnessHttpError> {
    const text = await res.text().catch(() => "");
    let body: ReturnType<typeof errorBodyOf>;
    try {
      body = errorBodyOf(JSON.parse(text));
    } catch {
      // not JSON: an unexpected answer
    }
    if (body) return new HarnessHttpError(res.status, body.code, body.error);
    const detail = text.trim().slice(0, 200);
    return new HarnessHttpError(res.status, "unexpected_response", `HTTP ${res.status}${detail ? `: ${detail}` : ""}`);
  }
}
