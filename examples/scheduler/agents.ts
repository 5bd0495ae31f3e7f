/**
 * The scheduler's agent: `reporter`, woken by one `scheduled_tick` signal per window. Keyless: it
 * reads the clock tool, then writes a one-line report naming the window and the time it ran.
 */
import type { AgentDefinition } from "../../src/agent/agent-definition.ts";
import { SCHEDULED_TICK } from "../../src/runtime/scheduled-dispatch.ts";
import { CLOCK_TOOL_NAME, clockTool } from "../../src/agent/clock-tool.ts";
import { keylessExampleModel, resultText, type KeylessTurn, type StreamBlock } from "../shared/keyless-model.ts";

export const REPORTER = "reporter";

export const agents: Record<string, AgentDefinition> = {
  [REPORTER]: {
    description: "Writes a short report each time its schedule fires.",
    initialize: ({ instance }) => ({
      ...keylessExampleModel("local-reporter", answer),
      systemPrompt: `You write the "${instance}" report when a ${SCHEDULED_TICK} signal arrives. Read the clock first.`,
      tools: [clockTool()],
    }),
  },
};

function answer(turn: KeylessTurn): StreamBlock[] {
  let tag: string | undefined;
  try {
    const signal = JSON.parse(turn.userText) as { type?: string; tag?: string };
    if (signal.type === SCHEDULED_TICK) tag = signal.tag;
  } catch {
    // a user message: not a tick
  }
  if (tag === undefined) return [{ type: "text", text: "I write reports when my schedule fires." }];
  const clock = turn.results.find((r) => r.toolName === CLOCK_TOOL_NAME);
  if (clock === undefined) return [{ type: "toolCall", id: `call_clock_${turn.userIndex}`, name: CLOCK_TOOL_NAME, arguments: {} }];
  return [{ type: "text", text: `Report for ${tag}, written at ${resultText(clock)}: all quiet.` }];
}
