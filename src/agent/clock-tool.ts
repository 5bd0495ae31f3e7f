import type { AgentTool } from "@earendil-works/pi-agent-core";
import { systemClock, type Clock } from "../ports/clock.ts";

/** Name of the clock tool (the local model calls it when asked about the time). */
export const CLOCK_TOOL_NAME = "clock";

const parameters = { type: "object", properties: {}, additionalProperties: false } as const;

/**
 * A tool that returns the current time as RFC 3339 (UTC), read through `clock` so tests see a
 * fixed time. The result's `details` carries the same string as `{ now }`.
 */
export function clockTool(clock: Clock = systemClock): AgentTool<typeof parameters> {
  return {
    name: CLOCK_TOOL_NAME,
    label: "Clock",
    description: "Returns the current date and time (RFC 3339, UTC).",
    parameters,
    async execute() {
      const now = new Date(clock.now()).toISOString();
      return { content: [{ type: "text", text: now }], details: { now } };
    },
  };
}
