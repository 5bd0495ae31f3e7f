/**
 * How a `task` call names its child (harness-spec §1.13): every name derives from the parent's
 * ids and the raw call id, so a re-executed call (a crash, a replayed turn) finds the child it
 * already admitted instead of admitting another.
 */

/** Longest sanitized prefix of a call id, in bytes (before the hash suffix). */
const SAFE_PREFIX_BYTES = 48;

/**
 * The call id made safe for ids and routes: bytes outside `[A-Za-z0-9_-]` become `-`, truncated
 * to 48 bytes, then `-` and the 8 hex digits of the raw id's FNV-1a 32-bit hash (two raw ids that
 * sanitize alike stay apart).
 */
export function safeCallId(callId: string): string {
  const bytes = new TextEncoder().encode(callId);
  let prefix = "";
  for (const b of bytes.subarray(0, SAFE_PREFIX_BYTES)) {
    const c = String.fromCharCode(b);
    prefix += /[A-Za-z0-9_-]/.test(c) ? c : "-";
  }
  return `${prefix}-${fnv1a32(bytes).toString(16).padStart(8, "0")}`;
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

/** The child of the parent's `callId` (see {@link safeCallId}). */
export function childAddress(parent: { submissionId: string; instance: string }, callId: string): ChildAddress {
  const safe = safeCallId(callId);
  return { submissionId: `${parent.submissionId}:${safe}`, instance: `${parent.instance}:${safe}`, session: `task-${safe}` };
}
