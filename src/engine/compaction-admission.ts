import type { AdmissionStore, ReadStore } from "../store/store.ts";
import type { DispatchMessage, SessionKey } from "../store/submission.ts";
import { admit, type DispatchResult } from "./admission.ts";
import type { EngineContext } from "./engine-context.ts";

/** The input of a manual compaction: no message, the drive only compacts. */
export const COMPACT_INPUT: DispatchMessage = Object.freeze({ kind: "compact", body: "" }) as DispatchMessage;

/**
 * Admits a manual compaction of a session as a submission of its own, in the session's order:
 * a worker runs it like any submission (it needs the agent's model, which an admitting process
 * may not load), so it never races a run and needs no "busy" refusal. The session's
 * conversation must exist (`ConversationNotFound`); nothing is stored otherwise.
 */
export async function admitCompaction(
  ctx: EngineContext<AdmissionStore & Pick<ReadStore, "getConversation">>,
  key: SessionKey,
): Promise<DispatchResult> {
  await ctx.store.getConversation(key);
  return admit(ctx, { key, message: { ...COMPACT_INPUT } });
}
