/**
 * Answering calls that wait for the outside world (ADR 0025): a person's decision on an approval,
 * a callback's answer, and their expiry. Every answer goes through the store's guarded
 * `answerCall` (the first answer wins, a second is refused by the store itself); an answer to a
 * waiting submission is delivered in the same write, and whoever comes second delivers one that
 * was stored before the park: the decider (reading the row again here), the park
 * (`deliverStoredAnswers`), or the sweep's backstop.
 */
import type { RecordDraft, ToolOutcomePayload } from "../protocol/records.ts";
import { isHarnessError } from "../errors.ts";
import type { CallAnswer, CallWait } from "../store/call-wait.ts";
import { correlationOf } from "../ports/observer.ts";
import { doorbellOf } from "../ports/queue.ts";
import type { CallWaitStore, ParentChildStore, SubmissionStore } from "../store/store.ts";
import type { Submission } from "../store/submission.ts";
import { iso, type EngineContext } from "./engine-context.ts";

/** The reason an approval nobody decided in time is denied with. */
export const APPROVAL_EXPIRED = "approval expired";
/** The error outcome of a deferred call whose callback did not answer in time. */
export const CALLBACK_EXPIRED = "callback expired";

/** The store a call's answer needs. */
export type AnswerContext = EngineContext<CallWaitStore & ParentChildStore & Pick<SubmissionStore, "getSubmission">>;

/** What answering a call wait came to. */
export type AnswerOutcome =
  /** This answer was stored (and delivered, or left for the park); `requeued`: it woke the submission. */
  | { kind: "answered"; answer: CallAnswer; requeued: boolean }
  /** Another answer came first: it stands (`answer`). */
  | { kind: "already_answered"; answer: CallAnswer }
  /** No such call wait. */
  | { kind: "not_found" }
  /** The submission is settling or settled (a cancel, say): nothing was stored. */
  | { kind: "settled" };

/** The text a denied call's outcome reads to the model. */
export function denialText(answer: Extract<CallAnswer, { kind: "approval" }>): string {
  if (answer.expired) return `denied: ${APPROVAL_EXPIRED}`;
  return answer.reason ? `denied by a reviewer: ${answer.reason}` : "denied by a reviewer";
}

/**
 * The records that deliver `answer` to the call's submission (the same whoever delivers):
 * approved, `approval_decided`; denied, `approval_decided` and the call's error outcome (nothing
 * runs); a callback, the call's outcome (a result's JSON, a string as it is; an error's text).
 */
export function answerDrafts(wait: CallWait, answer: CallAnswer, now: number): RecordDraft[] {
  const envelope = { conversationId: wait.conversationId, session: wait.session, submissionId: wait.submissionId, time: iso(now) };
  const drafts: RecordDraft[] = [];
  const outcome = (payload: Omit<ToolOutcomePayload, "callId" | "toolName">): RecordDraft => ({
    kind: "tool_outcome",
    ...envelope,
    payload: { callId: wait.callId, toolName: wait.toolName, ...payload },
  });
  if (answer.kind === "approval") {
    drafts.push({
      kind: "approval_decided",
      ...envelope,
      payload: {
        callId: wait.callId,
        approved: answer.approved,
        ...(answer.reason !== undefined ? { reason: answer.reason } : {}),
        ...(answer.expired ? { expired: true as const } : {}),
        ...(answer.decidedBy !== undefined ? { decidedBy: answer.decidedBy } : {}),
      },
    });
    if (!answer.approved) drafts.push(outcome({ content: [{ type: "text", text: denialText(answer) }], isError: true }));
    return drafts;
  }
  if (answer.error !== undefined) drafts.push(outcome({ content: [{ type: "text", text: answer.error }], isError: true }));
  else {
    const text = typeof answer.result === "string" ? answer.result : JSON.stringify(answer.result ?? null);
    drafts.push(outcome({ content: [{ type: "text", text }], data: answer.result ?? null }));
  }
  return drafts;
}

/**
 * Answers `wait` (a call of `sub`) with `answer` through the store's guarded write; rings the
 * submission when the answer woke it. An answer stored while the submission was still running its
 * tool batch is delivered here if it has parked meanwhile (else the park delivers it).
 */
export async function answerCallWait(ctx: AnswerContext, sub: Submission, wait: CallWait, answer: CallAnswer): Promise<AnswerOutcome> {
  const drafts = answerDrafts(wait, answer, ctx.clock.now());
  const out = await ctx.store.answerCall({ submissionId: wait.submissionId, callId: wait.callId, answer, drafts });
  if (!out.answered) return out.reason === "already_answered" ? { kind: "already_answered", answer: out.answer } : { kind: out.reason };
  observeAnswer(ctx, sub, wait, answer);
  if (out.delivered) {
    if (out.requeued) await requeued(ctx, sub);
    return { kind: "answered", answer, requeued: out.requeued };
  }
  // Stored before the park: whoever comes second delivers. The park reads the answers right
  // after it parks; reading the row again here covers a park that came in between.
  let woke = false;
  try {
    const now = await ctx.store.getSubmission(sub.id);
    if (now.status === "waiting" && now.pendingCalls?.includes(wait.callId)) woke = await deliver(ctx, now, wait, answer);
  } catch (err) {
    if (!isHarnessError(err, "submission_not_found")) throw err;
  }
  return { kind: "answered", answer, requeued: woke };
}

/** Delivers a stored answer to a waiting `sub`; true when it requeued it (then rung). */
async function deliver(ctx: AnswerContext, sub: Submission, wait: CallWait, answer: CallAnswer): Promise<boolean> {
  const out = await ctx.store.deliverChildOutcome({ parentSubmissionId: sub.id, callId: wait.callId, drafts: answerDrafts(wait, answer, ctx.clock.now()) });
  if (!out.delivered || !out.requeued) return false;
  await requeued(ctx, sub);
  return true;
}

async function requeued(ctx: AnswerContext, sub: Submission): Promise<void> {
  ctx.observe({ type: "submission_resumed", correlation: correlationOf(sub) });
  await ctx.faults?.("decided", sub.id);
  await ctx.queue.ring(doorbellOf(sub));
}

function observeAnswer(ctx: AnswerContext, sub: Submission, wait: CallWait, answer: CallAnswer): void {
  const base = { correlation: correlationOf(sub), callId: wait.callId, toolName: wait.toolName };
  if (answer.kind === "approval") {
    if (answer.expired) ctx.observe({ type: "approval_expired", ...base });
    else ctx.observe({ type: "approval_decided", ...base, approved: answer.approved, ...(answer.reason !== undefined ? { reason: answer.reason } : {}) });
  } else if (answer.expired && answer.error === CALLBACK_EXPIRED) ctx.observe({ type: "callback_expired", ...base });
  else ctx.observe({ type: "callback_answered", ...base, isError: answer.error !== undefined });
}

/** The approval and callback calls `sub` still waits for, by call id. */
function pendingCallWaits(sub: Submission): Map<string, "approval" | "callback"> {
  const pending = new Set(sub.pendingCalls ?? []);
  const out = new Map<string, "approval" | "callback">();
  for (const entry of sub.waitingFor ?? []) {
    if ((entry.kind === "approval" || entry.kind === "callback") && pending.has(entry.callId)) out.set(entry.callId, entry.kind);
  }
  return out;
}

/**
 * Delivers the answers stored for a waiting submission's pending approvals and callbacks (an
 * answer that came before the park, or whose delivery a crash lost): at the park and as the
 * sweep's backstop. Returns how many it delivered.
 */
export async function deliverStoredAnswers(ctx: AnswerContext, sub: Submission): Promise<number> {
  let delivered = 0;
  for (const callId of pendingCallWaits(sub).keys()) {
    const wait = await ctx.store.getCallWait(sub.id, callId);
    if (wait?.answer === undefined) continue;
    const out = await ctx.store.deliverChildOutcome({ parentSubmissionId: sub.id, callId, drafts: answerDrafts(wait, wait.answer, ctx.clock.now()) });
    if (!out.delivered) {
      if (out.reason === "not_waiting") break;
      continue;
    }
    delivered++;
    if (out.requeued) await requeued(ctx, sub);
  }
  return delivered;
}

/**
 * Answers as expired the unanswered pending approvals and callbacks of a waiting submission whose
 * own expiry is at or before `now` (every one of them with `all`: the whole wait ended). An
 * answer racing the expiry: the store keeps whichever lands first. Returns how many it answered.
 */
export async function expireCallWaits(ctx: AnswerContext, sub: Submission, now: number, all = false): Promise<number> {
  let expired = 0;
  for (const callId of pendingCallWaits(sub).keys()) {
    const wait = await ctx.store.getCallWait(sub.id, callId);
    // An answer stored but not delivered is the backstop's (`deliverStoredAnswers`, run first).
    if (wait === undefined || wait.answer !== undefined || (!all && wait.expiresAt > now)) continue;
    const out = await answerCallWait(ctx, sub, wait, expiredAnswer(wait, now));
    if (out.kind !== "answered") continue;
    expired++;
    if (out.requeued) return expired;
  }
  return expired;
}

/** The answer an expiry gives a call wait. */
export function expiredAnswer(wait: CallWait, now: number): CallAnswer {
  return wait.kind === "approval"
    ? { kind: "approval", approved: false, reason: APPROVAL_EXPIRED, expired: true, answeredAt: now }
    : { kind: "callback", error: CALLBACK_EXPIRED, expired: true, answeredAt: now };
}
