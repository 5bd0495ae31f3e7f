import { conversationCreatedDraft } from "../conversation/conversation-created.ts";
import { ClaimLost, InvalidDispatch, QueueUnavailable } from "../errors.ts";
import { newId } from "../conversation/ids.ts";
import type { AdmissionStore } from "../store/store.ts";
import { correlationOf } from "../ports/observer.ts";
import { doorbellOf } from "../ports/queue.ts";
import type { DispatchMessage, SessionKey } from "../store/submission.ts";
import { checkAdmissible } from "./admission-checks.ts";
import { MAX_DELAY_MS } from "./delayed-messages.ts";
import { iso, type EngineContext } from "./engine-context.ts";

/** One message to admit, already checked by the runtime's request rules (`runtime/requests.ts`). */
export interface Admission {
  key: SessionKey;
  /** Idempotency key; absent → a fresh ULID (opts out of idempotent replay). */
  dispatchId?: string;
  message: DispatchMessage;
  /** Set for a child admitted by a parent's `task` call (`engine/spawn.ts`). */
  parent?: ParentLink;
}

/** A child's link to the parent call that spawned it. */
export interface ParentLink {
  submissionId: string;
  /** The raw `task` call id. */
  callId: string;
  conversationId: string;
  /** The parent's depth (the child's is one more). */
  depth: number;
}

/** Admission's answer, once the submission is durable. */
export interface DispatchResult {
  submissionId: string;
  conversationId: string;
  /** True when this dispatch id was already admitted with the same payload. */
  replayed: boolean;
}

/**
 * A delayed message's time (ADR 0025): its `notBefore` when ahead of `now` (one in the past runs
 * now), refused past a year ahead (`InvalidDispatch`, nothing stored).
 */
export function delayOf(message: DispatchMessage, now: number): number | undefined {
  if (message.notBefore === undefined) return undefined;
  const at = Date.parse(message.notBefore);
  if (!Number.isFinite(at)) throw new InvalidDispatch(`notBefore is not a time: ${JSON.stringify(message.notBefore)}`);
  if (at > now + MAX_DELAY_MS) throw new InvalidDispatch(`notBefore ${message.notBefore} is more than a year ahead`);
  return at > now ? at : undefined;
}

/**
 * Admission: make the submission durable, ring the doorbell. Idempotent by dispatch id: a
 * replay returns the stored ids and rings again, so a dispatch whose first doorbell was lost
 * (queue unreachable after the store write) is recovered by simply retrying it.
 */
export async function admit(ctx: EngineContext<AdmissionStore>, request: Admission): Promise<DispatchResult> {
  await checkAdmissible(ctx.store, request.message);
  const now = ctx.clock.now();
  const delayedUntil = delayOf(request.message, now);
  const key = request.key;
  const submissionId = request.dispatchId || newId(now);
  // The conversation is created with the submission, in one write (a refused dispatch stores
  // nothing): the candidate id is used only when the session has no conversation yet.
  const candidateConversationId = newId(now);
  const { submission: stored, replayed } = await ctx.store.admitSubmission({
    id: submissionId,
    ...(request.dispatchId ? {} : { freshId: true }),
    conversationId: candidateConversationId,
    sessionKey: key,
    input: request.message,
    createdAt: now,
    ...(delayedUntil !== undefined ? { delayedUntil } : {}),
    ...(request.parent
      ? { parentSubmissionId: request.parent.submissionId, parentCallId: request.parent.callId, depth: request.parent.depth + 1 }
      : {}),
  });
  if (!replayed && stored.conversationId === candidateConversationId) {
    // The log's first record. Should this append fail, the first attempt writes it (log-writer.ts).
    try {
      await ctx.store.appendRecords(stored.conversationId, [conversationCreatedDraft(
        stored.conversationId,
        key,
        iso(now),
        request.parent && { conversationId: request.parent.conversationId, callId: request.parent.callId },
      )], { expectedHead: "" });
    } catch (err) {
      // A worker (a sweep found the submission first) wrote it already.
      if (!(err instanceof ClaimLost)) throw err;
    }
  }
  await ctx.faults?.("admitted", stored.id);
  // This process's timer releases it at its time (the sweep covers another process or a restart).
  if (delayedUntil !== undefined && !replayed) ctx.delayTimer?.(stored.id, delayedUntil);
  ctx.observe({ type: "submission_admitted", correlation: correlationOf(stored), input: stored.input, replayed });
  if (stored.status === "queued") {
    try {
      await ctx.queue.ring(doorbellOf(stored));
    } catch (err) {
      // Told apart from a store failure: the row is written, so "nothing was stored" would be false.
      throw new QueueUnavailable(stored.id, err);
    }
  }
  return { submissionId: stored.id, conversationId: stored.conversationId, replayed };
}
