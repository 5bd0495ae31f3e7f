import type { ConversationRecord } from "../protocol/records.ts";
import { type CallAnswer, type CallWait, callWaitOf } from "../store/call-wait.ts";
import { frozenCopy } from "./frozen-copy.ts";

/**
 * The memory store's call waits (ADR 0025), by submission and call and by callback digest.
 * Stored values are frozen; an answer replaces the stored value once. The store calls these
 * synchronously inside its own steps, so each registration or answer is atomic with them.
 */
export class MemoryCallWaits {
  readonly #byCall = new Map<string, CallWait>();
  readonly #byDigest = new Map<string, string>();

  /** Registers the call waits `records` announce (a call registered already is left as it is). */
  registerFrom(records: readonly ConversationRecord[]): void {
    for (const record of records) {
      const wait = callWaitOf(record);
      if (wait === undefined) continue;
      const key = callKey(wait.submissionId, wait.callId);
      if (this.#byCall.has(key)) continue;
      this.#byCall.set(key, frozenCopy(wait));
      if (wait.callbackDigest !== undefined) this.#byDigest.set(wait.callbackDigest, key);
    }
  }

  get(submissionId: string, callId: string): CallWait | undefined {
    return this.#byCall.get(callKey(submissionId, callId));
  }

  byDigest(digest: string): CallWait | undefined {
    const key = this.#byDigest.get(digest);
    return key === undefined ? undefined : this.#byCall.get(key);
  }

  /** Forgets the call waits of `submissionId` (its conversation is deleted, ADR 0034). */
  forget(submissionId: string): void {
    for (const [key, wait] of this.#byCall) {
      if (wait.submissionId !== submissionId) continue;
      this.#byCall.delete(key);
      if (wait.callbackDigest !== undefined) this.#byDigest.delete(wait.callbackDigest);
    }
  }

  /** Stores the first answer of a registered, unanswered wait. */
  answer(wait: CallWait, answer: CallAnswer): void {
    this.#byCall.set(callKey(wait.submissionId, wait.callId), frozenCopy({ ...wait, answer }));
  }
}

function callKey(submissionId: string, callId: string): string {
  return JSON.stringify([submissionId, callId]);
}
