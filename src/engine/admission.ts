import { conversationCreatedDraft } from "../conversation/conversation-created.ts";
import { ClaimLost } from "../errors.ts";
import { newId } from "../conversation/ids.ts";
import type { AdmissionStore } from "../ports/store.ts";
import { correlationOf } from "../ports/observer.ts";
import { doorbellOf } from "../ports/queue.ts";
import type { DispatchMessage, SessionKey } from "../ports/submission.ts";
import { iso, type EngineContext } from "./engine-context.ts";

/** One message to admit, already checked by the runtime's request rules (`runtime/requests.ts`). */
export interface Admission {
  key: SessionKey;
  /** Idempotency key; absent → a fresh ULID (opts out of idempotent replay). */
  dispatchId?: string;
  message: DispatchMessage;
}

/** Admission's answer, once the submission is durable. */
export interface DispatchResult {
  submissionId: string;
  conversationId: string;
  /** True when this dispatch id was already admitted with the same payload. */
  replayed: boolean;
}

/**
 * Admission: make the submission durable, ring the doorbell. Idempotent by dispatch id: a
 * replay returns the stored ids and rings again, so a dispatch whose first doorbell was lost
 * (queue unreachable after the store write) is recovered by simply retrying it.
 */
export async function admit(ctx: EngineContext<AdmissionStore>, request: Admission): Promise<DispatchResult> {
  const now = ctx.clock.now();
  const key = request.key;
  const { conversation, created } = await ctx.store.ensureConversation({ id: newId(now), key, createdAt: now });
  if (created) {
    // Only as the log's first record. Should this append fail, a retried dispatch finds the
    // conversation already created; the first attempt then writes the record (drive.ts).
    try {
      await ctx.store.appendRecords(conversation.id, [conversationCreatedDraft(conversation.id, key, iso(now))], { expectedHead: "" });
    } catch (err) {
      // A worker of a concurrent dispatch to this new session wrote it first.
      if (!(err instanceof ClaimLost)) throw err;
    }
  }
  const submissionId = request.dispatchId || newId(now);
  const stored = await ctx.store.admitSubmission({
    id: submissionId,
    conversationId: conversation.id,
    sessionKey: key,
    input: request.message,
    createdAt: now,
  });
  // A replay returns the row stored by the first admission, with that admission's time.
  const replayed = stored.createdAt !== now;
  await ctx.faults?.("admitted", stored.id);
  ctx.observe({ type: "submission_admitted", correlation: correlationOf(stored), input: stored.input, replayed });
  if (stored.status === "queued") {
    await ctx.queue.ring(doorbellOf(stored));
  }
  return { submissionId: stored.id, conversationId: stored.conversationId, replayed };
}
