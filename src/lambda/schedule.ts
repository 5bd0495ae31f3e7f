/**
 * The schedule function (only with the construct's `schedules`): EventBridge Scheduler invokes it
 * once per firing with the schedule's input (`ScheduledFiring`, the scheduled time filled in by
 * `<aws.scheduler.scheduled-time>`). It admits one `scheduled_tick` signal whose dispatch id is
 * `schedule:<name>:<scheduled time>`, so a retry, a duplicate delivery or a redrive of the same
 * firing replays the same submission. It never runs an agent: it knows the agents by name
 * (HARNESS_AGENT_NAMES). A refused dispatch throws, and Scheduler retries it per its policy.
 */
import type { Context } from "aws-lambda";
import type { DispatchResult } from "../engine/admission.ts";
import { scheduledDispatch, type ScheduledFiring } from "../runtime/scheduled-dispatch.ts";
import { agentNamesFromEnv } from "./settings.ts";
import { wiring, invocation } from "./wiring.ts";

export async function handler(event: ScheduledFiring, context: Context): Promise<DispatchResult> {
  const h = await wiring(agentNamesFromEnv());
  return invocation(h, context, async () => {
    const request = scheduledDispatch(event);
    const admitted = await h.runtime.dispatch(request);
    h.logger.info(admitted.replayed ? "scheduled firing already admitted" : "scheduled firing admitted", {
      schedule: event.schedule,
      dispatchId: request.dispatchId,
      submissionId: admitted.submissionId,
    });
    return admitted;
  });
}
