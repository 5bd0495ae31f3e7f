/**
 * The request rules: every check of what a caller hands the runtime (ids, agent names, offsets,
 * messages) lives here, and each runtime entry point applies them once. The HTTP transport
 * checks only that the body decodes to fields of the right types; everything else reaches the
 * caller as the runtime's typed errors.
 */
import { ID_RULES } from "../protocol/id-rules.ts";
import {
  DEFAULT_SESSION,
  MAX_BODY_BYTES,
  MAX_CALLBACK_ERROR_BYTES,
  MAX_CANCEL_REASON_BYTES,
  MAX_DECISION_REASON_BYTES,
  SUBMISSION_PAGE,
} from "../protocol/limits.ts";
import { CallbackNotFound, InvalidDispatch, InvalidRequest, UnknownAgent } from "../errors.ts";
import type { DispatchMessage, SessionKey } from "../protocol/dispatch.ts";
import type { CallbackAnswer } from "../protocol/approvals.ts";
import type { SubmissionStatus } from "../protocol/submission-view.ts";
import { resultSchemaLimitError } from "../protocol/result-schema-limits.ts";

/** One session of one agent instance, as a caller names it (`session` absent or "" → "default"). */
export interface SessionAddress {
  agent: string;
  instance: string;
  session?: string;
}

/** What a caller asks admission to do: one message for one session of one agent instance. */
export interface DispatchRequest extends SessionAddress {
  /** Idempotency key; absent → a fresh ULID (opts out of idempotent replay). */
  dispatchId?: string;
  message: DispatchMessage;
}

/** A steer or follow-up for a session's in-flight run. */
export interface SteerRequest extends SessionAddress {
  body: string;
  /**
   * Who sends it (ADR 0043), recorded on the `user_message` record it becomes. Set by
   * `Runtime.as(principal)` from the authenticated caller; absent without authentication.
   */
  principalId?: string;
}

/** Whether the runtime knows an agent by this name. */
export type KnowsAgent = (name: string) => boolean;

/**
 * Checks agent names given to `createRuntime` (or to the construct): at least one, each matching
 * `ID_RULES.agent`. Throws a plain `Error` naming the first bad one (a configuration mistake).
 */
export function checkAgentNames(names: readonly unknown[], what = "agent name"): void {
  if (names.length === 0) throw new Error("at least one agent is required");
  for (const name of names) {
    if (typeof name !== "string" || !ID_RULES.agent.test(name)) throw new Error(`invalid ${what} ${JSON.stringify(name)}`);
  }
}

/**
 * The session key a request addresses, checked: agent name, known agent (`UnknownAgent`),
 * instance id and session (`InvalidRequest`); the session defaults to "default".
 */
export function sessionKeyOf(address: SessionAddress, knows: KnowsAgent): SessionKey {
  if (address === null || typeof address !== "object") throw new InvalidRequest("request is required");
  checkId("agent name", address.agent, ID_RULES.agent);
  if (!knows(address.agent)) throw new UnknownAgent(address.agent);
  if (address.instance === undefined || address.instance === "") throw new InvalidRequest("instance id is required");
  checkId("instance id", address.instance, ID_RULES.instance);
  const session = address.session || DEFAULT_SESSION;
  checkId("session", session, ID_RULES.session);
  return { agent: address.agent, instance: address.instance, session };
}

/** A dispatch that passed every rule; nothing was stored for one that did not. */
export interface CheckedDispatch {
  key: SessionKey;
  dispatchId?: string;
  message: DispatchMessage;
}

/** Checks a dispatch: its address, its dispatch id and admission's message rules. */
export function checkDispatch(request: DispatchRequest, knows: KnowsAgent): CheckedDispatch {
  const key = sessionKeyOf(request, knows);
  const checked: CheckedDispatch = { key, message: request.message };
  if (request.dispatchId !== undefined && request.dispatchId !== "") {
    checkId("dispatch id", request.dispatchId, ID_RULES.dispatchId);
    checked.dispatchId = request.dispatchId;
  }
  validateMessage(request.message);
  return checked;
}

/** Checks a steer / follow-up: its address and a non-empty body within {@link MAX_BODY_BYTES}. */
export function checkInject(request: SteerRequest, knows: KnowsAgent): { key: SessionKey; body: string; principalId?: string } {
  const key = sessionKeyOf(request, knows);
  const wrong = bodyProblem(request.body);
  if (wrong !== undefined) throw new InvalidRequest(wrong);
  if (Buffer.byteLength(request.body, "utf8") > MAX_BODY_BYTES) throw new InvalidRequest(`body exceeds ${MAX_BODY_BYTES} bytes`);
  if (request.principalId === undefined) return { key, body: request.body };
  if (typeof request.principalId !== "string" || request.principalId === "") throw new InvalidRequest("principalId must be a non-empty string");
  return { key, body: request.body, principalId: request.principalId };
}

/** The agent instance a cancel is addressed within (the HTTP route's path). */
export interface InstanceAddress {
  agent: string;
  instance: string;
}

/** Checks a cancel: the submission id (a dispatch id or ULID), the reason, and the address it names. */
export function checkCancel(submissionId: string, reason: string | undefined, within: InstanceAddress | undefined, knows: KnowsAgent): void {
  if (within !== undefined) sessionKeyOf(within, knows);
  checkId("submission id", submissionId, ID_RULES.dispatchId);
  if (reason === undefined) return;
  if (typeof reason !== "string") throw new InvalidRequest("reason must be a string");
  if (Buffer.byteLength(reason, "utf8") > MAX_CANCEL_REASON_BYTES) throw new InvalidRequest(`reason exceeds ${MAX_CANCEL_REASON_BYTES} bytes`);
}

/** Checks a stream offset: "" (the whole log) or a record id. */
export function checkRecordOffset(afterId: string | undefined): string {
  if (afterId === undefined || afterId === "") return "";
  if (typeof afterId !== "string" || !ID_RULES.recordId.test(afterId)) {
    throw new InvalidRequest(`invalid record offset ${JSON.stringify(afterId)}: expected a record id (Last-Event-ID)`);
  }
  return afterId;
}

/** What is wrong with a message's `body` (it must be non-empty text), or `undefined`. */
function bodyProblem(body: unknown): string | undefined {
  if (body === undefined || body === null || body === "") return "body is required: the message's text, a non-empty string";
  if (typeof body !== "string") return `body must be a string (the message's text); got ${described(body)}`;
  return undefined;
}

/** A JSON value a request gave where another was expected, as an error message says it. */
function described(value: unknown): string {
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  return `the ${typeof value} ${JSON.stringify(value)}`;
}

/** The reference system's message rules (`InvalidDispatch`); a missing or mistyped field is named with what it takes. */
export function validateMessage(message: DispatchMessage): void {
  if (message === null || typeof message !== "object") throw new InvalidDispatch("message is required");
  if (message.kind !== "user" && message.kind !== "signal") {
    // The field and what it takes: "kind" is easy to leave out of a hand-written request.
    const kind: unknown = message.kind;
    throw new InvalidDispatch(
      kind === undefined || kind === null || kind === ""
        ? 'kind is required: "user" (a message) or "signal"'
        : typeof kind === "string"
          ? `unknown inbound kind ${JSON.stringify(kind)}: kind must be "user" or "signal"`
          : `kind must be "user" or "signal"; got ${described(kind)}`,
    );
  }
  const wrongBody = bodyProblem(message.body);
  if (wrongBody !== undefined) throw new InvalidDispatch(wrongBody);
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
  // Size and depth before anything serializes or compiles it (a schema nested thousands deep
  // overflows JSON.stringify's stack).
  const limit = message.resultSchema === undefined ? undefined : resultSchemaLimitError(message.resultSchema);
  if (limit !== undefined) throw new InvalidDispatch(limit);
  if (message.notBefore !== undefined && (typeof message.notBefore !== "string" || !RFC3339.test(message.notBefore) || !Number.isFinite(Date.parse(message.notBefore)))) {
    throw new InvalidDispatch(`notBefore must be an RFC 3339 time with a zone (e.g. 2026-05-01T09:00:00Z), got ${JSON.stringify(message.notBefore)}`);
  }
}

/** An RFC 3339 date-time with its zone (a time without one would depend on the server's). */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|z|[+-]\d{2}:\d{2})$/;

/** A person's decision on a call that asked approval (ADR 0025). */
export interface DecisionRequest extends SubmissionAddress {
  callId: string;
  approved: boolean;
  reason?: string;
  /** Who decides: set by the runtime from the authenticated caller (ADR 0043), recorded on `approval_decided`. */
  decidedBy?: string;
}

/** A call id as a route names it: any text a provider uses, bounded. */
const CALL_ID = /^[^\u0000-\u001f\u007f]{1,256}$/;

/** Checks a decision: its address, call id, `approved` (a boolean) and reason (at most {@link MAX_DECISION_REASON_BYTES}). */
export function checkDecision(request: DecisionRequest, knows: KnowsAgent): DecisionRequest {
  const address = checkSubmissionAddress(request, knows);
  checkId("call id", request.callId, CALL_ID);
  if (typeof request.approved !== "boolean") throw new InvalidRequest(`approved must be true or false, got ${JSON.stringify(request.approved) ?? "nothing"}`);
  const checked: DecisionRequest = { ...address, callId: request.callId, approved: request.approved };
  if (typeof request.decidedBy === "string" && request.decidedBy !== "") checked.decidedBy = request.decidedBy;
  if (request.reason !== undefined) {
    if (typeof request.reason !== "string") throw new InvalidRequest("reason must be a string");
    if (Buffer.byteLength(request.reason, "utf8") > MAX_DECISION_REASON_BYTES) throw new InvalidRequest(`reason exceeds ${MAX_DECISION_REASON_BYTES} bytes`);
    if (request.reason !== "") checked.reason = request.reason;
  }
  return checked;
}

/** A callback id as issued: base64url (issued ones are 32 characters). */
const CALLBACK_ID = /^[A-Za-z0-9_-]{16,128}$/;

/** Checks a callback's answer: a well-formed id and exactly one of `result` and `error`. */
export function checkCallbackAnswer(callbackId: string, answer: CallbackAnswer): CallbackAnswer {
  // An ill-formed id is unknown (404), not a bad request: it says nothing about which ids exist.
  if (typeof callbackId !== "string" || !CALLBACK_ID.test(callbackId)) throw new CallbackNotFound();
  return checkCallbackBody(answer);
}

/** Checks a callback's answer itself: exactly one of `result` and `error` (the console's by-hand answer has no id). */
export function checkCallbackBody(answer: CallbackAnswer): CallbackAnswer {
  if (answer === null || typeof answer !== "object") throw new InvalidRequest("a callback answer is an object: {\"result\": …} or {\"error\": \"…\"}");
  const hasResult = "result" in answer && answer.result !== undefined;
  const hasError = "error" in answer && answer.error !== undefined;
  if (hasResult === hasError) throw new InvalidRequest("a callback answer has exactly one of result and error");
  if (hasError) {
    if (typeof answer.error !== "string" || answer.error === "") throw new InvalidRequest("error must be a non-empty string");
    if (Buffer.byteLength(answer.error, "utf8") > MAX_CALLBACK_ERROR_BYTES) throw new InvalidRequest(`error exceeds ${MAX_CALLBACK_ERROR_BYTES} bytes`);
    return { error: answer.error };
  }
  return { result: answer.result };
}

function checkId(what: string, value: unknown, rule: RegExp): void {
  if (typeof value !== "string" || !rule.test(value)) {
    throw new InvalidRequest(`invalid ${what} ${JSON.stringify(value)}: must match ${rule.source}`);
  }
}

/** Statuses a submission listing may filter on. */
const SUBMISSION_STATUSES: readonly SubmissionStatus[] = ["queued", "running", "waiting", "terminalizing", "settled"];

/** What the operator's listing asks for: one page of a session's submissions, newest first. */
export interface SubmissionListRequest extends SessionAddress {
  /** Only submissions in this status. */
  status?: string;
  /** Page size, 1 to {@link SUBMISSION_PAGE}`.maxLimit` (default `defaultLimit`). */
  limit?: number;
  /** The previous page's `next`: a submission id of this session. */
  after?: string;
}

/** One submission of one agent instance (any of its sessions). */
export interface SubmissionAddress {
  agent: string;
  instance: string;
  submissionId: string;
}

/** A listing request that passed every rule. */
export interface CheckedSubmissionList {
  key: SessionKey;
  limit: number;
  status?: SubmissionStatus;
  after?: string;
}

/** Checks a listing: its address, status, limit and cursor (`InvalidRequest` naming the field). */
export function checkSubmissionList(request: SubmissionListRequest, knows: KnowsAgent): CheckedSubmissionList {
  const key = sessionKeyOf(request, knows);
  const checked: CheckedSubmissionList = { key, limit: SUBMISSION_PAGE.defaultLimit };
  if (request.status !== undefined && request.status !== "") {
    if (!(SUBMISSION_STATUSES as readonly unknown[]).includes(request.status)) {
      throw new InvalidRequest(`invalid status ${JSON.stringify(request.status)}: expected one of ${SUBMISSION_STATUSES.join(", ")}`);
    }
    checked.status = request.status as SubmissionStatus;
  }
  if (request.limit !== undefined) {
    const limit = request.limit;
    if (!Number.isInteger(limit) || limit < 1 || limit > SUBMISSION_PAGE.maxLimit) {
      throw new InvalidRequest(`invalid limit ${JSON.stringify(limit)}: expected an integer from 1 to ${SUBMISSION_PAGE.maxLimit}`);
    }
    checked.limit = limit;
  }
  if (request.after !== undefined && request.after !== "") {
    checkId("cursor (after)", request.after, ID_RULES.dispatchId);
    checked.after = request.after;
  }
  return checked;
}

/** Checks a submission id alone (`InvalidRequest`). */
export function checkSubmissionId(submissionId: string): void {
  checkId("submission id", submissionId, ID_RULES.dispatchId);
}

/** Checks a submission address: agent, instance and submission id. */
export function checkSubmissionAddress(request: SubmissionAddress, knows: KnowsAgent): SubmissionAddress {
  if (request === null || typeof request !== "object") throw new InvalidRequest("request is required");
  const key = sessionKeyOf({ agent: request.agent, instance: request.instance }, knows);
  checkId("submission id", request.submissionId, ID_RULES.dispatchId);
  return { agent: key.agent, instance: key.instance, submissionId: request.submissionId };
}
