/**
 * The runtime's side of durable waits (ADR 0025): a person's decision on a call that asked
 * approval, a callback's answer, the approvals a session waits for, and the embedded timer that
 * releases a delayed message at its time. Every answer is the engine's guarded `answerCallWait`;
 * this file turns its outcomes into the answers the HTTP routes give (typed errors).
 */
import {
  AlreadyAnswered,
  AlreadyDecided,
  AlreadySettled,
  ApprovalNotRequested,
  CallbackNotFound,
  CallNotFound,
  SubmissionNotFound,
} from "../errors.ts";
import type { CallAnswer, CallWait } from "../store/call-wait.ts";
import { sameAnswer } from "../store/call-wait.ts";
import type { Store } from "../store/store.ts";
import { pendingEntries, type SessionKey, type Submission } from "../store/submission.ts";
import { answerCallWait, expiredAnswer } from "../engine/call-answers.ts";
import { releaseDelayed } from "../engine/delayed-messages.ts";
import type { EngineContext } from "../engine/engine-context.ts";
import { callbackDigest } from "../conversation/callback-id.ts";
import type { ApprovalDecision, CallbackAnswer, CallbackResolution, PendingApproval } from "../protocol/approvals.ts";
import type { DecisionRequest } from "./requests.ts";

function decisionOf(wait: CallWait, answer: Extract<CallAnswer, { kind: "approval" }>): ApprovalDecision {
  const decision: ApprovalDecision = { submissionId: wait.submissionId, callId: wait.callId, approved: answer.approved, decidedAt: answer.answeredAt };
  if (answer.reason !== undefined) decision.reason = answer.reason;
  if (answer.expired) decision.expired = true;
  if (answer.decidedBy !== undefined) decision.decidedBy = answer.decidedBy;
  return decision;
}

/**
 * A person's decision on `request.callId`: the guarded answer (the first decision stands). The
 * same decision again answers it again; another one is `AlreadyDecided`; a call past its expiry
 * is denied by the expiry first (`AlreadyDecided`, "approval expired").
 */
export async function decide(ctx: EngineContext<Store>, request: DecisionRequest): Promise<ApprovalDecision> {
  const sub = await ctx.store.getSubmission(request.submissionId);
  if (sub.sessionKey.agent !== request.agent || sub.sessionKey.instance !== request.instance) throw new SubmissionNotFound(request.submissionId);
  const wait = await ctx.store.getCallWait(sub.id, request.callId);
  if (wait === undefined) {
    // The error path only: a call the model made that asked nothing, or no such call.
    if (await madeCall(ctx.store, sub, request.callId)) throw new ApprovalNotRequested(sub.id, request.callId);
    throw new CallNotFound(sub.id, request.callId);
  }
  if (wait.kind !== "approval") throw new ApprovalNotRequested(sub.id, request.callId);
  const answer: CallAnswer = { kind: "approval", approved: request.approved, answeredAt: ctx.clock.now() };
  if (request.reason !== undefined) answer.reason = request.reason;
  if (request.decidedBy !== undefined) answer.decidedBy = request.decidedBy;
  const stands = (first: CallAnswer): ApprovalDecision => {
    if (first.kind !== "approval") throw new ApprovalNotRequested(sub.id, request.callId);
    if (!first.expired && sameAnswer(first, answer)) return decisionOf(wait, first);
    throw new AlreadyDecided(request.callId, { approved: first.approved, ...(first.reason !== undefined ? { reason: first.reason } : {}) });
  };
  if (wait.answer !== undefined) return stands(wait.answer);
  if (sub.status === "settled" || sub.status === "terminalizing") throw new AlreadySettled(sub.id, sub.status);
  // Too late: the expiry decides (it would at the next sweep), and this decision is refused.
  const late = answer.answeredAt > wait.expiresAt;
  const out = await answerCallWait(ctx, sub, wait, late ? expiredAnswer(wait, answer.answeredAt) : answer);
  switch (out.kind) {
    case "answered":
      if (late) return stands(out.answer);
      return decisionOf(wait, out.answer as Extract<CallAnswer, { kind: "approval" }>);
    case "already_answered":
      return stands(out.answer);
    case "settled":
      throw new AlreadySettled(sub.id, "settled");
    case "not_found":
      throw new CallNotFound(sub.id, request.callId);
  }
}

/** Whether `sub`'s log holds a call `callId` of its own. */
async function madeCall(store: Store, sub: Submission, callId: string): Promise<boolean> {
  const records = await store.readRecords(sub.conversationId);
  return records.some((r) => r.kind === "assistant_tool_call" && r.submissionId === sub.id && r.payload.callId === callId);
}

/**
 * A callback's answer, by its id: the guarded answer (the first answer stands). The same answer
 * again is `replayed`; another one `AlreadyAnswered`; an unknown, closed or expired id
 * `CallbackNotFound` (an expired one is answered "callback expired" first).
 */
export async function resolveCallback(ctx: EngineContext<Store>, callbackId: string, given: CallbackAnswer): Promise<CallbackResolution> {
  const wait = await ctx.store.findCallback(callbackDigest(callbackId));
  if (wait === undefined || wait.kind !== "callback") throw new CallbackNotFound();
  return answerCallback(ctx, wait, given);
}

/**
 * A callback's answer by its submission and call, as the console gives it by hand (ADR 0054):
 * the same guarded answer as {@link resolveCallback}, for the operator, who holds no callback id
 * (the store keeps only its digest). `CallbackNotFound` when the call is not a callback's.
 */
export async function answerCallbackByCall(ctx: EngineContext<Store>, submissionId: string, callId: string, given: CallbackAnswer): Promise<CallbackResolution> {
  const wait = await ctx.store.getCallWait(submissionId, callId);
  if (wait === undefined || wait.kind !== "callback") throw new CallbackNotFound();
  return answerCallback(ctx, wait, given);
}

async function answerCallback(ctx: EngineContext<Store>, wait: CallWait, given: CallbackAnswer): Promise<CallbackResolution> {
  const now = ctx.clock.now();
  const answer: CallAnswer = given.error !== undefined ? { kind: "callback", error: given.error, answeredAt: now } : { kind: "callback", result: given.result, answeredAt: now };
  const stands = (first: CallAnswer): CallbackResolution => {
    if (first.expired) throw new CallbackNotFound();
    if (sameAnswer(first, answer)) return { status: "answered", replayed: true };
    throw new AlreadyAnswered();
  };
  if (wait.answer !== undefined) return stands(wait.answer);
  const sub = await ctx.store.getSubmission(wait.submissionId);
  if (sub.status === "settled" || sub.status === "terminalizing") throw new AlreadySettled(sub.id, sub.status);
  if (now > wait.expiresAt) {
    await answerCallWait(ctx, sub, wait, expiredAnswer(wait, now));
    throw new CallbackNotFound();
  }
  const out = await answerCallWait(ctx, sub, wait, answer);
  switch (out.kind) {
    case "answered":
      return { status: "answered", replayed: false };
    case "already_answered":
      return stands(out.answer);
    case "settled":
      throw new AlreadySettled(sub.id, "settled");
    case "not_found":
      throw new CallbackNotFound();
  }
}

/**
 * The calls a session waits on a person's decision for: those of its head when it is waiting
 * (only a session's head runs, so only it can wait). One read of the head, and one of each
 * pending approval's call wait (for its arguments).
 */
export async function pendingApprovals(store: Store, key: SessionKey): Promise<PendingApproval[]> {
  const head = await store.getSessionHead(key);
  if (head === undefined || head.status !== "waiting") return [];
  const out: PendingApproval[] = [];
  for (const entry of pendingEntries(head)) {
    if (entry.kind !== "approval") continue;
    const wait = await store.getCallWait(head.id, entry.callId);
    if (wait?.answer !== undefined) continue;
    const pending: PendingApproval = {
      submissionId: head.id,
      callId: entry.callId,
      toolName: entry.toolName,
      approvalId: wait?.approvalId ?? `${head.id}/${entry.callId}`,
      expiresAt: entry.expiresAt,
    };
    if (wait?.args !== undefined) pending.args = wait.args;
    out.push(pending);
  }
  return out;
}

/** Node's longest timer (about 24.8 days): a later time is reached by chained timers. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The embedded runtime's timer for delayed messages it admitted: releases each at its time (the
 * periodic sweep covers a restart, and a message admitted by another process). `stop` clears them.
 */
export class DelayedMessageTimers {
  readonly #timers = new Set<NodeJS.Timeout>();
  readonly #ctx: EngineContext<Store>;
  readonly #onError: (err: unknown) => void;

  constructor(ctx: EngineContext<Store>, onError: (err: unknown) => void) {
    this.#ctx = ctx;
    this.#onError = onError;
  }

  /** Releases `submissionId` at `at` (epoch ms). */
  schedule(submissionId: string, at: number): void {
    const delay = Math.max(0, at - this.#ctx.clock.now());
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      if (delay > MAX_TIMER_MS) return this.schedule(submissionId, at);
      releaseDelayed(this.#ctx, submissionId).catch(this.#onError);
    }, Math.min(delay, MAX_TIMER_MS));
    timer.unref();
    this.#timers.add(timer);
  }

  stop(): void {
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
  }
}
