/**
 * An agents module with no provider SDK behind it (the keyless local model only), bound to
 * `#harness-agents` to show what the provider SDKs add to the Lambda bundles and their load time.
 */
import type { AgentDefinition } from "../src/agent/agent-definition.ts";
import { clockTool } from "../src/agent/clock-tool.ts";
import { localModel } from "../src/agent/local-model.ts";

export const agents: Record<string, AgentDefinition> = {
  assistant: {
    description: "A keyless assistant.",
    initialize: () => ({ ...localModel(), systemPrompt: "Be brief.", tools: [clockTool()] }),
  },
};
