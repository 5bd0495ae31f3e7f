/**
 * A scheduled dispatch: one `scheduled_tick` signal per firing of a schedule, with a dispatch id
 * made from the schedule's name and the time the firing was scheduled for. Every process (or
 * Lambda invocation, or retry) that fires the same window computes the same id, so admission's
 * idempotency turns repeats into replays: one submission per window.
 */
import { InvalidRequest } from "../errors.ts";
import type { DispatchRequest } from "./requests.ts";

/** The signal type of a scheduled firing. */
export const SCHEDULED_TICK = "scheduled_tick";

/** Schedule names: they become part of dispatch ids. */
export const SCHEDULE_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** One firing of a schedule, as the scheduler hands it over. */
export interface ScheduledFiring {
  /** The schedule's name. */
  schedule: string;
  agent: string;
  instance: string;
  session?: string;
  /** The signal's body. */
  body: string;
  /** When the firing was scheduled for: epoch ms or an ISO 8601 time (EventBridge's `<aws.scheduler.scheduled-time>`). */
  scheduledTime: number | string;
}

/** EventBridge Scheduler's context attribute: replaced in a target's input by the time the firing was scheduled for. */
export const SCHEDULED_TIME_ATTRIBUTE = "<aws.scheduler.scheduled-time>";

/**
 * The input a schedule hands its target (the construct's schedules, the local cloud): a firing
 * whose `scheduledTime` Scheduler fills in at each firing, the time it was scheduled for, not
 * when it ran.
 */
export function scheduledFiringInput(firing: Omit<ScheduledFiring, "scheduledTime">): string {
  const input: Record<keyof ScheduledFiring, unknown> = {
    schedule: firing.schedule,
    agent: firing.agent,
    instance: firing.instance,
    session: firing.session,
    body: firing.body,
    scheduledTime: SCHEDULED_TIME_ATTRIBUTE,
  };
  return JSON.stringify(input);
}

/** `schedule:<name>:<scheduled time, ISO 8601 UTC>`: the same for every firer of one window. */
export function scheduleDispatchId(schedule: string, scheduledTime: number | string): string {
  if (!SCHEDULE_NAME.test(schedule)) throw new InvalidRequest(`invalid schedule name ${JSON.stringify(schedule)}: must match ${SCHEDULE_NAME.source}`);
  const ms = typeof scheduledTime === "number" ? scheduledTime : Date.parse(scheduledTime);
  if (!Number.isFinite(ms)) throw new InvalidRequest(`invalid scheduled time ${JSON.stringify(scheduledTime)}`);
  return `schedule:${schedule}:${new Date(ms).toISOString()}`;
}

/**
 * The dispatch of one firing: a `scheduled_tick` signal whose sender names the schedule and whose
 * tag is the dispatch id. The runtime checks the rest (agent, instance, session, body).
 */
export function scheduledDispatch(firing: ScheduledFiring): DispatchRequest {
  if (firing === null || typeof firing !== "object") throw new InvalidRequest("a scheduled firing is required");
  const dispatchId = scheduleDispatchId(firing.schedule, firing.scheduledTime);
  return {
    agent: firing.agent,
    instance: firing.instance,
    session: firing.session,
    dispatchId,
    message: {
      kind: "signal",
      body: firing.body,
      signal: { type: SCHEDULED_TICK, sender: { source: "scheduler", schedule: firing.schedule }, tag: dispatchId },
    },
  };
}
