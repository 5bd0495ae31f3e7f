import { conversationCreatedDraft } from "../conversation/conversation-created.ts";
import { ClaimLost, UnknownAgent } from "../errors.ts";
import { newId } from "../conversation/ids.ts";
import { sessionKeyString, type SessionKey } from "../ports/submission.ts";
import { DEFAULT_SESSION, validateDispatch, type DispatchRequest, type DispatchResult } from "./dispatch.ts";
import { iso, type EngineContext } from "./engine-context.ts";

/**
 * Admission: validate, make the submission durable, ring the doorbell. Idempotent by dispatch
 * id: a replay returns the stored ids and rings again, so a dispatch whose first doorbell was
 * lost (queue unreachable after the store write) is recovered by simply retrying it.
 */
export async function admit(ctx: EngineContext, request: DispatchRequest): Promise<DispatchResult> {
  if (!ctx.definitions.has(request.agent)) throw new UnknownAgent(request.agent);
  validateDispatch(request);
  const now = ctx.clock.now();
  const key: SessionKey = {
    agent: request.agent,
    instance: request.instance,
    session: request.session || DEFAULT_SESSION,
  };
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
  const correlation = { sessionKey: key, conversationId: stored.conversationId, submissionId: stored.id };
  ctx.observe({ type: "submission_admitted", correlation, input: stored.input, replayed });
  if (stored.status === "queued") {
    await ctx.queue.ring({ submissionId: stored.id, sessionKey: sessionKeyString(key) });
  }
  return { submissionId: stored.id, conversationId: stored.conversationId, replayed };
}
