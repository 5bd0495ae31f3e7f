import type { ConversationRecord, RecordDraft } from "../protocol/records.ts";

/** What answers a call wait: a person's decision on a tool call, or a callback from outside. */
export type CallWaitKind = "approval" | "callback";

/**
 * A call of a submission that waits for an answer from outside its run (ADR 0025): a person's
 * decision on a call of a tool that needs approval, or the callback of a deferred tool's call.
 * The store registers it when it appends the record that announces it (`approval_requested`,
 * `callback_started`), in the same atomic write, and keeps the first answer it gets.
 */
export interface CallWait {
  submissionId: string;
  /** The submission's conversation (where the answer is delivered). */
  conversationId: string;
  /** The session of the conversation (records carry it). */
  session: string;
  callId: string;
  kind: CallWaitKind;
  toolName: string;
  /** Epoch ms: unanswered past it, the call is answered as expired. */
  expiresAt: number;
  /** An approval's call arguments, as the model gave them (from `approval_requested`). */
  args?: unknown;
  /** `<submissionId>/<callId>` for an approval (from `approval_requested`). */
  approvalId?: string;
  /** A callback's digest: sha256 (hex) of its id; the id itself is never stored. */
  callbackDigest?: string;
  /** The first answer, once there is one: set once, never changed. */
  answer?: CallAnswer;
}

/** A call wait's answer. `expired`: nobody answered in time. */
export type CallAnswer =
  | { kind: "approval"; approved: boolean; reason?: string; expired?: true; answeredAt: number; /** Who decided (ADR 0043). */ decidedBy?: string }
  | { kind: "callback"; result?: unknown; error?: string; expired?: true; answeredAt: number };

/** The guarded answer of a call wait (`SubmissionStore.answerCall`). */
export interface CallAnswerWrite {
  submissionId: string;
  callId: string;
  answer: CallAnswer;
  /**
   * The records that deliver the answer to the run (`approval_decided`, the call's `tool_outcome`),
   * appended unfenced in the same write when the submission waits with the call pending.
   */
  drafts: RecordDraft[];
}

/** What a {@link CallAnswerWrite} came to. */
export type CallAnswered =
  /**
   * Stored. `delivered`: the submission was waiting with the call pending, so the drafts were
   * appended and the call taken off its pending calls in the same write (`requeued` when it was
   * the last one: the caller rings it). Not delivered: it was not waiting on the call yet (still
   * running its tool batch); the park delivers it.
   */
  | { answered: true; delivered: true; records: ConversationRecord[]; requeued: boolean }
  | { answered: true; delivered: false }
  /** Nothing written: the call wait had an answer already (this one), so the store kept the first. */
  | { answered: false; reason: "already_answered"; answer: CallAnswer }
  /** Nothing written: no such call wait, or its submission is settling or settled. */
  | { answered: false; reason: "not_found" | "settled" };

/** Whether two answers say the same (a repeat of a decision or callback is idempotent): times aside. */
export function sameAnswer(a: CallAnswer, b: CallAnswer): boolean {
  if (a.kind === "approval" && b.kind === "approval") return a.approved === b.approved;
  if (a.kind === "callback" && b.kind === "callback") {
    return (a.error ?? null) === (b.error ?? null) && canonical(a.result) === canonical(b.result);
  }
  return false;
}

/** JSON with object keys sorted: equal values give equal strings. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)))
      : v,
  ) ?? "undefined";
}

/**
 * The call wait an appended record announces, or undefined: what a store registers in the same
 * write as the record. Every store derives it the same way from the record.
 */
export function callWaitOf(record: ConversationRecord | RecordDraft): CallWait | undefined {
  if (record.submissionId === undefined) return undefined;
  const base = { submissionId: record.submissionId, conversationId: record.conversationId, session: record.session };
  if (record.kind === "approval_requested") {
    const p = record.payload;
    const wait: CallWait = { ...base, callId: p.callId, kind: "approval", toolName: p.toolName, expiresAt: Date.parse(p.expiresAt), approvalId: p.approvalId };
    if (p.args !== undefined) wait.args = p.args;
    return wait;
  }
  if (record.kind === "callback_started") {
    const p = record.payload;
    return { ...base, callId: p.callId, kind: "callback", toolName: p.toolName, expiresAt: Date.parse(p.expiresAt), callbackDigest: p.callbackDigest };
  }
  return undefined;
}
