import { errorBodyOf, type ErrorBody } from "../protocol/error-body.ts";

/**
 * A `code` the harness answers with (`ErrorBody["code"]`), `"unexpected_response"` when the
 * answer was not the harness's (a proxy's HTML error page, a 200 that is not an event stream), or
 * `"unreachable"` when no answer came (connection refused, DNS, TLS, a dropped connection; the
 * `status` is then 0). Open-ended so a newer server's codes still type-check.
 */
export type HarnessHttpErrorCode = ErrorBody["code"] | "unexpected_response" | "unreachable" | (string & {});

/**
 * A refused or unexpected HTTP answer from the harness, with the server's `{error, code}`; or, with
 * `code: "unreachable"` and `status: 0`, a request that got no answer at all (its `url` named, the
 * network error as `cause`).
 */
export class HarnessHttpError extends Error {
  /** The HTTP status; 0 when no answer came (`unreachable`). */
  readonly status: number;
  /** The machine-readable code from the body; branch on this, not on the message. */
  readonly code: HarnessHttpErrorCode;
  /** The request's URL, for `unreachable`. */
  readonly url?: string;

  constructor(status: number, code: HarnessHttpErrorCode, message: string, options: { cause?: unknown; url?: string } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "HarnessHttpError";
    this.status = status;
    this.code = code;
    if (options.url !== undefined) this.url = options.url;
  }

  /** The error for a request that got no answer: `cannot reach the harness at <url>: <why>`. */
  static unreachable(url: string, cause: unknown): HarnessHttpError {
    return new HarnessHttpError(0, "unreachable", `cannot reach the harness at ${url}: ${networkReason(cause)}`, { cause, url });
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
    // A 401 from in front of the harness (API Gateway's authorizer answers `{"message":"Unauthorized"}`)
    // is still a refused token: callers branch on one code, whoever refused.
    if (res.status === 401) return new HarnessHttpError(401, "unauthorized", `unauthorized${detail ? `: ${detail}` : ""}`);
    return new HarnessHttpError(res.status, "unexpected_response", `HTTP ${res.status}${detail ? `: ${detail}` : ""}`);
  }
}

/** Why a fetch failed, in one phrase: undici's `fetch failed` hides the reason in its cause. */
function networkReason(err: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    const text = typeof code === "string" && !e.message.includes(code) ? `${e.message} (${code})` : e.message;
    if (text && !parts.includes(text)) parts.push(text);
  }
  return parts.length > 0 ? parts.join(": ") : String(err);
}
