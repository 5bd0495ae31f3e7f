/**
 * The engine's side of the `schedule_message` tool (ADR 0025): a delayed message to the calling
 * agent's own session, admitted like any dispatch and named after the call, so a call run again
 * schedules it once.
 */
import { ID_RULES } from "../protocol/id-rules.ts";
import { safeCallId } from "../conversation/task-names.ts";
import type { AdmissionStore } from "../store/store.ts";
import type { Submission } from "../store/submission.ts";
import { admit } from "./admission.ts";
import type { EngineContext } from "./engine-context.ts";

/** The signal type a scheduled message arrives as. */
export const SCHEDULED_MESSAGE = "scheduled_message";

/**
 * Admits `message` for `sub`'s session at `notBefore` (a `scheduled_message` signal whose sender
 * names the scheduling submission), dispatch id `<submissionId>:sched:<safeCallId>`. Refusals
 * (a time past a year, an id past the id rules) are thrown: the call's error result.
 */
export async function scheduleFollowUp(
  ctx: EngineContext<AdmissionStore>,
  sub: Submission,
  callId: string,
  message: { body: string; notBefore: string },
): Promise<{ submissionId: string; notBefore: string }> {
  const dispatchId = `${sub.id}:sched:${safeCallId(callId)}`;
  if (!ID_RULES.dispatchId.test(dispatchId)) throw new Error(`schedule_message: the message's id ${dispatchId.length} characters long would break the id rules`);
  const admitted = await admit(ctx, {
    key: sub.sessionKey,
    dispatchId,
    message: {
      kind: "signal",
      body: message.body,
      signal: { type: SCHEDULED_MESSAGE, sender: { source: "schedule_message", submissionId: sub.id } },
      notBefore: message.notBefore,
    },
  });
  return { submissionId: admitted.submissionId, notBefore: message.notBefore };
}
