/**
 * Your agents. `npm run dev` serves them with a chat page and reloads when you save;
 * `npm start` runs main.ts; with `harness init --aws`, `npx cdk deploy` deploys app.ts, which
 * bundles this module.
 */
import { clockTool, defineTool, localModel, resolveModel, schema, type AgentDefinition } from "resolute-harness";

// A tool of your own: `schema` builds its parameters' JSON Schema and types `params` from it.
// Arguments are validated before `execute` runs; what it returns in `content` is what the model sees.
const rollDice = defineTool({
  name: "roll_dice",
  label: "Roll dice",
  description: "Rolls some six-sided dice and tells the total.",
  parameters: schema.obj({ count: schema.int({ description: "How many dice, 1 to 10", minimum: 1, maximum: 10 }) }),
  execute: async (_callId, { count }) => {
    const rolls = Array.from({ length: count }, () => 1 + Math.floor(Math.random() * 6));
    return { content: [{ type: "text", text: `${rolls.join(" + ")} = ${rolls.reduce((a, b) => a + b, 0)}` }], details: { rolls } };
  },
});

export const agents: Record<string, AgentDefinition> = {
  assistant: {
    description: "A helpful assistant that can tell the time and roll dice.",
    // Runs on every claim: per-instance prompts and tools are first-class.
    initialize: async ({ instance, env }) => ({
      // Keyless until MODEL names a provider (see .env.example): the local model echoes you, calls
      // the clock tool when you ask about the time, and any tool on `/<tool> {json}`:
      // `/roll_dice {"count": 3}`.
      ...(env("MODEL") ? await resolveModel(env("MODEL"), process.env) : localModel()),
      systemPrompt: `You are the assistant of workspace "${instance}". Use your tools when they help.`,
      tools: [clockTool(), rollDice],
    }),
  },
};
