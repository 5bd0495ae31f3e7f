import type { AgentTool, AgentToolResult } from "@earendil-works/pi-agent-core";
import * as schema from "./tool-schema.ts";

/** The tool's name, as the model sees it. */
export const SCHEDULE_MESSAGE_TOOL_NAME = "schedule_message";

const parameters = schema.obj({
  message: schema.str({ description: "What to tell yourself then (it arrives as a message in this conversation)" }),
  at: schema.opt(schema.str({ description: "When, as an RFC 3339 time with a zone (e.g. 2026-05-01T09:00:00Z)" })),
  delaySeconds: schema.opt(schema.num({ description: "Or: in how many seconds from now" })),
});

/** Longest scheduled message (UTF-8 bytes). */
const MAX_MESSAGE_BYTES = 16 * 1024;

/** The marker of the schedule_message tool: the drive gives it the engine's delayed dispatch. */
export const SCHEDULES_MESSAGES = Symbol.for("resolute-harness.schedule-message-tool");

/** What a drive hands the tool: a delayed dispatch to the agent's own session, named after the call. */
export type ScheduleMessage = (callId: string, message: { body: string; notBefore: string }) => Promise<{ submissionId: string; notBefore: string }>;

/**
 * The opt-in `schedule_message` tool (ADR 0025): the agent schedules its own follow-up ("remind
 * me tomorrow at 9"), a delayed message to its own session that arrives then as a
 * `scheduled_message` signal. `{message, at}` or `{message, delaySeconds}`; at most a year ahead.
 * The message's dispatch id is named after the call, so a call run again schedules it once.
 * Put it in an agent setup's `tools`; it works only inside the harness.
 */
export function scheduleMessageTool(): AgentTool<typeof parameters> {
  const tool: AgentTool<typeof parameters> & { [SCHEDULES_MESSAGES]: true } = {
    name: SCHEDULE_MESSAGE_TOOL_NAME,
    label: "Schedule message",
    description:
      "Schedule a message to yourself in this conversation for a later time (a reminder, a follow-up). It arrives as a scheduled_message signal at that time. Give `at` (RFC 3339 with a zone) or `delaySeconds`.",
    parameters,
    execute: async (): Promise<AgentToolResult<unknown>> => {
      throw new Error("schedule_message works only inside the harness");
    },
    [SCHEDULES_MESSAGES]: true,
  };
  return tool;
}

/** Whether `tool` is the schedule_message tool. */
export function isScheduleMessageTool(tool: AgentTool<any>): boolean {
  return (tool as { [SCHEDULES_MESSAGES]?: true })[SCHEDULES_MESSAGES] === true;
}

/** The tool bound to a drive's `schedule` (its `notBefore` computed with `now`). */
export function boundScheduleMessageTool(tool: AgentTool<any>, schedule: ScheduleMessage, now: () => number): AgentTool<any> {
  return {
    ...tool,
    execute: async (callId, params: { message: string; at?: string; delaySeconds?: number }) => {
      if (typeof params.message !== "string" || params.message === "") throw new Error("schedule_message: message is required");
      if (Buffer.byteLength(params.message, "utf8") > MAX_MESSAGE_BYTES) throw new Error(`schedule_message: message exceeds ${MAX_MESSAGE_BYTES} bytes`);
      let at: number;
      if (params.at !== undefined) {
        at = Date.parse(params.at);
        if (!Number.isFinite(at)) throw new Error(`schedule_message: at ${JSON.stringify(params.at)} is not an RFC 3339 time`);
      } else if (params.delaySeconds !== undefined) {
        if (!Number.isFinite(params.delaySeconds) || params.delaySeconds < 0) throw new Error("schedule_message: delaySeconds must be a number >= 0");
        at = now() + Math.round(params.delaySeconds * 1000);
      } else throw new Error("schedule_message: give at or delaySeconds");
      const notBefore = params.at !== undefined && /[zZ]|[+-]\d{2}:\d{2}$/.test(params.at) ? params.at : new Date(at).toISOString();
      const scheduled = await schedule(callId, { body: params.message, notBefore });
      return {
        content: [{ type: "text", text: `scheduled for ${scheduled.notBefore} (${scheduled.submissionId})` }],
        details: scheduled,
      };
    },
  };
}
