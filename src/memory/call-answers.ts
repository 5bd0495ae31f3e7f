import type { ConversationRecord, RecordDraft } from "../protocol/records.ts";
import type { CallAnswered, CallAnswerWrite, CallWait } from "../store/call-wait.ts";
import type { ChildOutcomeDelivered, ChildOutcomeDelivery } from "../store/child-outcome.ts";
import type { MemoryState } from "./memory-state.ts";
import { leaveWait, type Row } from "./rows.ts";

/**
 * The memory store's deliveries to a waiting submission: a child's outcome and a call's answer
 * (with the call waits they answer), over the shared {@link MemoryState}.
 */
export class MemoryCallAnswers {
  readonly #s: MemoryState;

  constructor(state: MemoryState) {
    this.#s = state;
  }

  async deliverChildOutcome(delivery: ChildOutcomeDelivery): Promise<ChildOutcomeDelivered> {
    const row = this.#s.row(delivery.parentSubmissionId);
    const sub = row.sub;
    if (sub.status !== "waiting") return { delivered: false, reason: "not_waiting" };
    if (!(sub.pendingCalls ?? []).includes(delivery.callId)) return { delivered: false, reason: "not_pending" };
    return { delivered: true, ...this.#deliver(row, delivery.callId, delivery.drafts) };
  }

  /**
   * Appends `drafts` to a waiting row's log and takes `callId` off its pending calls; the last
   * one requeues it. The caller checked both, in the same synchronous step.
   */
  #deliver(row: Row, callId: string, drafts: RecordDraft[]): { records: ConversationRecord[]; requeued: boolean } {
    const sub = row.sub;
    const records = this.#s.log.append(sub.conversationId, drafts, {});
    const rest = (sub.pendingCalls ?? []).filter((c) => c !== callId);
    if (rest.length > 0) {
      sub.pendingCalls = Object.freeze(rest) as string[];
      return { records, requeued: false };
    }
    leaveWait(sub);
    this.#s.transition(row, "queued");
    return { records, requeued: true };
  }

  async getCallWait(submissionId: string, callId: string): Promise<CallWait | undefined> {
    const wait = this.#s.callWaits.get(submissionId, callId);
    return wait && { ...wait };
  }

  async findCallback(callbackDigest: string): Promise<CallWait | undefined> {
    const wait = this.#s.callWaits.byDigest(callbackDigest);
    return wait && { ...wait };
  }

  async answerCall(write: CallAnswerWrite): Promise<CallAnswered> {
    const wait = this.#s.callWaits.get(write.submissionId, write.callId);
    const row = this.#s.rows.get(write.submissionId);
    if (wait === undefined || row === undefined) return { answered: false, reason: "not_found" };
    if (wait.answer !== undefined) return { answered: false, reason: "already_answered", answer: { ...wait.answer } };
    const sub = row.sub;
    if (sub.status === "terminalizing" || sub.status === "settled") return { answered: false, reason: "settled" };
    // Checked and written in one synchronous step: no other answer or delivery can interleave.
    if (sub.status === "waiting" && (sub.pendingCalls ?? []).includes(write.callId)) {
      const delivered = this.#deliver(row, write.callId, write.drafts);
      this.#s.callWaits.answer(wait, write.answer);
      return { answered: true, delivered: true, ...delivered };
    }
    this.#s.callWaits.answer(wait, write.answer);
    return { answered: true, delivered: false };
  }}
