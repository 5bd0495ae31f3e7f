import { InvalidDispatch } from "../errors.ts";
import type { DispatchMessage } from "../ports/submission.ts";

/** What a caller asks admission to do: one message for one session of one agent instance. */
export interface DispatchRequest {
  agent: string;
  instance: string;
  /** "" or absent → "default". */
  session?: string;
  /** Idempotency key; absent → a fresh ULID (opts out of idempotent replay). */
  dispatchId?: string;
  message: DispatchMessage;
}

/** Admission's answer, once the submission is durable. */
export interface DispatchResult {
  submissionId: string;
  conversationId: string;
  /** True when this dispatch id was already admitted with the same payload. */
  replayed: boolean;
}

export const DEFAULT_SESSION = "default";

/**
 * Identifier rules. They keep ids safe as URL path segments, DynamoDB keys and SQS group ids.
 * Instance ids admit `:` because a child instance is `parentInstance:callId`.
 */
export const ID_RULES = {
  agent: /^[A-Za-z0-9_-]{1,64}$/,
  instance: /^[A-Za-z0-9._:~-]{1,256}$/,
  session: /^[A-Za-z0-9._:~-]{1,128}$/,
  dispatchId: /^[A-Za-z0-9._:~-]{1,256}$/,
} as const;

/** Largest dispatch body in bytes (UTF-8); larger bodies belong in attachments. */
export const MAX_BODY_BYTES = 256 * 1024;

/** Throws `InvalidDispatch` naming the first problem; admission stores nothing then. */
export function validateDispatch(request: DispatchRequest): void {
  if (!request.instance) throw new InvalidDispatch("instance id is required");
  checkId("agent name", request.agent, ID_RULES.agent);
  checkId("instance id", request.instance, ID_RULES.instance);
  if (request.session) checkId("session", request.session, ID_RULES.session);
  if (request.dispatchId) checkId("dispatch id", request.dispatchId, ID_RULES.dispatchId);
  validateMessage(request.message);
}

/** The reference system's message rules, with its exact wording. */
export function validateMessage(message: DispatchMessage): void {
  if (message === null || typeof message !== "object") throw new InvalidDispatch("message is required");
  if (message.kind !== "user" && message.kind !== "signal") {
    throw new InvalidDispatch(`unknown inbound kind ${JSON.stringify(message.kind ?? "")}`);
  }
  if (typeof message.body !== "string" || message.body === "") throw new InvalidDispatch("body is required");
  if (Buffer.byteLength(message.body, "utf8") > MAX_BODY_BYTES) {
    throw new InvalidDispatch(`body exceeds ${MAX_BODY_BYTES} bytes`);
  }
  if (message.kind === "user" && message.signal !== undefined) {
    throw new InvalidDispatch("user message must not carry signal fields");
  }
  if (message.kind === "signal" && (typeof message.signal?.type !== "string" || message.signal.type === "")) {
    throw new InvalidDispatch("signal message requires a signal type");
  }
  if (message.resultRetries !== undefined) {
    const r = message.resultRetries;
    if (!Number.isInteger(r) || r < 0 || r > 10) {
      throw new InvalidDispatch("resultRetries must be an integer from 0 to 10");
    }
  }
  if (message.resultSchema !== undefined && (message.resultSchema === null || typeof message.resultSchema !== "object")) {
    throw new InvalidDispatch("resultSchema must be a JSON Schema object");
  }
}

function checkId(what: string, value: string, rule: RegExp): void {
  if (typeof value !== "string" || !rule.test(value)) {
    throw new InvalidDispatch(`invalid ${what} ${JSON.stringify(value)}: must match ${rule.source}`);
  }
}
