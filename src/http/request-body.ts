import type { Context } from "hono";
import type { AttachmentRef } from "../protocol/records.ts";
import type { DispatchMessage, SignalMeta } from "../protocol/dispatch.ts";
import { RequestError } from "./http-errors.ts";

/** What `POST /agents/:agent/:instance` carries, checked for shape (admission checks the rules). */
export interface DispatchBody {
  message: DispatchMessage;
  session?: string;
  dispatchId?: string;
}

/** What `POST …/steer` and `…/followup` carry (the runtime checks that `body` is non-empty). */
export interface InjectBody {
  body: string;
  session?: string;
}

type Json = Record<string, unknown>;

/**
 * Reads the request body as JSON whatever content type the client declared (`curl -d` sends
 * form-urlencoded). Only a JSON object is a valid body.
 */
export async function readJsonObject(c: Context): Promise<Json> {
  return parseJsonObject(await c.req.text());
}

/** Decodes a request body that must be a JSON object (`RequestError` 400 otherwise). */
export function parseJsonObject(text: string): Json {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    const reason = text.trim() === "" ? "empty body" : err instanceof Error ? err.message : String(err);
    throw new RequestError(400, "invalid_request", `decode request body: ${reason}`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new RequestError(400, "invalid_request", "decode request body: expected a JSON object");
  }
  return value as Json;
}

/** What `POST …/submissions/:submissionId/cancel` may carry (the body may also be empty). */
export interface CancelBody {
  reason?: string;
}

/** Shapes a cancel body: an optional `reason` string. */
export function parseCancelBody(json: Json): CancelBody {
  const reason = optionalString(json, "reason");
  return reason === undefined ? {} : { reason };
}

/**
 * Shapes a dispatch body into a message. Field types are checked here so a wrong type is a 400
 * naming the field; the message rules (kinds, body, signal type, retries, size) stay with
 * admission. Unknown fields are ignored; `null` means absent.
 */
export function parseDispatchBody(json: Json): DispatchBody {
  const message: DispatchMessage = { kind: json.kind as DispatchMessage["kind"], body: json.body as string };
  const attachments = optional(json, "attachments");
  if (attachments !== undefined) message.attachments = parseAttachments(attachments);
  const signal = optional(json, "signal");
  if (signal !== undefined) message.signal = parseSignal(signal);
  const resultSchema = optional(json, "resultSchema");
  if (resultSchema !== undefined) message.resultSchema = resultSchema;
  const resultRetries = optional(json, "resultRetries");
  if (resultRetries !== undefined) message.resultRetries = resultRetries as number;
  const notBefore = optionalString(json, "notBefore");
  if (notBefore !== undefined) message.notBefore = notBefore;
  const out: DispatchBody = { message };
  const session = optionalString(json, "session");
  if (session !== undefined) out.session = session;
  const dispatchId = optionalString(json, "dispatchId");
  if (dispatchId !== undefined) out.dispatchId = dispatchId;
  return out;
}

/**
 * What `POST …/submissions/:submissionId/approvals/:callId` carries: `approved` as given (the
 * runtime refuses a non-boolean with a 400 naming it) and an optional reason.
 */
export interface DecisionBody {
  approved: unknown;
  reason?: string;
}

export function parseDecisionBody(json: Json): DecisionBody {
  const out: DecisionBody = { approved: json.approved };
  const reason = optionalString(json, "reason");
  if (reason !== undefined) out.reason = reason;
  return out;
}

/** What `POST /callbacks/:callbackId` carries: `{result}` or `{error}` (the runtime checks which). */
export function parseCallbackBody(json: Json): { result?: unknown; error?: unknown } {
  const out: { result?: unknown; error?: unknown } = {};
  // `"result": null` is a result (JSON null), unlike an absent field.
  if ("result" in json) out.result = json.result;
  if ("error" in json && json.error !== null) out.error = json.error;
  return out;
}

/** Shapes a compaction body: an optional session (an empty body is `{}`). */
export function parseCompactBody(json: Json): { session?: string } {
  const session = optionalString(json, "session");
  return session === undefined ? {} : { session };
}

/** Shapes a steer / follow-up body: a `body` string and an optional session. */
export function parseInjectBody(json: Json): InjectBody {
  const out: InjectBody = { body: optionalString(json, "body") ?? "" };
  const session = optionalString(json, "session");
  if (session !== undefined) out.session = session;
  return out;
}

/** What `POST …/fork` carries: the record to fork after, the target, an optional message (ADR 0034). */
export interface ForkBody {
  fromRecordId: string;
  instance?: string;
  session?: string;
  message?: DispatchBody["message"];
}

/** Shapes a fork body; `message` is a dispatch body's message (`{kind, body, attachments?…}`). */
export function parseForkBody(json: Json): ForkBody {
  const fromRecordId = optionalString(json, "fromRecordId");
  if (fromRecordId === undefined || fromRecordId === "") throw new RequestError(400, "invalid_request", "fromRecordId is required");
  const out: ForkBody = { fromRecordId };
  const instance = optionalString(json, "instance");
  if (instance !== undefined) out.instance = instance;
  const session = optionalString(json, "session");
  if (session !== undefined) out.session = session;
  const message = optional(json, "message");
  if (message !== undefined) {
    if (typeof message !== "object" || Array.isArray(message)) throw new RequestError(400, "invalid_request", "message must be an object");
    out.message = parseDispatchBody(message as Json).message;
  }
  return out;
}

function optional(json: Json, field: string): unknown {
  const value = json[field];
  return value === null ? undefined : value;
}

function optionalString(json: Json, field: string): string | undefined {
  const value = optional(json, field);
  if (value !== undefined && typeof value !== "string") {
    // What came instead, so that a number where text belongs says so.
    const got = Array.isArray(value) ? "an array" : typeof value === "object" ? "an object" : `the ${typeof value} ${JSON.stringify(value)}`;
    throw new RequestError(400, "invalid_request", `${field} must be a string; got ${got}`);
  }
  return value;
}

const DIGEST = /^sha256:[0-9a-f]{64}$/;

function parseAttachments(value: unknown): AttachmentRef[] {
  if (!Array.isArray(value)) throw new RequestError(400, "invalid_request", "attachments must be an array");
  return value.map((item: unknown, i) => {
    const a = item as Json | null;
    if (a === null || typeof a !== "object" || Array.isArray(a)) {
      throw new RequestError(400, "invalid_request", `attachments[${i}] must be an object`);
    }
    if (typeof a.digest !== "string" || !DIGEST.test(a.digest)) {
      throw new RequestError(400, "invalid_request", `attachments[${i}].digest must be "sha256:<64 hex>"`);
    }
    if (typeof a.mediaType !== "string" || a.mediaType === "") {
      throw new RequestError(400, "invalid_request", `attachments[${i}].mediaType must be a non-empty string`);
    }
    if (typeof a.size !== "number" || !Number.isSafeInteger(a.size) || a.size < 0) {
      throw new RequestError(400, "invalid_request", `attachments[${i}].size must be a non-negative integer`);
    }
    return { digest: a.digest, mediaType: a.mediaType, size: a.size };
  });
}

function parseSignal(value: unknown): SignalMeta {
  const s = value as Json;
  if (typeof s !== "object" || Array.isArray(s)) {
    throw new RequestError(400, "invalid_request", "signal must be an object");
  }
  // The type's presence is admission's rule ("signal message requires a signal type").
  const meta: SignalMeta = { type: s.type as string };
  if (s.type !== undefined && typeof s.type !== "string") {
    throw new RequestError(400, "invalid_request", "signal.type must be a string");
  }
  const sender = optional(s, "sender");
  if (sender !== undefined) {
    if (typeof sender !== "object" || Array.isArray(sender)) {
      throw new RequestError(400, "invalid_request", "signal.sender must be an object of strings");
    }
    for (const [k, v] of Object.entries(sender as Json)) {
      if (typeof v !== "string") throw new RequestError(400, "invalid_request", `signal.sender.${k} must be a string`);
    }
    meta.sender = { ...(sender as Record<string, string>) };
  }
  const tag = optionalString(s, "tag");
  if (tag !== undefined) meta.tag = tag;
  return meta;
}
