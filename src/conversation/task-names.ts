/**
 * How a `task` call names its child (harness-spec §1.13): every name derives from the parent's
 * ids and the raw call id, so a re-executed call (a crash, a replayed turn) finds the child it
 * already admitted instead of admitting another.
 */
import { ID_RULES, MAX_ID_CHARS } from "../protocol/id-rules.ts";

/** Longest sanitized prefix of a call id, in bytes (before the hash suffix). */
const SAFE_PREFIX_BYTES = 48;

/**
 * The call id made safe for ids and routes: bytes outside `[A-Za-z0-9_-]` become `-`, truncated
 * to 48 bytes, then `-` and the 8 hex digits of an FNV-1a 32-bit hash of the raw id (two raw ids
 * that sanitize alike stay apart). With `scope` (the parent's submission id, see
 * {@link childAddress}) the hash covers it too, so the same call id names another child under
 * another parent submission.
 */
export function safeCallId(callId: string, scope?: string): string {
  const bytes = new TextEncoder().encode(callId);
  let prefix = "";
  for (const b of bytes.subarray(0, SAFE_PREFIX_BYTES)) {
    const c = String.fromCharCode(b);
    prefix += /[A-Za-z0-9_-]/.test(c) ? c : "-";
  }
  const hashed = scope === undefined ? bytes : new TextEncoder().encode(`${scope}\n${callId}`);
  return `${prefix}-${fnv1a32(hashed).toString(16).padStart(8, "0")}`;
}

function fnv1a32(bytes: Uint8Array): number {
  let hash = 0x811c9dc5;
  for (const b of bytes) {
    hash ^= b;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/** Where a `task` call's child lives and how it is admitted. */
export interface ChildAddress {
  /** The child's submission id: `parentSubmissionId:safeCallId` (its dispatch id). */
  submissionId: string;
  /** `parentInstance:safeCallId`. */
  instance: string;
  /** `task-safeCallId`. */
  session: string;
}

/**
 * The child of the parent's `callId` (see {@link safeCallId}). The safe id is scoped by the
 * parent's submission id: some providers (OpenAI-compatible local servers among them) repeat call
 * ids across turns and requests, and a later submission's call must not put its child into an
 * earlier child's session (instance and session derive from the call id, not the submission id).
 */
export function childAddress(parent: { submissionId: string; instance: string }, callId: string): ChildAddress {
  const safe = safeCallId(callId, parent.submissionId);
  return { submissionId: `${parent.submissionId}:${safe}`, instance: `${parent.instance}:${safe}`, session: `task-${safe}` };
}

/**
 * Why the child of `parent` at `child` could not be admitted, or undefined. The names are pinned
 * by the spec and each adds `:` and the 57-character safe call id to a parent id, so a parent
 * whose submission id (a long dispatch id) or instance id is longer than 198 characters would
 * give its child an id past {@link MAX_ID_CHARS}: no route could address it. Such a call is
 * refused rather than the pinned names shortened (ADR 0023).
 */
export function childAddressProblem(parent: { submissionId: string; instance: string }, child: ChildAddress): string | undefined {
  const check = (what: string, id: string, parentId: string, rule: RegExp): string | undefined => {
    if (rule.test(id)) return undefined;
    if (id.length > MAX_ID_CHARS) {
      return `the child's ${what} would be ${id.length} characters, over the ${MAX_ID_CHARS} an id may have (the parent's ${what} is ${parentId.length}); spawning needs the parent's ${what} to be at most ${MAX_ID_CHARS - (id.length - parentId.length)} characters`;
    }
    return `the child's ${what} ${JSON.stringify(id)} does not match ${rule.source}`;
  };
  // (The session, `task-` + the safe call id, is at most 62 characters: always valid.)
  return check("submission id", child.submissionId, parent.submissionId, ID_RULES.dispatchId) ?? check("instance id", child.instance, parent.instance, ID_RULES.instance);
}
