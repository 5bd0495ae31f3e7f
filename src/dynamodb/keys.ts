/**
 * The single-table key layout (docs/adr/0005-dynamodb-table-design.md). Every item has `pk` and
 * `sk`; the prefixes keep entity kinds apart and every id is the tail of its key, so keys are
 * unambiguous whatever characters an id holds.
 */
import type { SessionKey } from "../store/submission.ts";

/** Per session: the session item (admission sequence, head pointer, conversation). */
export const SESSION_SK = "SESSION";
/** Per submission: the immutable input item and the small, hot state (lease) item. */
export const INPUT_SK = "IN";
export const STATE_SK = "ST";
/** Per conversation: the head item (id of the last visible record). */
export const HEAD_SK = "HEAD";

const SEQ_WIDTH = 12;
const TIME_WIDTH = 15;

/** `SES#<agent>/<instance>/<session>`, each part URI-encoded so `/` inside a part cannot collide. */
export function sessionPk(key: SessionKey): string {
  return `SES#${encodeURIComponent(key.agent)}/${encodeURIComponent(key.instance)}/${encodeURIComponent(key.session)}`;
}

/** A session's member item: admission sequence number → submission id (+ `cancelled` when cancelled behind the head, `settled` once settled there). */
export function memberSk(seq: number): string {
  return `Q#${pad(seq, SEQ_WIDTH)}`;
}

export function submissionPk(id: string): string {
  return `SUB#${id}`;
}

/** The submission id of a `SUB#<id>` key. */
export function submissionIdOf(pk: string): string {
  return pk.slice("SUB#".length);
}

/** Attempt markers sort by start time, then attempt id (a repeated marker overwrites itself). */
export function attemptSk(startedAt: number, attemptId: string): string {
  return `AT#${pad(startedAt, TIME_WIDTH)}#${attemptId}`;
}
export const ATTEMPT_PREFIX = "AT#";

/** Inbox messages of a submission, in acceptance order. */
export function inboxSk(seq: number): string {
  return `IB#${pad(seq, SEQ_WIDTH)}`;
}
export const INBOX_PREFIX = "IB#";

export function conversationPk(conversationId: string): string {
  return `CONV#${conversationId}`;
}

export function recordSk(recordId: string): string {
  return `R#${recordId}`;
}
export const RECORD_PREFIX = "R#";

/** Zero-padded decimal so numbers sort as strings. */
export function pad(value: number, width: number = TIME_WIDTH): string {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`cannot key on ${value}`);
  return String(value).padStart(width, "0");
}
