/**
 * The MCP example's agent: `assistant`, the keyless model with the tools of a local MCP server
 * (notes-server.ts, over stdio, started by the harness at each attempt), prefixed `notes_`;
 * clearing the notes waits for a person's approval.
 */
import { join } from "node:path";
import type { AgentDefinition } from "../../src/agent/agent-definition.ts";
import { localModel } from "../../src/agent/local-model.ts";
import { mcpTools } from "../../src/mcp/index.ts";

export const ASSISTANT = "assistant";

export function mcpAgents(dataDir: string): Record<string, AgentDefinition> {
  const notes = mcpTools({
    command: process.execPath,
    args: ["--disable-warning=ExperimentalWarning", join(import.meta.dirname, "notes-server.ts")],
    env: { PATH: process.env.PATH ?? "", NOTES_FILE: join(dataDir, "notes.json") },
    prefix: "notes_",
    needsApproval: ["clear_notes"],
  });
  return {
    [ASSISTANT]: {
      description: "Keeps notes with a local MCP server's tools.",
      initialize: () => ({ ...localModel(), systemPrompt: "You keep the user's notes with the notes_ tools.", tools: [notes] }),
    },
  };
}
