/**
 * Agents for the serverless provider tests: a model on the real wire (pi-ai's OpenAI-compatible
 * API) served by a scripted provider the test process runs, at `SCRIPTED_PROVIDER_URL`.
 */
import type { AgentDefinition } from "../../../src/agent/agent-definition.ts";
import { scriptedProviderModel } from "../scripted-provider.ts";

export const agents: Record<string, AgentDefinition> = {
  /** One attempt only: any charged retry would settle `attempt_budget_exhausted`. */
  remote: {
    description: "A model behind a scripted OpenAI-compatible server.",
    initialize: () => ({ ...scriptedProviderModel(process.env.SCRIPTED_PROVIDER_URL!, "openai-completions"), maxAttempts: 1 }),
  },
};
